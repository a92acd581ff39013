//! R1: request params. Arbitrary bytes as a JSON-RPC frame body go through the transport's
//! classification; whatever parses as a request or notification has its params re-read as the
//! method's parameter type (to name the bad field) and, as settings, through the settings parser.
//! Invariants: nothing panics, and a message that classifies as an answerable error keeps the
//! request's id when the id was a number or a string.
#![no_main]

use claude_context::features::settings::{Settings, section};
use claude_context::lsp::ext::explain_params;
use claude_context::lsp::transport::{Incoming, classify};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const METHODS: &[&str] = &[
    "initialize",
    "textDocument/hover",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/completion",
    "textDocument/definition",
    "textDocument/documentLink",
    "textDocument/codeLens",
    "workspace/didChangeWatchedFiles",
    "workspace/didChangeConfiguration",
    "context/preview",
];

fuzz_target!(|data: &[u8]| {
    let _ = classify(data);
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // The same params under every method we type-check.
    let params = value.get("params").cloned().or(Some(value.clone()));
    for m in METHODS {
        if let Some(msg) = explain_params(m, params.clone()) {
            assert!(!msg.is_empty());
        }
    }
    let _ = Settings::parse(section(&value));
    if let Some(Value::String(m)) = value.get("method") {
        let _ = explain_params(m, value.get("params").cloned());
    }
    if let Incoming::Invalid(..) = classify(data) {
        // Classifying twice gives the same kind of answer (no hidden state).
        assert!(matches!(classify(data), Incoming::Invalid(..)));
    }
});
