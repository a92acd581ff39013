//! Quality R5: 1,000 random sessions × random compaction sequences, 0 user messages lost.
//!
//! Each case drives a session through the API a session uses (`Compactor`, `Writer`,
//! `Transcript`) with random typed messages, tool calls of compactable and other tools with
//! results of random sizes (some errors), answers with usage, the automatic decision, manual
//! masking and full compactions, a summarising model (in process, behind `llm::Provider`) that
//! leaves random user messages out of section 6, mangles some, answers without a summary, fails,
//! or finds the request too long, plus resumes from the transcript and crashes in the middle of
//! writing a compaction. After every step:
//! - every message the user ever typed is present, verbatim, in the history's user messages or
//!   in section 6 of its summary;
//! - no result of a tool that is not compactable was ever cleared;
//! - right after a masking, the newest `keep_recent` compactable results are whole;
//! - a resume rebuilds exactly the running history and its count; a crash while a compaction
//!   is being written leaves the history from before it.
//!
//! Typed messages come from a vocabulary with the hard parts (`6.`, `7.`, list dashes, the
//! summary tags, line breaks, tabs, non-ASCII) but never a line reading as a section heading
//! with its title (`7. Pending Tasks`), the one text section 6's boundaries cannot tell apart
//! (documented in `compact::summary`).
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::Utc;
use claude_context::compact::{
    self, Compactor, Decision, ModelInfo, ModelSpec, Overrides, Policy, Reinject, Settings,
    Summariser, Trigger, Turn, mask, summary, tokens,
};
use claude_context::conversation::{
    self, Block, Message, Origin, Role, StopReason, ToolUse, Usage,
};
use claude_context::llm::{
    self, CancellationToken, Event, EventStream, Provider, Request, SystemBlock,
};
use claude_context::session::transcript::{CompactMetadata, SessionMeta, Transcript, Writer};
use proptest::prelude::*;
use serde_json::json;

const TOOLS: [&str; 7] = [
    "Read",
    "Bash",
    "Grep",
    "Edit",
    "TodoWrite",
    "mcp__db__query",
    "Task",
];

const WORDS: [&str; 18] = [
    "fix",
    "the",
    "bug",
    "6.",
    "7.",
    "\n",
    "- ",
    "<summary>",
    "</summary>",
    "Pending",
    "ünïcode",
    "`code`",
    "\t",
    "  ",
    "yes",
    "src/cart.ts",
    "please",
    "\n\n",
];

/// What the summarising model does with the next request.
#[derive(Clone, Debug)]
enum Model {
    /// A nine-section summary whose section 6 quotes the user messages selected by the bits
    /// (bit set: quoted; every third quoted one with its line breaks flattened).
    Summary(u64),
    NoSummary,
    ApiError,
    /// "Prompt is too long" this many times, then a summary of all messages.
    TooLong(u8),
}

#[derive(Clone, Debug)]
enum Op {
    User(String),
    /// An answer calling these tools (tool, result size, is error), then their results.
    Tools(Vec<(usize, usize, bool)>),
    Answer(String),
    Auto(Model),
    Micro,
    Full(Model),
    Offline,
    Resume,
    /// A full compaction cut at this fraction (per mille) of its bytes.
    Crash(u16),
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(0..WORDS.len(), 1..8).prop_map(|ix| {
        let t: Vec<&str> = ix.iter().map(|&i| WORDS[i]).collect();
        let t = t.join(" ").trim().to_string();
        if t.is_empty() { "ok".to_string() } else { t }
    })
}

fn model() -> impl Strategy<Value = Model> {
    prop_oneof![
        4 => any::<u64>().prop_map(Model::Summary),
        1 => Just(Model::NoSummary),
        1 => Just(Model::ApiError),
        1 => (1u8..4).prop_map(Model::TooLong),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => text().prop_map(Op::User),
        6 => prop::collection::vec((0..TOOLS.len(), 0usize..12_000, prop::bool::weighted(0.15)), 1..4)
            .prop_map(Op::Tools),
        3 => text().prop_map(Op::Answer),
        4 => model().prop_map(Op::Auto),
        1 => Just(Op::Micro),
        1 => model().prop_map(Op::Full),
        1 => Just(Op::Offline),
        1 => Just(Op::Resume),
        1 => (0u16..1000).prop_map(Op::Crash),
    ]
}

