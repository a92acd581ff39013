//! Remote MCP servers over the older **HTTP+SSE** transport (`"type": "sse"` entries, MCP
//! 2024-11-05): a thin adapter that gives the SDK (`rmcp`, which has no client for it) a
//! [`rmcp::transport::Transport`] over our reqwest client ([`super::http::client`]: the same
//! TLS, no proxy, no redirect, the configured headers) and `sse-stream` (the SSE parser rmcp
//! itself uses). With `http.rs`, the only files of `mcp` that name the HTTP stack
//! (`tests/e2e/layers.rs`).
//!
//! **The protocol.** A `GET` of the configured URL opens an event stream; its first `endpoint`
//! event names the URL (usually relative, with a session id) where each client message is
//! `POST`ed; the server's messages come back as `message` events on the stream.
//!
//! **Bounds** (the server is an adversary):
//! - the `endpoint` event is awaited within the connection deadline (the caller's
//!   [`super::client::Limits::connect`], which covers the handshake after it too);
//! - the endpoint is resolved against the stream's URL and refused unless it has the same
//!   origin (scheme, host and port): a hostile server cannot send our messages, and the
//!   headers that go with them, anywhere else;
//! - every event is capped at [`super::client::Limits::max_message`] bytes (4 MB, the cap of
//!   a stdio line and of a streamable-HTTP event) *before* it is buffered: the bytes of an
//!   event (from one blank line to the next, comments included) are counted as they arrive
//!   and the stream ends at the first chunk that would pass the cap, so the parser never holds
//!   more than the cap;
//! - each `POST` has the call deadline; its answer's body is not read (the answer comes on
//!   the stream);
//! - the stream is never reopened: when it ends or fails, the server is gone (the SDK reports
//!   the connection closed), as a stdio server whose process exits; why it ended is kept
//!   ([`Ended`]) for the failed note and the call's error. Closing the transport (the session
//!   stops the server, or the connection is dropped) drops the stream, which closes it.
//!
//! **Failures** are the failed note's code-less line form of the reference CLI
//! (`ev: "SSE error: ECONNREFUSED: …"`, class K38) for what goes wrong with the stream; a
//! server that wants OAuth is `UNAUTHORIZED` as over streamable HTTP.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::Url;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use sse_stream::{Sse, SseStream};

use super::client::Limits;
use super::http::Remote;

/// The failed note's message prefix for the stream's failures (the reference's words).
const PREFIX: &str = "SSE error: ";

/// Why an event stream ended, once it has: shared by the transport and the connection that
/// reports it.
#[derive(Clone, Debug, Default)]
pub struct Ended(Arc<Mutex<Option<String>>>);

impl Ended {
    /// Why the stream ended (in words), if it has.
    pub fn why(&self) -> Option<String> {
        self.0.lock().ok().and_then(|w| w.clone())
    }

    /// The failed note's line for it: no code, `SSE error: <why>`.
    pub fn failure(&self) -> Option<(String, String)> {
        self.why().map(|w| (String::new(), format!("{PREFIX}{w}")))
    }

    fn set(&self, why: String) {
        if let Ok(mut w) = self.0.lock()
            && w.is_none()
        {
            *w = Some(why);
        }
    }
}

/// Why the event stream could not be opened (before the handshake).
#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Nothing listens at the address.
    Refused,
    /// The server asked for authorization (401, or 403 with a challenge).
    Unauthorized,
    /// The stream's URL, a header, the client or the request failed; in words.
    Request(String),
    /// The server answered the `GET` with this status.
    Status(u16),
    /// The server answered with this content type, not an event stream.
    ContentType(String),
    /// The stream ended, or failed (in words), before its `endpoint` event.
    Stream(String),
    /// The `endpoint` event is not a URL (its text, cut).
    BadEndpoint(String),
    /// The `endpoint` event names another origin than the stream's: refused.
    ForeignEndpoint { endpoint: String, origin: String },
}

