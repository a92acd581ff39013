//! The MCP client: a stdio server started (or a remote one reached over streamable HTTP,
//! [`super::http`], or HTTP+SSE, [`super::sse`]), initialised, listed, called and stopped,
//! bounded in every dimension a hostile server controls. Built on the official Rust SDK
//! (`rmcp`): it does the protocol (initialisation, pagination cursors, cancellation on drop,
//! garbage lines ignored, one message capped at [`Limits::max_message`]); this module owns the
//! process.
//!
//! **The process.** Started with the server's working folder (cwd), the inherited environment
//! without the variables that can hold a key (`Launch::env_remove`: `ANTHROPIC_API_KEY`,
//! `ANTHROPIC_AUTH_TOKEN`, ...) plus the entry's `env`, in its own process group; stdin and
//! stdout carry JSON-RPC, stderr is kept as a bounded tail (8 KB) for the failure report and is
//! never shown to the model. [`Connection::stop`], a failed start and dropping the connection
//! kill the whole group.
//!
//! **Bounds.** Connecting (spawn + `initialize` + `tools/list`) has a deadline
//! ([`Limits::connect`]); a server that never answers is a `TIMEOUT` failure, one that exits is
//! `CONNECTION_CLOSED` (after a second start, as the reference CLI does for a server that exits
//! at once). At most [`Limits::max_pages`] pages and [`Limits::max_tools`] tools are kept; a
//! description is kept up to 16 KB (the model gets 4,096 characters of it), an input schema up
//! to [`Limits::max_schema`] bytes (a tool with a larger one is left out and reported). A call
//! has its own deadline and output cap, and stops at once when cancelled (the SDK tells the
//! server `notifications/cancelled`).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// How to start one server.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// The configured name (for reports).
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Added to the environment.
    pub env: Vec<(String, String)>,
    /// Removed from the inherited environment (the key variables).
    pub env_remove: Vec<String>,
    /// The working folder (the session's cwd).
    pub cwd: PathBuf,
    /// A remote server: reached at its URL over streamable HTTP (or HTTP+SSE); `command` (the
    /// URL, for reports), `args`, `env` and `cwd` are not used.
    pub remote: Option<super::http::Remote>,
}

impl Launch {
    /// Without the entry's `env` variables and headers whose value holds `secret` (the model's
    /// key): the key never goes to a server, whatever its entry says.
    pub fn without_secret(mut self, secret: Option<&str>) -> Launch {
        let Some(secret) = secret.filter(|s| !s.is_empty()) else {
            return self;
        };
        for (k, v) in &self.env {
            if v.contains(secret) && !self.env_remove.contains(k) {
                self.env_remove.push(k.clone());
            }
        }
        self.env.retain(|(_, v)| !v.contains(secret));
        if let Some(r) = &mut self.remote {
            r.headers.retain(|(_, v)| !v.contains(secret));
        }
        self
    }
}

/// What a server may cost.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Spawn, `initialize` and the tool list.
    pub connect: Duration,
    /// One tool call.
    pub call: Duration,
    /// One JSON-RPC message from the server, in bytes (a longer line is dropped by the SDK).
    pub max_message: usize,
    /// `tools/list` pages read.
    pub max_pages: usize,
    /// Tools kept.
    pub max_tools: usize,
    /// Bytes of one tool's input schema.
    pub max_schema: usize,
    /// Bytes of one call's result given to the model.
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connect: Duration::from_secs(30),
            call: Duration::from_secs(120),
            max_message: 4 << 20,
            max_pages: 32,
            max_tools: 1_000,
            max_schema: 64 << 10,
            max_output: 100 << 10,
        }
    }
}

/// Bytes of a description kept from the server (the model sees 4,096 characters).
const MAX_DESCRIPTION_BYTES: usize = 16 << 10;
/// Bytes of the server's stderr kept.
const STDERR_TAIL: usize = 8 << 10;
/// Bytes of instructions kept from the server (the model sees 4,096 characters).
const MAX_INSTRUCTIONS_BYTES: usize = 64 << 10;

/// Why a server did not connect: the code and message of the failed note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectError {
    /// `ENOENT`, `EACCES`, `CONNECTION_CLOSED`, `TIMEOUT`, `PROTOCOL`, `CANCELLED`,
    /// `UNAUTHORIZED` (an http server asked for OAuth), `HTTP` (an http server's entry or
    /// answer we cannot use).
    pub code: String,
    pub message: String,
    /// The end of what the server wrote on stderr (for the log and the user, never the model).
    pub stderr: String,
}

