//! The editor seam: what an open file's unsaved text is, and how an edit lands in its buffer.
//!
//! The LSP layer implements [`Editor`] over its open documents and `workspace/applyEdit`, the ACP
//! agent over `fs/read_text_file` and `fs/write_text_file`; the CLI uses [`DiskOnly`]. Edits are byte ranges into the text [`Editor::open_text`] returned
//! (`BufferEdit::base`); [`position`] turns an offset into an LSP-style line and UTF-16 column,
//! so the implementation can build its `TextEdit`s and check the buffer did not change since.

use std::ops::Range;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

/// One replacement in a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    /// Byte offsets into [`BufferEdit::base`].
    pub range: Range<usize>,
    pub new_text: String,
}

/// Edits to one open document, against the text the tool saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferEdit {
    /// The path under which [`Editor::open_text`] answered.
    pub path: PathBuf,
    /// The buffer text the edits were computed on. An implementation should refuse (return an
    /// error) when the buffer no longer has this text, rather than apply offsets to other text.
    pub base: String,
    /// Sorted, not overlapping.
    pub edits: Vec<TextEdit>,
    /// A label for the editor's undo entry ("Claude: Edit main.rs").
    pub label: String,
}

/// `base` with `edits` (sorted, not overlapping) applied.
pub fn apply_edits(base: &str, edits: &[TextEdit]) -> String {
    let mut out = String::with_capacity(base.len());
    let mut at = 0;
    for e in edits {
        out.push_str(&base[at..e.range.start]);
        out.push_str(&e.new_text);
        at = e.range.end;
    }
    out.push_str(&base[at..]);
    out
}

/// An editor that may hold files open with unsaved text.
pub trait Editor: Send + Sync {
    /// The unsaved text of `path` when it is open, else `None`. Called with the path as written
    /// and, when it differs, with its real path. It may ask the editor (ACP's
    /// `fs/read_text_file`), hence a future; a cancelled tool call drops it.
    fn open_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>>;
    /// What a text [`Editor::open_text`] gave is, in the words a tool result uses ("read from
    /// …"): only what this editor promises (an ACP client's `fs/read_text_file` answer is the
    /// client's text, which some clients read from the disk).
    fn source(&self) -> &'static str {
        "the editor's text, with unsaved changes"
    }
    /// Can edits be applied to open buffers (`workspace/applyEdit` supported)?
    fn can_apply_edits(&self) -> bool;
    /// Applies the edits to the open buffer. `Err` is a reason for the model ("the editor
    /// refused the edit: …"); the disk is not written either way. Once it returns `Ok`,
    /// [`Editor::open_text`] answers the edited text (the editor may report its change later).
    fn apply_edit(&self, edit: BufferEdit) -> BoxFuture<'_, Result<(), String>>;
}

/// No editor: everything is on disk (the CLI).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskOnly;

impl Editor for DiskOnly {
    fn open_text<'a>(&'a self, _path: &'a Path) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    fn can_apply_edits(&self) -> bool {
        false
    }

    fn apply_edit(&self, _edit: BufferEdit) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Err("no editor is attached".to_string()) })
    }
}

/// A line (0-based) and a column in UTF-16 code units (LSP's default encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

/// The position of byte `offset` in `text` (clamped to the text; a `\r\n` ends a line at its
/// `\n`, a lone `\r` too, as LSP counts). For many offsets of one text, use [`Positions`].
pub fn position(text: &str, offset: usize) -> Position {
    Positions::new(text).at(offset).0
}

/// Positions of increasing offsets in one text, in one pass: each call scans only from the
/// previous offset (an edit with 200,000 replacements costs one scan of the buffer, not one per
/// replacement). A smaller offset than the last starts again from the beginning.
pub struct Positions<'a> {
    text: &'a str,
    /// Byte offset reached, the line there, where that line starts, and its UTF-16 column.
    at: usize,
    line: u32,
    start: usize,
    units: u32,
}

impl<'a> Positions<'a> {
    pub fn new(text: &'a str) -> Positions<'a> {
        Positions {
            text,
            at: 0,
            line: 0,
            start: 0,
            units: 0,
        }
    }

    /// The position of byte `offset` (clamped back to a character boundary), and its column in
    /// bytes (for clients that negotiated UTF-8 positions).
    pub fn at(&mut self, offset: usize) -> (Position, u32) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.at {
            *self = Positions::new(self.text);
        }
        let bytes = self.text.as_bytes();
        for i in self.at..offset {
            let b = bytes[i];
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                self.line += 1;
                self.start = i + 1;
                self.units = 0;
            } else if b & 0xC0 != 0x80 {
                // A character starts here: one UTF-16 unit, two beyond the BMP.
                self.units += if b >= 0xF0 { 2 } else { 1 };
            }
        }
        self.at = offset;
        (
            Position {
                line: self.line,
                character: self.units,
            },
            (offset - self.start) as u32,
        )
    }
}

/// The editor's text for a resolved path: tried under the written path, then the real one.
pub(crate) async fn open_text(
    editor: &dyn Editor,
    written: &Path,
    real: &Path,
) -> Option<(PathBuf, String)> {
    if let Some(t) = editor.open_text(written).await {
        return Some((written.to_path_buf(), t));
    }
    if real != written
        && let Some(t) = editor.open_text(real).await
    {
        return Some((real.to_path_buf(), t));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_and_lsp_line_ends() {
        let t = "a\r\nb\rcé😀d\n";
        assert_eq!(
            position(t, 0),
            Position {
                line: 0,
                character: 0
            }
        );
        assert_eq!(
            position(t, 3),
            Position {
                line: 1,
                character: 0
            }
        );
        assert_eq!(
            position(t, 5),
            Position {
                line: 2,
                character: 0
            }
        );
        // after "cé😀": 1 + 1 + 2 UTF-16 units
        let d = t.find('d').unwrap();
        assert_eq!(
            position(t, d),
            Position {
                line: 2,
                character: 4
            }
        );
        // inside a character: clamped back to its start; past the end: the end
        assert_eq!(
            position(t, 7),
            Position {
                line: 2,
                character: 1
            }
        );
        assert_eq!(
            position(t, 999),
            Position {
                line: 3,
                character: 0
            }
        );
    }
}
