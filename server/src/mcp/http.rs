//! Remote MCP servers over **streamable HTTP** (`"type": "http"` entries): the URL check, the
//! `check` warning on plain http to another machine, and the SDK's transport over our reqwest
//! client, which [`super::sse`] (`"type": "sse"`) shares. With `sse.rs`, the only files of `mcp`
//! that name the HTTP stack (`tests/e2e/layers.rs`).
//!
//! **Bounds** (the server is an adversary): the SDK's reqwest client reads a JSON body, one SSE
//! event and an error body within caps it checks *while reading* (a `Content-Length` over the
//! cap is refused before any byte, a chunked body or an event that never ends is cut at the
//! cap): we set the first two to [`Limits::max_message`] (4 MB, stdio's line cap) and the error
//! body to 8 KB. The connection deadline, call deadline, output cap, cancel and the list bounds
//! are [`super::client`]'s, as for stdio.
//!
//! **What is sent**: the configured headers (after `${VAR}` expansion), no others of ours; never
//! through a proxy (`HTTPS_PROXY` is not consulted: dev servers are on this machine, and the
//! headers go to the server named); no redirect is followed (a redirect would carry the
//! headers elsewhere). A header whose value holds the model's key is left out by the session
//! (`Launch::without_secret`); the key variables are not in our environment, so `${VAR}` cannot
//! name them. OAuth is not supported: a 401 is reported as a server that needs authorization.

use std::collections::HashMap;
use std::sync::Once;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};

use super::client::Limits;

/// Bytes of an error body the SDK keeps for its message.
const MAX_ERROR_BODY: usize = 8 << 10;

/// Where a remote server is and what goes with each request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remote {
    pub url: String,
    /// Sent with every request, as configured.
    pub headers: Vec<(String, String)>,
    /// The older HTTP+SSE transport (`"type": "sse"`, [`super::sse`]) rather than streamable
    /// HTTP.
    pub sse: bool,
}

/// The transport this client builds.
pub type Transport = StreamableHttpClientTransport<reqwest::Client>;

/// Is `url` one claude-context can reach: `http` or `https`, with a host? The error says why
/// not, in `check`'s words.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.trim().is_empty() {
        return Err("a remote server needs a \"url\"".into());
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("its url {} is not a valid URL ({e})", quoted(url)))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "its url {} is not an http or https URL",
            quoted(url)
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("its url {} has no host", quoted(url)));
    }
    Ok(())
}

fn quoted(s: &str) -> String {
    crate::context::message::quoted(s)
}

/// The host of a plain `http:` URL that is not this machine (`localhost`, `127.0.0.0/8`,
/// `::1`): `check` warns about it. `None` for https, loopback, or an invalid URL.
pub fn plain_remote_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if parsed.scheme() != "http" {
        return None;
    }
    let host = parsed.host_str()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost") || bare.ends_with(".localhost"),
    };
    (!loopback).then(|| host.to_string())
}

static CRYPTO: Once = Once::new();

/// The SDK's streamable HTTP transport to `remote`, bounded by `limits`. Fails on a header
/// that HTTP cannot carry.
pub fn transport(remote: &Remote, limits: &Limits) -> Result<Transport, String> {
    let headers: HashMap<_, _> = header_map(&remote.headers)?.into_iter().collect();
    let config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(limits.max_message)
        .max_sse_event_size(limits.max_message)
        .max_error_response_size(MAX_ERROR_BODY);
    Ok(StreamableHttpClientTransport::with_client(
        client(limits)?,
        config,
    ))
}

/// The configured headers as HTTP carries them; fails on one it cannot carry.
pub(super) fn header_map(
    headers: &[(String, String)],
) -> Result<Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>, String> {
    headers
        .iter()
        .map(|(k, v)| {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("the header name {} is not valid in HTTP", quoted(k)))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of header {} is not valid in HTTP", quoted(k)))?;
            Ok((name, value))
        })
        .collect()
}

