//! Completion in instruction files: paths after `@`, and frontmatter keys (and `type:` values of
//! memory topic files).

use std::path::Path;

use crate::features::check::is_rule_path;
use crate::features::links::resolve;
use crate::fs::{Fs, Kind};

/// At most this many path items per request.
const MAX_ITEMS: usize = 200;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    File,
    Folder,
    Key,
    Value,
}

/// One completion item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub label: String,
    /// Text that replaces the range from `replace_start` to the cursor.
    pub insert: String,
    pub kind: ItemKind,
    pub detail: Option<String>,
    /// 0-based byte column where the replaced text starts (on the cursor's line).
    pub replace_start: usize,
}

/// Frontmatter keys with what they do.
const RULE_KEYS: &[(&str, &str)] = &[
    (
        "paths",
        "Globs (list or comma-separated string); the rule loads only when a touched file matches",
    ),
    ("description", "What this rule is for (shown in previews)"),
];
const MEMORY_KEYS: &[(&str, &str)] = &[
    ("name", "Short name of this memory"),
    (
        "description",
        "One line saying when this memory is relevant",
    ),
    ("type", "user, feedback, project or reference"),
];
const MEMORY_TYPES: &[(&str, &str)] = &[
    ("user", "Who the user is: role, preferences, expertise"),
    (
        "feedback",
        "How the user wants work done: corrections and confirmations",
    ),
    (
        "project",
        "Facts about the project not derivable from the code",
    ),
    ("reference", "Pointers to external resources"),
];

/// The frontmatter's line range (opening `---` line to closing line, exclusive), if the cursor's
/// file starts with one; an unclosed frontmatter runs to the end.
fn frontmatter_lines(text: &str) -> Option<(usize, usize)> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let end = lines
        .position(|l| l.trim_end() == "---")
        .map_or(usize::MAX, |i| i + 1);
    Some((0, end))
}

fn is_memory_topic(file: &Path) -> bool {
    file.parent().is_some_and(|d| d.ends_with("memory"))
        && file.file_name().is_some_and(|n| n != "MEMORY.md")
}

/// Items for a cursor at (`line`, byte `col`) of `text`, the content of `file`.
pub fn complete(
    fs: &dyn Fs,
    text: &str,
    file: &Path,
    home: Option<&Path>,
    line: usize,
    col: usize,
) -> Vec<Item> {
    let Some(line_text) = text.lines().nth(line).or(if line == text.lines().count() {
        Some("")
    } else {
        None
    }) else {
        return Vec::new();
    };
    let col = col.min(line_text.len());
    if !line_text.is_char_boundary(col) {
        return Vec::new();
    }
    let before = &line_text[..col];
    if let Some((start, end)) = frontmatter_lines(text)
        && line > start
        && line < end
    {
        return frontmatter_items(before, file);
    }
    // The token under the cursor: from the last whitespace not escaped by `\` to the cursor.
    let token_start = token_start(before);
    let token = &before[token_start..];
    let Some(partial) = token.strip_prefix('@') else {
        return Vec::new();
    };
    if before[..token_start].trim_end().ends_with('`') && before.matches('`').count() % 2 == 1 {
        return Vec::new(); // Inside inline code.
    }
    path_items(fs, partial, token_start + 1, file, home)
}

/// Where the word ending at the end of `before` starts: after the last whitespace that is not
/// escaped with a backslash (`@docs/my\ fi` is one word).
fn token_start(before: &str) -> usize {
    let bytes = before.as_bytes();
    let mut start = 0;
    for (i, c) in before.char_indices() {
        if c.is_whitespace() && !(i > 0 && bytes[i - 1] == b'\\') {
            start = i + c.len_utf8();
        }
    }
    start
}

fn frontmatter_items(before: &str, file: &Path) -> Vec<Item> {
    let memory = is_memory_topic(file);
    if let Some(value) = before.strip_prefix("type:")
        && memory
    {
        let start = before.len() - value.trim_start().len();
        return MEMORY_TYPES
            .iter()
            .map(|(v, d)| Item {
                label: v.to_string(),
                insert: v.to_string(),
                kind: ItemKind::Value,
                detail: Some(d.to_string()),
                replace_start: start,
            })
            .collect();
    }
    if before.contains(':') || before.starts_with(' ') || before.starts_with('-') {
        return Vec::new();
    }
    let keys = if memory {
        MEMORY_KEYS
    } else if is_rule_path(file) {
        RULE_KEYS
    } else {
        &RULE_KEYS[1..]
    };
    keys.iter()
        .filter(|(k, _)| k.starts_with(before))
        .map(|(k, d)| Item {
            label: k.to_string(),
            insert: format!("{k}: "),
            kind: ItemKind::Key,
            detail: Some(d.to_string()),
            replace_start: 0,
        })
        .collect()
}

