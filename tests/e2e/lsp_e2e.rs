//! End-to-end tests of `claude-context lsp`: the real binary over stdio, real files in temp
//! directories, real git repositories. Assertions are on what a user would see: hover markdown,
//! preview files and blocks, published diagnostics.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use crate::harness;
use harness::bin;

use std::path::Path;
use std::time::{Duration, Instant};

use harness::{Server, Workspace, uri};
use serde_json::{Value, json};

/// The standard little project: a CLAUDE.md with an include, a conditional TypeScript rule, a
/// Python rule, a nested CLAUDE.md, a source file, a user CLAUDE.md; committed to git.
fn project() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n\nProject rules.\n@docs/style.md\n");
    ws.write("docs/style.md", "Use two spaces.\n");
    ws.write(
        ".claude/rules/typescript.md",
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode.\n",
    );
    ws.write(
        ".claude/rules/python.md",
        "---\npaths:\n  - \"**/*.py\"\n---\nPython: black.\n",
    );
    ws.write("src/api/CLAUDE.md", "API handlers validate input.\n");
    ws.write("src/api/handler.ts", "export const handler = 1;\n");
    ws.write("src/cart.ts", "export const cart = 1;\n");
    std::fs::create_dir_all(ws.home.join(".claude")).unwrap();
    std::fs::write(ws.home.join(".claude/CLAUDE.md"), "User: be brief.\n").unwrap();
    ws.git_init();
    ws
}

fn file<'a>(preview: &'a Value, suffix: &str) -> Option<&'a Value> {
    preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(suffix))
}

fn status(preview: &Value, suffix: &str) -> String {
    file(preview, suffix)
        .map(|f| f["status"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "absent".into())
}

fn block<'a>(preview: &'a Value, kind: &str) -> Option<&'a str> {
    preview["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == kind)
        .and_then(|b| b["text"].as_str())
}

fn hover_md(s: &mut Server, path: &Path, line: u32, character: u32) -> String {
    let r = s.call(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(path)}, "position": {"line": line, "character": character}}),
    );
    r["contents"]["value"].as_str().unwrap_or("").to_string()
}

/// Waits until the first git snapshot landed (it sends its own `context/changed`), then drops
/// the notifications so far: later `context/changed` come from the test's own actions.
fn ready(s: &mut Server) {
    let deadline = Instant::now() + harness::TIMEOUT;
    while s.preview(None)["gitPending"] == true && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    s.drain();
}

fn changed(s: &mut Server) -> Value {
    s.notification("context/changed", |_| true)
        .expect("context/changed was sent")
}

