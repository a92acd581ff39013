//! `textDocument/didOpen`: the document's text overlays the disk; an open file counts as touched
//! (its conditional rules and nested instruction files attach in previews and hovers).

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;

pub async fn did_open(b: &Backend, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    let uri = doc.uri.as_str().to_string();
    let path = uri_to_path(&doc.uri);
    let impact = b.state.open(uri.clone(), path, doc.text, doc.version);
    let opened = b.state.docs.get(&uri).map(|d| d.clone());
    if impact.context {
        b.context_changed().await;
    } else if let Some(d) = opened {
        b.publish(&d).await;
    }
}
