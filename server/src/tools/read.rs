//! `Read`: a text file with `cat -n` style line numbers (`{:>6}\t{line}`), from an offset, for a
//! number of lines.
//!
//! The file is streamed, never loaded whole: a 5 GB log can be read at any offset, and one
//! endless line costs at most [`LINE_BYTES_KEPT`] bytes. Lines are cut at [`MAX_LINE_CHARS`]
//! characters, the output at [`MAX_OUTPUT_BYTES`], each cut said in the output. An open file is
//! read from the editor's text. Images, PDFs and files with NUL bytes in their first 8 KB are
//! refused with a message; directories, FIFOs and devices too (`confine::open_read`: no
//! blocking, no link followed, a race is an error).

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::fs::{Kind, ReadError};

use super::input::ReadInput;
use super::paths::Workspace;
use super::{Access, Ctx, Stamp, ToolOutcome, blocking, editor, off_thread};

/// Lines returned when the model gives no `limit`.
pub(crate) const DEFAULT_LINES: u64 = 2000;
/// Characters kept of one line.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Bytes kept of one line while reading (enough for [`MAX_LINE_CHARS`] characters of any UTF-8).
const LINE_BYTES_KEPT: usize = MAX_LINE_CHARS * 4;
/// The whole output's cap (about 25,000 tokens).
pub(crate) const MAX_OUTPUT_BYTES: usize = 100 * 1024;
/// How far past the last line shown the rest is counted, to say how many lines the file has.
const COUNT_AHEAD_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes looked at to decide that a file is binary.
const SNIFF_BYTES: usize = 8192;

const IMAGE_EXTENSIONS: [&str; 10] = [
    "png", "jpg", "jpeg", "gif", "webp", "bmp", "ico", "tiff", "tif", "avif",
];

pub(crate) async fn run(ctx: &Ctx<'_>, i: ReadInput) -> ToolOutcome {
    let r = match ctx.resolve(&i.file_path).await {
        Ok(r) => r,
        Err(out) => return out,
    };
    let offset = i.offset.unwrap_or(1).max(1);
    let limit = i.limit.unwrap_or(DEFAULT_LINES).max(1);
    let out = if let Some((_, text)) = editor::open_text(ctx.editor(), &r.written, &r.real).await {
        let shown = r.written.clone();
        let source = ctx.editor().source();
        let out = blocking(move || match render(text.as_bytes(), offset, limit) {
            Ok(rendered) => rendered.outcome(&shown, Some(source)),
            Err(e) => ToolOutcome::error(
                format!("Cannot read {}: {e}", shown.display()),
                "unreadable",
            ),
        })
        .await;
        if !out.is_error {
            ctx.saw(&r.real, None);
        }
        out
    } else {
        let (real, shown, ws) = (r.real.clone(), r.written.clone(), ctx.workspace().clone());
        // The stamp is taken before reading: a change during the read makes it stale, never
        // hides a change.
        let read = off_thread(move || {
            let stamp = Stamp::of(&real);
            (read_disk(&ws, &real, &shown, offset, limit), stamp)
        })
        .await;
        match read {
            Ok((out, stamp)) => {
                if !out.is_error
                    && let Some(stamp) = stamp
                {
                    ctx.saw(&r.real, Some(stamp));
                }
                out
            }
            Err(m) => ToolOutcome::error(m, "internal error"),
        }
    };
    out.touching(&r, Access::Read)
}

