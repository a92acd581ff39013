//! Workspace-trust benchmarks (`cargo bench --bench trust`): what looking a folder's trust up
//! adds to every walk (a preview, a session's start). Side by side in one run:
//!
//! - `verdict`: our record and Claude Code's record for one folder, with a realistic large
//!   `~/.claude.json` (2,000 project entries, each with its tools and servers: about 1.8 MB) and
//!   with none;
//! - `claude_json_value`: the same file parsed whole into a `serde_json::Value`, what
//!   `context::claude_json` does for the MCP servers of every preview already (the baseline the
//!   trust lookup is compared with);
//! - `local_is_repository`: whether git tracks `.claude/settings.local.json`, in a repository of
//!   10,000 tracked files (the index read directly).
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use claude_context::fs::RealFs;
use claude_context::trust::{self, Where};

fn main() {
    LazyLock::force(&WORLD);
    divan::main();
}

struct World {
    _dir: tempfile::TempDir,
    folder: PathBuf,
    with_big: Where,
    with_none: Where,
    claude_json: PathBuf,
    repo: PathBuf,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let folder = base.join("work/shop");
    std::fs::create_dir_all(&folder).unwrap();
    // A large ~/.claude.json: 2,000 projects, each with tools and a server, the folder last.
    let mut projects = serde_json::Map::new();
    for i in 0..2_000 {
        projects.insert(
            format!("/home/me/work/project-{i:04}"),
            serde_json::json!({
                "allowedTools": (0..20).map(|t| format!("Bash(npm run task-{t}:*)")).collect::<Vec<_>>(),
                "mcpServers": {"tracker": {"command": "npx", "args": ["-y", "tracker-mcp", "--verbose"], "env": {"TOKEN": "x".repeat(64)}}},
                "hasTrustDialogAccepted": i % 2 == 0,
                "lastCost": 1.25, "lastSessionId": "5f0c8a4e-7d3b-4c1e-9a51-2f6d8e0b7c44",
                "exampleFiles": ["src/a.ts", "src/b.ts", "src/c.ts"],
            }),
        );
    }
    projects.insert(
        folder.display().to_string(),
        serde_json::json!({"hasTrustDialogAccepted": true}),
    );
    let claude_json = base.join("home/.claude.json");
    std::fs::create_dir_all(claude_json.parent().unwrap()).unwrap();
    let text = serde_json::json!({"numStartups": 120, "projects": projects}).to_string();
    std::fs::write(&claude_json, &text).unwrap();
    eprintln!("~/.claude.json: {:.1} MB", text.len() as f64 / 1e6);
    // A repository of 10,000 tracked files, `.claude/settings.local.json` among them.
    let repo = base.join("repo");
    for i in 0..10_000 {
        let p = repo.join(format!("src/d{:03}/f{i:05}.ts", i / 100));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.local.json"), "{}").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    World {
        folder,
        with_big: Where {
            records: Some(base.join("state/trust")),
            claude_json: Some(claude_json.clone()),
            ..Where::default()
        },
        with_none: Where {
            records: Some(base.join("state/trust")),
            claude_json: Some(base.join("nowhere/.claude.json")),
            ..Where::default()
        },
        claude_json,
        repo,
        _dir: dir,
    }
});

#[divan::bench]
fn verdict_with_a_large_claude_json() -> bool {
    let w = &*WORLD;
    trust::verdict(&RealFs, black_box(&w.with_big), &w.folder).trusted()
}

#[divan::bench]
fn verdict_without_claude_json() -> bool {
    let w = &*WORLD;
    trust::verdict(&RealFs, black_box(&w.with_none), &w.folder).trusted()
}

#[divan::bench]
fn claude_json_value_baseline() -> usize {
    let w = &*WORLD;
    let text = std::fs::read_to_string(black_box(&w.claude_json)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["projects"].as_object().map_or(0, |p| p.len())
}

#[divan::bench]
fn local_is_repository_10k_files() -> bool {
    let w = &*WORLD;
    trust::local_is_repository(&RealFs, &Where::default(), black_box(Path::new(&w.repo)))
}
