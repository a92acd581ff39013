//! `textDocument/didChange` (incremental): applies the edits to the client's own view of the
//! document (which lags behind an edit the client applied for us and has not reported yet: see
//! [`crate::lsp::state::ExpectedEdit`]); an edit of an instruction file (or of a file the context
//! includes) drops what depends on it and schedules the refresh (diagnostics, `context/changed`).

use std::sync::Arc;

use ls_types::DidChangeTextDocumentParams;

use crate::lsp::Backend;
use crate::lsp::convert::apply_changes;

pub fn did_change(b: &Backend, params: DidChangeTextDocumentParams) {
    let uri = params.text_document.uri.as_str().to_string();
    let Some(old) = b.state.reported_text(&uri) else {
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