/// One tool, as the server described it (bounded).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolInfo {
    /// The server's name for it.
    pub name: String,
    pub description: String,
    pub input_schema: Map<String, Value>,
}

/// What a connection learnt, to keep (the preview's cache) or show.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    pub tools: Vec<ToolInfo>,
    pub instructions: Option<String>,
    /// The server declared the `resources` capability.
    pub resources: bool,
    /// What was left out, in words (too many tools, a schema too large...).
    pub notes: Vec<String>,
    /// Milliseconds from spawn to the tool list.
    pub start_ms: u64,
}

/// A call's result for the model (skills-mcp.md section 6): `structuredContent` as compact JSON
/// in one text part when the server sent it, else the content array, one part per item (a text
/// item its text; any other item, an image or a resource, its JSON: the model gets no image
/// bytes). Everything within [`Limits::max_output`] bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// The parts joined by newlines (for a person, and for a client that wants one text).
    pub content: String,
    /// The result's parts as the model gets them.
    pub parts: Vec<String>,
    pub is_error: bool,
}

impl CallOutcome {
    /// An error of ours (not the server's), in one part.
    pub fn error(text: String) -> CallOutcome {
        CallOutcome {
            content: text.clone(),
            parts: vec![text],
            is_error: true,
        }
    }
}

/// A running server.
pub struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    group: GroupKill,
    /// The stdio server's process (none for a remote one).
    _child: Option<tokio::process::Child>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Reached over HTTP.
    remote: bool,
    /// Reached over HTTP+SSE: why its event stream ended, once it has.
    sse_ended: Option<super::sse::Ended>,
    pub listing: Listing,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("tools", &self.listing.tools.len())
            .finish_non_exhaustive()
    }
}

/// Kills the server's process group when dropped (or asked to, once).
struct GroupKill(Mutex<Option<rustix::process::Pid>>);

impl GroupKill {
    fn kill(&self) {
        let pid = self.0.lock().map(|mut p| p.take()).unwrap_or(None);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts and lists a server; a server that exits at once is started a second time before it
/// is reported as failed.
pub async fn connect(
    launch: &Launch,
    limits: &Limits,
    cancel: &CancellationToken,
) -> Result<Connection, ConnectError> {
    match connect_once(launch, limits, cancel).await {
        Err(e) if e.code == "CONNECTION_CLOSED" && !cancel.is_cancelled() => {
            connect_once(launch, limits, cancel).await
        }
        other => other,
    }
}

/// The failed note's code and message for a command that did not start: a bare command not
/// found on `PATH` is `Executable not found in $PATH: <command>` (class K37); a path that does not
/// exist keeps the `posix_spawn` text (section 8).
fn spawn_error(command: &str, e: &std::io::Error) -> ConnectError {
    let (code, what) = match e.kind() {
        std::io::ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
        std::io::ErrorKind::PermissionDenied => ("EACCES", "permission denied"),
        _ => ("SPAWN", "cannot start"),
    };
    let message = if code == "ENOENT" && !command.contains('/') {
        format!("Executable not found in $PATH: {command}")
    } else {
        format!("{code}: {what}, posix_spawn '{command}'")
    };
    ConnectError {
        code: code.into(),
        message,
        stderr: String::new(),
    }
}

async fn connect_once(
    launch: &Launch,
    limits: &Limits,
    cancel: &CancellationToken,
) -> Result<Connection, ConnectError> {
    let started = Instant::now();
    if let Some(remote) = &launch.remote {
        return connect_http(remote, limits, cancel, started).await;
    }
    #[allow(clippy::disallowed_methods)]
    // reason: starting an approved MCP server is this module's job (clippy.toml).
    let mut std_cmd = std::process::Command::new(&launch.command);
    {
        use std::os::unix::process::CommandExt;
        std_cmd.process_group(0);
    }
    std_cmd
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in &launch.env_remove {
        std_cmd.env_remove(v);
    }
    for (k, v) in &launch.env {
        if !launch.env_remove.contains(k) {
            std_cmd.env(k, v);
        }
    }
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| spawn_error(&launch.command, &e))?;
    let group = GroupKill(Mutex::new(
        child
            .id()
            .and_then(|id| rustix::process::Pid::from_raw(id as i32)),
    ));
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    let mut stderr_reader = None;
    if let Some(mut err) = child.stderr.take() {
        let tail = stderr.clone();
        stderr_reader = Some(tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = tail.lock() {
                    t.extend(&buf[..n]);
                    let over = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..over);
                }
            }
        }));
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(ConnectError {
            code: "SPAWN".into(),
            message: "no pipes to the server".into(),
            stderr: String::new(),
        });
    };
    let stderr_text = |s: &Arc<Mutex<VecDeque<u8>>>| -> String {
        s.lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>()).into_owned())
            .unwrap_or_default()
    };
    let transport =
        AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(limits.max_message);
    match handshake(transport, limits, cancel, false).await {
        Ok((service, mut listing)) => {
            listing.start_ms = started.elapsed().as_millis() as u64;
            Ok(Connection {
                service,
                group,
                _child: Some(child),
                stderr,
                remote: false,
                sse_ended: None,
                listing,
            })
        }
        Err((code, message)) => {
            // A server that exits at once closes stdout and stderr together: the last lines it
            // wrote may still be on their way to the tail. Read them (briefly: a server whose
            // children hold the pipe open is not waited for).
            if let Some(reader) = stderr_reader
                && !cancel.is_cancelled()
            {
                let _ = tokio::time::timeout(STDERR_SETTLE, reader).await;
            }
            Err(ConnectError {
                code,
                message,
                stderr: stderr_text(&stderr),
            })
        }
    }
}

