//! Custom protocol types (`context/preview`, `context/changed`, `trust/changed`) and the one registry of custom
//! methods, [`METHODS`], from which the method list of `initialize`, the schemas in `schemas/`,
//! the params explanations and the docs check are derived.
//!
//! A method is a type implementing [`CustomRequest`] or [`CustomNotification`]; add it to
//! [`METHODS`] and route it in [`super::routes`]. `tests/schemas.rs` checks that `schemas/` holds
//! the schemas [`schemas`] generates and that `docs/protocol.md` has a section for each method;
//! `tests/e2e/tidy.rs` that each client → server method has a route.

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::chat_ext;
use crate::features::preview::Preview;
use crate::features::settings::Settings;

pub const PREVIEW: &str = "context/preview";
pub const CHANGED: &str = "context/changed";
pub const TRUST_CHANGED: &str = "trust/changed";

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
    /// A chat session of this server (`chat/new`, `chat/resume`): the preview is what its next
    /// request would contain, with its frozen instructions and git, the attachments the open
    /// files would add, the token count from the last `usage`, and edits since its start as
    /// `pending`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Run the SessionStart and UserPromptSubmit hooks once (in a trusted folder only; not with
    /// `sessionId`) and show their texts in `hooks.run` and in the blocks, as one run's output.
    /// Without it, no hook runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_hooks: bool,
    /// The prompt the UserPromptSubmit hooks get with `runHooks` (default: empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
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
    /// With `sessionId`: the session's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<super::chat_ext::SessionPreview>,
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

/// Params of the `trust/changed` notification (client → server): the editor's own workspace
/// trust changed (VS Code granted it). Only an editor that has a workspace trust of its own
/// sends it, and only with `workspaceTrust` in its `initializationOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustChangedParams {
    /// The workspace is trusted now.
    pub trusted: bool,
}

/// A custom request: its method name and types. The route, the schemas, the params
/// explanation and the docs check all come from these.
pub trait CustomRequest {
    const METHOD: &'static str;
    type Params: DeserializeOwned + Serialize + JsonSchema + 'static;
    type Result: Serialize + JsonSchema + 'static;
}

/// A custom notification.
pub trait CustomNotification {
    const METHOD: &'static str;
    type Params: DeserializeOwned + Serialize + JsonSchema + 'static;
}

/// `context/preview`.
pub enum PreviewRequest {}

impl CustomRequest for PreviewRequest {
    const METHOD: &'static str = PREVIEW;
    type Params = PreviewParams;
    /// Shared with the preview cache: serialised straight from it.
    type Result = Arc<PreviewResult>;
}

/// `context/changed` (server → client).
pub enum ContextChanged {}

impl CustomNotification for ContextChanged {
    const METHOD: &'static str = CHANGED;
    type Params = ContextChangedParams;
}

/// `trust/changed` (client → server).
pub enum TrustChanged {}

impl CustomNotification for TrustChanged {
    const METHOD: &'static str = TRUST_CHANGED;
    type Params = TrustChangedParams;
}

/// Which way a custom method goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// A custom method: its name, direction, and its types' schemas and params check.
#[derive(Clone, Copy)]
pub struct Method {
    pub name: &'static str,
    pub direction: Direction,
    /// Notifications have no result.
    pub notification: bool,
    pub params_schema: fn() -> Value,
    pub result_schema: Option<fn() -> Value>,
    /// The params error, naming the field, or `None` when they fit.
    pub check_params: fn(Option<Value>) -> Option<String>,
}

const fn request<M: CustomRequest>(direction: Direction) -> Method {
    Method {
        name: M::METHOD,
        direction,
        notification: false,
        params_schema: schema::<M::Params>,
        result_schema: Some(schema::<M::Result>),
        check_params: check::<M::Params>,
    }
}

const fn notification<M: CustomNotification>(direction: Direction) -> Method {
    Method {
        name: M::METHOD,
        direction,
        notification: true,
        params_schema: schema::<M::Params>,
        result_schema: None,
        check_params: check::<M::Params>,
    }
}

/// Every custom method this server speaks: the one registry.
pub const METHODS: &[Method] = &[
    request::<PreviewRequest>(Direction::ClientToServer),
    notification::<ContextChanged>(Direction::ServerToClient),
    request::<chat_ext::New>(Direction::ClientToServer),
    request::<chat_ext::List>(Direction::ClientToServer),
    request::<chat_ext::Resume>(Direction::ClientToServer),
    request::<chat_ext::Send>(Direction::ClientToServer),
    request::<chat_ext::Cancel>(Direction::ClientToServer),
    notification::<chat_ext::Event>(Direction::ServerToClient),
    request::<chat_ext::Permission>(Direction::ServerToClient),
    request::<chat_ext::CompactRun>(Direction::ClientToServer),
    request::<chat_ext::SetMode>(Direction::ClientToServer),
    request::<chat_ext::SetStyle>(Direction::ClientToServer),
    notification::<chat_ext::ModeChanged>(Direction::ServerToClient),
    notification::<TrustChanged>(Direction::ClientToServer),
];

/// `context/preview` → `context-preview`.
pub fn file_stem(method: &str) -> String {
    method.replace('/', "-")
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}

/// Every schema file of `schemas/`: `(file name, schema)`, from [`METHODS`] and the settings.
pub fn schemas() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for m in METHODS {
        out.push((
            format!("{}.params.schema.json", file_stem(m.name)),
            (m.params_schema)(),
        ));
        if let Some(result) = m.result_schema {
            out.push((
                format!("{}.result.schema.json", file_stem(m.name)),
                result(),
            ));
        }
    }
    out.push(("settings.schema.json".to_string(), schema::<Settings>()));
    out.into_iter().map(|(n, s)| (n, sorted(s))).collect()
}

/// `v` with every object's keys in sorted order: the schema files do not depend on whether
/// serde_json keeps insertion order (its `preserve_order` feature, which a dependency turns on).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn check<T: DeserializeOwned>(params: Option<Value>) -> Option<String> {
    let params = match params {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p) => p,
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
            Some(format!("{path}: {}", e.inner()))
        }
    }
}

/// Re-reads `params` as `method`'s parameter type to say which field is wrong:
/// `position.line: invalid type: string "x", expected u32` (without the `Invalid params: `
/// prefix, which the caller adds once).
pub fn explain_params(method: &str, params: Option<Value>) -> Option<String> {
    use ls_types as t;
    if let Some(m) = METHODS.iter().find(|m| m.name == method) {
        return (m.check_params)(params);
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
        assert!(m.starts_with("position.line: invalid type"), "{m}");
        let m = explain_params(
            "textDocument/hover",
            Some(json!({"position": {"line": 0, "character": 0}})),
        )
        .unwrap();
        assert!(m.contains("missing field `textDocument`"), "{m}");
        let m = explain_params(PREVIEW, Some(json!({"textDocument": {"uri": 5}}))).unwrap();
        assert!(m.starts_with("textDocument.uri: invalid type"), "{m}");
    }
}
