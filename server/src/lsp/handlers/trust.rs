//! `trust/changed` (client → server): the editor's own workspace trust changed (VS Code granted
//! it). It is the answer for every folder from now on: the previews are redone, and the chat
//! sessions follow it (one that opened restricted starts its project's MCP servers).

use crate::lsp::Backend;
use crate::lsp::ext::TrustChangedParams;
use crate::lsp::state::Impact;

pub fn changed(b: &Backend, p: TrustChangedParams) {
    if b.state.editor_trust().is_none() {
        // Only an editor that said it has a workspace trust of its own (`workspaceTrust` in
        // `initializationOptions`) speaks for it.
        crate::log_warn!(
            "trust/changed ignored: the client gave no workspaceTrust in initializationOptions"
        );
        return;
    }
    if b.state.set_editor_trust(Some(p.trusted)) {
        b.state.chats.editor_trust(p.trusted);
        b.changed(
            Impact {
                context: true,
                maybe_attaches: None,
            },
            None,
        );
    }
}
