//! `Write` and `Edit`: through the editor's buffer when the file is open there and the editor
//! can apply edits (the disk is untouched until the user saves), otherwise on disk, atomically
//! and confined (`confine::replace`: a temporary file in the same folder, fsynced, renamed over
//! the file, every step below the workspace folder's handle without following links; the file's
//! permissions kept; a file with several hard links is replaced, never written through, so a
//! link whose other name is outside the workspace keeps its content).
//!
//! An editor that cannot apply edits to its buffers holding the file open with unsaved changes:
//! the Write or Edit is refused (writing the disk under the buffer would lose one or the other).
//!
//! An Edit is checked before the user is asked (no prompt for an edit that cannot apply), and
//! computed again on the text as it is after the answer, so a file changed meanwhile is never
//! overwritten with a stale copy. Files that are not valid UTF-8 are refused: rewriting them
//! would corrupt them.

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use super::editor::{self, BufferEdit, TextEdit};
use super::input::{EditInput, WriteInput};
use super::paths::{Resolved, Workspace};
use super::read::{self};
use super::{Access, Ctx, Stamp, ToolOutcome, off_thread};
use crate::permissions::{Access as Change, Action};

/// Files larger than this are not edited (a text file this big is generated, not written), and
/// no edit makes a file larger than this.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// The most occurrences one `replace_all` replaces (each is an edit in the editor's buffer).
const MAX_REPLACEMENTS: usize = 100_000;
/// Lines of the result shown around an edit.
const SNIPPET_CONTEXT: usize = 3;
const SNIPPET_MAX_LINES: usize = 30;

/// Where the current text came from.
enum Source {
    /// Open in the editor (which can apply edits), under this path.
    Buffer(PathBuf, String),
    /// On disk (`None`: the file does not exist).
    Disk(Option<String>),
}

impl Source {
    fn text(&self) -> Option<&str> {
        match self {
            Source::Buffer(_, t) => Some(t),
            Source::Disk(t) => t.as_deref(),
        }
    }
}

async fn current(ctx: &Ctx<'_>, r: &Resolved) -> Result<Source, ToolOutcome> {
    let ed = ctx.editor();
    if ed.can_apply_edits()
        && let Some((path, text)) = editor::open_text(ed, &r.written, &r.real).await
    {
        return Ok(Source::Buffer(path, text));
    }
    let (real, shown, ws) = (r.real.clone(), r.written.clone(), ctx.workspace().clone());
    match off_thread(move || disk_text(&ws, &real, &shown)).await {
        Ok(Ok(text)) => Ok(Source::Disk(text)),
        Ok(Err(m)) | Err(m) => Err(ToolOutcome::error(m, "unreadable")),
    }
}

/// An editor that cannot apply edits to its buffers (no `workspace/applyEdit`) holding the file
/// open with unsaved changes: writing the disk would put the file under the user's buffer (and
/// the user's next save would undo the change). Refused, with why; nothing is written.
async fn unsaved_elsewhere(ctx: &Ctx<'_>, r: &Resolved) -> Result<(), ToolOutcome> {
    let ed = ctx.editor();
    if ed.can_apply_edits() {
        return Ok(());
    }
    let Some((_, buffer)) = editor::open_text(ed, &r.written, &r.real).await else {
        return Ok(());
    };
    let (real, shown, ws) = (r.real.clone(), r.written.clone(), ctx.workspace().clone());
    let disk = off_thread(move || disk_text(&ws, &real, &shown)).await;
    if matches!(&disk, Ok(Ok(Some(d))) if *d == buffer) {
        return Ok(());
    }
    Err(ToolOutcome::error(
        format!(
            "{} is open in the editor with unsaved changes, and this editor cannot apply changes \
             to its buffers: writing the file would put it under the user's unsaved text. Nothing \
             was changed. Ask the user to save (or close) it first, then try again.",
            r.written.display()
        ),
        "unsaved in the editor",
    ))
}

