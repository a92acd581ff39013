//! `workspace/didChangeWorkspaceFolders`: folders are session directories.

use tower_lsp_server::ls_types::DidChangeWorkspaceFoldersParams;

use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;

pub async fn did_change_workspace_folders(b: &Backend, params: DidChangeWorkspaceFoldersParams) {
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
    for f in params
        .event
        .added
        .iter()
        .filter_map(|f| uri_to_path(&f.uri))
    {
        if !folders.contains(&f) {
            folders.push(f);
        }
    }
    b.state.set_folders(folders);
    b.publish_all().await;
    b.notify_changed().await;
}
