//! The one way a front end runs sessions: [`runtime`] builds the runtime the LSP, ACP and the
//! command line's `chat` run on, and [`run_turn`] runs a turn each prepared
//! ([`Session::prepare`]: `chat/send`, `session/prompt`, a line of `chat`), so how a turn runs
//! (its dependencies, its cancellation, its task's key) is decided here once and not in each
//! front end (`tests/e2e/layers.rs` checks that none builds a runtime or calls `Session::run`
//! itself).

use std::future::Future;

use super::{Events, Model, Outcome, Prepared, Session, SessionTools};
use crate::fs::RealFs;

/// The runtime sessions run on: two workers (the machines we serve have few cores, and a turn
/// mostly waits), at most 16 blocking threads (walks, git, file reads), timers and IO.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// Runs `prepared` with the session's tools until it ends. When `stop` completes first (the
/// front end's shutdown, the end of its input, Ctrl-C on the terminal) the turn is cancelled as
/// `chat/cancel` cancels it, and still runs to its end: what it wrote is closed properly, and
/// the outcome says `Cancelled`.
pub async fn run_turn(
    session: &Session,
    prepared: Prepared,
    model: &Model,
    tools: &SessionTools,
    events: &dyn Events,
    stop: impl Future<Output = ()>,
) -> Outcome {
    let cancel = prepared.cancel.clone();
    let deps = super::Deps {
        model,
        tools: Some(tools),
        hook: None,
        fs: &RealFs,
    };
    let run = session.run(prepared, deps, events);
    tokio::pin!(run);
    tokio::select! {
        outcome = &mut run => outcome,
        () = stop => {
            cancel.cancel();
            run.await
        }
    }
}

/// The task key a turn runs under (`TaskKind::ChatTurn`): one turn of a session at a time.
pub fn turn_key(session: &Session, prepared: &Prepared) -> String {
    format!("chat:{}:{}", session.id(), prepared.turn_id)
}
