//! The chat methods: `chat/new`, `chat/list`, `chat/resume`, `chat/send`, `chat/cancel`,
//! `chat/setMode` (and its `chat/modeChanged`), and the session part of `context/preview`. Convert, call [`crate::session`], convert back.
//!
//! The sessions of this server live in [`Chats`] (in the [`State`]). `chat/send` writes the
//! user's message to the transcript (fsync) on its pool thread, then starts the turn as a task
//! (`TaskKind::ChatTurn`, key `chat:<session>:<turn>`) that [`Backend::spawn`] defers until the
//! `{turnId}` answer is queued: every `chat/event` of the turn follows the answer. The turn's
//! events go through the one ordered outbox; a client that reads slowly slows the turn down.
//! Shutdown cancels the turn's token: the partial answer is written before the task ends.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use futures::future::BoxFuture;

use super::chat_tools::{LspAsker, LspEditor};
use super::{Result, invalid_params};
use crate::lsp::Backend;
use crate::lsp::chat_ext::{
    self, CancelParams, CancelResult, EventParams, ListParams, ListResult, ModeChangedParams,
    ModeView, NewParams, NewResult, ResumeParams, ResumeResult, SendParams, SendResult,
    SessionEntry, SessionPreview, SetModeParams, SetModeResult, SetStyleParams, SetStyleResult,
};
use crate::lsp::convert::{parse_uri, uri_to_path};
use crate::lsp::ext::PreviewResult;
use crate::lsp::jsonrpc::ResponseError;
use crate::lsp::outbox::Client;
use crate::lsp::state::State;
use crate::session::permissions::{Mode, Options as PermissionOptions};
use crate::session::transcript::Source;
use crate::session::{
    ChatEvent, Events, Image, MAX_IMAGES_PER_MESSAGE, Model, ModelConfig, Outgoing, ProviderKind,
    SendError, Session, SessionTools, Store, UsageReport, equip, open,
};
use crate::tasks::{OnConflict, TaskKind};

/// LSP 3.17's `RequestFailed`: the request was valid, the work failed (no key configured, the
/// transcript cannot be written).
const REQUEST_FAILED: i64 = -32803;

pub(super) fn failed(msg: impl Into<String>) -> ResponseError {
    ResponseError::new(REQUEST_FAILED, msg)
}

/// The chat sessions of this server, and the model client they share.
#[derive(Default)]
pub struct Chats {
    sessions: DashMap<String, Arc<Session>>,
    /// Each session's tools (the answers given "for the session", the todo list), made at its
    /// first message.
    tools: DashMap<String, Arc<SessionTools>>,
    /// Built once per configuration (it holds the connection pool).
    model: Mutex<Option<(ModelConfig, Model)>>,
}

impl Chats {
    pub(super) fn get(&self, id: &str) -> Result<Arc<Session>> {
        self.sessions.get(id).map(|s| s.clone()).ok_or_else(|| {
            invalid_params(format!(
                "sessionId: unknown session {id:?} (start one with chat/new, or open a transcript with chat/resume)"
            ))
        })
    }

    /// The tools of `session` (made when it started or resumed: [`Chats::equip`]).
    pub(super) fn tools(&self, b: &Backend, session: &Session, model: &Model) -> Arc<SessionTools> {
        if let Some(t) = self.tools.get(session.id()) {
            return t.clone();
        }
        self.equip(b, session, model, PermissionOptions::default())
    }

    /// Gives `session` its tools (its workspace is the session's folder, then the editor's
    /// other folders; edits go through the editor's buffers, questions through
    /// `chat/permission`) and starts its MCP servers as a task of this server, stopped at
    /// shutdown.
    fn equip(
        &self,
        b: &Backend,
        session: &Session,
        model: &Model,
        permissions: PermissionOptions,
    ) -> Arc<SessionTools> {
        let front = equip::Front {
            editor: Arc::new(LspEditor {
                state: b.state.clone(),
                client: b.client.clone(),
                backend: b.detached(),
            }),
            asker: Arc::new(LspAsker {
                client: b.client.clone(),
                session_id: session.id().to_string(),
            }),
            folders: b.state.folders(),
            wrote: Some(wrote(b)),
            editor_trust: b.state.editor_trust(),
            on_trust: Some({
                let b = b.detached();
                Arc::new(move |_trusted| {
                    // The previews of every folder follow the answer.
                    b.state.trust_changed();
                    b.changed(
                        crate::lsp::state::Impact {
                            context: true,
                            maybe_attaches: None,
                        },
                        None,
                    );
                })
            }),
            permissions,
            // The language server's client offers no MCP servers (the session's are configured).
            offered: Vec::new(),
        };
        let equipped = equip::equip(&b.state.env, session, model, front);
        if let Some(servers) = equipped.servers {
            b.spawn(
                TaskKind::McpServers,
                format!("mcp:{}", session.id()),
                OnConflict::Join,
                move |token| servers.run(token),
            );
        }
        self.tools
            .insert(session.id().to_string(), equipped.tools.clone());
        equipped.tools
    }