/// The summarising model, in process.
struct Summarising {
    next: Mutex<VecDeque<Model>>,
}

impl Provider for Summarising {
    fn name(&self) -> &str {
        "summarising"
    }

    fn stream(&self, request: &Request<'_>, _cancel: CancellationToken) -> EventStream {
        let mut next = self.next.lock().unwrap();
        let behaviour = next.pop_front().unwrap_or(Model::Summary(u64::MAX));
        let item = match behaviour {
            Model::NoSummary => Ok(reply("I will keep all of this in mind.".into())),
            Model::ApiError => Err(llm::Error {
                kind: llm::ErrorKind::Overloaded,
                message: "Overloaded".into(),
                status: Some(529),
                api_type: Some("overloaded_error".into()),
                request_id: None,
                attempts: 5,
                partial: None,
            }),
            Model::TooLong(n) => {
                if n > 1 {
                    next.push_front(Model::TooLong(n - 1));
                } else {
                    next.push_front(Model::Summary(u64::MAX));
                }
                Err(llm::Error {
                    kind: llm::ErrorKind::Rejected,
                    message: "prompt is too long: 212000 tokens > 200000 maximum".into(),
                    status: Some(400),
                    api_type: Some("invalid_request_error".into()),
                    request_id: None,
                    attempts: 1,
                    partial: None,
                })
            }
            Model::Summary(bits) => {
                let typed = conversation::user_authored_texts(request.messages);
                let mut s = String::from("<analysis>going through it</analysis>\n<summary>\n");
                for (i, title) in summary::SECTIONS.iter().enumerate() {
                    s.push_str(&format!("{}. {title}:\n", i + 1));
                    if i == 5 {
                        for (k, m) in typed.iter().enumerate() {
                            if bits >> (k % 64) & 1 == 1 {
                                let m = if k % 3 == 2 {
                                    m.replace('\n', " ")
                                } else {
                                    m.clone()
                                };
                                s.push_str(&format!("   - {m}\n"));
                            }
                        }
                    } else {
                        s.push_str("   ...\n");
                    }
                }
                s.push_str("</summary>");
                Ok(reply(s))
            }
        };
        Box::pin(futures::stream::iter(vec![item]))
    }
}

fn reply(text: String) -> Event {
    let mut m = Message::assistant(vec![Block::text(text)]);
    m.stop_reason = Some(StopReason::EndTurn);
    Event::Done(m)
}

fn policy(keep_recent: usize) -> Policy {
    Policy::resolve(
        ModelInfo {
            id: "claude-fake-1",
            window: Some(40_000),
            max_output_tokens: 2_000,
        },
        &Settings {
            keep_recent: Some(keep_recent),
            ..Settings::default()
        },
        &Overrides::default(),
    )
    .0
}

/// The writer a resume opens, after the old one let go of the transcript (one writer per
/// session: the old one stands for a process that crashed). The old writer's place is taken by
/// a throwaway one first.
fn reopen(old: &mut Writer, path: &std::path::Path, t: &Transcript) -> Writer {
    let scratch = tempfile::tempdir().unwrap();
    drop(std::mem::replace(
        old,
        Writer::create(scratch.path(), meta()).unwrap(),
    ));
    Writer::append(path, t, meta()).unwrap()
}

fn meta() -> SessionMeta {
    SessionMeta {
        session_id: "r5".into(),
        cwd: "/w".into(),
        git_branch: "main".into(),
    }
}

/// What the cases exercised, so the property cannot pass vacuously.
#[derive(Default)]
struct Coverage {
    compactions: AtomicUsize,
    failures: AtomicUsize,
    appended: AtomicUsize,
    maskings: AtomicUsize,
    resumes_after_compaction: AtomicUsize,
    crashes: AtomicUsize,
    later_compactions: AtomicUsize,
}

