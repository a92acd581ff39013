//! The warm path (issue 30): `claude-context preview` and `check` asking a running language
//! server over its local socket give exactly what they compute cold, on a real git repository
//! edited between the questions; a socket left behind, a socket of another user and a server
//! asked about another folder all leave the command to its cold answer.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary and git, with their own environment.

use crate::harness;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use claude_context::features::warm::{self, Answer};
use claude_context::rpc::local;
use harness::{Server, Workspace, bin};
use serde_json::json;

const WARM: &str = "answered by the running server";

/// `claude-context ARGS` as the user of `ws` runs it (the server's environment), debug log on.
fn run(ws: &Workspace, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(&ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
        .env("GIT_CEILING_DIRECTORIES", ws.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .env("CLAUDE_CONTEXT_LOG", "debug")
        .output()
        .expect("run claude-context")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn warm_answered(o: &Output) -> bool {
    String::from_utf8_lossy(&o.stderr).contains(WARM)
}

/// The server with its own file watcher (a client that watches no files, as Neovim 0.11 on
/// Linux): the case where it can vouch for what it keeps.
fn server(ws: &Workspace) -> Server {
    let mut s = ws.spawn(&bin());
    let uri = format!("file://{}", ws.root.display());
    s.call(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": "ws"}],
            "capabilities": {}
        }),
    );
    s.notify("initialized", json!({}));
    s
}

fn project(ws: &Workspace) {
    ws.write("CLAUDE.md", "# Shop\n\nUse the house style.\n");
    ws.write(
        ".claude/rules/api.md",
        "---\npaths: src/api/**\n---\nAPI rule.\n",
    );
    ws.write("src/api/handler.rs", "fn handler() {}\n");
    ws.write("src/lib.rs", "pub mod api;\n");
    ws.write("docs/guide.md", "guide\n");
    ws.write(".gitignore", "target/\n");
    ws.git_init();
}

/// Asks `args` warm until the server answers (it needs its first snapshot and its watcher), each
/// answer compared with the cold one. Panics when the two differ, or when no answer is warm.
fn same_warm_and_cold(ws: &Workspace, args: &[&str], what: &str) {
    let cold = {
        let mut a = args.to_vec();
        a.push("--cold");
        run(ws, &a)
    };
    assert!(
        !warm_answered(&cold),
        "--cold never asks the server ({what})"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let warm = run(ws, args);
        assert_eq!(
            text(&warm),
            text(&cold),
            "{what}: the warm answer differs from the cold one"
        );
        assert_eq!(
            warm.status.code(),
            cold.status.code(),
            "{what}: exit status"
        );
        if warm_answered(&warm) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the server never answered; last stderr:\n{}",
            String::from_utf8_lossy(&warm.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn warm_answers_equal_cold_ones_after_every_edit() {
    let ws = Workspace::new();
    project(&ws);
    let s = server(&ws);
    let deep = ws.path("src/api/handler.rs");
    let deep = deep.to_str().unwrap();
    let sub = ws.path("src");
    let sub = sub.to_str().unwrap();
    let check = |what: &str| {
        same_warm_and_cold(&ws, &["preview", "--json", "--file", deep], what);
        same_warm_and_cold(
            &ws,
            &["preview", "--json", "--cwd", sub, "--file", deep],
            &format!("{what} (in src/)"),
        );
        same_warm_and_cold(&ws, &["preview"], &format!("{what} (table)"));
        same_warm_and_cold(&ws, &["check", "--json"], &format!("{what} (check)"));
    };
    check("at start");
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&ws.root)
            .env("HOME", &ws.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    // Each edit is made, then asked about at once: the server must have seen it.
    ws.write("src/lib.rs", "pub mod api;\npub mod more;\n");
    check("a tracked file modified");
    ws.write("src/more.rs", "// new\n");
    check("an untracked file");
    ws.write("notes/todo.txt", "todo\n");
    check("an untracked folder");
    std::fs::remove_file(ws.path("docs/guide.md")).unwrap();
    check("a tracked file deleted");
    ws.write(".gitignore", "target/\nnotes/\n");
    check("an ignore rule");
    git(&["add", "src/more.rs"]);
    check("a file staged");
    ws.write(
        "CLAUDE.md",
        "# Shop\n\nUse the house style.\n@docs/missing.md\n",
    );
    check("an instruction file edited");
    ws.write("src/api/CLAUDE.md", "Nested rules.\n");
    check("a nested instruction file");
    std::fs::rename(ws.path("src/api"), ws.path("src/web")).unwrap();
    check("a folder renamed");
    s.shutdown();
}

/// The socket path the server of `ws`'s folder uses.
fn socket_of(ws: &Workspace) -> PathBuf {
    let dir = local::socket_dir(None, Some(&ws.home.join(".local/state/claude-context"))).unwrap();
    local::private_dir(&dir, true).unwrap();
    local::socket_paths(&dir, &ws.root).unwrap().0
}

#[test]
fn a_socket_left_behind_is_ignored() {
    let ws = Workspace::new();
    project(&ws);
    let sock = socket_of(&ws);
    drop(UnixListener::bind(&sock).unwrap());
    assert!(sock.exists(), "the socket file stays behind its listener");
    let cold = run(&ws, &["preview", "--json", "--cold"]);
    let started = Instant::now();
    let out = run(&ws, &["preview", "--json"]);
    assert!(out.status.success());
    assert_eq!(text(&out), text(&cold));
    assert!(!warm_answered(&out));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no wait on a dead socket"
    );
}

#[test]
fn a_server_that_does_not_answer_is_given_up_on() {
    let ws = Workspace::new();
    project(&ws);
    let sock = socket_of(&ws);
    let listener = UnixListener::bind(&sock).unwrap();
    const HANG: Duration = Duration::from_secs(20);
    // Accepts every connection and holds it without a word for HANG.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept() {
            held.push(conn);
            if held.len() == 1 {
                let started = Instant::now();
                std::thread::spawn(move || {
                    std::thread::sleep(HANG.saturating_sub(started.elapsed()))
                });
            }
        }
    });
    let cold = run(&ws, &["preview", "--json", "--cold"]);
    let started = Instant::now();
    let out = run(&ws, &["preview", "--json"]);
    assert!(out.status.success());
    assert_eq!(text(&out), text(&cold));
    assert!(
        started.elapsed() < HANG,
        "the command waited for a server that never answers"
    );
}