#[test]
fn open_hover_preview_edit_close() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    let init = s.initialize(&ws.root, json!(null));
    ready(&mut s);
    assert_eq!(init["serverInfo"]["name"], "claude-context");
    assert_eq!(
        init["capabilities"]["textDocumentSync"]["change"], 2,
        "incremental sync"
    );

    // Watchers were registered for every workspace file (the git snapshot is on: its status is
    // about every file; instruction files are among them), and for nothing outside the
    // workspace: the server watches the user's folder itself.
    let reg = s
        .wait_for(harness::TIMEOUT, |m| {
            m["method"] == "client/registerCapability"
        })
        .expect("watchers registered");
    let watchers = reg["params"]["registrations"][0]["registerOptions"]["watchers"].to_string();
    assert!(
        watchers.contains("{\"globPattern\":\"**/*\"}"),
        "{watchers}"
    );
    assert!(
        !watchers.contains("baseUri"),
        "no pattern outside the workspace: {watchers}"
    );

    // Nothing open: the TypeScript rule waits.
    let p = s.preview(None);
    assert_eq!(status(&p, ".claude/rules/typescript.md"), "inactive");
    let instructions = block(&p, "instructions").unwrap();
    assert!(instructions.contains("Project rules."), "{instructions}");
    assert!(
        instructions.contains("Use two spaces."),
        "include loaded: {instructions}"
    );
    assert!(instructions.contains("User: be brief."), "{instructions}");
    assert_eq!(p["totals"]["window"], 1000000);
    assert_eq!(p["totals"]["autoCompactThreshold"], 967000);

    // Opening a matching file activates the rule and the nested CLAUDE.md.
    let handler = ws.path("src/api/handler.ts");
    s.drain();
    s.open(&handler, "export const handler = 1;\n");
    let c = changed(&mut s);
    assert!(c["uris"].to_string().contains("handler.ts"), "{c}");

    let md = hover_md(&mut s, &handler, 0, 3);
    assert!(
        md.starts_with("**Claude instructions for `src/api/handler.ts`**"),
        "{md}"
    );
    assert!(md.contains("[.claude/rules/typescript.md]("), "{md}");
    assert!(
        md.contains("| `src/**/*.ts` |"),
        "glob shown as the reason: {md}"
    );
    assert!(md.contains("[src/api/CLAUDE.md]("), "{md}");
    assert!(md.contains("nested: directory of this file"), "{md}");
    assert!(
        md.contains("[CLAUDE.md](") && md.contains("(+ docs/style.md)"),
        "{md}"
    );
    assert!(md.contains("| user | [~/.claude/CLAUDE.md]("), "{md}");
    assert!(!md.contains("python.md"), "{md}");

    let p = s.preview(Some(&handler));
    let ts = file(&p, ".claude/rules/typescript.md").unwrap();
    assert_eq!(ts["status"], "attached");
    assert_eq!(ts["matchedGlob"], "src/**/*.ts");
    assert!(
        ts["reason"]
            .as_str()
            .unwrap()
            .contains("matched src/api/handler.ts"),
        "{ts}"
    );
    assert_eq!(status(&p, "src/api/CLAUDE.md"), "attached");
    assert_eq!(status(&p, ".claude/rules/python.md"), "inactive");
    let attachments = p["attachments"].to_string();
    assert!(
        attachments.contains("TypeScript: strict mode."),
        "{attachments}"
    );
    assert!(
        attachments.contains("API handlers validate input."),
        "{attachments}"
    );
    assert_eq!(p["touched"][0], handler.to_str().unwrap());
    assert!(p["totals"]["attachments"].as_u64().unwrap() > 0);
    // The same for a preview without a document: open files are touched.
    assert_eq!(
        status(&s.preview(None), ".claude/rules/typescript.md"),
        "attached"
    );

    // Closing the file makes them go.
    s.drain();
    s.close(&handler);
    changed(&mut s);
    let p = s.preview(None);
    assert_eq!(status(&p, ".claude/rules/typescript.md"), "inactive");
    assert_eq!(p["attachments"], json!([]));

    // Editing CLAUDE.md: a missing include gets a diagnostic, the preview and hovers follow.
    let claude = ws.path("CLAUDE.md");
    s.open(&claude, "# Shop\n\nProject rules.\n@docs/style.md\n");
    let d = s.diagnostics(&claude, |_| true);
    // A clean file: no error, warning or information (a hint may say that sessions started in
    // a subdirectory drop the include).
    let d: Vec<Value> = d.into_iter().filter(|d| d["severity"] != 4).collect();
    assert_eq!(d, Vec::<Value>::new(), "clean file");
    s.drain();
    s.change(
        &claude,
        2,
        json!([{"range": {"start": {"line": 2, "character": 14}, "end": {"line": 2, "character": 14}},
                "text": " See @missing.md too."}]),
    );
    let d = s.diagnostics(&claude, |d| !d.is_empty());
    let d: Vec<Value> = d.into_iter().filter(|d| d["severity"] != 4).collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], 1);
    assert_eq!(d[0]["code"], "include-not-found");
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("include not found: missing.md"),
        "{}",
        d[0]
    );
    assert_eq!(
        d[0]["range"],
        json!({"start": {"line": 2, "character": 19}, "end": {"line": 2, "character": 30}})
    );
    changed(&mut s);
    let p = s.preview(None);
    assert!(
        block(&p, "instructions")
            .unwrap()
            .contains("Project rules. See @missing.md too.")
    );
    let missing = file(&p, "missing.md").expect("skipped include listed");
    assert_eq!(missing["status"], "skipped");
    assert_eq!(missing["reason"], "not found");
    assert!(
        p["pending"].to_string().contains("unsaved changes"),
        "{}",
        p["pending"]
    );
    let md = hover_md(&mut s, &claude, 2, 22);
    assert!(
        md.contains("**Not loaded**: include not found: missing.md"),
        "{md}"
    );
    let md = hover_md(&mut s, &ws.path("src/cart.ts"), 0, 0);
    assert!(
        md.contains("Pending: `CLAUDE.md` has unsaved changes"),
        "{md}"
    );

    // Removing the include clears the diagnostic.
    s.drain();
    s.change(
        &claude,
        3,
        json!([{"range": {"start": {"line": 2, "character": 14}, "end": {"line": 2, "character": 35}}, "text": ""}]),
    );
    let no_problem = |d: &[Value]| d.iter().all(|d| d["severity"] == 4);
    let d = s.diagnostics(&claude, no_problem);
    assert!(no_problem(&d), "{d:?}");
    assert!(
        !block(&s.preview(None), "instructions")
            .unwrap()
            .contains("missing.md")
    );

    assert!(
        s.junk.lock().unwrap().is_empty(),
        "stdout carried only JSON-RPC"
    );
    let status = s.shutdown();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn links_definition_completion_lens_and_glob_hover() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let claude = ws.path("CLAUDE.md");
    let text = "# Shop\n\nProject rules.\n@docs/style.md\n";
    s.open(&claude, text);

    let links = s.call(
        "textDocument/documentLink",
        json!({"textDocument": {"uri": uri(&claude)}}),
    );
    assert_eq!(links.as_array().unwrap().len(), 1, "{links}");
    assert_eq!(links[0]["target"], uri(&ws.path("docs/style.md")));
    assert_eq!(
        links[0]["range"],
        json!({"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 14}})
    );

    let def = s.call(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri(&claude)}, "position": {"line": 3, "character": 5}}),
    );
    assert_eq!(def["uri"], uri(&ws.path("docs/style.md")));

    let md = hover_md(&mut s, &claude, 3, 3);
    assert!(md.contains("Loads · ≈ 4 tokens"), "{md}");
    assert!(md.contains("Use two spaces."), "{md}");

    // Completion of a path after `@`.
    s.change(
        &claude,
        2,
        json!([{"range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 0}}, "text": "@do"}]),
    );
    let items = s.call(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri(&claude)}, "position": {"line": 4, "character": 3}}),
    );
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["docs/"]);
    assert_eq!(
        items[0]["textEdit"]["range"]["start"],
        json!({"line": 4, "character": 1})
    );

    // Frontmatter keys in a rule.
    let rule = ws.path(".claude/rules/typescript.md");
    s.open(
        &rule,
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode.\n",
    );
    let items = s.call(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri(&rule)}, "position": {"line": 1, "character": 0}}),
    );
    assert!(items.to_string().contains("\"label\":\"paths\""), "{items}");

    // Code lens: inactive, then active when a matching file opens.
    let lens = |s: &mut Server| {
        let l = s.call(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&rule)}}),
        );
        l[0]["command"]["title"].as_str().unwrap().to_string()
    };
    assert_eq!(
        lens(&mut s),
        "≈ 7 tokens · inactive: no open file matches src/**/*.ts"
    );
    s.open(&ws.path("src/cart.ts"), "export const cart = 1;\n");
    assert_eq!(
        lens(&mut s),
        "≈ 7 tokens · active for 1 open file (cart.ts)"
    );
    let l = s.call(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri(&claude)}}),
    );
    assert!(
        l[0]["command"]["title"]
            .as_str()
            .unwrap()
            .ends_with("· always loaded"),
        "{l}"
    );

    // Glob hover: how many files match (after the background scan).
    let deadline = Instant::now() + harness::TIMEOUT;
    let md = loop {
        let md = hover_md(&mut s, &rule, 1, 10);
        if !md.contains("being read") || Instant::now() > deadline {
            break md;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(md.contains("Matches **2** workspace files"), "{md}");
    assert!(md.contains("- `src/api/handler.ts`"), "{md}");

    // The Python rule matches nothing in this workspace: a hint.
    let py = ws.path(".claude/rules/python.md");
    s.open(&py, "---\npaths:\n  - \"**/*.py\"\n---\nPython: black.\n");
    let d = s.diagnostics(&py, |d| !d.is_empty());
    assert_eq!(d[0]["severity"], 4, "hint: {d:?}");
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("\"**/*.py\" matches no file"),
        "{d:?}"
    );

    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn git_snapshot_arrives_without_blocking_previews() {
    let ws = project();
    ws.write("untracked.txt", "x");
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let deadline = Instant::now() + harness::TIMEOUT;
    let p = loop {
        let p = s.preview(None);
        if p["gitPending"] == false || Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(p["gitPending"], false);
    let git = block(&p, "gitStatus").expect("git block");
    assert!(git.contains("Current branch: main"), "{git}");
    assert!(git.contains("?? untracked.txt"), "{git}");
    assert!(git.contains("Initial commit"), "{git}");
    assert_eq!(p["git"]["branch"], "main");
    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn settings_apply_live() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(
        &ws.root,
        json!({"rules": {"activateFromOpenFiles": false}, "window": 1000000}),
    );
    ready(&mut s);
    let handler = ws.path("src/api/handler.ts");
    s.open(&handler, "x\n");
    let p = s.preview(None);
    assert_eq!(
        status(&p, "typescript.md"),
        "inactive",
        "open files do not count"
    );
    assert_eq!(p["totals"]["window"], 1000000);
    // The document itself is always touched.
    assert_eq!(
        status(&s.preview(Some(&handler)), "typescript.md"),
        "attached"
    );

    // The server pulled `workspace/configuration` after `initialized`; the client has nothing
    // configured (`{}`), so initializationOptions stay.
    s.wait_for(harness::TIMEOUT, |m| {
        m["method"] == "workspace/configuration"
    })
    .unwrap();
    assert_eq!(s.preview(None)["totals"]["window"], 1000000);

    // Pushed settings lie over initializationOptions.
    s.drain();
    s.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"claudeContext": {"rules": {"activateFromOpenFiles": true}}}}),
    );
    changed(&mut s);
    let p = s.preview(None);
    assert_eq!(status(&p, "typescript.md"), "attached");
    assert_eq!(
        p["totals"]["window"], 1000000,
        "initializationOptions still apply"
    );

    // Pulled settings: the server asks with workspace/configuration.
    *s.settings.lock().unwrap() = json!({"window": 500000});
    s.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": null}),
    );
    changed(&mut s);
    let p = s.preview(None);
    assert_eq!(p["totals"]["window"], 500000);
    assert_eq!(
        status(&p, "typescript.md"),
        "inactive",
        "back to initializationOptions' false"
    );

    // A bad value is reported, naming the field, and ignored.
    s.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"claudeContext": {"git": {"enabled": "yes"}}}}),
    );
    let m = s.notification("window/showMessage", |_| true).unwrap();
    assert!(
        m["message"]
            .as_str()
            .unwrap()
            .contains("claudeContext.git.enabled"),
        "{m}"
    );
    assert_eq!(s.preview(None)["totals"]["window"], 500000);
    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn watched_file_changes_reach_previews() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    ready(&mut s);
    assert!(
        block(&s.preview(None), "instructions")
            .unwrap()
            .contains("Use two spaces.")
    );
    // An include target changes on disk (not open in the editor).
    let style = ws.write("docs/style.md", "Use tabs.\n");
    s.drain();
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&style), "type": 2}]}),
    );
    changed(&mut s);
    let text = s.preview(None);
    let text = block(&text, "instructions").unwrap();
    assert!(
        text.contains("Use tabs.") && !text.contains("two spaces"),
        "{text}"
    );
    // A nested directory below the open file gets a CLAUDE.md and a rule on disk: the open
    // file's preview attaches them (the directory's earlier scan is not reused).
    let cart = ws.path("src/cart.ts");
    s.open(&cart, "export const cart = 1;\n");
    assert_eq!(status(&s.preview(Some(&cart)), "src/CLAUDE.md"), "absent");
    let nested = ws.write("src/CLAUDE.md", "Source rules.\n");
    let nested_rule = ws.write(
        "src/.claude/rules/ts.md",
        "---\npaths: \"*.ts\"\n---\nNested TS.\n",
    );
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&nested), "type": 1}, {"uri": uri(&nested_rule), "type": 1}]}),
    );
    changed(&mut s);
    let p = s.preview(Some(&cart));
    assert_eq!(status(&p, "src/CLAUDE.md"), "attached", "{p:#}");
    assert_eq!(status(&p, "src/.claude/rules/ts.md"), "attached", "{p:#}");
    s.close(&cart);
    // A new rule file appears.
    let rule = ws.write(".claude/rules/general.md", "Always write tests.\n");
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&rule), "type": 1}]}),
    );
    changed(&mut s);
    assert!(
        block(&s.preview(None), "instructions")
            .unwrap()
            .contains("Always write tests.")
    );
    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn invalid_params_name_the_field() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let cases = [
        (
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&ws.path("CLAUDE.md"))}, "position": {"line": "x", "character": 0}}),
            "position.line",
        ),
        (
            "textDocument/hover",
            json!({"position": {"line": 0, "character": 0}}),
            "textDocument",
        ),
        (
            "textDocument/codeLens",
            json!({"textDocument": {}}),
            "textDocument",
        ),
        (
            "context/preview",
            json!({"textDocument": {"uri": 5}}),
            "textDocument.uri",
        ),
        (
            "context/preview",
            json!({"textDocument": {"uri": "not a uri"}}),
            "textDocument.uri",
        ),
        (
            "context/preview",
            json!({"textDocument": {"uri": "https://example.com/x"}}),
            "textDocument.uri",
        ),
        ("context/preview", json!({"sessionId": "s1"}), "sessionId"),
    ];
    for (method, params, field) in cases {
        let r = s.request(method, params.clone());
        let e = &r["error"];
        assert_eq!(e["code"], -32602, "{method} {params}: {r}");
        assert!(
            e["message"].as_str().unwrap().contains(field),
            "{method} {params}: {e}"
        );
        assert_eq!(
            e["message"]
                .as_str()
                .unwrap()
                .matches("Invalid params")
                .count(),
            1,
            "said once: {e}"
        );
    }
    let r = s.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    assert!(s.alive());
    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn exit_codes_and_end_of_input() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    s.notify("exit", Value::Null);
    assert_eq!(s.wait_exit().code(), Some(1), "exit without shutdown");

    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    s.close_stdin();
    assert_eq!(
        s.wait_exit().code(),
        Some(1),
        "end of input without shutdown"
    );
}

