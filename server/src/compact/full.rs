//! Tier 3, full compaction: summarise the conversation and continue from the summary.
//!
//! [`full`] is a function of the history, the session's system prompt and tools, a provider and
//! options, giving a [`Compacted`] (the new history and what it took) or a [`Failure`]. It
//! changes nothing: the session writes the result to the transcript
//! (`Writer::compaction`) and only then uses the new history.
//!
//! - The request shares the session's system prompt and tools (so its cached prefix is the
//!   session's) and sends the conversation with a final user text asking for the nine-section
//!   summary ([`super::summary`]). An answer without `<summary>` is a failure.
//! - Too long for the window (the API says so): the oldest messages are left out (never the
//!   first user message), as many as the API's figures ask (else a fifth of the tokens), and
//!   the request is sent again, at most twice. Their user messages are still guaranteed.
//! - Section 6 is enforced ([`super::summary::enforce_user_messages`]) over the user messages
//!   of the history and those the previous summary preserved.
//! - The new history ([`assemble`]), in an order the API accepts whatever the history ended
//!   with:
//!   1. a user message: the instructions and git blocks (re-read by the session; the previous
//!      ones when it gives none), then the continuation text: the session continues an earlier
//!      conversation, `Summary:` and the summary, the transcript file for exact details, and
//!      "continue without asking again";
//!   2. re-injected files: up to 5 most recently read or changed files, newest first, at most
//!      5,000 tokens each and 50,000 in all, as `Read` calls and their results (a file cut to
//!      fit is read with a `limit`), with the todo list and the plan after the results;
//!   3. the last assistant message, verbatim (its calls whose results are not kept are left
//!      out; its usage is dropped: it measured the old context);
//!   4. whatever followed it, verbatim: the tool results or the user's message the next request
//!      answers.
//! - Judged ([`judge`]): a result still above the automatic threshold, or one that frees less
//!   than 5% of the count (the stall guard), is a failure. The new history without any summary
//!   is judged before the model is asked: when even that fails, no summary is requested.
//! - A file is never in the new history twice: one whose `Read` result the tail keeps is not
//!   re-injected.

use std::collections::HashSet;

use futures::StreamExt;
use serde::Serialize;
use serde_json::json;

use super::extractive::{self, file_of};
use super::summary::{self, required_user_messages};
use super::tokens::{history_tokens, message_tokens, padded, text_tokens};
use crate::conversation::{self, Block, Message, Origin, ResultPart, Role, ToolUse};
use crate::llm::{
    CancellationToken, Error, ErrorKind, Event, Provider, Request, SystemBlock, ToolSpec,
};

/// Files re-injected at most.
pub const MAX_FILES: usize = 5;
/// Tokens of one re-injected file at most.
pub const FILE_TOKENS: u64 = 5_000;
/// Tokens of all re-injected files at most.
pub const FILES_TOKENS: u64 = 50_000;
/// Retries of a summary request the API found too long.
pub const MAX_LENGTH_RETRIES: usize = 2;
/// A compaction that frees less than this percentage of the count failed.
pub const MIN_FREED_PERCENT: u64 = 5;

/// Who asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    Auto,
    Manual,
}

impl Trigger {
    /// As the transcript's `compactMetadata.trigger` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// The model that writes the summary, and the session's request parts it shares.
pub struct ModelSpec<'a> {
    pub provider: &'a dyn Provider,
    pub model: String,
    /// The session's system blocks, as sent (cache flags included).
    pub system: Vec<SystemBlock>,
    /// The session's tools, as sent (the model is asked not to call them).
    pub tools: Vec<ToolSpec>,
    /// The answer's limit; the budget's `reserved` is meant for it.
    pub max_tokens: u32,
    pub thinking: Option<u32>,
    pub betas: Vec<String>,
    pub cancel: CancellationToken,
}

/// Who writes the summary.
pub enum Summariser<'a> {
    Model(ModelSpec<'a>),
    /// The deterministic extractive summary ([`super::extractive`]), when no model is configured.
    Extractive,
}

/// A file's current text as the `Read` tool returns it (line-numbered), or `None` when it
/// cannot be read now.
pub type ReadFile<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// What the session re-reads for the new history.
#[derive(Default)]
pub struct Reinject<'a> {
    /// Reads a recently used file for re-injection; `None`: no file is re-injected.
    pub read_file: Option<ReadFile<'a>>,
    /// The instructions block, re-read (edits made during the session apply now). `None`:
    /// the block of the old history is kept.
    pub instructions: Option<String>,
    /// The git snapshot block, re-read. `None`: the old one is kept.
    pub git: Option<String>,
    /// The todo list as text. `None`: the latest `TodoWrite` list of the history, if any.
    pub todos: Option<String>,
    /// The plan, if any.
    pub plan: Option<String>,
    /// The transcript file, named in the continuation message for exact details.
    pub transcript_path: Option<String>,
}

