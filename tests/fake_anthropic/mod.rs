//! A fake Anthropic Messages API for tests: real HTTP/1.1 on 127.0.0.1 (a port of its own),
//! real SSE framing as the API sends it, scripted replies, faults on demand, and a record of
//! every request (headers and body) for assertions.
//!
//! ```ignore
//! let server = FakeAnthropic::start().await;
//! server.push(Reply::error(429, "rate_limit_error", "slow down").retry_after("1"));
//! server.push(Turn::new().text("Hello!").into());
//! // … point the client at server.base_url() …
//! assert_eq!(server.requests().len(), 2);
//! ```
//!
//! Each request takes the next scripted [`Reply`]; with none left it gets a 500 whose message
//! says so (a test that sends more than it scripted fails loudly). Streams are written as the API
//! writes them: `event:` and `data:` lines, a blank line after each event, `Transfer-Encoding:
//! chunked`, one chunk per event unless [`Reply::split_every`] asks for arbitrary cuts. Faults:
//! a reset (TCP RST) after N events, a stall, malformed data, a clean end without
//! `message_stop`, an `error` event, any status with the API's JSON error body, and a request
//! left unanswered.

#![allow(dead_code)] // reason: shared by several test targets; each uses a part.

mod script;
#[allow(unused_imports)] // reason: shared by several targets; each uses a part.
pub use script::{parse_reply, parse_script, realistic_usage};

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request was fully read.
    pub at: Instant,
    /// Which connection carried it (0, 1, … in accept order).
    pub connection: usize,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    /// The raw request (head and body) as text, for "never appears" assertions.
    pub fn raw_text(&self) -> String {
        let mut s = format!("{} {}\n", self.method, self.path);
        for (k, v) in &self.headers {
            s.push_str(&format!("{k}: {v}\n"));
        }
        s.push_str(&String::from_utf8_lossy(&self.body));
        s
    }
}

/// One SSE event.
#[derive(Clone, Debug)]
pub struct Frame {
    pub event: String,
    pub data: String,
}

impl Frame {
    pub fn new(event: &str, data: Value) -> Frame {
        Frame {
            event: event.to_string(),
            data: data.to_string(),
        }
    }

    /// A frame with only a `data` line (the OpenAI-compatible streams have no `event:`).
    pub fn data(data: &str) -> Frame {
        Frame {
            event: String::new(),
            data: data.to_string(),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        if self.event.is_empty() {
            format!("data: {}\n\n", self.data).into_bytes()
        } else {
            format!("event: {}\ndata: {}\n\n", self.event, self.data).into_bytes()
        }
    }
}

/// A scripted assistant answer, rendered as the API streams it.
#[derive(Clone, Debug)]
pub struct Turn {
    id: String,
    model: String,
    blocks: Vec<TurnBlock>,
    stop_reason: String,
    usage: (u64, u64, u64, u64),
    /// Characters per text/thinking delta, bytes per tool-input delta.
    piece: usize,
    ping_after_first_delta: bool,
}

#[derive(Clone, Debug)]
enum TurnBlock {
    Text(String),
    Thinking(String, String),
    ToolUse(String, String, Value),
}

impl Default for Turn {
    fn default() -> Turn {
        Turn::new()
    }
}

impl Turn {
    pub fn new() -> Turn {
        Turn {
            id: "msg_fake_01".into(),
            model: "claude-fake-1".into(),
            blocks: Vec::new(),
            stop_reason: String::new(),
            usage: (25, 0, 0, 0),
            piece: 8,
            ping_after_first_delta: true,
        }
    }

    pub fn id(mut self, id: &str) -> Turn {
        self.id = id.into();
        self
    }

    pub fn text(mut self, text: &str) -> Turn {
        self.blocks.push(TurnBlock::Text(text.into()));
        self
    }

    pub fn thinking(mut self, thinking: &str, signature: &str) -> Turn {
        self.blocks
            .push(TurnBlock::Thinking(thinking.into(), signature.into()));
        self
    }

    pub fn tool_use(mut self, id: &str, name: &str, input: Value) -> Turn {
        self.blocks
            .push(TurnBlock::ToolUse(id.into(), name.into(), input));
        self
    }

    /// The stop reason (default: `tool_use` when the last block is a tool call, else `end_turn`).
    pub fn stop(mut self, reason: &str) -> Turn {
        self.stop_reason = reason.into();
        self
    }

    /// input, output, cache creation, cache read.
    pub fn usage(mut self, input: u64, output: u64, cache_creation: u64, cache_read: u64) -> Turn {
        self.usage = (input, output, cache_creation, cache_read);
        self
    }