/// How long a failed connection waits for the rest of the server's stderr.
const STDERR_SETTLE: Duration = Duration::from_millis(250);

/// Reaches a remote server over streamable HTTP and lists it, bounded as a stdio one.
async fn connect_http(
    remote: &super::http::Remote,
    limits: &Limits,
    cancel: &CancellationToken,
    started: Instant,
) -> Result<Connection, ConnectError> {
    if remote.sse {
        return connect_sse(remote, limits, cancel, started).await;
    }
    let transport = super::http::transport(remote, limits).map_err(|message| ConnectError {
        code: "HTTP".into(),
        message,
        stderr: String::new(),
    })?;
    match handshake(transport, limits, cancel, true).await {
        Ok((service, mut listing)) => {
            listing.start_ms = started.elapsed().as_millis() as u64;
            Ok(Connection {
                service,
                group: GroupKill(Mutex::new(None)),
                _child: None,
                stderr: Arc::default(),
                remote: true,
                sse_ended: None,
                listing,
            })
        }
        Err((code, message)) => Err(ConnectError {
            code,
            message,
            stderr: String::new(),
        }),
    }
}

/// Reaches a remote server over HTTP+SSE ([`super::sse`]) and lists it. The connection deadline
/// covers opening the event stream and waiting for its `endpoint` event as well as the
/// handshake; a stream that ends or fails on the way is the failed note's `SSE error` line.
async fn connect_sse(
    remote: &super::http::Remote,
    limits: &Limits,
    cancel: &CancellationToken,
    started: Instant,
) -> Result<Connection, ConnectError> {
    let fail = |(code, message): (String, String)| ConnectError {
        code,
        message,
        stderr: String::new(),
    };
    let opened = tokio::select! {
        r = tokio::time::timeout(limits.connect, super::sse::open(remote, limits)) => r,
        () = cancel.cancelled() => return Err(fail(cancelled())),
    };
    let transport = match opened {
        Err(_) => return Err(fail(timed_out(limits))),
        Ok(Err(e)) => return Err(fail(e.failure())),
        Ok(Ok(t)) => t,
    };
    let ended = transport.ended();
    let left = Limits {
        connect: limits
            .connect
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1)),
        ..*limits
    };
    match handshake(transport, &left, cancel, true).await {
        Ok((service, mut listing)) => {
            listing.start_ms = started.elapsed().as_millis() as u64;
            Ok(Connection {
                service,
                group: GroupKill(Mutex::new(None)),
                _child: None,
                stderr: Arc::default(),
                remote: true,
                sse_ended: Some(ended),
                listing,
            })
        }
        Err((code, _)) if code == "TIMEOUT" => Err(fail(timed_out(limits))),
        Err((code, message)) if code == "CANCELLED" => Err(fail((code, message))),
        Err(other) => Err(fail(ended.failure().unwrap_or(other))),
    }
}

fn cancelled() -> (String, String) {
    ("CANCELLED".into(), "cancelled".into())
}

/// The failed note's code and message for a server not connected within the deadline.
fn timed_out(limits: &Limits) -> (String, String) {
    (
        "TIMEOUT".into(),
        format!(
            "Connection timed out after {}ms",
            limits.connect.as_millis()
        ),
    )
}

