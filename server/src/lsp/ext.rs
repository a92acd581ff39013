//! Custom protocol types (`context/preview`, `context/changed`), their JSON Schemas, and the
//! field-naming explanation of invalid params.
//!
//! Every custom method is listed in [`METHODS`]; `tests/schemas.rs` checks that `schemas/` holds
//! the schemas [`schemas`] generates and that `docs/protocol.md` has a section for each method.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::features::preview::Preview;
use crate::features::settings::Settings;

pub const PREVIEW: &str = "context/preview";
pub const CHANGED: &str = "context/changed";

/// A document named by URI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentRef {
    /// A `file:` URI.
    pub uri: String,
}

/// Params of `context/preview`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewParams {
    /// The document a new session would work on: it is touched first (its conditional rules and
    /// nested instruction files attach), and its workspace folder is the session's directory.
    /// Without it: the first workspace folder, with the open files touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_document: Option<DocumentRef>,
    /// A running chat session (reserved: this server version has no sessions yet, so any value
    /// is answered with an "unknown session" error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Result of `context/preview`: the preview of `claude-context preview --json` plus editor
/// fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewResult {
    #[serde(flatten)]
    pub preview: Preview,
    /// The `textDocument.uri` of the request, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// Files touched for this preview, in order: the document first, then the other open files
    /// (when `rules.activateFromOpenFiles` is on).
    pub touched: Vec<PathBuf>,
    /// The root's first git snapshot is still being taken: `blocks` has no git block yet. A
    /// `context/changed` notification follows when it is ready.
    pub git_pending: bool,
}

/// Params of the `context/changed` notification (server → client).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextChangedParams {
    /// Open documents whose effective context changed; absent when every preview may have
    /// changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uris: Option<Vec<String>>,
}

/// `context/changed` as an LSP notification type.
pub enum ContextChanged {}

impl tower_lsp_server::ls_types::notification::Notification for ContextChanged {
    type Params = ContextChangedParams;
    const METHOD: &'static str = CHANGED;
}

/// Which way a custom method goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// A custom method and the schema files of its params and result.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    pub name: &'static str,
    pub direction: Direction,
    /// Notifications have no result.
    pub notification: bool,
}

/// Every custom method this server speaks.
pub const METHODS: &[Method] = &[
    Method {
        name: PREVIEW,
        direction: Direction::ClientToServer,
        notification: false,
    },
    Method {
        name: CHANGED,
        direction: Direction::ServerToClient,
        notification: true,
    },
];

/// `context/preview` → `context-preview`.
pub fn file_stem(method: &str) -> String {
    method.replace('/', "-")
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}

/// Every schema file of `schemas/`: `(file name, schema)`.
pub fn schemas() -> Vec<(String, Value)> {
    vec![
        (
            format!("{}.params.schema.json", file_stem(PREVIEW)),
            schema::<PreviewParams>(),
        ),
        (
            format!("{}.result.schema.json", file_stem(PREVIEW)),
            schema::<PreviewResult>(),
        ),
        (
            format!("{}.params.schema.json", file_stem(CHANGED)),
            schema::<ContextChangedParams>(),
        ),
        ("settings.schema.json".to_string(), schema::<Settings>()),
    ]
}

/// Re-reads `params` as `method`'s parameter type to say which field is wrong:
/// `Invalid params: textDocument.position.line: invalid type: string "x", expected u32`.
pub fn explain_params(method: &str, params: Option<Value>) -> Option<String> {
    use tower_lsp_server::ls_types as t;
    fn check<T: serde::de::DeserializeOwned>(params: Option<Value>) -> Option<String> {
        let Some(params) = params else {
            return Some("Invalid params: params: missing (send an object)".into());
        };
        match serde_path_to_error::deserialize::<_, T>(&params) {
            Ok(_) => None,
            Err(e) => {
                let path = e.path().to_string();
                let path = if path == "." {
                    "params".to_string()
                } else {
                    path
                };
                Some(format!("Invalid params: {path}: {}", e.inner()))
            }
        }
    }
    match method {
        "initialize" => check::<t::InitializeParams>(params),
        // These flatten `TextDocumentPositionParams`, which hides paths: check it on its own first.
        "textDocument/hover" | "textDocument/definition" | "textDocument/completion" => {
            check::<t::TextDocumentPositionParams>(params.clone()).or_else(|| match method {
                "textDocument/hover" => check::<t::HoverParams>(params),
                "textDocument/definition" => check::<t::GotoDefinitionParams>(params),
                _ => check::<t::CompletionParams>(params),
            })
        }
        "textDocument/documentLink" => check::<t::DocumentLinkParams>(params),
        "textDocument/codeLens" => check::<t::CodeLensParams>(params),
        PREVIEW => check::<PreviewParams>(params),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn explanations_name_the_field() {
        let m = explain_params(
            "textDocument/hover",
            Some(json!({"textDocument": {"uri": "file:///a"}, "position": {"line": "x", "character": 0}})),
        )
        .unwrap();
        assert!(
            m.starts_with("Invalid params: position.line: invalid type"),
            "{m}"
        );
        let m = explain_params(
            "textDocument/hover",
            Some(json!({"position": {"line": 0, "character": 0}})),
        )
        .unwrap();
        assert!(m.contains("missing field `textDocument`"), "{m}");
        let m = explain_params(PREVIEW, Some(json!({"textDocument": {"uri": 5}}))).unwrap();
        assert!(
            m.starts_with("Invalid params: textDocument.uri: invalid type"),
            "{m}"
        );
    }
}
