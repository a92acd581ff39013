//! `workspace/didChangeWatchedFiles`: a file or a folder changed on disk. Open documents are
//! skipped (the editor's text is what counts for them); for the others, only what depends on
//! the path, or on anything below it (VS Code reports a deleted or renamed folder as one
//! event), is dropped. Creations and deletions also make the workspace file list old. Every
//! path (open documents too: the git status is about the disk) goes to the git status caches.
//! The server's own watcher ([`crate::lsp::watch`], for clients that cannot watch) reports
//! through [`on_disk`] too.

use std::collections::HashSet;
use std::path::PathBuf;

use ls_types::{DidChangeWatchedFilesParams, FileChangeType};

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;
use crate::lsp::state::Impact;

/// What happened to a path on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskChange {
    Created,
    Changed,
    Deleted,
}

pub fn did_change_watched_files(b: &Backend, params: DidChangeWatchedFilesParams) {
    let changes = params
        .changes
        .into_iter()
        .filter_map(|c| {
            let kind = match c.typ {
                FileChangeType::CREATED => DiskChange::Created,
                FileChangeType::DELETED => DiskChange::Deleted,
                _ => DiskChange::Changed,
            };
            Some((uri_to_path(&c.uri)?, kind))
        })
        .collect();
    on_disk(b, changes);
}

/// Paths changed on disk, from the client's watchers or the server's own.
pub(crate) fn on_disk(b: &Backend, changes: Vec<(PathBuf, DiskChange)>) {
    let open: HashSet<PathBuf> = b.state.docs.iter().filter_map(|d| d.path.clone()).collect();
    let mut impact = Impact::default();
    let mut paths = Vec::with_capacity(changes.len());
    for (path, kind) in changes {
        paths.push(path.clone());
        if open.contains(&path) {
            continue;
        }
        if kind != DiskChange::Changed {
            let root = b.state.root_for(&path);
            b.scan_outdated(&root);
        }
        impact.context |= b.state.path_changed_on_disk(&path).context;
    }
    b.files_changed_on_disk(&paths);
    if impact.context {
        b.changed(impact, None);
    }
}