/// `initialize` and the tool list over `transport`, within the connection deadline and until
/// `cancel`: the service and listing, or the failed note's code and message.
/// A `remote` server's transport errors say what went wrong (an HTTP status, a body over the
/// cap, OAuth asked for); a stdio server's mean it closed.
async fn handshake<T, E, A>(
    transport: T,
    limits: &Limits,
    cancel: &CancellationToken,
    remote: bool,
) -> Result<(RunningService<RoleClient, ClientConfig>, Listing), (String, String)>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("claude-context", env!("CARGO_PKG_VERSION")),
    );
    let unauthorized = || {
        (
            "UNAUTHORIZED".to_string(),
            super::http::NEEDS_AUTHORIZATION.to_string(),
        )
    };
    let work = async {
        let closed = || {
            (
                "CONNECTION_CLOSED".to_string(),
                "Connection closed".to_string(),
            )
        };
        let protocol = |text: String| {
            (
                "PROTOCOL".to_string(),
                crate::context::message::cut(&text).into_owned(),
            )
        };
        let service = info.serve(transport).await.map_err(|e| match e {
            e if e.is_authorization_required() => unauthorized(),
            rmcp::service::ClientInitializeError::TransportError { ref error, .. } if remote => {
                http_failure(error)
            }
            rmcp::service::ClientInitializeError::ConnectionClosed(_)
            | rmcp::service::ClientInitializeError::TransportError { .. } => closed(),
            other => protocol(other.to_string()),
        })?;
        let listing = list(&service, limits).await.map_err(|e| match e {
            e if e.is_authorization_required() => unauthorized(),
            rmcp::ServiceError::TransportSend(ref error) if remote => http_failure(error),
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => closed(),
            other => protocol(other.to_string()),
        })?;
        Ok::<_, (String, String)>((service, listing))
    };
    let outcome = tokio::select! {
        r = tokio::time::timeout(limits.connect, work) => r,
        () = cancel.cancelled() => return Err(cancelled()),
    };
    match outcome {
        Ok(r) => r,
        Err(_) => Err(timed_out(limits)),
    }
}

/// The failed note's code and message for a remote server's transport error: `UNAUTHORIZED`
/// when it asked for authorization, else `HTTP` and the error's chain of causes.
fn http_failure(error: &(dyn std::error::Error + 'static)) -> (String, String) {
    if super::http::needs_authorization(error) {
        return (
            "UNAUTHORIZED".into(),
            super::http::NEEDS_AUTHORIZATION.into(),
        );
    }
    if super::http::connection_refused(error) {
        return (
            "ECONNREFUSED".into(),
            super::http::CONNECTION_REFUSED.into(),
        );
    }
    let mut text = String::new();
    let mut next = error.source().or(Some(error));
    while let Some(e) = next {
        let s = e.to_string();
        if !text.contains(&s) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&s);
        }
        next = e.source();
    }
    let text = super::http::redact_queries(&text);
    (
        "HTTP".into(),
        crate::context::message::cut(&text).into_owned(),
    )
}

