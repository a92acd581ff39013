//! A session's MCP servers (`../shared/spec/skills-mcp.md` sections 6 to 8): approval, start,
//! what the model is told about them, `ToolSearch`, the calls, and the stop.
//!
//! [`SessionMcp`] is made once per session from the configuration its start gathered
//! ([`crate::extensions::Extensions::mcp`]), and lives as long as the future of
//! [`SessionMcp::run`], which the front end runs as a task of its own and stops with its token
//! (the session's end, the server's shutdown):
//!
//! - **Approval** (the reference CLI's interactive behaviour): the user's and local servers, and
//!   project servers already approved, start at once; each project server nobody answered for
//!   is asked about through the session's [`Asker`] (the editor's `chat/permission` of kind
//!   `mcpServer`, the terminal's prompt) with the dialog's words, and the answer is remembered
//!   as the dialog remembers it ([`crate::mcp::approval::record`]): `allow` is "Use this MCP
//!   server", `allowSession` "Use this and all future MCP servers in this project" (the servers
//!   asked about after it start unasked), `deny` "Continue without using this MCP server". No
//!   answer at all (no terminal, no client, the time limit) is not remembered: the server does
//!   not start in this session and the next one asks again. A server the editor offers (ACP
//!   `session/new`, [`crate::mcp::offered`]) is asked about the same way, after the folder's
//!   trust, with what it runs shown: "Use this MCP server" or "Continue without using this MCP
//!   server", both kept outside the repository for its definition ("all future servers" of a
//!   project never covers it).
//! - **Start**: in the background, each server with the configured environment minus every
//!   variable that can hold a key (and minus any entry value that carries the key), bounded by
//!   [`Limits`]. What each connection learnt is kept for the preview ([`crate::mcp::cache`]).
//! - **The first request** waits for the approvals, then up to [`FIRST_REQUEST_WAIT`] after the
//!   last server started (measured: about 2 s) for the servers still connecting
//!   ([`SessionMcp::settle`]); what they add to the environment section is then frozen in the
//!   session's system prompt ([`SessionMcp::freeze`]). What changes later (a server that
//!   connected or failed after it) goes to the model after the next tool results
//!   ([`SessionMcp::delta`]): the new tool names (not those loaded already), the failed and
//!   connecting notes as they stand, the instructions of servers not announced before.
//! - **`ToolSearch`** ([`SessionMcp::search`]) loads deferred tools: their definitions are sent
//!   with every later request, `defer_loading` set ([`SessionMcp::loaded_specs`]). A search
//!   waits for the servers still connecting (a `select:` for the server it names), bounded by
//!   their connection deadline and the turn's cancel.
//! - **Calls** ([`SessionMcp::call`]) ask like `Write` (once, for the session, deny), run
//!   within the call deadline and output cap, stop when the turn is cancelled, and come back as
//!   measured (`structuredContent` as compact JSON, else the content items; a server's error is
//!   `is_error`). The key is scrubbed from what they return.
//!
//! The resource tools a server with `resources` would add in the reference CLI are not ours
//! (not built): they are not listed, so the model is never told of a tool it cannot call.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::events::ToolOutput;
use crate::conversation::ResultPart;
use crate::fs::RealFs;
use crate::llm::{CancellationToken, ToolSpec};
use crate::mcp::approval::{self, Choice};
use crate::mcp::client::{self, Connection, Limits};
use crate::mcp::search::{self, Query};
use crate::mcp::{self, Approval, Server, Transport, texts};

/// The warning an MCP server's approval shows (the reference dialog's words).
pub use crate::mcp::approval::WARNING as APPROVAL_WARNING;
/// The servers an editor offers for a session (ACP `session/new`), as a front end gives them.
pub use crate::mcp::offered::{Offered, OfferedKind};
use crate::tools::{Asker, Choices, Decision, PermissionRequest, Scope, Tools};

/// How long the first request waits for the servers still connecting, after the last one
/// started (measured: 2.06 s).
pub const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(2);

/// The `tool` of the approval question (`chat/permission`): no tool is named so.
pub const APPROVAL_TOOL: &str = "mcpServer";

/// Where one server stands.
#[derive(Clone)]
enum State {
    /// A project server waiting for the user's answer.
    Asking,
    /// A project server of a folder not trusted (yet): held; once trusted, it stands as this
    /// approval says.
    Held(Approval),
    /// Not approved (no answer, or "continue without"): never started.
    NotApproved,
    /// `disabledMcpjsonServers`, or an entry claude-context cannot start.
    Off(String),
    /// Starting since then.
    Connecting(Instant),
    Running(Arc<Connection>),
    Failed {
        code: String,
        message: String,
    },
    /// Stopped with the session.
    Stopped,
}

struct Slot {
    server: Server,
    state: Mutex<State>,
}

