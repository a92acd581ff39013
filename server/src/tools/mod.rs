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
//! 3. the [`Permissions`] policy decides whether to ask the user ([`Asker`]): `Write`, `Edit` and
//!    `Bash` always need an answer, read-only tools inside the workspace do not;
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
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

use crate::scrub::Scrubber;

pub use bash::{BashConfig, REAP_ARG, reap_main, use_reaper};
pub use editor::{
    BufferEdit, DiskOnly, Editor, Position, Positions, TextEdit, apply_edits, position,
};
pub use paths::{OutsidePolicy, Workspace};
pub use permission::{Asker, Choices, Decision, PermissionRequest, Permissions, Scope};
pub use sandbox::{
    BWRAP_CANDIDATES, SandboxConfig, default_deny_read, excluded as excluded_command, find_bwrap,
    probe as probe_sandbox,
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
}

impl ToolOutcome {
    pub(crate) fn ok(content: impl Into<String>, summary: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: false,
            touched: Vec::new(),
            summary: summary.into(),
        }
    }

    pub(crate) fn error(content: impl Into<String>, summary: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: true,
            touched: Vec::new(),
            summary: summary.into(),
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
}

impl ToolsConfig {
    pub fn new(workspace: Workspace) -> ToolsConfig {
        ToolsConfig {
            workspace,
            outside: OutsidePolicy::Refuse,
            bash: BashConfig::default(),
            scrub: Vec::new(),
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
    /// Bash's sandbox for this session (its private `/tmp`, its proxy, the user's answer).
    sandbox: sandbox::Runtime,
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
            sandbox: sandbox::Runtime::default(),
        }
    }

    pub fn config(&self) -> &ToolsConfig {
        &self.config
    }

    /// The answers remembered for this session (allow-for-session).
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Asks the user about a call of a tool that is not one of these (an MCP tool), unless
    /// `scope` was allowed for the session; "allow for the session" remembers `scope`. `Err` is
    /// the denial's text for the model.
    pub async fn permit_other(
        &self,
        id: Option<&str>,
        scope: Scope,
        tool: &str,
        input: &Value,
        summary: String,
    ) -> Result<(), String> {
        if self.permissions.allows(&scope) {
            return Ok(());
        }
        let request = PermissionRequest {
            tool: tool.to_string(),
            input: input.clone(),
            summary: summary.clone(),
            session_scope: Some(scope.describe()),
            warning: None,
            choices: None,
            tool_use_id: id.map(str::to_string),
        };
        match self.asker.ask(request).await {
            Decision::Allow => Ok(()),
            Decision::AllowSession => {
                self.permissions.remember(scope);
                Ok(())
            }
            Decision::Deny => Err(denied(&summary).content),
        }
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
            input::Call::TodoWrite(i) => todo::run(&self.todos, i),
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

    /// Resolves a path the model wrote and applies the outside policy: `Err` is the outcome to
    /// return (refused, or denied by the user).
    pub(crate) async fn resolve(&self, raw: &str) -> Result<Resolved, ToolOutcome> {
        let r =
            paths::resolve(self.workspace(), raw).map_err(|m| ToolOutcome::error(m, "bad path"))?;
        if r.inside {
            return Ok(r);
        }
        self.outside(&r).await?;
        Ok(r)
    }

    /// A resolved path outside the workspace: refused, or allowed by the user (asked now, or
    /// earlier for the session).
    async fn outside(&self, r: &Resolved) -> Result<(), ToolOutcome> {
        match self.tools.config.outside {
            OutsidePolicy::Refuse => Err(ToolOutcome::error(
                paths::refusal(self.workspace(), r),
                "refused: outside the workspace",
            )),
            OutsidePolicy::Ask => {
                let scope = Scope::Outside {
                    tool: self.name.to_string(),
                    path: r.real.clone(),
                };
                let what = format!(
                    "{} {} (outside the workspace folders)",
                    self.name,
                    r.written.display()
                );
                self.permit(scope, what).await
            }
        }
    }

    /// Asks the user unless `scope` was allowed for the session. `Err` is the denial outcome.
    pub(crate) async fn permit(&self, scope: Scope, summary: String) -> Result<(), ToolOutcome> {
        let p = &self.tools.permissions;
        if p.allows(&scope) {
            return Ok(());
        }
        let request = PermissionRequest {
            tool: self.name.to_string(),
            input: self.raw.clone(),
            summary: summary.clone(),
            session_scope: Some(scope.describe()),
            warning: None,
            choices: None,
            tool_use_id: self.id.map(str::to_string),
        };
        match self.tools.asker.ask(request).await {
            Decision::Allow => Ok(()),
            Decision::AllowSession => {
                p.remember(scope);
                Ok(())
            }
            Decision::Deny => Err(denied(&summary)),
        }
    }

    /// Asks the user about a change to a file that makes programs run code (`sensitive.rs`):
    /// every time, whatever was allowed for the session, with `warning` (what the file can do)
    /// in the prompt and no session answer offered. `Err` is the denial outcome.
    pub(crate) async fn confirm(&self, summary: String, warning: &str) -> Result<(), ToolOutcome> {
        let request = PermissionRequest {
            tool: self.name.to_string(),
            input: self.raw.clone(),
            summary: summary.clone(),
            session_scope: None,
            warning: Some(format!(
                "This file can make programs run commands: {warning}."
            )),
            choices: None,
            tool_use_id: self.id.map(str::to_string),
        };
        match self.tools.asker.ask(request).await {
            // Never remembered: the next change to such a file asks again.
            Decision::Allow | Decision::AllowSession => Ok(()),
            Decision::Deny => Err(denied(&summary)),
        }
    }
}

fn denied(summary: &str) -> ToolOutcome {
    ToolOutcome::error(
        format!(
            "The user denied permission for this call ({summary}). Nothing was run or \
             changed. Do not retry the same call; ask the user how to proceed if it is needed."
        ),
        "denied by the user",
    )
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