/// `vscode-jsonrpc` sends `sendRequest('shutdown', null)` as params `[null]`: the server shuts
/// down and `exit` ends it with status 0.
#[test]
fn shutdown_as_vscode_sends_it_exits_zero() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let r = s.request("shutdown", json!([null]));
    assert!(r.get("error").is_none(), "{r}");
    let r = s.request("context/preview", json!({}));
    assert_eq!(r["error"]["code"], -32600, "after shutdown: {r}");
    s.notify("exit", Value::Null);
    assert_eq!(s.wait_exit().code(), Some(0));
}

/// A client that stops reading does not make the server grow: the outbound queue is bounded,
/// so the server stops reading its input, and the client's writes block. When the client reads
/// again, every request is answered.
#[test]
fn a_client_that_stops_reading_does_not_grow_the_server() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let ws = project();
    let mut child = Command::new(bin())
        .arg("lsp")
        .env_clear()
        .env("HOME", &ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
        .env("GIT_CEILING_DIRECTORIES", ws.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    const N: usize = 40_000;
    let sent = Arc::new(AtomicUsize::new(0));
    let claude = uri(&ws.path("CLAUDE.md"));
    let root = uri(&ws.root);
    let counter = sent.clone();
    let writer = std::thread::spawn(move || {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"processId": null, "rootUri": root, "capabilities": {}}});
        stdin
            .write_all(&harness::frame(init.to_string().as_bytes()))
            .unwrap();
        for i in 1..=N {
            let m = json!({"jsonrpc": "2.0", "id": i, "method": "context/preview",
                "params": {"textDocument": {"uri": claude}}});
            if stdin
                .write_all(&harness::frame(m.to_string().as_bytes()))
                .is_err()
            {
                return stdin;
            }
            counter.store(i, Ordering::Relaxed);
        }
        let _ = stdin.flush();
        stdin
    });
    // Wait until the writer is stuck (the server stopped reading) or done.
    let mut last = usize::MAX;
    let mut still = 0;
    while still < 5 && sent.load(Ordering::Relaxed) < N {
        std::thread::sleep(Duration::from_millis(200));
        let now = sent.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let written = sent.load(Ordering::Relaxed);
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss_kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    eprintln!(
        "client stopped reading: {written} of {N} requests written, server VmRSS {} MB",
        rss_kib / 1024
    );
    assert!(
        written < N,
        "the server kept reading while nobody read its answers"
    );
    assert!(rss_kib < 80 * 1024, "server grew to {} MB", rss_kib / 1024);
    // Reading again: every request is answered.
    let mut seen = std::collections::HashSet::new();
    let mut buf = Vec::new();
    let mut chunk = vec![0; 1 << 16];
    while seen.len() < N + 1 {
        let n = stdout.read(&mut chunk).unwrap();
        assert!(n > 0, "output ended after {} answers", seen.len());
        buf.extend_from_slice(&chunk[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let header = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = header
                .trim_start_matches("Content-Length: ")
                .trim()
                .parse()
                .unwrap();
            if buf.len() < end + 4 + len {
                break;
            }
            let msg: Value = serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap();
            buf.drain(..end + 4 + len);
            if msg.get("method").is_none() {
                assert!(msg.get("result").is_some(), "{msg}");
                seen.insert(msg["id"].as_u64().unwrap());
            }
        }
    }
    let mut stdin = writer.join().unwrap();
    let bye = json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"});
    stdin
        .write_all(&harness::frame(bye.to_string().as_bytes()))
        .unwrap();
    stdin
        .write_all(&harness::frame(br#"{"jsonrpc":"2.0","method":"exit"}"#))
        .unwrap();
    drop(stdin);
    let reader = std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = stdout.read_to_end(&mut rest);
    });
    assert_eq!(child.wait().unwrap().code(), Some(0));
    reader.join().unwrap();
}

/// Quality R2: 10,000 malformed or invalid messages. The server stays up, answers an error to
/// each message that is due one (JSON-RPC 2.0: with the message's id, or null when it has none),
/// and never answers a notification.
#[test]
fn survives_ten_thousand_malformed_messages() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let claude = uri(&ws.path("CLAUDE.md"));
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Per message: its id in the answer ("null" when it has none usable), the expected code
    // (0 for a result), and a text the error message must contain; `None` when no answer is due.
    let mut expected: Vec<Option<(String, i64, &str)>> = Vec::new();
    let mut raw = Vec::new();
    const N: usize = 10_000;
    for i in 0..N {
        let id = format!("m{i}");
        let (body, exp): (String, Option<(String, i64, &str)>) = match next() % 19 {
            0 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"x\""), Some(("null".into(), -32700, "Parse error"))),
            1 => ("true".into(), Some(("null".into(), -32600, "JSON object, got a boolean"))),
            2 => (
                format!("{{\"jsonrpc\":\"1.0\",\"id\":\"{id}\",\"method\":\"textDocument/hover\"}}"),
                Some((id.clone(), -32600, "\"jsonrpc\" must be \"2.0\"")),
            ),
            3 => ("[1,2,3]".into(), Some(("null".into(), -32600, "JSON object, got an array"))),
            4 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\"}}"), Some((id.clone(), -32600, "needs a \"method\""))),
            5 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":42}}"), Some((id.clone(), -32600, "\"method\" must be a string"))),
            6 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"no/such\"}}"), Some((id.clone(), -32601, ""))),
            7 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"textDocument/hover\",\"params\":{{\"textDocument\":{{\"uri\":\"{claude}\"}},\"position\":{{\"line\":-1}}}}}}"),
                Some((id.clone(), -32602, "position.line")),
            ),
            8 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"context/preview\",\"params\":{{\"textDocument\":7}}}}"),
                Some((id.clone(), -32602, "textDocument")),
            ),
            9 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"context/preview\",\"params\":\"str\"}}"),
                Some((id.clone(), -32602, "\"params\" must be an object")),
            ),
            // Notifications with bad params: no answer is due, and they must not hurt.
            10 => ("{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{}}}".into(), None),
            11 => ("{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":[1]}".into(), None),
            12 => {
                // Random bytes after a control character: never JSON.
                let n = (next() % 40) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| (next() % 256) as u8).collect();
                (format!("\u{1}{}", String::from_utf8_lossy(&bytes)), Some(("null".into(), -32700, "Parse error")))
            }
            13 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{{\"a\":1}},\"method\":\"x\",\"n\":\"{id}\"}}"),
                Some(("null".into(), -32600, "\"id\" must be")),
            ),
            14 => ("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":\"nope\"}}".into(), None),
            15 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"x\",\"params\":{{\"s\":\"\\ud800\"}}}}"),
                Some(("null".into(), -32700, "Parse error")),
            ),
            // `$/` requests are due an answer like any request (LSP 3.17): -32601.
            16 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"$/progressRequest\",\"params\":{{}}}}"),
                Some((id.clone(), -32601, "Method not found")),
            ),
            17 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"$/cancelRequest\",\"params\":{{\"id\":1}}}}"),
                Some((id.clone(), -32601, "Method not found")),
            ),
            // Valid traffic mixed in: answered with a result.
            _ => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"textDocument/codeLens\",\"params\":{{\"textDocument\":{{\"uri\":\"{claude}\"}}}}}}"),
                Some((id.clone(), 0, "")),
            ),
        };
        raw.extend_from_slice(&harness::frame(body.as_bytes()));
        expected.push(exp);
    }
    let started = Instant::now();
    s.send_raw(&raw);
    let due = expected.iter().flatten().count();
    let mut by_id: std::collections::HashMap<String, (i64, &str)> = expected
        .iter()
        .flatten()
        .filter(|(id, _, _)| id != "null")
        .map(|(id, code, text)| (id.clone(), (*code, *text)))
        .collect();
    let mut null_expected: Vec<(i64, &str)> = expected
        .iter()
        .flatten()
        .filter(|(id, _, _)| id == "null")
        .map(|(_, code, text)| (*code, *text))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut codes = std::collections::BTreeMap::<i64, usize>::new();
    for answered in 0..due {
        let m = s
            .wait_for(deadline.saturating_duration_since(Instant::now()), |m| {
                m.get("method").is_none() && (m.get("error").is_some() || m.get("result").is_some())
            })
            .unwrap_or_else(|| panic!("only {answered} of {due} answers; codes so far {codes:?}"));
        let code = m["error"]["code"].as_i64().unwrap_or(0);
        let message = m["error"]["message"].as_str().unwrap_or("");
        *codes.entry(code).or_default() += 1;
        match m["id"].as_str() {
            Some(id) => {
                let (want, text) = by_id
                    .remove(id)
                    .unwrap_or_else(|| panic!("unexpected answer {m}"));
                assert_eq!(code, want, "{m}");
                assert!(message.contains(text), "{text:?} in {m}");
            }
            None => {
                assert!(m["id"].is_null(), "{m}");
                let i = null_expected
                    .iter()
                    .position(|(c, t)| *c == code && message.contains(t))
                    .unwrap_or_else(|| panic!("unexpected null-id answer {m}"));
                null_expected.swap_remove(i);
            }
        }
    }
    let elapsed = started.elapsed();
    assert!(by_id.is_empty() && null_expected.is_empty());
    // Nothing more arrives (no answers to notifications), and the server still works.
    std::thread::sleep(Duration::from_millis(200));
    s.drain();
    s.backlog.retain(|m| m.get("method").is_none());
    assert!(
        s.backlog.is_empty(),
        "unexpected extra answers: {:?}",
        &s.backlog[..s.backlog.len().min(3)]
    );
    assert!(s.alive());
    let p = s.preview(None);
    assert!(
        block(&p, "instructions")
            .unwrap()
            .contains("Project rules.")
    );
    assert!(s.junk.lock().unwrap().is_empty());
    eprintln!(
        "R2: {N} malformed/invalid messages, {due} answers due and received in {elapsed:?}: {codes:?}"
    );
    assert_eq!(s.shutdown().code(), Some(0));
}

