//! The one ordered, bounded outbound queue, and requests to the peer on top of it.
//!
//! Every message a front end writes (responses, notifications, requests to the client) goes
//! through one [`Outbox`] into one writer task that owns the output. Order is the order messages
//! enter the queue. The queue holds at most a fixed number of messages: when the client stops
//! reading, the writer blocks, the queue fills, and whoever sends next waits, the main loop
//! included, so the server stops reading its input instead of growing (backpressure).
//!
//! [`Outbox::request_within`] sends a request to the client and awaits its answer (the main loop
//! routes responses to [`Outbox::complete`]); it gives the request up after a time limit, and a
//! request whose future is dropped (the tool call was cancelled) is given up too: it leaves the
//! pending table and the client gets the protocol's cancel notification for it
//! ([`Dialect::cancel_method`]). [`write_loop`] frames each message as the [`Dialect`] says.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::jsonrpc::{self, Id, Response, ResponseError};

/// Which protocol is on the wire: how a message is framed and how a request given up is
/// cancelled at the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// `Content-Length` headers; `$/cancelRequest`.
    Lsp,
    /// One message per line (newline-delimited JSON); `$/cancel_request`.
    Acp,
}

impl Dialect {
    /// The notification that tells the peer a request was given up.
    pub fn cancel_method(self) -> &'static str {
        match self {
            Dialect::Lsp => "$/cancelRequest",
            Dialect::Acp => "$/cancel_request",
        }
    }

    /// That notification's params for request `id`: LSP's `CancelParams` (`{id}`), ACP's
    /// `CancelRequestNotification` (`{requestId}`; the official SDKs ignore any other shape, so
    /// the client's prompt for the request would never close).
    pub fn cancel_params(self, id: &Id) -> Value {
        match self {
            Dialect::Lsp => serde_json::json!({ "id": id }),
            Dialect::Acp => serde_json::json!({ "requestId": id }),
        }
    }
}

/// Frames the queue holds before senders wait.
pub const OUT_CAPACITY: usize = 64;

/// What the writer task receives.
pub enum Out {
    Frame(Vec<u8>),
    /// Flush, then acknowledge.
    Flush(oneshot::Sender<()>),
}

type Pending = Arc<Mutex<HashMap<Id, oneshot::Sender<Result<Value, ResponseError>>>>>;

/// The sending side of the outbound queue. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Out>,
    pending: Pending,
    next_id: Arc<AtomicI64>,
    dialect: Dialect,
}

impl Outbox {
    /// A queue and its receiving end (for [`write_loop`]).
    pub fn new(capacity: usize, dialect: Dialect) -> (Outbox, mpsc::Receiver<Out>) {
        let (tx, rx) = mpsc::channel(capacity);
        (
            Outbox {
                tx,
                pending: Arc::default(),
                next_id: Arc::new(AtomicI64::new(1)),
                dialect,
            },
            rx,
        )
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Queues a notification.
    pub async fn notify<P: Serialize>(&self, method: &str, params: &P) {
        self.send(jsonrpc::message(None, method, params)).await;
    }

    /// Sends a request to the peer and waits for its answer; past `timeout` the request is given
    /// up (an error saying so, the cancel notification sent to the peer). Dropping the future
    /// (the work that asked was cancelled) gives it up the same way, so no answer is waited for
    /// forever and the peer can close its prompt. An error too when the connection ends first.
    pub async fn request_within<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Value, ResponseError> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = Id::String(format!("cc-{n}"));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), tx);
        let mut waiting = Waiting {
            out: self,
            id: Some(id.clone()),
        };
        self.send(jsonrpc::message(Some(&id), method, params)).await;
        let answer = match timeout {
            None => rx.await,
            Some(t) => match tokio::time::timeout(t, rx).await {
                Ok(a) => a,
                Err(_) => {
                    return Err(ResponseError::new(
                        jsonrpc::code::REQUEST_CANCELLED,
                        format!("{method}: the client did not answer within {t:?}"),
                    ));
                }
            },
        };
        waiting.id = None;
        answer.unwrap_or_else(|_| {
            Err(ResponseError::internal(format!(
                "{method}: the connection ended before the client answered"
            )))
        })
    }

    /// Queues a frame, waiting while the queue is full. A closed output drops it.
    pub async fn send(&self, frame: Vec<u8>) {
        let _ = self.tx.send(Out::Frame(frame)).await;
    }

    /// Queues a frame if there is room now (log lines: never wait for them).
    pub fn try_send(&self, frame: Vec<u8>) -> bool {
        self.tx.try_send(Out::Frame(frame)).is_ok()
    }

    /// Routes a client's answer to the server request waiting for it. `false` when nobody waits.
    pub fn complete(&self, resp: Response) -> bool {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&resp.id);
        match waiter {
            Some(w) => w.send(resp.result).is_ok(),
            None => false,
        }
    }

    /// Fails every request still waiting for the client (the connection ended).
    pub fn fail_pending(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Waits until every frame queued so far is written and flushed (or `timeout` passes).
    pub async fn flush(&self, timeout: Duration) -> bool {
        let (tx, rx) = oneshot::channel();
        let sent = tokio::time::timeout(timeout, self.tx.send(Out::Flush(tx))).await;
        if !matches!(sent, Ok(Ok(()))) {
            return false;
        }
        matches!(tokio::time::timeout(timeout, rx).await, Ok(Ok(())))
    }
}

