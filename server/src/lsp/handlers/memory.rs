//! Auto-memory extraction for the language server's chat sessions: a session gets the
//! [`Extractor`] as its after-turn hook (when `chat.autoMemory` is on and
//! `CLAUDE_CONTEXT_AUTO_MEMORY` is not `0`), and the files it writes are handled like a change on
//! disk, so the session's preview shows MEMORY.md as pending at once and `context/changed` follows.

use std::path::PathBuf;
use std::sync::Arc;

use crate::lsp::Backend;
use crate::lsp::state::Impact;
use crate::session::Session;
use crate::session::memory::Extractor;

/// Sets the memory extraction hook on a new or resumed session.
pub fn attach(b: &Backend, session: &Session) {
    if crate::session::memory::off_by_env(&b.state.env) || !b.state.settings().chat.auto_memory {
        return;
    }
    // Not the request's deferring backend: a save happens long after the request answered.
    let bg = Backend::new(b.state.clone(), b.client.clone(), b.tasks.clone());
    let on_saved = move |paths: &[PathBuf]| {
        let mut impact = Impact::default();
        for p in paths {
            impact.context |= bg.state.path_changed_on_disk(p).context;
        }
        if impact.context {
            bg.changed(impact, None);
        }
    };
    session.set_after_turn(Arc::new(
        Extractor::new(b.tasks.clone()).on_saved(Arc::new(on_saved)),
    ));
}