#[test]
fn framing_errors_are_skipped() {
    let ws = project();
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    // A header without Content-Length, junk between frames, a wrong length, a huge length.
    s.send_raw(b"Content-Type: x\r\n\r\n");
    s.send_raw(b"garbage in between\r\n");
    s.send_raw(b"Content-Length: nope\r\n\r\n");
    s.send_raw(b"Content-Length: 2\r\n\r\n{\"jsonrpc\":\"2.0\"}");
    let r = s.request("context/preview", json!({}));
    assert!(r["result"]["files"].is_array(), "{r}");
    assert!(s.alive());
    let errors = s
        .backlog
        .iter()
        .filter(|m| m["id"].is_null() && m.get("error").is_some())
        .count();
    assert!(
        errors >= 3,
        "framing errors answered with id null: {:?}",
        s.backlog
    );
    assert_eq!(s.shutdown().code(), Some(0));
}

// ---------------------------------------------------------------------------------------------
// The session runtime, in process: the real server loop over a duplex pipe.

use crate::inproc;

use claude_context::host::{Clock, Host};

/// A host seeing only the workspace: its home, managed directory, git ceiling; auto-memory on.
fn host_for(ws: &Workspace) -> Host {
    let vars = [
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
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Host::from_vars(
        vars,
        ws.root.clone(),
        "linux".into(),
        "Linux 6.1".into(),
        Clock::Fixed("2026-01-01".into()),
    )
}

fn watcher_caps() -> Value {
    json!({
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true}
        }
    })
}