/// Writes queued frames to `out` as `dialect` frames them, flushing when the queue runs dry.
/// Ends when every sender is gone or the output fails (the client is gone).
pub async fn write_loop<O: AsyncWrite + Unpin>(
    out: O,
    mut rx: mpsc::Receiver<Out>,
    dialect: Dialect,
) {
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Out::Frame(body) => {
                    let written = match dialect {
                        Dialect::Lsp => {
                            let header = format!("Content-Length: {}\r\n\r\n", body.len());
                            out.write_all(header.as_bytes()).await.is_ok()
                                && out.write_all(&body).await.is_ok()
                        }
                        // Serialised JSON holds no raw newline (strings escape it).
                        Dialect::Acp => {
                            out.write_all(&body).await.is_ok() && out.write_all(b"\n").await.is_ok()
                        }
                    };
                    if !written {
                        return;
                    }
                }
                Out::Flush(done) => {
                    let _ = out.flush().await;
                    let _ = done.send(());
                }
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

/// A server request still waiting for its answer: when given up (timeout, or the waiting future
/// dropped), it leaves the pending table and the client gets the dialect's cancel notification.
struct Waiting<'a> {
    out: &'a Outbox,
    /// `None` once answered.
    id: Option<Id>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let was_pending = self
            .out
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id)
            .is_some();
        if was_pending {
            // Never wait here (a drop cannot): a full queue loses the courtesy, not the answer.
            self.out.try_send(jsonrpc::message(
                None,
                self.out.dialect.cancel_method(),
                &self.out.dialect.cancel_params(&id),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_request_gets_its_answer() {
        let (out, mut rx) = Outbox::new(4, Dialect::Lsp);
        let client = out.clone();
        let asking = tokio::spawn(async move { client.request_within("x/ask", &1, None).await });
        let Some(Out::Frame(frame)) = rx.recv().await else {
            panic!("no frame")
        };
        let sent: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(sent["method"], "x/ask");
        let id = Id::from_value(&sent["id"]).unwrap();
        assert!(out.complete(Response {
            id,
            result: Ok(Value::from("yes"))
        }));
        assert_eq!(asking.await.unwrap(), Ok(Value::from("yes")));
    }

    async fn sent(rx: &mut mpsc::Receiver<Out>) -> Value {
        let Some(Out::Frame(frame)) = rx.recv().await else {
            panic!("no frame")
        };
        serde_json::from_slice(&frame).unwrap()
    }

    #[tokio::test]
    async fn an_unanswered_request_times_out_and_is_cancelled_at_the_client() {
        let (out, mut rx) = Outbox::new(4, Dialect::Lsp);
        let client = out.clone();
        let asking = tokio::spawn(async move {
            client
                .request_within("x/ask", &1, Some(Duration::from_millis(30)))
                .await
        });
        let ask = sent(&mut rx).await;
        let e = asking.await.unwrap().unwrap_err();
        assert_eq!(e.code, jsonrpc::code::REQUEST_CANCELLED);
        assert!(e.message.contains("did not answer"), "{}", e.message);
        let cancel = sent(&mut rx).await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], ask["id"]);
        // A late answer finds nobody waiting.
        let id = Id::from_value(&ask["id"]).unwrap();
        assert!(!out.complete(Response {
            id,
            result: Ok(Value::Null)
        }));
    }

    #[tokio::test]
    async fn a_dropped_request_is_cancelled_at_the_client() {
        let (out, mut rx) = Outbox::new(4, Dialect::Lsp);
        let client = out.clone();
        let asking = tokio::spawn(async move { client.request_within("x/ask", &1, None).await });
        let ask = sent(&mut rx).await;
        asking.abort();
        let _ = asking.await;
        let cancel = sent(&mut rx).await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], ask["id"]);
        assert!(out.pending.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn over_acp_the_cancel_names_the_request_as_requestid() {
        let (out, mut rx) = Outbox::new(4, Dialect::Acp);
        let client = out.clone();
        let asking = tokio::spawn(async move { client.request_within("x/ask", &1, None).await });
        let ask = sent(&mut rx).await;
        asking.abort();
        let _ = asking.await;
        let cancel = sent(&mut rx).await;
        assert_eq!(cancel["method"], "$/cancel_request");
        assert_eq!(
            cancel["params"],
            serde_json::json!({"requestId": ask["id"]})
        );
    }

    #[tokio::test]
    async fn a_full_queue_makes_senders_wait() {
        let (out, mut rx) = Outbox::new(2, Dialect::Lsp);
        out.send(b"1".to_vec()).await;
        out.send(b"2".to_vec()).await;
        assert!(!out.try_send(b"3".to_vec()), "full");
        let o = out.clone();
        let third = tokio::spawn(async move { o.send(b"3".to_vec()).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!third.is_finished(), "waits while the queue is full");
        let _ = rx.recv().await;
        third.await.unwrap();
    }
}
