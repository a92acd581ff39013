//! `textDocument/documentLink`: every `@path` of an instruction file, with the resolved path
//! (or why it does not resolve) as the tooltip.

use super::Result;
use ls_types::{DocumentLink, DocumentLinkParams, Range};

use crate::features::links::include_links;
use crate::lsp::Backend;
use crate::lsp::convert::{LineIndex, path_to_uri};

pub fn document_link(b: &Backend, params: DocumentLinkParams) -> Result<Option<Vec<DocumentLink>>> {
    let Some(t) = b.target(&params.text_document.uri) else {
        return Ok(None);
    };
    if !b.state.is_instruction_doc(&t.path) {
        return Ok(None);
    }
    let utf8 = b.utf8();
    let lines = LineIndex::new(&t.text);
    let links = include_links(&t.text, &t.path, b.state.env.home.as_deref())
        .into_iter()
        .map(|l| {
            let range = Range {
                start: lines.position(l.line, l.start_col, utf8),
                end: lines.position(l.line, l.end_col, utf8),
            };
            let (target, tooltip) = match &l.target {
                Some(p) if b.exists(p) => (path_to_uri(p), p.display().to_string()),
                Some(p) => (None, format!("not found: {}", p.display())),
                None => (None, "~/ needs HOME".to_string()),
            };
            DocumentLink {
                range,
                target,
                tooltip: Some(tooltip),
                data: None,
            }
        })
        .collect();
    Ok(Some(links))
}
