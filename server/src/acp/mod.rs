//! `claude-context acp`: an Agent Client Protocol agent on stdio, so every ACP editor (Zed, the
//! JetBrains IDEs, Emacs agent-shell, Neovim's codecompanion and avante) hosts the same session as
//! the language server and the command line ([`crate::session`]).
//!
//! The protocol's own types come from the `agent-client-protocol-schema` crate (what the SDK
//! `agent-client-protocol` re-exports as its `schema`); the connection is ours, as the language
//! server's is: one ordered, bounded outbox ([`crate::rpc::outbox`]), input read line by line
//! with a cap ([`transport`]), long work as tasks ([`crate::tasks`]). `docs/design.md` says why.
//!
//! - [`serve`] is the main loop: it reads messages one at a time, answers `initialize` itself,
//!   runs every other request as a task of its own (at most [`MAX_IN_FLIGHT`] at once: the loop
//!   stops reading while they are busy), routes the client's answers to the requests waiting for
//!   them, and applies notifications (`session/cancel`) in order. A malformed or out-of-order
//!   message gets a JSON-RPC error and the loop goes on.
//! - [`agent`] holds the methods (`initialize`, `authenticate`, `session/new`, `session/load`,
//!   `session/prompt`, `session/list`, `session/cancel`) and each session's state.
//! - [`events`] turns a turn's [`crate::session::ChatEvent`]s into `session/update`s;
//!   [`updates`] builds them; [`client`] is what the tools need from the client (its files, its
//!   permission prompts); [`context`] renders `/context`.
//!
//! The end of the input ends the agent: running turns are cancelled and their partial answers
//! written (within 5 s), then it exits 0. `docs/acp.md` maps every method and update.

mod agent;
pub mod client;
mod context;
mod events;
pub mod transport;
pub mod updates;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::host::Host;
use crate::rpc::jsonrpc::{Id, ResponseError, response_err};
use crate::rpc::outbox::{Dialect, OUT_CAPACITY, Outbox, write_loop};
use crate::rpc::{Incoming, classify};
use crate::tasks::Tasks;
use transport::{Line, LineReader};

pub use agent::Args;

/// Requests handled at once; past this the loop stops reading until one is answered.
pub const MAX_IN_FLIGHT: usize = 32;

/// Runs the agent on stdin and stdout until the input ends; the exit code.
pub fn run(host: Host, args: Args) -> i32 {
    let rt = match crate::session::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            crate::log_error!("{e}");
            return 2;
        }
    };
    #[allow(clippy::disallowed_methods)] // reason: stdout is the ACP channel, owned by this loop.
    let output = tokio::io::stdout();
    let code = rt.block_on(serve(tokio::io::stdin(), output, host, args));
    // Blocking work (a git snapshot of a huge repository, a pending stdin read) must not hold
    // the exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    code
}

/// The main loop over any pair of streams (stdio, or a pipe in tests).
pub async fn serve<I, O>(input: I, output: O, host: Host, args: Args) -> i32
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = Outbox::new(OUT_CAPACITY, Dialect::Acp);
    let writer = tokio::spawn(write_loop(output, rx, Dialect::Acp));
    let tasks = Tasks::new(tokio::runtime::Handle::current());
    let agent = Arc::new(agent::Agent::new(host, args, out.clone(), tasks.clone()));
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut reader = LineReader::new(input);
    while let Some(line) = reader.next().await {
        let body = match line {
            Line::Message(b) => b,
            Line::TooLong(n) => {
                let e = ResponseError::invalid_request(format!(
                    "a message of {n} bytes is over the {}-byte limit; it was dropped",
                    transport::MAX_LINE
                ));
                out.send(response_err(&Id::Null, &e)).await;
                continue;
            }
        };
        match classify(&body) {
            Incoming::Request(r) if r.method == "initialize" => {
                // In order: no request read after it runs before the capabilities are known.
                let answer = agent.initialize(r.params);
                agent.answer(&r.id, answer).await;
            }
            Incoming::Request(r) => {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    break;
                };
                let agent = agent.clone();
                tokio::spawn(async move {
                    agent.request(r).await;
                    drop(permit);
                });
            }
            Incoming::Notification(n) => agent.notification(n),
            Incoming::Response(r) => {
                let id = r.id.clone();
                if !out.complete(r) {
                    crate::log_debug!("an answer to {id}, which nobody waits for: dropped");
                }
            }
            Incoming::Invalid(id, e) => out.send(response_err(&id, &e)).await,
            Incoming::Ignore(why) => crate::log_warn!("ignored: {why}"),
        }
    }
    // The end of the input: stop the turns (their partial answers are written), answer what
    // can be answered, run the sessions' SessionEnd hooks, flush.
    let report = tasks.shutdown(Duration::from_secs(5)).await;
    agent.end_sessions(Duration::from_secs(2)).await;
    if !report.abandoned.is_empty() {
        crate::log_warn!("still running at exit: {}", report.abandoned.join(", "));
    }
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        slots.acquire_many(MAX_IN_FLIGHT as u32),
    )
    .await;
    out.fail_pending();
    out.flush(Duration::from_secs(2)).await;
    drop(agent);
    drop(out);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    0
}
