//! `textDocument/hover`: on an `@include`, its target; on a `paths:` glob, what it matches;
//! anywhere else, the effective instructions for the file.

use super::Result;
use ls_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind, Range};

use crate::features::check::is_rule_path;
use crate::features::hover::{self as feature, FileHover, IncludeHover};
use crate::features::links::{include_links, link_at};
use crate::lsp::Backend;
use crate::lsp::convert::{byte_col, line_str, position};

fn markdown(value: String, range: Option<Range>) -> Option<Hover> {
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range,
    })
}

pub fn hover(b: &Backend, params: HoverParams) -> Result<Option<Hover>> {
    let pos = params.text_document_position_params;
    let Some(t) = b.target(&pos.text_document.uri) else {
        return Ok(None);
    };
    let st = &b.state;
    let s = st.settings();
    let utf8 = b.utf8();
    let line = pos.position.line as usize;
    let col = byte_col(line_str(&t.text, line), pos.position.character, utf8);
    let home = st.env.home.as_deref();
    let instruction = st.is_instruction_doc(&t.path);
    let range = |l: usize, start: usize, end: usize| {
        Some(Range {
            start: position(&t.text, l, start, utf8),
            end: position(&t.text, l, end, utf8),
        })
    };
    let is_mcp = feature::is_mcp_config(&t.path);
    let is_skill = feature::is_skill_or_command(&t.path);
    if is_mcp || is_skill {
        let ctx = st.context(&t.root);
        let ext = st.extensions(&ctx);
        let md = if is_mcp {
            Some(feature::mcp_hover(&ext, &t.path))
        } else {
            feature::skill_hover(&ext, &t.path, &t.root, home)
        };
        if let Some(md) = md {
            return Ok(markdown(md, None));
        }
    }
    if instruction {
        let links = include_links(&t.text, &t.path, home);
        if let Some(link) = link_at(&links, line, col) {
            let lint = st.lint_options(&t.root);
            let exclusion = link
                .target
                .as_deref()
                .and_then(|target| st.context(&t.root).exclusion(target));
            let md = feature::include_hover(
                &st.fs,
                &IncludeHover {
                    link,
                    file: &t.path,
                    lint: &lint,
                    preview_lines: s.hover.include_preview_lines as usize,
                    base: &t.root,
                    home,
                    exclusion: exclusion.as_ref(),
                },
            );
            return Ok(markdown(md, range(link.line, link.start_col, link.end_col)));
        }
        if is_rule_path(&t.path)
            && let Some(glob) = feature::glob_at(&t.text, line, col)
        {
            let ctx = st.context(&t.root);
            let base = ctx.rule_base(&t.path);
            b.ensure_scan(&t.root);
            let files = st.workspace_files(&t.root);
            let md = feature::glob_hover(
                &glob.glob,
                &base,
                files.as_deref(),
                s.hover.glob_examples as usize,
            );
            return Ok(markdown(
                md,
                range(glob.line, glob.col, glob.col + glob.glob.len()),
            ));
        }
    } else if !s.hover.source_files {
        return Ok(None);
    }
    let ctx = st.context(&t.root);
    let attacher = st.attacher_for_file(&ctx, &t.path);
    let others = st.open_attacher(&t.root, &ctx);
    let pending = st.pending_edits();
    let mut md = String::new();
    if instruction {
        let open = st.open_files();
        md.push_str(&format!(
            "This file: {}\n\n---\n\n",
            crate::features::lens::lens_title(&st.fs, &ctx, &t.path, &open)
        ));
    }
    md.push_str(&feature::file_hover(&FileHover {
        ctx: &ctx,
        attacher: &attacher,
        others: others.as_deref(),
        file: &t.path,
        home,
        pending: &pending,
    }));
    Ok(markdown(md, None))
}
