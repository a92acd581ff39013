//! `claude-context lsp`: the language server on stdio.
//!
//! * [`main_loop`]: the closed event loop (one task) that reads frames, applies notifications in
//!   order, dispatches requests, and owns the end of the session (`shutdown`, `exit`, end of
//!   input). Start reading there.
//! * [`routes`]: the routing table, every method on one screen, each marked as mutating the
//!   state on the main loop or reading it on the blocking pool.
//! * [`handlers`]: one file per method: convert LSP params to plain data, call
//!   [`crate::features`] or the core against [`state::State`], convert back ([`convert`]).
//! * [`outbox`]: the one ordered, bounded outbound queue; [`transport`]: framing and
//!   classification of the input; [`jsonrpc`]: the message types; [`ext`]: the custom methods.
//!
//! Only this module knows LSP types.

pub mod chat_ext;
pub mod convert;
pub mod ext;
pub mod handlers;
pub mod jsonrpc;
pub mod main_loop;
pub mod outbox;
pub mod routes;
pub mod state;
pub mod transport;
pub mod warm;
pub mod watch;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::host::Host;
use crate::tasks::{CancellationToken, OnConflict, Spawned, TaskKind, Tasks};
use outbox::Client;
use state::State;

type Deferred = Box<dyn FnOnce() + Send>;

/// A running request's fate: it may be cancelled (`$/cancelRequest`) until its handler commits
/// to answering ([`Backend::commit`]), and not after. A handler with a side effect the client
/// must learn about (`chat/send` writes the message and starts a turn) commits just before it,
/// so the client gets either `-32800` and nothing happened, or the answer; never both.
#[derive(Debug, Default)]
pub struct RequestFate {
    state: std::sync::atomic::AtomicU8,
    pub token: CancellationToken,
}

impl RequestFate {
    const RUNNING: u8 = 0;
    const COMMITTED: u8 = 1;
    const CANCELLED: u8 = 2;

    /// Cancels the request unless its handler committed; `true` when it is now cancelled.
    pub fn cancel(&self) -> bool {
        use std::sync::atomic::Ordering;
        let won = match self.state.compare_exchange(
            Self::RUNNING,
            Self::CANCELLED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => true,
            Err(s) => s == Self::CANCELLED,
        };
        if won {
            self.token.cancel();
        }
        won
    }

    /// The handler will answer: a later cancel is ignored. `false` when it was cancelled first.
    pub fn commit(&self) -> bool {
        use std::sync::atomic::Ordering;
        match self.state.compare_exchange(
            Self::RUNNING,
            Self::COMMITTED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => true,
            Err(s) => s == Self::COMMITTED,
        }
    }
}

/// What every handler gets: the state, the client, the task registry.
///
/// A request handler's `Backend` *defers* the tasks it starts ([`Backend::spawn`]) until its
/// answer is queued: whatever a task sends (a `context/changed` after a git snapshot, a
/// `chat/event` after `chat/send`) reaches the client after the answer to the request that
/// caused it.
#[derive(Clone)]
pub struct Backend {
    pub state: Arc<State>,
    pub client: Client,
    pub tasks: Tasks,
    deferred: Option<Arc<Mutex<Vec<Deferred>>>>,
    /// The request this copy serves, when it serves one on the pool.
    fate: Option<Arc<RequestFate>>,
}

impl Backend {
    pub fn new(state: Arc<State>, client: Client, tasks: Tasks) -> Backend {
        Backend {
            state,
            client,
            tasks,
            deferred: None,
            fate: None,
        }
    }

    /// A copy whose spawns wait until [`Backend::run_deferred`].
    pub(crate) fn deferring(&self) -> Backend {
        Backend {
            deferred: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// A copy that starts its tasks at once, for work that outlives the current request.
    pub(crate) fn detached(&self) -> Backend {
        Backend {
            deferred: None,
            fate: None,
            ..self.clone()
        }
    }

    /// A deferring copy for the request whose fate is `fate`.
    pub(crate) fn for_request(&self, fate: Arc<RequestFate>) -> Backend {
        Backend {
            fate: Some(fate),
            ..self.deferring()
        }
    }

    /// Commits the current request to being answered (see [`RequestFate`]); `false` when the
    /// client cancelled it first (it has its `-32800` already: do nothing more).
    pub(crate) fn commit(&self) -> bool {
        self.fate.as_ref().is_none_or(|f| f.commit())
    }

    /// Starts the tasks deferred so far (after the request's answer was queued).
    pub(crate) fn run_deferred(&self) {
        let Some(d) = &self.deferred else { return };
        let jobs: Vec<Deferred> = std::mem::take(&mut *d.lock().unwrap_or_else(|p| p.into_inner()));
        for job in jobs {
            job();
        }
    }

    /// Starts `work` as a task of the registry under `key` (now, or after the current request's
    /// answer).
    pub fn spawn<F, Fut>(&self, kind: TaskKind, key: String, on: OnConflict, work: F)
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tasks = self.tasks.clone();
        let start = move || {
            if tasks.spawn(kind, &key, on, work) == Spawned::Closed {
                crate::log_debug!("task {key} not started: shutting down");
            }
        };
        match &self.deferred {
            Some(d) => d
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Box::new(start)),
            None => start(),
        }
    }

    pub(crate) fn utf8(&self) -> bool {
        self.state.client_caps().utf8_positions
    }
}

/// Runs the server on stdin/stdout until `exit` or the end of input. Returns the exit code:
/// 0 after `shutdown`, 1 otherwise (as LSP asks).
#[allow(clippy::disallowed_methods)] // reason: the language server owns stdio.
pub fn run(host: Host) -> i32 {
    let rt = match crate::session::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            crate::log_error!("{e}");
            return 2;
        }
    };
    let ended = rt.block_on(main_loop::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        host,
        main_loop::Options { forward_logs: true },
    ));
    if !ended.shutdown {
        crate::log_warn!("{:?} without shutdown", ended.how);
    }
    // Blocking work (a git snapshot of a huge repository, a pending stdin read) must not hold
    // the exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    i32::from(!ended.shutdown)
}