static COVERAGE: Coverage = Coverage {
    compactions: AtomicUsize::new(0),
    failures: AtomicUsize::new(0),
    appended: AtomicUsize::new(0),
    maskings: AtomicUsize::new(0),
    resumes_after_compaction: AtomicUsize::new(0),
    crashes: AtomicUsize::new(0),
    later_compactions: AtomicUsize::new(0),
};

fn bump(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::Relaxed);
}

struct Session {
    history: Vec<Message>,
    compactor: Compactor,
    writer: Writer,
    path: PathBuf,
    keep_recent: usize,
    /// Every message the user typed, in order.
    typed: Vec<String>,
    /// Tool of every call ever made.
    tools: HashMap<String, String>,
    next_id: usize,
}

impl Session {
    fn turn(&self) -> Turn<'_> {
        Turn {
            history: &self.history,
            overhead_tokens: 200,
            now: Utc::now(),
            last_assistant_at: None,
        }
    }

    fn push(&mut self, m: Message) {
        match m.role {
            Role::User => self.writer.user(&m).unwrap(),
            Role::Assistant => self.writer.assistant(&m).unwrap(),
        };
        self.history.push(m);
        if let Some(last) = self.history.last()
            && last.role == Role::Assistant
        {
            let last = last.clone();
            self.compactor.answered(&last, self.history.len(), &[]);
        }
    }

    fn answer(&mut self, blocks: Vec<Block>) -> Message {
        self.next_id += 1;
        let mut m = Message::assistant(blocks);
        m.id = Some(format!("msg_{}", self.next_id));
        m.stop_reason = Some(StopReason::EndTurn);
        let input = tokens::history_tokens(&self.history) + 200;
        m.usage = Some(Usage {
            input_tokens: input / 10,
            output_tokens: 20,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: input - input / 10,
        });
        m
    }

    fn mask(&mut self, plan: &compact::MaskPlan) {
        if !plan.is_empty() {
            bump(&COVERAGE.maskings);
        }
        self.writer.masking(plan).unwrap();
        plan.apply(&mut self.history);
        self.compactor.masked(plan);
        self.check_newest_kept();
    }

    async fn full(&mut self, trigger: Trigger, summariser: &Summariser<'_>) {
        let reinject = Reinject {
            transcript_path: Some(self.path.display().to_string()),
            ..Reinject::default()
        };
        let result = self
            .compactor
            .full(&self.turn(), trigger, None, &reinject, summariser)
            .await;
        match result {
            Ok(c) => {
                bump(&COVERAGE.compactions);
                if !self.compactor.preserved.is_empty() {
                    bump(&COVERAGE.later_compactions);
                }
                COVERAGE
                    .appended
                    .fetch_add(c.appended_user_messages, Ordering::Relaxed);
                self.writer
                    .compaction(
                        CompactMetadata {
                            trigger: c.trigger.as_str().into(),
                            pre_tokens: c.tokens_before,
                            post_tokens: Some(c.tokens_after),
                            user_messages: c.user_messages.clone(),
                            ..CompactMetadata::default()
                        },
                        &c.history,
                    )
                    .unwrap();
                self.history = c.history.clone();
                self.compactor.committed(&c);
            }
            Err(f) => {
                bump(&COVERAGE.failures);
                self.compactor.failed(&f);
            }
        }
    }

    /// Right after a masking: the newest `keep_recent` compactable results are whole.
    fn check_newest_kept(&self) {
        let names: HashMap<&str, &str> = self
            .history
            .iter()
            .flat_map(Message::tool_uses)
            .map(|t| (t.id.as_str(), t.name.as_str()))
            .collect();
        let compactable: Vec<bool> = self
            .history
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolResult(r) => names
                    .get(r.tool_use_id.as_str())
                    .filter(|n| mask::is_compactable(n))
                    .map(|_| r.cleared),
                _ => None,
            })
            .collect();
        let newest = &compactable[compactable.len().saturating_sub(self.keep_recent)..];
        assert!(
            newest.iter().all(|cleared| !cleared),
            "one of the newest {} compactable results was cleared: {compactable:?}",
            self.keep_recent
        );
    }

    fn check(&self) {
        // No user message lost.
        let kept = conversation::user_authored_texts(&self.history);
        let summaries: Vec<&str> = self
            .history
            .iter()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::Text(t) if t.origin == Origin::Summary => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        for m in &self.typed {
            let verbatim = kept.iter().any(|k| k == m);
            let summarised = summaries
                .iter()
                .any(|s| summary::section6(s).contains(m.as_str()));
            assert!(
                verbatim || summarised,
                "user message {m:?} lost\nhistory: {:#?}",
                self.history
            );
        }
        // Results of other tools are never cleared.
        for b in self.history.iter().flat_map(|m| &m.content) {
            if let Block::ToolResult(r) = b
                && let Some(tool) = self.tools.get(&r.tool_use_id)
            {
                assert!(
                    mask::is_compactable(tool) || !r.cleared,
                    "a {tool} result was cleared"
                );
            }
        }
    }
}

