//! `@path` include extraction.
//!
//! An include is `@` at the start of a line or after whitespace, then a path up to the next
//! unescaped whitespace (`\ ` is a space). A `#` ends the path. Nothing inside code (fenced,
//! indented, inline) or raw HTML counts, and `dev@example.com` is not an include.
//!
//! A target is read only when its file name has one of Claude Code's 106 text extensions
//! ([`TEXT_EXTENSIONS`], compared in lower case) or none at all ([`extension_is_read`]).
//!
//! At most [`MAX_PER_FILE`] includes of a file are kept; the others are counted and the first
//! of them is kept as [`Overflow::first`], so a file of half a million `@` lines costs one pass
//! over its text, not half a million records.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

/// One `@path` as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludeRef {
    /// The path with escapes resolved and any `#fragment` cut.
    pub path: String,
    /// 0-based line of the `@`.
    pub line: usize,
    /// Byte columns of the whole `@path` token on that line (from the `@`).
    pub cols: Range<usize>,
}

/// Includes of one file that are followed; a file with more is cut here, with a finding
/// (Claude Code follows them all; no real instruction file has this many).
pub const MAX_PER_FILE: usize = 1_000;

/// What is left of a file's includes past [`MAX_PER_FILE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overflow {
    /// How many includes the file has in all.
    pub total: usize,
    /// The first include that is not followed.
    pub first: IncludeRef,
}

/// The extensions an include target may have (lower case, without the dot): Claude Code skips
/// any other one without reading the file, even when it holds plain text.
pub const TEXT_EXTENSIONS: [&str; 106] = [
    "adoc",
    "asciidoc",
    "astro",
    "bash",
    "bat",
    "c",
    "cc",
    "cfg",
    "cjs",
    "clj",
    "cljc",
    "cljs",
    "cmake",
    "cmd",
    "conf",
    "config",
    "cpp",
    "cs",
    "css",
    "csv",
    "cts",
    "cxx",
    "dart",
    "diff",
    "edn",
    "ejs",
    "elm",
    "env",
    "erb",
    "erl",
    "ex",
    "exs",
    "f",
    "f90",
    "f95",
    "fish",
    "for",
    "go",
    "gql",
    "gradle",
    "graphql",
    "h",
    "hbs",
    "hpp",
    "hrl",
    "hs",
    "htm",
    "html",
    "hxx",
    "ini",
    "jade",
    "java",
    "js",
    "json",
    "jsx",
    "kt",
    "kts",
    "latex",
    "less",
    "lhs",
    "lock",
    "log",
    "lua",
    "make",
    "makefile",
    "md",
    "mjs",
    "ml",
    "mli",
    "mts",
    "org",
    "patch",
    "php",
    "pl",
    "pm",
    "properties",
    "proto",
    "ps1",
    "pug",
    "py",
    "pyi",
    "pyw",
    "r",
    "rake",
    "rb",
    "rs",
    "rst",
    "sass",
    "sbt",
    "scala",
    "scss",
    "sh",
    "sql",
    "svelte",
    "swift",
    "tex",
    "text",
    "toml",
    "ts",
    "tsx",
    "txt",
    "vue",
    "xml",
    "yaml",
    "yml",
    "zsh",
];

/// The extension of the last component of `written` as Node's `path.extname` sees it: what
/// follows the last `.` of the file name, unless that dot starts the name (`.gitignore` has
/// none). `Some("")` for a name ending in a dot.
pub fn extension(written: &str) -> Option<&str> {
    let name = written.rsplit('/').next().unwrap_or(written);
    match name.rfind('.') {
        Some(0) | None => None,
        Some(i) => Some(&name[i + 1..]),
    }
}

/// Does Claude Code read an include written as `written`? (`Err` holds the extension it skips.)
/// Only the written name counts, not the file a link leads to.
pub fn extension_is_read(written: &str) -> Result<(), String> {
    match extension(written) {
        None => Ok(()),
        Some(ext) => {
            let lower = ext.to_ascii_lowercase();
            if TEXT_EXTENSIONS.binary_search(&lower.as_str()).is_ok() {
                Ok(())
            } else {
                Err(ext.to_string())
            }
        }
    }
}

