//! The main loop: a closed event loop over the frames the reader cuts from the input.
//!
//! One task owns the session's order:
//!
//! * Notifications run here, one at a time, in arrival order, and only change the state and
//!   schedule tasks: a `didChange` is applied before any later request is dispatched.
//! * Requests routed [`Mode::Pool`] run on the blocking pool against the shared state; at most
//!   [`MAX_IN_FLIGHT`] at once, and the loop stops reading while that many are running. Their
//!   answers enter the one outbound queue ([`super::outbox`]) when they finish; the tasks they
//!   started begin only then, so nothing a request causes reaches the client before its answer.
//! * `$/cancelRequest` answers a running request `-32800` at once (its work finishes
//!   unobserved), unless its handler already committed to answering ([`RequestFate`]:
//!   `chat/send` commits before it writes the message); it never cancels a session task.
//! * `shutdown` (params absent, `null`, `[]`, `[null]` or `{}`) waits for the requests in flight
//!   and for the tasks that must finish (a chat turn's transcript) within [`SHUTDOWN_GRACE`], then
//!   answers; later requests get `-32600`. `exit` or the end of the input ends the loop: requests
//!   still in flight are answered (within [`DRAIN_GRACE`]) and the output flushed before
//!   [`serve`] returns.
//!
//! The loop reads the input itself, one frame at a time, so a loop that waits (on a full outbound
//! queue, on the in-flight limit) stops the reading too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::jsonrpc::{self, Id, Notification, Request, ResponseError, code};
use super::outbox::{Client, Dialect, OUT_CAPACITY, Outbox, write_loop};
use super::routes::{self, Mode, Routes};
use super::state::State;
use super::transport::{FrameReader, Incoming, classify};
use super::{Backend, RequestFate};
use crate::host::Host;
use crate::log::{self, Level};
use crate::tasks::Tasks;

/// Requests running at once before the loop stops reading.
pub const MAX_IN_FLIGHT: usize = 32;
/// How long the sessions' SessionEnd hooks may hold up the answer to `shutdown`.
const SESSION_END_LIMIT: Duration = Duration::from_secs(2);

/// How long `shutdown` waits for in-flight work before it answers anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long the end of the session waits for unanswered requests.
pub const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// `exit` was received.
    Exit,
    /// The input closed.
    Eof,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    pub how: How,
    /// `shutdown` was received (the exit code is 0 only then).
    pub shutdown: bool,
}

/// Switches for embedding.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Route log lines to the client (`window/logMessage`) once initialised. The log is process
    /// wide: in-process tests running several servers leave it off.
    pub forward_logs: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Uninitialized,
    Running,
    ShuttingDown,
}

struct Loop {
    backend: Backend,
    out: Outbox,
    routes: Routes,
    phase: Phase,
    permits: Arc<Semaphore>,
    in_flight: Arc<Mutex<HashMap<Id, Arc<RequestFate>>>>,
    running: JoinSet<()>,
    options: Options,
}

