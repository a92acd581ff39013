//! Tidy checks that keep the documented architecture true, run under plain `cargo test`:
//! every Rust file starts with a module doc (`//!`), every path ARCHITECTURE.md names exists,
//! and every custom LSP method has a route (a handler) and a section in `docs/protocol.md`.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::path::{Path, PathBuf};

use claude_context::lsp::ext::{Direction, METHODS};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        // Fixture trees (files of the conformance cases, data files) are inputs, not our sources.
        if p.is_dir() && (p.ends_with("tests/conformance") || p.ends_with("tests/data")) {
            continue;
        }
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_rust_file_has_a_module_doc() {
    let mut files = Vec::new();
    for dir in [
        "server/src",
        "server/benches",
        "server/examples",
        "tests",
        "fuzz",
    ] {
        rust_files(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 50, "found the sources: {}", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|p| {
            !std::fs::read_to_string(p)
                .unwrap_or_default()
                .starts_with("//!")
        })
        .map(|p| p.strip_prefix(repo()).unwrap().display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc on their first line: {missing:?}"
    );
}

/// Backticked repository paths in ARCHITECTURE.md: `server/src/lsp/main_loop.rs`,
/// `server/src/context/walk.rs::build` (the item is cut), `tests/lsp_e2e.rs`, `schemas/`.
#[test]
fn every_path_architecture_names_exists() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let roots = [
        "server/", "tests/", "schemas/", "docs/", "scripts/", "fuzz/", "editors/", ".ci/",
    ];
    let mut checked = 0;
    let mut missing = Vec::new();
    for span in doc.split('`').skip(1).step_by(2) {
        let path = span.split("::").next().unwrap_or(span).trim();
        if !roots.iter().any(|r| path.starts_with(r)) || path.contains(' ') || path.contains('*') {
            continue;
        }
        checked += 1;
        if !repo().join(path).exists() {
            missing.push(path.to_string());
        }
    }
    assert!(
        checked >= 15,
        "ARCHITECTURE.md names its files ({checked} found)"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_custom_method_has_a_handler_and_a_docs_section() {
    let routed = claude_context::lsp::routes::methods();
    let docs = std::fs::read_to_string(repo().join("docs/protocol.md")).unwrap();
    for m in METHODS {
        if m.direction == Direction::ClientToServer {
            assert!(
                routed.contains(&m.name),
                "{} has no route in lsp/routes.rs",
                m.name
            );
        }
        assert!(
            docs.contains(&format!("\n## `{}`", m.name)),
            "docs/protocol.md has no section for {}",
            m.name
        );
    }
    // The other way round: every routed method is standard LSP or a registered custom one.
    for name in routed {
        let custom = METHODS.iter().any(|m| m.name == name);
        let standard = name.starts_with("textDocument/")
            || name.starts_with("workspace/")
            || name.starts_with("$/")
            || ["initialize", "initialized", "shutdown", "exit"].contains(&name);
        assert!(
            custom || standard,
            "{name} is routed but not in ext::METHODS"
        );
    }
}
