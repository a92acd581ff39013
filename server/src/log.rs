//! The one logging choke point: levels, stderr, an optional forwarder (the language server's
//! `window/logMessage`), and redaction so that no line can carry a credential.
//!
//! Use the macros [`error!`](crate::log_error), [`warn!`](crate::log_warn),
//! [`info!`](crate::log_info) and [`debug!`](crate::log_debug); `eprintln!` is for `main`'s own
//! usage errors only.
//!
//! Redaction, applied to every line before it leaves this module:
//! * the value of every [`Secret`] ever made in this process (an API key read through the
//!   [`Host`](crate::host::Host) seam becomes a `Secret`, so it is registered before anyone can
//!   log it), and its transformed forms (base64, hex, reversed: [`crate::scrub`]), is replaced
//!   by `[redacted]`;
//! * anything that looks like an API key is replaced too, known or not: a token starting with
//!   `sk-` (Anthropic's `sk-ant-…`, OpenAI's `sk-…`) of 20 characters or more, and the value after
//!   `x-api-key`, `api_key`, `authorization: Bearer` and similar.
//!
//! Where lines go: under the language server, once the client is attached, to the client only
//! (`window/logMessage`, with their level; editors show stderr as errors), and to stderr only a
//! line the client's queue had no room for. Elsewhere everything at or above the level goes to
//! stderr. The level comes from
//! `CLAUDE_CONTEXT_LOG` (`error`, `warn`, `info`, `debug`; default `info`, `error` under `acp`,
//! whose clients show stderr as errors: `main`).

use std::collections::BTreeSet;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use crate::scrub::Scrubber;

/// How much a line matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

/// Receives every line at or above the level, already redacted (the language server's
/// `window/logMessage`). Must not block.
/// Delivers a line elsewhere; `false` when it could not (the line then goes to stderr).
pub type Forwarder = Arc<dyn Fn(Level, &str) -> bool + Send + Sync>;

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static FORWARD: RwLock<Option<Forwarder>> = RwLock::new(None);
static SECRETS: OnceLock<RwLock<BTreeSet<String>>> = OnceLock::new();
/// The scrubber of every secret registered (rebuilt when one is added).
static SCRUBBER: OnceLock<RwLock<Arc<Scrubber>>> = OnceLock::new();

fn secrets() -> &'static RwLock<BTreeSet<String>> {
    SECRETS.get_or_init(RwLock::default)
}

fn scrubber() -> Arc<Scrubber> {
    SCRUBBER
        .get_or_init(RwLock::default)
        .read()
        .map(|s| s.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
}

/// The scrubber of every secret made in this process ([`Secret`]): the value and the
/// transformed forms `crate::scrub` knows.
pub fn known_secrets() -> Arc<Scrubber> {
    scrubber()
}

/// Sets the level (from `CLAUDE_CONTEXT_LOG`, read through the host seam).
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Is `level` logged at all?
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Routes lines to a forwarder as well (the language server, once it can write); `None` stops.
pub fn set_forwarder(f: Option<Forwarder>) {
    *FORWARD.write().unwrap_or_else(|p| p.into_inner()) = f;
}

/// Logs one line. Prefer the macros.
pub fn log(level: Level, args: fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let line = redact(&args.to_string());
    let forward = FORWARD
        .read()
        .map(|f| f.clone())
        .unwrap_or_else(|p| p.into_inner().clone());
    // With a client attached, its log is the only one (editors show stderr as errors: Neovim
    // logs every stderr line as [ERROR]); stderr only when the line could not be delivered.
    let delivered = forward.as_ref().is_some_and(|f| f(level, &line));
    if !delivered {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "claude-context: [{}] {line}", level.label());
    }
}

/// `error` level: something failed and the user should know.
#[macro_export]
macro_rules! log_error {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Error, format_args!($($t)*)) };
}
/// `warn` level: something was ignored or degraded.
#[macro_export]
macro_rules! log_warn {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Warn, format_args!($($t)*)) };
}
/// `info` level: what the server is doing.
#[macro_export]
macro_rules! log_info {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Info, format_args!($($t)*)) };
}
/// `debug` level: details for a bug report.
#[macro_export]
macro_rules! log_debug {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Debug, format_args!($($t)*)) };
}

/// A credential. Its `Debug` and `Display` never show the value, and its value is redacted from
/// every log line for the life of the process.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        if value.len() >= 4 {
            let mut all = secrets().write().unwrap_or_else(|p| p.into_inner());
            if all.insert(value.clone()) {
                let next = Arc::new(Scrubber::new(all.iter().map(String::as_str)));
                *SCRUBBER
                    .get_or_init(RwLock::default)
                    .write()
                    .unwrap_or_else(|p| p.into_inner()) = next;
            }
        }
        Secret(value)
    }

    /// The value, for the one place that must send it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

