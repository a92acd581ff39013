//! The chat stack's layer rule, checked on the source: `session → compact, llm → conversation`
//! (`compact` may use `llm`: the model that summarises sits behind its `Provider`), and
//! `session → tools → permissions → context, fs`.
//! A module may name (`crate::x`) only the modules below it; `conversation` names none.
//! Only `llm` may name the HTTP stack (`reqwest`, `rustls`), which carries the wire.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::path::{Path, PathBuf};

fn sources(module: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let root = src.join(module);
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    assert!(!out.is_empty(), "no sources for {module}");
    out
}

/// Every `crate::<module>` a file names.
fn crate_refs(text: &str) -> Vec<String> {
    text.match_indices("crate::")
        .filter(|(i, _)| !text[..*i].ends_with("claude_"))
        .map(|(i, m)| {
            text[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[track_caller]
fn check(module: &str, allowed: &[&str]) {
    for path in sources(module) {
        let text = std::fs::read_to_string(&path).unwrap();
        for r in crate_refs(&text) {
            assert!(
                r == module || allowed.contains(&r.as_str()),
                "{} names crate::{r}; {module} may use only {allowed:?}",
                path.display()
            );
        }
        // mcp/http.rs: the MCP SDK's streamable HTTP transport runs over reqwest; mcp/sse.rs:
        // the HTTP+SSE adapter over the same client.
        if module != "llm" && !path.ends_with("mcp/http.rs") && !path.ends_with("mcp/sse.rs") {
            for wire in ["reqwest::", "rustls::"] {
                assert!(
                    !text.contains(wire),
                    "{} uses {wire}: only llm speaks HTTP",
                    path.display()
                );
            }
        }
        assert!(
            text.starts_with("//!"),
            "{} has no module doc",
            path.display()
        );
    }
}

#[test]
fn conversation_is_the_bottom_of_the_chat_stack() {
    check("conversation", &[]);
}

#[test]
fn llm_uses_only_the_conversation() {
    check("llm", &["conversation"]);
}

#[test]
fn compact_uses_only_the_model_client_and_the_conversation() {
    check("compact", &["conversation", "llm", "models"]);
}

#[test]
fn session_uses_what_is_below_it() {
    check(
        "session",
        &[
            "conversation",
            "llm",
            "compact",
            "assembly",
            "context",
            "memory",
            "git",
            "fs",
            "host",
            "log",
            "scrub",
            // The logging macros (`crate::log_warn!`), exported at the crate root.
            "log_error",
            "log_warn",
            "log_info",
            "log_debug",
            "tasks",
            "tools",
            "permissions",
            "skills",
            "mcp",
            "hooks",
            "extensions",
            "models",
            "trust",
            "plugins",
            "styles",
            "agents",
        ],
    );
}

/// `js` (JavaScript's string semantics: UTF-16 lengths, `trim`, `localeCompare`) is a leaf
/// the context, memory, skills and MCP share; memory names the file system seam, git (the
/// project's root) and that leaf, not the context engine it sits beside.
#[test]
fn the_string_semantics_are_a_leaf_and_memory_uses_no_context_module() {
    check("js", &[]);
    check("memory", &["fs", "git", "js"]);
}

#[test]
fn plugins_and_styles_are_core_below_the_assembly() {
    // Plugins: the settings and records Claude Code wrote, read through `Fs`; their hooks join
    // the hooks' configuration. Styles: files and settings, confined to a plugin's folder.
    // (`host` in its tests only: a test host's context options.)
    check("plugins", &["context", "fs", "hooks", "host"]);
    check("styles", &["context", "fs", "plugins"]);
}

#[test]
fn agents_are_core_below_the_assembly() {
    // Agent files through the file system seam, read with the context's frontmatter; the
    // models for the built-ins' texts. The session runs them (`session::subagent`).
    check("agents", &["context", "fs", "models"]);
}

#[test]
fn hooks_are_core_and_run_through_the_bash_tools_builder() {
    // Settings, matchers, the runner and the outcomes: the context's settings and findings, the
    // file system seam, the host's key variables, and the Bash tool's command builder (the one
    // place a shell command line starts, with its reaper and sandbox).
    check("hooks", &["context", "fs", "host", "scrub", "tools"]);
    for path in sources("hooks") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("ls_types") && !text.contains("crate::session"),
            "{} reaches above the core",
            path.display()
        );
        assert!(
            !text.contains("Command::new"),
            "{} starts a process itself: go through tools::shell_command",
            path.display()
        );
    }
}

#[test]
fn skills_and_mcp_are_core_below_the_assembly() {
    // Skills: pure but for `Fs`; the context's grammars (frontmatter, settings) and findings.
    check("skills", &["context", "fs", "js"]);
    // MCP: the same, plus the client (it starts the processes itself; see clippy.toml).
    check("mcp", &["context", "fs", "js"]);
    for path in sources("mcp").into_iter().chain(sources("skills")) {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("ls_types") && !text.contains("crate::session"),
            "{} reaches above the core",
            path.display()
        );
    }
}

#[test]
fn permissions_are_core_below_the_tools() {
    // Permission rules and modes: pure but for `Fs` (settings) and the tools' lookup seam; the
    // settings scopes and findings of the context.
    check("permissions", &["context", "fs"]);
    for path in sources("permissions") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("ls_types")
                && !text.contains("crate::session")
                && !text.contains("crate::tools"),
            "{} reaches above the core",
            path.display()
        );
    }
}