impl OpenError {
    /// The failed note's code and message (no code for the stream's own failures, as the
    /// reference lists them).
    pub fn failure(&self) -> (String, String) {
        let sse = |text: String| (String::new(), format!("{PREFIX}{text}"));
        match self {
            OpenError::Refused => sse(super::http::CONNECTION_REFUSED.into()),
            OpenError::Unauthorized => (
                "UNAUTHORIZED".into(),
                super::http::NEEDS_AUTHORIZATION.into(),
            ),
            OpenError::Request(text) => sse(text.clone()),
            OpenError::Status(s) => sse(format!("Non-200 status code ({s})")),
            OpenError::ContentType(t) => sse(format!(
                "Invalid content type {}, expected \"text/event-stream\"",
                crate::context::message::quoted(t)
            )),
            OpenError::Stream(text) => sse(text.clone()),
            OpenError::BadEndpoint(e) => sse(format!(
                "the endpoint event {} is not a URL",
                crate::context::message::quoted(e)
            )),
            OpenError::ForeignEndpoint { endpoint, origin } => sse(format!(
                "the endpoint event names {endpoint}, not this server's origin {origin}: refused (messages go only to the server the stream came from)"
            )),
        }
    }
}

/// Where the server's `endpoint` event says messages go: `data` resolved against the stream's
/// `url`, refused unless it has the same origin (scheme, host, port).
pub fn endpoint_url(url: &Url, data: &str) -> Result<Url, OpenError> {
    let data = data.trim();
    let cut = || crate::context::message::cut(data).into_owned();
    if data.is_empty() {
        return Err(OpenError::BadEndpoint(String::new()));
    }
    let post = url.join(data).map_err(|_| OpenError::BadEndpoint(cut()))?;
    if post.origin() != url.origin() {
        return Err(OpenError::ForeignEndpoint {
            endpoint: post.origin().ascii_serialization(),
            origin: url.origin().ascii_serialization(),
        });
    }
    Ok(post)
}

/// Opens the event stream of `remote` and waits for its `endpoint` event. Not bounded in time
/// here: the caller wraps it in the connection deadline (and its cancel).
pub async fn open(remote: &Remote, limits: &Limits) -> Result<SseTransport, OpenError> {
    let url = Url::parse(&remote.url).map_err(|e| OpenError::Request(e.to_string()))?;
    let client = super::http::client(limits).map_err(OpenError::Request)?;
    let mut headers = reqwest::header::HeaderMap::new();
    for (k, v) in super::http::header_map(&remote.headers).map_err(OpenError::Request)? {
        headers.insert(k, v);
    }
    let response = client
        .get(url.clone())
        .headers(headers.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .header(reqwest::header::CACHE_CONTROL, "no-cache")
        .send()
        .await
        .map_err(|e| {
            if super::http::connection_refused(&e) {
                OpenError::Refused
            } else {
                // Without the URL: its query may hold a token.
                OpenError::Request(chain(&e.without_url()))
            }
        })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED
        || (status == reqwest::StatusCode::FORBIDDEN
            && response
                .headers()
                .contains_key(reqwest::header::WWW_AUTHENTICATE))
    {
        return Err(OpenError::Unauthorized);
    }
    if !status.is_success() {
        return Err(OpenError::Status(status.as_u16()));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if !content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
    {
        return Err(OpenError::ContentType(
            crate::context::message::cut(&content_type).into_owned(),
        ));
    }
    let ended = Ended::default();
    let mut events = events(response.bytes_stream(), limits.max_message);
    // The endpoint comes first; anything before it (there should be nothing) is passed over.
    let post = loop {
        match events.next().await {
            None => {
                return Err(OpenError::Stream(
                    "the server closed the event stream before its endpoint event".into(),
                ));
            }
            Some(Err(e)) => return Err(OpenError::Stream(stream_error(&e))),
            Some(Ok(sse)) if sse.event.as_deref() == Some("endpoint") => {
                break endpoint_url(&url, sse.data.as_deref().unwrap_or_default())?;
            }
            Some(Ok(_)) => {}
        }
    };
    Ok(SseTransport {
        client,
        headers,
        post,
        events,
        ended,
        post_timeout: limits.call,
    })
}

/// The SDK's transport over one open event stream: messages `POST`ed to the endpoint, the
/// server's read from the stream.
pub struct SseTransport {
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    post: Url,
    events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
    ended: Ended,
    post_timeout: std::time::Duration,
}

impl SseTransport {
    /// Why the stream ended, once it has.
    pub fn ended(&self) -> Ended {
        self.ended.clone()
    }
}

/// A message that could not be sent.
#[derive(Debug)]
pub enum SendError {
    /// Not encodable (never with the SDK's messages).
    Encode(serde_json::Error),
    /// The request failed (refused, reset, over the call deadline).
    Request(reqwest::Error),
    /// The server answered with this status.
    Status(u16),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Encode(e) => write!(f, "cannot encode the message: {e}"),
            SendError::Request(e) => write!(f, "sending a message failed: {}", chain(e)),
            SendError::Status(s) => write!(f, "the server answered a message with HTTP {s}"),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Encode(e) => Some(e),
            SendError::Request(e) => Some(e),
            SendError::Status(_) => None,
        }
    }
}

