//! The MCP client against real servers: the official Python SDK's (`tests/data/mcp/
//! demo_server.py`, PyPI `mcp`, which `.ci/run` installs) and hostile ones of ours
//! (`tests/data/mcp/hostile_server.py`): listed, called, cancelled, bounded, stopped.
#![allow(clippy::disallowed_methods)] // reason: tests drive real processes.

use crate::mcp_http;
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
        remote: None,
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
    // Class K37: a bare command not on PATH.
    let not_on_path = Launch {
        command: "nonexistent-mcp-cmd-xyz".into(),
        ..python("hostile_server.py", &[])
    };
    let (e, _) = failure(&not_on_path, &limits());
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        (
            "ENOENT",
            "Executable not found in $PATH: nonexistent-mcp-cmd-xyz"
        )
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

fn remote(url: String, headers: &[(&str, &str)]) -> Launch {
    Launch {
        name: "remote".into(),
        command: url.clone(),
        remote: Some(claude_context::mcp::http::Remote {
            url,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            sse: false,
        }),
        ..Launch::default()
    }
}

/// A remote server over the older HTTP+SSE transport (`"type": "sse"`).
fn sse(url: String, headers: &[(&str, &str)]) -> Launch {
    let mut l = remote(url, headers);
    if let Some(r) = &mut l.remote {
        r.sse = true;
    }
    l
}

#[test]
fn an_http_server_is_listed_called_and_sent_only_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests");
    let server = mcp_http::HttpServer::start(
        "demo_server.py",
        &["--http", "{port}", "--log", log.to_str().unwrap()],
    );
    // The entry's headers, one of which carries the model's key: that one is never sent.
    let key = "sk-ant-api03-must-not-leave";
    let launch = remote(
        server.url(),
        &[
            ("Authorization", "Bearer user-token-1"),
            ("X-Demo", "demo-value"),
            ("X-Leak", &format!("key={key}")),
        ],
    )
    .without_secret(Some(key));
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let conn = client::connect(&launch, &limits(), &cancel)
            .await
            .unwrap_or_else(|e| panic!("{e:?}; server: {}", server.stderr()));
        eprintln!(
            "demo server over HTTP: connected in {} ms",
            started.elapsed().as_millis()
        );
        let names: Vec<&str> = conn.listing.tools.iter().map(|t| t.name.as_str()).collect();
        for want in ["add", "echo", "headers", "sleep", "fail"] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(conn.listing.resources);
        assert!(
            conn.listing
                .instructions
                .as_deref()
                .unwrap()
                .starts_with("DEMO-INSTRUCTIONS-MARKER")
        );
        let lim = limits();
        let r = conn
            .call("add", args(json!({"a": 2, "b": 40})), &lim, &cancel)
            .await;
        assert_eq!(r.content, "{\"result\":42}");
        let r = conn.call("headers", Map::new(), &lim, &cancel).await;
        let seen: Value = serde_json::from_str(
            serde_json::from_str::<Value>(&r.content).unwrap()["result"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(seen["authorization"], "Bearer user-token-1", "{seen}");
        assert_eq!(seen["x-demo"], "demo-value", "{seen}");
        assert!(seen.get("x-leak").is_none(), "{seen}");
        let r = conn
            .call("fail", args(json!({"why": "no"})), &lim, &cancel)
            .await;
        assert!(r.is_error, "{r:?}");
        // A call is cancelled at once, and the connection goes on.
        let c2 = CancellationToken::new();
        let t = Instant::now();
        let (r, ()) = tokio::join!(
            conn.call("sleep", args(json!({"seconds": 60})), &lim, &c2),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                c2.cancel();
            }
        );
        assert!(r.is_error && r.content.contains("cancelled"), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(10));
        let r = conn
            .call("echo", args(json!({"text": "still here"})), &lim, &cancel)
            .await;
        assert!(r.content.contains("still here"), "{r:?}");
        conn.stop().await;
    });
    // Every request the server received had the configured headers, and none the key.
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(requests.lines().count() >= 4, "{requests}");
    assert!(!requests.contains(key), "{requests}");
    for line in requests.lines() {
        let h: Value = serde_json::from_str(line).unwrap();
        assert_eq!(h["x-demo"], "demo-value", "{line}");
        assert!(h.get("x-api-key").is_none(), "{line}");
    }
}

