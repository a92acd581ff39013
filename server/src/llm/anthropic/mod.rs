//! The Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.
//!
//! [`Config::from_env`] reads the variables the reference CLI reads, from values the caller passes
//! (the environment seam): `ANTHROPIC_API_KEY` (sent as `x-api-key`; a setting may name another
//! variable, never hold the key), `ANTHROPIC_AUTH_TOKEN` (sent as `Authorization: Bearer`, for
//! gateways), `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`, a path prefix allowed)
//! and the proxy variables ([`Proxy::from_env`]).
//! Headers: `anthropic-version: 2023-06-01`, `anthropic-beta` only when the request names betas
//! or uses context editing (which brings its own beta, [`CONTEXT_MANAGEMENT_BETA`]) or deferred
//! tools (a tool with `defer_loading`, a `tool_reference` in a result: [`TOOL_SEARCH_BETA`]).
//!
//! `wire` turns a [`Request`] into the JSON body (cache breakpoints per context.md section 9);
//! `stream` turns the response's server-sent events into [`Event`](super::Event)s.

mod stream;
mod wire;

use super::http::{Dialect, Header, HttpProvider, StreamDecoder};
use super::{Error, Proxy, Request, RetryPolicy, Secret};

pub use stream::Decoder;
pub use wire::encode;

/// The API's default address.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header.
pub const API_VERSION: &str = "2023-06-01";
/// The variable holding the API key, unless a setting names another.
pub const KEY_VARIABLE: &str = "ANTHROPIC_API_KEY";
/// A bearer token for gateways, as the reference CLI reads it.
pub const TOKEN_VARIABLE: &str = "ANTHROPIC_AUTH_TOKEN";
/// The base URL's variable.
pub const BASE_URL_VARIABLE: &str = "ANTHROPIC_BASE_URL";
/// The beta under which deferred tools (`defer_loading`) and `tool_reference` results are
/// accepted (the API's tool search; not in the measured captures, which do not show headers).
pub const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

/// The beta under which `context_management` (context editing) is accepted.
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";

/// How the client proves who it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// `x-api-key`.
    ApiKey(Secret),
    /// `Authorization: Bearer`.
    AuthToken(Secret),
}

impl Credential {
    pub fn secret(&self) -> &Secret {
        match self {
            Credential::ApiKey(s) | Credential::AuthToken(s) => s,
        }
    }
}

/// Where the API is and how to authenticate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Scheme, host and optional path prefix, without `/v1/messages`.
    pub base_url: String,
    pub credential: Credential,
    /// Proxies (curl's variables, read by [`Proxy::from_env`]).
    pub proxy: Proxy,
}

impl Config {
    /// Reads the configuration from environment values: `get` looks a variable up (the caller's
    /// environment seam). `key_variable` is the setting that names the key's variable, if any.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        key_variable: Option<&str>,
    ) -> Result<Config, Error> {
        let key_var = match key_variable.map(str::trim).filter(|v| !v.is_empty()) {
            Some(name) => {
                check_variable_name(name)?;
                name
            }
            None => KEY_VARIABLE,
        };
        let non_empty = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let credential = if let Some(key) = non_empty(key_var) {
            Credential::ApiKey(Secret::new(key.trim()))
        } else if let Some(token) = non_empty(TOKEN_VARIABLE) {
            Credential::AuthToken(Secret::new(token.trim()))
        } else {
            return Err(Error::config(format!(
                "no API key: set {key_var} (or {TOKEN_VARIABLE} for a gateway) in the environment of the editor or the shell"
            )));
        };
        let base_url = non_empty(BASE_URL_VARIABLE).unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        Ok(Config {
            base_url: check_base_url(&base_url)?,
            credential,
            proxy: Proxy::from_env(&get),
        })
    }
}