/// What a full compaction works on.
pub struct Inputs<'a> {
    pub history: &'a [Message],
    /// The user messages the previous summary preserved (its `compactMetadata.userMessages`).
    pub earlier_user_messages: &'a [String],
    /// The user's focus hint.
    pub focus: Option<&'a str>,
    pub trigger: Trigger,
    /// The session's count now.
    pub tokens_before: u64,
    /// Estimate of the system prompt and tools (they stay after compaction).
    pub overhead_tokens: u64,
    /// The result must end at or below this.
    pub auto_threshold: u64,
    pub reinject: &'a Reinject<'a>,
}

/// A compaction done, not yet committed.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    /// The history to continue from.
    pub history: Vec<Message>,
    /// The summary as kept (section 6 complete).
    pub summary: String,
    /// Every user message the summary preserves, verbatim (for the next compaction).
    pub user_messages: Vec<String>,
    /// How many of them the model left out and were appended.
    pub appended_user_messages: usize,
    /// Messages replaced by the summary.
    pub summarised_messages: usize,
    /// Files re-injected, newest first.
    pub reinjected_files: Vec<String>,
    /// Oldest messages left out of the summary request because it was too long.
    pub left_out_for_length: usize,
    pub tokens_before: u64,
    /// Estimated count after (padded, with the system prompt and tools).
    pub tokens_after: u64,
    pub trigger: Trigger,
    /// Written by the extractive summariser.
    pub extractive: bool,
}

/// Why a compaction failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureKind {
    /// The model API failed.
    Api,
    /// The answer had no usable `<summary>`.
    NoSummary,
    /// The request stayed too long after leaving out the oldest messages twice.
    TooLong,
    /// The result is still above the automatic threshold.
    StillAboveThreshold,
    /// The result frees less than 5%.
    Stalled,
    /// There is nothing to summarise (no answer yet). Not a failure for the breaker.
    NothingToCompact,
    /// Cancelled. Not a failure for the breaker.
    Cancelled,
}

/// A failed compaction: the history is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    /// For a person.
    pub message: String,
}

