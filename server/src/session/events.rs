//! What a turn reports as it runs ([`ChatEvent`]), and the seams a session is driven through:
//! where events go ([`Events`]), how tools run ([`ToolRunner`]), what runs before every
//! request ([`RequestHook`], compaction's place) and after every turn ([`AfterTurn`], memory
//! extraction's place).
//!
//! These are plain data and traits: the language server sends events as `chat/event`; the
//! command line prints them.
//! The event types are serde + schemars types (like `features`'): they are the protocol's
//! `chat/event` payload, so the LSP layer wraps them instead of mirroring them.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::journal::Journal;
use crate::conversation::{Message, ResultPart, StopReason, ToolUse, Usage};
use crate::llm::{AppliedEdit, CancellationToken, ContextManagement, SystemBlock, ToolSpec};

/// One thing a turn reports, in order. A turn ends with exactly one [`ChatEvent::Done`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ChatEvent {
    /// A piece of the answer's text, as it arrives. `index` is the block of the answer it extends.
    Text { index: u32, text: String },
    /// A piece of the model's extended thinking.
    Thinking { index: u32, text: String },
    /// The model calls a tool (complete input).
    ToolUse {
        id: String,
        name: String,
        input: Value,
        /// A subagent's call: the id of the parent's `Agent` call that runs it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_use_id: Option<String>,
    },
    /// A tool's result, as the model gets it.
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
        /// A subagent's result: the id of the parent's `Agent` call that runs it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_use_id: Option<String>,
    },
    /// The parent's `Agent` call `toolUseId` started a subagent: its tool calls follow with
    /// `parentToolUseId` set to `toolUseId`, and a `subagentEnd` closes it (before the `Agent`
    /// call's own `toolResult`).
    SubagentStart {
        tool_use_id: String,
        agent_id: String,
        /// The agent type (`reviewer`, `general-purpose`, `demo-plugin:plug-agent`).
        agent_type: String,
        /// The call's `description` (a short title).
        description: String,
        /// The model it runs on.
        model: String,
    },
    /// The subagent of the `Agent` call `toolUseId` ended.
    SubagentEnd {
        tool_use_id: String,
        agent_id: String,
        /// `completed`, `cancelled`, `failed` (a request failed or a cap was reached).
        outcome: String,
        /// Its tool calls.
        tool_uses: u64,
        duration_ms: u64,
    },
    /// A file attached to the message being sent because a touched file made it apply (a
    /// conditional rule, a nested CLAUDE.md): "rule X now applies".
    Attachment {
        path: String,
        /// The touched file (mentioned, open in the editor, or read by a tool) that caused it.
        trigger: String,
        tokens: u64,
    },
    /// The token usage the API reported for the answer just completed, and the session's count.
    Usage(UsageReport),
    /// A hook ran and has something to show (shown in the transcript as a tool result is):
    /// its block or feedback, what it added for the model, a message for the user, or why it
    /// said nothing.
    Hook(HookReport),
    /// The history was compacted before a request, or the API cleared old tool results of
    /// the request just answered.
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        /// `micro` (old tool results cleared), `full` (summarised), or `api` (the API's own
        /// context editing cleared them from the prompt the model saw; the history keeps them).
        mode: String,
    },
    /// Something went wrong. With `retry`, the request is tried again after `retry.delayMs`;
    /// with `restart`, the text streamed so far for this answer is void and a new answer
    /// follows. Otherwise the turn ends (a `done` follows) and the session goes on.
    Error(ErrorReport),
    /// The turn is over.
    Done {
        outcome: Outcome,
        /// The model's last stop reason (`end_turn`, `max_tokens`, `tool_use`, …), when it
        /// finished an answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
    },
}

/// What a hook did, for the transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookReport {
    /// The event (`PreToolUse`, `Stop`, …).
    pub event: String,
    /// `blocked` (the prompt or the compaction did not happen: `text` says why), `denied` (the
    /// tool call did not run: `text` is its result), `allowed` (it ran without a prompt),
    /// `feedback` (the model continues with `text`, or reads it after the tool result),
    /// `context` (`text` was added for the model), `stopped` (the turn ends after this step),
    /// `message` (the hook's `systemMessage`, for the user only), `error` (the hook failed and
    /// said nothing), `timeout` (killed at its time limit; it said nothing).
    pub outcome: String,
    pub text: String,
    /// The hook's command, in full; absent when several hooks decided together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The tool call it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Token figures after an answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// What the conversation occupies in the window now: input (fresh, cached, written to the
    /// cache) plus output.
    pub context_tokens: u64,
    pub window: u64,
    /// `contextTokens / window * 100`, one decimal.
    pub percent: f64,
}

