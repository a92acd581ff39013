//! The chat methods' protocol types (`chat/new`, `chat/list`, `chat/resume`, `chat/send`,
//! `chat/cancel`, `chat/setMode`, the `chat/event` and `chat/modeChanged` notifications, the
//! `chat/permission` request to the client) and `compact/run`,
//! registered in [`super::ext::METHODS`] like every custom method (schemas in `schemas/`,
//! sections in `docs/protocol.md`).
//!
//! The event payload is the session's own [`ChatEvent`] (a serde + schemars type, like the
//! `features` types), flattened beside `sessionId` and `turnId`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ext::{CustomNotification, CustomRequest};
use crate::session::ChatEvent;

pub const NEW: &str = "chat/new";
pub const LIST: &str = "chat/list";
pub const RESUME: &str = "chat/resume";
pub const SEND: &str = "chat/send";
pub const CANCEL: &str = "chat/cancel";
pub const EVENT: &str = "chat/event";
pub const PERMISSION: &str = "chat/permission";
pub const COMPACT_RUN: &str = "compact/run";
pub const SET_MODE: &str = "chat/setMode";
pub const MODE_CHANGED: &str = "chat/modeChanged";
pub const SET_STYLE: &str = "chat/setStyle";

pub use crate::features::permissions::ModeView;
pub use crate::session::permissions::Mode;

/// LSP's `ProgressToken`, for the schemas: an integer or a string. The value itself is kept
/// as the client sent it (`serde_json::Value`) and echoed in `$/progress`.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // reason: a schema shape only; never built.
enum ProgressToken {
    Integer(i64),
    String(String),
}

/// Params of `chat/new`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewParams {
    /// The workspace folder (a `file:` URI) the session works in; default: the first folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// A client-made progress token: the server reports `$/progress` (begin, report, end) on
    /// it while the walk, the git snapshot or the transcript is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<ProgressToken>")]
    pub work_done_token: Option<Value>,
    /// The permission mode to start in (`default`, `acceptEdits`, `plan`, `dontAsk`,
    /// `bypassPermissions`; Claude Code's `manual` is `default`, and `auto` runs as `default`
    /// here). Absent: the settings' `permissions.defaultMode`, else `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Result of `chat/new`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewResult {
    pub session_id: String,
    /// The session's working directory (real path).
    pub cwd: PathBuf,
    /// Where its transcript is written (created with the first message).
    pub transcript: PathBuf,
    /// The permission mode it runs in.
    pub mode: Mode,
    /// The modes `chat/setMode` may switch it to (bypass permissions only where it may run).
    pub available_modes: Vec<ModeView>,
}

/// Params of `chat/setMode`: the user switches a session's permission mode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    pub session_id: String,
    /// `default`, `acceptEdits`, `plan`, `dontAsk`, `bypassPermissions` (`manual` is `default`).
    pub mode: String,
}

/// Result of `chat/setMode`. The change applies to the next tool call (a running turn's too);
/// the model is told at the next message when it concerns it (entering or leaving plan mode or
/// bypass permissions). `chat/modeChanged` follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModeResult {
    pub mode: Mode,
    pub previous: Mode,
}

/// Params of `chat/modeChanged` (server → client): a session's permission mode changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModeChangedParams {
    pub session_id: String,
    pub mode: Mode,
}

/// Params of `chat/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    /// Only this workspace folder (a `file:` URI); default: every folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Sessions per answer: default 100, at most 1,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Where to go on: a previous answer's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One session of `chat/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    /// `ours` or `reference` (the reference CLI's, under `~/.claude/projects/`).
    pub source: String,
    /// The reference CLI's sessions are never written: resuming one continues in a new
    /// session of ours.
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub bytes: u64,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The transcript file.
    pub path: PathBuf,
    /// A turn is running in this server right now.
    pub running: bool,
}

/// Result of `chat/list`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    pub sessions: Vec<SessionEntry>,
    /// Set when more sessions follow: pass it as `cursor` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params of `chat/resume`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeParams {
    pub session_id: String,
    /// The workspace folder (a `file:` URI) to look in; default: every folder, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// A client-made progress token: the server reports `$/progress` (begin, report, end) on
    /// it while the walk, the git snapshot or the transcript is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<ProgressToken>")]
    pub work_done_token: Option<Value>,
}

pub use crate::session::history::{AttachmentView, HistoryEntry, ToolCallView, ToolResultView};

/// Result of `chat/resume`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeResult {
    /// The session to send to: the one asked for, or a new one of ours continuing a reference
    /// CLI session.
    pub session_id: String,
    /// The reference CLI session this one continues (never written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    pub messages: Vec<HistoryEntry>,
    /// Lines of the transcript skipped (torn, invalid) or bridged.
    pub warnings: Vec<String>,
    /// The permission mode it runs in (see `chat/new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The modes `chat/setMode` may switch it to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available_modes: Vec<ModeView>,
}

