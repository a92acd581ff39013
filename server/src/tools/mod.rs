//! The agent's tools: `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`, `TodoWrite`.
//!
//! One [`Tools`] per chat session. The session hands it a model's `tool_use` (name and JSON input)
//! and gets back a [`ToolOutcome`]: the text for the `tool_result` (with `is_error`), the files the
//! tool read or wrote (the session touches them, so conditional rules attach), and a short summary
//! for the editor's `toolUse`/`toolResult` events. [`definitions`] are the schemas the request
//! builder sends in the API's `tools` field.
//!
//! Every call goes the same way (see [`Tools::run`]):
//! 1. the input is parsed; a malformed input or an unknown tool is an error result, never a panic;
//! 2. paths are resolved to real paths (symlinks followed) and judged against the [`Workspace`]
//!    (`paths.rs`): outside it, the [`OutsidePolicy`] refuses or asks;
//! 3. the session's permission [`Policy`] (its rules and mode: `crate::permissions`) decides:
//!    the call runs, is refused with the measured text, or the user is asked ([`Asker`]; answers
//!    "for the session" are the [`Permissions`]). A call the user rejects stops the turn
//!    ([`ToolOutcome::stop`]); a question nobody can answer gets the reference's `-p` text;
//! 4. the tool runs: file work on tokio's blocking pool, Bash as a child in its own process group;
//!    the call's [`CancellationToken`] (or dropping the future) stops it;
//! 5. secrets ([`ToolsConfig::scrub`]), as they are and in the transformed forms `crate::scrub`
//!    knows, are replaced in what goes back to the model and in every question asked.
//!
//! Edits go through the [`Editor`] seam when the file is open in an editor that can apply edits
//! (the change lands in the buffer, the disk is untouched); otherwise the disk is written
//! atomically. This module knows neither the session nor LSP: the session implements
//! [`Asker`] (`chat/permission`, or the terminal) and the LSP layer [`Editor`]
//! (`workspace/applyEdit`).

mod bash;
mod confine;
mod edit;
mod editor;
mod glob;
mod grep;
mod input;
mod paths;
mod permission;
mod read;
mod sandbox;
mod schema;
mod sensitive;
mod todo;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

pub use crate::permissions::Policy;
use crate::scrub::Scrubber;

pub use bash::BashConfig;
pub(crate) use bash::unattended_command;
pub use editor::{
    BufferEdit, DiskOnly, Editor, Position, Positions, TextEdit, apply_edits, position,
};
pub use paths::{OutsidePolicy, Workspace};
pub use permission::{Asker, Choices, Decision, PermissionRequest, Permissions, Preset, Scope};
pub use sandbox::{
    BWRAP_CANDIDATES, Runtime as SandboxRuntime, SandboxConfig, default_deny_read,
    excluded as excluded_command, find_bwrap, probe as probe_sandbox,
};
pub use schema::{ToolDefinition, definitions};
pub use todo::{Todo, TodoStatus};

use input::parse;
use paths::Resolved;

/// How a tool used a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A file a tool read or wrote (or tried to: a Read of a missing file counts, as context.md
/// section 4 says). Only `Read`, `Write` and `Edit` touch files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touched {
    /// Absolute, as the model wrote it (joined to the first workspace folder when relative).
    pub path: PathBuf,
    /// With every symbolic link resolved: what attachment rules judge.
    pub real: PathBuf,
    pub access: Access,
}

/// What one tool call produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The `tool_result` content for the model.
    pub content: String,
    /// Sent as the `tool_result`'s `is_error`.
    pub is_error: bool,
    /// Files read or written, in order.
    pub touched: Vec<Touched>,
    /// A short line for the editor's `toolResult` event ("42 lines", "denied by the user").
    pub summary: String,
    /// The permission policy kept the call from running (a rule, the mode, no answer, the
    /// user's rejection).
    pub refused: bool,
    /// The user rejected the call in a prompt: the turn stops after this answer's results
    /// (`permissions::texts::REJECTED`, check 26).
    pub stop: bool,
}