/// What the model was told of the servers (the system prompt, then each delta).
#[derive(Default)]
struct Announced {
    names: HashSet<String>,
    failed: Vec<texts::Failure>,
    connecting: Vec<String>,
    instructions: HashSet<String>,
}

/// The servers as they stand, in what the model is told.
struct View {
    names: BTreeSet<String>,
    failed: Vec<texts::Failure>,
    connecting: Vec<String>,
    instructions: Vec<(String, String)>,
}

/// What a session's MCP servers need besides their configuration.
pub struct Options {
    /// The session's working directory (real path): servers start there; approvals are
    /// recorded in its `.claude/settings.local.json`.
    pub cwd: PathBuf,
    pub limits: Limits,
    /// Variables left out of every server's environment (those that can hold a key).
    pub env_remove: Vec<String>,
    /// The model's key: an entry's `env` value that carries it is left out.
    pub secret: Option<String>,
    /// Where what each connection learnt is kept for the preview; `None`: not kept.
    pub state_dir: Option<PathBuf>,
    /// Today (`YYYY-MM-DD`), for the kept listing.
    pub date: String,
    /// How the user is asked about a project server.
    pub asker: Arc<dyn Asker>,
    /// The first request's wait ([`FIRST_REQUEST_WAIT`]; tests shorten it).
    pub first_wait: Duration,
    /// Told of the settings file an answer was recorded in (the front end's previews follow).
    pub wrote: Option<super::equip::Wrote>,
    /// The session's workspace trust: the project's servers wait for it (held until the folder
    /// is trusted), and no project server is asked about before the first turn settled it.
    /// `None`: no gate (the folder's trust was applied to the configuration already).
    pub trust: Option<Arc<super::trust::SessionTrust>>,
    /// The session's permission rules: a tool a deny rule removes is never listed
    /// (permissions-trust.md section 2: gone from the deferred-tools list, as if it did not exist).
    pub policy: Arc<crate::permissions::Policy>,
}