/// Params of `chat/send`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub session_id: String,
    pub text: String,
    /// Files the user mentioned (`file:` URIs): their contents are sent, and their conditional
    /// rules and nested instruction files attach.
    #[serde(default)]
    pub mentions: Vec<String>,
    /// Images the user pasted or attached, in order, sent to the model before the text. At
    /// most 20; each PNG, JPEG, GIF or WebP of at most 5 MB whose bytes are what `mediaType`
    /// says. A bad one refuses the whole message (`-32602` naming `images[i]`); nothing is
    /// sent or kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageParam>,
}

/// An image in `chat/send`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageParam {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The image's bytes, base64 (standard alphabet, padded; no `data:` prefix).
    pub data: String,
}

/// Result of `chat/send`, answered at once; the answer streams as `chat/event`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    pub turn_id: String,
}

/// Params of `chat/cancel`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelParams {
    pub session_id: String,
}

/// Result of `chat/cancel`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResult {
    /// A turn was running and is stopping (its `done` event follows).
    pub cancelled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// Params of `chat/event` (server → client): one event of a turn, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventParams {
    pub session_id: String,
    pub turn_id: String,
    #[serde(flatten)]
    pub event: ChatEvent,
}

/// Params of `chat/permission` (server → client request): may this tool call run? Or, with
/// `tool: "mcpServer"`, may this project's MCP server start (the reference CLI's dialog)? Or,
/// with `tool: "workspaceTrust"`, does the user trust the session's folder (its trust dialog)?
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    pub session_id: String,
    /// `Write`, `Edit`, `Bash`, an MCP tool (`mcp__<server>__<tool>`), any tool on a path
    /// outside the workspace folders; `mcpServer`: a project's MCP server (`.mcp.json`)
    /// nobody approved yet, asked about before it starts; or `workspaceTrust`: does the user
    /// trust the session's folder (asked before the first request of a chat in a folder nobody
    /// was asked about, when trusting it would change something).
    pub tool: String,
    /// The model's input, as it sent it. For `mcpServer`: `{server, command, args, scope,
    /// source}` (the server's name, the command line it would run, `project`, and the
    /// `.mcp.json` it is configured in). For `workspaceTrust`: `{folder, loads, waiting}` (the
    /// folder, the `Trusting this folder loads …` line, and what waits: `{key, file, detail}`).
    pub input: Value,
    /// A short human line: `Edit src/main.rs`, `Bash: cargo test`; for `mcpServer`, the dialog's
    /// title `New MCP server found in this project: <name>`; for `workspaceTrust`,
    /// `Accessing workspace: <folder>`.
    pub summary: String,
    /// What `allowSession` would cover, in words (for the button's label). Absent when the call
    /// can only be allowed once: a change to a file that makes programs run code (a git
    /// directory, `.gitattributes`, editor settings); offer no session button then (an
    /// `allowSession` answer counts as `allow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_scope: Option<String>,
    /// Shown with the prompt when present: what the file can make run ("This file can make
    /// programs run commands: …"); for `mcpServer`, the dialog's warning ("MCP servers may
    /// execute code or access system resources. All tool calls require approval."); for
    /// `workspaceTrust`, the dialog's text, one line each (the safety check, what the agent does
    /// here, what trusting loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Why the user is asked, when a permission rule or the command checker says: "the ask rule
    /// Bash(npm publish:*) (~/.claude/settings.json:4)", "mkdir in '/p/d' needs approval. …".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The words of each answer, when the question is not "may this call run": label the
    /// choices with them. For `mcpServer`: `allow` "Use this MCP server" (remembered in the
    /// project's `.claude/settings.local.json`), `allowSession` "Use this and all future MCP
    /// servers in this project" (remembered; later servers start unasked), `deny` "Continue
    /// without using this MCP server" (remembered; the default). An error or no answer is not
    /// remembered: the server does not start in this session, and the next one asks again.
    /// For `workspaceTrust`: `allow` "Yes, I trust this folder", `deny` "No, don't trust this
    /// folder" (the default); both kept outside the repository; no `allowSession`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<crate::session::seams::Choices>,
}

/// The user's answer to `chat/permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionDecision {
    /// This call only.
    Allow,
    /// This call and every later call of the same scope (`sessionScope`) in this session.
    AllowSession,
    /// Nothing runs; the model gets an error result saying the user denied it.
    Deny,
}

