//! `textDocument/codeLens`: at the top of an instruction file, its tokens and where it applies.
//! The lens's command `claudeContext.showPreview` (argument: the document URI) is for clients to
//! implement (open the preview); clients without it just show the title.

use super::Result;
use ls_types::{CodeLens, CodeLensParams, Command, Range};

use crate::features::lens::lens_title;
use crate::lsp::Backend;

pub fn code_lens(b: &Backend, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
    if !b.state.settings().code_lens.enabled {
        return Ok(None);
    }
    let uri = params.text_document.uri;
    let Some(t) = b.target(&uri) else {
        return Ok(None);
    };
    if !b.state.is_instruction_doc(&t.path) {
        return Ok(None);
    }
    let ctx = b.state.context(&t.root);
    let open = b.state.open_files();
    let title = lens_title(&b.state.fs, &ctx, &t.path, &open);
    Ok(Some(vec![CodeLens {
        range: Range::default(),
        command: Some(Command {
            title,
            command: "claudeContext.showPreview".into(),
            arguments: Some(vec![serde_json::Value::String(uri.as_str().to_string())]),
        }),
        data: None,
    }]))
}
