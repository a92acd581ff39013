//! Conversions between LSP types and the core's plain data: positions (UTF-16 or UTF-8 columns
//! against byte columns), URIs and paths, findings and diagnostics.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range,
    TextDocumentContentChangeEvent, Uri,
};

use crate::context::{Finding, Severity};

/// The text of line `line` (0-based) without its line break; `""` past the end.
pub fn line_str(text: &str, line: usize) -> &str {
    text.split('\n')
        .nth(line)
        .map_or("", |l| l.strip_suffix('\r').unwrap_or(l))
}

/// Byte offset of the start of `line` (clamped to the end of the text).
fn line_start(text: &str, line: usize) -> usize {
    if line == 0 {
        return 0;
    }
    let mut seen = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            seen += 1;
            if seen == line {
                return i + 1;
            }
        }
    }
    text.len()
}

/// A byte column of `line_text` from a client column (UTF-16 units, or bytes when `utf8`),
/// clamped to the line and to a character boundary.
pub fn byte_col(line_text: &str, character: u32, utf8: bool) -> usize {
    let character = character as usize;
    if utf8 {
        let mut c = character.min(line_text.len());
        while !line_text.is_char_boundary(c) {
            c -= 1;
        }
        return c;
    }
    let mut units = 0;
    for (i, ch) in line_text.char_indices() {
        if units >= character {
            return i;
        }
        units += ch.len_utf16();
    }
    line_text.len()
}

/// The client column (UTF-16 units, or bytes when `utf8`) of byte column `col` of `line_text`.
pub fn client_col(line_text: &str, col: usize, utf8: bool) -> u32 {
    let col = col.min(line_text.len());
    if utf8 {
        return col as u32;
    }
    line_text
        .char_indices()
        .take_while(|(i, _)| *i < col)
        .map(|(_, c)| c.len_utf16() as u32)
        .sum()
}

/// Byte offset in `text` of a client position.
pub fn offset(text: &str, pos: Position, utf8: bool) -> usize {
    let start = line_start(text, pos.line as usize);
    let line = line_str(&text[start..], 0);
    start + byte_col(line, pos.character, utf8)
}

/// The client position of (`line`, byte `col`) in `text`.
pub fn position(text: &str, line: usize, col: usize, utf8: bool) -> Position {
    Position {
        line: line as u32,
        character: client_col(line_str(text, line), col, utf8),
    }
}

/// Applies incremental (or full) changes in order.
pub fn apply_changes(text: &mut String, changes: Vec<TextDocumentContentChangeEvent>, utf8: bool) {
    for change in changes {
        match change.range {
            None => *text = change.text,
            Some(range) => {
                let start = offset(text, range.start, utf8);
                let end = offset(text, range.end, utf8).max(start);
                text.replace_range(start..end, &change.text);
            }
        }
    }
}

/// The path of a `file:` URI.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    if !uri.scheme().as_str().eq_ignore_ascii_case("file") {
        return None;
    }
    uri.to_file_path()
        .map(|p| crate::fs::normalize(Path::new("/"), &p))
}

/// Parses a URI string (from custom params); the error is a message for the client.
pub fn parse_uri(s: &str) -> Result<Uri, String> {
    Uri::from_str(s).map_err(|e| format!("not a valid URI: {e}"))
}

pub fn path_to_uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

fn severity(s: Severity) -> DiagnosticSeverity {
    match s {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Information => DiagnosticSeverity::INFORMATION,
        Severity::Hint => DiagnosticSeverity::HINT,
    }
}

/// A finding as a diagnostic on `text`; a finding about the whole file sits on the first line.
pub fn diagnostic(text: &str, f: &Finding, utf8: bool) -> Diagnostic {
    let (line, start, end) = match f.line {
        Some(l) => (l, f.start_col, f.end_col.max(f.start_col)),
        None => (0, 0, line_str(text, 0).len()),
    };
    let range = Range {
        start: position(text, line, start, utf8),
        end: position(text, line, end, utf8),
    };
    Diagnostic {
        range,
        severity: Some(severity(f.severity)),
        code: Some(NumberOrString::String(f.code.clone())),
        source: Some("claude-context".into()),
        message: f.message.clone(),
        ..Diagnostic::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns() {
        let line = "a😀b";
        assert_eq!(byte_col(line, 0, false), 0);
        assert_eq!(byte_col(line, 1, false), 1);
        assert_eq!(byte_col(line, 3, false), 5);
        assert_eq!(byte_col(line, 99, false), 6);
        assert_eq!(client_col(line, 5, false), 3);
        assert_eq!(
            byte_col(line, 3, true),
            1,
            "inside a character: back to its start"
        );
    }

    #[test]
    fn incremental_edits() {
        let mut text = "line one\nline two\n".to_string();
        let change = |sl, sc, el, ec, t: &str| TextDocumentContentChangeEvent {
            range: Some(Range {
                start: Position::new(sl, sc),
                end: Position::new(el, ec),
            }),
            range_length: None,
            text: t.into(),
        };
        apply_changes(
            &mut text,
            vec![change(1, 5, 1, 8, "2"), change(0, 0, 0, 0, "> ")],
            false,
        );
        assert_eq!(text, "> line one\nline 2\n");
        apply_changes(&mut text, vec![change(9, 0, 12, 3, "end")], false);
        assert_eq!(text, "> line one\nline 2\nend");
        assert_eq!(offset("ab\r\ncd", Position::new(1, 1), false), 5);
    }
}