impl UsageReport {
    pub fn new(u: &Usage, window: u64) -> UsageReport {
        let context = u.context_tokens();
        let window = window.max(1);
        UsageReport {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            context_tokens: context,
            window,
            percent: (context as f64 * 1000.0 / window as f64).round() / 10.0,
        }
    }
}

/// An error, for a person and for a program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorReport {
    /// What happened, in words (the API's own message when it gave one). Never holds a key.
    pub message: String,
    /// `rateLimited`, `overloaded`, `server`, `connection`, `stalled`, `protocol`, `rejected`,
    /// `auth`, `config`, `transcript`, `blocked`.
    pub error_kind: String,
    /// The HTTP status of the API's answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Set when the request is tried again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryInfo>,
    /// The stream was cut mid-answer: discard what this answer streamed so far; it is kept in
    /// the transcript as a partial answer, and the request is sent again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
}

/// A retry about to happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryInfo {
    /// The attempt about to start (2 for the first retry).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub of: u32,
    pub delay_ms: u64,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// The model finished (whatever its stop reason).
    Completed,
    /// `chat/cancel`, Ctrl-C or shutdown stopped it; what had arrived is kept, marked.
    Cancelled,
    /// An error ended it (reported by the `error` event before); what had arrived is kept.
    Failed,
}

/// Where a turn's events go. `emit` may wait (an editor that reads slowly slows the turn down
/// instead of growing a queue).
pub trait Events: Send + Sync {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()>;
}

/// Events scrubbed of secrets before they reach `inner` ([`crate::scrub`]): the key, and its
/// base64, hex and reversed forms, never reach an editor, an ACP client or the terminal, even
/// when the model prints it. The text of an answer (and its thinking) streams through a
/// [`crate::scrub::Stream`]: the end of a piece that could begin the key is held until the next
/// piece, or any other event (which it then precedes), says what it is.
pub struct Scrubbed<'a> {
    inner: &'a dyn Events,
    scrubber: std::sync::Arc<crate::scrub::Scrubber>,
    /// The block being streamed (`true`: thinking) and what its stream holds.
    text: std::sync::Mutex<Option<(bool, u32, crate::scrub::Stream)>>,
}

impl<'a> Scrubbed<'a> {
    pub fn new(inner: &'a dyn Events, secrets: impl Iterator<Item = String>) -> Scrubbed<'a> {
        let secrets: Vec<String> = secrets.collect();
        Scrubbed {
            inner,
            scrubber: std::sync::Arc::new(crate::scrub::Scrubber::new(
                secrets.iter().map(String::as_str),
            )),
            text: std::sync::Mutex::new(None),
        }
    }

    /// What to send for `event`, in order: held text first when the stream changes.
    fn clean(&self, event: ChatEvent) -> Vec<ChatEvent> {
        let s = &*self.scrubber;
        if s.is_empty() {
            return vec![event];
        }
        let mut text = self.text.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        let piece = match &event {
            ChatEvent::Text { index, text } => Some((false, *index, text)),
            ChatEvent::Thinking { index, text } => Some((true, *index, text)),
            _ => None,
        };
        let same =
            matches!((&*text, &piece), (Some((t, i, _)), Some((t2, i2, _))) if t == t2 && i == i2);
        if !same && let Some((thinking, index, mut stream)) = text.take() {
            let rest = stream.flush();
            if !rest.is_empty() {
                out.push(text_event(thinking, index, rest));
            }
        }
        if let Some((thinking, index, piece)) = piece {
            let (_, _, stream) =
                text.get_or_insert_with(|| (thinking, index, self.scrubber.stream()));
            let now = stream.push(piece);
            if !now.is_empty() {
                out.push(text_event(thinking, index, now));
            }
            return out;
        }
        out.push(match event {
            ChatEvent::ToolUse {
                id,
                name,
                input,
                parent_tool_use_id,
            } => ChatEvent::ToolUse {
                parent_tool_use_id,
                id,
                name: s.scrub(&name).into_owned(),
                input: s.scrub_json(&input),
            },
            ChatEvent::ToolResult {
                tool_use_id,
                content,
                is_error,
                parent_tool_use_id,
            } => ChatEvent::ToolResult {
                tool_use_id,
                content: s.scrub(&content).into_owned(),
                is_error,
                parent_tool_use_id,
            },
            ChatEvent::SubagentStart {
                tool_use_id,
                agent_id,
                agent_type,
                description,
                model,
            } => ChatEvent::SubagentStart {
                tool_use_id,
                agent_id,
                agent_type: s.scrub(&agent_type).into_owned(),
                description: s.scrub(&description).into_owned(),
                model,
            },
            ChatEvent::Attachment {
                path,
                trigger,
                tokens,
            } => ChatEvent::Attachment {
                path: s.scrub(&path).into_owned(),
                trigger: s.scrub(&trigger).into_owned(),
                tokens,
            },
            ChatEvent::Error(mut e) => {
                e.message = s.scrub(&e.message).into_owned();
                ChatEvent::Error(e)
            }
            other => other,
        });
        out
    }
}

fn text_event(thinking: bool, index: u32, text: String) -> ChatEvent {
    if thinking {
        ChatEvent::Thinking { index, text }
    } else {
        ChatEvent::Text { index, text }
    }
}

impl Events for Scrubbed<'_> {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()> {
        let out = self.clean(event);
        Box::pin(async move {
            for e in out {
                self.inner.emit(e).await;
            }
        })
    }
}