/// Serves the LSP over `input`/`output` until `exit` or the end of the input.
pub async fn serve<I, O>(input: I, output: O, host: Host, options: Options) -> Ended
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = Outbox::new(OUT_CAPACITY, Dialect::Lsp);
    let writer = tokio::spawn(write_loop(output, rx, Dialect::Lsp));
    let mut frames = FrameReader::new(input);
    let tasks = Tasks::new(tokio::runtime::Handle::current());
    let state = Arc::new(State::new(host));
    let client = Client { out: out.clone() };
    let mut lp = Loop {
        backend: Backend::new(state, client, tasks.clone()),
        out: out.clone(),
        routes: routes::table(),
        phase: Phase::Uninitialized,
        permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        in_flight: Arc::default(),
        running: JoinSet::new(),
        options,
    };
    let mut shutdown = false;
    let how = loop {
        while lp.running.try_join_next().is_some() {}
        let Some(frame) = frames.next().await else {
            break How::Eof;
        };
        let body = match frame {
            Ok(body) => body,
            Err(e) => {
                crate::log_warn!("skipped a frame: {e:?}");
                out.send(jsonrpc::response_err(&Id::Null, &e.to_jsonrpc()))
                    .await;
                continue;
            }
        };
        match classify(&body) {
            Incoming::Request(req) => {
                if req.method == "shutdown" {
                    shutdown |= lp.shutdown(req).await;
                } else {
                    lp.request(req).await;
                }
            }
            Incoming::Notification(n) => {
                if n.method == "exit" {
                    break How::Exit;
                }
                lp.notification(n);
            }
            Incoming::Response(resp) => {
                if !out.complete(resp) {
                    crate::log_debug!("a response from the client that nobody waits for");
                }
            }
            Incoming::Invalid(id, error) => {
                crate::log_debug!("invalid message: {}", error.message);
                out.send(jsonrpc::response_err(&id, &error)).await;
            }
            Incoming::Ignore(why) => crate::log_debug!("ignored a message: {why}"),
        }
    };
    // Every request received gets its answer, even when the input ended.
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        while lp.running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        crate::log_warn!("requests still running after {DRAIN_GRACE:?} at exit");
    }
    if !shutdown {
        let report = tasks.shutdown(Duration::from_millis(500)).await;
        if !report.abandoned.is_empty() {
            crate::log_warn!("tasks abandoned at exit: {:?}", report.abandoned);
        }
    }
    if lp.options.forward_logs {
        log::set_forwarder(None);
    }
    out.fail_pending();
    out.flush(Duration::from_secs(2)).await;
    writer.abort();
    Ended { how, shutdown }
}

