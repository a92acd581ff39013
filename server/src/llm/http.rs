//! The HTTP side of every provider: send, stream, retry, time out, cancel.
//!
//! [`HttpProvider`] runs one turn as a small state machine behind a `Stream` (no spawned task:
//! dropping the stream drops the connection). A [`Dialect`] supplies what differs between APIs.
//! Every await races the caller's [`CancellationToken`], and every read races the idle timeout.
//!
//! One turn: connect → (status not 2xx: read the error body, classify) → read chunks, decode,
//! fold into the [`Accumulator`], pass each event on → the dialect's stop → [`Event::Done`].
//! A fault after some content emits [`Event::Restarted`] with the partial answer, then
//! [`Event::Retrying`], waits, and starts over from the same encoded request.

use std::collections::VecDeque;
use std::sync::{Arc, Once};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::retry::{self, RetryPolicy};
use super::{Accumulator, Error, ErrorKind, Event, EventStream, Provider, Proxy, Request, Secret};

/// The most of an error body we read (the API's are a few hundred bytes).
const MAX_ERROR_BODY: usize = 64 << 10;

/// The most an answer may hold for a request's `max_tokens`, in bytes: far more than any real
/// answer of that many tokens (about 4 bytes each, thinking and escaped tool input included),
/// so that a server that ignores `max_tokens` (a local model server, a hostile endpoint) cannot
/// grow one answer without bound. At least 1 MiB, at most 64 MiB.
pub fn answer_cap(max_tokens: u32) -> usize {
    (max_tokens as usize)
        .saturating_mul(32)
        .clamp(1 << 20, 64 << 20)
}

/// One header a dialect sends.
#[derive(Debug)]
pub struct Header {
    pub name: &'static str,
    pub value: String,
    /// A credential: hidden from the HTTP stack's `Debug` output.
    pub sensitive: bool,
}

/// What one API needs that the others don't.
pub trait Dialect: Send + Sync + 'static {
    /// A short name (`anthropic`, `openai`).
    fn name(&self) -> &'static str;
    /// The URL a turn is POSTed to.
    fn url(&self) -> &str;
    /// Headers of a turn, credential included.
    fn headers(&self, request: &Request<'_>) -> Vec<Header>;
    /// The JSON body of a turn.
    fn body(&self, request: &Request<'_>) -> Vec<u8>;
    /// A fresh decoder for one response stream.
    fn decoder(&self) -> Box<dyn StreamDecoder>;
    /// The API's error type and message from an error response body, when it has that shape.
    fn error_body(&self, body: &[u8]) -> (Option<String>, Option<String>);
    /// The credential, so error texts can be scrubbed of it.
    fn secret(&self) -> Option<&Secret>;
}

/// Bytes of one response stream in, events out. Pure.
pub trait StreamDecoder: Send {
    /// Decodes a chunk; malformed input is an `Err` with a short description.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Decoded>) -> Result<(), String>;
    /// The response ended (whether or not the dialect's stop was seen).
    fn finish(&mut self, out: &mut Vec<Decoded>) -> Result<(), String>;
}

/// What a decoder yields.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    Event(Event),
    /// The answer is complete.
    Stop,
    /// The API reported an error inside the stream.
    Error {
        api_type: String,
        message: String,
    },
}