#[test]
fn a_socket_of_another_user_is_never_opened() {
    let ws = Workspace::new();
    project(&ws);
    let sock = socket_of(&ws);
    let listener = UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    // Only root can give a file away; as another user the test has nothing to check.
    if rustix::fs::chown(
        &sock,
        Some(rustix::fs::Uid::from_raw(65534)),
        Some(rustix::fs::Gid::from_raw(65534)),
    )
    .is_err()
    {
        eprintln!("skipped: chown needs root");
        return;
    }
    let cold = run(&ws, &["preview", "--json", "--cold"]);
    let out = run(&ws, &["preview", "--json"]);
    assert_eq!(text(&out), text(&cold));
    assert!(
        listener.accept().is_err(),
        "the command connected to a socket another user owns"
    );
}

#[test]
fn a_server_answers_only_about_its_own_folder() {
    let ws = Workspace::new();
    project(&ws);
    let other = ws.home.join("work/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("CLAUDE.md"), "other\n").unwrap();
    let s = server(&ws);
    // Warm for its own folder first (so a refusal below is about the folder, nothing else).
    same_warm_and_cold(&ws, &["preview", "--json"], "own folder");
    let sock = socket_of(&ws);
    let vars = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", ws.home.display().to_string()),
        (
            "CLAUDE_CONTEXT_MANAGED_DIR",
            ws.managed.display().to_string(),
        ),
        (
            "GIT_CEILING_DIRECTORIES",
            ws.dir.path().display().to_string(),
        ),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
    ];
    let host = claude_context::host::Host::from_vars(
        vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        ws.root.clone(),
        "linux".into(),
        "test".into(),
        claude_context::host::Clock::Fixed("2026-01-01".into()),
    );
    let ask = |cwd: &Path| {
        let req = warm::preview_request(
            &host,
            &claude_context::features::start_preview::Request {
                cwd,
                files: &[],
                add_dirs: &[],
                model: None,
                window: None,
                memory_dir: None,
                no_git: false,
                mcp_connect: false,
                run_hooks: None,
                permissions: &Default::default(),
            },
        )
        .unwrap();
        let raw = local::ask(
            &sock,
            &serde_json::to_vec(&req).unwrap(),
            Instant::now() + Duration::from_secs(30),
        )
        .expect("an answer");
        serde_json::from_slice::<Answer>(&raw).unwrap()
    };
    let escape = ws.root.join("../other");
    for cwd in [other.as_path(), escape.as_path(), Path::new("/")] {
        match ask(cwd) {
            Answer::Declined { why } => {
                assert!(why.contains("not in this server's folder"), "{why}")
            }
            a => panic!("answered about {}: {a:?}", cwd.display()),
        }
    }
    assert!(
        matches!(ask(&ws.root), Answer::Preview { .. }),
        "its own folder is answered"
    );
    s.shutdown();
}
