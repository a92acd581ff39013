//! The sandbox's way out to the allowed hosts: an HTTP proxy on a Unix socket in a private
//! folder, one per session, started at its first command that may use the network.
//!
//! The sandbox has no network but its own loopback; the reaper inside listens there and carries
//! each connection to this socket (bound into the sandbox read-only). Here each connection's
//! request head (at most [`MAX_HEAD`] bytes, within [`HEAD_TIMEOUT`]) is read:
//! - `CONNECT host:port` (HTTPS, and anything tunnelled): the host is judged, and when allowed
//!   a TCP connection is made to it and the bytes are copied both ways (`200` first);
//! - a request in absolute form (`GET http://host[:port]/path`): judged the same way, sent on in
//!   origin form (without its `Proxy-*` headers), and the connection copied both ways (later
//!   requests on that connection go to the same host);
//! - anything else, or a host not allowed: `403` with a line saying which setting allows it.
//!
//! Hosts are judged by name as the client gave it (the proxy resolves it, never the sandbox):
//! `example.com` allows that name only, `*.example.com` its subdomains (not itself), `*` any.
//! At most [`MAX_CONNECTIONS`] connections at once; the rest wait.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The largest request head read.
pub const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head, and a host to accept the connection.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections carried at once.
pub const MAX_CONNECTIONS: usize = 64;

/// A running proxy: its socket, in a private folder removed when it is dropped (with the task).
pub(crate) struct Proxy {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts the proxy for `domains` (the allowed hosts' patterns).
    pub(crate) fn start(domains: Vec<String>) -> std::io::Result<Proxy> {
        super::sweep(super::NET_PREFIX);
        let dir = tempfile::Builder::new()
            .prefix(&super::own_prefix(super::NET_PREFIX))
            .tempdir()?;
        let socket = std::fs::canonicalize(dir.path())?.join("proxy.sock");
        let listener = UnixListener::bind(&socket)?;
        let domains: Arc<[String]> = domains.into();
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let domains = domains.clone();
                tokio::spawn(async move {
                    serve(stream, &domains).await;
                    drop(permit);
                });
            }
        });
        Ok(Proxy {
            _dir: dir,
            socket,
            task,
        })
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Is `host` one of `patterns` (see the module doc)?
pub fn allowed(patterns: &[String], host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if host.is_empty() {
        return false;
    }
    patterns.iter().any(|p| {
        let p = p.trim().trim_end_matches('.').to_ascii_lowercase();
        if p == "*" {
            return true;
        }
        match p.strip_prefix("*.") {
            Some(base) => host.len() > base.len() + 1 && host.ends_with(&format!(".{base}")),
            None => !p.is_empty() && host == p,
        }
    })
}

/// The target of a request head: host, port, and (for the absolute form) the head to send on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub host: String,
    pub port: u16,
    /// `None` for `CONNECT`; the head rewritten to origin form otherwise.
    pub forward: Option<Vec<u8>>,
}

/// Reads the target from a complete request head (`head` ends with the blank line).
pub(crate) fn target(head: &[u8]) -> Result<Target, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text".to_string())?;
    let (line, rest) = text.split_once("\r\n").unwrap_or((text, ""));
    let mut parts = line.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("not an HTTP request line: {line:?}"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = host_port(uri, 443)?;
        return Ok(Target {
            host,
            port,
            forward: None,
        });
    }
    let Some(after) = uri.strip_prefix("http://") else {
        return Err(format!(
            "only CONNECT and http:// requests go through this proxy, not {uri:?}"
        ));
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    let (host, port) = host_port(authority, 80)?;
    // Sent on in origin form, without the headers meant for the proxy.
    let mut forward = format!("{method} {path} {version}\r\n").into_bytes();
    for line in rest.split_inclusive("\r\n") {
        if !line.to_ascii_lowercase().starts_with("proxy-") {
            forward.extend_from_slice(line.as_bytes());
        }
    }
    Ok(Target {
        host,
        port,
        forward: Some(forward),
    })
}