fn read_disk(ws: &Workspace, real: &Path, shown: &Path, offset: u64, limit: u64) -> ToolOutcome {
    if let Some(ext) = real.extension().and_then(|e| e.to_str()) {
        let ext = ext.to_ascii_lowercase();
        if IMAGE_EXTENSIONS.contains(&ext.as_str()) {
            return ToolOutcome::error(
                format!(
                    "{} is an image ({ext}). This Read returns text only and cannot show images.",
                    shown.display()
                ),
                "image refused",
            );
        }
        if ext == "pdf" {
            return ToolOutcome::error(
                format!(
                    "{} is a PDF. This Read returns text only; extract its text with a command (e.g. `pdftotext`) if one is installed.",
                    shown.display()
                ),
                "PDF refused",
            );
        }
    }
    // Opened below the workspace folder's handle, following no link: a path swapped meanwhile
    // is an error, never a file elsewhere (confine.rs).
    let file = match super::confine::open_read(ws, real) {
        Ok(f) => f,
        Err(e) => {
            return match ReadError::from_io(&e) {
                ReadError::NotFound => {
                    ToolOutcome::error(format!("{} does not exist.", shown.display()), "not found")
                }
                ReadError::NotAFile(Kind::Dir) => ToolOutcome::error(
                    format!(
                        "{} is a directory, not a file. Use Glob (pattern `*` with this path) to list it.",
                        shown.display()
                    ),
                    "a directory",
                ),
                ReadError::NotAFile(_) => ToolOutcome::error(
                    format!(
                        "{} is not a regular file (a FIFO, socket or device); it was not read.",
                        shown.display()
                    ),
                    "not a regular file",
                ),
                other => ToolOutcome::error(
                    format!("Cannot read {}: {other}", shown.display()),
                    "unreadable",
                ),
            };
        }
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) => {
            let head = &head[..head.len().min(SNIFF_BYTES)];
            if let Some(at) = memchr::memchr(0, head) {
                return ToolOutcome::error(
                    format!(
                        "{} looks like a binary file (a NUL byte at offset {at}); it was not read. \
                         Inspect it with a command (e.g. `file` or `xxd | head`) if needed.",
                        shown.display()
                    ),
                    "binary refused",
                );
            }
        }
        Err(e) => {
            return ToolOutcome::error(
                format!("Cannot read {}: {e}", shown.display()),
                "unreadable",
            );
        }
    }
    match render(reader, offset, limit) {
        Ok(rendered) => rendered.outcome(shown, None),
        Err(e) => ToolOutcome::error(
            format!("Cannot read {}: {e}", shown.display()),
            "unreadable",
        ),
    }
}

/// What [`render`] produced.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub text: String,
    /// First and last line shown (1-based); `None` when nothing was shown.
    pub shown: Option<(u64, u64)>,
    /// Lines in the file, when known (the end was reached or counted).
    pub total: Option<u64>,
    /// Lines whose text was cut.
    pub cut_lines: u64,
    /// Stopped by [`MAX_OUTPUT_BYTES`] rather than by `limit` or the end.
    pub output_capped: bool,
}

impl Rendered {
    /// `source`: where the text came from when not the disk ("the editor's text, …").
    fn outcome(self, path: &Path, source: Option<&str>) -> ToolOutcome {
        let Some((first, last)) = self.shown else {
            let from = source.map(|s| format!(" ({s})")).unwrap_or_default();
            let content = match self.total {
                Some(0) => format!("{} exists and is empty{from}.", path.display()),
                Some(n) => format!(
                    "{} has {}{from}; there is nothing at line {}.",
                    path.display(),
                    count_lines_text(n),
                    n + 1
                ),
                None => format!("{} has nothing to show{from}.", path.display()),
            };
            return ToolOutcome::ok(content, "nothing to show");
        };
        let mut text = self.text;
        let mut notes = Vec::new();
        if self.cut_lines > 0 {
            notes.push(format!(
                "{} line(s) longer than {MAX_LINE_CHARS} characters were cut",
                self.cut_lines
            ));
        }
        let more = self.total.is_none_or(|t| t > last);
        if self.output_capped {
            notes.push(format!(
                "the output reached its size limit at line {last}; continue with offset={}",
                last + 1
            ));
        } else if more {
            notes.push(match self.total {
                Some(t) => format!(
                    "the file has {}; continue with offset={} to read more",
                    count_lines_text(t),
                    last + 1
                ),
                None => format!(
                    "the file continues past line {last}; continue with offset={}",
                    last + 1
                ),
            });
        }
        if let Some(source) = source {
            notes.push(format!("read from {source}"));
        }
        if !notes.is_empty() {
            text.push_str(&format!("\n({})", notes.join("; ")));
        }
        let summary = match self.total {
            Some(t) => format!("lines {first}–{last} of {t}"),
            None => format!("lines {first}–{last}"),
        };
        ToolOutcome::ok(text, summary)
    }
}

/// "1 line", "2 lines".
pub(crate) fn count_lines_text(n: u64) -> String {
    if n == 1 {
        "1 line".to_string()
    } else {
        format!("{n} lines")
    }
}

