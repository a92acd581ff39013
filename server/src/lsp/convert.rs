//! Conversions between LSP types and the core's plain data: positions (UTF-16 or UTF-8 columns
//! against byte columns), URIs and paths, findings and diagnostics.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ls_types::{
    Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range,
    TextDocumentContentChangeEvent, Uri,
};

use crate::features::diagnostics::{Finding, Severity};

/// The text of line `line` (0-based) without its line break; `""` past the end.
pub fn line_str(text: &str, line: usize) -> &str {
    text.split('\n')
        .nth(line)
        .map_or("", |l| l.strip_suffix('\r').unwrap_or(l))
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

/// Byte offset in `text` of a client position, with LSP's line ends: `\n`, `\r\n` and a lone
/// `\r` each end a line.
pub fn offset(text: &str, pos: Position, utf8: bool) -> usize {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut line = 0;
    let mut i = 0;
    while line < pos.line && i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line += 1;
                start = i + 1;
            }
            b'\r' => {
                line += 1;
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if line < pos.line {
        return text.len();
    }
    let end = bytes[start..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(text.len(), |e| start + e);
    start + byte_col(&text[start..end], pos.character, utf8)
}

/// Line starts of a text, for many position conversions in one pass (links, diagnostics): a
/// conversion costs the length of its line, not of the text before it. Lines end at `\n` (the
/// core's numbering).
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Per line: only ASCII (a client column is then the byte column).
    ascii: Vec<bool>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(newline_ends(text));
        let mut idx = LineIndex {
            text,
            starts,
            ascii: Vec::new(),
        };
        idx.ascii = (0..idx.starts.len())
            .map(|l| idx.line(l).is_ascii())
            .collect();
        idx
    }

    /// The text of `line` without its line break; `""` past the end.
    pub fn line(&self, line: usize) -> &'a str {
        let Some(&start) = self.starts.get(line) else {
            return "";
        };
        let end = self.starts.get(line + 1).map_or(self.text.len(), |e| e - 1);
        let l = &self.text[start..end];
        l.strip_suffix('\r').unwrap_or(l)
    }

    /// The client position of (`line`, byte `col`).
    pub fn position(&self, line: usize, col: usize, utf8: bool) -> Position {
        let l = self.line(line);
        let character = if utf8 || self.ascii.get(line).copied().unwrap_or(true) {
            col.min(l.len()) as u32
        } else {
            client_col(l, col, utf8)
        };
        Position {
            line: line as u32,
            character,
        }
    }
}

fn newline_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .map(|(i, _)| i + 1)
}

/// The client position of (`line`, byte `col`) in `text`.
pub fn position(text: &str, line: usize, col: usize, utf8: bool) -> Position {
    Position {
        line: line as u32,
        character: client_col(line_str(text, line), col, utf8),
    }
}

/// Applies incremental (or full) changes in order; returns the new text.
pub fn apply_changes(
    text: &str,
    changes: Vec<TextDocumentContentChangeEvent>,
    utf8: bool,
) -> String {
    let mut out = text.to_string();
    for change in changes {
        match change.range {
            None => out = change.text,
            Some(range) => {
                let start = offset(&out, range.start, utf8);
                let end = offset(&out, range.end, utf8).max(start);
                out.replace_range(start..end, &change.text);
            }
        }
    }
    out
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

/// A finding as a diagnostic on the text `lines` indexes; a finding about the whole file sits
/// on the first line.
pub fn diagnostic(lines: &LineIndex<'_>, f: &Finding, utf8: bool) -> Diagnostic {
    let (line, start, end) = match f.line {
        Some(l) => (l, f.start_col, f.end_col.max(f.start_col)),
        None => (0, 0, lines.line(0).len()),
    };
    let range = Range {
        start: lines.position(line, start, utf8),
        end: lines.position(line, end, utf8),
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
    fn line_index_positions() {
        let text = "ab\r\nc😀d\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line(0), "ab");
        assert_eq!(idx.line(1), "c😀d");
        assert_eq!(idx.line(5), "");
        assert_eq!(idx.position(1, 5, false), Position::new(1, 3));
        assert_eq!(idx.position(1, 5, true), Position::new(1, 5));
        assert_eq!(idx.position(0, 9, false), Position::new(0, 2));
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
        text = apply_changes(
            &text,
            vec![change(1, 5, 1, 8, "2"), change(0, 0, 0, 0, "> ")],
            false,
        );
        assert_eq!(text, "> line one\nline 2\n");
        text = apply_changes(&text, vec![change(9, 0, 12, 3, "end")], false);
        assert_eq!(text, "> line one\nline 2\nend");
        assert_eq!(offset("ab\r\ncd", Position::new(1, 1), false), 5);
        // A lone `\r` ends a line too (LSP 3.17), so the copy does not drift from the editor's.
        assert_eq!(offset("ab\rcd\nef", Position::new(1, 1), false), 4);
        assert_eq!(offset("ab\rcd\nef", Position::new(2, 0), false), 6);
        let t = apply_changes("one\rtwo\rthree", vec![change(1, 0, 1, 3, "2")], false);
        assert_eq!(t, "one\r2\rthree");
    }
}