impl Failure {
    fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// Whether it counts towards the circuit breaker.
    pub fn counts(&self) -> bool {
        !matches!(
            self.kind,
            FailureKind::NothingToCompact | FailureKind::Cancelled
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Summarises and builds the new history; judged by [`judge`].
pub async fn full(inputs: &Inputs<'_>, summariser: &Summariser<'_>) -> Result<Compacted, Failure> {
    let required = required(inputs.history, inputs.earlier_user_messages);
    last_answer(inputs.history)?;
    // The result holds at least the summary's section 6 and what is kept around it: when even
    // that fails the judge, a summary is bound to fail too. Do not ask the model for it.
    if matches!(summariser, Summariser::Model(_)) {
        judge(&assemble(inputs, &required, ""), inputs).map_err(|f| Failure {
            message: format!(
                "{} (whatever the summary says; no summary was asked for)",
                f.message
            ),
            ..f
        })?;
    }
    let (raw, left_out) = match summariser {
        Summariser::Extractive => (
            extractive::summarise(inputs.history, &required, inputs.focus),
            0,
        ),
        Summariser::Model(spec) => model_summary(spec, inputs.history, inputs.focus).await?,
    };
    let mut c = assemble(inputs, &required, &raw);
    c.left_out_for_length = left_out;
    c.extractive = matches!(summariser, Summariser::Extractive);
    judge(&c, inputs)?;
    Ok(c)
}

/// The user messages a summary of `history` must hold: those the previous summary preserved,
/// then those authored in the history. When the previous summary's list is not known (a
/// transcript of the reference CLI, or an older one of ours), its whole section 6 stands for
/// them, so what it kept is carried forward verbatim too.
pub fn required(history: &[Message], earlier: &[String]) -> Vec<String> {
    let mut earlier = earlier.to_vec();
    if earlier.is_empty() {
        for m in history.iter().filter(|m| m.role == Role::User) {
            for b in &m.content {
                if let Block::Text(t) = b
                    && t.origin == Origin::Summary
                {
                    let six = summary::section6(&t.text);
                    let body = six.split_once('\n').map_or("", |(_, rest)| rest).trim();
                    if !body.is_empty() {
                        earlier.push(body.to_string());
                    }
                }
            }
        }
    }
    required_user_messages(&earlier, conversation::user_authored_texts(history))
}

/// The index of the last assistant message, or the failure "nothing to compact".
pub(super) fn last_answer(history: &[Message]) -> Result<usize, Failure> {
    history
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .ok_or_else(|| {
            Failure::new(
                FailureKind::NothingToCompact,
                "nothing to compact: the conversation has no answer yet",
            )
        })
}

/// A result still above the threshold, or freeing less than 5%, is a failure.
pub fn judge(c: &Compacted, inputs: &Inputs<'_>) -> Result<(), Failure> {
    let freed = c.tokens_before.saturating_sub(c.tokens_after);
    if freed.saturating_mul(100) < c.tokens_before.saturating_mul(MIN_FREED_PERCENT) {
        return Err(Failure::new(
            FailureKind::Stalled,
            format!(
                "compaction would free only {freed} of {} tokens (less than {MIN_FREED_PERCENT}%)",
                c.tokens_before
            ),
        ));
    }
    if c.tokens_after > inputs.auto_threshold {
        return Err(Failure::new(
            FailureKind::StillAboveThreshold,
            format!(
                "the compacted conversation would still hold about {} tokens, above the automatic threshold of {}",
                c.tokens_after, inputs.auto_threshold
            ),
        ));
    }
    Ok(())
}

/// Builds the new history around a summary (`raw`, as written), enforcing section 6 over
/// `required`. Not judged.
pub fn assemble(inputs: &Inputs<'_>, required: &[String], raw: &str) -> Compacted {
    let history = inputs.history;
    let last = history
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap_or(0);
    let enforced = summary::enforce_user_messages(raw, required);
    let r = inputs.reinject;
    let tail = &history[(last + 1).min(history.len())..];

    let mut first = Vec::new();
    if let Some(text) = r
        .instructions
        .clone()
        .or_else(|| carried(history, Origin::Instructions))
    {
        first.push(Block::injected(Origin::Instructions, text));
    }
    if let Some(text) = r.git.clone().or_else(|| carried(history, Origin::Git)) {
        first.push(Block::injected(Origin::Git, text));
    }
    first.push(Block::injected(
        Origin::Summary,
        continuation(&enforced.text, r.transcript_path.as_deref(), inputs.trigger),
    ));
    let mut out = vec![Message::user_blocks(first)];

    let mut extras = Vec::new();
    let todos = r.todos.clone().or_else(|| {
        extractive::latest_todos(history)
            .filter(|t| !t.is_empty())
            .map(|t| extractive::render_todos(&t))
    });
    if let Some(todos) = todos.filter(|t| !t.trim().is_empty()) {
        extras.push(Block::injected(
            Origin::Reinjected,
            format!("The todo list as it stood before the summary:\n{todos}"),
        ));
    }
    if let Some(plan) = r.plan.as_ref().filter(|p| !p.trim().is_empty()) {
        extras.push(Block::injected(
            Origin::Reinjected,
            format!("The plan as it stood before the summary:\n{plan}"),
        ));
    }
    // A file whose Read result the tail keeps verbatim is in the new history already.
    let kept: HashSet<&str> = history
        .get(last)
        .filter(|m| m.role == Role::Assistant)
        .into_iter()
        .flat_map(|m| m.tool_uses())
        .filter(|t| {
            tail.iter()
                .flat_map(|m| &m.content)
                .any(|b| matches!(b, Block::ToolResult(r) if r.tool_use_id == t.id && !r.cleared))
        })
        .filter_map(file_of)
        .collect();
    let (calls, results, files) = reinject_files(history, r.read_file, &kept);
    if calls.is_empty() {
        out[0].content.extend(extras);
    } else {
        out.push(Message::assistant(calls));
        let mut blocks = results;
        blocks.extend(extras);
        out.push(Message::user_blocks(blocks));
    }

    if let Some(answer) = history.get(last).filter(|m| m.role == Role::Assistant) {
        let answered: HashSet<&str> = tail
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolResult(r) => Some(r.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let mut kept = answer.clone();
        kept.usage = None;
        kept.content
            .retain(|b| !matches!(b, Block::ToolUse(t) if !answered.contains(t.id.as_str())));
        if !kept.content.is_empty() {
            out.push(kept);
        }
    }
    out.extend(tail.iter().cloned());

    let tokens_after = padded(history_tokens(&out).saturating_add(inputs.overhead_tokens));
    Compacted {
        history: out,
        summary: enforced.text,
        user_messages: required.to_vec(),
        appended_user_messages: enforced.appended,
        summarised_messages: last,
        reinjected_files: files,
        left_out_for_length: 0,
        tokens_before: inputs.tokens_before,
        tokens_after,
        trigger: inputs.trigger,
        extractive: false,
    }
}

/// The first text of this origin in the history (the block a session put in its first message).
fn carried(history: &[Message], origin: Origin) -> Option<String> {
    history
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            Block::Text(t) if t.origin == origin => Some(t.text.clone()),
            _ => None,
        })
}

/// The continuation message's text (our own words).
pub fn continuation(summary: &str, transcript: Option<&str>, trigger: Trigger) -> String {
    let mut s = String::from(match trigger {
        Trigger::Auto => {
            "This session continues an earlier conversation that grew too long for the context window. \
             The earlier part is summarised below."
        }
        Trigger::Manual => {
            "This session continues an earlier conversation, summarised below at the user's request \
             to free room in the context window."
        }
    });
    s.push_str("\n\nSummary:\n");
    s.push_str(summary);
    s.push_str("\n\n");
    if let Some(path) = transcript {
        s.push_str(&format!(
            "The earlier conversation is recorded in full in {path}: read it when you need exact \
             details the summary leaves out (code, error output, the user's own words).\n\n"
        ));
    }
    s.push_str(
        "Continue from where the conversation left off. Do not ask the user again about what they \
         already answered, and do not redo work that is done.",
    );
    s
}

/// `Read` calls and results for the files most recently read or changed, newest first.
fn reinject_files(
    history: &[Message],
    read: Option<ReadFile<'_>>,
    kept: &HashSet<&str>,
) -> (Vec<Block>, Vec<Block>, Vec<String>) {
    let (mut calls, mut results, mut files) = (Vec::new(), Vec::new(), Vec::new());
    let Some(read) = read else {
        return (calls, results, files);
    };
    let mut seen = HashSet::new();
    let mut total = 0;
    let recent = history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_uses().collect::<Vec<_>>().into_iter().rev());
    for call in recent {
        if files.len() == MAX_FILES {
            break;
        }
        if call.name == "NotebookEdit" {
            continue;
        }
        let Some(path) = file_of(call) else { continue };
        if !seen.insert(path) || kept.contains(path) {
            continue;
        }
        let Some(text) = read(path) else { continue };
        let (text, lines) = cap(text, (FILE_TOKENS * 4) as usize);
        let tokens = text_tokens(&text);
        if total + tokens > FILES_TOKENS {
            continue;
        }
        total += tokens;
        let id = format!("toolu_reinjected_{}_{}", history.len(), files.len() + 1);
        let mut input = json!({ "file_path": path });
        if let Some(lines) = lines {
            input["limit"] = json!(lines);
        }
        calls.push(Block::ToolUse(ToolUse {
            id: id.clone(),
            name: "Read".into(),
            input,
        }));
        results.push(Block::tool_result(id, text, false));
        files.push(path.to_string());
    }
    (calls, results, files)
}

/// `text` cut at a line break to at most `max` bytes; the number of lines kept when cut.
fn cap(text: String, max: usize) -> (String, Option<usize>) {
    if text.len() <= max {
        return (text, None);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    let kept = text[..end].to_string();
    let lines = kept.lines().count();
    (kept, Some(lines))
}

/// The model's summary and how many of the oldest messages were left out to fit.
async fn model_summary(
    spec: &ModelSpec<'_>,
    history: &[Message],
    focus: Option<&str>,
) -> Result<(String, usize), Failure> {
    let prompt = summary::prompt(focus);
    let mut start = 1;
    let mut retries = 0;
    loop {
        let messages = request_messages(history, start, &prompt);
        let mut request = Request::new(spec.model.clone(), spec.max_tokens, &messages);
        request.system = spec.system.clone();
        request.tools = spec.tools.clone();
        request.thinking = spec.thinking;
        request.betas = spec.betas.clone();
        match answer(spec.provider, &request, spec.cancel.clone()).await {
            Ok(m) => {
                return summary::parse_reply(&m.text())
                    .map(|s| (s, start - 1))
                    .map_err(|e| Failure::new(FailureKind::NoSummary, e.message()));
            }
            Err(e) if e.kind == ErrorKind::Cancelled => {
                return Err(Failure::new(FailureKind::Cancelled, "compaction cancelled"));
            }
            Err(e) if too_long(&e) => {
                let next = (retries < MAX_LENGTH_RETRIES)
                    .then(|| next_cut(history, start, overage(&e.message)))
                    .flatten();
                match next {
                    Some(s) => {
                        start = s;
                        retries += 1;
                    }
                    None => {
                        return Err(Failure::new(
                            FailureKind::TooLong,
                            format!(
                                "the conversation is too long to summarise even without its {} oldest messages ({e})",
                                start - 1
                            ),
                        ));
                    }
                }
            }
            Err(e) => return Err(Failure::new(FailureKind::Api, e.to_string())),
        }
    }
}

/// The summary request's messages: the first message, the history from `start`, and the
/// prompt as the final user text. Tool calls left without results at the end are dropped (the
/// API wants a result for each).
fn request_messages(history: &[Message], start: usize, prompt: &str) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(history.len().saturating_sub(start) + 2);
    out.extend(history.first().cloned());
    out.extend_from_slice(history.get(start.max(1)..).unwrap_or_default());
    if let Some(last) = out.last_mut()
        && last.role == Role::Assistant
    {
        last.content.retain(|b| !matches!(b, Block::ToolUse(_)));
        if last.content.is_empty() {
            out.pop();
        }
    }
    for m in &mut out {
        strip_images(m);
    }
    let ask = Block::injected(Origin::Meta, prompt);
    match out.last_mut() {
        Some(m) if m.role == Role::User => m.content.push(ask),
        _ => out.push(Message::user_blocks(vec![ask])),
    }
    out
}

/// The summariser is not sent images: each becomes the text `[image]`, as the reference CLI
/// strips them from its compaction request (the summary is text; an image would only cost the
/// request room, or be refused by a summarising model without vision).
fn strip_images(m: &mut Message) {
    for b in &mut m.content {
        match b {
            Block::Image(_) => *b = Block::injected(Origin::Meta, IMAGE_MARK),
            Block::ToolResult(r) => {
                for p in &mut r.content {
                    if let ResultPart::Image(_) = p {
                        *p = ResultPart::Text {
                            text: IMAGE_MARK.to_string(),
                        };
                    }
                }
            }
            _ => {}
        }
    }
}

/// What an image is in the summary request.
const IMAGE_MARK: &str = "[image]";

/// Where to start after leaving out more of the oldest messages: at an assistant message (so
/// the first message is followed by an answer and no tool result loses its call), dropping at
/// least `want` tokens (plus a tenth and 1,000 for the estimate's error) or, without figures, a
/// fifth of what is left. At most up to the last answer. `None` when nothing more can go.
fn next_cut(history: &[Message], start: usize, want: Option<u64>) -> Option<usize> {
    let rest = history.get(start..)?;
    let want = want
        .map(|w| w + w / 10 + 1_000)
        .unwrap_or_else(|| padded(history_tokens(rest)) / 5)
        .max(1);
    let mut dropped = 0;
    let mut best = None;
    for (i, m) in history.iter().enumerate().skip(start) {
        if i > start && m.role == Role::Assistant {
            best = Some(i);
            if dropped >= want {
                return best;
            }
        }
        dropped += padded(message_tokens(m));
    }
    best
}

/// Whether the API refused the request for its length.
pub fn too_long(e: &Error) -> bool {
    if e.kind != ErrorKind::Rejected {
        return false;
    }
    if e.status == Some(413) {
        return true;
    }
    let m = e.message.to_ascii_lowercase();
    m.contains("prompt is too long")
        || (m.contains("too long") && m.contains("token"))
        || m.contains("context length")
        || m.contains("context window")
        || m.contains("maximum context")
}

/// By how many tokens the prompt was too long, from the API's words ("prompt is too long:
/// 210000 tokens > 200000 maximum").
pub fn overage(message: &str) -> Option<u64> {
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    match numbers.as_slice() {
        [a, b, ..] if a > b => Some(a - b),
        _ => None,
    }
}

/// Runs one turn to its answer.
async fn answer(
    provider: &dyn Provider,
    request: &Request<'_>,
    cancel: CancellationToken,
) -> Result<Message, Error> {
    let mut stream = provider.stream(request, cancel);
    while let Some(item) = stream.next().await {
        match item? {
            Event::Done(m) => return Ok(m),
            _ => continue,
        }
    }
    Err(Error {
        kind: ErrorKind::Protocol,
        message: "the answer ended without its end".into(),
        status: None,
        api_type: None,
        request_id: None,
        attempts: 1,
        partial: None,
    })
}