/// A request's answer is written before any notification the request caused: `context/preview`
/// starts the first git snapshot, whose `context/changed` must follow the preview's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_caused_by_a_request_never_overtakes_its_answer() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n");
    for round in 0..20 {
        let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
        // `initialize` only: no warm-up snapshot, so the preview starts the first one.
        let _ = c
            .call(
                "initialize",
                json!({"processId": null, "rootUri": uri(&ws.root), "capabilities": {}}),
            )
            .await;
        let id = c.send_request("context/preview", json!({})).await;
        let changed = c
            .wait_index(|m| m["method"] == "context/changed")
            .await
            .expect("the snapshot's context/changed");
        let answer = c
            .wait_index(|m| m["id"] == id && m.get("method").is_none())
            .await
            .expect("the preview's answer");
        assert_eq!(c.log[answer]["result"]["gitPending"], true, "round {round}");
        assert!(
            answer < changed,
            "round {round}: context/changed (#{changed}) overtook the answer (#{answer})"
        );
        let ended = c.shutdown_with(Value::Null).await;
        assert!(ended.shutdown);
    }
}

/// `shutdown` with the params real clients send shuts down cleanly; bad params are refused
/// without wedging the server (a later `shutdown` still works).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_accepts_null_array_and_object_params() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n");
    for params in [json!(null), json!([null]), json!({}), json!([])] {
        let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
        c.initialize(&ws.root, json!({})).await;
        let ended = c.shutdown_with(params.clone()).await;
        assert!(ended.shutdown, "{params}");
        assert_eq!(ended.how, claude_context::lsp::main_loop::How::Exit);
    }
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, json!({})).await;
    let id = c.send_request("shutdown", json!([1])).await;
    let r = c.response(&id).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert_eq!(msg.matches("Invalid params").count(), 1, "{msg}");
    // Still serving, and a proper shutdown works.
    assert!(c.call("context/preview", json!({})).await["files"].is_array());
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// Input that ends while requests run: every request still gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_ending_with_requests_in_flight_still_answers_them() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n@docs/style.md\n");
    ws.write("docs/style.md", "Two spaces.\n");
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, json!({})).await;
    let claude = uri(&ws.path("CLAUDE.md"));
    let mut raw = Vec::new();
    const N: i64 = 300;
    for i in 0..N {
        let (method, params) = match i % 3 {
            0 => ("context/preview", json!({})),
            1 => (
                "textDocument/codeLens",
                json!({"textDocument": {"uri": claude}}),
            ),
            _ => (
                "textDocument/hover",
                json!({"textDocument": {"uri": claude}, "position": {"line": 1, "character": 2}}),
            ),
        };
        let msg = json!({"jsonrpc": "2.0", "id": 1000 + i, "method": method, "params": params});
        raw.extend(inproc::frame(msg.to_string().as_bytes()));
    }
    c.send_raw(&raw).await;
    c.close().await;
    for i in 0..N {
        let id = json!(1000 + i);
        let r = c.response(&id).await;
        assert!(r.get("result").is_some(), "{r}");
    }
    let ended = tokio::time::timeout(inproc::WAIT, c.server)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.how, claude_context::lsp::main_loop::How::Eof);
    assert!(!ended.shutdown);
}