    /// Every session ends (the server shuts down): their SessionEnd hooks run together, for at
    /// most `limit`.
    pub async fn end_all(&self, limit: std::time::Duration) {
        let sessions: Vec<Arc<Session>> = self.sessions.iter().map(|s| s.clone()).collect();
        futures::future::join_all(sessions.iter().map(|s| s.end("other", limit))).await;
    }

    /// The editor's workspace trust changed: every session follows it.
    pub(super) fn editor_trust(&self, trusted: bool) {
        for t in self.tools.iter() {
            if let Some(trust) = t.trust() {
                trust.editor_trust(trusted);
            }
        }
    }

    /// The model client for the current settings.
    pub(super) fn model(&self, st: &State) -> Result<Model> {
        let s = st.settings();
        let config = ModelConfig {
            provider: ProviderKind::parse(&s.chat.provider).unwrap_or_default(),
            model: s.model.clone(),
            max_tokens: s.chat.max_tokens.max(1),
            base_url: s.chat.base_url.clone(),
            key_variable: s.chat.key_variable.clone(),
            max_tries: s.chat.max_tries.max(1),
            idle_timeout: std::time::Duration::from_secs(s.chat.idle_timeout_seconds.max(1)),
            delta_interval: std::time::Duration::from_millis(s.chat.delta_interval_ms.min(100)),
        };
        let mut slot = self.model.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((c, m)) = slot.as_ref()
            && *c == config
        {
            return Ok(m.clone());
        }
        let m = crate::session::config::build(&st.env, &config)
            .map_err(|e| failed(format!("the model is not configured: {e}")))?;
        *slot = Some((config, m.clone()));
        Ok(m)
    }
}

/// Work-done progress on a token the client gave (`workDoneToken`), when it supports it:
/// `begin` now, `report`s, `end` when dropped (before the request's answer).
struct Progress<'a> {
    b: &'a Backend,
    token: Option<serde_json::Value>,
}

impl<'a> Progress<'a> {
    fn begin(b: &'a Backend, token: Option<&serde_json::Value>, title: &str) -> Progress<'a> {
        let token = token
            .filter(|_| b.state.client_caps().work_done_progress)
            .cloned();
        let p = Progress { b, token };
        p.send(serde_json::json!({"kind": "begin", "title": title, "cancellable": false}));
        p
    }

    fn report(&self, message: &str) {
        self.send(serde_json::json!({"kind": "report", "message": message}));
    }

    fn send(&self, value: serde_json::Value) {
        let Some(token) = &self.token else { return };
        let frame = crate::lsp::jsonrpc::message(
            None,
            "$/progress",
            &serde_json::json!({"token": token, "value": value}),
        );
        // Request handlers run on the blocking pool: wait for room in the queue like any send.
        match tokio::runtime::Handle::try_current() {
            Ok(h) => h.block_on(self.b.client.out.send(frame)),
            Err(_) => {
                self.b.client.out.try_send(frame);
            }
        }
    }
}

impl Drop for Progress<'_> {
    fn drop(&mut self) {
        self.send(serde_json::json!({"kind": "end"}));
    }
}