/// The file's text on disk, `None` when it does not exist. `Err`: a message for the model.
fn disk_text(ws: &Workspace, real: &Path, shown: &Path) -> Result<Option<String>, String> {
    match std::fs::symlink_metadata(real) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Cannot read {}: {e}", shown.display())),
        Ok(m) if m.is_dir() => return Err(format!("{} is a directory.", shown.display())),
        Ok(m) if m.len() > MAX_EDIT_BYTES => {
            return Err(format!(
                "{} is too large to edit ({}); change it with a command instead.",
                shown.display(),
                crate::fs::human_bytes(m.len())
            ));
        }
        Ok(_) => {}
    }
    let unreadable = |e: io::Error| {
        format!(
            "Cannot read {}: {}",
            shown.display(),
            crate::fs::ReadError::from_io(&e)
        )
    };
    let mut bytes = Vec::new();
    super::confine::open_read(ws, real)
        .and_then(|f| f.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(format!(
            "{} is too large to edit; change it with a command instead.",
            shown.display()
        ));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        format!(
            "{} is not valid UTF-8 text; it was not changed (rewriting it would corrupt it).",
            shown.display()
        )
    })
}

pub(crate) async fn write(ctx: &Ctx<'_>, i: WriteInput) -> ToolOutcome {
    let r = match super::paths::resolve(ctx.workspace(), &i.file_path) {
        Ok(r) => r,
        Err(m) => return ToolOutcome::error(m, "bad path"),
    };
    // Rules and the mode first: a refused Write reads nothing.
    let action = ctx.file_action(&r, Change::Write, false);
    if let Action::Refuse(refusal) = action {
        return ToolOutcome::refused(refusal.text, refusal.summary);
    }
    if r.real.is_dir() {
        return ToolOutcome::error(
            format!(
                "{} is a directory; Write needs a file path.",
                r.written.display()
            ),
            "a directory",
        );
    }
    if let Err(out) = unsaved_elsewhere(ctx, &r).await {
        return out;
    }
    let lines = i.content.lines().count();
    // Checked before asking (no prompt for a Write that would be refused), and again after.
    if r.inside
        && let Err(out) = seen_as_is(ctx, &r, current(ctx, &r).await.ok().as_ref())
    {
        return out;
    }
    let n_lines = read::count_lines_text(lines as u64);
    let summary = format!("Write {} ({n_lines})", r.written.display());
    if let Err(out) = ctx.carry_file(action, &r, Some(summary)).await {
        return out;
    }
    if let Err(out) = unsaved_elsewhere(ctx, &r).await {
        return out;
    }
    let source = current(ctx, &r).await.ok();
    if let Err(out) = seen_as_is(ctx, &r, source.as_ref()) {
        return out;
    }
    // Nothing there (checked just above): a new file.
    let source = source.unwrap_or(Source::Disk(None));
    let existed = source.text().is_some();
    let out = match source {
        Source::Buffer(path, base) => {
            let edits = minimal_edit(&base, &i.content).into_iter().collect();
            let label = format!("Claude: Write {}", file_name(&r.written));
            match ctx
                .editor()
                .apply_edit(BufferEdit {
                    path,
                    base,
                    edits,
                    label,
                })
                .await
            {
                Ok(()) => ToolOutcome::ok_seen(
                    ctx,
                    &r,
                    format!(
                        "Wrote {n_lines} to {} in the editor's buffer. {UNSAVED}",
                        r.written.display()
                    ),
                    format!("{n_lines}, in the editor"),
                ),
                Err(why) => editor_refused(&r, &why),
            }
        }
        Source::Disk(_) => {
            let (real, shown, content) = (r.real.clone(), r.written.clone(), i.content);
            let ws = ctx.workspace().clone();
            write_disk(ctx, &r, move || {
                match super::confine::replace(&ws, &real, content.as_bytes()) {
                    Ok(()) => ToolOutcome::ok(
                        format!(
                            "{} {} ({n_lines}).",
                            if existed { "Replaced" } else { "Created" },
                            shown.display()
                        ),
                        format!("{n_lines} written"),
                    ),
                    Err(e) => ToolOutcome::error(
                        format!(
                            "Could not write {}: {e}. Nothing was changed.",
                            shown.display()
                        ),
                        "write failed",
                    ),
                }
            })
            .await
        }
    };
    if out.is_error {
        out
    } else {
        out.touching(&r, Access::Write)
    }
}