/// Params `shutdown` accepts: none, `null`, `[]`, `[null]` (what `vscode-jsonrpc` sends for
/// `sendRequest('shutdown', null)`), `{}`.
fn shutdown_params_ok(params: &Option<Value>) -> bool {
    match params {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.iter().all(Value::is_null),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

impl Loop {
    /// `shutdown`: returns whether it was accepted.
    async fn shutdown(&mut self, req: Request) -> bool {
        if !shutdown_params_ok(&req.params) {
            let e =
                ResponseError::invalid_params("shutdown takes no params (send null or omit them)");
            self.out.send(jsonrpc::response_err(&req.id, &e)).await;
            return false;
        }
        self.phase = Phase::ShuttingDown;
        let tasks = self.backend.tasks.clone();
        let state = self.backend.state.clone();
        let out = self.out.clone();
        let permits = self.permits.clone();
        self.running.spawn(async move {
            let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
            // Requests in flight finish first (each holds a permit until its work ends).
            let _ =
                tokio::time::timeout_at(deadline, permits.acquire_many(MAX_IN_FLIGHT as u32)).await;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let report = tasks.shutdown(left).await;
            if !report.abandoned.is_empty() {
                crate::log_warn!(
                    "shutdown: tasks still running after {SHUTDOWN_GRACE:?}: {:?}",
                    report.abandoned
                );
            }
            // The sessions end: their SessionEnd hooks, bounded.
            state.chats.end_all(SESSION_END_LIMIT).await;
            out.send(jsonrpc::response_ok(&req.id, b"null")).await;
        });
        true
    }

    async fn request(&mut self, req: Request) {
        let Request { id, method, params } = req;
        let refuse = match self.phase {
            Phase::Uninitialized if method != "initialize" => Some(ResponseError::new(
                code::SERVER_NOT_INITIALIZED,
                format!("{method}: the server is not initialized yet (send initialize first)"),
            )),
            Phase::Running if method == "initialize" => Some(ResponseError::invalid_request(
                "initialize was already received",
            )),
            Phase::ShuttingDown => Some(ResponseError::invalid_request(format!(
                "{method}: the server is shutting down"
            ))),
            _ => None,
        };
        if let Some(e) = refuse {
            self.out.send(jsonrpc::response_err(&id, &e)).await;
            return;
        }
        let Some(route) = self.routes.requests.get(method.as_str()).cloned() else {
            // Unknown requests, `$/` ones included, are answered: LSP 3.17 requires it.
            self.out
                .send(jsonrpc::response_err(
                    &id,
                    &ResponseError::method_not_found(&method),
                ))
                .await;
            return;
        };
        match route.mode {
            Mode::MainLoop => {
                let b = self.backend.deferring();
                let answer = (route.call)(&b, params);
                self.out.send(frame(&id, answer)).await;
                if method == "initialize" && self.phase == Phase::Uninitialized {
                    self.phase = Phase::Running;
                    if self.options.forward_logs {
                        self.forward_logs();
                    }
                }
                b.run_deferred();
            }
            Mode::Pool => {
                // Backpressure: at most MAX_IN_FLIGHT requests run; the loop waits for a slot.
                let Ok(permit) = self.permits.clone().acquire_owned().await else {
                    return;
                };
                let fate = Arc::new(RequestFate::default());
                let token = fate.token.clone();
                self.lock_in_flight().insert(id.clone(), fate.clone());
                let b = self.backend.for_request(fate);
                let out = self.out.clone();
                let in_flight = self.in_flight.clone();
                self.running.spawn(async move {
                    let work = b.clone();
                    // The permit is held until the answer is queued (or, when cancelled, until
                    // the work ends): it bounds running work and answers waiting for the queue.
                    let _permit = permit;
                    let mut job = tokio::task::spawn_blocking(move || (route.call)(&work, params));
                    let answer = tokio::select! {
                        r = &mut job => Some(r),
                        _ = token.cancelled() => None,
                    };
                    in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    match answer {
                        Some(Ok(answer)) => out.send(frame(&id, answer)).await,
                        Some(Err(e)) => {
                            crate::log_error!("the {method} handler panicked: {e}; answered -32603");
                            let e = ResponseError::internal(format!(
                                "internal error in {method} (the server log has details); the server goes on"
                            ));
                            out.send(jsonrpc::response_err(&id, &e)).await;
                        }
                        None => {
                            let e = ResponseError::new(code::REQUEST_CANCELLED, format!("{method} was cancelled"));
                            out.send(jsonrpc::response_err(&id, &e)).await;
                            let _ = job.await;
                        }
                    }
                    b.run_deferred();
                });
            }
        }
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Arc<RequestFate>>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notification(&mut self, n: Notification) {
        if n.method == "$/cancelRequest" {
            let id = n
                .params
                .as_ref()
                .and_then(|p| p.get("id"))
                .and_then(Id::from_value);
            if let Some(fate) = id.and_then(|id| self.lock_in_flight().get(&id).cloned()) {
                // A handler that committed to its answer (chat/send wrote the message) is not
                // cancelled: the client gets the answer, not -32800.
                fate.cancel();
            }
            return;
        }
        if self.phase == Phase::Uninitialized {
            crate::log_debug!("{} before initialize: dropped", n.method);
            return;
        }
        match self.routes.notifications.get(n.method.as_str()) {
            Some(call) => call(&self.backend, n.params),
            None if n.method.starts_with("$/") => {}
            None => crate::log_debug!("unhandled notification {}", n.method),
        }
    }

    /// Log lines go to the client as `window/logMessage` from now on.
    fn forward_logs(&self) {
        let client = self.backend.client.clone();
        log::set_forwarder(Some(Arc::new(move |level, line: &str| {
            let typ = match level {
                Level::Error => ls_types::MessageType::ERROR,
                Level::Warn => ls_types::MessageType::WARNING,
                Level::Info => ls_types::MessageType::INFO,
                Level::Debug => ls_types::MessageType::LOG,
            };
            client.log_message(typ, line.to_string())
        })));
    }
}

fn frame(id: &Id, answer: Result<Vec<u8>, ResponseError>) -> Vec<u8> {
    match answer {
        Ok(json) => jsonrpc::response_ok(id, &json),
        Err(e) => jsonrpc::response_err(id, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_params() {
        use serde_json::json;
        for ok in [
            None,
            Some(json!(null)),
            Some(json!([])),
            Some(json!([null])),
            Some(json!({})),
        ] {
            assert!(shutdown_params_ok(&ok), "{ok:?}");
        }
        for bad in [Some(json!([1])), Some(json!({"a": 1}))] {
            assert!(!shutdown_params_ok(&bad), "{bad:?}");
        }
    }
}
