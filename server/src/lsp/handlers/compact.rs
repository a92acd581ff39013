//! Compaction in the language server's chat sessions: each session gets an
//! [`AutoCompact`] (the `compaction.*` settings and the server's environment; instructions and
//! git re-read from the workspace; files re-injected from the editor's buffers), and
//! `compact/run` runs a tier on demand as a task (`TaskKind::Compaction`, `compact:<session>:<run>`)
//! the request waits for.
//!
//! The user hears of compaction as LSP says: `$/progress` while a summary is written (on the
//! request's `workDoneToken`, or on a token the server creates with
//! `window/workDoneProgress/create` for an automatic one, when the client supports it), and
//! `window/showMessage` when automatic compaction stops after three failures. Each automatic
//! compaction is also a `chat/event` of kind `compacted` in its turn.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use ls_types::MessageType;
use serde_json::{Value, json};

use super::Result;
use super::chat::failed;
use crate::lsp::Backend;
use crate::lsp::chat_ext::{ClearedView, CompactMode, CompactRunParams, CompactRunResult};
use crate::lsp::jsonrpc::ResponseError;
use crate::lsp::outbox::Client;
use crate::lsp::state::{SavedFiles, State};
use crate::session::compaction::{Mode, Observer, Policy, Resume, RunError, RunRequest, Settings};
use crate::session::open;
use crate::session::{Model, Session};
use crate::tasks::{OnConflict, Spawned, TaskKind};

/// The policy of a session with `model` under the current settings and the server's
/// environment; what was not understood is logged.
pub fn policy(st: &State, model: &Model) -> Policy {
    let all = st.settings();
    let c = &all.compaction;
    let settings = Settings {
        window: all.window,
        auto_compact_percent: c.auto_compact_percent,
        auto_compact: Some(c.auto_compact),
        keep_recent: Some(c.keep_recent),
        gap_minutes: Some(c.gap_minutes),
        api_context_editing: Some(c.api_context_editing),
    };
    open::policy(&st.env, &model.config, &settings, &mut |source, message| {
        crate::log_warn!("{source}: {message}")
    })
}

/// Gives a new (`resume: None`) or resumed session its compaction.
pub fn attach(b: &Backend, session: &Session, policy: Policy, resume: Option<&Resume>) {
    let st = b.state.clone();
    let observer = Arc::new(LspObserver::new(b.client.clone(), &st, None));
    open::attach_compaction(
        &st.env,
        session,
        policy,
        resume,
        Arc::new(SavedFiles(st.clone())),
        Arc::new(st.fs.clone()),
        observer,
    );
}

/// `$/progress` and `window/showMessage` for compaction.
struct LspObserver {
    client: Client,
    progress: bool,
    /// The request's own token (a manual run), used instead of creating one.
    given: Option<Value>,
    /// The token of the work in progress.
    current: Mutex<Option<Value>>,
}

impl LspObserver {
    fn new(client: Client, st: &State, given: Option<Value>) -> LspObserver {
        LspObserver {
            client,
            progress: st.client_caps().work_done_progress,
            given,
            current: Mutex::new(None),
        }
    }

    async fn progress(&self, token: &Value, value: Value) {
        self.client
            .notify_raw("$/progress", &json!({"token": token, "value": value}))
            .await;
    }
}

impl Observer for LspObserver {
    fn started<'a>(&'a self, title: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if !self.progress {
                return;
            }
            let token = match &self.given {
                Some(t) => t.clone(),
                None => {
                    let t = json!(format!("claude-context/compact/{}", uuid::Uuid::new_v4()));
                    let created = self
                        .client
                        .request_within(
                            "window/workDoneProgress/create",
                            &json!({"token": t}),
                            Some(Duration::from_secs(10)),
                        )
                        .await;
                    if let Err(e) = created {
                        crate::log_debug!("no progress for the compaction: {}", e.message);
                        return;
                    }
                    t
                }
            };
            self.progress(
                &token,
                json!({"kind": "begin", "title": title, "cancellable": false}),
            )
            .await;
            *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(token);
        })
    }

    fn finished(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let token = self
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(t) = token {
                self.progress(&t, json!({"kind": "end"})).await;
            }
        })
    }

    fn breaker_tripped<'a>(&'a self, message: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.client
                .show_message(MessageType::WARNING, message.to_string())
                .await;
        })
    }
}

/// `compact/run`: the session's compaction on demand, as a task the request waits for.
pub fn run(b: &Backend, p: CompactRunParams) -> Result<CompactRunResult> {
    let st = &b.state;
    let session = st.chats.get(&p.session_id)?;
    let Some(compaction) = session.compaction().cloned() else {
        return Err(failed(
            "this session has no compaction (it was not started by this server)",
        ));
    };
    let model = st.chats.model(st)?;
    let tools = st.chats.tools(b, &session, &model);
    let specs = crate::session::ToolRunner::specs(&*tools);
    let observer: Arc<dyn Observer> = Arc::new(LspObserver::new(
        b.client.clone(),
        st,
        p.work_done_token.clone(),
    ));
    let (tx, rx) = tokio::sync::oneshot::channel();
    // One run at a time is the session's rule (`Session::exclusive` answers busy); the key only
    // names this run (a finished run may linger in the registry for a moment).
    let key = format!("compact:{}:{}", session.id(), uuid::Uuid::new_v4().simple());
    let task_session = session.clone();
    let spawned = b.tasks.spawn(
        TaskKind::Compaction,
        &key,
        OnConflict::Join,
        move |token| async move {
            // Shutdown (the task's token) stops the compaction like chat/cancel does.
            let s = task_session.clone();
            let link = tokio::spawn(async move {
                token.cancelled().await;
                s.cancel();
            });
            let request = RunRequest {
                mode: match p.mode {
                    CompactMode::Auto => Mode::Auto,
                    CompactMode::Micro => Mode::Micro,
                    CompactMode::Full => Mode::Full,
                },
                focus: p.instructions.as_deref().filter(|f| !f.trim().is_empty()),
                dry_run: p.dry_run,
            };
            let out = compaction
                .run(&task_session, &model, &specs, request, Some(observer))
                .await;
            link.abort();
            let _ = tx.send(out);
        },
    );
    // The key is new, so the only way not to start is a registry that is closing.
    if !matches!(spawned, Spawned::Started(_)) {
        return Err(failed("the server is shutting down"));
    }
    let answer = match tokio::runtime::Handle::try_current() {
        Ok(h) => h.block_on(rx),
        Err(_) => return Err(ResponseError::internal("no runtime")),
    };
    let report = match answer {
        Ok(Ok(r)) => r,
        Ok(Err(RunError::Busy { turn_id })) => {
            return Err(failed(format!(
                "the session is busy ({turn_id}): wait for its `done`, or cancel it first"
            )));
        }
        Ok(Err(e)) => return Err(failed(e.to_string())),
        Err(_) => {
            return Err(failed("the compaction was stopped"));
        }
    };
    Ok(CompactRunResult {
        mode: serde_json::to_value(report.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        tokens_before: report.tokens_before,
        tokens_after: report.tokens_after,
        cleared: report
            .cleared
            .into_iter()
            .map(|c| ClearedView {
                tool_use_id: c.tool_use_id,
                tool: c.tool,
                tokens: c.tokens,
            })
            .collect(),
        summary: report.summary,
        preserved_user_messages: report.preserved_user_messages as u64,
        duration_ms: report.duration_ms,
        dry_run: report.dry_run,
        summarised_messages: report.summarised_messages as u64,
        reinjected_files: report.reinjected_files,
        note: report.note,
    })
}