/// Events into a channel (tests, the command line).
impl Events for tokio::sync::mpsc::UnboundedSender<ChatEvent> {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()> {
        let _ = self.send(event);
        Box::pin(async {})
    }
}

/// What a tool run gets from the session. Asking the user (the editor's `chat/permission`, the
/// terminal) is the runner's business: the driver that builds it knows how to ask.
pub struct ToolContext<'a> {
    pub session_id: &'a str,
    /// The session's working directory (real path).
    pub root: &'a Path,
    /// The turn's token: a cancel must stop the tool (and a permission prompt) at once.
    pub cancel: &'a CancellationToken,
    /// What a PreToolUse hook decided about this call: its permission decision meets it
    /// ([`crate::tools::Preset`]).
    pub preset: Option<&'a crate::tools::Preset>,
}

/// What a tool returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// The result's text (what the editor shows; what the model gets unless `parts` is set).
    pub content: String,
    /// The result as the model gets it, when it is not the one text `content`: an MCP tool's
    /// content items, `ToolSearch`'s `tool_reference`s.
    pub parts: Vec<ResultPart>,
    pub is_error: bool,
    /// Files the call read or wrote: their conditional rules and nested instruction files are
    /// attached after the result (context.md section 4).
    pub touched: Vec<PathBuf>,
    /// Text blocks that follow the results in the same user message (a skill's body after the
    /// `Skill` tool's `Launching skill: …`, skills-mcp.md section 5).
    pub extra: Vec<String>,
    /// The user rejected the call in a prompt: the calls after it do not run, the results end
    /// with `[Request interrupted by user for tool use]`, and the turn stops there (as the
    /// reference CLI's does; permissions-trust.md check 26).
    pub stop: bool,
}

impl ToolOutput {
    /// The `tool_result` block the model gets for the call `tool_use_id`: `parts` when the
    /// result has them, else the one text `content`.
    pub fn result_block(
        tool_use_id: String,
        content: String,
        parts: Vec<ResultPart>,
        is_error: bool,
    ) -> crate::conversation::Block {
        if parts.is_empty() {
            crate::conversation::Block::tool_result(tool_use_id, content, is_error)
        } else {
            crate::conversation::Block::ToolResult(crate::conversation::ToolResult {
                tool_use_id,
                content: parts,
                is_error,
                cleared: false,
            })
        }
    }
}