const REDACTED: &str = "[redacted]";

/// Does `text` hold the value of a [`Secret`] made in this process (8 bytes or more)? Used to
/// keep a variable holding a key out of a child process's environment, whatever its name.
pub fn holds_secret(text: &str) -> bool {
    secrets()
        .read()
        .map(|known| {
            known
                .iter()
                .any(|s| s.len() >= 8 && text.contains(s.as_str()))
        })
        .unwrap_or(true)
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Replaces known secrets and anything shaped like an API key.
pub fn redact(line: &str) -> String {
    // Values of 8 bytes or more, and their transformed forms, through the one scrubber; shorter
    // registered values (4 to 7 bytes) as they are.
    let mut out = scrubber().scrub(line).into_owned();
    if let Ok(known) = secrets().read() {
        for s in known.iter().filter(|s| s.len() < crate::scrub::MIN_SECRET) {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
    }
    // `sk-…` tokens of 20 characters or more.
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("sk-") {
        let starts_token = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !is_key_char(c));
        let len = rest[i..]
            .char_indices()
            .find(|(_, c)| !is_key_char(*c))
            .map_or(rest.len() - i, |(j, _)| j);
        result.push_str(&rest[..i]);
        if starts_token && len >= 20 {
            result.push_str(REDACTED);
        } else {
            result.push_str(&rest[i..i + len.max(3)]);
        }
        rest = &rest[i + len.max(3)..];
    }
    result.push_str(rest);
    redact_after_names(&result)
}

/// The value after a credential's name: `x-api-key: v`, `api_key=v`, `"apiKey": "v"`,
/// `authorization: Bearer v`.
fn redact_after_names(line: &str) -> String {
    const NAMES: &[&str] = &[
        "x-api-key",
        "api_key",
        "api-key",
        "apikey",
        "authorization",
        "auth_token",
        "password",
    ];
    let lower = line.to_ascii_lowercase();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for name in NAMES {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let mut j = from + i + name.len();
            let bytes = lower.as_bytes();
            // Separators: quotes, spaces, `:` or `=`, then an optional `Bearer `.
            let sep_start = j;
            while j < bytes.len() && matches!(bytes[j], b'"' | b'\'' | b' ' | b':' | b'=') {
                j += 1;
            }
            if j == sep_start || !lower[sep_start..j].contains([':', '=']) {
                from = from + i + name.len();
                continue;
            }
            if lower[j..].starts_with("bearer ") {
                j += "bearer ".len();
            }
            let end = line[j..]
                .char_indices()
                .find(|(_, c)| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}'))
                .map_or(line.len(), |(k, _)| j + k);
            if end > j && line[j..end] != *REDACTED {
                cuts.push((j, end));
            }
            from = end.max(from + i + name.len());
        }
    }
    if cuts.is_empty() {
        return line.to_string();
    }
    cuts.sort_unstable();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (s, e) in cuts {
        if s < at {
            continue;
        }
        out.push_str(&line[at..s]);
        out.push_str(REDACTED);
        at = e;
    }
    out.push_str(&line[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_reach_a_line() {
        let s = Secret::new("my-own-token-1234".into());
        assert_eq!(format!("{s} {s:?}"), "[redacted] Secret([redacted])");
        assert_eq!(
            redact("sent my-own-token-1234 twice: my-own-token-1234"),
            "sent [redacted] twice: [redacted]"
        );
        assert_eq!(
            redact("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wx-yz done"),
            "key [redacted] done"
        );
        assert_eq!(redact("task-sk-1 and sk-short"), "task-sk-1 and sk-short");
        assert_eq!(
            redact("headers: x-api-key: abc123 anthropic-version: 2023-06-01"),
            "headers: x-api-key: [redacted] anthropic-version: 2023-06-01"
        );
        assert_eq!(
            redact(r#"{"apiKey": "zzz", "model": "m"}"#),
            r#"{"apiKey": "[redacted]", "model": "m"}"#
        );
        assert_eq!(
            redact("Authorization: Bearer tok.en-1"),
            "Authorization: Bearer [redacted]"
        );
        assert_eq!(redact("an api_key is needed"), "an api_key is needed");
    }

    #[test]
    fn levels() {
        assert_eq!(Level::parse("WARNING"), Some(Level::Warn));
        assert!(Level::Error < Level::Debug);
    }
}
