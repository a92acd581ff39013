//! Block-level HTML comment stripping, as Claude Code does it with marked's lexer.
//!
//! Only a text that contains `<!--` is touched, and then all of it gets LF line endings (CRLF and
//! lone CR), even when no comment goes: the lexer normalises before anything else.
//! What goes: CommonMark HTML blocks (at the top level of the document) that start with `<!--`
//! and contain a closing `-->`. The comments are cut out of the block; when only whitespace is
//! left, the block goes with the rest of its last line and the run of newlines after it (so the
//! blank lines that followed a comment disappear), otherwise the rest stays with its newlines
//! (`<!-- c --> text` keeps ` text`).
//! What stays: comments inside paragraphs (an indented comment line right after a paragraph or
//! quote line is one: marked lets only an unindented `<!--` interrupt a paragraph), code (fenced, indented, inline), containers (list
//! items, block quotes), and an unclosed `<!--`.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::js;

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
///
/// An indented HTML block that starts on the line right after a paragraph or block quote line is
/// left out: only an unindented `<!--` interrupts a paragraph in marked (CommonMark allows up to
/// 3 spaces), so there the line is paragraph text, or a lazy continuation of the quote, and
/// stays. The paragraph then goes on, so a second such line right after it stays too.
fn top_level_html_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    // The end of the last top-level paragraph or block quote (or of a block kept as its text).
    let mut prose_end: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) if depth == 0 => {
                if continues_prose(text, range.start, prose_end) {
                    prose_end = Some(range.end);
                } else {
                    blocks.push(whole_lines(text, range));
                }
                depth += 1;
            }
            Event::Start(_) => depth += 1,
            Event::End(TagEnd::Paragraph | TagEnd::BlockQuote(_)) if depth == 1 => {
                prose_end = Some(range.end);
                depth = 0;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    blocks
}

/// Does the block starting at `start` sit on an indented line right after a line of the
/// paragraph or quote that ended at `prose_end`?
fn continues_prose(text: &str, start: usize, prose_end: Option<usize>) -> bool {
    let Some(prose_end) = prose_end else {
        return false;
    };
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    if line_start == 0 || !matches!(text.as_bytes()[line_start], b' ' | b'\t') {
        return false;
    }
    let prev_start = text[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
    !js::is_blank(&text[prev_start..line_start - 1]) && prose_end > prev_start
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
            // An indented comment line right after a paragraph or quote line is text (marked:
            // only an unindented `<!--` interrupts a paragraph); unindented, or after a blank
            // line, it goes.
            ("A\n  <!-- c -->\nB", "A\n  <!-- c -->\nB"),
            ("A\n <!-- c -->\nB\n", "A\n <!-- c -->\nB\n"),
            ("A\n   <!-- c -->\nB\n", "A\n   <!-- c -->\nB\n"),
            ("A\n    <!-- c -->\nB\n", "A\n    <!-- c -->\nB\n"),
            ("A\n\t<!-- c -->\nB\n", "A\n\t<!-- c -->\nB\n"),
            (
                "A\n  <!-- c -->\n  <!-- d -->\nB\n",
                "A\n  <!-- c -->\n  <!-- d -->\nB\n",
            ),
            ("A\n  <!--\nmulti\n-->\nB\n", "A\n  <!--\nmulti\n-->\nB\n"),
            ("A\n  <!-- c -->\n<!-- d -->\nB\n", "A\n  <!-- c -->\nB\n"),
            ("A\n<!-- c -->\nB\n", "A\nB\n"),
            ("A\n\n  <!-- c -->\nB\n", "A\n\nB\n"),
            ("# H\n  <!-- c -->\nB\n", "# H\nB\n"),
            ("A\n> q\n  <!-- c -->\nB\n", "A\n> q\n  <!-- c -->\nB\n"),
            (
                "L\n> <!-- q -->\n  <!-- c -->\nM\n",
                "L\n> <!-- q -->\n  <!-- c -->\nM\n",
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
