//! JavaScript's string semantics where Claude Code's output depends on them: the whitespace of
//! `\s` and `String.prototype.trim`, and lengths in UTF-16 code units.
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