/// The includes of a whole instruction file: frontmatter skipped, positions in the file's lines.
/// At most [`MAX_PER_FILE`] (see [`extract_file_capped`] for the count of the others).
pub fn extract_file(text: &str) -> Vec<IncludeRef> {
    extract_file_capped(text).0
}

/// [`extract_file`], with what was left past [`MAX_PER_FILE`].
pub fn extract_file_capped(text: &str) -> (Vec<IncludeRef>, Option<Overflow>) {
    let (fm, body) = super::frontmatter::split(text);
    let (mut refs, mut overflow) = extract_capped(body, MAX_PER_FILE);
    if let Some(fm) = fm {
        let line_start = text[..fm.content_start].rfind('\n').map_or(0, |i| i + 1);
        let col = fm.content_start - line_start;
        let shift = |r: &mut IncludeRef| {
            if r.line == 0 {
                r.cols = r.cols.start + col..r.cols.end + col;
            }
            r.line += fm.lines;
        };
        refs.iter_mut().for_each(shift);
        if let Some(o) = &mut overflow {
            shift(&mut o.first);
        }
    }
    (refs, overflow)
}

/// The includes of `text` (the content of a file, frontmatter already removed); lines count from
/// the start of `text`. At most [`MAX_PER_FILE`].
pub fn extract(text: &str) -> Vec<IncludeRef> {
    extract_capped(text, MAX_PER_FILE).0
}

/// The first `cap` includes of `text`, and what is left past them.
pub fn extract_capped(text: &str, cap: usize) -> (Vec<IncludeRef>, Option<Overflow>) {
    if !text.contains('@') {
        return (Vec::new(), None);
    }
    let skip = excluded_ranges(text);
    // Ranges are in document order and do not overlap: one cursor walks them as `i` grows,
    // so a file full of `@` and code spans stays linear.
    let mut next_skip = 0;
    let mut out = Vec::new();
    let mut overflow: Option<Overflow> = None;
    let bytes = text.as_bytes();
    let mut line = 0;
    let mut line_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            line_start = i + 1;
            i += 1;
            continue;
        }
        while next_skip < skip.len() && skip[next_skip].end <= i {
            next_skip += 1;
        }
        let skipped = skip.get(next_skip).is_some_and(|r| r.start <= i);
        if b == b'@' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) && !skipped {
            let (path, end) = scan_path(text, i + 1);
            if let Some(path) = valid(path) {
                let r = IncludeRef {
                    path,
                    line,
                    cols: i - line_start..end - line_start,
                };
                if out.len() < cap {
                    out.push(r);
                } else {
                    match &mut overflow {
                        Some(o) => o.total += 1,
                        None => {
                            overflow = Some(Overflow {
                                total: cap + 1,
                                first: r,
                            })
                        }
                    }
                }
            }
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    (out, overflow)
}

/// Reads a path from `start`: non-whitespace, with `\ ` as an escaped space; a lone `\` ends it.
fn scan_path(text: &str, start: usize) -> (String, usize) {
    let mut path = String::new();
    let mut chars = text[start..].char_indices().peekable();
    let mut end = start;
    while let Some((off, c)) = chars.next() {
        if c == '\\' {
            if let Some(&(_, ' ')) = chars.peek() {
                chars.next();
                path.push(' ');
                end = start + off + 2;
                continue;
            }
            break;
        }
        if c.is_whitespace() {
            break;
        }
        path.push(c);
        end = start + off + c.len_utf8();
    }
    (path, end)
}

/// The path as the reference CLI accepts it: `#` cuts a fragment, and it must look like a path.
fn valid(mut path: String) -> Option<String> {
    if let Some(hash) = path.find('#') {
        path.truncate(hash);
    }
    if path.is_empty() {
        return None;
    }
    let first = path.chars().next()?;
    let ok = path.starts_with("./")
        || path.starts_with("~/")
        || (path.starts_with('/') && path != "/")
        || first.is_alphanumeric()
        || matches!(first, '.' | '_' | '-');
    ok.then_some(path)
}

