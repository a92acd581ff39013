//! Which model a session talks to, and the one place a provider is built from it.
//!
//! The configuration is plain data (settings or command-line flags); the environment is read
//! through the [`Host`] seam: `ANTHROPIC_API_KEY` (or the variable `key_variable` names; the
//! key itself is never a setting), `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_BASE_URL`, the proxy
//! variables. A configured base URL takes the place of `ANTHROPIC_BASE_URL`.
//!
//! Build the provider once per configuration ([`build`]) and share it: it holds the HTTP
//! connection pool. The key comes back as a [`Secret`] for the transcript writer to scrub, and is
//! registered with the log's redaction ([`crate::log::Secret`]) before anything can print it.

use std::sync::Arc;
use std::time::Duration;

use crate::host::Host;
use crate::llm::{self, Provider, RetryPolicy, Secret, anthropic, openai};

/// Which API dialect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    #[default]
    Anthropic,
    /// An OpenAI-compatible `/chat/completions` server (local models).
    OpenAi,
}

impl ProviderKind {
    pub fn parse(s: &str) -> Option<ProviderKind> {
        match s {
            "anthropic" => Some(ProviderKind::Anthropic),
            "openai" | "openai-compatible" => Some(ProviderKind::OpenAi),
            _ => None,
        }
    }
}

/// The model side of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    pub provider: ProviderKind,
    /// The model id sent with every request (and named in the environment section).
    pub model: String,
    pub max_tokens: u32,
    /// Overrides `ANTHROPIC_BASE_URL` (Anthropic); the server's URL up to the version path
    /// (OpenAI-compatible, where it is required unless `OPENAI_BASE_URL` is set).
    pub base_url: Option<String>,
    /// The environment variable holding the key, when not the default one.
    pub key_variable: Option<String>,
    /// Attempts per request, first included.
    pub max_tries: u32,
    /// A stream silent this long is a stall (retried).
    pub idle_timeout: Duration,
    /// The shortest time between two delta events of one block (`chat.deltaIntervalMs`): the
    /// pieces that arrive meanwhile are joined. Zero: each piece goes out as it arrives.
    pub delta_interval: Duration,
}

/// Default output budget of a turn.
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;

impl Default for ModelConfig {
    fn default() -> ModelConfig {
        let policy = RetryPolicy::default();
        ModelConfig {
            provider: ProviderKind::Anthropic,
            model: crate::assembly::DEFAULT_MODEL.to_string(),
            max_tokens: DEFAULT_MAX_TOKENS,
            base_url: None,
            key_variable: None,
            max_tries: policy.max_attempts,
            idle_timeout: policy.idle_timeout,
            delta_interval: Duration::ZERO,
        }
    }
}