#[test]
fn tools_use_only_the_file_system_seam() {
    // `scrub`: the one scrubber of secrets (a runtime module, like `fs`); `permissions`: the
    // rules and modes the tools' calls are judged by.
    // `host`: the reaper every command line runs under (`host/reaper.rs`).
    check("tools", &["fs", "host", "permissions", "scrub"]);
    for path in sources("tools") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("ls_types"),
            "{} names LSP types: only lsp knows them",
            path.display()
        );
    }
}

/// What a front end (`cli`, `lsp`, `acp`) may name besides itself: the session, the features,
/// the JSON-RPC layer, and what is genuinely its own (the file system seam, the host, logging,
/// its tasks). Opening a session (the walk, git, skills and MCP servers, the store) and its hooks
/// (compaction, memory) are the session core's (`session::open`, `session::equip`); the tools'
/// seams a front end implements come through `session::seams`; the offline compaction is
/// `session::offline`. The command line's `check` and `preview` and the editor's workspace model
/// (walks, attachments, extensions and previews per root, which `lsp/state.rs` caches) are the
/// features' (`check::check_project`, `start_preview`, `workspace`).
const FRONT_END_MAY_USE: &[&str] = &[
    "session",
    "features",
    "rpc",
    "fs",
    "host",
    "log",
    "log_error",
    "log_warn",
    "log_info",
    "log_debug",
    "tasks",
];

#[test]
fn front_ends_use_only_the_session_the_features_and_their_own_protocol() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for front in ["cli", "lsp", "acp"] {
        for path in sources(front) {
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let mut below: Vec<String> = crate_refs(&text)
                .into_iter()
                .filter(|r| r != front && !FRONT_END_MAY_USE.contains(&r.as_str()))
                .collect();
            below.sort();
            below.dedup();
            assert!(
                below.is_empty(),
                "{rel} names crate::{below:?} below the session; a front end goes through \
                 session (open, equip, seams, offline) and features (check, start_preview, \
                 workspace)"
            );
        }
    }
}

/// Sessions run one way (`session::runtime`, `session::run_turn`): no front end builds its own
/// runtime, a turn's dependencies or calls `Session::run` itself, so the runtime, cancellation,
/// the tools and the task key are decided once.
#[test]
fn no_front_end_runs_a_turn_itself() {
    for front in ["cli", "lsp", "acp"] {
        for path in sources(front) {
            let text = std::fs::read_to_string(&path).unwrap();
            for needle in ["Deps {", ".run(prepared", "session.run("] {
                assert!(
                    !text.contains(needle),
                    "{} runs a turn itself ({needle}): call session::run_turn",
                    path.display()
                );
            }
            assert!(
                !text.contains("new_multi_thread"),
                "{} builds its own runtime: call session::runtime",
                path.display()
            );
        }
    }
}