/// A provider over HTTP with retries.
pub struct HttpProvider {
    http: reqwest::Client,
    dialect: Arc<dyn Dialect>,
    policy: RetryPolicy,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("api", &self.dialect.name())
            .field("url", &self.dialect.url())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

static CRYPTO: Once = Once::new();

impl HttpProvider {
    /// A provider speaking `dialect`, through `proxy` when it names one (the process environment
    /// is not consulted). Fails when a proxy URL is invalid or the TLS stack cannot start.
    pub fn new(
        dialect: impl Dialect,
        policy: RetryPolicy,
        proxy: &Proxy,
    ) -> Result<HttpProvider, Error> {
        // reqwest is built without a crypto provider (to use ring, not aws-lc); install ring as
        // the process default once. Another part of the process may have installed one already:
        // that one is used.
        CRYPTO.call_once(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let builder = reqwest::Client::builder()
            .connect_timeout(policy.connect_timeout)
            .user_agent(concat!("claude-context/", env!("CARGO_PKG_VERSION")));
        let http = proxy.apply(builder)?.build().map_err(|e| {
            Error::config(format!("cannot start the HTTP client: {}", error_chain(&e)))
        })?;
        Ok(HttpProvider {
            http,
            dialect: Arc::new(dialect),
            policy: RetryPolicy {
                max_attempts: policy.max_attempts.max(1),
                ..policy
            },
        })
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        self.dialect.name()
    }

    fn stream(&self, request: &Request<'_>, cancel: CancellationToken) -> EventStream {
        let mut driver = Driver {
            http: self.http.clone(),
            dialect: self.dialect.clone(),
            policy: self.policy.clone(),
            headers: HeaderMap::new(),
            body: Bytes::from(self.dialect.body(request)),
            cap: answer_cap(request.max_tokens),
            cancel,
            attempt: 0,
            response: None,
            acc: Accumulator::new(),
            queue: VecDeque::new(),
            scratch: Vec::new(),
            sleep: None,
            done: false,
        };
        match headers(self.dialect.headers(request)) {
            Ok(h) => driver.headers = h,
            Err(e) => {
                driver.queue.push_back(Err(e));
                driver.done = true;
            }
        }
        futures::stream::unfold(driver, |mut d| async move {
            let item = d.next().await?;
            Some((item, d))
        })
        .boxed()
    }
}

fn headers(list: Vec<Header>) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::new();
    for h in list {
        let mut value = HeaderValue::from_str(&h.value).map_err(|_| {
            Error::config(if h.sensitive {
                format!(
                    "the credential for the `{}` header holds characters a header cannot carry",
                    h.name
                )
            } else {
                format!(
                    "the `{}` header holds characters a header cannot carry",
                    h.name
                )
            })
        })?;
        value.set_sensitive(h.sensitive);
        map.insert(HeaderName::from_static(h.name), value);
    }
    Ok(map)
}

/// A failed attempt, before the policy decides.
struct Fault {
    kind: ErrorKind,
    retryable: bool,
    message: String,
    status: Option<u16>,
    api_type: Option<String>,
    request_id: Option<String>,
    retry_after: Option<Duration>,
}

impl Fault {
    fn new(kind: ErrorKind, retryable: bool, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            retryable,
            message: message.into(),
            status: None,
            api_type: None,
            request_id: None,
            retry_after: None,
        }
    }
}

type Item = Result<Event, Error>;

struct Driver {
    http: reqwest::Client,
    dialect: Arc<dyn Dialect>,
    policy: RetryPolicy,
    headers: HeaderMap,
    body: Bytes,
    /// [`answer_cap`] of the request: past it the stream ends with an error (not retried).
    cap: usize,
    cancel: CancellationToken,
    /// Tries started.
    attempt: u32,
    response: Option<(reqwest::Response, Box<dyn StreamDecoder>)>,
    acc: Accumulator,
    queue: VecDeque<Item>,
    scratch: Vec<Decoded>,
    /// Wait this long before the next try.
    sleep: Option<Duration>,
    done: bool,
}