impl ToolOutcome {
    pub(crate) fn ok(content: impl Into<String>, summary: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: false,
            touched: Vec::new(),
            summary: summary.into(),
            refused: false,
            stop: false,
        }
    }

    pub(crate) fn error(content: impl Into<String>, summary: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: true,
            touched: Vec::new(),
            summary: summary.into(),
            refused: false,
            stop: false,
        }
    }

    /// A call the permission policy kept from running.
    pub(crate) fn refused(content: impl Into<String>, summary: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            refused: true,
            ..ToolOutcome::error(content, summary)
        }
    }

    fn touching(mut self, r: &Resolved, access: Access) -> ToolOutcome {
        self.touched.push(Touched {
            path: r.written.clone(),
            real: r.real.clone(),
            access,
        });
        self
    }
}

/// Everything a session decides about its tools once.
#[derive(Clone, Debug)]
pub struct ToolsConfig {
    pub workspace: Workspace,
    /// What happens to a path outside the workspace and the allowed directories.
    pub outside: OutsidePolicy,
    pub bash: BashConfig,
    /// Secrets (the API key) replaced by `[redacted]` in everything sent back to the model and
    /// every question asked (with their base64, hex and reversed forms: `crate::scrub`).
    pub scrub: Vec<String>,
    /// The session's permission rules and mode (shared with its front end, which switches the
    /// mode). The default has no rule and runs in default mode.
    pub policy: Arc<Policy>,
    /// The home folder (`~` in Bash commands).
    pub home: Option<PathBuf>,
}

impl ToolsConfig {
    pub fn new(workspace: Workspace) -> ToolsConfig {
        ToolsConfig {
            workspace,
            outside: OutsidePolicy::Refuse,
            bash: BashConfig::default(),
            scrub: Vec::new(),
            policy: Arc::new(Policy::default()),
            home: None,
        }
    }
}

/// The tools of one session: configuration, the editor and the asker, the answers the user gave
/// for the session, and the todo list.
pub struct Tools {
    config: ToolsConfig,
    /// The secrets of [`ToolsConfig::scrub`] in every form `crate::scrub` knows.
    scrubber: Arc<Scrubber>,
    editor: Arc<dyn Editor>,
    asker: Arc<dyn Asker>,
    permissions: Permissions,
    todos: Mutex<Vec<Todo>>,
    seen: Mutex<HashMap<PathBuf, Option<Stamp>>>,
    /// What PreToolUse hooks decided about the calls running now, by `tool_use` id.
    presets: Mutex<HashMap<String, Preset>>,
    /// Bash's sandbox for this session (its private `/tmp`, its proxy, the user's answer),
    /// shared with the session's hooks ([`Tools::share_sandbox`]).
    sandbox: Arc<sandbox::Runtime>,
}

/// A call's [`Preset`], forgotten when this is dropped (the call ended or was cancelled).
pub struct PresetGuard<'a> {
    tools: &'a Tools,
    id: String,
}

impl Drop for PresetGuard<'_> {
    fn drop(&mut self) {
        lock(&self.tools.presets).remove(&self.id);
    }
}

/// A file as it was on disk when the model last saw it (Read it, or wrote it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
}

impl Stamp {
    /// The file's stamp now; `None` when it cannot be had (it does not exist).
    pub(crate) fn of(real: &std::path::Path) -> Option<Stamp> {
        std::fs::metadata(real).ok().map(|m| Stamp {
            modified: m.modified().ok(),
            len: m.len(),
        })
    }
}

impl Tools {
    pub fn new(config: ToolsConfig, editor: Arc<dyn Editor>, asker: Arc<dyn Asker>) -> Tools {
        let scrubber = Arc::new(Scrubber::new(config.scrub.iter().map(String::as_str)));
        // Every question goes out scrubbed: a command, a path or an MCP server's words that
        // hold the key (the model can print it) never reach the prompt.
        let asker: Arc<dyn Asker> = Arc::new(permission::Scrubbing {
            inner: asker,
            scrubber: scrubber.clone(),
        });
        Tools {
            config,
            scrubber,
            editor,
            asker,
            permissions: Permissions::default(),
            todos: Mutex::new(Vec::new()),
            seen: Mutex::new(HashMap::new()),
            presets: Mutex::new(HashMap::new()),
            sandbox: Arc::default(),
        }
    }