/// The folder a chat request names (a `file:` URI), else the first workspace folder, else the
/// server's working directory. A named folder must be a workspace folder or lie inside one
/// (without workspace folders: inside the server's working directory): a session's folder is
/// where its tools read without asking, so `file:///` would open the whole disk to the model.
fn folder(st: &State, uri: Option<&str>) -> Result<PathBuf> {
    match uri {
        Some(u) => {
            let parsed = parse_uri(u).map_err(|e| invalid_params(format!("folder: {e}")))?;
            let path = uri_to_path(&parsed)
                .ok_or_else(|| invalid_params(format!("folder: {u:?} is not a file: URI")))?;
            let mut allowed = st.folders();
            if allowed.is_empty() {
                allowed.push(st.env.process_cwd.clone());
            }
            let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            let inside = allowed.iter().any(|f| real(&path).starts_with(real(f)));
            if !inside {
                let names: Vec<String> = allowed.iter().map(|f| f.display().to_string()).collect();
                return Err(invalid_params(format!(
                    "folder: {} is not one of the workspace folders ({}) nor inside one; a \
                     session works in a workspace folder",
                    path.display(),
                    names.join(", ")
                )));
            }
            Ok(path)
        }
        None => Ok(st
            .folders()
            .into_iter()
            .next()
            .unwrap_or_else(|| st.env.process_cwd.clone())),
    }
}

/// The `additionalDirectories` setting's folders (their skills are listed; relative ones start
/// at the session's folder).
fn add_dirs(st: &State) -> Vec<PathBuf> {
    st.settings()
        .additional_directories
        .iter()
        .map(PathBuf::from)
        .collect()
}

/// Where a session starting now reads its instructions and git block: the saved files (unsaved
/// edits show as pending), the kept git snapshot (current from file events) or one taken now,
/// said in the request's progress.
struct Starting<'a> {
    b: &'a Backend,
    progress: &'a Progress<'a>,
}

impl open::Project for Starting<'_> {
    fn walk(&self, root: &Path) -> std::result::Result<Arc<open::Context>, String> {
        self.progress.report("reading the instruction files");
        Ok(self.b.state.session_walk(root))
    }

    fn git(&self, cwd: &Path) -> Option<open::GitPart> {
        git_block(self.b, cwd, self.progress)
    }
}

/// A mode a client named, as `--permission-mode` reads it.
fn parse_mode(field: &str, value: &str) -> Result<Option<Mode>> {
    Mode::parse(value).ok_or_else(|| {
        invalid_params(format!(
            "{field}: {value:?} is not a permission mode (default, acceptEdits, plan, dontAsk, bypassPermissions)"
        ))
    })
}

pub fn new(b: &Backend, p: NewParams) -> Result<NewResult> {
    let st = &b.state;
    let root = folder(st, p.folder.as_deref())?;
    let requested = match p.mode.as_deref() {
        Some(m) => Some(parse_mode("mode", m)?),
        None => None,
    };
    let model = st.chats.model(st)?;
    let progress = Progress::begin(b, p.work_done_token.as_ref(), "Starting a chat session");
    let policy = super::compact::policy(st, &model);
    // The walk, git, the skills the system prompt lists and the `Skill` tool loads, the MCP
    // servers.
    let project = Starting {
        b,
        progress: &progress,
    };
    let session = open::Opener {
        host: &st.env,
        model: &model,
        policy: &policy,
        project: &project,
        add_dirs: &add_dirs(st),
    }
    .start(&root)
    .map_err(failed)?;
    super::memory::attach(b, &session);
    super::compact::attach(b, &session, policy, None);
    // The servers start now (a project's once the user answered its chat/permission).
    let tools = st.chats.equip(
        b,
        &session,
        &model,
        PermissionOptions {
            mode: requested,
            ..PermissionOptions::default()
        },
    );
    for n in tools.policy().notices() {
        crate::log_info!("chat/new: {}", n.message);
    }
    for n in tools.policy().mode_notes() {
        crate::log_warn!("chat/new: {n}");
    }
    let result = NewResult {
        session_id: session.id().to_string(),
        cwd: session.snapshot().cwd(),
        transcript: session.journal().path(),
        mode: tools.policy().mode(),
        available_modes: tools
            .policy()
            .available()
            .into_iter()
            .map(ModeView::of)
            .collect(),
    };
    st.chats
        .sessions
        .insert(result.session_id.clone(), Arc::new(session));
    drop(progress);
    Ok(result)
}