impl Driver {
    async fn next(&mut self) -> Option<Item> {
        loop {
            // A cancel wins over events already decoded but not yet taken, except a partial
            // answer a retry had replaced: that one is still to be kept.
            if !self.done && self.cancel.is_cancelled() {
                self.queue
                    .retain(|i| matches!(i, Ok(Event::Restarted { .. })));
                self.cancelled();
            }
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if let Some(delay) = self.sleep.take() {
                let cancel = self.cancel.clone();
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => { self.cancelled(); continue; }
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            if self.response.is_none() {
                self.connect().await;
            } else {
                self.read().await;
            }
        }
    }

    async fn connect(&mut self) {
        self.attempt += 1;
        let send = self
            .http
            .post(self.dialect.url())
            .headers(self.headers.clone())
            .body(self.body.clone())
            .send();
        let cancel = self.cancel.clone();
        let idle = self.policy.idle_timeout;
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return self.cancelled(),
            r = tokio::time::timeout(idle, send) => r,
        };
        let response = match result {
            Err(_) => {
                return self.fault(Fault::new(
                    ErrorKind::Stalled,
                    true,
                    format!("no response within {}", secs(idle)),
                ));
            }
            Ok(Err(e)) => return self.fault(self.transport_fault(&e, "cannot connect")),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let request_id =
            header(&response, "request-id").or_else(|| header(&response, "x-request-id"));
        if (200..300).contains(&status) {
            let content_type = header(&response, "content-type").unwrap_or_default();
            if !content_type.contains("text/event-stream") {
                let body = self.read_body(response).await;
                let Some(body) = body else { return };
                let mut f = Fault::new(
                    ErrorKind::Protocol,
                    false,
                    format!(
                        "expected an event stream, got `{}`: {}",
                        if content_type.is_empty() {
                            "no content type"
                        } else {
                            &content_type
                        },
                        snippet(&body)
                    ),
                );
                f.status = Some(status);
                f.request_id = request_id;
                return self.fault(f);
            }
            self.response = Some((response, self.dialect.decoder()));
            return;
        }
        // reason: an HTTP-date `retry-after` is relative to the wall clock at the moment the
        // answer arrives; the host's clock seam is for the date the model is told.
        #[allow(clippy::disallowed_methods)]
        let now = chrono::Utc::now();
        let retry_after = retry::retry_after(
            header(&response, "retry-after-ms").as_deref(),
            header(&response, "retry-after").as_deref(),
            now,
        );
        let should_retry =
            retry::should_retry_header(header(&response, "x-should-retry").as_deref());
        let Some(body) = self.read_body(response).await else {
            return;
        };
        let (api_type, message) = self.dialect.error_body(&body);
        let kind = match (status, api_type.as_deref()) {
            (429, _) | (_, Some("rate_limit_error")) => ErrorKind::RateLimited,
            (529, _) | (_, Some("overloaded_error")) => ErrorKind::Overloaded,
            (s, _) if s >= 500 => ErrorKind::Server,
            _ if status_is_soft(status) => ErrorKind::Server,
            _ => ErrorKind::Rejected,
        };
        let mut f = Fault::new(
            kind,
            should_retry.unwrap_or_else(|| retry::status_is_retryable(status)),
            message.unwrap_or_else(|| snippet(&body)),
        );
        f.status = Some(status);
        f.api_type = api_type;
        f.request_id = request_id;
        f.retry_after = retry_after;
        self.fault(f);
    }

    /// Reads an error body (bounded, raced with cancel and the idle timeout). `None` when
    /// cancelled (the cancel is queued).
    async fn read_body(&mut self, mut response: reqwest::Response) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        let cancel = self.cancel.clone();
        let idle = self.policy.idle_timeout;
        loop {
            let chunk = tokio::select! {
                biased;
                _ = cancel.cancelled() => { self.cancelled(); return None; }
                c = tokio::time::timeout(idle, response.chunk()) => c,
            };
            match chunk {
                Ok(Ok(Some(c))) => {
                    body.extend_from_slice(&c);
                    if body.len() >= MAX_ERROR_BODY {
                        break;
                    }
                }
                _ => break,
            }
        }
        Some(body)
    }