#[test]
fn an_http_server_that_wants_oauth_fails_with_a_clear_reason() {
    let server = mcp_http::HttpServer::start("hostile_http_server.py", &["unauthorized", "{port}"]);
    let (e, took) = failure(&remote(server.url(), &[]), &limits());
    assert_eq!(e.code, "UNAUTHORIZED", "{e:?}");
    assert_eq!(
        e.message,
        "needs authorization (OAuth), which claude-context does not support; give a token with `headers`"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    // Nothing listens: a clear failure, not a hang.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (e, _) = failure(
        &remote(format!("http://127.0.0.1:{port}/mcp"), &[]),
        &limits(),
    );
    // Class K38: the reference CLI's code and words for a refused connection.
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        (
            "ECONNREFUSED",
            "ECONNREFUSED: Unable to connect. Is the computer able to access the url?"
        ),
        "{e:?}"
    );
}

/// This process's resident memory now and at its peak, in MB.
fn rss_mb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            >> 10
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[test]
fn hostile_http_servers_are_cut_at_the_message_cap() {
    let lim = Limits {
        connect: Duration::from_secs(20),
        ..Limits::default()
    };
    for mode in ["huge-body", "huge-chunked", "endless-event", "silent"] {
        let server = mcp_http::HttpServer::start("hostile_http_server.py", &[mode, "{port}"]);
        let before = rss_mb();
        let (e, took) = failure(&remote(server.url(), &[]), &lim);
        let after = rss_mb();
        // Let the server notice the closed connection and say how much it sent.
        let t = Instant::now();
        while mode != "silent"
            && !server.stderr().contains("sent")
            && t.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let said = server.stderr();
        eprintln!(
            "{mode}: {} {} after {} ms; RSS {} -> {} MB (peak {} MB); server: {}",
            e.code,
            e.message,
            took.as_millis(),
            before.0,
            after.0,
            after.1,
            said.trim()
        );
        // Cut by the cap (or the connection deadline), not read to the end.
        assert!(took < Duration::from_secs(40), "{mode}: {took:?}");
        if mode == "silent" {
            assert_eq!(e.code, "TIMEOUT", "{e:?}");
            continue;
        }
        // A body over the cap is an HTTP error; an SSE event over it ends the stream.
        let want = if mode == "endless-event" {
            "CONNECTION_CLOSED"
        } else {
            "HTTP"
        };
        assert_eq!(e.code, want, "{mode}: {e:?}");
        if mode != "endless-event" {
            assert!(e.message.contains("4194304 bytes"), "{mode}: {e:?}");
        }
        let sent: u64 = said
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{mode}: {said}"));
        // 4 MB read, plus what the sockets' buffers held: far from the 64 MB (or endless) sent.
        assert!(sent < 32 << 20, "{mode}: the server sent {sent} bytes");
        assert!(after.1 < 1024, "{mode}: peak RSS {} MB", after.1);
    }
}