    /// Characters per delta.
    pub fn piece(mut self, n: usize) -> Turn {
        self.piece = n.max(1);
        self
    }

    pub fn frames(&self) -> Vec<Frame> {
        let (input, output, cache_creation, cache_read) = self.usage;
        let mut out = vec![Frame::new(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_creation,
                          "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
        )];
        let mut pinged = !self.ping_after_first_delta;
        for (index, block) in self.blocks.iter().enumerate() {
            let (start, deltas): (Value, Vec<Value>) = match block {
                TurnBlock::Text(t) => (
                    json!({"type": "text", "text": ""}),
                    pieces(t, self.piece)
                        .into_iter()
                        .map(|p| json!({"type": "text_delta", "text": p}))
                        .collect(),
                ),
                TurnBlock::Thinking(t, sig) => {
                    let mut d: Vec<Value> = pieces(t, self.piece)
                        .into_iter()
                        .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                        .collect();
                    d.push(json!({"type": "signature_delta", "signature": sig}));
                    (
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                        d,
                    )
                }
                TurnBlock::ToolUse(id, name, input) => {
                    let text = input.to_string();
                    let mut d = vec![json!({"type": "input_json_delta", "partial_json": ""})];
                    d.extend(
                        pieces(&text, self.piece)
                            .into_iter()
                            .map(|p| json!({"type": "input_json_delta", "partial_json": p})),
                    );
                    (
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                        d,
                    )
                }
            };
            out.push(Frame::new(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                out.push(Frame::new(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
                if !pinged {
                    out.push(Frame::new("ping", json!({"type": "ping"})));
                    pinged = true;
                }
            }
            out.push(Frame::new(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        let stop = if !self.stop_reason.is_empty() {
            self.stop_reason.clone()
        } else if matches!(self.blocks.last(), Some(TurnBlock::ToolUse(..))) {
            "tool_use".to_string()
        } else {
            "end_turn".to_string()
        };
        let output = if output == 0 {
            self.blocks.len() as u64 * 10 + 5
        } else {
            output
        };
        out.push(Frame::new(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": output}}),
        ));
        out.push(Frame::new("message_stop", json!({"type": "message_stop"})));
        out
    }
}

/// `text` cut into pieces of `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// What goes wrong in a stream, after some events.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Close the connection with a TCP reset.
    Reset,
    /// Send nothing more for this long, then close.
    Stall(Duration),
    /// Send an event whose data is not JSON, then carry on.
    Garbage,
    /// End the body cleanly (chunked terminator) without the rest.
    End,
    /// An `error` event of this type and message, then end.
    ErrorEvent(String, String),
    /// This frame again and again, until the client goes away (a server that ignores
    /// `max_tokens`, or a hostile one).
    Endless(Frame),
}

/// The answer to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Stream {
        frames: Vec<Frame>,
        fault: Option<(usize, Fault)>,
        /// Cut the body at every `n` bytes instead of at event boundaries.
        split_every: Option<usize>,
        /// Wait this long before each event.
        pace: Duration,
        headers: Vec<(String, String)>,
        /// Replace the scripted usage with realistic figures for the request
        /// ([`realistic_usage`]).
        auto_usage: bool,
    },
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, never answer (until the client goes away).
    Hang,
}

impl From<Turn> for Reply {
    fn from(turn: Turn) -> Reply {
        Reply::Stream {
            frames: turn.frames(),
            fault: None,
            split_every: None,
            pace: Duration::ZERO,
            headers: Vec::new(),
            auto_usage: false,
        }
    }
}

impl Reply {
    /// A stream of any frames.
    pub fn frames(frames: Vec<Frame>) -> Reply {
        Reply::Stream {
            frames,
            fault: None,
            split_every: None,
            pace: Duration::ZERO,
            headers: Vec::new(),
            auto_usage: false,
        }
    }

    /// `turn`, with the API's context editing reporting `edits` (the `applied_edits` list) on
    /// its `message_delta`.
    pub fn with_applied_edits(turn: Turn, edits: Value) -> Reply {
        let mut frames = turn.frames();
        if let Some(delta) = frames.iter_mut().find(|f| f.event == "message_delta") {
            let mut data: Value = serde_json::from_str(&delta.data).expect("JSON frame");
            data["context_management"] = serde_json::json!({ "applied_edits": edits });
            *delta = Frame::new("message_delta", data);
        }
        Reply::frames(frames)
    }

    /// An error status with the API's JSON error body.
    pub fn error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake_err"})
                .to_string(),
        }
    }

    /// Any status and body.
    pub fn raw(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Stream { headers, .. } | Reply::Status { headers, .. } => {
                headers.push((name.into(), value.into()))
            }
            Reply::Hang => {}
        }
        self
    }