/// A setting names the variable; a value that looks like a key is refused, so a key never sits in
/// a settings file by mistake.
fn check_variable_name(name: &str) -> Result<(), Error> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid && !name.starts_with("sk-") {
        return Ok(());
    }
    Err(Error::config(
        if name.starts_with("sk-") || name.len() > 64 {
            "the API key setting must name an environment variable (like ANTHROPIC_API_KEY), not hold the key; remove the key from your settings".to_string()
        } else {
            format!(
                "the API key setting must name an environment variable; `{name}` is not a variable name"
            )
        },
    ))
}

fn check_base_url(raw: &str) -> Result<String, Error> {
    let url = reqwest::Url::parse(raw.trim())
        .map_err(|e| Error::config(format!("{BASE_URL_VARIABLE} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::config(format!(
            "{BASE_URL_VARIABLE} must start with https:// (or http:// for a local proxy)"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::config(format!(
            "{BASE_URL_VARIABLE} must not have a query or a fragment"
        )));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// The Messages API dialect.
#[derive(Debug)]
pub struct Anthropic {
    url: String,
    credential: Credential,
}

impl Anthropic {
    pub fn new(config: Config) -> Anthropic {
        Anthropic {
            url: format!("{}/v1/messages", config.base_url),
            credential: config.credential,
        }
    }
}

/// A provider for the Messages API.
pub fn provider(config: Config, policy: RetryPolicy) -> Result<HttpProvider, Error> {
    let proxy = config.proxy.clone();
    HttpProvider::new(Anthropic::new(config), policy, &proxy)
}

impl Dialect for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn headers(&self, request: &Request<'_>) -> Vec<Header> {
        let mut out = vec![
            Header {
                name: "anthropic-version",
                value: API_VERSION.to_string(),
                sensitive: false,
            },
            Header {
                name: "content-type",
                value: "application/json".to_string(),
                sensitive: false,
            },
            Header {
                name: "accept",
                value: "text/event-stream".to_string(),
                sensitive: false,
            },
        ];
        out.push(match &self.credential {
            Credential::ApiKey(s) => Header {
                name: "x-api-key",
                value: s.expose().to_string(),
                sensitive: true,
            },
            Credential::AuthToken(s) => Header {
                name: "authorization",
                value: format!("Bearer {}", s.expose()),
                sensitive: true,
            },
        });
        let mut betas: Vec<&str> = request.betas.iter().map(String::as_str).collect();
        if request.context_management.is_some() && !betas.contains(&CONTEXT_MANAGEMENT_BETA) {
            betas.push(CONTEXT_MANAGEMENT_BETA);
        }
        if uses_deferred_tools(request) && !betas.contains(&TOOL_SEARCH_BETA) {
            betas.push(TOOL_SEARCH_BETA);
        }
        if !betas.is_empty() {
            out.push(Header {
                name: "anthropic-beta",
                value: betas.join(","),
                sensitive: false,
            });
        }
        out
    }

    fn body(&self, request: &Request<'_>) -> Vec<u8> {
        encode(request)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(Decoder::new())
    }

    fn error_body(&self, body: &[u8]) -> (Option<String>, Option<String>) {
        #[derive(serde::Deserialize)]
        struct Body {
            error: Inner,
        }
        #[derive(serde::Deserialize)]
        struct Inner {
            #[serde(rename = "type")]
            kind: Option<String>,
            message: Option<String>,
        }
        match serde_json::from_slice::<Body>(body) {
            Ok(b) => (b.error.kind, b.error.message),
            Err(_) => (None, None),
        }
    }

    fn secret(&self) -> Option<&Secret> {
        Some(self.credential.secret())
    }
}

/// Does the request send a deferred tool's definition, or a `tool_reference` that loaded one?
fn uses_deferred_tools(request: &Request<'_>) -> bool {
    request.tools.iter().any(|t| t.defer_loading)
        || request.messages.iter().any(|m| {
            m.content.iter().any(|b| {
                matches!(b, crate::conversation::Block::ToolResult(r) if r.references().next().is_some())
            })
        })
}

#[cfg(test)]
mod tests;