impl rmcp::transport::Transport<RoleClient> for SseTransport {
    type Error = SendError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SendError>> + Send + 'static {
        let request = serde_json::to_vec(&item).map(|body| {
            self.client
                .post(self.post.clone())
                .headers(self.headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .timeout(self.post_timeout)
                .body(body)
        });
        async move {
            let response = request
                .map_err(SendError::Encode)?
                .send()
                .await
                .map_err(|e| SendError::Request(e.without_url()))?;
            // The body ("Accepted") is not read: dropping the answer closes its connection.
            if !response.status().is_success() {
                return Err(SendError::Status(response.status().as_u16()));
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.events.next().await {
                None => {
                    self.ended.set("the server closed the event stream".into());
                    return None;
                }
                Some(Err(e)) => {
                    self.ended.set(stream_error(&e));
                    return None;
                }
                Some(Ok(sse)) => {
                    if !matches!(sse.event.as_deref(), None | Some("") | Some("message")) {
                        // Another `endpoint` (the one of the connection stays), or an event
                        // the protocol does not have.
                        continue;
                    }
                    let Some(data) = sse.data else { continue };
                    // As the SDK's stdio and HTTP transports do: a message that is not JSON-RPC
                    // is passed over.
                    if let Ok(m) = serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                        return Some(m);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), SendError> {
        // Dropping the response closes the stream's connection.
        self.events = futures::stream::empty().boxed();
        Ok(())
    }
}

/// An error's text with its sources (`error sending request: connection refused`...).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        next = s.source();
    }
    crate::context::message::cut(&text).into_owned()
}

/// Why the stream failed, in words.
fn stream_error(e: &sse_stream::Error) -> String {
    if let sse_stream::Error::Body(inner) = e
        && let Some(b) = inner.downcast_ref::<BodyError>()
    {
        return b.to_string();
    }
    format!("reading the event stream failed: {}", chain(e))
}

/// The bytes of the stream, ended by an error at the first chunk that would take an event past
/// `max` bytes.
#[derive(Debug)]
enum BodyError {
    TooLarge(usize),
    Read(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge(max) => {
                write!(f, "an event exceeded the maximum size of {max} bytes")
            }
            BodyError::Read(e) => write!(f, "reading the event stream failed: {e}"),
        }
    }
}

impl std::error::Error for BodyError {}

/// The events of a byte stream, each within `max` bytes.
fn events<S, E>(bytes: S, max: usize) -> BoxStream<'static, Result<Sse, sse_stream::Error>>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    // Ends after its first error: nothing is read past the cap.
    let bounded = bytes.scan(EventSize::new(max), move |size, chunk| {
        let item = match chunk {
            _ if size.over => None,
            Err(e) => {
                size.over = true;
                Some(Err(BodyError::Read(chain(&e))))
            }
            Ok(b) if size.observe(&b) => Some(Ok(b)),
            Ok(_) => Some(Err(BodyError::TooLarge(max))),
        };
        futures::future::ready(item)
    });
    SseStream::from_bytes_stream(bounded).boxed()
}

/// Counts the bytes of the current event (from the last blank line), line ends included, a
/// CRLF once.
#[derive(Debug)]
struct EventSize {
    max: usize,
    event: usize,
    line: usize,
    after_cr: bool,
    over: bool,
}

