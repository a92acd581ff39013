//! `textDocument/completion`: paths after `@`, frontmatter keys and values.

use super::Result;
use ls_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, CompletionTextEdit,
    Range, TextEdit,
};

use crate::features::completion::{ItemKind, complete};
use crate::lsp::Backend;
use crate::lsp::convert::{byte_col, line_str, position};

pub fn completion(b: &Backend, params: CompletionParams) -> Result<Option<CompletionResponse>> {
    let pos = params.text_document_position;
    let Some(t) = b.target(&pos.text_document.uri) else {
        return Ok(None);
    };
    if !b.state.is_instruction_doc(&t.path) {
        return Ok(None);
    }
    let utf8 = b.utf8();
    let line = pos.position.line as usize;
    let col = byte_col(line_str(&t.text, line), pos.position.character, utf8);
    let items = complete(
        &b.state.fs,
        &t.text,
        &t.path,
        b.state.env.home.as_deref(),
        line,
        col,
    );
    let cursor = position(&t.text, line, col, utf8);
    let items: Vec<CompletionItem> = items
        .into_iter()
        .map(|i| CompletionItem {
            kind: Some(match i.kind {
                ItemKind::File => CompletionItemKind::FILE,
                ItemKind::Folder => CompletionItemKind::FOLDER,
                ItemKind::Key => CompletionItemKind::PROPERTY,
                ItemKind::Value => CompletionItemKind::ENUM_MEMBER,
            }),
            detail: i.detail,
            text_edit: Some(CompletionTextEdit::Edit(TextEdit {
                range: Range {
                    start: position(&t.text, line, i.replace_start, utf8),
                    end: cursor,
                },
                new_text: i.insert,
            })),
            label: i.label,
            ..CompletionItem::default()
        })
        .collect();
    Ok(Some(CompletionResponse::Array(items)))
}
