//! `context/preview`: the context a new session would see, for a document (or the first
//! workspace folder). Answered from the preview cache when nothing changed; never waits for the
//! git snapshot (`gitPending` says when the first one is still being taken). With `sessionId`:
//! the session's next request ([`super::chat::preview`]). With `runHooks`: the SessionStart and
//! UserPromptSubmit hooks run once (a trusted folder only), never cached.

use std::path::PathBuf;
use std::sync::Arc;

use super::Result;

use super::invalid_params;
use crate::lsp::Backend;
use crate::lsp::convert::{parse_uri, uri_to_path};
use crate::lsp::ext::{PreviewParams, PreviewResult};

pub fn preview(b: &Backend, params: PreviewParams) -> Result<Arc<PreviewResult>> {
    if let Some(id) = &params.session_id {
        return super::chat::preview(b, id).map(Arc::new);
    }
    let st = &b.state;
    let (root, doc, uri) = match &params.text_document {
        Some(d) => {
            let parsed =
                parse_uri(&d.uri).map_err(|e| invalid_params(format!("textDocument.uri: {e}")))?;
            let path = uri_to_path(&parsed).ok_or_else(|| {
                invalid_params(format!("textDocument.uri: {:?} is not a file: URI", d.uri))
            })?;
            (st.root_for(&path), Some(path), Some(d.uri.clone()))
        }
        None => {
            let root: PathBuf = st
                .folders()
                .into_iter()
                .next()
                .unwrap_or_else(|| st.env.process_cwd.clone());
            (root, None, None)
        }
    };
    let run = params
        .run_hooks
        .then(|| params.prompt.as_deref().unwrap_or_default());
    let value = st.preview(&root, doc.as_deref(), uri.as_deref(), run, || {
        b.git_for(&root)
    });
    Ok(value)
}
