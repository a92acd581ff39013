//! JavaScript's string semantics where Claude Code's output depends on them: the whitespace of
//! `\s` and `String.prototype.trim`, lengths in UTF-16 code units, and `localeCompare`.
//!
//! Rust's `char::is_whitespace` differs on two characters: it counts U+0085 (NEL), which
//! JavaScript does not, and it misses U+FEFF (the byte order mark), which JavaScript counts.

/// JavaScript's `\s` (and what `trim` removes): WhiteSpace and LineTerminator.
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `String.prototype.trimStart`.
pub fn trim_start(s: &str) -> &str {
    s.trim_start_matches(is_space)
}

/// Is `s` empty or whitespace only, as `s.trim() === ""` says?
pub fn is_blank(s: &str) -> bool {
    s.chars().all(is_space)
}

/// The root collator (CLDR root, tertiary strength, punctuation not ignored): ICU4X's compiled
/// data for the root locale only, no tailoring (`new_root`: the other locales' data is not
/// linked in).
static ROOT_COLLATOR: icu_collator::CollatorBorrowed<'static> =
    icu_collator::CollatorBorrowed::new_root(icu_collator::options::CollatorOptions::default());

/// `a.localeCompare(b)` as Claude Code's runtime computes it (ICU root collation): punctuation
/// and symbols first (`_` `-` `.` `~`), then digits, then letters without regard to case or
/// accents, lower case before upper case and plain before accented on a tie:
/// `_x -y ~t a A aB Ab b B` (class K28, `../shared/spec/skills-mcp.md` section 12). Names
/// the collation finds equal are ordered by code unit, so the order is total.
pub fn locale_compare(a: &str, b: &str) -> std::cmp::Ordering {
    ROOT_COLLATOR
        .compare(a, b)
        .then_with(|| a.encode_utf16().cmp(b.encode_utf16()))
}

/// Length in UTF-16 code units (`s.length`).
pub fn len_utf16(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The first `units` UTF-16 code units of `s` (`s.slice(0, units)`), without a surrogate half:
/// a character that would be cut in two is left out.
pub fn prefix_utf16(s: &str, units: usize) -> &str {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        n += c.len_utf16();
        if n > units {
            return &s[..i];
        }
    }
    s
}

/// Every CRLF and every lone CR becomes LF (what marked's lexer does before anything else).
pub fn normalize_newlines(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\r') {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.replace("\r\n", "\n").replace('\r', "\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Class K28's measured orders (k28a and the spec's second list), and the code-unit order
    /// they replace.
    #[test]
    fn locale_compare_is_the_measured_collation() {
        fn sorted<'a>(names: &[&'a str]) -> Vec<&'a str> {
            let mut v = names.to_vec();
            v.sort_by(|a, b| locale_compare(a, b));
            v
        }
        assert_eq!(
            sorted(&["b", "B", "a", "A", "_x", "-y", "~t", "Ab", "aB"]),
            ["_x", "-y", "~t", "a", "A", "aB", "Ab", "b", "B"]
        );
        assert_eq!(
            sorted(&[
                "Zeta", "alpha", "a.b", "ä-uml", "a-b", "A", "9-num", "10-num", "_under", "Beta"
            ]),
            [
                "_under", "10-num", "9-num", "A", "a-b", "ä-uml", "a.b", "alpha", "Beta", "Zeta"
            ]
        );
        assert_eq!(
            sorted(&["batch2", "batch-tasks:dependabot", "batch"]),
            ["batch", "batch-tasks:dependabot", "batch2"]
        );
        assert_eq!(locale_compare("same", "same"), std::cmp::Ordering::Equal);
    }

    #[test]
    fn trim_is_javascripts() {
        let cases: &[(&str, &str)] = &[
            ("  a  ", "a"),
            ("\u{FEFF}BOM\n", "BOM"),
            ("\u{3000}IDEO\u{A0}", "IDEO"),
            // NEL is not JavaScript whitespace.
            ("\u{85}NEL\u{85}\n", "\u{85}NEL\u{85}"),
            ("\u{2028}x\u{2029}", "x"),
            ("\0x\0", "\0x\0"),
            ("\r\n\t", ""),
        ];
        for (input, want) in cases {
            assert_eq!(trim(input), *want, "{input:?}");
        }
        assert!(is_blank(" \u{FEFF}\n") && !is_blank("\u{85}"));
        assert_eq!(trim_start("\n\n  x\n"), "x\n");
    }

    #[test]
    fn utf16_units() {
        assert_eq!(len_utf16("aü🎉"), 4);
        assert_eq!(prefix_utf16("ab🎉c", 3), "ab");
        assert_eq!(prefix_utf16("ab🎉c", 4), "ab🎉");
        assert_eq!(prefix_utf16("ab", 9), "ab");
    }

    #[test]
    fn newlines() {
        assert_eq!(normalize_newlines("a\r\nb\rc\n"), "a\nb\nc\n");
        assert_eq!(normalize_newlines("\r\r\n"), "\n\n");
    }
}