/// A remote server that behaves until a call: a call answered with an endless body is cut at
/// the message cap, one never answered ends at the call deadline or on cancel, and the
/// connection goes on serving the next call.
#[test]
fn a_remote_calls_endless_or_missing_answer_is_bounded_and_the_connection_goes_on() {
    let server = mcp_http::HttpServer::start("hostile_http_server.py", &["flood-call", "{port}"]);
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let conn = client::connect(&remote(server.url(), &[]), &limits(), &cancel)
            .await
            .unwrap_or_else(|e| panic!("{e:?}: {}", server.stderr()));
        assert_eq!(conn.listing.tools.len(), 3);
        let lim = Limits {
            call: Duration::from_secs(3),
            ..limits()
        };
        let before = rss_mb();
        let t = Instant::now();
        let r = conn.call("flood", Map::new(), &lim, &cancel).await;
        let after = rss_mb();
        eprintln!(
            "flood call: {} ms, RSS {} -> {} MB (peak {} MB): {}",
            t.elapsed().as_millis(),
            before.0,
            after.0,
            after.1,
            r.content
        );
        assert!(r.is_error, "{r:?}");
        assert_eq!(
            r.content,
            "MCP error: HTTP response body exceeded the maximum size of 4194304 bytes"
        );
        assert!(t.elapsed() < Duration::from_secs(30));
        assert!(after.1 < 1024, "peak RSS {} MB", after.1);
        let t = Instant::now();
        let r = conn.call("hang", Map::new(), &lim, &cancel).await;
        assert!(
            r.is_error && r.content.contains("did not answer within 3 s"),
            "{r:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(30));
        let r = conn.call("ok", Map::new(), &lim, &cancel).await;
        assert_eq!((r.content.as_str(), r.is_error), ("fine", false), "{r:?}");
        conn.stop().await;
    });
    let said = server.stderr();
    let sent = said
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    eprintln!("flood server sent at most {sent} bytes in one answer");
    assert!(sent < 32 << 20, "the server sent {sent} bytes: {said}");
}

/// Class K38's `sse` servers: the Python SDK's server over HTTP+SSE is connected like an http
/// one (tools, resources, instructions), its calls round-trip (structured, error, cancelled)
/// with the configured headers and never the key, and stopping it closes the stream.
#[test]
fn an_sse_server_is_listed_called_and_sent_only_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests");
    let server = mcp_http::HttpServer::start(
        "demo_server.py",
        &["--sse", "{port}", "--log", log.to_str().unwrap()],
    );
    let key = "sk-ant-api03-must-not-leave";
    let launch = sse(
        server.sse_url(),
        &[
            ("Authorization", "Bearer user-token-1"),
            ("X-Leak", &format!("key={key}")),
        ],
    )
    .without_secret(Some(key));
    rt().block_on(async {
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let conn = client::connect(&launch, &limits(), &cancel)
            .await
            .unwrap_or_else(|e| panic!("{e:?}; server: {}", server.stderr()));
        eprintln!(
            "demo server over HTTP+SSE: connected in {} ms",
            started.elapsed().as_millis()
        );
        let names: Vec<&str> = conn.listing.tools.iter().map(|t| t.name.as_str()).collect();
        for want in ["add", "echo", "headers", "sleep", "fail"] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(conn.listing.resources);
        assert!(
            conn.listing
                .instructions
                .as_deref()
                .unwrap()
                .starts_with("DEMO-INSTRUCTIONS-MARKER")
        );
        let lim = limits();
        let r = conn
            .call("add", args(json!({"a": 2, "b": 40})), &lim, &cancel)
            .await;
        assert_eq!(r.content, "{\"result\":42}");
        let r = conn.call("headers", Map::new(), &lim, &cancel).await;
        let seen: Value = serde_json::from_str(
            serde_json::from_str::<Value>(&r.content).unwrap()["result"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(seen["authorization"], "Bearer user-token-1", "{seen}");
        assert!(seen.get("x-leak").is_none(), "{seen}");
        let r = conn
            .call("fail", args(json!({"why": "no"})), &lim, &cancel)
            .await;
        assert!(r.is_error, "{r:?}");
        let c2 = CancellationToken::new();
        let t = Instant::now();
        let (r, ()) = tokio::join!(
            conn.call("sleep", args(json!({"seconds": 60})), &lim, &c2),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                c2.cancel();
            }
        );
        assert!(r.is_error && r.content.contains("cancelled"), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(10));
        let r = conn
            .call("echo", args(json!({"text": "still here"})), &lim, &cancel)
            .await;
        assert!(r.content.contains("still here"), "{r:?}");
        assert!(!conn.is_closed());
        // Stopping closes the event stream (no POST is pending now).
        assert!(connections_to(server.port) >= 1);
        conn.stop().await;
        let t = Instant::now();
        while connections_to(server.port) > 0 && t.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(connections_to(server.port), 0, "the stream outlived stop");
    });
    // The stream's GET and every POST had the configured headers, and none the key.
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(requests.lines().count() >= 5, "{requests}");
    assert!(!requests.contains(key), "{requests}");
    for line in requests.lines() {
        let h: Value = serde_json::from_str(line).unwrap();
        assert_eq!(h["authorization"], "Bearer user-token-1", "{line}");
    }
}