/// Lines `offset..offset+limit` (1-based) of `reader`, numbered.
pub(crate) fn render<R: BufRead>(mut reader: R, offset: u64, limit: u64) -> io::Result<Rendered> {
    let mut out = Rendered {
        text: String::new(),
        shown: None,
        total: None,
        cut_lines: 0,
        output_capped: false,
    };
    let mut n: u64 = 0; // lines fully read so far
    let mut line = Vec::new();
    loop {
        line.clear();
        let (read, cut) = read_line(&mut reader, &mut line, n + 1 >= offset)?;
        if read == 0 {
            out.total = Some(n);
            return Ok(out);
        }
        n += 1;
        if n < offset {
            continue;
        }
        if n >= offset.saturating_add(limit) {
            // One line past what was asked: count the rest, within a bound.
            let mut rest = (read > 0) as u64;
            let ended = count_lines(&mut reader, &mut rest)?;
            out.total = ended.then_some(n - 1 + rest);
            return Ok(out);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let text = String::from_utf8_lossy(&line);
        let (kept, was_cut) = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((i, _)) => (&text[..i], true),
            None => (&*text, cut),
        };
        let mut entry = format!("{n:>6}\t{kept}");
        if was_cut {
            out.cut_lines += 1;
            entry.push_str(" [… line cut]");
        }
        entry.push('\n');
        if out.text.len() + entry.len() > MAX_OUTPUT_BYTES && out.shown.is_some() {
            out.output_capped = true;
            let mut rest = 1;
            let ended = count_lines(&mut reader, &mut rest)?;
            out.total = ended.then_some(n - 1 + rest);
            return Ok(out);
        }
        out.text.push_str(&entry);
        out.shown = Some((out.shown.map_or(n, |(f, _)| f), n));
    }
}

/// Reads one line (through its `\n`) into `buf`, keeping at most [`LINE_BYTES_KEPT`] bytes (none
/// when `keep` is false). Returns the bytes consumed and whether some were dropped.
fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    keep: bool,
) -> io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut dropped = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((consumed, dropped));
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if keep {
            let room = LINE_BYTES_KEPT.saturating_sub(buf.len());
            let body = &chunk[..take];
            if body.len() > room {
                buf.extend_from_slice(&body[..room]);
                dropped |= body[room..] != *b"\n" && body[room..] != *b"\r\n";
            } else {
                buf.extend_from_slice(body);
            }
        }
        reader.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, dropped));
        }
    }
}

/// Counts the lines left (adding to `lines`), reading at most [`COUNT_AHEAD_BYTES`]. `true` when
/// the end was reached.
fn count_lines<R: BufRead>(reader: &mut R, lines: &mut u64) -> io::Result<bool> {
    let mut budget = COUNT_AHEAD_BYTES;
    let mut partial = false;
    let mut limited = reader.take(budget);
    loop {
        let chunk = limited.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        *lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        partial = chunk.last() != Some(&b'\n');
        let n = chunk.len();
        limited.consume(n);
        budget -= n as u64;
    }
    if budget == 0 {
        return Ok(false);
    }
    if partial {
        *lines += 1;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, offset: u64, limit: u64) -> Rendered {
        render(text.as_bytes(), offset, limit).unwrap()
    }

    #[test]
    fn numbers_like_cat_n_and_counts_what_is_left() {
        let r = lines("a\r\nb\nc", 1, 2000);
        assert_eq!(r.text, "     1\ta\n     2\tb\n     3\tc\n");
        assert_eq!(r.total, Some(3));
        let r = lines("a\nb\nc\nd\n", 2, 2);
        assert_eq!(r.text, "     2\tb\n     3\tc\n");
        assert_eq!(r.shown, Some((2, 3)));
        assert_eq!(r.total, Some(4));
        let r = lines("a\nb\n", 5, 1);
        assert_eq!(r.shown, None);
        assert_eq!(r.total, Some(2));
        assert_eq!(lines("", 1, 10).total, Some(0));
    }

    #[test]
    fn long_lines_are_cut_and_the_output_is_capped() {
        let long = "é".repeat(MAX_LINE_CHARS * 3);
        let r = lines(&format!("{long}\nshort\n"), 1, 10);
        assert_eq!(r.cut_lines, 1);
        let first = r.text.lines().next().unwrap();
        assert_eq!(first.chars().filter(|c| *c == 'é').count(), MAX_LINE_CHARS);
        assert!(first.ends_with("[… line cut]"));
        assert!(r.text.contains("     2\tshort"));
        let many = "x".repeat(1000) + "\n";
        let r = lines(&many.repeat(1000), 1, 2000);
        assert!(r.output_capped);
        assert!(r.text.len() <= MAX_OUTPUT_BYTES);
        assert_eq!(r.total, Some(1000));
    }
}