fn run_case(rt: &tokio::runtime::Runtime, keep_recent: usize, ops: Vec<Op>) {
    let dir = scratch();
    let writer = Writer::create(dir.path(), meta()).unwrap();
    let path = writer.path().to_path_buf();
    let provider = Summarising {
        next: Mutex::new(VecDeque::new()),
    };
    let summariser = Summariser::Model(ModelSpec {
        provider: &provider,
        model: "claude-fake-1".into(),
        system: vec![SystemBlock {
            text: "system".into(),
            cache: true,
        }],
        tools: vec![],
        max_tokens: 2_000,
        thinking: None,
        betas: vec![],
        cancel: CancellationToken::new(),
    });
    let mut s = Session {
        history: Vec::new(),
        compactor: Compactor::new(policy(keep_recent)),
        writer,
        path,
        keep_recent,
        typed: Vec::new(),
        tools: HashMap::new(),
        next_id: 0,
    };
    let first = "Find the coupon bug.".to_string();
    s.typed.push(first.clone());
    s.push(Message::user_blocks(vec![
        Block::injected(Origin::Instructions, "Contents of /w/CLAUDE.md: tabs"),
        Block::injected(Origin::Git, "gitStatus: clean"),
        Block::text(first),
    ]));
    for op in ops {
        match op {
            Op::User(t) => {
                s.typed.push(t.clone());
                s.push(Message::user(t));
            }
            Op::Tools(calls) => {
                let mut uses = Vec::new();
                let mut results = Vec::new();
                for (tool, size, error) in calls {
                    s.next_id += 1;
                    let id = format!("toolu_{}", s.next_id);
                    let name = TOOLS[tool];
                    s.tools.insert(id.clone(), name.to_string());
                    let input = if name == "TodoWrite" {
                        json!({"todos": [{"content": "fix it", "status": "in_progress"}]})
                    } else {
                        json!({"file_path": format!("/w/src/f{}.rs", s.next_id % 7)})
                    };
                    uses.push(Block::ToolUse(ToolUse {
                        id: id.clone(),
                        name: name.into(),
                        input,
                    }));
                    results.push(Block::tool_result(id, "r".repeat(size), error));
                }
                let a = s.answer(uses);
                s.push(a);
                s.push(Message::user_blocks(results));
            }
            Op::Answer(t) => {
                let a = s.answer(vec![Block::text(t)]);
                s.push(a);
            }
            Op::Auto(m) => match s.compactor.before_request(&s.turn()) {
                Decision::Send | Decision::Blocked { .. } => {}
                Decision::Mask(plan) => s.mask(&plan),
                Decision::Full { mask } => {
                    if let Some(plan) = mask {
                        s.mask(&plan);
                    }
                    provider.next.lock().unwrap().push_back(m);
                    rt.block_on(s.full(Trigger::Auto, &summariser));
                }
            },
            Op::Micro => {
                let plan = mask::plan(&s.history, keep_recent, mask::MaskTrigger::Manual);
                s.mask(&plan);
            }
            Op::Full(m) => {
                provider.next.lock().unwrap().push_back(m);
                rt.block_on(s.full(Trigger::Manual, &summariser));
            }
            Op::Offline => rt.block_on(s.full(Trigger::Manual, &Summariser::Extractive)),
            Op::Resume => {
                let t = Transcript::read(&s.path).unwrap();
                let replay = t.replay();
                assert_eq!(
                    replay.history, s.history,
                    "resume rebuilds the running history"
                );
                let resumed = Compactor::resumed(
                    policy(keep_recent),
                    &replay.history,
                    replay.tokens_freed_since_usage,
                    replay
                        .compaction
                        .as_ref()
                        .map(|c| c.user_messages.clone())
                        .unwrap_or_default(),
                );
                assert_eq!(
                    resumed.count(&s.history, 200),
                    s.compactor.count(&s.history, 200)
                );
                assert_eq!(resumed.preserved, s.compactor.preserved);
                if !resumed.preserved.is_empty() {
                    bump(&COVERAGE.resumes_after_compaction);
                }
                s.compactor = resumed;
                s.writer = reopen(&mut s.writer, &s.path, &t);
            }
            Op::Crash(per_mille) => {
                // A compaction whose write is cut short: the old history survives.
                let before = std::fs::metadata(&s.path).unwrap().len() as usize;
                let required = compact::full::required(&s.history, &s.compactor.preserved);
                if s.history.iter().all(|m| m.role == Role::User) {
                    continue;
                }
                let reinject = Reinject::default();
                let inputs =
                    s.compactor
                        .inputs(&s.history, &s.turn(), Trigger::Auto, None, &reinject);
                let raw = compact::extractive::summarise(&s.history, &required, None);
                let c = compact::full::assemble(&inputs, &required, &raw);
                s.writer
                    .compaction(
                        CompactMetadata {
                            trigger: "auto".into(),
                            user_messages: c.user_messages.clone(),
                            ..CompactMetadata::default()
                        },
                        &c.history,
                    )
                    .unwrap();
                let bytes = std::fs::read(&s.path).unwrap();
                // Anywhere before the last record's line is whole.
                let span = bytes.len() - 1 - before;
                let cut = before + span * usize::from(per_mille) / 1000;
                std::fs::write(&s.path, &bytes[..cut]).unwrap();
                let t = Transcript::read(&s.path).unwrap();
                assert_eq!(
                    t.replay().history,
                    s.history,
                    "cut at {cut} of {}",
                    bytes.len()
                );
                bump(&COVERAGE.crashes);
                s.writer = reopen(&mut s.writer, &s.path, &t);
            }
        }
        s.check();
    }
    // The end state resumes too.
    let replay = Transcript::read(&s.path).unwrap().replay();
    assert_eq!(replay.history, s.history);
}

