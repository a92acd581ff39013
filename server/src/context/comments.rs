//! Block-level HTML comment stripping.
//!
//! What goes: CommonMark HTML blocks (at the top level of the document) that start with `<!--`
//! and contain a closing `-->`. The comments are cut out of the block; when only whitespace is
//! left, the block's lines go too, otherwise the rest stays (`<!-- c --> text` keeps ` text`).
//! What stays: comments inside paragraphs, code (fenced, indented, inline), containers, and an
//! unclosed `<!--`.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub fn strip_html_comments(text: &str) -> Cow<'_, str> {
    if !text.contains("<!--") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for block in top_level_html_blocks(text) {
        let raw = &text[block.clone()];
        if !raw.trim_start().starts_with("<!--") || !raw.contains("-->") {
            continue;
        }
        out.push_str(&text[last..block.start]);
        let residue = remove_comments(raw);
        if !residue.trim().is_empty() {
            out.push_str(&residue);
        }
        last = block.end;
    }
    if last == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Byte ranges of top-level HTML blocks, widened to whole lines (indentation and the final
/// newline included).
fn top_level_html_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) if depth == 0 => {
                blocks.push(whole_lines(text, range));
                depth += 1;
            }
            Event::Start(_) => depth += 1,
            Event::End(TagEnd::HtmlBlock) | Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    blocks
}

fn whole_lines(text: &str, range: Range<usize>) -> Range<usize> {
    let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let start = if text[line_start..range.start].trim().is_empty() {
        line_start
    } else {
        range.start
    };
    let end = if range.end > 0 && text.as_bytes().get(range.end - 1) == Some(&b'\n') {
        range.end
    } else {
        text[range.end..]
            .find('\n')
            .map_or(text.len(), |i| range.end + i + 1)
    };
    start..end
}

/// Removes every `<!-- ... -->` (shortest match) from `raw`.
fn remove_comments(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(open) = rest.find("<!--") {
        let Some(close) = rest[open + 4..].find("-->") else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &rest[open + 4 + close + 3..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, &str)] = &[
            ("no comments\n", "no comments\n"),
            ("a\n<!-- c -->\nb\n", "a\nb\n"),
            ("a\n<!--\nmulti\nline\n-->\nb\n", "a\nb\n"),
            ("<!-- c --> trailing text\n", " trailing text\n"),
            ("  <!-- two spaces -->\nb\n", "b\n"),
            ("text <!-- inline --> text\n", "text <!-- inline --> text\n"),
            ("```\n<!-- fenced -->\n```\n", "```\n<!-- fenced -->\n```\n"),
            ("`<!-- inline code -->`\n", "`<!-- inline code -->`\n"),
            (
                "x\n\n    <!-- indented code -->\n",
                "x\n\n    <!-- indented code -->\n",
            ),
            ("<!-- unclosed\nrest\n", "<!-- unclosed\nrest\n"),
            ("<!-- only -->", ""),
            ("<!-- a --><!-- b -->\nz", "z"),
            ("> <!-- in a quote -->\n", "> <!-- in a quote -->\n"),
            (
                "<div>\n<!-- inside div -->\n</div>\n",
                "<div>\n<!-- inside div -->\n</div>\n",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(strip_html_comments(input), *want, "input {input:?}");
        }
    }

    #[test]
    fn the_conformance_file() {
        let input = "# Title\nVISIBLE-1\n<!-- BLOCK-COMMENT-SINGLE-LINE -->\n<!--\nBLOCK-COMMENT-MULTI-LINE\n-->\ntext before <!-- INLINE-COMMENT-IN-TEXT --> text after\n<!-- LEADING-COMMENT --> trailing text on same line\n```\n<!-- COMMENT-IN-FENCE -->\n```\n`<!-- COMMENT-IN-INLINE-CODE -->`\n\n    <!-- COMMENT-IN-INDENTED-CODE -->\n\n  <!-- INDENTED-2-SPACES-COMMENT -->\n<!-- UNCLOSED-COMMENT\nVISIBLE-END\n";
        let want = "# Title\nVISIBLE-1\ntext before <!-- INLINE-COMMENT-IN-TEXT --> text after\n trailing text on same line\n```\n<!-- COMMENT-IN-FENCE -->\n```\n`<!-- COMMENT-IN-INLINE-CODE -->`\n\n    <!-- COMMENT-IN-INDENTED-CODE -->\n\n<!-- UNCLOSED-COMMENT\nVISIBLE-END\n";
        assert_eq!(strip_html_comments(input), want);
    }
}