/// VS Code reports a deleted or renamed folder as one event for the folder: everything below
/// it is invalidated (an include under it, a rules directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folder_level_events_invalidate_everything_below() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n@docs/style.md\n");
    ws.write("docs/style.md", "Use two spaces.\n");
    ws.write(".claude/rules/general.md", "Always write tests.\n");
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, json!({})).await;
    let p = c.call("context/preview", json!({})).await;
    let text = block(&p, "instructions").unwrap().to_string();
    assert!(
        text.contains("Use two spaces.") && text.contains("Always write tests."),
        "{text}"
    );

    std::fs::remove_dir_all(ws.path("docs")).unwrap();
    c.mark();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&ws.path("docs")), "type": 3}]}),
    )
    .await;
    c.next_notification("context/changed").await;
    let p = c.call("context/preview", json!({})).await;
    assert_eq!(status(&p, "docs/style.md"), "skipped", "{p:#}");
    assert!(!block(&p, "instructions").unwrap().contains("two spaces"));

    // A renamed rules folder: its old path is deleted, its new path created.
    std::fs::rename(ws.path(".claude/rules"), ws.path(".claude/rules-old")).unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [
            {"uri": uri(&ws.path(".claude/rules")), "type": 3},
            {"uri": uri(&ws.path(".claude/rules-old")), "type": 1}
        ]}),
    )
    .await;
    c.next_notification("context/changed").await;
    let p = c.call("context/preview", json!({})).await;
    assert!(
        !block(&p, "instructions")
            .unwrap()
            .contains("Always write tests."),
        "{p:#}"
    );
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// A folder added with `didChangeWorkspaceFolders` is watched as a folder given at `initialize`
/// is: its memory directory (outside the workspace) by the server itself, since a client asked
/// to watch a pattern based there would watch its whole base.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_added_late_gets_its_watchers() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n");
    let other = ws.dir.path().canonicalize().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("CLAUDE.md"), "Other rules.\n").unwrap();
    let memory = claude_context::memory::default_dir(&ws.home, &other);
    std::fs::create_dir_all(&memory).unwrap();
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, watcher_caps()).await;
    // The client is asked for the workspace only: nothing based outside it.
    let reg = c.wait(|m| m["method"] == "client/registerCapability").await;
    assert!(!reg.to_string().contains("baseUri"), "{reg}");

    c.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": [{"uri": uri(&other), "name": "other"}], "removed": []}}),
    )
    .await;
    let doc = other.join("CLAUDE.md");
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&doc), "languageId": "markdown", "version": 1,
                                "text": "Other rules.\n"}}),
    )
    .await;
    let before = c
        .call(
            "context/preview",
            json!({"textDocument": {"uri": uri(&doc)}}),
        )
        .await;
    assert!(!before.to_string().contains("Remember the cart."));
    // The late folder's memory directory is watched by the server: a memory saved by another
    // program shows with no event from the client.
    std::fs::write(memory.join("MEMORY.md"), "- Remember the cart.\n").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let p = c
            .call(
                "context/preview",
                json!({"textDocument": {"uri": uri(&doc)}}),
            )
            .await;
        if p.to_string().contains("Remember the cart.") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the memory file never reached the preview: {p:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// Links and diagnostics cost one pass over the text, not one per include: 8,000 includes on
/// 8,000 lines, and 20,000 on one line, are answered at once (quadratic, they took seconds).
/// The first 1,000 includes of a file are followed and linked; a `cap-includes` diagnostic says
/// the rest are not (the engine's cap, issue 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_diagnostics_stay_linear_in_includes() {
    let ws = Workspace::new();
    let many_lines: String = (0..8000).map(|i| format!("See @docs/f{i}.md\n")).collect();
    let one_line: String = (0..20000)
        .map(|i| format!("@x/g{i}.md "))
        .collect::<String>()
        + "\n";
    let a = ws.write("CLAUDE.md", &many_lines);
    let b = ws.write("sub/CLAUDE.md", &one_line);
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, json!({})).await;
    let started = Instant::now();
    let links = c
        .call(
            "textDocument/documentLink",
            json!({"textDocument": {"uri": uri(&a)}}),
        )
        .await;
    assert_eq!(links.as_array().unwrap().len(), 1000);
    assert_eq!(
        links[999]["range"]["start"],
        json!({"line": 999, "character": 4})
    );
    let links_took = started.elapsed();

    c.mark();
    let started = Instant::now();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&b), "languageId": "markdown", "version": 1, "text": one_line}}),
    )
    .await;
    let d = c.next_notification("textDocument/publishDiagnostics").await;
    let diags: Vec<&Value> = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "include-not-found")
        .collect();
    assert_eq!(diags.len(), 1000, "one per missing include, up to the cap");
    let last = &diags[999]["range"]["start"];
    assert_eq!(last["line"], 0);
    assert_eq!(last["character"], one_line.find("@x/g999.md").unwrap());
    assert!(
        d["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "cap-includes"),
        "the cap is said: {d}"
    );
    let diags_took = started.elapsed();
    eprintln!("8,000 links: {links_took:?}; 20,000 diagnostics on one line: {diags_took:?}");
    assert!(
        links_took < Duration::from_secs(10) && diags_took < Duration::from_secs(20),
        "links {links_took:?}, diagnostics {diags_took:?}"
    );
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// A burst of edits gives one `context/changed` (not one per keystroke); bad
/// `initializationOptions` are shown to the user; a CLAUDE.md outside every workspace folder is
/// judged in its own project (a missing include is "not found", not "approve external includes").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_coalesce_bad_options_show_and_outside_files_stand_alone() {
    let ws = Workspace::new();
    let claude = ws.write("CLAUDE.md", "Project rules.\n");
    let outside = ws
        .dir
        .path()
        .canonicalize()
        .unwrap()
        .join("elsewhere/CLAUDE.md");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::write(&outside, "See @missing.md\n").unwrap();
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    let _ = c
        .call(
            "initialize",
            json!({"processId": null, "rootUri": uri(&ws.root), "capabilities": {},
                   "initializationOptions": {"window": "big"}}),
        )
        .await;
    let m = c.wait(|m| m["method"] == "window/showMessage").await;
    assert!(
        m["params"]["message"]
            .as_str()
            .unwrap()
            .contains("claudeContext.window"),
        "{m}"
    );
    c.notify("initialized", json!({})).await;

    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&claude), "languageId": "markdown", "version": 1, "text": "Project rules.\n"}}),
    )
    .await;
    c.next_notification("textDocument/publishDiagnostics").await;
    c.mark();
    for v in 2..120 {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&claude), "version": v},
                   "contentChanges": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "x"}]}),
        )
        .await;
    }
    // The preview after the burst sees every edit.
    let p = c.call("context/preview", json!({})).await;
    assert!(
        block(&p, "instructions")
            .unwrap()
            .contains(&"x".repeat(118))
    );
    // The last edit is linted (a machine stalling for more than 25 ms mid-burst may lint an
    // earlier version first).
    c.wait_from(0, |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 119
    })
    .await
    .expect("the last edit is linted");
    let sent = c
        .log
        .iter()
        .filter(|m| m["method"] == "context/changed")
        .count();
    // Setup sends some (the first git snapshot, the open); the burst adds one, or a few when the
    // machine stalls; never one per edit.
    assert!(
        sent <= 10,
        "{sent} context/changed for one burst of 118 edits"
    );

    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&outside), "languageId": "markdown", "version": 1, "text": "See @missing.md\n"}}),
    )
    .await;
    let want = uri(&outside);
    let d = c
        .wait(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == want.as_str()
        })
        .await;
    let codes = d["params"]["diagnostics"].to_string();
    assert!(codes.contains("include-not-found"), "{codes}");
    assert!(!codes.contains("approv"), "{codes}");
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// P6's mechanism: with the git snapshot on, the workspace watcher covers every file, and a file
/// event brings the git block up to date at once (from the status cache, redoing only what
/// changed), well before the 30 s safety timer would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_events_keep_the_git_block_current() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Project rules.\n");
    ws.write("src/deep/a.txt", "a\n");
    ws.git_init();
    let mut c = inproc::Client::start(host_for(&ws), 1 << 16);
    c.initialize(&ws.root, watcher_caps()).await;
    let reg = c
        .wait(|m| {
            m["method"] == "client/registerCapability"
                && m["params"]["registrations"][0]["id"] == "claude-context-watchers"
        })
        .await;
    let watchers = reg["params"]["registrations"][0]["registerOptions"]["watchers"].to_string();
    assert!(watchers.contains("\"globPattern\":\"**/*\""), "{watchers}");
    let git_block = |p: &Value| block(p, "gitStatus").map(str::to_string);
    let mut p = c.call("context/preview", json!({})).await;
    while p["gitPending"] == true {
        c.next_notification("context/changed").await;
        p = c.call("context/preview", json!({})).await;
    }
    assert!(git_block(&p).unwrap().contains("Status:\n(clean)"), "{p:#}");

    // Edited on disk, reported by the watcher: the block follows without a timer.
    ws.write("src/deep/a.txt", "a\nb\n");
    c.mark();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&ws.path("src/deep/a.txt")), "type": 2}]}),
    )
    .await;
    c.next_notification("context/changed").await;
    let p = c.call("context/preview", json!({})).await;
    let block = git_block(&p).unwrap();
    assert!(block.contains("Status:\n M src/deep/a.txt"), "{block}");
    assert!(c.shutdown_with(Value::Null).await.shutdown);
}

