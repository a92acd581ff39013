//! A credential that never prints itself.
//!
//! [`Secret`] holds an API key or token. `Debug` and `Display` show `[redacted]`; the value is
//! reachable only through [`Secret::expose`], which the HTTP layer calls to set the header (marked
//! sensitive, so the HTTP stack's own `Debug` hides it too). It has no `Serialize`: it cannot
//! reach a transcript or a settings file by accident. [`Secret::scrub`] removes the value from
//! text that came from elsewhere (an error body echoed by a proxy, say) before anyone sees it.

use std::borrow::Cow;
use std::fmt;

/// An API key or bearer token.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }

    /// `text` with every occurrence of the value replaced by `[redacted]`. Values shorter than
    /// 8 bytes are not scrubbed (they would match ordinary words); no real key is that short.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.len() >= 8 && text.contains(self.0.as_str()) {
            Cow::Owned(text.replace(self.0.as_str(), "[redacted]"))
        } else {
            Cow::Borrowed(text)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("sk-ant-test-0123456789");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(
            format!("{:#?}", Some(&s)),
            "Some(\n    Secret([redacted]),\n)"
        );
        assert_eq!(s.expose(), "sk-ant-test-0123456789");
    }

    #[test]
    fn scrubs_its_value_from_foreign_text() {
        let s = Secret::new("sk-ant-test-0123456789");
        assert_eq!(
            s.scrub("proxy: bad header x-api-key=sk-ant-test-0123456789 (sk-ant-test-0123456789)"),
            "proxy: bad header x-api-key=[redacted] ([redacted])"
        );
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
        assert_eq!(
            Secret::new("abc").scrub("abc abc"),
            "abc abc",
            "too short to scrub safely"
        );
    }
}
