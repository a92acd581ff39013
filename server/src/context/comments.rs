//! Block-level HTML comment stripping, as Claude Code does it with marked's lexer.
//!
//! Only a text that contains `<!--` is touched, and then all of it gets LF line endings (CRLF and
//! lone CR), even when no comment goes: the lexer normalises before anything else.
//! What goes: CommonMark HTML blocks (at the top level of the document) that start with `<!--`
//! and contain a closing `-->`. The comments are cut out of the block; when only whitespace is
//! left, the block goes with the rest of its last line and the run of newlines after it (so the
//! blank lines that followed a comment disappear), otherwise the rest stays with its newlines
//! (`<!-- c --> text` keeps ` text`).
//! What stays: comments inside paragraphs, code (fenced, indented, inline), containers (list
//! items, block quotes), and an unclosed `<!--`.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::js;

pub fn strip_html_comments(text: &str) -> Cow<'_, str> {
    if !text.contains("<!--") {
        return Cow::Borrowed(text);
    }
    let text = js::normalize_newlines(text);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for block in top_level_html_blocks(&text) {
        let raw = &text[block.clone()];
        if !raw.trim_start().starts_with("<!--") || !raw.contains("-->") {
            continue;
        }
        out.push_str(&text[last..block.start]);
        let residue = remove_comments(raw);
        if !js::is_blank(&residue) {
            out.push_str(&residue);
        }
        last = block.end;
    }
    if last == 0 {
        return Cow::Owned(text.into_owned());
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Byte ranges of top-level HTML blocks, widened to whole lines (indentation and the final
/// newline included) and over the newlines that follow (marked's html token takes them).
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
    let mut end = if range.end > 0 && text.as_bytes().get(range.end - 1) == Some(&b'\n') {
        range.end
    } else {
        text[range.end..]
            .find('\n')
            .map_or(text.len(), |i| range.end + i + 1)
    };
    while text.as_bytes().get(end) == Some(&b'\n') {
        end += 1;
    }
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
                "- a\n\n  <!-- nested -->\n- b\n",
                "- a\n\n  <!-- nested -->\n- b\n",
            ),
            (
                "<div>\n<!-- inside div -->\n</div>\n",
                "<div>\n<!-- inside div -->\n</div>\n",
            ),
            // The newlines after a removed block go with it; a residue keeps them.
            ("A\n<!-- c -->\n\nB\n", "A\nB\n"),
            ("A\n<!-- c -->   \n\nB\n", "A\nB\n"),
            ("# H\n<!-- c -->\n\n## I\n", "# H\n## I\n"),
            ("A\n\n<!-- c1 -->\n\n<!-- c2 -->\n\nB\n", "A\n\nB\n"),
            ("A\n<!-- c --> T\n\nB", "A\n T\n\nB"),
            (
                "A\n<!-- c -->\n\n\nB\n<!-- x --> tail\n\nC\n<!-- end -->\n\n",
                "A\nB\n tail\n\nC\n",
            ),
            // Line endings become LF for the whole text once it holds `<!--`.
            ("A\r\n<!-- c -->\r\nB\r\n", "A\nB\n"),
            (
                "A\rB\r\nC <!-- inline -->\r\nD\r\n",
                "A\nB\nC <!-- inline -->\nD\n",
            ),
            (
                "A\r\n```\r\n<!-- c -->\r\n```\r\nB\r\n",
                "A\n```\n<!-- c -->\n```\nB\n",
            ),
            ("X\r\nY\r\n", "X\r\nY\r\n"),
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
