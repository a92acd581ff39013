//! Matchers: which hooks of an event apply to a tool call (or a source, a trigger…), as measured
//! (`hooks-agents-styles.md` section 8, h7/matchers):
//!
//! - no `matcher`, `""` and `*` match everything, MCP tools included;
//! - a matcher made only of letters, digits, `_` and `|` is a list of exact names: `Bash` matches
//!   `Bash` only, `Edit|Write` either, `Bas` nothing (not a substring), `bash` nothing
//!   (case-sensitive), `mcp__mini__ping` that one MCP tool;
//! - anything else is a regular expression searched in the name (`^B.*`, `Ba.h`, `mcp__.*`).
//!   Claude Code's are JavaScript's; ours are the `regex` crate's, the same for what matchers are
//!   written with. One that does not compile (a lookaround, an unclosed group) matches nothing,
//!   and `check` says so.

/// A compiled matcher.
#[derive(Clone, Debug)]
pub enum Matcher {
    /// No matcher, `""` or `*`.
    All(Option<String>),
    /// Exact names (`Bash`, `Edit|Write`).
    Names(String, Vec<String>),
    /// A regular expression, searched (not anchored).
    Regex(String, regex::Regex),
    /// A regular expression that does not compile: matches nothing.
    Invalid(String, String),
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Matcher) -> bool {
        self.raw() == other.raw()
    }
}

impl Eq for Matcher {}

/// The most a matcher's regular expression may compile to (a hostile settings file cannot make
/// the server build a huge automaton).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl Matcher {
    /// The matcher of a settings entry (`None`: the entry has no `matcher` key).
    pub fn parse(raw: Option<&str>) -> Matcher {
        let Some(raw) = raw else {
            return Matcher::All(None);
        };
        if raw.is_empty() || raw == "*" {
            return Matcher::All(Some(raw.to_string()));
        }
        if raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'|')
        {
            let names = raw
                .split('|')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            return Matcher::Names(raw.to_string(), names);
        }
        match regex::RegexBuilder::new(raw)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
        {
            Ok(re) => Matcher::Regex(raw.to_string(), re),
            Err(e) => Matcher::Invalid(raw.to_string(), one_line(&e.to_string())),
        }
    }

    /// Does it apply to `subject` (a tool's name, a source, a trigger)?
    pub fn matches(&self, subject: &str) -> bool {
        match self {
            Matcher::All(_) => true,
            Matcher::Names(_, names) => names.iter().any(|n| n == subject),
            Matcher::Regex(_, re) => re.is_match(subject),
            Matcher::Invalid(..) => false,
        }
    }

    /// The matcher as written; `None` when the entry has none.
    pub fn raw(&self) -> Option<&str> {
        match self {
            Matcher::All(raw) => raw.as_deref(),
            Matcher::Names(raw, _) | Matcher::Regex(raw, _) | Matcher::Invalid(raw, _) => Some(raw),
        }
    }

    /// Why it matches nothing, when it does not compile.
    pub fn error(&self) -> Option<&str> {
        match self {
            Matcher::Invalid(_, e) => Some(e),
            _ => None,
        }
    }
}

/// The last line of a regex error (the crate's message spans several lines with a caret).
fn one_line(e: &str) -> String {
    e.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(e)
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// h7/matchers: the tools Bash, Write, Edit, Read and `mcp__mini__ping` against each matcher.
    #[test]
    fn the_measured_matchers() {
        let tools = ["Bash", "Write", "Edit", "Read", "mcp__mini__ping"];
        let fired = |m: Option<&str>| -> Vec<&str> {
            let m = Matcher::parse(m);
            tools.iter().copied().filter(|t| m.matches(t)).collect()
        };
        assert_eq!(fired(Some("Bash")), ["Bash"]);
        assert_eq!(fired(Some("Edit|Write")), ["Write", "Edit"]);
        assert_eq!(fired(Some("^B.*")), ["Bash"]);
        assert_eq!(fired(Some("Ba.h")), ["Bash"]);
        assert_eq!(fired(Some("*")), tools);
        assert_eq!(fired(Some("")), tools);
        assert_eq!(fired(None), tools);
        assert_eq!(fired(Some("mcp__.*")), ["mcp__mini__ping"]);
        assert_eq!(fired(Some("mcp__mini__ping")), ["mcp__mini__ping"]);
        assert_eq!(fired(Some("Read")), ["Read"]);
        assert_eq!(fired(Some("Write")), ["Write"]);
        assert!(fired(Some("bash")).is_empty(), "case-sensitive");
        assert!(fired(Some("Bas")).is_empty(), "a word is an exact name");
    }

    #[test]
    fn a_matcher_that_does_not_compile_matches_nothing_and_says_why() {
        let m = Matcher::parse(Some("(?<=x)Bash"));
        assert!(!m.matches("Bash"));
        assert!(m.error().is_some(), "{m:?}");
        let m = Matcher::parse(Some("Bash("));
        assert!(!m.matches("Bash("));
        assert!(m.error().unwrap().contains("unclosed"), "{:?}", m.error());
        assert_eq!(m.raw(), Some("Bash("));
        assert_eq!(Matcher::parse(None).raw(), None);
    }
}
