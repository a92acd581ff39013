//! A session's workspace trust: the question before its first turn, and the answer the rest of
//! the session reads ([`SessionTrust::trusted`]; the MCP servers, the permission rules and, next,
//! hooks).
//!
//! A session opens with its folder's trust as it stands ([`crate::trust::verdict`]); a folder
//! that is not trusted opens restricted (nothing of the repository runs, nothing of its settings
//! reaches outside it). Before the first request of the first turn ([`SessionTrust::settle`],
//! from the session's `environment` step, so inside a turn on every front end: ACP clients show
//! no request between turns), a folder nobody was asked about is asked about once, when trusting
//! it would change something ([`crate::trust::Gate::would_ask`]): through the session's
//! [`Asker`] as a question of kind `workspaceTrust` (the editor's `chat/permission`, ACP's
//! `session/request_permission`, the terminal), in the words of [`crate::trust::question`]. No
//! model request is sent while it waits. `allow` trusts the folder, `deny` does not; either is
//! kept in our record (`crate::trust::record`). No answer at all (no terminal, no client, the
//! time limit) is not kept: the session stays restricted and the next one asks again.
//!
//! The answer is published ([`SessionTrust::subscribe`]): the MCP servers waiting for it start
//! (or are asked about) once the folder is trusted. The project's `autoMemoryDirectory` read by
//! the session's start stays as it was (the session opened restricted): it applies from the next
//! session.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::watch;

use crate::fs::RealFs;
use crate::llm::CancellationToken;
use crate::tools::{Asker, Choices, Decision, PermissionRequest};
use crate::trust::{self, Gate, TrustState, Verdict, Where, question};

/// The `tool` of the trust question (`chat/permission`): no tool is named so.
pub const QUESTION_TOOL: &str = "workspaceTrust";

/// Called once the user answered (`true`: trusted), so the front end can refresh what depends
/// on trust (the editor's previews).
pub type OnAnswer = Arc<dyn Fn(bool) + Send + Sync>;

/// One session's trust.
pub struct SessionTrust {
    /// The session's folder (real path).
    folder: PathBuf,
    at: Mutex<Where>,
    /// The gate at the session's start (what waits, for the question's words).
    gate: Gate,
    asker: Arc<dyn Asker>,
    /// Today, for the record.
    date: String,
    verdict: Mutex<Verdict>,
    /// `None` until the first turn settled it; then whether the folder is trusted.
    settled: watch::Sender<Option<bool>>,
    on_answer: Option<OnAnswer>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionTrust {
    /// The trust of a session in `gate`'s folder, asked through `asker`, looked up at `at`.
    pub fn new(
        gate: Gate,
        at: Where,
        asker: Arc<dyn Asker>,
        date: String,
        on_answer: Option<OnAnswer>,
    ) -> Arc<SessionTrust> {
        let (settled, _) = watch::channel(None);
        Arc::new(SessionTrust {
            folder: gate.folder.clone(),
            verdict: Mutex::new(gate.verdict.clone()),
            at: Mutex::new(at),
            gate,
            asker,
            date,
            settled,
            on_answer,
        })
    }

    /// The folder is trusted now.
    pub fn trusted(&self) -> bool {
        lock(&self.verdict).trusted()
    }

    /// The folder's trust now, and where it comes from.
    pub fn verdict(&self) -> Verdict {
        lock(&self.verdict).clone()
    }

    /// What waited for trust at the session's start, and why.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The gate as it stands now (after the answer): what this session uses and holds back.
    pub fn current_gate(&self) -> Gate {
        self.gate.with_verdict(self.verdict(), true)
    }

    /// `None` until the first turn settled the trust, then whether the folder is trusted (it
    /// changes to `true` when the editor grants trust later).
    pub fn subscribe(&self) -> watch::Receiver<Option<bool>> {
        self.settled.subscribe()
    }

    /// Settled by a first turn.
    pub fn is_settled(&self) -> bool {
        self.settled.borrow().is_some()
    }

    /// The editor's own workspace trust changed (VS Code granted it): it is the answer from now
    /// on; a session already settled as untrusted becomes trusted.
    pub fn editor_trust(&self, trusted: bool) {
        lock(&self.at).editor = Some(trusted);
        let v = trust::verdict(&RealFs, &lock(&self.at), &self.folder);
        let now = v.trusted();
        *lock(&self.verdict) = v;
        if self.is_settled() {
            self.settled.send_replace(Some(now));
        }
    }

    /// Before the session's first request: settles the trust, asking the user when the folder
    /// was never asked about and trusting it would change something. `false` when `cancel` fired
    /// while the question waited (nothing is settled; the next turn asks again).
    pub async fn settle(&self, cancel: &CancellationToken) -> bool {
        if self.is_settled() {
            return true;
        }
        // Another session (or another process) may have had the answer meanwhile.
        let at = lock(&self.at).clone();
        let v = trust::verdict(&RealFs, &at, &self.folder);
        let trusted = match v.state {
            TrustState::Trusted => true,
            TrustState::NotTrusted => false,
            TrustState::NeverAsked if !self.gate.would_ask() => false,
            TrustState::NeverAsked => {
                let answer = tokio::select! {
                    a = self.asker.answer(self.request()) => a,
                    () = cancel.cancelled() => return false,
                };
                let trusted = matches!(answer, Some(Decision::Allow | Decision::AllowSession));
                if answer.is_some() {
                    let record = match trust::answer(
                        &RealFs,
                        &RealFs,
                        &at,
                        &self.folder,
                        trusted,
                        &self.date,
                    ) {
                        Ok(file) => {
                            crate::log_info!(
                                "{}: {} (kept in {})",
                                self.folder.display(),
                                if trusted { "trusted" } else { "not trusted" },
                                file.display()
                            );
                            Some(file)
                        }
                        Err(e) => {
                            crate::log_warn!(
                                "{}: the trust answer was not kept: {e}",
                                self.folder.display()
                            );
                            None
                        }
                    };
                    // This session follows the answer, kept or not.
                    *lock(&self.verdict) = Verdict {
                        state: if trusted {
                            TrustState::Trusted
                        } else {
                            TrustState::NotTrusted
                        },
                        source: Some(trust::Source::Ours),
                        record,
                    };
                }
                self.settled.send_replace(Some(trusted));
                if answer.is_some()
                    && let Some(f) = &self.on_answer
                {
                    f(trusted);
                }
                return true;
            }
        };
        *lock(&self.verdict) = v;
        self.settled.send_replace(Some(trusted));
        true
    }

    /// The question, in words ([`question`]).
    pub fn request(&self) -> PermissionRequest {
        let q = question::of(&self.gate);
        let waiting: Vec<serde_json::Value> = self
            .gate
            .held
            .iter()
            .filter(|h| h.status == trust::HeldStatus::WaitingForTrust)
            .map(|h| json!({"key": h.key, "file": h.file, "detail": h.detail}))
            .collect();
        PermissionRequest {
            tool: QUESTION_TOOL.to_string(),
            input: json!({
                "folder": self.folder,
                "loads": q.loads,
                "waiting": waiting,
            }),
            summary: q.summary,
            session_scope: None,
            warning: Some(q.text),
            choices: Some(Choices {
                allow: question::YES.to_string(),
                allow_session: None,
                deny: question::NO.to_string(),
            }),
            tool_use_id: None,
            reason: None,
        }
    }
}
