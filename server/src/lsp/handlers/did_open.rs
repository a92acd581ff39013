//! `textDocument/didOpen`: the document's text overlays the disk; an open file counts as touched
//! (its conditional rules and nested instruction files attach in previews and hovers). The
//! refresh decides off the main loop whether that changed anything, and lints the document.

use std::sync::Arc;

use ls_types::DidOpenTextDocumentParams;

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;

pub fn did_open(b: &Backend, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    let uri = doc.uri.as_str().to_string();
    let path = uri_to_path(&doc.uri);
    let impact = b
        .state
        .open(uri.clone(), path, Arc::from(doc.text), doc.version);
    b.changed(impact, Some(&uri));
}