/// The tool list, instructions and capabilities, bounded.
async fn list(
    service: &RunningService<RoleClient, ClientConfig>,
    limits: &Limits,
) -> Result<Listing, rmcp::ServiceError> {
    let mut out = Listing::default();
    if let Some(info) = service.peer_info() {
        out.instructions = info
            .instructions
            .as_ref()
            .map(|i| cut_bytes(i, MAX_INSTRUCTIONS_BYTES));
        out.resources = info.capabilities.resources.is_some();
        if info.capabilities.tools.is_none() {
            return Ok(out);
        }
    }
    let mut cursor: Option<String> = None;
    let mut seen = 0usize;
    let mut schemas_dropped = Vec::new();
    for page in 0.. {
        if page >= limits.max_pages {
            out.notes.push(format!(
                "the tool list has more than {} pages: the rest was not read",
                limits.max_pages
            ));
            break;
        }
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let result = service.list_tools(Some(params)).await?;
        for tool in result.tools {
            seen += 1;
            if out.tools.len() >= limits.max_tools {
                continue;
            }
            let schema: Map<String, Value> = (*tool.input_schema).clone();
            let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
            if size > limits.max_schema {
                schemas_dropped.push(format!("{} ({} KB)", tool.name, size >> 10));
                continue;
            }
            out.tools.push(ToolInfo {
                name: tool.name.to_string(),
                description: tool
                    .description
                    .as_deref()
                    .map(|d| cut_bytes(d, MAX_DESCRIPTION_BYTES))
                    .unwrap_or_default(),
                input_schema: schema,
            });
        }
        match result.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    if seen > limits.max_tools {
        out.notes.push(format!(
            "the server offers {seen} tools; the first {} were kept",
            limits.max_tools
        ));
    }
    if !schemas_dropped.is_empty() {
        out.notes.push(format!(
            "left out for an input schema over {} KB: {}",
            limits.max_schema >> 10,
            schemas_dropped.join(", ")
        ));
    }
    Ok(out)
}

/// Parts kept within `max` bytes in all (the last one cut at a character boundary); with the
/// total size when something was left out.
fn cap_parts(parts: Vec<String>, max: usize) -> (Vec<String>, Option<usize>) {
    let total: usize = parts.iter().map(String::len).sum();
    if total <= max {
        return (parts, None);
    }
    let mut out = Vec::new();
    let mut left = max;
    for p in parts {
        if left == 0 {
            break;
        }
        let kept = cut_bytes(&p, left);
        left -= kept.len();
        out.push(kept);
    }
    (out, Some(total))
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

impl Connection {
    /// Calls `tool` (the server's name for it) with `arguments`; bounded by the call deadline
    /// and the output cap, and stopped when `cancel` fires.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        limits: &Limits,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let params = {
            let mut p = CallToolRequestParams::new(tool.to_string());
            p.arguments = Some(arguments);
            p
        };
        let call = self.service.call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(limits.call, call) => r,
            () = cancel.cancelled() => {
                return CallOutcome::error("The call was cancelled.".into());
            }
        };
        match result {
            Err(_) => CallOutcome::error(format!(
                "The MCP tool did not answer within {} s; the call was abandoned.",
                limits.call.as_secs()
            )),
            Ok(Err(e)) => {
                // A remote server's transport error says what happened (a body over the cap,
                // an HTTP status, why an SSE stream ended), not the SDK's type names.
                let ended = self.sse_ended.as_ref().and_then(|x| x.failure());
                let text = match &e {
                    rmcp::ServiceError::TransportSend(_) | rmcp::ServiceError::TransportClosed
                        if ended.is_some() =>
                    {
                        ended.map(|(_, m)| m).unwrap_or_default()
                    }
                    rmcp::ServiceError::TransportSend(err) if self.remote => http_failure(err).1,
                    other => other.to_string(),
                };
                CallOutcome::error(format!(
                    "MCP error: {}",
                    crate::context::message::cut(&text)
                ))
            }
            Ok(Ok(r)) => {
                let parts: Vec<String> = match &r.structured_content {
                    Some(v) => vec![serde_json::to_string(v).unwrap_or_default()],
                    None => r
                        .content
                        .iter()
                        .map(|c| {
                            let v = serde_json::to_value(c).unwrap_or_default();
                            match (v.get("type").and_then(Value::as_str), v.get("text")) {
                                (Some("text"), Some(Value::String(t))) => t.clone(),
                                _ => v.to_string(),
                            }
                        })
                        .collect(),
                };
                let (parts, cut) = cap_parts(parts, limits.max_output);
                let mut content = parts.join("\n");
                let mut parts = parts;
                if let Some(total) = cut {
                    let note = format!(
                        "[The result was {total} bytes; only the first {} are shown.]",
                        limits.max_output
                    );
                    content.push('\n');
                    content.push_str(&note);
                    parts.push(note);
                }
                CallOutcome {
                    content,
                    parts,
                    is_error: r.is_error == Some(true),
                }
            }
        }
    }

    /// Stops the server now, from anywhere (a call may still hold the connection): the
    /// protocol side is cancelled and the process group killed.
    pub fn kill(&self) {
        self.service.cancellation_token().cancel();
        self.group.kill();
    }

    /// The end of what the server wrote on stderr.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>()).into_owned())
            .unwrap_or_default()
    }

    /// Has the server gone away?
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// Stops the server: the protocol side is closed and the process group killed.
    pub async fn stop(self) {
        let Connection { service, group, .. } = self;
        let _ = tokio::time::timeout(Duration::from_millis(500), service.cancel()).await;
        drop(group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that writes its reason on stderr and exits at once: every failure says it (the
    /// tail was read before the error was made; it lost the race about one run in three).
    #[tokio::test]
    async fn a_server_that_exits_at_once_has_its_stderr_in_the_failure() {
        let launch = Launch {
            name: "broken".into(),
            command: "sh".into(),
            args: vec!["-c".into(), "echo broken-server-says >&2; exit 3".into()],
            cwd: std::env::temp_dir(),
            ..Launch::default()
        };
        for round in 0..20 {
            let Err(failed) = connect(&launch, &Limits::default(), &CancellationToken::new()).await
            else {
                panic!("round {round}: the server connected");
            };
            assert!(
                failed.stderr.contains("broken-server-says"),
                "round {round}: {failed:?}"
            );
        }
    }
}