    pub fn retry_after(self, value: &str) -> Reply {
        self.header("retry-after", value)
    }

    /// Usage figures computed from the request as the real API would report them (cache
    /// writes on a new prefix, reads on a repeated one; see [`realistic_usage`]).
    pub fn auto_usage(mut self) -> Reply {
        if let Reply::Stream { auto_usage, .. } = &mut self {
            *auto_usage = true;
        }
        self
    }

    pub fn fault_after(mut self, events: usize, f: Fault) -> Reply {
        if let Reply::Stream { fault, .. } = &mut self {
            *fault = Some((events, f));
        }
        self
    }

    pub fn reset_after(self, events: usize) -> Reply {
        self.fault_after(events, Fault::Reset)
    }

    pub fn stall_after(self, events: usize, d: Duration) -> Reply {
        self.fault_after(events, Fault::Stall(d))
    }

    pub fn garbage_after(self, events: usize) -> Reply {
        self.fault_after(events, Fault::Garbage)
    }

    pub fn end_after(self, events: usize) -> Reply {
        self.fault_after(events, Fault::End)
    }

    pub fn error_event_after(self, events: usize, kind: &str, message: &str) -> Reply {
        self.fault_after(events, Fault::ErrorEvent(kind.into(), message.into()))
    }

    /// After `events` frames, `frame` repeated without end (see [`Fault::Endless`]).
    pub fn endless_after(self, events: usize, frame: Frame) -> Reply {
        self.fault_after(events, Fault::Endless(frame))
    }

    pub fn split_every(mut self, n: usize) -> Reply {
        if let Reply::Stream { split_every, .. } = &mut self {
            *split_every = Some(n.max(1));
        }
        self
    }