/// The HTTP client of every remote server (streamable HTTP and [`super::sse`]): our rustls
/// provider, no proxy, no redirect followed, no idle connection kept, the connection deadline.
pub(super) fn client(limits: &Limits) -> Result<reqwest::Client, String> {
    // reqwest is built without a crypto provider: ring is installed as the process default
    // once, as the model client does (whichever comes first installs it).
    CRYPTO.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .connect_timeout(limits.connect)
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("claude-context/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))
}

/// Did the server ask for authorization (HTTP 401, or 403 with a challenge)? Looks through
/// the error and its sources.
pub fn needs_authorization(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(h) = err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match h {
                StreamableHttpError::AuthRequired(_)
                | StreamableHttpError::InsufficientScope(_) => {
                    return true;
                }
                StreamableHttpError::HttpStatus(s) if s.status == 401 => return true,
                StreamableHttpError::UnexpectedServerResponse(m) if m.contains("401") => {
                    return true;
                }
                _ => {}
            }
        }
        next = err.source();
    }
    false
}

/// Did the connection fail because nothing listens at the address? Looks through the error
/// and its sources for the system's `ECONNREFUSED`.
pub fn connection_refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        // The SDK's client error does not name the HTTP client's error as its source.
        if let Some(StreamableHttpError::Client(inner)) =
            err.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return connection_refused(inner);
        }
        next = err.source();
    }
    false
}

/// The failed note's message for a remote server nothing listens for (the reference CLI's
/// words, class K38).
pub const CONNECTION_REFUSED: &str =
    "ECONNREFUSED: Unable to connect. Is the computer able to access the url?";

/// Why a remote server of this `kind` (`ws`) is not started: the SDK (rmcp) has no client for
/// websockets.
pub fn unsupported(kind: &str) -> String {
    format!(
        "a remote ({kind}) server: claude-context speaks stdio, streamable HTTP (\"type\": \"http\") and HTTP+SSE (\"type\": \"sse\") only"
    )
}

/// The failed note's message for a server that needs authorization.
pub const NEEDS_AUTHORIZATION: &str = "needs authorization (OAuth), which claude-context does not support; give a token with `headers`";

/// `text` with the query of every `http` or `https` URL in it shown as the reference CLI
/// shows it in a failed note, each pair `[redacted]=REDACTED` (`skills-mcp.md` section 12,
/// K38): a query may hold a token, and the note reaches the model and the editors.
pub fn redact_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme))
        .min()
    {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ','))
            .map_or(rest.len(), |n| at + n);
        let candidate = &rest[at..end];
        match reqwest::Url::parse(candidate) {
            Ok(mut url) if url.query().is_some_and(|q| !q.is_empty()) => {
                let pairs = url.query_pairs().count().max(1);
                let query = vec!["[redacted]=REDACTED"; pairs].join("&");
                url.set_query(Some(&query));
                out.push_str(url.as_str());
            }
            _ => out.push_str(candidate),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_in_a_url_never_reaches_a_failed_note() {
        let text = "error sending request for url (https://mcp.example/v1?token=SECRET-1&team=x): \
                    client error (Connect)";
        let shown = redact_queries(text);
        assert!(!shown.contains("SECRET-1"), "{shown}");
        assert_eq!(
            shown,
            "error sending request for url \
             (https://mcp.example/v1?[redacted]=REDACTED&[redacted]=REDACTED): client error (Connect)"
        );
        let plain = "no url here; http://h/p without a query";
        assert_eq!(redact_queries(plain), plain);
    }

    #[test]
    fn urls_are_checked_and_plain_http_elsewhere_is_flagged() {
        assert!(check_url("http://127.0.0.1:3845/mcp").is_ok());
        assert!(check_url("https://mcp.example.com/mcp").is_ok());
        assert!(check_url("").unwrap_err().contains("needs a \"url\""));
        assert!(
            check_url("ftp://x/mcp")
                .unwrap_err()
                .contains("not an http")
        );
        assert!(
            check_url("not a url")
                .unwrap_err()
                .contains("not a valid URL")
        );
        assert_eq!(plain_remote_host("http://127.0.0.1:3845/mcp"), None);
        assert_eq!(plain_remote_host("http://localhost/mcp"), None);
        assert_eq!(plain_remote_host("http://[::1]:80/mcp"), None);
        assert_eq!(plain_remote_host("https://example.com/mcp"), None);
        assert_eq!(
            plain_remote_host("http://10.0.0.5:8080/mcp").as_deref(),
            Some("10.0.0.5")
        );
    }
}
