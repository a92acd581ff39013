//! Tidy checks that keep the documented architecture true, run under plain `cargo test`:
//! every Rust file starts with a module doc (`//!`), every path and test ARCHITECTURE.md names
//! exists, every custom LSP method has a route (a handler) and a section in `docs/protocol.md`,
//! and every relative link of the front page, the manual and the contributors' guides leads to
//! a file and a heading that exist.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

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
/// `server/src/context/walk.rs::build` (the item is cut), `tests/e2e/lsp_e2e.rs`, `schemas/`.
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

/// ARCHITECTURE.md cites the test that checks each invariant by its name, in backticks, after
/// the file it is in (`tests/e2e/tools.rs`: `write_never_replaces_a_binary_file_unseen`). A
/// snake_case span of three words or more is such a name: it must be a `fn` of the file (or the
/// folder) last named before it in the same paragraph or list item, or, named after no file, a
/// `fn` somewhere in the tests or the sources. So a renamed, deleted or moved test cannot leave
/// the map citing a check that no longer runs where it says.
#[test]
fn every_test_architecture_cites_exists() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let mut files = Vec::new();
    for dir in ["server/src", "server/benches", "tests", "fuzz"] {
        rust_files(&repo().join(dir), &mut files);
    }
    let functions_of = |file: &Path| -> BTreeSet<String> {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        text.match_indices("fn ")
            .map(|(position, _)| {
                text[position + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    };
    let everywhere: BTreeSet<String> = files.iter().flat_map(|f| functions_of(f)).collect();
    let is_test_name = |span: &str| {
        span.starts_with(|c: char| c.is_ascii_lowercase())
            && span
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && span.split('_').filter(|word| !word.is_empty()).count() >= 3
    };
    let is_source_path = |span: &str| {
        (span.starts_with("tests/") || span.starts_with("server/"))
            && (span.ends_with(".rs") || span.ends_with('/'))
    };
    // Paragraphs and list items: a file named in one does not carry over to the next.
    let mut blocks = vec![String::new()];
    for line in doc.lines() {
        if line.trim().is_empty() || line.starts_with("- ") || line.starts_with('#') {
            blocks.push(String::new());
        }
        let block = blocks.last_mut().unwrap();
        block.push_str(line);
        block.push('\n');
    }
    let (mut cited, mut in_a_file, mut missing) = (0, 0, Vec::new());
    for block in &blocks {
        let mut file: Option<&str> = None;
        for span in block.split('`').skip(1).step_by(2) {
            if is_source_path(span) {
                file = Some(span);
                continue;
            }
            if !is_test_name(span) {
                continue;
            }
            cited += 1;
            let found = match file {
                Some(path) => {
                    in_a_file += 1;
                    let path = repo().join(path);
                    files
                        .iter()
                        .filter(|f| **f == path || (path.is_dir() && f.starts_with(&path)))
                        .any(|f| functions_of(f).contains(span))
                }
                None => everywhere.contains(span),
            };
            if !found {
                missing.push(format!(
                    "{span} (in {})",
                    file.unwrap_or("tests/ or server/")
                ));
            }
        }
    }
    assert!(
        cited >= 40 && in_a_file >= 30,
        "ARCHITECTURE.md cites its tests by name after their file ({cited} names, {in_a_file} after a file)"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites tests that are no `fn` where it says: {missing:?}"
    );
}

/// The Markdown files whose relative links `relative_links_lead_somewhere` checks: the front
/// page, the contributors' guides at the root and in `docs/`, and every page of the manual.
fn linked_documents() -> Vec<PathBuf> {
    let mut documents: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "docs/style.md"]
        .iter()
        .map(|name| repo().join(name))
        .collect();
    let manual = std::fs::read_dir(repo().join("docs/manual")).expect("docs/manual exists");
    for entry in manual.flatten() {
        if entry
            .path()
            .extension()
            .is_some_and(|extension| extension == "md")
        {
            documents.push(entry.path());
        }
    }
    documents.sort();
    documents
}

/// The anchor GitHub and mdBook give a heading: lower case, spaces as `-`, every character but
/// letters, digits, `-` and `_` dropped; a repeated heading gets `-1`, `-2`, ...
fn heading_anchors(markdown: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(text) | Event::Code(text) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                let slug: String = text
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                        _ => None,
                    })
                    .collect();
                let count = seen.entry(slug.clone()).or_insert(0);
                anchors.insert(if *count == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{count}")
                });
                *count += 1;
            }
            _ => {}
        }
    }
    anchors
}

/// Every relative link and image of the front page, the manual and the contributors' guides
/// leads to a file that exists and, with a `#anchor` into a Markdown file, to one of its
/// headings. mdBook's own build (scripts/test) fails on a page SUMMARY.md names that is missing;
/// this covers the links inside pages, which it does not check, and the links out of the book
/// (to ARCHITECTURE.md, docs/protocol.md, the editors' folders), which only resolve in the
/// repository. Web links are not fetched: tests reach 127.0.0.1 only.
#[test]
fn relative_links_lead_somewhere() {
    let documents = linked_documents();
    assert!(
        documents.len() >= 15,
        "found the manual's pages: {documents:?}"
    );
    let mut checked = 0;
    let mut broken = Vec::new();
    for document in &documents {
        let text = std::fs::read_to_string(document)
            .unwrap_or_else(|error| panic!("{}: {error}", document.display()));
        let folder = document.parent().unwrap();
        let shown = document.strip_prefix(repo()).unwrap().display().to_string();
        for event in Parser::new_ext(&text, Options::ENABLE_TABLES) {
            let destination = match event {
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => dest_url,
                _ => continue,
            };
            if destination.contains("://") || destination.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match destination.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (&*destination, None),
            };
            let target = if path.is_empty() {
                document.clone()
            } else {
                folder.join(path)
            };
            if !target.exists() {
                broken.push(format!("{shown}: {destination}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if target.extension().is_none_or(|extension| extension != "md") {
                continue;
            }
            let target_text = std::fs::read_to_string(&target).unwrap_or_default();
            if !heading_anchors(&target_text).contains(anchor) {
                broken.push(format!("{shown}: {destination}: no heading #{anchor}"));
            }
        }
    }
    assert!(checked >= 50, "found the links ({checked})");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
