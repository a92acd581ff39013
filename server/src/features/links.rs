//! `@path` includes of an instruction file as links: where each is written and where it points.
//! Used for document links, go to definition and include hovers.

use std::path::{Path, PathBuf};

use crate::context::includes;
use crate::fs::normalize;

/// One `@path` token of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludeLink {
    /// 0-based line of the `@`.
    pub line: usize,
    /// 0-based byte columns of the whole `@path` token on that line.
    pub start_col: usize,
    pub end_col: usize,
    /// The path as written (escapes resolved, fragment cut).
    pub written: String,
    /// The absolute target; `None` for `@~/...` when there is no home directory.
    pub target: Option<PathBuf>,
}

/// Where `written` points when included from `file`, as the core resolves it.
pub fn resolve(written: &str, file: &Path, home: Option<&Path>) -> Option<PathBuf> {
    match written.strip_prefix("~/") {
        Some(rest) => home.map(|h| normalize(h, Path::new(rest))),
        None => Some(normalize(
            file.parent().unwrap_or(Path::new("/")),
            Path::new(written),
        )),
    }
}

/// Every `@path` of `text` (the content of `file`), with file line numbers (an `AGENTS.md`'s
/// are followed too, like a `CLAUDE.md`'s).
pub fn include_links(text: &str, file: &Path, home: Option<&Path>) -> Vec<IncludeLink> {
    includes::extract_file(text)
        .into_iter()
        .map(|r| IncludeLink {
            line: r.line,
            start_col: r.cols.start,
            end_col: r.cols.end,
            target: resolve(&r.path, file, home),
            written: r.path,
        })
        .collect()
}

/// The link under a cursor at (`line`, byte `col`); the end column counts as inside.
pub fn link_at(links: &[IncludeLink], line: usize, col: usize) -> Option<&IncludeLink> {
    links
        .iter()
        .find(|l| l.line == line && l.start_col <= col && col <= l.end_col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_relative_home_and_absolute() {
        let text = "---\npaths: a\n---\nSee @docs/a.md and @~/x.md\n@/abs/y.md\n`@code.md`\n";
        let links = include_links(
            text,
            Path::new("/p/.claude/rules/r.md"),
            Some(Path::new("/h")),
        );
        let got: Vec<_> = links
            .iter()
            .map(|l| (l.line, l.start_col, l.end_col, l.target.clone().unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, 4, 14, PathBuf::from("/p/.claude/rules/docs/a.md")),
                (3, 19, 26, PathBuf::from("/h/x.md")),
                (4, 0, 10, PathBuf::from("/abs/y.md")),
            ]
        );
        assert_eq!(link_at(&links, 3, 14).unwrap().written, "docs/a.md");
        assert_eq!(link_at(&links, 3, 15), None);
        assert!(resolve("~/x", Path::new("/p/a.md"), None).is_none());
    }

    #[test]
    fn agents_md_has_links() {
        assert_eq!(
            include_links("@a.md", Path::new("/p/AGENTS.md"), None).len(),
            1
        );
    }
}