impl ToolOutcome {
    /// A change made in the editor's buffer: the model has seen the result.
    fn ok_seen(ctx: &Ctx<'_>, r: &Resolved, content: String, summary: String) -> ToolOutcome {
        ctx.saw(&r.real, None);
        ToolOutcome::ok(content, summary)
    }
}

/// Runs a disk write off the async thread; on success the model has seen the file as written.
async fn write_disk<F>(ctx: &Ctx<'_>, r: &Resolved, f: F) -> ToolOutcome
where
    F: FnOnce() -> ToolOutcome + Send + 'static,
{
    let real = r.real.clone();
    match off_thread(move || {
        let out = f();
        let stamp = (!out.is_error).then(|| Stamp::of(&real)).flatten();
        (out, stamp)
    })
    .await
    {
        Ok((out, stamp)) => {
            if let Some(stamp) = stamp {
                ctx.saw(&r.real, Some(stamp));
            }
            out
        }
        Err(m) => ToolOutcome::error(m, "internal error"),
    }
}

/// A Write replaces a whole file: an existing file must have been seen in this session (Read,
/// or written), and must not have changed on disk since, or the user's work could be lost
/// without anyone having looked at it. `source` is `None` when the file cannot be read as text
/// (binary, not UTF-8, over 64 MB): Read cannot show such a file, so the model cannot have
/// seen it, and Write refuses to replace it (a command the user approves can).
fn seen_as_is(ctx: &Ctx<'_>, r: &Resolved, source: Option<&Source>) -> Result<(), ToolOutcome> {
    let exists = match source {
        None if std::fs::symlink_metadata(&r.real).is_ok() => {
            return Err(ToolOutcome::error(
                format!(
                    "{} exists and cannot be read as text (binary, not UTF-8, or too large), so \
                     it cannot have been read first; Write would replace it unseen. Nothing was \
                     changed. If it must be replaced, do it with a command (Bash), which the user \
                     sees and approves.",
                    r.written.display()
                ),
                "not read first",
            ));
        }
        None | Some(Source::Disk(None)) => return Ok(()),
        Some(Source::Disk(Some(_))) => true,
        Some(Source::Buffer(..)) => false,
    };
    match ctx.seen(&r.real) {
        None => Err(ToolOutcome::error(
            format!(
                "{} already exists and has not been read in this session. Read it first (Write \
                 replaces all of it), or change part of it with Edit. Nothing was changed.",
                r.written.display()
            ),
            "not read first",
        )),
        Some(Some(stamp)) if exists && Stamp::of(&r.real) != Some(stamp) => {
            Err(ToolOutcome::error(
                format!(
                    "{} changed on disk since you last read it (the user or a program changed it). \
                 Read it again before replacing it. Nothing was changed.",
                    r.written.display()
                ),
                "changed since read",
            ))
        }
        Some(_) => Ok(()),
    }
}

const UNSAVED: &str = "The change is in the editor's buffer and not saved yet: commands run with \
Bash see the file on disk as it was until the user saves.";

fn editor_refused(r: &Resolved, why: &str) -> ToolOutcome {
    ToolOutcome::error(
        format!(
            "The editor did not apply the change to {}: {why}. Nothing was changed.",
            r.written.display()
        ),
        "the editor refused",
    )
}

pub(crate) async fn edit(ctx: &Ctx<'_>, i: EditInput) -> ToolOutcome {
    if i.old_string == i.new_string {
        return ToolOutcome::error(
            "old_string and new_string are the same; there is nothing to change.",
            "no change",
        );
    }
    if i.old_string.is_empty() {
        return ToolOutcome::error(
            "old_string is empty. Give the exact text to replace, or use Write to create or \
             replace a whole file.",
            "empty old_string",
        );
    }
    let r = match super::paths::resolve(ctx.workspace(), &i.file_path) {
        Ok(r) => r,
        Err(m) => return ToolOutcome::error(m, "bad path"),
    };
    // Rules and the mode first: a refused Edit reads nothing.
    let action = ctx.file_action(&r, Change::Edit, false);
    if let Action::Refuse(refusal) = action {
        return ToolOutcome::refused(refusal.text, refusal.summary);
    }
    if let Err(out) = unsaved_elsewhere(ctx, &r).await {
        return out;
    }
    // Checked before asking (when the path may be read at all): no prompt for an edit that fails.
    if r.inside {
        match current(ctx, &r).await {
            Ok(src) => {
                if let Err(out) = plan(&r, src.text(), &i) {
                    return out;
                }
            }
            Err(out) => return out,
        }
    }
    let summary = format!("Edit {}", r.written.display());
    if let Err(out) = ctx.carry_file(action, &r, Some(summary)).await {
        return out;
    }
    // Again after the answer: the user may have typed while the prompt was open.
    if let Err(out) = unsaved_elsewhere(ctx, &r).await {
        return out;
    }
    let src = match current(ctx, &r).await {
        Ok(s) => s,
        Err(out) => return out,
    };
    let edits = match plan(&r, src.text(), &i) {
        Ok(e) => e,
        Err(out) => return out,
    };
    let base = src.text().unwrap_or_default().to_string();
    let after = apply(&base, &edits);
    let n = edits.len();
    let first_line = base[..edits[0].range.start].matches('\n').count() + 1;
    let changed_lines = i.new_string.matches('\n').count() + 1;
    let snippet_of = |text: &str| snippet(text, first_line, changed_lines);
    let snippet = snippet_of(&after);
    let what = if n == 1 {
        format!("replaced 1 occurrence at line {first_line}")
    } else {
        format!("replaced {n} occurrences, the first at line {first_line}")
    };
    let out = match src {
        Source::Buffer(path, base) => {
            let label = format!("Claude: Edit {}", file_name(&r.written));
            match ctx
                .editor()
                .apply_edit(BufferEdit {
                    path: path.clone(),
                    base,
                    edits,
                    label,
                })
                .await
            {
                Ok(()) => {
                    // The buffer as it is now (the user may have typed meanwhile).
                    let snippet = match ctx.editor().open_text(&path).await {
                        Some(now) if now != after => snippet_of(&now),
                        _ => snippet,
                    };
                    ToolOutcome::ok_seen(
                        ctx,
                        &r,
                        format!(
                            "Edited {} in the editor's buffer: {what}. {UNSAVED}\n{snippet}",
                            r.written.display()
                        ),
                        format!("{what}, in the editor"),
                    )
                }
                Err(why) => editor_refused(&r, &why),
            }
        }
        Source::Disk(_) => {
            let (real, shown) = (r.real.clone(), r.written.clone());
            let ws = ctx.workspace().clone();
            write_disk(ctx, &r, move || {
                match super::confine::replace(&ws, &real, after.as_bytes()) {
                    Ok(()) => ToolOutcome::ok(
                        format!("Edited {}: {what}.\n{snippet}", shown.display()),
                        what,
                    ),
                    Err(e) => ToolOutcome::error(
                        format!(
                            "Could not write {}: {e}. Nothing was changed.",
                            shown.display()
                        ),
                        "write failed",
                    ),
                }
            })
            .await
        }
    };
    if out.is_error {
        out
    } else {
        out.touching(&r, Access::Write)
    }
}

/// The replacements an Edit makes in `text`, or the error for the model.
fn plan(r: &Resolved, text: Option<&str>, i: &EditInput) -> Result<Vec<TextEdit>, ToolOutcome> {
    let Some(text) = text else {
        return Err(ToolOutcome::error(
            format!(
                "{} does not exist. Use Write to create a file.",
                r.written.display()
            ),
            "not found",
        ));
    };
    let mut old = i.old_string.clone();
    let mut new = i.new_string.clone();
    let mut found = matches(text, &old, &new, i.replace_all);
    // A file with CRLF line ends, and a model that wrote LF: match and replace in the file's style.
    if found.as_ref().is_ok_and(Vec::is_empty)
        && text.contains("\r\n")
        && old.contains('\n')
        && !old.contains('\r')
    {
        old = old.replace('\n', "\r\n");
        new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        found = matches(text, &old, &new, i.replace_all);
    }
    // Bounded before anything is built (or the user asked): the result's size and the number of
    // replacements are known from the count alone.
    let found = match found {
        Ok(f) => f,
        Err(too_big) => {
            return Err(ToolOutcome::error(
                format!(
                    "Replacing every occurrence in {} {too_big}. Nothing was changed; make a \
                     smaller change, or use a command (sed) if this is really meant.",
                    r.written.display()
                ),
                "too large",
            ));
        }
    };
    match found.len() {
        0 => Err(ToolOutcome::error(
            format!(
                "old_string was not found in {}. It must match the file exactly, including \
                 whitespace and indentation (without Read's line-number prefix); Read the file \
                 again if it may have changed. Nothing was changed.",
                r.written.display()
            ),
            "no match",
        )),
        n if n > 1 && !i.replace_all => {
            let lines: Vec<String> = found
                .iter()
                .take(10)
                .map(|&at| (text[..at].matches('\n').count() + 1).to_string())
                .collect();
            Err(ToolOutcome::error(
                format!(
                    "old_string occurs {}{n} times in {} (at lines {}{}). Include more of the \
                     surrounding text to make it unique, or set replace_all to true to replace \
                     every occurrence. Nothing was changed.",
                    if n > 10 { "at least " } else { "" },
                    r.written.display(),
                    lines.join(", "),
                    if n > 10 { ", …" } else { "" }
                ),
                "several matches",
            ))
        }
        _ => Ok(found
            .into_iter()
            .map(|at| TextEdit {
                range: at..at + old.len(),
                new_text: new.clone(),
            })
            .collect()),
    }
}

/// Start offsets of the non-overlapping occurrences of `needle`. `Err` (the reason) when
/// replacing them all by `new` would pass [`MAX_REPLACEMENTS`] or make the text larger than
/// [`MAX_EDIT_BYTES`]: found while counting, before anything is built.
/// Without `all` (one replacement), counting stops at 11: enough to say it is not unique.
fn matches(text: &str, needle: &str, new: &str, all: bool) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let mut size = text.len() as u64;
    for (i, _) in text.match_indices(needle) {
        if !all && out.len() > 10 {
            break;
        }
        if out.len() == MAX_REPLACEMENTS {
            return Err(format!(
                "would make more than {MAX_REPLACEMENTS} replacements"
            ));
        }
        size = (size + new.len() as u64).saturating_sub(needle.len() as u64);
        if size > MAX_EDIT_BYTES {
            return Err(format!(
                "would make the file larger than {}",
                crate::fs::human_bytes(MAX_EDIT_BYTES)
            ));
        }
        out.push(i);
    }
    Ok(out)
}