/// The git block a session starts with, frozen now: a kept snapshot (current from file events),
/// or one taken here when the first is still being taken.
fn git_block(b: &Backend, root: &Path, progress: &Progress<'_>) -> Option<open::GitPart> {
    let st = &b.state;
    if !st.settings().git.enabled {
        return None;
    }
    let now = b.git_for(root);
    match now.part {
        Some(part) if !now.pending => Some(part),
        _ => {
            progress.report("taking the git snapshot");
            match st.git_snapshot_now(root) {
                Ok(Some(snap)) => Some(open::GitPart::from_snapshot(&snap)),
                Ok(None) => None,
                Err(e) => {
                    crate::log_warn!("no git snapshot for the session: {}", e.message);
                    None
                }
            }
        }
    }
}

/// Sessions in one `chat/list` answer: by default, and at most.
const DEFAULT_LIST: u32 = 100;
const MAX_LIST: u32 = 1000;

pub fn list(b: &Backend, p: ListParams) -> Result<ListResult> {
    let st = &b.state;
    let roots = match &p.folder {
        Some(_) => vec![folder(st, p.folder.as_deref())?],
        None => {
            let f = st.folders();
            if f.is_empty() {
                vec![st.env.process_cwd.clone()]
            } else {
                f
            }
        }
    };
    let store = Store::from_host(&st.env);
    let mut sessions = Vec::new();
    for root in roots {
        let cwd = std::fs::canonicalize(&root).unwrap_or(root);
        for s in store.list(&cwd) {
            let running = st
                .chats
                .sessions
                .get(&s.id)
                .is_some_and(|x| x.running().is_some());
            sessions.push(SessionEntry {
                session_id: s.id,
                source: match s.source {
                    Source::Ours => "ours",
                    Source::Reference => "reference",
                }
                .to_string(),
                read_only: s.read_only,
                title: s.title,
                first_prompt: s.first_prompt,
                started_at: s.started_at,
                updated_at: s.updated_at,
                bytes: s.bytes,
                cwd: cwd.clone(),
                path: s.path,
                running,
            });
        }
    }
    sessions.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    // One page: a project with 20,000 sessions answers 100 of them, not all.
    let limit = p.limit.unwrap_or(DEFAULT_LIST).clamp(1, MAX_LIST) as usize;
    let skip = match p.cursor.as_deref() {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            invalid_params(format!("cursor: {c:?} is not a nextCursor of chat/list"))
        })?,
    };
    let total = sessions.len();
    let sessions: Vec<SessionEntry> = sessions.into_iter().skip(skip).take(limit).collect();
    let next = skip + sessions.len();
    Ok(ListResult {
        sessions,
        next_cursor: (next < total).then(|| next.to_string()),
    })
}

pub fn resume(b: &Backend, p: ResumeParams) -> Result<ResumeResult> {
    let st = &b.state;
    if let Some(s) = st.chats.sessions.get(&p.session_id).map(|s| s.clone()) {
        let tools = st.chats.tools.get(s.id()).map(|t| t.clone());
        return Ok(ResumeResult {
            session_id: s.id().to_string(),
            continues: None,
            messages: crate::session::history::view(&s.history()),
            warnings: Vec::new(),
            mode: tools.as_ref().map(|t| t.policy().mode()),
            available_modes: modes(tools.as_deref()),
        });
    }
    let roots = match &p.folder {
        Some(_) => vec![folder(st, p.folder.as_deref())?],
        None => {
            let f = st.folders();
            if f.is_empty() {
                vec![st.env.process_cwd.clone()]
            } else {
                f
            }
        }
    };
    let store = Store::from_host(&st.env);
    let Some(root) = roots.into_iter().find(|r| {
        let cwd = std::fs::canonicalize(r).unwrap_or(r.clone());
        store.find(&cwd, &p.session_id).is_ok()
    }) else {
        return Err(invalid_params(format!(
            "sessionId: no session {:?} in this workspace (chat/list shows them)",
            p.session_id
        )));
    };
    let model = st.chats.model(st)?;
    let progress = Progress::begin(b, p.work_done_token.as_ref(), "Resuming a chat session");
    progress.report("reading the transcript");
    let policy = super::compact::policy(st, &model);
    // A reference CLI session gets the instructions and git blocks a new session would send.
    let project = Starting {
        b,
        progress: &progress,
    };
    let resumed = open::Opener {
        host: &st.env,
        model: &model,
        policy: &policy,
        project: &project,
        add_dirs: &add_dirs(st),
    }
    .resume(&root, &p.session_id)
    .map_err(|e| failed(e.to_string()))?;
    for w in &resumed.warnings {
        crate::log_warn!("chat/resume: {w}");
    }
    let session = Arc::new(resumed.session);
    super::memory::attach(b, &session);
    super::compact::attach(b, &session, policy, Some(&resumed.compaction));
    let tools = st
        .chats
        .equip(b, &session, &model, PermissionOptions::default());
    let result = ResumeResult {
        session_id: session.id().to_string(),
        continues: resumed.continues,
        messages: crate::session::history::view(&session.history()),
        warnings: resumed.warnings,
        mode: Some(tools.policy().mode()),
        available_modes: modes(Some(&tools)),
    };
    st.chats.sessions.insert(result.session_id.clone(), session);
    drop(progress);
    Ok(result)
}

