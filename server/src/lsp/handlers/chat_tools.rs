//! The chat's tools through the editor: the [`Asker`] that sends `chat/permission` and the
//! [`Editor`] over the server's open documents and `workspace/applyEdit`.
//!
//! - [`LspAsker`] asks the client with `chat/permission {sessionId, tool, input, summary,
//!   sessionScope, warning, choices}` and waits (at most [`PERMISSION_TIMEOUT`]; a cancelled
//!   tool call drops the wait, and the client gets `$/cancelRequest`). Anything but a
//!   well-formed answer (an error, a client without the method, no answer in time) is a denial,
//!   logged with its reason, and no answer at all for a question that is remembered (an MCP
//!   server's approval: `tool: "mcpServer"`).
//! - [`LspEditor`] reads an open document's text from the document store (the editor's unsaved
//!   text) and applies edits with `workspace/applyEdit` when the client declared
//!   `workspace.applyEdit`. The edit is refused when the buffer changed since the tool read it;
//!   positions are in the negotiated encoding (UTF-16 by default, via [`crate::session::seams::Positions`]);
//!   versioned `documentChanges` when the client supports them; an answer `applied: false` is an
//!   error for the model, with the client's reason. Once applied, the document's text is the
//!   edited text whether the client's `didChange` came before the answer, comes later or never
//!   (see [`crate::lsp::state::ExpectedEdit`]), so a second edit is computed on the first's result.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::lsp::Backend;
use crate::lsp::chat_ext::{PERMISSION, PermissionDecision, PermissionParams, PermissionResult};
use crate::lsp::outbox::Client;
use crate::lsp::state::{EditTicket, State};
use crate::session::seams::{
    Asker, BufferEdit, Decision, Editor, PermissionRequest, Positions, apply_edits,
};

/// How long a permission prompt may stay unanswered before the call is denied.
pub const PERMISSION_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How long the client may take to apply an edit to its buffer.
pub const APPLY_EDIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Asks the editor's user (`chat/permission`) for one session.
pub struct LspAsker {
    pub client: Client,
    pub session_id: String,
}

impl Asker for LspAsker {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move { self.answer(request).await.unwrap_or(Decision::Deny) })
    }

    fn answer(&self, request: PermissionRequest) -> BoxFuture<'_, Option<Decision>> {
        Box::pin(async move {
            let params = PermissionParams {
                session_id: self.session_id.clone(),
                tool: request.tool,
                input: request.input,
                summary: request.summary,
                session_scope: request.session_scope,
                warning: request.warning,
                reason: request.reason,
                choices: request.choices,
            };
            let answer = self
                .client
                .request_within(PERMISSION, &params, Some(PERMISSION_TIMEOUT))
                .await;
            match answer {
                Ok(v) => match serde_json::from_value::<PermissionResult>(v) {
                    Ok(r) => Some(match r.decision {
                        PermissionDecision::Allow => Decision::Allow,
                        PermissionDecision::AllowSession => Decision::AllowSession,
                        PermissionDecision::Deny => Decision::Deny,
                    }),
                    Err(e) => {
                        crate::log_warn!(
                            "{PERMISSION}: the client's answer is not {{decision: allow|allowSession|deny}} ({e}); denied"
                        );
                        None
                    }
                },
                Err(e) => {
                    crate::log_warn!("{PERMISSION}: {} ({}); denied", e.message, e.code);
                    None
                }
            }
        })
    }
}

/// The editor's buffers, as the tools see them.
pub struct LspEditor {
    pub state: Arc<State>,
    pub client: Client,
    /// Starts the refresh after an edit of an instruction file (not a request's deferring copy:
    /// tool calls run after the request that started the turn was answered).
    pub backend: Backend,
}

impl LspEditor {
    /// The open document at `path`: its URI and text.
    fn document(&self, path: &Path) -> Option<(String, Arc<str>)> {
        self.state
            .docs
            .iter()
            .find(|d| d.path.as_deref() == Some(path))
            .map(|d| (d.uri.clone(), d.text.clone()))
    }
}

/// Settles an announced edit when the wait for the client's answer ends in any way, a cancelled
/// tool call included (then as not applied: a later `didChange` still tells what happened).
struct Answered<'a> {
    editor: &'a LspEditor,
    ticket: EditTicket,
    applied: bool,
}

impl Drop for Answered<'_> {
    fn drop(&mut self) {
        let impact = self.editor.state.edit_answered(&self.ticket, self.applied);
        if impact.context {
            self.editor.backend.changed(impact, None);
        }
    }
}

impl Editor for LspEditor {
    fn open_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>> {
        let text = self.document(path).map(|(_, t)| t.to_string());
        Box::pin(async move { text })
    }

    fn can_apply_edits(&self) -> bool {
        self.state.client_caps().apply_edit
    }

