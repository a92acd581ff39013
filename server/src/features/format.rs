//! Small text helpers shared by the terminal and the editor: paths for people, URLs, numbers,
//! and the escaping that keeps names and messages from driving a terminal.
//!
//! Invariant: every file name a person reads goes through [`display_path`] (or [`quote_name`]),
//! and every message or reason printed to a terminal through [`escape_text`]. A name holding an
//! escape sequence, a carriage return or a newline must not erase, redraw or split a row.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::Path;

/// A path for people: relative to `base` below it, `~/...` below home, absolute otherwise;
/// quoted as `git status` quotes names when it holds a control character (see [`quote_name`]).
pub fn display_path(path: &Path, base: &Path, home: Option<&Path>) -> String {
    if let Ok(rel) = path.strip_prefix(base)
        && !rel.as_os_str().is_empty()
    {
        return quote_name(rel.as_os_str()).into_owned();
    }
    if let Some(home) = home
        && let Ok(rel) = path.strip_prefix(home)
    {
        let mut shown = OsString::from("~/");
        shown.push(rel.as_os_str());
        return quote_name(&shown).into_owned();
    }
    quote_name(path.as_os_str()).into_owned()
}

/// Characters never printed raw: controls (C0, DEL, C1: ESC starts terminal sequences, CR
/// returns to the start of the row, NEL and LF end it), the Unicode line and paragraph
/// separators, and the bidirectional formatting characters that reorder what follows them.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `git`'s escape for one unsafe character: `\t`, `\n`, ... or the octal of each UTF-8 byte.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\x0b' => out.push_str("\\v"),
        '\x0c' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        _ => {
            for b in c.encode_utf8(&mut [0; 4]).bytes() {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
}

fn os_bytes(name: &OsStr) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Cow::Borrowed(name.as_bytes())
    }
    #[cfg(not(unix))]
    {
        match name.to_string_lossy() {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        }
    }
}

/// `\` is git's escape character, so a name holding one is quoted; on Windows it is the path
/// separator and stays as is (no file name can hold it there).
const QUOTED_BACKSLASH: char = if cfg!(windows) { '\0' } else { '\\' };

/// A file name as `git status` shows it (with `core.quotePath=false`): as is when it is
/// printable UTF-8 without `"` or `\`; otherwise in double quotes, with `\"`, `\\`, C escapes
/// (`\t`, `\n`, `\r`, ...) and the octal of every other unsafe or invalid byte (`\033`, `\377`).
/// So the name is shown exactly, and nothing in it reaches the terminal as a control.
pub fn quote_name(name: &OsStr) -> Cow<'_, str> {
    let bytes = os_bytes(name);
    let plain = match std::str::from_utf8(&bytes) {
        Ok(s) => !s
            .chars()
            .any(|c| is_unsafe(c) || c == '"' || c == QUOTED_BACKSLASH),
        Err(_) => false,
    };
    if plain {
        return name.to_string_lossy();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                QUOTED_BACKSLASH => out.push_str("\\\\"),
                c if is_unsafe(c) => push_escaped(&mut out, c),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\{b:03o}");
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// Free text for a terminal or a markdown table (a finding's message, a reason): every unsafe
/// character escaped as [`quote_name`] escapes it, nothing else changed, no quotes added.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text that is meant to have lines (the model's answer, streamed to a terminal): as
/// [`escape_text`], except that newlines and tabs stay what they are. Escape sequences (`ESC[…`,
/// OSC 52's clipboard write, OSC 0's title), carriage returns, backspaces and bidi overrides
/// are shown as text, so nothing the model writes can move the cursor, erase or rewrite a line.
pub fn escape_stream(text: &str) -> Cow<'_, str> {
    let unsafe_here = |c: char| c != '\n' && c != '\t' && is_unsafe(c);
    if !text.chars().any(unsafe_here) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_here(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `file://` URL of an absolute path (RFC 3986: unreserved characters and `/` kept, the rest
/// percent-encoded).
pub fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for &b in os_bytes(path.as_os_str()).iter() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

pub use crate::context::message::{quoted, thousands};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(167000), "167,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn names_are_quoted_as_git_quotes_them() {
        let q = |s: &str| quote_name(OsStr::new(s)).into_owned();
        assert_eq!(q("CLAUDE.md"), "CLAUDE.md");
        assert_eq!(q("my rules/caf\u{e9}.md"), "my rules/caf\u{e9}.md");
        // ESC[2K and CR: the row-erasing name of the issue.
        assert_eq!(q("x\x1b[2K\rskipped.md"), "\"x\\033[2K\\rskipped.md\"");
        assert_eq!(q("a\nb\tc"), "\"a\\nb\\tc\"");
        assert_eq!(q("say \"hi\"\\x"), "\"say \\\"hi\\\"\\\\x\"");
        // C1 CSI, a right-to-left override, a line separator: octal UTF-8 bytes.
        assert_eq!(q("a\u{9b}b"), "\"a\\302\\233b\"");
        assert_eq!(q("\u{202e}dm.txt"), "\"\\342\\200\\256dm.txt\"");
        assert_eq!(q("a\u{2028}b"), "\"a\\342\\200\\250b\"");
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_are_shown_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let name = OsStr::from_bytes(b"caf\xe9\xff.md");
        assert_eq!(quote_name(name), "\"caf\\351\\377.md\"");
        let path = Path::new(OsStr::from_bytes(b"/w/r\xe9gles/a.md"));
        assert_eq!(
            display_path(path, Path::new("/w"), None),
            "\"r\\351gles/a.md\""
        );
    }

    #[test]
    fn text_escapes_controls_only() {
        assert_eq!(escape_text("plain \"text\" \\ ok"), "plain \"text\" \\ ok");
        assert_eq!(
            escape_text("@x\x1b[2K.md: not found\r\n"),
            "@x\\033[2K.md: not found\\r\\n"
        );
    }

    #[test]
    fn display_paths_escape_control_characters() {
        let home = Path::new("/home/me");
        assert_eq!(
            display_path(
                Path::new("/w/.claude/rules/a\x1b[2K\r.md"),
                Path::new("/w"),
                Some(home)
            ),
            "\".claude/rules/a\\033[2K\\r.md\""
        );
        assert_eq!(
            display_path(Path::new("/home/me/x\ny"), Path::new("/w"), Some(home)),
            "\"~/x\\ny\""
        );
    }

    #[test]
    fn display_paths() {
        let home = Path::new("/home/me");
        assert_eq!(
            display_path(
                Path::new("/home/me/w/CLAUDE.md"),
                Path::new("/home/me/w"),
                Some(home)
            ),
            "CLAUDE.md"
        );
        assert_eq!(
            display_path(
                Path::new("/home/me/.claude/CLAUDE.md"),
                Path::new("/w"),
                Some(home)
            ),
            "~/.claude/CLAUDE.md"
        );
        assert_eq!(
            display_path(Path::new("/etc/x"), Path::new("/w"), Some(home)),
            "/etc/x"
        );
    }
}