    pub fn pace(mut self, d: Duration) -> Reply {
        if let Reply::Stream { pace, .. } = &mut self {
            *pace = d;
        }
        self
    }
}

#[derive(Default)]
struct State {
    /// Woken by `POST /_fake/quit` (the standalone program exits on it).
    quit: Arc<tokio::sync::Notify>,
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    connections: usize,
    /// Connections whose client went away while a reply was being written.
    client_gone: usize,
    /// When each stream frame was written (flushed to the socket), with its data line.
    frames_sent: Vec<(Instant, String)>,
    /// Streams report `usage.input_tokens` measured on the request they answer.
    measure_usage: bool,
}

/// The running fake server. Stops when dropped.
pub struct FakeAnthropic {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    /// The server's own runtime, for tests without one ([`FakeAnthropic::spawn`]).
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl FakeAnthropic {
    /// Starts the server on a runtime of its own, for synchronous tests (a test driving the
    /// `claude-context` binary over stdio, say).
    pub fn spawn() -> FakeAnthropic {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the fake server");
        let mut server = rt.block_on(FakeAnthropic::start());
        server.runtime = Some(rt);
        server
    }

    /// Listens on 127.0.0.1, a free port.
    pub async fn start() -> FakeAnthropic {
        FakeAnthropic::start_on(0).await.expect("bind 127.0.0.1")
    }

    /// Listens on 127.0.0.1:`port` (0: a free one).
    pub async fn start_on(port: u16) -> std::io::Result<FakeAnthropic> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                // Small writes (SSE events, a short answer) go out at once: without this, Nagle's
                // algorithm holds a reused connection's next response for the client's delayed ACK
                // (~40 ms), which would hide the server's own latency in every measurement.
                let _ = stream.set_nodelay(true);
                let id = {
                    let mut st = s.lock().unwrap();
                    st.connections += 1;
                    st.connections - 1
                };
                tokio::spawn(serve(stream, id, s.clone()));
            }
        });
        Ok(FakeAnthropic {
            addr,
            state,
            task,
            runtime: None,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: impl Into<Reply>) {
        self.state.lock().unwrap().script.push_back(reply.into());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// When each stream frame was written, with its `data`, in order (for latency figures).
    pub fn frames_sent(&self) -> Vec<(Instant, String)> {
        self.state.lock().unwrap().frames_sent.clone()
    }

    /// From now on every stream's `usage.input_tokens` is measured on the request it answers,
    /// as the API reports what it received: `ceil(bytes / 4)` of every text the request carries
    /// (system blocks, tool names, descriptions and schemas, message texts, tool calls' names
    /// and inputs, tool results), with no cache reads or writes. Scripted figures are replaced.
    pub fn measure_usage(&self) {
        self.state.lock().unwrap().measure_usage = true;
    }

    /// Drops the scripted replies not yet taken.
    pub fn clear(&self) {
        self.state.lock().unwrap().script.clear();
    }

    /// Drops the scripted replies not yet taken and the requests recorded so far (a test's next
    /// part starts from request 0).
    pub fn reset(&self) {
        let mut s = self.state.lock().unwrap();
        s.script.clear();
        s.requests.clear();
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.lock().unwrap().connections
    }

    /// Resolves when a client asked `POST /_fake/quit`.
    pub async fn quit_requested(&self) {
        let notify = self.state.lock().unwrap().quit.clone();
        notify.notified().await;
    }

    /// Replies cut short because the client went away.
    pub fn client_gone(&self) -> usize {
        self.state.lock().unwrap().client_gone
    }
}

async fn serve(mut stream: TcpStream, connection: usize, state: Arc<Mutex<State>>) {
    let mut buf = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buf, connection).await else {
            return;
        };
        if request.path.starts_with("/_fake/") {
            let (status, body) = control(&request, &state);
            let reply = Reply::raw(status, "application/json", &body.to_string());
            let quit = request.path == "/_fake/quit";
            if write_reply(&mut stream, reply, &state).await.is_err() || quit {
                if quit {
                    state.lock().unwrap().quit.notify_waiters();
                }
                return;
            }
            continue;
        }
        let reply = {
            let mut st = state.lock().unwrap();
            let mut reply = st.script.pop_front();
            if let Some(Reply::Stream {
                frames,
                auto_usage: true,
                ..
            }) = &mut reply
            {
                let earlier: Vec<&[u8]> = st
                    .requests
                    .iter()
                    .filter(|r| r.path == request.path)
                    .map(|r| r.body.as_slice())
                    .collect();
                script::apply_usage(frames, &request.body, &earlier);
            }
            if st.measure_usage
                && let Some(Reply::Stream { frames, .. }) = &mut reply
            {
                let n = request_tokens(&request.body);
                if let Some(f) = frames.iter_mut().find(|f| f.event == "message_start") {
                    let mut data: Value = serde_json::from_str(&f.data).expect("JSON frame");
                    data["message"]["usage"]["input_tokens"] = json!(n);
                    data["message"]["usage"]["cache_creation_input_tokens"] = json!(0);
                    data["message"]["usage"]["cache_read_input_tokens"] = json!(0);
                    *f = Frame::new("message_start", data);
                }
            }
            st.requests.push(request);
            reply
        };
        let reply = reply.unwrap_or_else(|| {
            Reply::error(500, "api_error", "fake server: no scripted reply left")
        });
        match write_reply(&mut stream, reply, &state).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => {
                state.lock().unwrap().client_gone += 1;
                return;
            }
        }
    }
}

/// The control routes under `/_fake/` (for tests that drive the standalone program):
/// `POST /_fake/replies` (one reply or an array, appended to the script), `DELETE
/// /_fake/replies`, `GET /_fake/requests` (every Messages request so far), `GET /_fake/state`,
/// `POST /_fake/quit`. Control requests are not recorded.
fn control(request: &Recorded, state: &Mutex<State>) -> (u16, Value) {
    let mut st = state.lock().unwrap();
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/_fake/replies") => {
            let parsed = serde_json::from_slice::<Value>(&request.body)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|v| match v {
                    Value::Array(_) => parse_script(&v),
                    other => parse_reply(&other).map(|r| vec![r]),
                });
            match parsed {
                Ok(replies) => {
                    let n = replies.len();
                    st.script.extend(replies);
                    (200, json!({"queued": n, "remaining": st.script.len()}))
                }
                Err(e) => (400, json!({"error": e})),
            }
        }
        ("DELETE", "/_fake/replies") => {
            st.script.clear();
            (200, json!({"remaining": 0}))
        }
        ("GET", "/_fake/requests") => {
            let list: Vec<Value> = st
                .requests
                .iter()
                .map(|r| {
                    let body = serde_json::from_slice::<Value>(&r.body)
                        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&r.body).into()));
                    let headers: Map<String, Value> = r
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect();
                    json!({"method": r.method, "path": r.path, "headers": headers,
                           "body": body, "connection": r.connection})
                })
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/_fake/state") => (
            200,
            json!({"remaining": st.script.len(), "requests": st.requests.len(),
                   "connections": st.connections, "clientGone": st.client_gone}),
        ),
        ("POST", "/_fake/quit") => (200, json!({"quitting": true})),
        (m, p) => (404, json!({"error": format!("no control route {m} {p}")})),
    }
}

