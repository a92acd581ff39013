//! `textDocument/didChange` (incremental): applies the edits; an edit of an instruction file (or
//! of a file the context includes) drops what depends on it and schedules the refresh
//! (diagnostics, `context/changed`).

use std::sync::Arc;

use ls_types::DidChangeTextDocumentParams;

use crate::lsp::Backend;
use crate::lsp::convert::apply_changes;

pub fn did_change(b: &Backend, params: DidChangeTextDocumentParams) {
    let uri = params.text_document.uri.as_str().to_string();
    let Some(old) = b.state.text(&uri) else {
        crate::log_warn!("didChange for a document that is not open: {uri}");
        return;
    };
    let text = apply_changes(&old, params.content_changes, b.utf8());
    let impact = b
        .state
        .set_text(&uri, Arc::from(text), params.text_document.version);
    if impact.context {
        b.changed(impact, None);
    }
}
