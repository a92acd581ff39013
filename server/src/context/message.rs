//! Helpers for the words of findings and reasons: numbers grouped by thousands, lists shortened
//! with a count, and long values cut with their length, so one finding stays one readable line
//! whatever the input (a rule with 10,000 globs, a 1 MB glob).

use std::fmt::Write as _;

/// At most this many items of a list are written out; the rest is a count.
pub const LIST_SHOWN: usize = 5;
/// A value longer than this many characters is cut, with its length said.
pub const VALUE_SHOWN: usize = 120;

/// `1804` → `1,804`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A value as is, cut after [`VALUE_SHOWN`] characters with `…`.
pub fn cut(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(VALUE_SHOWN) {
        None => value.into(),
        Some((at, _)) => format!("{}…", &value[..at]).into(),
    }
}

/// A value quoted as Rust's `{:?}` quotes it, cut after [`VALUE_SHOWN`] characters with its
/// length: `"src/abcabc…" (1,048,576 characters)`.
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(VALUE_SHOWN) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!(
            "{:?} ({} characters)",
            format!("{}…", &value[..cut]),
            thousands(value.chars().count() as u64)
        ),
    }
}

/// Values quoted ([`quoted`]) and joined with `, `; past [`LIST_SHOWN`], the rest is counted:
/// `"a", "b", "c", "d", "e" and 9,995 more`.
pub fn quote_list<S: AsRef<str>>(values: &[S]) -> String {
    let mut out = values
        .iter()
        .take(LIST_SHOWN)
        .map(|v| quoted(v.as_ref()))
        .collect::<Vec<_>>()
        .join(", ");
    if values.len() > LIST_SHOWN {
        let _ = write!(
            out,
            " and {} more",
            thousands((values.len() - LIST_SHOWN) as u64)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lists_and_long_values() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(quote_list(&["a", "b"]), "\"a\", \"b\"");
        let many: Vec<String> = (0..10_000).map(|i| format!("g{i}")).collect();
        assert_eq!(
            quote_list(&many),
            "\"g0\", \"g1\", \"g2\", \"g3\", \"g4\" and 9,995 more"
        );
        let long = "x".repeat(1 << 20);
        let q = quoted(&long);
        assert!(q.len() < 200, "{q}");
        assert!(q.ends_with("…\" (1,048,576 characters)"), "{q}");
        assert_eq!(quoted("a\"b"), "\"a\\\"b\"");
    }
}
