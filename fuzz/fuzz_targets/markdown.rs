//! The per-file pipeline on arbitrary text: frontmatter split, block-comment stripping, include
//! extraction (what `context::load::process` does), the MEMORY.md caps, and glob translation and
//! compilation on the input's lines. Asserts invariants, not just "no panic".

#![no_main]

use std::path::Path;

use claude_context::context::{comments, frontmatter, globs, includes, js};
use claude_context::memory;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text: &str = &text;

    // 1. Frontmatter: the body is a suffix of the input; `lines` (the line the content starts
    //    on) counts exactly the newlines cut off.
    let (fm, body) = frontmatter::split(text);
    assert!(text.ends_with(body), "body is not a suffix");
    let head = &text[..text.len() - body.len()];
    match &fm {
        None => assert_eq!(body.len(), text.len(), "no frontmatter but text was cut"),
        Some(fm) => {
            assert!(fm.lines >= 1, "content on line {}", fm.lines);
            assert_eq!(fm.content_start, head.len());
            let newlines = head.matches('\n').count();
            assert_eq!(newlines, fm.lines, "content line vs newlines cut");
            if let Some(err) = &fm.error {
                assert!(err.line >= 1 && err.line <= fm.lines, "error line {err:?}");
            }
            for g in fm.paths.iter().flatten() {
                assert!(!g.glob.is_empty() && js::trim(&g.glob) == g.glob, "glob {g:?}");
                assert!(g.line >= 1 && g.line <= fm.lines, "glob line {g:?}");
            }
        }
    }
    let offset = fm.as_ref().map_or(0, |f| f.lines);

    // 2. Comment stripping never adds text, is a no-op without `<!--`, and stays bounded when
    //    applied again.
    let stripped = comments::strip_html_comments(body);
    assert!(stripped.len() <= body.len(), "stripping grew the text");
    if !body.contains("<!--") {
        assert_eq!(&*stripped, body);
    }
    let again = comments::strip_html_comments(&stripped);
    assert!(again.len() <= stripped.len(), "second strip grew the text");

    // 3. Includes: each `@path` token lies within its line, on char boundaries, starts with `@`,
    //    and tokens come in document order.
    let refs = includes::extract(body);
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(body.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut last_end = 0;
    for r in &refs {
        assert!(
            r.line < line_starts.len(),
            "line {} of {}",
            r.line,
            line_starts.len()
        );
        assert!(r.cols.start < r.cols.end, "empty token {r:?}");
        let start = line_starts[r.line] + r.cols.start;
        let end = line_starts[r.line] + r.cols.end;
        assert!(end <= body.len(), "token past the end {r:?}");
        assert!(
            body.is_char_boundary(start) && body.is_char_boundary(end),
            "{r:?}"
        );
        let token = &body[start..end];
        assert!(
            token.starts_with('@') && !token.contains('\n'),
            "token {token:?}"
        );
        assert!(start >= last_end, "tokens out of order or overlapping");
        last_end = end;
        assert!(
            !r.path.is_empty() && !r.path.contains('#'),
            "path {:?}",
            r.path
        );
        // Line numbers shifted by the frontmatter (what `process` reports) do not overflow.
        assert!(r.line.checked_add(offset).is_some());
    }

    // 4. MEMORY.md caps: at most 200 lines and 25,000 UTF-16 units kept, whole lines only.
    let (capped, cut) = memory::cap(&stripped);
    let trimmed = js::trim(&stripped);
    match cut {
        None => {
            assert_eq!(capped, trimmed);
            assert!(trimmed.split('\n').count() <= memory::MAX_LINES);
            assert!(js::len_utf16(trimmed) <= memory::MAX_UNITS);
        }
        Some(cut) => {
            // The last warning marker is ours (the quoted line has no newline).
            let kept = capped
                .rsplit_once("\n\n> WARNING: ")
                .map_or(capped.as_str(), |(k, _)| k);
            if cut.kept_lines > 0 {
                assert_eq!(kept.split('\n').count(), cut.kept_lines);
            }
            assert!(cut.kept_lines <= memory::MAX_LINES);
            assert!(cut.kept_lines < cut.total_lines);
            assert_eq!(cut.first_cut.0, cut.kept_lines + 1);
            assert!(js::len_utf16(kept) <= memory::MAX_UNITS, "kept {} units", kept.len());
            assert!(cut.over_lines || cut.over_units);
            assert!(trimmed.starts_with(kept), "kept text is not a prefix");
        }
    }

    // 5. Globs: every line as a `paths` value; what `check` accepts compiles into a matcher,
    //    and matching other lines as paths does not panic.
    let lines: Vec<&str> = text.lines().filter(|l| l.len() <= 256).take(8).collect();
    for line in &lines {
        for item in frontmatter::split_commas(line) {
            assert!(!item.is_empty() && js::trim(&item) == item);
        }
        let translated = globs::translate(line);
        let checked = globs::check(line);
        if translated.is_err() {
            assert!(checked.is_err());
        }
        let patterns = [line.to_string()];
        let matcher = globs::RuleMatcher::new([&patterns[..]]);
        for other in &lines {
            let hits = matcher.matches(Path::new(other));
            assert!(
                hits.iter()
                    .all(|&(rule, pattern)| rule == 0 && pattern == 0)
            );
            if checked.is_err() {
                assert!(hits.is_empty(), "an invalid pattern matched");
            }
            let _ = globs::relative_to(Path::new(other), Path::new(line));
        }
    }
});
