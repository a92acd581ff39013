//! `textDocument/didChange` (incremental): applies the edits; an edit of an instruction file (or
//! of a file the context includes) drops what depends on it, re-publishes diagnostics and sends
//! `context/changed`.

use tower_lsp_server::ls_types::DidChangeTextDocumentParams;

use crate::lsp::Backend;
use crate::lsp::convert::apply_changes;

pub async fn did_change(b: &Backend, params: DidChangeTextDocumentParams) {
    let uri = params.text_document.uri.as_str().to_string();
    let Some(mut text) = b.state.docs.get(&uri).map(|d| d.text.clone()) else {
        eprintln!("claude-context: didChange for a document that is not open: {uri}");
        return;
    };
    apply_changes(&mut text, params.content_changes, b.utf8());
    let impact = b.state.set_text(&uri, text, params.text_document.version);
    if impact.context {
        b.context_changed().await;
    }
}
