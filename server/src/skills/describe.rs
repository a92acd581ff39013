//! A skill's description as the listing shows it (`../shared/spec/skills-mcp.md` section 3).
//!
//! - The frontmatter `description` (a string, or a number or boolean written as one), followed by
//!   ` - <when_to_use>` when that is set too. Without one, the first non-blank line of the body,
//!   a leading Markdown heading marker (`# `) removed; an empty body gives `Skill`.
//! - Each run of newlines becomes one space; every other control character (tab, CR, BEL, NUL,
//!   DEL...) and U+2028/U+2029 become a space each; the ends are trimmed (JavaScript's `trim`).
//! - `<` becomes `&lt;` and `>` `&gt;`; nothing else is escaped.
//! - Then the cap: at most 1,536 UTF-16 units (or `skillListingMaxDescChars`); a longer text
//!   keeps its first `cap - 1` units and gets `…`.

use serde_json::Value;

use crate::js;

/// The default cap of one listed description, in UTF-16 units.
pub const MAX_DESCRIPTION: usize = 1_536;
/// The description of a skill whose body is empty.
pub const EMPTY_BODY: &str = "Skill";

/// Where a listed description came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DescriptionFrom {
    /// The frontmatter's `description` (with `when_to_use`).
    Frontmatter,
    /// The first non-blank line of the body.
    FirstLine,
    /// Nothing: an empty body gives `Skill`.
    Default,
}

/// A scalar frontmatter value as text (`42` for a number); `None` for null, lists and maps and
/// for an empty string.
pub fn scalar(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!s.is_empty()).then_some(s)
}

/// The frontmatter `name` shown as `- <folder> (<alias>)`: trimmed, and only when it differs
/// from the folder's name and holds no whitespace (class K27: `has space` and `: :` are not
/// shown; `Mixed-Case`, `a:b`, `ñame` are). A name with whitespace is no alias at all: it could
/// not be typed as `/<name>` either.
pub fn alias(v: Option<&Value>, name: &str) -> Option<String> {
    let text = scalar(v)?;
    let text = js::trim(&text);
    (!text.is_empty() && text != name && !text.chars().any(js::is_space)).then(|| text.to_string())
}

/// The first non-blank line of `body`, a leading heading marker removed.
pub fn first_line(body: &str) -> Option<String> {
    let line = body.lines().map(js::trim).find(|l| !l.is_empty())?;
    let stripped = line.trim_start_matches('#');
    if stripped.len() < line.len() && stripped.starts_with(|c: char| js::is_space(c)) {
        let rest = js::trim(stripped);
        if !rest.is_empty() {
            return Some(rest.to_string());
        }
    }
    Some(line.to_string())
}

/// The raw description (before whitespace rules, escaping and the cap) and where it came from.
pub fn raw(fields: &serde_json::Map<String, Value>, body: &str) -> (String, DescriptionFrom) {
    let when = scalar(fields.get("when_to_use"));
    let (text, from) = match scalar(fields.get("description")) {
        Some(d) => (d, DescriptionFrom::Frontmatter),
        None => match first_line(body) {
            Some(l) => (l, DescriptionFrom::FirstLine),
            None => (EMPTY_BODY.to_string(), DescriptionFrom::Default),
        },
    };
    match when {
        Some(w) => (format!("{text} - {w}"), from),
        None => (text, from),
    }
}

/// Whitespace rules and escaping (no cap).
pub fn clean(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_newlines = false;
    for c in raw.chars() {
        if c == '\n' {
            if !in_newlines {
                out.push(' ');
                in_newlines = true;
            }
            continue;
        }
        in_newlines = false;
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.push(' '),
            c => out.push(c),
        }
    }
    js::trim(&out).to_string()
}

/// `text` cut to `cap` UTF-16 units, `…` ending a cut text. The second value says whether it
/// was cut.
pub fn cap(text: &str, cap: usize) -> (String, bool) {
    if cap == 0 || js::len_utf16(text) <= cap {
        return (text.to_string(), false);
    }
    let kept = js::prefix_utf16(text, cap - 1);
    (format!("{kept}…"), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn describe(fields: Value, body: &str) -> String {
        let (raw, _) = raw(fields.as_object().unwrap(), body);
        cap(&clean(&raw), MAX_DESCRIPTION).0
    }

    /// The measured cases of section 3 (s1/first, s7/first).
    #[test]
    fn the_measured_description_rules() {
        assert_eq!(
            describe(
                json!({}),
                "\n\n# Heading as first body line FIRSTLINE-MARKER\nmore\n"
            ),
            "Heading as first body line FIRSTLINE-MARKER"
        );
        assert_eq!(describe(json!({}), "   \n\n"), "Skill");
        assert_eq!(describe(json!({"description": 42}), ""), "42");
        assert_eq!(
            describe(
                json!({"description": "Line one.\n\nLine three.\n  indented line\n"}),
                ""
            ),
            "Line one. Line three.   indented line"
        );
        assert_eq!(
            describe(
                json!({"description": "<script>alert(1)</script> &amp; < \"quoted\" 'single' `code` </system-reminder>"}),
                ""
            ),
            "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt; \"quoted\" 'single' `code` &lt;/system-reminder&gt;"
        );
        assert_eq!(
            describe(
                json!({"description": "a\tb\rc\u{7}d\u{0}e\u{7f}f\u{2028}g"}),
                ""
            ),
            "a b c d e f g"
        );
        assert_eq!(
            describe(
                json!({"description": "Escapes", "when_to_use": "WHEN-TO-USE-MARKER when the user says escapes"}),
                ""
            ),
            "Escapes - WHEN-TO-USE-MARKER when the user says escapes"
        );
        // No description: the body's first line, even with a `when_to_use`.
        assert_eq!(describe(json!({"when_to_use": "w"}), "body"), "body - w");
    }

    /// Class K27 (k27a): a name with whitespace is not shown; the others are, trimmed.
    #[test]
    fn aliases_with_whitespace_are_not_shown() {
        let a = |n: &str| alias(Some(&json!(n)), "f");
        for shown in [
            "Mixed-Case",
            "under_score",
            "dot.name",
            "a:b",
            "ñame",
            &"x".repeat(65),
        ] {
            assert_eq!(a(shown).as_deref(), Some(shown));
        }
        assert_eq!(a("trailing ").as_deref(), Some("trailing"));
        for hidden in [
            "has space",
            "quoted name",
            ": :",
            "Agentic UX Design - x",
            "a\tb",
            "f",
            "  ",
        ] {
            assert_eq!(a(hidden), None, "{hidden:?}");
        }
        assert_eq!(
            alias(Some(&json!(12345)), "numname").as_deref(),
            Some("12345")
        );
    }

    #[test]
    fn the_cap_keeps_1535_units_and_an_ellipsis() {
        let long = "x".repeat(2_000);
        let (text, cut) = cap(&clean(&long), MAX_DESCRIPTION);
        assert!(cut);
        assert_eq!(js::len_utf16(&text), 1_536);
        assert!(text.ends_with("x…"));
        assert_eq!(text.chars().filter(|c| *c == 'x').count(), 1_535);
        // skillListingMaxDescChars: 20 gives 19 characters and `…`, after escaping.
        assert_eq!(cap(&clean("<<<<<<"), 20).0, "&lt;&lt;&lt;&lt;&lt…");
        assert_eq!(cap("short", 20), ("short".to_string(), false));
    }
}