    /// Makes `runtime` this session's sandbox state, the one its hooks run with (one private
    /// `/tmp`, one proxy, one answer to "run commands without a sandbox").
    pub fn share_sandbox(&mut self, runtime: Arc<sandbox::Runtime>) {
        self.sandbox = runtime;
    }

    /// A PreToolUse hook's decision about the call `id`, which its permission decision meets
    /// (see [`Preset`]) while the guard lives.
    pub fn preset(&self, id: &str, preset: Preset) -> PresetGuard<'_> {
        lock(&self.presets).insert(id.to_string(), preset);
        PresetGuard {
            tools: self,
            id: id.to_string(),
        }
    }

    /// The permission decision of a call no rule or mode judges (TodoWrite, a search of the
    /// session's folder, a skill, ToolSearch): it runs, unless a PreToolUse hook asked for the
    /// user ([`Preset::Ask`]).
    pub async fn permit_unjudged(
        &self,
        id: Option<&str>,
        tool: &str,
        input: &Value,
        summary: String,
    ) -> Result<(), ToolOutcome> {
        self.gate(
            crate::permissions::Action::Run,
            None,
            tool,
            input,
            id,
            summary,
        )
        .await
    }

    pub fn config(&self) -> &ToolsConfig {
        &self.config
    }

    /// The answers remembered for this session (allow-for-session).
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// The permission decision for a call of a tool that is not one of these (an MCP tool): its
    /// rules and the mode, then the user unless `scope` was allowed for the session. `Err` is the
    /// refusal (its text for the model; `stop` when the user rejected it).
    pub async fn permit_other(
        &self,
        id: Option<&str>,
        scope: Scope,
        tool: &str,
        input: &Value,
        summary: String,
    ) -> Result<(), ToolOutcome> {
        let action = self.config.policy.mcp(tool);
        self.gate(action, Some(scope), tool, input, id, summary)
            .await
    }

    /// Carries out a permission decision: runs (`Ok`), refuses, or asks the user (unless a
    /// session answer covers `scope`); nobody answering gets the action's `-p` text, a rejection
    /// stops the turn.
    async fn gate(
        &self,
        action: crate::permissions::Action,
        scope: Option<Scope>,
        tool: &str,
        input: &Value,
        id: Option<&str>,
        summary: String,
    ) -> Result<(), ToolOutcome> {
        use crate::permissions::{Action, Ask};
        let preset = id.and_then(|id| lock(&self.presets).get(id).cloned());
        // A hook's `ask`: the user decides, whatever a rule or the mode would run, with the
        // hook's reason; nobody answering gets the reason alone.
        let hook_ask = |reason: String, runs_code| Ask {
            unanswered: reason.clone(),
            reason: Some(format!("a PreToolUse hook asks: {reason}")),
            session: false,
            runs_code,
        };
        let ask = match (action, preset) {
            // A deny rule or the mode refuses whatever a hook said.
            (Action::Refuse(r), _) => return Err(ToolOutcome::refused(r.text, r.summary)),
            (Action::Run, None | Some(Preset::Allow)) => return Ok(()),
            (Action::Run, Some(Preset::Ask(reason))) => hook_ask(reason, None),
            (Action::Ask(a), Some(Preset::Ask(reason))) => hook_ask(reason, a.runs_code),
            // A hook's `allow` answers a question a session answer could answer; an ask rule's,
            // a file that makes programs run code, plan mode's MCP question are still asked.
            (Action::Ask(a), Some(Preset::Allow)) if a.session => return Ok(()),
            (Action::Ask(a), _) => a,
        };
        let scope = if ask.session { scope } else { None };
        if let Some(s) = &scope
            && self.permissions.allows(s)
        {
            return Ok(());
        }
        let warning = ask
            .runs_code
            .map(|what| format!("This file can make programs run commands: {what}."));
        let request = PermissionRequest {
            tool: tool.to_string(),
            input: input.clone(),
            summary,
            session_scope: scope.as_ref().map(Scope::describe),
            warning,
            reason: ask.reason.clone(),
            choices: None,
            tool_use_id: id.map(str::to_string),
        };
        match self.asker.answer(request).await {
            None => Err(ToolOutcome::refused(ask.unanswered, "not granted")),
            Some(Decision::Deny) => Err(ToolOutcome {
                stop: true,
                ..ToolOutcome::refused(crate::permissions::texts::REJECTED, "denied by the user")
            }),
            Some(Decision::Allow) => Ok(()),
            Some(Decision::AllowSession) => {
                if let Some(s) = scope {
                    self.permissions.remember(s);
                }
                Ok(())
            }
        }
    }

    /// The session's permission rules and mode.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.config.policy
    }

    /// The asker (the editor's `chat/permission`, the terminal), for questions that are not a
    /// tool call's (an MCP server's approval).
    pub fn asker(&self) -> &Arc<dyn Asker> {
        &self.asker
    }

    /// `text` with the configured secrets (the API key), in every form the scrubber knows,
    /// replaced by `[redacted]`.
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub(text).into_owned()
    }

    /// The scrubber of the configured secrets (the session's events share it).
    pub fn scrubber(&self) -> &Arc<Scrubber> {
        &self.scrubber
    }

    /// The todo list as the model last wrote it.
    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    /// Restores a todo list (a resumed session).
    pub fn set_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }

    /// A short human line for a call, before it runs (the editor's `toolUse` event, the permission
    /// prompt): "Read src/main.rs", "Bash: cargo test". Never fails: a malformed input gets the
    /// tool's name alone.
    pub fn describe(&self, name: &str, input: &Value) -> String {
        input::describe(name, input, &self.config.workspace)
    }

    /// Runs one tool call to its end. Never panics on the model's input; a cancelled call returns
    /// an error outcome saying so (and a Bash child is killed with its process group).
    pub async fn run(&self, name: &str, input: &Value, cancel: &CancellationToken) -> ToolOutcome {
        self.run_call(None, name, input, cancel).await
    }

    /// [`Tools::run`] for the model's `tool_use` `id`: a permission prompt names it
    /// ([`PermissionRequest::tool_use_id`]).
    pub async fn run_call(
        &self,
        id: Option<&str>,
        name: &str,
        input: &Value,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        // A tool a deny rule removed: as if it did not exist (it is not offered either).
        if let Some(rule) = self.config.policy.removed(name) {
            return ToolOutcome::refused(
                Policy::removed_text(name),
                format!("denied by {}", rule.text),
            );
        }
        let call = match parse(name, input) {
            Ok(call) => call,
            Err(message) => return ToolOutcome::error(message, "invalid input"),
        };
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => cancelled(name),
            out = self.dispatch(id, name, input, call, cancel) => out,
        };
        self.scrubbed(outcome)
    }

    async fn dispatch(
        &self,
        id: Option<&str>,
        name: &str,
        raw: &Value,
        call: input::Call,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        let ctx = Ctx {
            tools: self,
            id,
            name,
            raw,
        };
        match call {
            input::Call::Read(i) => read::run(&ctx, i).await,
            input::Call::Write(i) => edit::write(&ctx, i).await,
            input::Call::Edit(i) => edit::edit(&ctx, i).await,
            input::Call::Glob(i) => glob::run(&ctx, i, cancel).await,
            input::Call::Grep(i) => grep::run(&ctx, i, cancel).await,
            input::Call::Bash(i) => bash::run(&ctx, i, cancel).await,
            input::Call::TodoWrite(i) => {
                if let Err(out) = self.permit_unjudged(id, name, raw, name.to_string()).await {
                    return out;
                }
                todo::run(&self.todos, i)
            }
        }
    }

    fn scrubbed(&self, mut outcome: ToolOutcome) -> ToolOutcome {
        if let std::borrow::Cow::Owned(clean) = self.scrubber.scrub(&outcome.content) {
            outcome.content = clean;
        }
        if let std::borrow::Cow::Owned(clean) = self.scrubber.scrub(&outcome.summary) {
            outcome.summary = clean;
        }
        outcome
    }
}

