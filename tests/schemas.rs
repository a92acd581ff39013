//! The JSON Schemas in `schemas/` are generated from the Rust types and must not drift; every
//! custom method has its schemas and a section in `docs/protocol.md`; the schemas accept what the
//! server really sends.
//!
//! Regenerate after changing a type: `UPDATE_SCHEMAS=1 cargo test --test schemas`.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::path::{Path, PathBuf};

use claude_context::lsp::ext::{self, Direction, METHODS};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn schemas_match_the_rust_types() {
    let dir = repo().join("schemas");
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for (name, schema) in ext::schemas() {
        let path = dir.join(&name);
        let mut want = serde_json::to_string_pretty(&schema).unwrap();
        want.push('\n');
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &want).unwrap();
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "schemas out of date with the Rust types: {stale:?}; run `UPDATE_SCHEMAS=1 cargo test --test schemas`"
    );
}

#[test]
fn every_custom_method_has_schemas_and_docs() {
    let names: Vec<String> = ext::schemas().into_iter().map(|(n, _)| n).collect();
    let docs = std::fs::read_to_string(repo().join("docs/protocol.md")).expect("docs/protocol.md");
    for m in METHODS {
        let stem = ext::file_stem(m.name);
        assert!(
            names.contains(&format!("{stem}.params.schema.json")),
            "{}: params schema",
            m.name
        );
        if !m.notification {
            assert!(
                names.contains(&format!("{stem}.result.schema.json")),
                "{}: result schema",
                m.name
            );
        }
        let heading = format!("## `{}`", m.name);
        let section = docs
            .split("\n## ")
            .find(|s| format!("## {s}").starts_with(&heading))
            .unwrap_or_else(|| panic!("docs/protocol.md has no section {heading}"));
        let direction = match m.direction {
            Direction::ClientToServer => "client → server",
            Direction::ServerToClient => "server → client",
        };
        assert!(
            section.contains(direction),
            "{}: the section says {direction}",
            m.name
        );
        assert!(
            section.contains("```json"),
            "{}: the section has an example",
            m.name
        );
        assert!(
            section.contains(&format!("schemas/{stem}.params.schema.json")),
            "{}: links its schema",
            m.name
        );
    }
    // Every setting is documented.
    let settings = &ext::schemas()
        .into_iter()
        .find(|(n, _)| n == "settings.schema.json")
        .unwrap()
        .1;
    for key in setting_keys(settings, settings, "") {
        assert!(
            docs.contains(&format!("`{key}`")),
            "docs/protocol.md documents the setting `{key}`"
        );
    }
}

/// Dotted names of every leaf setting (`rules.activateFromOpenFiles`, `window`, ...).
fn setting_keys(root: &Value, schema: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(props) = schema["properties"].as_object() else {
        return out;
    };
    for (k, v) in props {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let target = match v["$ref"].as_str() {
            Some(r) => {
                let def = r.trim_start_matches("#/$defs/");
                &root["$defs"][def]
            }
            None => v,
        };
        if target["properties"].is_object() {
            out.extend(setting_keys(root, target, &name));
        } else {
            out.push(name);
        }
    }
    out
}

fn validator(name: &str) -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("schemas").join(name)).unwrap())
            .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// The docs' examples and real values validate against the schemas.
#[test]
fn examples_validate() {
    let params = validator("context-preview.params.schema.json");
    assert!(params.is_valid(&json!({})));
    assert!(params.is_valid(&json!({"textDocument": {"uri": "file:///w/src/a.ts"}})));
    assert!(!params.is_valid(&json!({"textDocument": {"uri": 5}})));

    let changed = validator("context-changed.params.schema.json");
    assert!(changed.is_valid(&json!({"uris": ["file:///w/src/a.ts"]})));
    assert!(changed.is_valid(&json!({})));

    let settings = validator("settings.schema.json");
    assert!(settings.is_valid(
        &serde_json::to_value(claude_context::features::settings::Settings::default()).unwrap()
    ));
    assert!(settings.is_valid(&json!({"rules": {"activateFromOpenFiles": false}})));
    assert!(!settings.is_valid(&json!({"window": "big"})));

    // A real preview, as the server builds it.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join(".claude/rules")).unwrap();
    std::fs::write(root.join("CLAUDE.md"), "Rules. @missing.md\n").unwrap();
    std::fs::write(
        root.join(".claude/rules/ts.md"),
        "---\npaths: \"**/*.ts\"\n---\nTS.\n",
    )
    .unwrap();
    let env = claude_context::host::Host::for_tests(&dir.path().join("home"));
    let state = claude_context::lsp::state::State::new(env);
    state.set_folders(vec![root.clone()]);
    state.open(
        "file:///x.ts".into(),
        Some(root.join("x.ts")),
        "x".into(),
        1,
    );
    let value = serde_json::to_value(&*state.preview(&root, None, None, None, || {
        claude_context::lsp::state::GitNow {
            pending: true,
            ..Default::default()
        }
    }))
    .unwrap();
    let result = validator("context-preview.result.schema.json");
    let errors: Vec<String> = result
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{value:#}");
    assert_eq!(value["gitPending"], true);

    // The example in docs/protocol.md validates too.
    let docs = std::fs::read_to_string(repo().join("docs/protocol.md")).unwrap();
    let section = docs
        .split("\n## ")
        .find(|s| s.starts_with("`context/preview`"))
        .unwrap();
    let examples: Vec<Value> = section
        .split("```json")
        .skip(1)
        .map(|b| serde_json::from_str(b.split("```").next().unwrap()).expect("example is JSON"))
        .collect();
    assert!(examples.len() >= 2, "params and result examples");
    assert!(params.is_valid(&examples[0]["params"]), "{}", examples[0]);
    let errors: Vec<String> = result
        .iter_errors(&examples[1]["result"])
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "docs example: {errors:?}");
}