    async fn read(&mut self) {
        let cancel = self.cancel.clone();
        let idle = self.policy.idle_timeout;
        let Some((response, _)) = self.response.as_mut() else {
            return;
        };
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return self.cancelled(),
            r = tokio::time::timeout(idle, response.chunk()) => r,
        };
        match result {
            Err(_) => self.fault(Fault::new(
                ErrorKind::Stalled,
                true,
                format!("the stream stalled: nothing for {}", secs(idle)),
            )),
            Ok(Err(e)) => {
                let f = self.transport_fault(&e, "the stream was cut");
                self.fault(f)
            }
            Ok(Ok(None)) => {
                let decoded = match self.response.take() {
                    Some((_, mut decoder)) => decoder.finish(&mut self.scratch),
                    None => Ok(()),
                };
                if self.take_decoded(decoded) {
                    return;
                }
                self.fault(Fault::new(
                    ErrorKind::Connection,
                    true,
                    "the stream ended before the answer was complete",
                ));
            }
            Ok(Ok(Some(bytes))) => {
                let decoded = match self.response.as_mut() {
                    Some((_, decoder)) => decoder.push(&bytes, &mut self.scratch),
                    None => Ok(()),
                };
                self.take_decoded(decoded);
            }
        }
    }

    /// Passes decoded items on. Returns `true` when the turn ended (done or failed).
    fn take_decoded(&mut self, result: Result<(), String>) -> bool {
        let items = std::mem::take(&mut self.scratch);
        let mut ended = false;
        for d in items {
            match d {
                Decoded::Event(e) => {
                    self.acc.apply(&e);
                    self.queue.push_back(Ok(e));
                    if self.acc.bytes() > self.cap {
                        self.fault(Fault::new(
                            ErrorKind::Protocol,
                            false,
                            format!(
                                "the answer passed {} MB, more than its max_tokens allows; it was stopped \
                                 (the server does not honour max_tokens) and what arrived is kept",
                                self.cap >> 20
                            ),
                        ));
                        ended = true;
                        break;
                    }
                }
                Decoded::Stop => {
                    self.queue.push_back(Ok(Event::Done(self.acc.message())));
                    if let Some((response, _)) = self.response.take() {
                        drain(response);
                    }
                    self.done = true;
                    return true;
                }
                Decoded::Error { api_type, message } => {
                    let (kind, retryable) = match api_type.as_str() {
                        "overloaded_error" => (ErrorKind::Overloaded, true),
                        "rate_limit_error" => (ErrorKind::RateLimited, true),
                        "api_error" | "timeout_error" => (ErrorKind::Server, true),
                        _ => (ErrorKind::Rejected, false),
                    };
                    let mut f = Fault::new(kind, retryable, message);
                    f.api_type = Some(api_type);
                    self.fault(f);
                    ended = true;
                    break;
                }
            }
        }
        if !ended && let Err(problem) = result {
            self.fault(Fault::new(
                ErrorKind::Protocol,
                true,
                format!("malformed event stream: {problem}"),
            ));
            ended = true;
        }
        ended
    }

    fn transport_fault(&self, e: &reqwest::Error, what: &str) -> Fault {
        let kind = if e.is_timeout() {
            ErrorKind::Stalled
        } else {
            ErrorKind::Connection
        };
        Fault::new(kind, true, format!("{what}: {}", error_chain(e)))
    }

    /// Decides after a failed attempt: another try (after a wait), or the end.
    fn fault(&mut self, f: Fault) {
        self.response = None;
        let scrub = |s: &str| match self.dialect.secret() {
            Some(secret) => secret.scrub(s).into_owned(),
            None => s.to_string(),
        };
        let message = scrub(&f.message);
        let partial = self.acc.has_content().then(|| Box::new(self.acc.message()));
        let too_long = f.retry_after.filter(|d| *d > self.policy.max_retry_after);
        if f.retryable && self.attempt < self.policy.max_attempts && too_long.is_none() {
            let delay = f
                .retry_after
                .unwrap_or_else(|| self.policy.backoff(self.attempt, fastrand::f64()));
            let cause = describe(&f, &message);
            if let Some(partial) = partial {
                self.queue.push_back(Ok(Event::Restarted {
                    partial: *partial,
                    cause: cause.clone(),
                }));
            }
            self.acc.reset();
            self.queue.push_back(Ok(Event::Retrying {
                attempt: self.attempt + 1,
                of: self.policy.max_attempts,
                delay,
                cause,
            }));
            self.sleep = Some(delay);
            return;
        }
        let message = match too_long {
            Some(d) if f.retryable => format!(
                "{message} (the API asks to wait {} before trying again, longer than the {} we wait; try again later)",
                secs(d),
                secs(self.policy.max_retry_after)
            ),
            _ => message,
        };
        self.done = true;
        self.queue.push_back(Err(Error {
            kind: f.kind,
            message,
            status: f.status,
            api_type: f.api_type,
            request_id: f.request_id,
            attempts: self.attempt,
            partial,
        }));
    }

    fn cancelled(&mut self) {
        self.response = None;
        self.done = true;
        self.sleep = None;
        self.queue.push_back(Err(Error {
            kind: ErrorKind::Cancelled,
            message: String::new(),
            status: None,
            api_type: None,
            request_id: None,
            attempts: self.attempt,
            partial: self.acc.has_content().then(|| Box::new(self.acc.message())),
        }));
    }
}

/// Reads what follows the end of an answer (the chunked terminator) in the background, so the
/// connection goes back to the pool instead of costing a new TLS handshake next turn.
fn drain(mut response: reqwest::Response) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                while let Ok(Some(_)) = response.chunk().await {}
            })
            .await;
        });
    }
}

/// 408 and 409 are retried like server trouble.
fn status_is_soft(status: u16) -> bool {
    matches!(status, 408 | 409)
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A transport error and its causes, without the URL (it may hold credentials).
fn error_chain(e: &reqwest::Error) -> String {
    let mut out = String::new();
    let mut current: Option<&dyn std::error::Error> = Some(e);
    let mut first = true;
    while let Some(err) = current {
        let text = if first {
            // reqwest's own text names the URL; describe the kind instead.
            if e.is_connect() {
                "connection failed".to_string()
            } else if e.is_timeout() {
                "timed out".to_string()
            } else if e.is_body() || e.is_decode() {
                "reading the response failed".to_string()
            } else if e.is_request() {
                "sending the request failed".to_string()
            } else {
                "HTTP error".to_string()
            }
        } else {
            err.to_string()
        };
        if !out.ends_with(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        first = false;
        current = err.source();
    }
    out
}

fn describe(f: &Fault, message: &str) -> String {
    match (f.status, &f.api_type) {
        (Some(s), Some(t)) => format!("{s} {t}: {message}"),
        (Some(s), None) => format!("{s}: {message}"),
        (None, Some(t)) => format!("{t}: {message}"),
        (None, None) => message.to_string(),
    }
}

fn secs(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The start of a body, for a message.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "empty body".to_string();
    }
    let mut end = text.len().min(300);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_string()
    }
}