/// What a tool needs from its [`Tools`] while it runs.
pub(crate) struct Ctx<'a> {
    tools: &'a Tools,
    /// The model's `tool_use` id, when the session gave it.
    id: Option<&'a str>,
    name: &'a str,
    raw: &'a Value,
}

impl Ctx<'_> {
    pub(crate) fn workspace(&self) -> &Workspace {
        &self.tools.config.workspace
    }

    pub(crate) fn editor(&self) -> &dyn Editor {
        &*self.tools.editor
    }

    /// The model has seen `real`: on disk with this stamp, or (`None`) in the editor's buffer.
    pub(crate) fn saw(&self, real: &std::path::Path, stamp: Option<Stamp>) {
        lock(&self.tools.seen).insert(real.to_path_buf(), stamp);
    }

    /// What the model last saw of `real`: `None` when it never saw it in this session.
    pub(crate) fn seen(&self, real: &std::path::Path) -> Option<Option<Stamp>> {
        lock(&self.tools.seen).get(real).copied()
    }

    pub(crate) fn bash_config(&self) -> &BashConfig {
        &self.tools.config.bash
    }

    pub(crate) fn sandbox(&self) -> &sandbox::Runtime {
        &self.tools.sandbox
    }

    /// The model's `tool_use` id, for a question about this call.
    pub(crate) fn tool_use_id(&self) -> Option<String> {
        self.id.map(str::to_string)
    }

    /// Asks the user `request` as it is (a question that is not "may this call run").
    pub(crate) async fn ask(&self, request: PermissionRequest) -> Decision {
        self.tools.asker.ask(request).await
    }

    /// Resolves a path the model wrote (no permission decided yet: see [`Ctx::check_file`]).
    pub(crate) fn resolve_only(&self, raw: &str) -> Result<Resolved, ToolOutcome> {
        paths::resolve(self.workspace(), raw).map_err(|m| ToolOutcome::error(m, "bad path"))
    }

    /// Resolves a path the model wrote for reading and decides the read: `Err` is the outcome to
    /// return (refused, or not allowed by the user).
    pub(crate) async fn resolve(&self, raw: &str) -> Result<Resolved, ToolOutcome> {
        let r = self.resolve_only(raw)?;
        let dir = r.real.is_dir();
        self.check_file(&r, crate::permissions::Access::Read, dir, None)
            .await?;
        Ok(r)
    }

    /// The permission decision for this call on the resolved path `r`, then carried out
    /// ([`Ctx::file_action`], [`Ctx::carry_file`]).
    pub(crate) async fn check_file(
        &self,
        r: &Resolved,
        access: crate::permissions::Access,
        dir: bool,
        summary: Option<String>,
    ) -> Result<(), ToolOutcome> {
        let action = self.file_action(r, access, dir);
        self.carry_file(action, r, summary).await
    }

    /// What the session's rules and mode say about this call on the resolved path `r` (nothing
    /// asked yet: a refusal comes before any other check reads the file).
    pub(crate) fn file_action(
        &self,
        r: &Resolved,
        access: crate::permissions::Access,
        dir: bool,
    ) -> crate::permissions::Action {
        let runs_code = match access {
            crate::permissions::Access::Read => None,
            _ => self.workspace().runs_code(&r.real),
        };
        // As the rules and the texts name it: absolute, `..` folded.
        let written = paths::lexical(&r.written);
        self.tools
            .config
            .policy
            .file(&crate::permissions::FileCall {
                tool: self.name,
                access,
                written: &written,
                real: &r.real,
                inside: r.inside,
                runs_code,
                dir,
            })
    }

    /// Carries out a decision on `r`: a session answer covers the tool inside the workspace, or
    /// the tool on that real path outside it. With [`OutsidePolicy::Refuse`], what would be
    /// asked outside the workspace is refused instead.
    pub(crate) async fn carry_file(
        &self,
        action: crate::permissions::Action,
        r: &Resolved,
        summary: Option<String>,
    ) -> Result<(), ToolOutcome> {
        if matches!(action, crate::permissions::Action::Ask(_))
            && !r.inside
            && self.tools.config.outside == OutsidePolicy::Refuse
        {
            return Err(ToolOutcome::refused(
                paths::refusal(self.workspace(), r),
                "refused: outside the workspace",
            ));
        }
        let scope = if r.inside {
            Scope::Tool(self.name.to_string())
        } else {
            Scope::Outside {
                tool: self.name.to_string(),
                path: r.real.clone(),
            }
        };
        // A question about a file outside always says so, whoever wrote its summary (an Edit's or
        // a Write's own words included): the user must know what the answer covers.
        let summary = match (summary, r.inside) {
            (Some(s), true) => s,
            (Some(s), false) => format!("{s} (outside the workspace folders)"),
            (None, true) => format!("{} {}", self.name, r.written.display()),
            (None, false) => format!(
                "{} {} (outside the workspace folders)",
                self.name,
                r.written.display()
            ),
        };
        self.tools
            .gate(action, Some(scope), self.name, self.raw, self.id, summary)
            .await
    }

    /// The permission decision of this call when no rule or mode judges it (a search of the
    /// session's folder): [`Tools::permit_unjudged`].
    pub(crate) async fn unjudged(&self) -> Result<(), ToolOutcome> {
        self.tools
            .permit_unjudged(self.id, self.name, self.raw, self.name.to_string())
            .await
    }

    /// What the session's rules and mode say about a Bash command (the Bash tool's, a skill's
    /// shell block's), nothing asked yet: a refusal comes before the sandbox's own question.
    pub(crate) fn bash_action(&self, command: &str, cwd: &Path) -> crate::permissions::Action {
        let ws = self.workspace();
        let working: Vec<PathBuf> = ws.roots().iter().chain(ws.allowed()).cloned().collect();
        let dirs = crate::permissions::Dirs {
            cwd,
            working: &working,
            home: self.tools.config.home.as_deref(),
        };
        let look = DiskLookup { ws };
        self.tools.config.policy.bash(command, &dirs, &look)
    }

    /// Carries out the decision on a Bash command ([`Ctx::bash_action`]): runs, refuses, or asks
    /// (a session answer covers this exact command text).
    pub(crate) async fn carry_bash(
        &self,
        action: crate::permissions::Action,
        command: &str,
    ) -> Result<(), ToolOutcome> {
        self.tools
            .gate(
                action,
                Some(Scope::Command(command.to_string())),
                self.name,
                self.raw,
                self.id,
                format!("Bash: {command}"),
            )
            .await
    }
}

