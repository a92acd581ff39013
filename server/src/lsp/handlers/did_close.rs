//! `textDocument/didClose`: the disk's text applies again, the file no longer counts as touched,
//! and its diagnostics are cleared.

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::lsp::Backend;

pub async fn did_close(b: &Backend, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let impact = b.state.close(uri.as_str());
    b.client.publish_diagnostics(uri, Vec::new(), None).await;
    if impact.context {
        b.context_changed().await;
    }
}