/// What a Messages request carries, in tokens of 4 bytes (see [`FakeAnthropic::measure_usage`]).
pub fn request_tokens(body: &[u8]) -> u64 {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return 0;
    };
    let mut bytes = 0usize;
    let text = |v: &Value| v.as_str().map_or(0, str::len);
    for b in v["system"].as_array().into_iter().flatten() {
        bytes += text(&b["text"]);
    }
    for t in v["tools"].as_array().into_iter().flatten() {
        bytes += text(&t["name"]) + text(&t["description"]) + t["input_schema"].to_string().len();
    }
    for m in v["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(s) => bytes += s.len(),
            Value::Array(blocks) => {
                for b in blocks {
                    bytes += text(&b["text"]) + text(&b["thinking"]);
                    if b["type"] == "tool_use" {
                        bytes += text(&b["name"]) + b["input"].to_string().len();
                    }
                    match &b["content"] {
                        Value::String(s) => bytes += s.len(),
                        Value::Array(parts) => {
                            bytes += parts.iter().map(|p| text(&p["text"])).sum::<usize>()
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    bytes.div_ceil(4) as u64
}

/// Reads one request (head and `Content-Length` body). `None` when the client closed.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    connection: usize,
) -> Option<Recorded> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buf.len() < body_start + len {
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf[body_start..body_start + len].to_vec();
    buf.drain(..body_start + len);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
        connection,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes a reply. `Ok(true)` when the connection can carry another request.
async fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    state: &Mutex<State>,
) -> std::io::Result<bool> {
    match reply {
        Reply::Hang => {
            // Wait until the client closes its side.
            let mut b = [0u8; 1024];
            while stream.read(&mut b).await? > 0 {}
            Ok(false)
        }
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nrequest-id: req_fake_{status}\r\n",
                reason(status),
                body.len()
            );
            if !headers.iter().any(|(k, _)| k == "content-type") {
                head.push_str("content-type: application/json\r\n");
            }
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            Ok(true)
        }
        Reply::Stream {
            frames,
            fault,
            split_every,
            pace,
            headers,
            ..
        } => {
            let mut head = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n\
                 transfer-encoding: chunked\r\nrequest-id: req_fake_stream\r\n",
            );
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            let mut pending = Vec::new();
            for (i, frame) in frames.iter().enumerate() {
                if let Some((after, f)) = &fault
                    && *after == i
                {
                    flush(stream, &mut pending, split_every).await?;
                    match f {
                        Fault::Reset => {
                            // Let what was written reach the client: a reset discards unsent data.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            stream.set_zero_linger()?;
                            return Ok(false);
                        }
                        Fault::Stall(d) => {
                            tokio::time::sleep(*d).await;
                            return Ok(false);
                        }
                        Fault::Garbage => {
                            pending.extend_from_slice(b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", oops\n\n");
                        }
                        Fault::End => {
                            stream.write_all(b"0\r\n\r\n").await?;
                            return Ok(true);
                        }
                        Fault::Endless(frame) => {
                            let batch = frame.bytes().repeat(64);
                            loop {
                                pending.extend_from_slice(&batch);
                                flush(stream, &mut pending, split_every).await?;
                            }
                        }
                        Fault::ErrorEvent(kind, message) => {
                            let data = json!({"type": "error", "error": {"type": kind, "message": message}});
                            pending.extend_from_slice(&Frame::new("error", data).bytes());
                            flush(stream, &mut pending, split_every).await?;
                            stream.write_all(b"0\r\n\r\n").await?;
                            return Ok(true);
                        }
                    }
                }
                if !pace.is_zero() {
                    flush(stream, &mut pending, split_every).await?;
                    tokio::time::sleep(pace).await;
                }
                pending.extend_from_slice(&frame.bytes());
                if split_every.is_none() {
                    flush(stream, &mut pending, None).await?;
                    let at = Instant::now();
                    state
                        .lock()
                        .unwrap()
                        .frames_sent
                        .push((at, frame.data.clone()));
                }
            }
            flush(stream, &mut pending, split_every).await?;
            stream.write_all(b"0\r\n\r\n").await?;
            Ok(true)
        }
    }
}

/// Writes `pending` as chunks: one, or pieces of `split` bytes (cutting lines and characters).
async fn flush(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    split: Option<usize>,
) -> std::io::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let size = split.unwrap_or(pending.len());
    for piece in pending.chunks(size) {
        stream
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        stream.write_all(piece).await?;
        stream.write_all(b"\r\n").await?;
        stream.flush().await?;
    }
    pending.clear();
    Ok(())
}