fn apply(base: &str, edits: &[TextEdit]) -> String {
    editor::apply_edits(base, edits)
}

/// The smallest single replacement turning `old` into `new` (common prefix and suffix kept), so
/// the editor keeps the cursor and the undo step is small. `None` when they are equal.
fn minimal_edit(old: &str, new: &str) -> Option<TextEdit> {
    if old == new {
        return None;
    }
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = (old.len() - prefix).min(new.len() - prefix);
    let mut suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    Some(TextEdit {
        range: prefix..old.len() - suffix,
        new_text: new[prefix..new.len() - suffix].to_string(),
    })
}

/// The edited region of `text` with line numbers, as Read shows it.
fn snippet(text: &str, first_line: usize, changed_lines: usize) -> String {
    let start = first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
    let len = (changed_lines + 2 * SNIPPET_CONTEXT).min(SNIPPET_MAX_LINES);
    read::render(text.as_bytes(), start as u64, len as u64)
        .map(|r| r.text)
        .unwrap_or_default()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_edits_keep_common_ends_on_char_boundaries() {
        let e = minimal_edit("hello wörld\n", "hello wärld\n").unwrap();
        assert_eq!(
            apply("hello wörld\n", std::slice::from_ref(&e)),
            "hello wärld\n"
        );
        assert_eq!(e.new_text, "ä");
        let e = minimal_edit("aaa", "aaaa").unwrap();
        assert_eq!(apply("aaa", &[e]), "aaaa");
        let e = minimal_edit("abc", "").unwrap();
        assert_eq!(e.range, 0..3);
        assert!(minimal_edit("x", "x").is_none());
    }
}
