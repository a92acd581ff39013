//! `@path` include extraction.
//!
//! An include is `@` at the start of a line or after whitespace, then a path up to the next
//! unescaped whitespace (`\ ` is a space). A `#` ends the path. Nothing inside code (fenced,
//! indented, inline) or raw HTML counts, and `dev@example.com` is not an include.

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

pub fn extract(text: &str) -> Vec<IncludeRef> {
    if !text.contains('@') {
        return Vec::new();
    }
    let skip = excluded_ranges(text);
    // Ranges are in document order and do not overlap: one cursor walks them as `i` grows,
    // so a file full of `@` and code spans stays linear.
    let mut next_skip = 0;
    let mut out = Vec::new();
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
                out.push(IncludeRef {
                    path,
                    line,
                    cols: i - line_start..end - line_start,
                });
            }
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    out
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
    fn positions() {
        let refs = extract("x\n  see @docs/a.md now");
        assert_eq!(refs[0].line, 1);
        assert_eq!(refs[0].cols, 6..16);
    }
}