/// The seam for tools (issue 11 implements it in `server/src/tools/`). A session without a
/// runner offers no tools, so the model cannot call any; with one, a `tool_use` stop hands
/// each call to [`ToolRunner::run`] in order, and the results (then the attachments of the
/// files they touched) go back as the next user message.
pub trait ToolRunner: Send + Sync {
    /// The tools offered to the model (names, descriptions, input schemas), sent with every
    /// request of the session.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Runs one call. Never fails: a refused, denied or broken call is an `is_error` output
    /// whose content tells the model what happened.
    fn run<'a>(&'a self, call: &'a ToolUse, cx: ToolContext<'a>) -> BoxFuture<'a, ToolOutput>;
    /// Notes for the model after the results of a round whose calls touched `touched` (real
    /// paths): the skills below cwd those files discovered (skills-mcp.md section 2), what
    /// changed in the MCP servers since the model was told (section 7). Sent after the
    /// attachments, each once.
    fn after_results(&self, touched: &[PathBuf]) -> Vec<String> {
        let _ = touched;
        Vec::new()
    }

    /// Before a session's first request: waits (bounded, and stopped by `cancel`) for what the
    /// system prompt says about the tools, then gives the environment section's parts that
    /// depend on it: the MCP servers' (skills-mcp.md section 6: the first request waits about
    /// 2 s for servers still connecting) and the permission settings' (the additional working
    /// directories, the mode's text). `None`: `cancel` fired. The session freezes its system
    /// prompt with the answer.
    fn environment<'a>(
        &'a self,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<Environment>> {
        let _ = cancel;
        let no_agents = !self.specs().iter().any(|s| s.name == "Agent");
        Box::pin(async move {
            Some(Environment {
                no_agents,
                ..Environment::default()
            })
        })
    }

    /// Before each turn after the first request: what the model must be told first (the
    /// permission mode changed since it was last told: entering or leaving plan mode). Each
    /// note goes once, as a `<system-reminder>`.
    fn before_turn(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The environment section's parts that depend on the session's tools (see
/// [`ToolRunner::environment`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    pub mcp: Option<crate::mcp::Parts>,
    pub permissions: Option<crate::permissions::EnvironmentParts>,
    /// The session does not offer the `Agent` tool (a deny rule removed it): the agent types
    /// are not listed (permissions-trust.md section 6).
    pub no_agents: bool,
}

/// The session's token count before a request (context.md section 10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenCount {
    /// The best figure: the last usage plus a calibrated estimate of what was added since, or
    /// an estimate of everything before any usage.
    pub tokens: u64,
    /// The plain estimate (`ceil(bytes / 4)`) of the whole request.
    pub estimate: u64,
    /// The last answer's usage, if any.
    pub last_usage: Option<Usage>,
}

/// What a hook before a request may look at and change. The history is the turn's own copy:
/// a hook that returns [`HookOutcome::Compacted`] has replaced it, after recording the change
/// in the journal (the transcript first: a crash leaves the old history resumable).
pub struct HookContext<'a> {
    pub history: &'a mut Vec<Message>,
    pub journal: &'a Journal,
    pub count: TokenCount,
    /// The session's model (its provider and request settings).
    pub model: &'a super::config::Model,
    pub system: &'a [SystemBlock],
    pub tools: &'a [ToolSpec],
    pub cancel: &'a CancellationToken,
}

/// What a hook decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOutcome {
    /// Send as is.
    Send,
    /// The history was compacted (and recorded).
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        mode: String,
    },
    /// Do not send; tell the user why and what to do.
    Blocked { message: String },
}

/// Runs before every request of a turn: automatic compaction plugs in here
/// ([`super::compaction::AutoCompact`]).
pub trait RequestHook: Send + Sync {
    /// Whether [`RequestHook::before_request`] may change or stop the next request of this
    /// history; `false` lets the session send without copying the history for the hook. Cheap,
    /// synchronous, called with the session's state locked.
    fn needed(&self, _history: &[Message], _system: &[SystemBlock], _tools: &[ToolSpec]) -> bool {
        true
    }

    fn before_request<'a>(&'a self, cx: HookContext<'a>) -> BoxFuture<'a, HookOutcome>;

    /// Fields the next request to `provider` (a [`crate::llm::Provider::name`]) with these
    /// tools carries: the API's own context editing (compaction tier 2).
    fn context_management(
        &self,
        _provider: &str,
        _tools: &[ToolSpec],
    ) -> Option<ContextManagement> {
        None
    }

    /// An answer joined the history, which is now `history_len` messages long; `edits` are
    /// what the API cleared from that request itself. Called after the answer is on disk.
    fn answered(&self, _answer: &Message, _history_len: usize, _edits: &[AppliedEdit]) {}
}

/// What a hook after a turn is told. Everything is borrowed: a hook that works in the background
/// clones what it keeps.
pub struct TurnEnd<'a> {
    pub session_id: &'a str,
    pub outcome: Outcome,
    /// The model's last stop reason; `tool_use` means a call is still pending.
    pub stop_reason: Option<&'a StopReason>,
    /// The whole history, the turn's messages last.
    pub history: &'a [Message],
    /// The session's system blocks and tools, as its requests send them (a request that starts
    /// with the same prefix reads it from the prompt cache).
    pub system: &'a [SystemBlock],
    pub tools: &'a [ToolSpec],
    pub model: &'a super::config::Model,
    /// The session's memory directory; `None` when auto-memory is off.
    pub memory_dir: Option<&'a Path>,
}

/// Runs when a turn ends, after the session is idle again and before `done` goes out. It must
/// return at once (start a task for any work): the next turn never waits for it. Memory
/// extraction plugs in here ([`super::memory::Extractor`]).
pub trait AfterTurn: Send + Sync {
    fn after_turn(&self, end: TurnEnd<'_>);
}