pub fn send(b: &Backend, p: SendParams) -> Result<SendResult> {
    let st = &b.state;
    let session = st.chats.get(&p.session_id)?;
    let model = st.chats.model(st)?;
    let mut mentions = Vec::with_capacity(p.mentions.len());
    for (i, u) in p.mentions.iter().enumerate() {
        let path = parse_uri(u)
            .ok()
            .and_then(|u| uri_to_path(&u))
            .ok_or_else(|| invalid_params(format!("mentions[{i}]: {u:?} is not a file: URI")))?;
        mentions.push(path);
    }
    let open = if st.settings().rules.activate_from_open_files {
        st.open_files()
    } else {
        Vec::new()
    };
    // Counted before any is decoded; each checked before anything is written.
    if p.images.len() > MAX_IMAGES_PER_MESSAGE {
        return Err(invalid_params(format!(
            "images: {} images; a message may hold at most {MAX_IMAGES_PER_MESSAGE}. Nothing was sent or kept.",
            p.images.len()
        )));
    }
    let mut images = Vec::with_capacity(p.images.len());
    for (i, img) in p.images.iter().enumerate() {
        images.push(
            Image::from_base64(&img.media_type, &img.data).map_err(|e| {
                invalid_params(format!("images[{i}]: {e}. Nothing was sent or kept."))
            })?,
        );
    }
    let out = Outgoing {
        text: p.text,
        mentions,
        open,
        images,
    };
    // From here the message is written and the turn starts: a $/cancelRequest that came first
    // wins (nothing written, nothing sent; the client has its -32800), a later one is ignored
    // and the client gets the turnId.
    if !b.commit() {
        return Err(ResponseError::new(
            crate::lsp::jsonrpc::code::REQUEST_CANCELLED,
            "chat/send was cancelled; nothing was sent",
        ));
    }
    // The editor's buffers: a mentioned file is sent as the user sees it.
    let prepared = session.prepare(&st.fs, out).map_err(|e| match e {
        SendError::Invalid(m) => invalid_params(m),
        other => failed(other.to_string()),
    })?;
    let turn_id = prepared.turn_id.clone();
    let events = LspEvents {
        client: b.client.clone(),
        session_id: session.id().to_string(),
        turn_id: turn_id.clone(),
    };
    let tools = st.chats.tools(b, &session, &model);
    let key = crate::session::turn_key(&session, &prepared);
    b.spawn(
        TaskKind::ChatTurn,
        key,
        OnConflict::Join,
        move |token| async move {
            // Shutdown (the task's token) cancels the turn like chat/cancel does.
            crate::session::run_turn(
                &session,
                prepared,
                &model,
                &tools,
                &events,
                token.cancelled_owned(),
            )
            .await;
        },
    );
    Ok(SendResult { turn_id })
}

fn modes(tools: Option<&SessionTools>) -> Vec<ModeView> {
    tools
        .map(|t| {
            t.policy()
                .available()
                .into_iter()
                .map(ModeView::of)
                .collect()
        })
        .unwrap_or_default()
}