/// Claude Code's settings files through the editor (issue 18): the user's settings are watched by
/// the server itself (the client is asked to watch the workspace only: a relative pattern based
/// at the home folder makes clients walk all of it), a `claudeMdExcludes` written on disk reaches
/// the preview with no event from the client (`excluded`, with the pattern and the file), the
/// code lens and the hover of the excluded file, and a nested file below an open one; a project
/// settings `env` block that disables instruction files empties the preview.
#[test]
fn settings_files_are_watched_and_exclusions_shown() {
    let ws = project();
    ws.write("CLAUDE.local.md", "Local notes.\n");
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    let reg = s
        .wait_for(harness::TIMEOUT, |m| {
            m["method"] == "client/registerCapability"
        })
        .expect("watchers registered");
    let watchers = reg["params"]["registrations"][0]["registerOptions"]["watchers"].clone();
    assert!(
        watchers
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["globPattern"].is_string()),
        "the client is asked for workspace patterns only: {watchers}"
    );
    ready(&mut s);
    assert_eq!(status(&s.preview(None), "CLAUDE.local.md"), "loaded");

    let settings = ws.home.join(".claude/settings.json");
    std::fs::write(
        &settings,
        r#"{"claudeMdExcludes": ["**/CLAUDE.local.md", "**/src/api/CLAUDE.md"]}"#,
    )
    .unwrap();
    s.drain();
    // No event from the client: the server's own watch of the user's folder sees it.
    changed(&mut s);
    let p = s.preview(None);
    let local = file(&p, "CLAUDE.local.md").unwrap();
    assert_eq!(local["status"], "excluded", "{p:#}");
    assert_eq!(local["excludedBy"]["pattern"], "**/CLAUDE.local.md");
    assert_eq!(local["excludedBy"]["settings"], settings.to_str().unwrap());
    assert_eq!(p["settings"][0]["keys"], json!(["claudeMdExcludes"]));
    assert!(!block(&p, "instructions").unwrap().contains("Local notes."));

    let local_md = ws.path("CLAUDE.local.md");
    s.open(&local_md, "Local notes.\n");
    let l = s.call(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri(&local_md)}}),
    );
    let title = l[0]["command"]["title"].as_str().unwrap().to_string();
    assert!(
        title.ends_with(&format!(
            "excluded: not loaded, by the claudeMdExcludes pattern \"**/CLAUDE.local.md\" of {}",
            settings.display()
        )),
        "{title}"
    );
    let md = hover_md(&mut s, &local_md, 0, 2);
    assert!(
        md.starts_with("This file: ") && md.contains("excluded: not loaded"),
        "{md}"
    );
    // The nested CLAUDE.md below an open file is not attached, and says why.
    let handler = ws.path("src/api/handler.ts");
    s.open(&handler, "export const handler = 1;\n");
    let p = s.preview(Some(&handler));
    assert_eq!(status(&p, "src/api/CLAUDE.md"), "excluded", "{p:#}");
    assert_eq!(status(&p, ".claude/rules/typescript.md"), "attached");

    // A project settings file's env block acts as the environment.
    let project_settings = ws.write(
        ".claude/settings.json",
        r#"{"env": {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1"}}"#,
    );
    s.drain();
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&project_settings), "type": 1}]}),
    );
    changed(&mut s);
    let p = s.preview(Some(&handler));
    assert_eq!(block(&p, "instructions"), None, "{p:#}");
    assert_eq!(p["attachments"], json!([]));
    assert_eq!(s.shutdown().code(), Some(0));
}