/// A temporary directory, in memory when the system has one (every record is fsynced).
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new().prefix("r5-").tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn no_user_message_is_ever_lost() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 1000,
        ..ProptestConfig::default()
    });
    let strategy = (1usize..6, prop::collection::vec(op(), 1..48));
    let result = runner.run(&strategy, |(keep_recent, ops)| {
        run_case(&rt, keep_recent, ops);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let c = &COVERAGE;
    let figures = [
        (
            "successful full compactions",
            c.compactions.load(Ordering::Relaxed),
        ),
        (
            "compactions of a compacted history",
            c.later_compactions.load(Ordering::Relaxed),
        ),
        ("failed compactions", c.failures.load(Ordering::Relaxed)),
        (
            "user messages the model left out, appended",
            c.appended.load(Ordering::Relaxed),
        ),
        ("maskings", c.maskings.load(Ordering::Relaxed)),
        (
            "resumes after a compaction",
            c.resumes_after_compaction.load(Ordering::Relaxed),
        ),
        ("crashes mid-compaction", c.crashes.load(Ordering::Relaxed)),
    ];
    eprintln!("R5 over 1,000 sessions: {figures:?}");
    for (what, n) in figures {
        assert!(n >= 50, "only {n} {what}: the cases do not exercise it");
    }
}
