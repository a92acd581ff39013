//! `workspace/didChangeWorkspaceFolders`: folders are session directories. A folder added late
//! gets what one given at `initialize` gets: its walk, git snapshot and scan warmed, and its
//! watchers (its memory directory); a removed folder's watchers are unregistered.

use ls_types::DidChangeWorkspaceFoldersParams;

use super::initialize;
use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;
use crate::lsp::state::Impact;

pub fn did_change_workspace_folders(b: &Backend, params: DidChangeWorkspaceFoldersParams) {
    let removed: Vec<_> = params
        .event
        .removed
        .iter()
        .filter_map(|f| uri_to_path(&f.uri))
        .collect();
    let mut folders: Vec<_> = b
        .state
        .folders()
        .into_iter()
        .filter(|f| !removed.contains(f))
        .collect();
    let mut added = Vec::new();
    for f in params
        .event
        .added
        .iter()
        .filter_map(|f| uri_to_path(&f.uri))
    {
        if !folders.contains(&f) {
            folders.push(f.clone());
            added.push(f);
        }
    }
    b.state.set_folders(folders);
    initialize::folders_changed(b, added, removed);
    b.changed(
        Impact {
            context: true,
            maybe_attaches: None,
        },
        None,
    );
}
