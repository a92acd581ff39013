//! The MCP client against real servers: the official Python SDK's (`tests/data/mcp/
//! demo_server.py`, PyPI `mcp`, which `.ci/run` installs) and hostile ones of ours
//! (`tests/data/mcp/hostile_server.py`): listed, called, cancelled, bounded, stopped.
#![allow(clippy::disallowed_methods)] // reason: tests drive real processes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use claude_context::mcp::client::{self, ConnectError, Launch, Limits};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/mcp")
        .join(name)
        .display()
        .to_string()
}

/// The PyPI `mcp` SDK that `.ci/run` installs in `${XDG_CACHE_HOME:-$HOME/.cache}/claude-context-ci`
/// when `python3` has none of its own (the demo server imports it).
fn python_sdk_dir() -> Option<String> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("claude-context-ci/python-mcp");
    dir.join("mcp").is_dir().then(|| dir.display().to_string())
}

fn python(script: &str, args: &[&str]) -> Launch {
    let mut all = vec![data(script)];
    all.extend(args.iter().map(|a| a.to_string()));
    Launch {
        name: "test".into(),
        command: "python3".into(),
        args: all,
        env: python_sdk_dir()
            .map(|d| ("PYTHONPATH".to_string(), d))
            .into_iter()
            .collect(),
        env_remove: vec!["ANTHROPIC_API_KEY".into(), "ANTHROPIC_AUTH_TOKEN".into()],
        cwd: std::env::temp_dir(),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Generous on a loaded machine; a hang still fails.
fn limits() -> Limits {
    Limits {
        connect: Duration::from_secs(60),
        ..Limits::default()
    }
}

#[test]
fn the_python_sdks_server_is_listed_called_and_stopped() {
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let mut launch = python("demo_server.py", &[]);
        // A key in the entry's own env is dropped too: no key reaches a server.
        launch.env.extend([
            ("ANTHROPIC_API_KEY".into(), "sk-ant-api03-leak".into()),
            ("DEMO_VAR".into(), "set-by-entry".into()),
        ]);
        let started = Instant::now();
        let conn = client::connect(&launch, &limits(), &cancel)
            .await
            .unwrap_or_else(|e| panic!("{e:?} (is PyPI `mcp` installed? .ci/run installs it)"));
        eprintln!(
            "demo server: connected in {} ms ({} ms measured by the client)",
            started.elapsed().as_millis(),
            conn.listing.start_ms
        );
        let names: Vec<&str> = conn.listing.tools.iter().map(|t| t.name.as_str()).collect();
        for want in ["add", "echo", "env", "sleep", "fail"] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(conn.listing.resources, "the server declares resources");
        assert!(
            conn.listing
                .instructions
                .as_deref()
                .unwrap()
                .starts_with("DEMO-INSTRUCTIONS-MARKER")
        );
        let add = conn.listing.tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!(add.description, "Add two numbers.");
        assert_eq!(add.input_schema["required"], json!(["a", "b"]));
        let lim = limits();
        let r = conn
            .call("add", args(json!({"a": 2, "b": 3})), &lim, &cancel)
            .await;
        assert_eq!(r.content, "{\"result\":5}");
        assert!(!r.is_error);
        let r = conn
            .call(
                "env",
                args(json!({"name": "ANTHROPIC_API_KEY"})),
                &lim,
                &cancel,
            )
            .await;
        assert!(r.content.contains("<unset>"), "{}", r.content);
        let r = conn
            .call("env", args(json!({"name": "DEMO_VAR"})), &lim, &cancel)
            .await;
        assert!(r.content.contains("set-by-entry"), "{}", r.content);
        let r = conn
            .call("fail", args(json!({"why": "on purpose"})), &lim, &cancel)
            .await;
        // A server-side error is an error result with the server's text.
        assert!(
            r.is_error && r.content.contains("Error executing tool fail"),
            "{r:?}"
        );
        // A call cancelled mid-way comes back at once.
        let slow = CancellationToken::new();
        let trigger = slow.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            trigger.cancel();
        });
        let t = Instant::now();
        let r = conn
            .call("sleep", args(json!({"seconds": 30})), &lim, &slow)
            .await;
        assert!(r.is_error && r.content.contains("cancelled"), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        // A call past its deadline is abandoned.
        let short = Limits {
            call: Duration::from_millis(500),
            ..lim
        };
        let r = conn
            .call("sleep", args(json!({"seconds": 30})), &short, &cancel)
            .await;
        assert!(r.is_error && r.content.contains("did not answer"), "{r:?}");
        // The server still answers after both.
        let r = conn
            .call("echo", args(json!({"text": "pong"})), &lim, &cancel)
            .await;
        assert!(r.content.contains("pong"), "{r:?}");
        conn.stop().await;
    });
}