/// A workspace folder opened through a symbolic link is the session's `PWD` (the path the user
/// opened): files opened under it count as under the project, as in a shell started there.
#[test]
fn a_folder_opened_through_a_link_is_the_sessions_pwd() {
    let ws = project();
    let link = ws.root.parent().unwrap().join("shop-link");
    std::os::unix::fs::symlink(&ws.root, &link).unwrap();
    let mut s = ws.spawn(&bin());
    s.initialize(&link, json!(null));
    ready(&mut s);
    let handler = link.join("src/api/handler.ts");
    s.open(&handler, "export const handler = 1;\n");
    let p = s.preview(Some(&handler));
    assert_eq!(
        status(&p, ".claude/rules/typescript.md"),
        "attached",
        "{p:#}"
    );
    assert_eq!(status(&p, "src/api/CLAUDE.md"), "attached", "{p:#}");
    // Shown under the real paths, as Claude Code shows them.
    assert_eq!(p["cwd"], ws.root.to_str().unwrap());
    assert_eq!(s.shutdown().code(), Some(0));
}

/// Skills and MCP servers over the language server: `context/preview` lists them with their
/// cost, the hover of a `SKILL.md` says how the session lists it, the hover of `.mcp.json` each
/// server's status; an unsaved edit of a skill shows in the preview at once.
#[test]
fn skills_and_mcp_servers_in_the_preview_and_hovers() {
    let ws = project();
    let skill = ws.write(
        ".claude/skills/deploy/SKILL.md",
        "---\ndescription: Deploy the app\n---\nRun !`make deploy`\n",
    );
    let mcp = ws.write(
        ".mcp.json",
        r#"{"mcpServers": {"demo": {"command": "/nonexistent/bin/mcp-server"}}}"#,
    );
    let mut s = ws.spawn(&bin());
    s.initialize(&ws.root, json!(null));
    ready(&mut s);
    let p = s.preview(None);
    assert_eq!(
        p["skills"]["listing"],
        "The following skills are available for use with the Skill tool:\n\n- deploy: Deploy the app"
    );
    assert_eq!(p["skills"]["skills"][0]["shell"], json!(["make deploy"]));
    // A folder nobody was asked to trust: nothing of its .mcp.json starts before the answer.
    assert_eq!(p["mcp"]["servers"][0]["status"], "waiting for trust");
    assert_eq!(p["trust"]["state"], "neverAsked");
    assert!(p["totals"]["skills"].as_u64().unwrap() > 0);
    let dynamic = block(&p, "systemDynamic").unwrap();
    assert!(
        dynamic.contains("\n\n- deploy: Deploy the app\n\nToday's date is "),
        "{dynamic}"
    );

    s.open(
        &skill,
        "---\ndescription: Deploy the app\n---\nRun !`make deploy`\n",
    );
    let md = hover_md(&mut s, &skill, 1, 3);
    assert!(
        md.starts_with("**Skill `deploy`** (project): listed in full"),
        "{md}"
    );
    assert!(md.contains("- deploy: Deploy the app"), "{md}");
    assert!(
        md.contains("Runs shell commands when invoked (never to preview): `make deploy`"),
        "{md}"
    );
    // An unsaved edit shows at once.
    s.change(
        &skill,
        2,
        json!([{"text": "---\ndescription: Ship it\n---\nbody\n"}]),
    );
    let p = s.preview(None);
    assert!(
        p["skills"]["listing"]
            .as_str()
            .unwrap()
            .ends_with("- deploy: Ship it"),
        "{}",
        p["skills"]
    );

    s.open(&mcp, &std::fs::read_to_string(&mcp).unwrap());
    let md = hover_md(&mut s, &mcp, 0, 2);
    assert!(
        md.contains("| demo | waiting for trust | unknown | — | — |"),
        "{md}"
    );
    s.shutdown();
}