/// Result of `chat/permission`. An answer that does not parse, an error, no answer within
/// the time limit, or a cancelled call all count as `deny`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResult {
    pub decision: PermissionDecision,
}

/// The session part of `context/preview` with `sessionId`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPreview {
    pub session_id: String,
    /// Messages in the history the next request sends.
    pub messages: u64,
    /// What the next request occupies: the last answer's real usage plus an estimate of what
    /// came since, or an estimate of everything before the first answer.
    pub tokens: u64,
    /// `tokens` is an estimate only (no answer yet).
    pub estimated: bool,
    /// The last answer's usage, as the API reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_usage: Option<crate::session::UsageReport>,
    /// The running turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub transcript: PathBuf,
}

/// `compact/run`'s `mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompactMode {
    /// What the session would do before its next request: masking when that is enough, else a
    /// summary (the breaker and `compaction.autoCompact` do not stop a manual run), else
    /// nothing.
    #[default]
    Auto,
    /// Clear the content of old tool results (the newest `compaction.keepRecent` stay).
    Micro,
    /// Summarise the conversation (every user message kept verbatim) and continue from the
    /// summary.
    Full,
}

/// Params of `compact/run`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactRunParams {
    pub session_id: String,
    #[serde(default)]
    pub mode: CompactMode,
    /// A focus hint for the summary ("keep the API design decisions").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Report what would be cleared or summarised and the token change; change nothing, call
    /// no model.
    #[serde(default)]
    pub dry_run: bool,
    /// A client-made progress token: `$/progress` while the summary is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<ProgressToken>")]
    pub work_done_token: Option<Value>,
}

/// A tool result masking cleared (or would clear).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClearedView {
    pub tool_use_id: String,
    pub tool: String,
    /// Estimated tokens freed.
    pub tokens: u64,
}

/// Result of `compact/run`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactRunResult {
    /// What ran (or would run): `none`, `micro` or `full`.
    pub mode: String,
    /// The whole request before (system prompt, tools and messages): the last usage plus
    /// estimates since, or an estimate of everything before the first answer.
    pub tokens_before: u64,
    /// The whole request after, on the same basis (an estimate). For a dry run of a summary,
    /// the offline extractive summary stands in for the model's.
    pub tokens_after: u64,
    /// Tool results whose content was (or would be) cleared, oldest first.
    pub cleared: Vec<ClearedView>,
    /// The summary as kept (a full run; a dry run shows none, since it calls no model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// User messages the history keeps, verbatim or in the summary's section 6: all of them.
    pub preserved_user_messages: u64,
    pub duration_ms: u64,
    pub dry_run: bool,
    /// Messages the summary replaces.
    pub summarised_messages: u64,
    /// Recently used files read again into the new history, newest first.
    pub reinjected_files: Vec<String>,
    /// What to know about the outcome: "would not reduce the conversation …", "would be refused,
    /// because …", and that the next message will be refused while the conversation is above the
    /// blocking limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

macro_rules! request {
    ($name:ident, $method:expr, $params:ty, $result:ty) => {
        /// A chat request (see the constant it names).
        pub enum $name {}
        impl CustomRequest for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
}

request!(New, NEW, NewParams, NewResult);
request!(List, LIST, ListParams, ListResult);
request!(Resume, RESUME, ResumeParams, ResumeResult);
request!(Send, SEND, SendParams, SendResult);
request!(Cancel, CANCEL, CancelParams, CancelResult);
request!(Permission, PERMISSION, PermissionParams, PermissionResult);
request!(CompactRun, COMPACT_RUN, CompactRunParams, CompactRunResult);
request!(SetMode, SET_MODE, SetModeParams, SetModeResult);
request!(SetStyle, SET_STYLE, SetStyleParams, SetStyleResult);

/// Params of `chat/setStyle`: the user chooses a session's output style.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetStyleParams {
    pub session_id: String,
    /// A style's exact name (`Explanatory`, a project's `Terse`, a plugin's `demo:Plain`), or
    /// `default`; omitted: nothing changes (the answer lists the styles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
}

/// Result of `chat/setStyle`. The system prompt stays as the session started it (the prompt
/// cache holds): the next message tells the model the new style, and the reminders after tool
/// results and prompts name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetStyleResult {
    pub style: String,
    pub previous: String,
    /// Every style the session can choose, `default` first.
    pub available: Vec<String>,
}

/// `chat/modeChanged` (server → client).
pub enum ModeChanged {}

impl CustomNotification for ModeChanged {
    const METHOD: &'static str = MODE_CHANGED;
    type Params = ModeChangedParams;
}

/// `chat/event` (server → client).
pub enum Event {}

impl CustomNotification for Event {
    const METHOD: &'static str = EVENT;
    type Params = EventParams;
}