/// The MCP servers of one session.
pub struct SessionMcp {
    opts: Options,
    slots: Vec<Slot>,
    /// Bumped at every change of a slot (and when the approvals are settled).
    changed: watch::Sender<u64>,
    /// Every approval question was answered (or given up).
    asked: AtomicBool,
    /// `None` until the first request froze what the system prompt says.
    announced: Mutex<Option<Announced>>,
    /// Tools loaded by `ToolSearch` (this session's, or a resumed history's), in order, with
    /// their definitions once known.
    loaded: Mutex<Vec<(String, Option<ToolSpec>)>>,
    /// `ToolSearch` is offered (decided when the system prompt is frozen).
    search_offered: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionMcp {
    /// The servers of `config`; `None` when it configures none.
    pub fn new(config: &mcp::Config, opts: Options) -> Option<Arc<SessionMcp>> {
        if config.servers.is_empty() {
            return None;
        }
        let slots: Vec<Slot> = config
            .servers
            .iter()
            .map(|s| {
                let state = match (&s.approval, &s.transport) {
                    (Approval::Disabled(by), _) => State::Off(disabled(s, by)),
                    (_, Transport::Invalid(why)) => State::Off(why.clone()),
                    (_, Transport::Remote { kind, .. }) => State::Off(mcp::http::unsupported(kind)),
                    (Approval::Untrusted(inner), _) => State::Held((**inner).clone()),
                    (Approval::Pending, _) => State::Asking,
                    (Approval::Approved(_), Transport::Stdio { .. } | Transport::Http { .. }) => {
                        State::Connecting(Instant::now())
                    }
                };
                Slot {
                    server: s.clone(),
                    state: Mutex::new(state),
                }
            })
            .collect();
        let (changed, _) = watch::channel(0);
        let asking = slots
            .iter()
            .any(|s| matches!(*lock(&s.state), State::Asking | State::Held(_)));
        Some(Arc::new(SessionMcp {
            opts,
            slots,
            changed,
            asked: AtomicBool::new(!asking),
            announced: Mutex::new(None),
            loaded: Mutex::new(Vec::new()),
            search_offered: AtomicBool::new(false),
        }))
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    fn set(&self, slot: &Slot, state: State) {
        *lock(&slot.state) = state;
        self.bump();
    }

    /// Tools a resumed history loaded: their definitions are sent again once their server is
    /// connected.
    pub fn restore_loaded(&self, names: Vec<String>) {
        let mut l = lock(&self.loaded);
        for n in names {
            if !l.iter().any(|(m, _)| *m == n) {
                l.push((n, None));
            }
        }
    }

    /// Starts the approved servers, asks about the project servers nobody answered for (once
    /// the first turn settled the folder's trust: inside a turn), starts the project servers
    /// held for trust once the folder is trusted, and keeps them all until `stop` fires; then
    /// stops every server. The front end runs this as a task of the session.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut starts = tokio::task::JoinSet::new();
        for (i, slot) in self.slots.iter().enumerate() {
            if matches!(*lock(&slot.state), State::Connecting(_)) {
                self.spawn_connect(i, &mut starts, &stop);
            }
        }
        let mut settled = self.opts.trust.as_ref().map(|t| t.subscribe());
        let mut use_all = false;
        loop {
            let (ready, trusted) = match &mut settled {
                None => (true, false),
                Some(rx) => {
                    let v = *rx.borrow_and_update();
                    (v.is_some(), v == Some(true))
                }
            };
            if trusted {
                // The folder is trusted now: the held servers stand as their approval says.
                for (i, slot) in self.slots.iter().enumerate() {
                    let held = match &*lock(&slot.state) {
                        State::Held(a) => Some(a.clone()),
                        _ => None,
                    };
                    match held {
                        Some(Approval::Approved(_)) => self.spawn_connect(i, &mut starts, &stop),
                        Some(Approval::Disabled(by)) => {
                            self.set(slot, State::Off(disabled(&slot.server, &by)))
                        }
                        Some(_) => self.set(slot, State::Asking),
                        None => {}
                    }
                }
            }
            if ready {
                self.ask(&mut use_all, &mut starts, &stop).await;
                self.asked.store(true, Ordering::Release);
                self.bump();
            }
            tokio::select! {
                () = stop.cancelled() => break,
                next = starts.join_next(), if !starts.is_empty() => {
                    if let Some(Err(e)) = next && e.is_panic() {
                        crate::log_error!("an MCP server's start panicked: {e}");
                    }
                }
                r = async { settled.as_mut().expect("guarded").changed().await }, if settled.is_some() => {
                    if r.is_err() {
                        settled = None;
                    }
                }
            }
        }
        starts.abort_all();
        while starts.join_next().await.is_some() {}
        self.stop_all();
    }

    /// Starts slot `i` in the background.
    fn spawn_connect(
        self: &Arc<Self>,
        i: usize,
        starts: &mut tokio::task::JoinSet<()>,
        stop: &CancellationToken,
    ) {
        self.set(&self.slots[i], State::Connecting(Instant::now()));
        let me = self.clone();
        let stop = stop.clone();
        starts.spawn(async move { me.connect(i, &stop).await });
    }

    /// Asks about every project server waiting for an answer, in order, and starts the
    /// approved ones; after "use this and all future", the rest start unasked.
    async fn ask(
        self: &Arc<Self>,
        use_all: &mut bool,
        starts: &mut tokio::task::JoinSet<()>,
        stop: &CancellationToken,
    ) {
        for (i, slot) in self.slots.iter().enumerate() {
            if !matches!(*lock(&slot.state), State::Asking) {
                continue;
            }
            // "All future servers in this project" is about the project's servers: an
            // offered server is always asked about.
            let offered = slot.server.scope == mcp::Scope::Client;
            let approved = if *use_all && !offered {
                true
            } else {
                let answer = tokio::select! {
                    a = self.opts.asker.answer(approval_request(&slot.server, &self.opts)) => a,
                    () = stop.cancelled() => None,
                };
                let choice = match answer {
                    Some(Decision::Allow) => Some(Choice::Use),
                    Some(Decision::AllowSession) if offered => Some(Choice::Use),
                    Some(Decision::AllowSession) => Some(Choice::UseAll),
                    Some(Decision::Deny) => Some(Choice::Reject),
                    None => None,
                };
                if offered {
                    if let Some(c) = choice {
                        self.remember_offered(&slot.server, c == Choice::Use);
                    }
                } else if let Some(c) = choice {
                    match approval::record(&RealFs, &RealFs, &self.opts.cwd, &slot.server.name, c) {
                        Ok(()) => {
                            if let Some(wrote) = &self.opts.wrote {
                                wrote(&[approval::file(&self.opts.cwd)]);
                            }
                        }
                        Err(e) => crate::log_warn!(
                            "MCP server {}: the answer was not remembered: {e}",
                            slot.server.name
                        ),
                    }
                }
                if !offered {
                    *use_all = choice == Some(Choice::UseAll);
                }
                matches!(choice, Some(Choice::Use | Choice::UseAll))
            };
            if approved && !stop.is_cancelled() {
                self.spawn_connect(i, starts, stop);
            } else {
                self.set(slot, State::NotApproved);
            }
        }
    }

    /// Keeps the answer about a server the editor offered, for its definition, outside the
    /// repository ([`crate::mcp::offered::record`]); without a state folder it is not kept
    /// (the next session asks again).
    fn remember_offered(&self, server: &Server, used: bool) {
        let Some(dir) = &self.opts.state_dir else {
            crate::log_warn!(
                "MCP server {}: no state folder (HOME or XDG_STATE_HOME): the answer is not kept",
                server.name
            );
            return;
        };
        match mcp::offered::record(
            &RealFs,
            &RealFs,
            dir,
            &self.opts.cwd,
            server,
            used,
            &self.opts.date,
        ) {
            Ok(file) => crate::log_info!(
                "MCP server {} (offered by the editor): {} (kept in {})",
                server.name,
                if used { "used" } else { "not used" },
                file.display()
            ),
            Err(e) => crate::log_warn!("MCP server {}: the answer was not kept: {e}", server.name),
        }
    }

    /// Stops every running server now (idempotent).
    pub fn stop_all(&self) {
        for slot in &self.slots {
            let old = std::mem::replace(&mut *lock(&slot.state), State::Stopped);
            match old {
                State::Running(conn) => conn.kill(),
                State::Connecting(_) | State::Stopped => {}
                other => *lock(&slot.state) = other,
            }
        }
        self.bump();
    }

    async fn connect(&self, i: usize, stop: &CancellationToken) {
        let slot = &self.slots[i];
        let Some(launch) = slot
            .server
            .launch(&self.opts.cwd, &self.opts.env_remove)
            .map(|l| l.without_secret(self.opts.secret.as_deref()))
        else {
            return;
        };
        self.set(slot, State::Connecting(Instant::now()));
        let result = client::connect(&launch, &self.opts.limits, stop).await;
        let (state, entry) = match result {
            Ok(conn) => {
                crate::log_info!(
                    "MCP server {}: connected in {} ms, {} tools",
                    slot.server.name,
                    conn.listing.start_ms,
                    conn.listing.tools.len()
                );
                for n in &conn.listing.notes {
                    crate::log_warn!("MCP server {}: {n}", slot.server.name);
                }
                let listing = conn.listing.clone();
                (State::Running(Arc::new(conn)), (Some(listing), None))
            }
            Err(e) => {
                if !e.stderr.trim().is_empty() {
                    crate::log_warn!(
                        "MCP server {} failed ({}): {}",
                        slot.server.name,
                        e.code,
                        e.stderr.trim()
                    );
                }
                let failure = (e.code.clone(), e.message.clone());
                (
                    State::Failed {
                        code: e.code,
                        message: e.message,
                    },
                    (None, Some(failure)),
                )
            }
        };
        if stop.is_cancelled() {
            if let State::Running(c) = &state {
                c.kill();
            }
            return;
        }
        // What a connection learnt is kept for the preview of the configured servers; an
        // offered server is the session's alone (and its entry holds no definition).
        if let Some(dir) = self
            .opts
            .state_dir
            .as_ref()
            .filter(|_| slot.server.scope != mcp::Scope::Client)
        {
            let e = mcp::cache::Entry {
                server: slot.server.name.clone(),
                entry: slot.server.entry.clone(),
                date: self.opts.date.clone(),
                listing: entry.0,
                failure: entry.1,
            };
            if let Err(err) = mcp::cache::write(&RealFs, dir, &self.opts.cwd, &e) {
                crate::log_warn!(
                    "MCP server {}: its tool list was not kept: {err}",
                    slot.server.name
                );
            }
        }
        self.set(slot, state);
    }

    /// Waits until every approval question is answered, then until no server is connecting or
    /// [`Options::first_wait`] passed since the last one started. `false` when `cancel` fired.
    pub async fn settle(&self, cancel: &CancellationToken) -> bool {
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            let deadline = if self.asked.load(Ordering::Acquire) {
                let last = self
                    .slots
                    .iter()
                    .filter_map(|s| match *lock(&s.state) {
                        State::Connecting(since) => Some(since),
                        _ => None,
                    })
                    .max();
                match last {
                    None => return true,
                    Some(since) => Some(since + self.opts.first_wait),
                }
            } else {
                None
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return true;
            }
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = sleep => return true,
                r = rx.changed() => if r.is_err() { return true },
            }
        }
    }

    fn view(&self) -> View {
        let mut v = View {
            names: BTreeSet::new(),
            failed: Vec::new(),
            connecting: Vec::new(),
            instructions: Vec::new(),
        };
        for s in &self.slots {
            match &*lock(&s.state) {
                State::Running(c) => {
                    v.names.extend(
                        c.listing
                            .tools
                            .iter()
                            .map(|t| texts::tool_name(&s.server.name, &t.name))
                            .filter(|n| self.opts.policy.removed(n).is_none()),
                    );
                    if let Some(i) = c.listing.instructions.as_ref().filter(|i| !i.is_empty()) {
                        v.instructions.push((s.server.name.clone(), i.clone()));
                    }
                }
                State::Connecting(_) | State::Asking => v.connecting.push(s.server.name.clone()),
                State::Failed { code, message } => v.failed.push(texts::Failure {
                    server: s.server.name.clone(),
                    code: code.clone(),
                    message: message.clone(),
                    // The remote note tells the model that calling a tool reconnects; this
                    // session does not reconnect, so a remote failure is listed as unavailable
                    // for the session, as a stdio one (docs/decisions.md).
                    remote: false,
                }),
                _ => {}
            }
        }
        v
    }

    /// What the servers add to the environment section of the first request, as they stand
    /// now; from now on, changes are [`SessionMcp::delta`]s. Decides whether `ToolSearch` is
    /// offered (a server is connected or connecting).
    pub fn freeze(&self) -> mcp::Parts {
        let v = self.view();
        let names: Vec<String> = v.names.iter().cloned().collect();
        let parts = mcp::Parts {
            deferred: texts::deferred_list(&names),
            failed: texts::failed_note(&v.failed),
            connecting: texts::connecting_note(&v.connecting),
            instructions: texts::instructions_section(&v.instructions),
        };
        self.search_offered.store(
            !v.names.is_empty() || !v.connecting.is_empty() || !lock(&self.loaded).is_empty(),
            Ordering::Release,
        );
        *lock(&self.announced) = Some(Announced {
            names: v.names.into_iter().collect(),
            failed: v.failed,
            connecting: v.connecting,
            instructions: v.instructions.into_iter().map(|(n, _)| n).collect(),
        });
        parts
    }

    /// What changed since the model was last told (after the first request): the new tool names
    /// (not those loaded already), the failed and connecting notes as they stand, the
    /// instructions of servers not announced before; `None` when nothing changed.
    pub fn delta(&self) -> Option<String> {
        let mut announced = lock(&self.announced);
        let a = announced.as_mut()?;
        let v = self.view();
        let loaded: HashSet<String> = lock(&self.loaded).iter().map(|(n, _)| n.clone()).collect();
        let new_names: Vec<String> = v
            .names
            .iter()
            .filter(|n| !a.names.contains(*n) && !loaded.contains(*n))
            .cloned()
            .collect();
        let new_instructions: Vec<(String, String)> = v
            .instructions
            .iter()
            .filter(|(n, _)| !a.instructions.contains(n))
            .cloned()
            .collect();
        let notes_changed = v.failed != a.failed || v.connecting != a.connecting;
        if new_names.is_empty() && new_instructions.is_empty() && !notes_changed {
            return None;
        }
        let parts: Vec<String> = [
            texts::deferred_list(&new_names),
            texts::failed_note(&v.failed),
            texts::connecting_note(&v.connecting),
            texts::instructions_section(&new_instructions),
        ]
        .into_iter()
        .flatten()
        .collect();
        a.names.extend(v.names);
        a.failed = v.failed;
        a.connecting = v.connecting;
        a.instructions
            .extend(new_instructions.into_iter().map(|(n, _)| n));
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Whether `ToolSearch` is offered (see [`SessionMcp::freeze`]).
    pub fn offers_search(&self) -> bool {
        self.search_offered.load(Ordering::Acquire)
    }

    /// The definitions of the loaded tools, as every later request sends them.
    pub fn loaded_specs(&self) -> Vec<ToolSpec> {
        let mut loaded = lock(&self.loaded);
        for (name, spec) in loaded.iter_mut().filter(|(_, s)| s.is_none()) {
            *spec = self.find(name).map(|(_, _, t)| spec_of(name, &t));
        }
        loaded.iter().filter_map(|(_, s)| s.clone()).collect()
    }

    /// The running server and tool a full name stands for (none for a tool a deny rule
    /// removed: ToolSearch never loads it).
    fn find(&self, full: &str) -> Option<(usize, Arc<Connection>, client::ToolInfo)> {
        if self.opts.policy.removed(full).is_some() {
            return None;
        }
        for (i, s) in self.slots.iter().enumerate() {
            let prefix = format!("mcp__{}__", texts::normalize(&s.server.name));
            if !full.starts_with(&prefix) {
                continue;
            }
            if let State::Running(c) = &*lock(&s.state)
                && let Some(t) = c
                    .listing
                    .tools
                    .iter()
                    .find(|t| texts::tool_name(&s.server.name, &t.name) == full)
            {
                return Some((i, c.clone(), t.clone()));
            }
        }
        None
    }

    /// The slot whose tools a full name would belong to.
    fn slot_of(&self, full: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| {
            full.strip_prefix(&format!("mcp__{}__", texts::normalize(&s.server.name)))
                .is_some_and(|rest| !rest.is_empty())
        })
    }

    /// Waits while any of `slots` is connecting: bounded by the connection deadline and
    /// `cancel`. `false` when cancelled.
    async fn wait_connected(&self, slots: &[&Slot], cancel: &CancellationToken) -> bool {
        let deadline =
            tokio::time::Instant::now() + self.opts.limits.connect + Duration::from_secs(1);
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            let waiting = slots
                .iter()
                .any(|s| matches!(*lock(&s.state), State::Connecting(_) | State::Asking));
            if !waiting {
                return true;
            }
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep_until(deadline) => return true,
                r = rx.changed() => if r.is_err() { return true },
            }
        }
    }

    /// One `ToolSearch` call.
    pub async fn search(&self, input: &Value, cancel: &CancellationToken) -> ToolOutput {
        let Some(q) = input.get("query").and_then(Value::as_str) else {
            return error(
                "<tool_use_error>ToolSearch takes {\"query\": \"select:<name>[,<name>...]\" or keywords, \"max_results\": <number>}</tool_use_error>"
                    .into(),
            );
        };
        let max = input
            .get("max_results")
            .and_then(Value::as_u64)
            .map_or(search::DEFAULT_MAX, |n| n as usize);
        let names: Vec<String> = match search::parse(q) {
            Query::Select(names) => {
                let mut waiting: Vec<&Slot> =
                    names.iter().filter_map(|n| self.slot_of(n)).collect();
                waiting.dedup_by(|a, b| std::ptr::eq(*a, *b));
                if !self.wait_connected(&waiting, cancel).await {
                    return cancelled();
                }
                names
                    .into_iter()
                    .filter(|n| self.find(n).is_some())
                    .take(search::MAX_RESULTS)
                    .collect()
            }
            Query::Keywords { terms, required } => {
                let all: Vec<&Slot> = self.slots.iter().collect();
                if !self.wait_connected(&all, cancel).await {
                    return cancelled();
                }
                let tools: Vec<(String, String)> = self
                    .slots
                    .iter()
                    .filter_map(|s| match &*lock(&s.state) {
                        State::Running(c) => Some(
                            c.listing
                                .tools
                                .iter()
                                .map(|t| {
                                    (
                                        texts::tool_name(&s.server.name, &t.name),
                                        t.description.clone(),
                                    )
                                })
                                .filter(|(n, _)| self.opts.policy.removed(n).is_none())
                                .collect::<Vec<_>>(),
                        ),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                let candidates: Vec<search::Candidate<'_>> = tools
                    .iter()
                    .map(|(name, description)| search::Candidate { name, description })
                    .collect();
                search::rank(&candidates, &terms, &required, max)
            }
        };
        if names.is_empty() {
            return ToolOutput {
                content: search::NO_MATCH.into(),
                ..ToolOutput::default()
            };
        }
        {
            let mut loaded = lock(&self.loaded);
            for n in &names {
                if !loaded.iter().any(|(m, _)| m == n) {
                    let spec = self.find(n).map(|(_, _, t)| spec_of(n, &t));
                    loaded.push((n.clone(), spec));
                }
            }
        }
        ToolOutput {
            content: format!("Loaded {}", names.join(", ")),
            parts: names
                .into_iter()
                .map(|tool_name| ResultPart::ToolReference { tool_name })
                .collect(),
            extra: vec![search::LOADED.to_string()],
            ..ToolOutput::default()
        }
    }

    /// One call of an MCP tool (`mcp__<server>__<tool>`), after the user's permission (which
    /// names the call's `tool_use` id, when given, as the agent's own tools' prompts do).
    pub async fn call(
        &self,
        id: Option<&str>,
        name: &str,
        input: &Value,
        tools: &Tools,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let work = self.call_inner(id, name, input, tools, cancel);
        tokio::select! {
            biased;
            () = cancel.cancelled() => cancelled(),
            out = work => out,
        }
    }

    async fn call_inner(
        &self,
        id: Option<&str>,
        name: &str,
        input: &Value,
        tools: &Tools,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        // A tool a deny rule removed is no tool at all (the reference's text).
        if let Some(rule) = tools.policy().removed(name) {
            crate::log_debug!("{name}: removed by the deny rule {}", rule.text);
            return error(crate::permissions::texts::no_such_tool(name));
        }
        let Some((i, conn, tool)) = self.find(name) else {
            let why = match self.slot_of(name).map(|s| (s, lock(&s.state).clone())) {
                // An `sse` server's failure has no code (`SSE error: …`).
                Some((s, State::Failed { code, message })) if code.is_empty() => format!(
                    "The MCP server {} failed to connect ({message}); {name} is unavailable.",
                    s.server.name
                ),
                Some((s, State::Failed { code, message })) => format!(
                    "The MCP server {} failed to connect ({code}: {message}); {name} is unavailable.",
                    s.server.name
                ),
                Some((s, State::Running(_))) => format!(
                    "<tool_use_error>The MCP server {} has no tool {name}.</tool_use_error>",
                    s.server.name
                ),
                Some((s, _)) => format!(
                    "The MCP server {} is not connected; {name} is unavailable.",
                    s.server.name
                ),
                None => format!("<tool_use_error>No such tool: {name}</tool_use_error>"),
            };
            return error(why);
        };
        if !lock(&self.loaded).iter().any(|(n, _)| n == name) {
            return error(format!(
                "<tool_use_error>InputValidationError: {name} is a deferred tool whose schema is not loaded. Call ToolSearch with query \"select:{name}\" first, then call it.</tool_use_error>"
            ));
        }
        let args = match input {
            Value::Object(m) => m.clone(),
            _ => {
                return error(format!(
                    "<tool_use_error>The input of {name} must be a JSON object.</tool_use_error>"
                ));
            }
        };
        let server = &self.slots[i].server.name;
        let shown = crate::context::message::cut(&input.to_string()).into_owned();
        let summary = format!("{name} (MCP server {server}): {shown}");
        if let Err(refused) = tools
            .permit_other(id, Scope::Mcp(name.to_string()), name, input, summary)
            .await
        {
            return ToolOutput {
                stop: refused.stop,
                ..error(refused.content)
            };
        }
        let out = conn.call(&tool.name, args, &self.opts.limits, cancel).await;
        let parts: Vec<ResultPart> = out
            .parts
            .iter()
            .map(|p| ResultPart::Text {
                text: tools.scrub(p),
            })
            .collect();
        ToolOutput {
            content: tools.scrub(&out.content),
            parts,
            is_error: out.is_error,
            ..ToolOutput::default()
        }
    }

    /// Each server's status and listing now (the session's preview).
    pub fn states(&self) -> Vec<mcp::ServerState> {
        self.slots
            .iter()
            .map(|s| {
                let (status, listing) = match &*lock(&s.state) {
                    State::Asking => (mcp::Status::NotApproved, None),
                    State::Held(_) => (
                        match self.opts.trust.as_ref().map(|t| t.verdict().state) {
                            Some(crate::trust::TrustState::NotTrusted) => mcp::Status::NotTrusted,
                            _ => mcp::Status::WaitingForTrust,
                        },
                        None,
                    ),
                    State::NotApproved => (mcp::Status::NotApproved, None),
                    State::Off(why) => (mcp::Status::Unsupported(why.clone()), None),
                    State::Connecting(_) => (mcp::Status::Connecting, None),
                    State::Running(c) => (mcp::Status::Running, Some(c.listing.clone())),
                    State::Failed { code, message } => (
                        mcp::Status::Failed {
                            code: code.clone(),
                            message: message.clone(),
                        },
                        None,
                    ),
                    State::Stopped => (mcp::Status::Approved, None),
                };
                mcp::ServerState {
                    server: s.server.clone(),
                    status,
                    listing,
                }
            })
            .collect()
    }
}

/// The approval question of a server the editor offered: what it runs (or where it connects)
/// is shown, since no file of the user's holds it; the values of its environment and headers
/// are not. "Use this MCP server" or "Continue without using this MCP server", both kept for
/// this definition.
fn offered_request(s: &Server, opts: &Options) -> PermissionRequest {
    let cwd = &opts.cwd;
    let quote = |v: &str| crate::context::message::quoted(v);
    let (what, names, input) = match &s.transport {
        Transport::Stdio { command, args, env } => {
            let words: Vec<&str> = std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect();
            let line = shlex::try_join(words.iter().copied()).unwrap_or_else(|_| {
                words
                    .iter()
                    .map(|w| format!("{w:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            // The variables it gets (never one that can hold a key, nor one whose value is the
            // key: those are left out when it starts).
            let secret = opts.secret.as_deref().filter(|k| !k.is_empty());
            let names: Vec<&str> = env
                .iter()
                .filter(|(k, v)| {
                    !opts.env_remove.contains(k) && secret.is_none_or(|key| !v.contains(key))
                })
                .map(|(k, _)| k.as_str())
                .collect();
            (
                format!("It runs {} in {}", code_span(&line), cwd.display()),
                (!names.is_empty())
                    .then(|| format!("with these variables set: {}", names.join(", "))),
                json!({"command": command, "args": args, "env": names, "url": null}),
            )
        }
        Transport::Http { url, headers, sse } => {
            // A header holding the key is not sent (`Launch::without_secret`), nor named.
            let secret = opts.secret.as_deref().filter(|k| !k.is_empty());
            let names: Vec<&str> = headers
                .iter()
                .filter(|(_, v)| secret.is_none_or(|key| !v.contains(key)))
                .map(|(k, _)| k.as_str())
                .collect();
            (
                format!(
                    "It connects to {} ({})",
                    quote(url),
                    if *sse { "HTTP+SSE" } else { "streamable HTTP" }
                ),
                (!names.is_empty()).then(|| {
                    format!(
                        "sending these headers with every request: {}",
                        names.join(", ")
                    )
                }),
                json!({"command": url, "args": [], "headers": names, "url": url}),
            )
        }
        _ => (String::new(), None, json!({})),
    };
    let mut warning = format!(
        "{} The editor offered it for this session (its definition may come from the project's editor settings). {what}",
        approval::WARNING
    );
    match names {
        Some(n) => warning.push_str(&format!(", {n} (their values are not shown).")),
        None => warning.push('.'),
    }
    let mut input = input;
    input["server"] = json!(s.name);
    input["scope"] = json!(s.scope.label());
    input["source"] = json!(s.source);
    PermissionRequest {
        tool: APPROVAL_TOOL.into(),
        input,
        summary: mcp::offered::title(&s.name),
        session_scope: None,
        warning: Some(warning),
        reason: None,
        choices: Some(Choices {
            allow: Choice::Use.label().into(),
            allow_session: None,
            deny: Choice::Reject.label().into(),
        }),
        tool_use_id: None,
    }
}

/// Why a server rejected by `by` does not start.
fn disabled(s: &Server, by: &std::path::Path) -> String {
    if s.scope == mcp::Scope::Client {
        format!(
            "you chose to continue without this server the editor offers (kept in {})",
            by.display()
        )
    } else {
        format!("disabled in {}", by.display())
    }
}

/// Most characters of an offered server's command line its approval shows.
const COMMAND_SHOWN: usize = 4_000;

/// `text` as a Markdown code span that no backtick in it can close (cut after
/// [`COMMAND_SHOWN`] characters, saying so).
fn code_span(text: &str) -> String {
    let (shown, cut) = match text.char_indices().nth(COMMAND_SHOWN) {
        None => (text, String::new()),
        Some((at, _)) => (
            &text[..at],
            format!(" (cut: {} characters in all)", text.chars().count()),
        ),
    };
    let mut longest = 0;
    let mut run = 0;
    for c in shown.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {shown} {fence}{cut}")
}

/// The approval question, in the reference dialog's words (a server the editor offered:
/// [`offered_request`]).
fn approval_request(s: &Server, opts: &Options) -> PermissionRequest {
    if s.scope == mcp::Scope::Client {
        return offered_request(s, opts);
    }
    let (command, args, url) = match &s.transport {
        Transport::Stdio { command, args, .. } => (command.clone(), args.clone(), None),
        Transport::Http { url, .. } => (url.clone(), Vec::new(), Some(url.clone())),
        _ => (String::new(), Vec::new(), None),
    };
    // A remote server's headers: their names and the variables that fill them, never a value.
    let headers = match &s.transport {
        Transport::Http { .. } => approval::headers(&s.entry),
        _ => Vec::new(),
    };
    let warning = match approval::headers_line(&headers) {
        Some(line) => format!("{} {line}", approval::WARNING),
        None => approval::WARNING.to_string(),
    };
    let mut input = json!({
        "server": s.name,
        "command": command,
        "url": url,
        "args": args,
        "scope": s.scope.label(),
        "source": s.source,
    });
    if !headers.is_empty() {
        input["headers"] = json!(headers);
    }
    PermissionRequest {
        tool: APPROVAL_TOOL.into(),
        input,
        summary: approval::title(&s.name),
        session_scope: Some(Choice::UseAll.label().into()),
        warning: Some(warning),
        reason: None,
        choices: Some(Choices {
            allow: Choice::Use.label().into(),
            allow_session: Some(Choice::UseAll.label().into()),
            deny: Choice::Reject.label().into(),
        }),
        tool_use_id: None,
    }
}

/// A loaded tool's definition as sent: the description capped as measured.
fn spec_of(full: &str, t: &client::ToolInfo) -> ToolSpec {
    ToolSpec {
        name: full.to_string(),
        description: texts::cap(&t.description),
        input_schema: Value::Object(t.input_schema.clone()),
        defer_loading: true,
    }
}

fn error(content: String) -> ToolOutput {
    ToolOutput {
        content,
        is_error: true,
        ..ToolOutput::default()
    }
}

fn cancelled() -> ToolOutput {
    error("The call was cancelled by the user before it finished.".into())
}

/// `ToolSearch`'s definition (our words).
pub fn search_spec() -> ToolSpec {
    ToolSpec {
        name: search::TOOL.into(),
        description: "Load the definitions of deferred tools (the MCP servers' tools listed in the system prompt under \"The following deferred tools are now available via ToolSearch\") so they can be called. Query \"select:<name>[,<name>...]\" loads those tools by name; any other query is keywords matched against the deferred tools' names and descriptions (a word written +word must be in the name), and loads the best matches. A loaded tool can be called from the next step on. It waits for servers still connecting.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "\"select:<name>[,<name>...]\", or keywords."},
                "max_results": {"type": "integer", "description": "For keywords: how many tools to load at most (default 5)."}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        defer_loading: false,
    }
}
