//! `workspace/didChangeWatchedFiles`: a file changed on disk. Open documents are skipped (the
//! editor's text is what counts for them); for the others, only what depends on the file is
//! dropped. Creations and deletions also make the workspace file list old.

use tower_lsp_server::ls_types::{DidChangeWatchedFilesParams, FileChangeType};

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;

pub async fn did_change_watched_files(b: &Backend, params: DidChangeWatchedFilesParams) {
    let mut context = false;
    for change in params.changes {
        if b.state.docs.contains_key(change.uri.as_str()) {
            continue;
        }
        let Some(path) = uri_to_path(&change.uri) else {
            continue;
        };
        if change.typ != FileChangeType::CHANGED {
            let root = b.state.root_for(&path);
            b.scan_outdated(&root);
        }
        context |= b.state.file_changed(&path).context;
    }
    if context {
        b.context_changed().await;
    }
}
