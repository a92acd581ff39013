//! Remote MCP servers over **streamable HTTP** (`"type": "http"` entries): the URL check, the
//! `check` warning on plain http to another machine, and the SDK's transport over our reqwest
//! client. The one file of `mcp` that names the HTTP stack (`tests/layers.rs`).
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
}

/// The transport this client builds.
pub type Transport = StreamableHttpClientTransport<reqwest::Client>;

/// Is `url` one claude-context can reach: `http` or `https`, with a host? The error says why
/// not, in `check`'s words.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.trim().is_empty() {
        return Err("an http server needs a \"url\"".into());
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
    // reqwest is built without a crypto provider: ring is installed as the process default
    // once, as the model client does (whichever comes first installs it).
    CRYPTO.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let mut headers = HashMap::new();
    for (k, v) in &remote.headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("the header name {} is not valid in HTTP", quoted(k)))?;
        let value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| format!("the value of header {} is not valid in HTTP", quoted(k)))?;
        headers.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(limits.connect)
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("claude-context/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(limits.max_message)
        .max_sse_event_size(limits.max_message)
        .max_error_response_size(MAX_ERROR_BODY);
    Ok(StreamableHttpClientTransport::with_client(client, config))
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

/// Why a remote server of this `kind` (`sse`, `ws`) is not started: the SDK (rmcp) has no
/// client for the older HTTP+SSE transport, nor for websockets.
pub fn unsupported(kind: &str) -> String {
    let hint = if kind == "sse" {
        "; many such servers also speak streamable HTTP: try \"type\": \"http\" with their /mcp URL"
    } else {
        ""
    };
    format!(
        "a remote ({kind}) server: claude-context speaks stdio and streamable HTTP (\"type\": \"http\") only{hint}"
    )
}

/// The failed note's message for a server that needs authorization.
pub const NEEDS_AUTHORIZATION: &str = "needs authorization (OAuth), which claude-context does not support; give a token with `headers`";

#[cfg(test)]
mod tests {
    use super::*;

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