fn path_items(
    fs: &dyn Fs,
    partial: &str,
    partial_start: usize,
    file: &Path,
    home: Option<&Path>,
) -> Vec<Item> {
    let (dir_part, prefix) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    // What was typed is escaped (`my\ file`); names on disk are not.
    let unescape = |s: &str| s.replace("\\ ", " ");
    let prefix = unescape(prefix);
    let dir = if dir_part.is_empty() {
        file.parent().map(Path::to_path_buf)
    } else {
        resolve(&unescape(dir_part), file, home)
    };
    let Some(dir) = dir else {
        return Vec::new();
    };
    let Ok(mut entries) = fs.read_dir(&dir) else {
        return Vec::new();
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let replace_start = partial_start + dir_part.len();
    entries
        .into_iter()
        .filter(|e| e.raw.is_none() && e.name.starts_with(prefix.as_str()))
        .filter(|e| prefix.starts_with('.') || !e.name.starts_with('.') || e.name == ".claude")
        // The file itself is no include target; a file of the same name elsewhere is.
        .filter(|e| e.name != ".git" && dir.join(&e.name) != file)
        .filter_map(|e| {
            let escaped = e.name.replace(' ', "\\ ");
            match e.kind {
                Some(Kind::Dir) => Some(Item {
                    label: format!("{}/", e.name),
                    insert: format!("{escaped}/"),
                    kind: ItemKind::Folder,
                    detail: None,
                    replace_start,
                }),
                // Claude Code skips includes whose extension is not a text one: not offered.
                Some(Kind::File)
                    if crate::context::includes::extension_is_read(&e.name).is_ok() =>
                {
                    Some(Item {
                        label: e.name.clone(),
                        insert: escaped,
                        kind: ItemKind::File,
                        detail: None,
                        replace_start,
                    })
                }
                _ => None,
            }
        })
        .take(MAX_ITEMS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn fs() -> MemFs {
        MemFs::with_files([
            ("/p/CLAUDE.md", ""),
            ("/p/docs/style.md", ""),
            ("/p/docs/shot.png", ""),
            ("/p/docs/sub/deep.md", ""),
            ("/p/docs/my file.md", ""),
            ("/p/.claude/rules/r.md", ""),
            ("/p/.git/HEAD", ""),
            ("/h/notes.md", ""),
        ])
    }

    fn labels(items: &[Item]) -> Vec<&str> {
        items.iter().map(|i| i.label.as_str()).collect()
    }

    #[test]
    fn paths_after_at() {
        let fs = fs();
        let f = Path::new("/p/CLAUDE.md");
        let h = Some(Path::new("/h"));
        let items = complete(&fs, "see @", f, h, 0, 5);
        assert_eq!(labels(&items), [".claude/", "docs/"]);
        // `shot.png` is not offered: Claude Code skips includes without a text extension.
        let items = complete(&fs, "see @docs/s", f, h, 0, 11);
        assert_eq!(labels(&items), ["style.md", "sub/"]);
        assert_eq!(items[0].replace_start, 10);
        let items = complete(&fs, "@docs/my", f, h, 0, 8);
        assert_eq!(items[0].insert, "my\\ file.md");
        assert_eq!(labels(&complete(&fs, "@~/", f, h, 0, 3)), ["notes.md"]);
        assert!(complete(&fs, "mail a@docs/", f, h, 0, 12).is_empty());
    }

    #[test]
    fn same_name_elsewhere_and_escaped_spaces() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", ""),
            ("/p/src/api/CLAUDE.md", ""),
            ("/p/src/api/my notes.md", ""),
            ("/p/src/api/my nodes.md", ""),
            ("/h/.claude/CLAUDE.md", ""),
        ]);
        let f = Path::new("/p/CLAUDE.md");
        let h = Some(Path::new("/h"));
        // A file that shares the current file's name is offered; the file itself is not.
        let items = complete(&fs, "@src/api/", f, h, 0, 9);
        assert!(labels(&items).contains(&"CLAUDE.md"), "{items:?}");
        assert_eq!(
            labels(&complete(&fs, "@~/.claude/", f, h, 0, 11)),
            ["CLAUDE.md"]
        );
        assert!(!labels(&complete(&fs, "@", f, h, 0, 1)).contains(&"CLAUDE.md"));
        // After an escaped space the word goes on, and the whole typed word is replaced.
        let line = "see @src/api/my\\ no";
        let items = complete(&fs, line, f, h, 0, line.len());
        assert_eq!(labels(&items), ["my nodes.md", "my notes.md"]);
        assert_eq!(items[0].replace_start, "see @src/api/".len());
        assert_eq!(items[0].insert, "my\\ nodes.md");
    }

    #[test]
    fn frontmatter_keys_and_values() {
        let fs = fs();
        let rule = Path::new("/p/.claude/rules/r.md");
        let items = complete(&fs, "---\npa\n---\n", rule, None, 1, 2);
        assert_eq!(labels(&items), ["paths"]);
        assert_eq!(items[0].insert, "paths: ");
        let claude = Path::new("/p/CLAUDE.md");
        assert_eq!(
            labels(&complete(&fs, "---\n\n---\n", claude, None, 1, 0)),
            ["description"]
        );
        let topic = Path::new("/h/.claude/projects/x/memory/prefs.md");
        let items = complete(&fs, "---\ntype: f\n---\n", topic, None, 1, 7);
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].replace_start, 6);
        assert!(complete(&fs, "---\npaths: \n---\n", rule, None, 1, 7).is_empty());
    }
}