/// Code blocks, inline code and raw HTML: where `@` is text, not an include.
fn excluded_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        let excluded = matches!(
            event,
            Event::Start(Tag::CodeBlock(_))
                | Event::Start(Tag::HtmlBlock)
                | Event::Code(_)
                | Event::InlineHtml(_)
        );
        if !excluded {
            continue;
        }
        // Keep the list sorted and disjoint (merge anything that overlaps the last range).
        match out.last_mut() {
            Some(last) if range.start < last.end => last.end = last.end.max(range.end),
            _ => out.push(range),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        extract(text).into_iter().map(|r| r.path).collect()
    }

    #[test]
    fn table() {
        let cases: &[(&str, &[&str])] = &[
            ("@inc/bare.md", &["inc/bare.md"]),
            ("See @./inc/rel.md inline.", &["./inc/rel.md"]),
            (
                "@~/home.md\n@/abs/x.md\n@../up.md",
                &["~/home.md", "/abs/x.md", "../up.md"],
            ),
            ("@inc/esc\\ space.md", &["inc/esc space.md"]),
            ("@inc/with#hash.md", &["inc/with"]),
            ("@noext @data.json", &["noext", "data.json"]),
            ("email foo@inc/bare.md and x@y", &[]),
            ("```\n@inc/in-fence.md\n```\n", &[]),
            ("Inline code `@inc/in-inline.md` here.", &[]),
            ("para\n\n    @indented.md\n", &[]),
            ("@", &[]),
            ("@#frag @/ @)x @@y", &[]),
            ("see\t@tab.md", &["tab.md"]),
            ("\t@tab-indented-is-code.md", &[]),
            ("- @list-item.md", &["list-item.md"]),
            ("@inc/a\\b.md", &["inc/a"]),
        ];
        for (text, want) in cases {
            assert_eq!(paths(text), *want, "text {text:?}");
        }
    }

    #[test]
    fn extensions() {
        assert!(
            TEXT_EXTENSIONS.is_sorted(),
            "binary search needs the list sorted"
        );
        for read in [
            "f.md",
            "f.MD",
            "a.b.md",
            "x.d.ts",
            "Makefile",
            ".gitignore",
            "dir.md/plain",
            "f.makefile",
            "docs/f.ps1",
            "../f.env",
        ] {
            assert_eq!(extension_is_read(read), Ok(()), "{read}");
        }
        for (skipped, ext) in [
            ("f.png", "png"),
            ("f.PNG", "PNG"),
            ("f.pdf", "pdf"),
            ("f.svg", "svg"),
            ("f.dat", "dat"),
            ("f.jsonc", "jsonc"),
            ("f.markdown", "markdown"),
            ("f.mdx", "mdx"),
            ("f.tsv", "tsv"),
            ("f.rtf", "rtf"),
            ("f.bak", "bak"),
            ("md.d/f.", ""),
        ] {
            assert_eq!(
                extension_is_read(skipped),
                Err(ext.to_string()),
                "{skipped}"
            );
        }
    }

    #[test]
    fn file_positions_skip_the_frontmatter() {
        let refs = extract_file("---\npaths: a\n---\n  see @x.md\n@y.md");
        let got: Vec<_> = refs.iter().map(|r| (r.line, r.cols.clone())).collect();
        assert_eq!(got, [(3, 6..11), (4, 0..5)]);
        let refs = extract_file("---\nt: 1\n---@g.md");
        assert_eq!((refs[0].line, refs[0].cols.clone()), (2, 3..8));
    }

    #[test]
    fn includes_past_the_cap_are_counted_not_kept() {
        let text: String = (0..MAX_PER_FILE + 500)
            .map(|i| format!("@d/f{i}.md\n"))
            .collect();
        let (refs, overflow) = extract_capped(&text, MAX_PER_FILE);
        assert_eq!(refs.len(), MAX_PER_FILE);
        let o = overflow.expect("overflow");
        assert_eq!(o.total, MAX_PER_FILE + 500);
        assert_eq!((o.first.path.as_str(), o.first.line), ("d/f1000.md", 1000));
        // With frontmatter, the first one left out is on its line of the file.
        let (_, o) = extract_file_capped(&format!("---\nx: 1\n---\n{text}"));
        assert_eq!(o.expect("overflow").first.line, 1003);
        assert_eq!(extract_capped("@a @b", 5).1, None);
    }

    #[test]
    fn positions() {
        let refs = extract("x\n  see @docs/a.md now");
        assert_eq!(refs[0].line, 1);
        assert_eq!(refs[0].cols, 6..16);
    }
}