/// An `sse` server that fails: nothing listening is the reference's code-less line
/// (`SSE error: ECONNREFUSED: …`); an endpoint on another origin is refused before any message
/// goes there; an event that never ends is cut at the 4 MB cap (the server's memory, not ours);
/// a stream that never names its endpoint ends at the connection deadline.
#[test]
fn sse_servers_that_fail_get_the_reference_line_and_hostile_streams_are_refused() {
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (e, took) = failure(
        &sse(format!("http://127.0.0.1:{}/sse", free_port()), &[]),
        &limits(),
    );
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        (
            "",
            "SSE error: ECONNREFUSED: Unable to connect. Is the computer able to access the url?"
        ),
        "{e:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");

    // The endpoint names a listener of the test's own, on another port: never reached.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    elsewhere.set_nonblocking(true).unwrap();
    let foreign = format!(
        "http://127.0.0.1:{}/messages?session_id=1",
        elsewhere.local_addr().unwrap().port()
    );
    let server = mcp_http::HttpServer::start(
        "hostile_http_server.py",
        &["sse-foreign-endpoint", "{port}", &foreign],
    );
    let (e, took) = failure(&sse(server.sse_url(), &[]), &limits());
    assert_eq!(e.code, "", "{e:?}");
    assert_eq!(
        e.message,
        format!(
            "SSE error: the endpoint event names http://127.0.0.1:{}, not this server's origin http://127.0.0.1:{}: refused (messages go only to the server the stream came from)",
            elsewhere.local_addr().unwrap().port(),
            server.port
        )
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(
        matches!(elsewhere.accept(), Err(ref x) if x.kind() == std::io::ErrorKind::WouldBlock),
        "a message went to the foreign endpoint"
    );
    assert!(!server.stderr().contains("POST"), "{}", server.stderr());

    let server =
        mcp_http::HttpServer::start("hostile_http_server.py", &["sse-huge-event", "{port}"]);
    let lim = Limits {
        connect: Duration::from_secs(20),
        ..Limits::default()
    };
    let (e, took) = failure(&sse(server.sse_url(), &[]), &lim);
    let after = rss_mb();
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        (
            "",
            "SSE error: an event exceeded the maximum size of 4194304 bytes"
        ),
        "{e:?}; server: {}",
        server.stderr()
    );
    assert!(took < Duration::from_secs(40), "{took:?}");
    let t = Instant::now();
    while !server.stderr().contains("sent") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = server.stderr();
    let sent: u64 = said
        .lines()
        .find(|l| l.contains(" sent "))
        .and_then(|l| l.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    eprintln!(
        "sse-huge-event: cut after {} ms; the server sent {sent} bytes; peak RSS {} MB",
        took.as_millis(),
        after.1
    );
    // 4 MB read, plus what the sockets' buffers held: far from the endless event.
    assert!(sent < 32 << 20, "the server sent {sent} bytes");
    assert!(after.1 < 1024, "peak RSS {} MB", after.1);

    let server = mcp_http::HttpServer::start("hostile_http_server.py", &["sse-silent", "{port}"]);
    let lim = Limits {
        connect: Duration::from_secs(3),
        ..Limits::default()
    };
    let (e, took) = failure(&sse(server.sse_url(), &[]), &lim);
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("TIMEOUT", "Connection timed out after 3000ms"),
        "{e:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    // Giving up closed the stream: the server's next keep-alive finds it gone.
    let t = Instant::now();
    while !server.stderr().contains("sent") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        server.stderr().contains("sent 0 bytes"),
        "{}",
        server.stderr()
    );
}

/// Established TCP connections of this machine to 127.0.0.1:`port` (their client sides).
fn connections_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.len() > 3
                        && cols[3] == "01"
                        && cols[2]
                            .rsplit(':')
                            .next()
                            .and_then(|p| u16::from_str_radix(p, 16).ok())
                            == Some(port)
                })
                .count()
        })
        .sum()
}
