//! An in-process LSP client: the real server loop ([`claude_context::lsp::main_loop::serve`])
//! over an in-memory duplex pipe, no process. Tests wait on messages (with a deadline), never
//! on sleeps. The client answers the server's own requests (`workspace/configuration` with `{}`,
//! registrations with `null`) and keeps every message in arrival order for ordering checks.

#![allow(dead_code)] // reason: each test uses a part.

use std::time::Duration;

use claude_context::host::Host;
use claude_context::lsp::main_loop::{Ended, Options, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use std::sync::Arc;

pub const WAIT: Duration = Duration::from_secs(20);

pub struct Client {
    write: Arc<Mutex<Option<WriteHalf<DuplexStream>>>>,
    rx: mpsc::UnboundedReceiver<Value>,
    /// Every message received so far, in order (answered server requests included).
    pub log: Vec<Value>,
    taken: usize,
    next: i64,
    pub server: JoinHandle<Ended>,
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

async fn read_frames(
    mut r: tokio::io::ReadHalf<DuplexStream>,
    tx: mpsc::UnboundedSender<Value>,
    write: Arc<Mutex<Option<WriteHalf<DuplexStream>>>>,
) {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // Cut every complete frame out of the buffer.
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let header = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = header
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|n| n.trim().parse().ok())
                .expect("server frames carry Content-Length");
            if buf.len() < end + 4 + len {
                break;
            }
            let body: Vec<u8> = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            let msg: Value = serde_json::from_slice(&body).expect("server frames are JSON");
            if msg.get("method").is_some() && msg.get("id").is_some() {
                let result = match msg["method"].as_str() {
                    Some("workspace/configuration") => json!([{}]),
                    _ => Value::Null,
                };
                let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
                // Written from its own task: the reader never waits for the pipe.
                let write = write.clone();
                tokio::spawn(async move {
                    if let Some(w) = write.lock().await.as_mut() {
                        let _ = w.write_all(&frame(answer.to_string().as_bytes())).await;
                    }
                });
            }
            if tx.send(msg).is_err() {
                return;
            }
        }
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

impl Client {
    /// Starts a server on `host` with a pipe of `buffer` bytes each way.
    pub fn start(host: Host, buffer: usize) -> Client {
        let (client, server) = tokio::io::duplex(buffer);
        let (sr, sw) = tokio::io::split(server);
        let server = tokio::spawn(serve(sr, sw, host, Options::default()));
        let (cr, cw) = tokio::io::split(client);
        let write = Arc::new(Mutex::new(Some(cw)));
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(read_frames(cr, tx, write.clone()));
        Client {
            write,
            rx,
            log: Vec::new(),
            taken: 0,
            next: 1,
            server,
        }
    }

    pub async fn send_raw(&self, bytes: &[u8]) {
        if let Some(w) = self.write.lock().await.as_mut() {
            w.write_all(bytes).await.expect("the server reads");
        }
    }

    pub async fn send(&self, msg: Value) {
        self.send_raw(&frame(msg.to_string().as_bytes())).await;
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next);
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Ends the input (the server sees EOF).
    pub async fn close(&self) {
        if let Some(mut w) = self.write.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    /// The index in [`Client::log`] of the first message at or after `from` matching `pred`,
    /// waiting for it.
    pub async fn wait_from(&mut self, from: usize, pred: impl Fn(&Value) -> bool) -> Option<usize> {
        if let Some(j) = self.log.get(from..).and_then(|l| l.iter().position(&pred)) {
            return Some(from + j);
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .ok()??;
            self.log.push(msg);
            if self.log.len() > from && pred(self.log.last().unwrap()) {
                return Some(self.log.len() - 1);
            }
        }
    }

    pub async fn wait_index(&mut self, pred: impl Fn(&Value) -> bool) -> Option<usize> {
        self.wait_from(0, pred).await
    }

    pub async fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let i = self.wait_index(pred).await.expect("message arrived");
        self.log[i].clone()
    }

    pub async fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait(|m| m["id"] == id && m.get("method").is_none())
            .await
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        let r = self.response(&id).await;
        assert!(r.get("error").is_none(), "{method}: {r}");
        r["result"].clone()
    }

    /// The next notification `method` after the last one taken (or the last [`Client::mark`]).
    pub async fn next_notification(&mut self, method: &str) -> Value {
        let i = self
            .wait_from(self.taken, |m| {
                m["method"] == method && m.get("id").is_none()
            })
            .await
            .unwrap_or_else(|| panic!("no {method}"));
        self.taken = i + 1;
        self.log[i]["params"].clone()
    }

    /// Later [`Client::next_notification`] calls look only at what arrives from now on.
    pub fn mark(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            self.log.push(m);
        }
        self.taken = self.log.len();
    }

    pub async fn initialize(&mut self, folder: &std::path::Path, caps: Value) -> Value {
        let r = self
            .call(
                "initialize",
                json!({
                    "processId": null,
                    "workspaceFolders": [{"uri": uri(folder), "name": "ws"}],
                    "capabilities": caps,
                }),
            )
            .await;
        self.notify("initialized", json!({})).await;
        r
    }

    /// `shutdown` with `params`, then `exit`; how the server ended.
    pub async fn shutdown_with(mut self, params: Value) -> Ended {
        let id = self.send_request("shutdown", params).await;
        let r = self.response(&id).await;
        assert!(r.get("error").is_none(), "shutdown: {r}");
        assert_eq!(r["result"], Value::Null);
        self.notify("exit", Value::Null).await;
        tokio::time::timeout(WAIT, self.server)
            .await
            .expect("the server ended")
            .expect("no panic")
    }
}

/// `file://` URI of an absolute path.
pub fn uri(path: &std::path::Path) -> String {
    claude_context::features::format::file_url(path)
}