/// The file system as the Bash judgement sees it: real paths, glob expansion (bounded), files
/// that make programs run code.
struct DiskLookup<'a> {
    ws: &'a Workspace,
}

/// Entries a glob in a command is expanded over at most (a judgement, not a search).
const MAX_EXPANDED: usize = 10_000;

impl crate::permissions::Lookup for DiskLookup<'_> {
    fn real(&self, path: &Path) -> PathBuf {
        paths::real_of(path)
    }

    fn expand(&self, pattern: &Path) -> Vec<PathBuf> {
        paths::expand(pattern, MAX_EXPANDED)
    }

    fn runs_code(&self, real: &Path) -> bool {
        self.ws.runs_code(real).is_some()
    }
}

fn cancelled(name: &str) -> ToolOutcome {
    ToolOutcome::error(
        format!("The {name} call was cancelled by the user before it finished."),
        "cancelled",
    )
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs blocking work on tokio's blocking pool. `Err` when it panicked (a bug, never the
/// model's input): a message rather than a session taken down.
pub(crate) async fn off_thread<T, F>(f: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("internal error in the tool: {e}"))
}

/// [`off_thread`] for work that makes an outcome.
pub(crate) async fn blocking<F>(f: F) -> ToolOutcome
where
    F: FnOnce() -> ToolOutcome + Send + 'static,
{
    off_thread(f)
        .await
        .unwrap_or_else(|m| ToolOutcome::error(m, "internal error"))
}