/// `chat/setMode`: the user switches the session's permission mode; `chat/modeChanged` follows
/// the answer.
pub fn set_mode(b: &Backend, p: SetModeParams) -> Result<SetModeResult> {
    let st = &b.state;
    let session = st.chats.get(&p.session_id)?;
    let mode = match parse_mode("mode", &p.mode)? {
        Some(m) => m,
        None => {
            return Err(failed(
                "auto mode's safety check runs on Anthropic's servers and is not available to claude-context; choose another mode",
            ));
        }
    };
    let model = st.chats.model(st)?;
    let tools = st.chats.tools(b, &session, &model);
    let previous = tools.policy().set_mode(mode).map_err(failed)?;
    let client = b.client.clone();
    let params = ModeChangedParams {
        session_id: p.session_id.clone(),
        mode,
    };
    // After the answer (the spawn is deferred until it is queued); each change its own task.
    b.spawn(
        TaskKind::Debounce,
        format!("mode:{}:{}", p.session_id, uuid::Uuid::new_v4()),
        OnConflict::Join,
        move |_| async move {
            client.notify_raw(chat_ext::MODE_CHANGED, &params).await;
        },
    );
    Ok(SetModeResult { mode, previous })
}

/// `chat/setStyle`: the user chooses the session's output style (or asks which there are).
pub fn set_style(b: &Backend, p: SetStyleParams) -> Result<SetStyleResult> {
    let session = b.state.chats.get(&p.session_id)?;
    let previous = match &p.style {
        Some(name) => session.set_style(name).map_err(failed)?,
        None => session.style_name(),
    };
    Ok(SetStyleResult {
        style: session.style_name(),
        previous,
        available: session.style_names(),
    })
}

pub fn cancel(b: &Backend, p: CancelParams) -> Result<CancelResult> {
    let session = b.state.chats.get(&p.session_id)?;
    let turn_id = session.cancel();
    Ok(CancelResult {
        cancelled: turn_id.is_some(),
        turn_id,
    })
}

/// `context/preview` with `sessionId`: what the session's next request would contain
/// ([`crate::features::preview::of_session`]), with the open files as what the next message
/// touches.
pub fn preview(b: &Backend, id: &str) -> Result<PreviewResult> {
    let st = &b.state;
    let session = st.chats.get(id)?;
    let view = session.view();
    // The open files now: what they would attach to the next message.
    let touched = if st.settings().rules.activate_from_open_files {
        st.open_files()
    } else {
        Vec::new()
    };
    let now = st.context(&view.snapshot.ctx.cwd);
    let tools = st.chats.tools.get(id).map(|t| t.clone());
    let p =
        crate::features::preview::of_session(&session, tools.as_deref(), &st.fs, &touched, &now);
    let window = session.window();
    let tokens = p.totals.tokens;
    Ok(PreviewResult {
        preview: p,
        document: None,
        touched,
        git_pending: false,
        session: Some(SessionPreview {
            session_id: id.to_string(),
            messages: view.messages as u64,
            // The same basis as `totals.tokens`: the whole next request.
            tokens,
            estimated: view.count.last_usage.is_none(),
            last_usage: view.count.last_usage.map(|u| UsageReport::new(&u, window)),
            turn_id: view.turn,
            transcript: view.transcript,
        }),
    })
}

/// A turn's events as `chat/event` notifications through the ordered outbox.
struct LspEvents {
    client: Client,
    session_id: String,
    turn_id: String,
}

impl Events for LspEvents {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let params = EventParams {
                session_id: self.session_id.clone(),
                turn_id: self.turn_id.clone(),
                event,
            };
            self.client.notify_raw(chat_ext::EVENT, &params).await;
        })
    }
}

/// The session's own writes (an MCP server's approval in `.claude/settings.local.json`), handled
/// like a change on disk: the project's preview shows the server approved at once, and
/// `context/changed` follows.
fn wrote(b: &Backend) -> crate::session::equip::Wrote {
    // Not the request's deferring backend: the answer comes long after the request.
    let bg = Backend::new(b.state.clone(), b.client.clone(), b.tasks.clone());
    Arc::new(move |paths: &[PathBuf]| {
        let mut impact = crate::lsp::state::Impact::default();
        for p in paths {
            impact.context |= bg.state.path_changed_on_disk(p).context;
        }
        if impact.context {
            bg.changed(impact, None);
        }
    })
}