    fn apply_edit(&self, edit: BufferEdit) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let after: Arc<str> = Arc::from(apply_edits(&edit.base, &edit.edits));
            let ticket = self.state.expect_edit(&edit.path, &edit.base, after)?;
            let mut answered = Answered {
                editor: self,
                ticket: ticket.clone(),
                applied: false,
            };
            let caps = self.state.client_caps();
            // The edits are sorted: one pass over the buffer for all their positions; and they
            // are serialized straight from these small structs (no JSON tree per edit).
            let mut at = Positions::new(&edit.base);
            let edits: Vec<EditOut<'_>> = edit
                .edits
                .iter()
                .map(|e| EditOut {
                    range: RangeOut {
                        start: position(&mut at, e.range.start, caps.utf8_positions),
                        end: position(&mut at, e.range.end, caps.utf8_positions),
                    },
                    new_text: &e.new_text,
                })
                .collect();
            // With versions, a client whose buffer moved on since refuses the edit instead of
            // applying it to other text.
            let workspace_edit = if caps.document_changes {
                WorkspaceEditOut::Versioned(DocumentChangesOut {
                    document_changes: vec![DocumentEditOut {
                        text_document: DocumentIdOut {
                            uri: &ticket.uri,
                            version: ticket.version,
                        },
                        edits,
                    }],
                })
            } else {
                WorkspaceEditOut::Changes(ChangesOut {
                    changes: std::iter::once((ticket.uri.as_str(), edits)).collect(),
                })
            };
            let params = ApplyOut {
                label: &edit.label,
                edit: workspace_edit,
            };
            let answer = self
                .client
                .request_within("workspace/applyEdit", &params, Some(APPLY_EDIT_TIMEOUT))
                .await
                .map_err(|e| format!("the editor did not apply the edit: {}", e.message))?;
            match serde_json::from_value::<ls_types::ApplyWorkspaceEditResponse>(answer) {
                Ok(r) if r.applied => {
                    answered.applied = true;
                    Ok(())
                }
                Ok(r) => Err(match r.failure_reason {
                    Some(why) => format!("the editor refused the edit: {why}"),
                    None => "the editor refused the edit (it gave no reason)".to_string(),
                }),
                Err(e) => Err(format!(
                    "the editor's answer to workspace/applyEdit is not {{applied}} ({e}); the edit may not have been applied"
                )),
            }
        })
    }
}

/// `workspace/applyEdit`'s params, as sent.
#[derive(serde::Serialize)]
struct ApplyOut<'a> {
    label: &'a str,
    edit: WorkspaceEditOut<'a>,
}

/// `changes`, or versioned `documentChanges` when the client supports them.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum WorkspaceEditOut<'a> {
    Changes(ChangesOut<'a>),
    Versioned(DocumentChangesOut<'a>),
}

#[derive(serde::Serialize)]
struct DocumentChangesOut<'a> {
    #[serde(rename = "documentChanges")]
    document_changes: Vec<DocumentEditOut<'a>>,
}

#[derive(serde::Serialize)]
struct DocumentEditOut<'a> {
    #[serde(rename = "textDocument")]
    text_document: DocumentIdOut<'a>,
    edits: Vec<EditOut<'a>>,
}

/// The document and the version the edits apply to (`null`: not known).
#[derive(serde::Serialize)]
struct DocumentIdOut<'a> {
    uri: &'a str,
    version: Option<i32>,
}

#[derive(serde::Serialize)]
struct ChangesOut<'a> {
    changes: std::collections::BTreeMap<&'a str, Vec<EditOut<'a>>>,
}

#[derive(serde::Serialize)]
struct EditOut<'a> {
    range: RangeOut,
    #[serde(rename = "newText")]
    new_text: &'a str,
}

#[derive(serde::Serialize, Debug, PartialEq)]
struct RangeOut {
    start: PositionOut,
    end: PositionOut,
}

#[derive(serde::Serialize, Debug, PartialEq)]
struct PositionOut {
    line: u32,
    character: u32,
}

/// The LSP position of byte `offset` (from a cursor over the text): UTF-16 columns, or bytes
/// when the client negotiated UTF-8.
fn position(at: &mut Positions<'_>, offset: usize, utf8: bool) -> PositionOut {
    let (p, bytes) = at.at(offset);
    let character = if utf8 { bytes } else { p.character };
    PositionOut {
        line: p.line,
        character,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn positions_follow_the_negotiated_encoding() {
        let t = "é😀x\r\nab";
        let at = |offset: usize, utf8: bool| {
            serde_json::to_value(position(&mut Positions::new(t), offset, utf8)).unwrap()
        };
        let x = t.find('x').unwrap();
        assert_eq!(at(x, false), json!({"line": 0, "character": 3}));
        assert_eq!(at(x, true), json!({"line": 0, "character": 6}));
        let b = t.find('b').unwrap();
        assert_eq!(at(b, true), json!({"line": 1, "character": 1}));
        assert_eq!(at(b, false), json!({"line": 1, "character": 1}));
        // One cursor, increasing offsets: the same answers as fresh ones.
        let mut one = Positions::new(t);
        for offset in 0..=t.len() {
            let p = serde_json::to_value(position(&mut one, offset, false)).unwrap();
            assert_eq!(p, at(offset, false), "{offset}");
        }
    }
}
