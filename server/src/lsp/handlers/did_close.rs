//! `textDocument/didClose`: the disk's text applies again, the file no longer counts as touched,
//! and its diagnostics are cleared.

use ls_types::DidCloseTextDocumentParams;

use crate::lsp::Backend;
use crate::tasks::{OnConflict, TaskKind};

pub fn did_close(b: &Backend, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let impact = b.state.close(uri.as_str());
    let client = b.client.clone();
    let key = format!("clear:{}", uri.as_str());
    b.spawn(
        TaskKind::Debounce,
        key,
        OnConflict::Replace,
        move |_| async move {
            client.publish_diagnostics(uri, Vec::new(), None).await;
        },
    );
    if impact.context || impact.maybe_attaches.is_some() {
        b.changed(impact, None);
    }
}