fn host_port(authority: &str, default: u16) -> Result<(String, u16), String> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, rest) = v6
            .split_once(']')
            .ok_or_else(|| format!("bad address {authority:?}"))?;
        (h.to_string(), rest.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse()
            .map_err(|_| format!("bad port in {authority:?}"))?,
        None => default,
    };
    if host.is_empty() {
        return Err(format!("no host in {authority:?}"));
    }
    Ok((host, port))
}

async fn serve(mut client: UnixStream, domains: &[String]) {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            refuse(&mut client, "400 Bad Request", &e).await;
            return;
        }
        Err(_) => return,
    };
    let (head, extra) = head;
    let t = match target(&head) {
        Ok(t) => t,
        Err(e) => {
            refuse(&mut client, "400 Bad Request", &e).await;
            return;
        }
    };
    if !allowed(domains, &t.host) {
        let why = format!(
            "{} is not an allowed host of the claude-context sandbox; the user can allow it with \
             sandbox.network.allowedDomains in ~/.claude/settings.json",
            t.host
        );
        refuse(&mut client, "403 Forbidden", &why).await;
        return;
    }
    let upstream =
        tokio::time::timeout(HEAD_TIMEOUT, TcpStream::connect((t.host.as_str(), t.port))).await;
    let mut upstream = match upstream {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            refuse(&mut client, "502 Bad Gateway", &format!("{}: {e}", t.host)).await;
            return;
        }
        Err(_) => {
            refuse(&mut client, "504 Gateway Timeout", &t.host).await;
            return;
        }
    };
    let sent = match &t.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(head) => upstream.write_all(head).await,
    };
    if sent.is_err() || (!extra.is_empty() && upstream.write_all(&extra).await.is_err()) {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The request head (up to and including its blank line) and any bytes read after it.
async fn read_head(s: &mut UnixStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(i) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            let extra = buf.split_off(i + 4);
            return Ok((buf, extra));
        }
        if buf.len() >= MAX_HEAD {
            return Err(format!("the request head is over {MAX_HEAD} bytes"));
        }
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Err("the connection closed before the request ended".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn refuse(s: &mut UnixStream, status: &str, why: &str) {
    let body = format!("claude-context sandbox: {why}\n");
    let _ = s
        .write_all(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await;
    let _ = s.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_exactly_or_as_subdomains() {
        let p = vec!["example.com".to_string(), "*.npmjs.org".to_string()];
        assert!(allowed(&p, "example.com"));
        assert!(allowed(&p, "EXAMPLE.com."));
        assert!(!allowed(&p, "www.example.com"));
        assert!(!allowed(&p, "example.com.evil.net"));
        assert!(allowed(&p, "registry.npmjs.org"));
        assert!(allowed(&p, "a.b.npmjs.org"));
        assert!(!allowed(&p, "npmjs.org"));
        assert!(!allowed(&p, "evilnpmjs.org"));
        assert!(!allowed(&p, ""));
        assert!(allowed(&["*".to_string()], "anything.test"));
        assert!(!allowed(&[], "example.com"));
    }

    #[test]
    fn request_heads_give_their_target() {
        let t = target(b"CONNECT crates.io:443 HTTP/1.1\r\nHost: crates.io:443\r\n\r\n").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.forward),
            ("crates.io", 443, None)
        );
        let t = target(b"GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n")
            .unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.com", 8080));
        assert_eq!(
            t.forward.unwrap(),
            b"GET /a?b HTTP/1.1\r\nHost: example.com\r\n\r\n".to_vec()
        );
        let t = target(
            b"GET http://x/ HTTP/1.1\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            t.forward.unwrap(),
            b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n".to_vec()
        );
        let t = target(b"GET http://[::1]/ HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        assert!(target(b"GET /relative HTTP/1.1\r\n\r\n").is_err());
        assert!(target(b"GET https://x/ HTTP/1.1\r\n\r\n").is_err());
        assert!(target(b"garbage\r\n\r\n").is_err());
        assert!(target(b"CONNECT :443 HTTP/1.1\r\n\r\n").is_err());
    }
}
