//! When to try again and how long to wait: the retry policy, pure.
//!
//! Retried: 408, 409, 429, every 5xx (529 is Anthropic's "overloaded"), connection failures,
//! streams cut before their end, stalled streams and malformed events (a proxy mangling a
//! stream is the usual cause). An `x-should-retry: true|false` header from the API overrides the
//! status (the official SDKs honour it too). Not retried: the other 4xx (401, 403, 400, 404,
//! 413, …), whose message goes to the user as the API wrote it.
//!
//! Delay before try `n+1` after try `n` failed: `retry-after-ms` or `retry-after` (seconds or an
//! HTTP date) when the response had one, else `min(base · 2^(n-1), max)` plus up to 25% jitter.
//! A `retry-after` longer than `max_retry_after` is not waited out: the turn fails with that
//! figure in the message, and the user decides.

use std::time::Duration;

/// Tries, delays and timeouts of a model client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first one included (at least 1).
    pub max_attempts: u32,
    /// Delay after the first failure; doubles with each try.
    pub base_delay: Duration,
    /// The longest computed delay.
    pub max_delay: Duration,
    /// The longest `retry-after` we wait; a longer one fails the turn.
    pub max_retry_after: Duration,
    /// A response (headers, or the next bytes of a stream) not arriving within this is a stall.
    /// The API sends `ping` events while a long answer is prepared, so a healthy stream is never
    /// silent this long.
    pub idle_timeout: Duration,
    /// Establishing a connection (TCP and TLS).
    pub connect_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(32),
            max_retry_after: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(90),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    /// The computed delay after try `failed` (1-based) failed; `jitter` is uniform in `[0, 1)`.
    pub fn backoff(&self, failed: u32, jitter: f64) -> Duration {
        let exp = failed.saturating_sub(1).min(30);
        let base = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        let extra = base.mul_f64(0.25 * jitter.clamp(0.0, 1.0));
        (base + extra).min(self.max_delay.max(base))
    }
}

/// Whether a status is worth another try, before `x-should-retry` has its say.
pub fn status_is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after` in
/// seconds or as an HTTP date (relative to `now`).
pub fn retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let v = retry_after?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// `x-should-retry` as the API means it.
pub fn should_retry_header(value: Option<&str>) -> Option<bool> {
    match value?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(1, 0.0), Duration::from_millis(500));
        assert_eq!(p.backoff(2, 0.0), Duration::from_millis(1000));
        assert_eq!(p.backoff(3, 0.0), Duration::from_millis(2000));
        assert_eq!(p.backoff(2, 0.999_999).as_millis(), 1249);
        assert_eq!(p.backoff(7, 0.0), Duration::from_secs(32), "capped");
        assert_eq!(
            p.backoff(40, 0.9),
            Duration::from_secs(32),
            "cap holds with jitter"
        );
    }

    #[test]
    fn retry_after_in_every_form() {
        let now = chrono::DateTime::parse_from_rfc3339("2025-07-01T12:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(
            retry_after(None, Some("7"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(None, Some(" 1.5 "), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(Some("250"), Some("7"), now),
            Some(Duration::from_millis(250)),
            "ms wins"
        );
        assert_eq!(
            retry_after(None, Some("Tue, 01 Jul 2025 12:00:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(None, Some("Tue, 01 Jul 2025 11:00:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(None, Some("soon"), now), None);
        assert_eq!(retry_after(None, Some("-3"), now), None);
        assert_eq!(retry_after(None, None, now), None);
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(status_is_retryable(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!status_is_retryable(s), "{s}");
        }
        assert_eq!(should_retry_header(Some("false")), Some(false));
        assert_eq!(should_retry_header(Some("maybe")), None);
    }
}
