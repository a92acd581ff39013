//! `workspace/didChangeWatchedFiles`: a file or a folder changed on disk. Open documents are
//! skipped (the editor's text is what counts for them); for the others, only what depends on
//! the path, or on anything below it (VS Code reports a deleted or renamed folder as one
//! event), is dropped. Creations and deletions also make the workspace file list old. Every
//! path (open documents too: the git status is about the disk) goes to the git status caches.

use ls_types::{DidChangeWatchedFilesParams, FileChangeType};

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;
use crate::lsp::state::Impact;

pub fn did_change_watched_files(b: &Backend, params: DidChangeWatchedFilesParams) {
    let mut impact = Impact::default();
    let mut on_disk = Vec::with_capacity(params.changes.len());
    for change in params.changes {
        let Some(path) = uri_to_path(&change.uri) else {
            continue;
        };
        on_disk.push(path.clone());
        if b.state.docs.contains_key(change.uri.as_str()) {
            continue;
        }
        if change.typ != FileChangeType::CHANGED {
            let root = b.state.root_for(&path);
            b.scan_outdated(&root);
        }
        impact.context |= b.state.path_changed_on_disk(&path).context;
    }
    b.files_changed_on_disk(&on_disk);
    if impact.context {
        b.changed(impact, None);
    }
}