impl EventSize {
    fn new(max: usize) -> EventSize {
        EventSize {
            max,
            event: 0,
            line: 0,
            after_cr: false,
            over: false,
        }
    }

    /// Takes `chunk` in; false once an event is over the cap (and from then on).
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &b in chunk {
            if self.over {
                break;
            }
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    if self.line == 0 {
                        self.event = 0;
                    } else {
                        self.event += 1;
                    }
                    self.line = 0;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.line += 1;
                    self.event += 1;
                }
            }
            self.over = self.event > self.max;
        }
        !self.over
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_must_be_on_the_streams_origin() {
        let url = Url::parse("http://127.0.0.1:8000/sse").unwrap();
        let ok = |d: &str| endpoint_url(&url, d).map(|u| u.to_string());
        assert_eq!(
            ok("/messages/?session_id=ab12").unwrap(),
            "http://127.0.0.1:8000/messages/?session_id=ab12"
        );
        assert_eq!(ok("messages").unwrap(), "http://127.0.0.1:8000/messages");
        assert_eq!(
            ok(" http://127.0.0.1:8000/m \n").unwrap(),
            "http://127.0.0.1:8000/m"
        );
        for foreign in [
            "http://127.0.0.1:8001/messages",
            "https://127.0.0.1:8000/messages",
            "http://localhost:8000/messages",
            "//evil.example/messages",
            "http://evil.example/messages",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(ok(foreign), Err(OpenError::ForeignEndpoint { .. })),
                "{foreign}: {:?}",
                ok(foreign)
            );
        }
        assert_eq!(ok(""), Err(OpenError::BadEndpoint(String::new())));
        assert!(matches!(ok("http://[::1"), Err(OpenError::BadEndpoint(_))));
        let https = Url::parse("https://mcp.example.com/sse").unwrap();
        assert_eq!(
            endpoint_url(&https, "https://mcp.example.com:443/x")
                .unwrap()
                .as_str(),
            "https://mcp.example.com/x"
        );
        let (code, message) = ok("http://evil.example/x").unwrap_err().failure();
        assert_eq!(code, "");
        assert_eq!(
            message,
            "SSE error: the endpoint event names http://evil.example, not this server's origin http://127.0.0.1:8000: refused (messages go only to the server the stream came from)"
        );
    }

    #[test]
    fn a_refused_stream_is_the_reference_lines_message() {
        assert_eq!(
            OpenError::Refused.failure(),
            (
                String::new(),
                "SSE error: ECONNREFUSED: Unable to connect. Is the computer able to access the url?"
                    .to_string()
            )
        );
    }

    #[test]
    fn events_are_counted_from_one_blank_line_to_the_next() {
        let mut s = EventSize::new(9);
        // `data: ab\n` is 9 bytes: at the cap, not over it; the blank line starts a new event.
        assert!(s.observe(b"data: ab\n\r\n"));
        assert!(s.observe(b"data: cd\r"));
        assert!(s.observe(b"\n\n: ping\n\n"));
        assert!(!s.observe(b"data: abc\n"));
        // Over once, over for good.
        assert!(!s.observe(b"\n\n"));
        // Split across chunks, without a line end.
        let mut s = EventSize::new(32);
        let mut ok = true;
        for _ in 0..10 {
            ok &= s.observe(b"data: x");
        }
        assert!(!ok);
    }

    fn parse(chunks: Vec<&'static [u8]>, max: usize) -> Vec<Result<Sse, String>> {
        let source = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            events(source, max)
                .map(|r| r.map_err(|e| stream_error(&e)))
                .collect()
                .await
        })
    }

    #[test]
    fn an_event_over_the_cap_ends_the_stream_before_it_is_buffered() {
        let got = parse(
            vec![
                b"event: endpoint\ndata: /m\n\n",
                b"data: {\"a\":1}\n\n",
                b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                b"never read\n\n",
            ],
            32,
        );
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].as_ref().unwrap().event.as_deref(), Some("endpoint"));
        assert_eq!(got[1].as_ref().unwrap().data.as_deref(), Some("{\"a\":1}"));
        assert_eq!(
            got[2].as_ref().unwrap_err(),
            "an event exceeded the maximum size of 32 bytes"
        );
    }
}
