//! `textDocument/definition` on an `@path`: the included file.

use super::Result;
use ls_types::{GotoDefinitionParams, GotoDefinitionResponse, Location, Range};

use crate::features::links::{include_links, link_at};
use crate::lsp::Backend;
use crate::lsp::convert::{byte_col, line_str, path_to_uri};

pub fn goto_definition(
    b: &Backend,
    params: GotoDefinitionParams,
) -> Result<Option<GotoDefinitionResponse>> {
    let pos = params.text_document_position_params;
    let Some(t) = b.target(&pos.text_document.uri) else {
        return Ok(None);
    };
    let line = pos.position.line as usize;
    let col = byte_col(line_str(&t.text, line), pos.position.character, b.utf8());
    let links = include_links(&t.text, &t.path, b.state.env.home.as_deref());
    let Some(target) = link_at(&links, line, col).and_then(|l| l.target.clone()) else {
        return Ok(None);
    };
    if !b.exists(&target) {
        return Ok(None);
    }
    Ok(path_to_uri(&target).map(|uri| {
        GotoDefinitionResponse::Scalar(Location {
            uri,
            range: Range::default(),
        })
    }))
}