/// A provider ready to stream, and the credential to keep out of transcripts.
#[derive(Clone)]
pub struct Model {
    pub provider: Arc<dyn Provider>,
    pub config: ModelConfig,
    pub secret: Option<Secret>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("provider", &self.provider.name())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Builds the provider for `config`. The error says what to set (never a value).
pub fn build(host: &Host, config: &ModelConfig) -> Result<Model, llm::Error> {
    let policy = RetryPolicy {
        max_attempts: config.max_tries.max(1),
        idle_timeout: config.idle_timeout,
        ..RetryPolicy::default()
    };
    let base_url = config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    if let Some(u) = base_url {
        clear_text_refused(u)?;
    }
    let get = |k: &str| -> Option<String> {
        if k == anthropic::BASE_URL_VARIABLE
            && let Some(u) = base_url
        {
            return Some(u.to_string());
        }
        host.var(k).map(str::to_string)
    };
    let (provider, secret): (Arc<dyn Provider>, Option<Secret>) = match config.provider {
        ProviderKind::Anthropic => {
            let c = anthropic::Config::from_env(get, config.key_variable.as_deref())?;
            let secret = c.credential.secret().clone();
            (Arc::new(anthropic::provider(c, policy)?), Some(secret))
        }
        ProviderKind::OpenAi => {
            let url = base_url
                .map(str::to_string)
                .or_else(|| host.var("OPENAI_BASE_URL").map(str::to_string))
                .ok_or_else(|| {
                    llm::Error::config(
                        "the OpenAI-compatible provider needs a base URL (setting chat.baseUrl, or OPENAI_BASE_URL), e.g. http://localhost:11434/v1",
                    )
                })?;
            let var = config
                .key_variable
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .unwrap_or("OPENAI_API_KEY");
            let key = host.var(var).map(|k| Secret::new(k.trim()));
            let c = openai::Config {
                base_url: url,
                api_key: key.clone(),
                proxy: llm::Proxy::from_env(|k| host.var(k).map(str::to_string)),
            };
            (Arc::new(openai::provider(c, policy)?), key)
        }
    };
    if let Some(s) = &secret {
        // Registers the value with the log's redaction for the life of the process.
        let _ = crate::log::Secret::new(s.expose().to_string());
    }
    Ok(Model {
        provider,
        config: config.clone(),
        secret,
    })
}

/// A configured base URL (the `chat.baseUrl` setting, which a cloned repository's editor
/// settings can hold) gets the key with every request: plain `http:` only to this machine
/// (`localhost`, `127.0.0.0/8`, `::1`), where a local model server listens; anything else must
/// be `https:`.
fn clear_text_refused(url: &str) -> Result<(), llm::Error> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://") else {
        return Ok(());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        return Ok(());
    }
    Err(llm::Error::config(format!(
        "chat.baseUrl {url:?} is plain http to another machine: the key would travel in clear \
         text. Use https://, or http:// to this machine only (localhost, 127.0.0.1)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn host(vars: &[(&str, &str)]) -> Host {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Host::from_vars(
            vars,
            PathBuf::from("/"),
            "linux".into(),
            "Linux".into(),
            crate::host::Clock::Fixed("2026-01-01".into()),
        )
    }

    #[test]
    fn a_missing_key_says_what_to_set_and_a_key_in_the_setting_is_refused() {
        let e = build(&host(&[]), &ModelConfig::default()).unwrap_err();
        assert!(e.message.contains("ANTHROPIC_API_KEY"), "{e}");
        let cfg = ModelConfig {
            key_variable: Some("sk-ant-api03-abcdefabcdefabcdef".into()),
            ..ModelConfig::default()
        };
        let e = build(&host(&[("ANTHROPIC_API_KEY", "k-123456789")]), &cfg).unwrap_err();
        assert!(e.message.contains("not hold the key"), "{e}");
        assert!(!e.to_string().contains("abcdefabcdef"));
    }

    #[test]
    fn the_named_variable_and_the_configured_url_are_used() {
        let cfg = ModelConfig {
            key_variable: Some("MY_KEY".into()),
            base_url: Some("http://127.0.0.1:9".into()),
            ..ModelConfig::default()
        };
        let m = build(&host(&[("MY_KEY", "key-value-12345")]), &cfg).unwrap();
        assert_eq!(m.secret.unwrap().expose(), "key-value-12345");
        assert_eq!(m.provider.name(), "anthropic");
        let e = build(
            &host(&[("ANTHROPIC_API_KEY", "key-value-12345")]),
            &ModelConfig {
                base_url: Some("ftp://x".into()),
                ..ModelConfig::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("https://"), "{e}");
        // Plain http carries the key in clear: to this machine only.
        for url in [
            "http://evil.example.com",
            "http://10.0.0.5:8080/v1",
            "http://127.0.0.1.evil.com",
        ] {
            let e = build(
                &host(&[("ANTHROPIC_API_KEY", "key-value-12345")]),
                &ModelConfig {
                    base_url: Some(url.into()),
                    ..ModelConfig::default()
                },
            )
            .unwrap_err();
            assert!(e.message.contains("clear text"), "{url}: {e}");
        }
        for url in [
            "http://localhost:11434",
            "http://127.0.0.1:9",
            "http://[::1]:8080",
            "https://proxy.example.com",
        ] {
            let m = build(
                &host(&[("ANTHROPIC_API_KEY", "key-value-12345")]),
                &ModelConfig {
                    base_url: Some(url.into()),
                    ..ModelConfig::default()
                },
            );
            assert!(m.is_ok(), "{url}");
        }
        let e = build(
            &host(&[]),
            &ModelConfig {
                provider: ProviderKind::OpenAi,
                ..ModelConfig::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("base URL"), "{e}");
    }
}