fn failure(launch: &Launch, limits: &Limits) -> (ConnectError, Duration) {
    rt().block_on(async {
        let t = Instant::now();
        let e = client::connect(launch, limits, &CancellationToken::new())
            .await
            .expect_err("must fail");
        (e, t.elapsed())
    })
}

#[test]
fn failures_have_the_reference_clis_codes() {
    let missing = Launch {
        command: "/nonexistent/bin/mcp-server".into(),
        ..python("hostile_server.py", &[])
    };
    let (e, _) = failure(&missing, &limits());
    assert_eq!(e.code, "ENOENT");
    assert_eq!(
        e.message,
        "ENOENT: no such file or directory, posix_spawn '/nonexistent/bin/mcp-server'"
    );
    // A server that exits at once is started twice, then reported closed.
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("starts");
    let (e, _) = failure(
        &python("hostile_server.py", &["exit", count.to_str().unwrap()]),
        &limits(),
    );
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("CONNECTION_CLOSED", "Connection closed")
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
    // Its stderr is kept for the user, not the model.
    let (e, _) = failure(&python("hostile_server.py", &["stderr"]), &limits());
    assert!(
        e.stderr.contains("hostile server: failing on purpose"),
        "{e:?}"
    );
}

#[test]
fn a_server_that_never_answers_or_prints_garbage_times_out() {
    let short = Limits {
        connect: Duration::from_secs(3),
        ..Limits::default()
    };
    for mode in ["silent", "garbage"] {
        let (e, took) = failure(&python("hostile_server.py", &[mode]), &short);
        assert_eq!(e.code, "TIMEOUT", "{mode}: {e:?}");
        assert_eq!(e.message, "Connection timed out after 3000ms");
        assert!(took < Duration::from_secs(20), "{mode}: {took:?}");
    }
    // Garbage before the answers is skipped.
    rt().block_on(async {
        let conn = client::connect(
            &python("hostile_server.py", &["garbage-then-ok"]),
            &limits(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(conn.listing.tools.len(), 1);
        conn.stop().await;
    });
    // Cancelling the connection stops it at once.
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c2.cancel();
        });
        let t = Instant::now();
        let e = client::connect(
            &python("hostile_server.py", &["silent"]),
            &limits(),
            &cancel,
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, "CANCELLED");
        assert!(t.elapsed() < Duration::from_secs(10));
    });
}

#[test]
fn huge_lists_are_bounded_and_reported() {
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let conn = client::connect(
            &python("hostile_server.py", &["many-tools"]),
            &limits(),
            &cancel,
        )
        .await
        .unwrap();
        assert_eq!(conn.listing.tools.len(), 1_000);
        assert_eq!(
            conn.listing.notes,
            ["the server offers 3000 tools; the first 1000 were kept"]
        );
        conn.stop().await;
        let conn = client::connect(
            &python("hostile_server.py", &["endless-pages"]),
            &limits(),
            &cancel,
        )
        .await
        .unwrap();
        assert_eq!(conn.listing.tools.len(), 32);
        assert!(conn.listing.notes[0].contains("more than 32 pages"));
        conn.stop().await;
    });
    // One 12 MB message is over the 4 MB a message may take: dropped, so the list never comes.
    let short = Limits {
        connect: Duration::from_secs(5),
        ..Limits::default()
    };
    let (e, _) = failure(&python("hostile_server.py", &["huge-descriptions"]), &short);
    assert_eq!(e.code, "TIMEOUT", "{e:?}");
}

#[test]
fn outputs_are_capped_and_the_process_group_dies_with_the_server() {
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let conn = client::connect(
            &python("hostile_server.py", &["big-output"]),
            &limits(),
            &cancel,
        )
        .await
        .unwrap();
        let r = conn.call("ok", Map::new(), &limits(), &cancel).await;
        assert!(r.content.len() < 110 << 10, "{}", r.content.len());
        assert!(
            r.content.ends_with("only the first 102400 are shown.]"),
            "{}",
            &r.content[r.content.len() - 80..]
        );
        conn.stop().await;

        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let conn = client::connect(
            &python(
                "hostile_server.py",
                &["grandchild", pidfile.to_str().unwrap()],
            ),
            &limits(),
            &cancel,
        )
        .await
        .unwrap();
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let alive = |pid: i32| {
            PathBuf::from(format!("/proc/{pid}/stat"))
                .exists()
                .then(|| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
                .is_some_and(|s| !s.contains(") Z "))
        };
        assert!(alive(pid));
        conn.stop().await;
        let t = Instant::now();
        while alive(pid) && t.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!alive(pid), "the server's child outlived it");
    });
}
