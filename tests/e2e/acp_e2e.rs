//! `claude-context acp` over stdio, as raw JSON lines (what no SDK sends): malformed and
//! out-of-order messages get JSON-RPC errors and the agent keeps serving (the LSP storm test's
//! counterpart); a Claude Code session loads and continues in a new session of ours; a session
//! open in one agent cannot be loaded by another. The SDK clients' suites are `tests/acp/`.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Reply, Turn};
use harness::Workspace;
use harness::acp::KEY;
use serde_json::{Value, json};

/// The agent in `ws`'s project, over raw lines.
fn agent(ws: &Workspace, api: &FakeAnthropic) -> harness::acp::Agent {
    harness::acp::Agent::start(&bin(), ws, &api.base_url(), &[])
}

fn world() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n\nProject rules: be exact.\n");
    ws
}

#[test]
fn malformed_and_out_of_order_messages_get_errors_and_the_agent_keeps_serving() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let mut a = agent(&ws, &api);
    let cwd = ws.root.to_string_lossy().to_string();

    // Before initialize: refused, nothing started.
    let (code, msg) = a.error(1, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(code, -32600, "{msg}");
    assert!(msg.contains("initialize"), "{msg}");

    // Lines that are not messages: answered with id null.
    for (line, code) in [
        ("{not json", -32700),
        ("true", -32600),
        ("[]", -32600),
        (
            r#"[{"jsonrpc":"2.0","id":9,"method":"initialize"}]"#,
            -32600,
        ),
        (
            r#"{"jsonrpc":"1.0","id":"x","method":"initialize"}"#,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#, -32600),
    ] {
        a.raw(line);
        let e = a.wait(line, |v| {
            v.get("error").is_some() && v.get("method").is_none()
        });
        assert_eq!(e["error"]["code"], code, "{line}: {e}");
    }
    // initialize with bad params, then a good one.
    let (code, _) = a.error(2, "initialize", json!({"protocolVersion": "one"}));
    assert_eq!(code, -32602);
    let init = a.call(
        3,
        "initialize",
        json!({"protocolVersion": 7, "clientCapabilities": {}}),
    );
    assert_eq!(init["protocolVersion"], 1, "the version the agent speaks");

    // Requests that do not fit.
    assert_eq!(a.error(4, "session/fly", json!({})).0, -32601);
    // Modes are sessions' (docs/acp.md): an unknown session is a bad parameter; no config
    // options.
    let set_mode = json!({"sessionId": "s", "modeId": "plan"});
    assert_eq!(a.error(40, "session/set_mode", set_mode).0, -32602);
    let option = json!({"sessionId": "s", "configId": "x", "value": "y"});
    // No session "s": invalid params (the output style is the one config option).
    assert_eq!(a.error(41, "session/set_config_option", option).0, -32602);
    assert_eq!(
        a.error(
            5,
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []})
        )
        .0,
        -32602
    );
    assert_eq!(a.error(6, "session/new", json!({"cwd": 3})).0, -32602);
    let (code, msg) = a.error(
        7,
        "session/prompt",
        json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(code, -32002, "{msg}");
    let (code, _) = a.error(
        8,
        "session/load",
        json!({"sessionId": "0b9d1f3e-0000-0000-0000-000000000000", "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(code, -32002);
    // An answer to a request nobody made, a notification nobody knows, a cancel of nothing.
    a.raw(r#"{"jsonrpc":"2.0","id":"cc-999","result":{}}"#);
    a.raw(r#"{"jsonrpc":"2.0","method":"x/unknown","params":{}}"#);
    a.raw(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}"#);

    // A storm: 10,000 lines of junk, each answered once, and the agent still serves.
    let junk = [
        "{",
        "null",
        "42",
        r#"{"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
    ];
    let started = Instant::now();
    for i in 0..10_000 {
        a.raw(junk[i % junk.len()]);
    }
    let mut errors = 0;
    while errors < 10_000 {
        a.wait("a storm answer", |v| {
            v.get("error").is_some() && v["id"].is_null()
        });
        errors += 1;
    }
    let storm = started.elapsed();
    eprintln!("storm: 10,000 junk lines answered in {storm:?}");
    assert!(storm < Duration::from_secs(30), "{storm:?} for the storm");

    // A real session after all that, and a prompt while its turn runs.
    api.push(
        Reply::from(Turn::new().text("slow answer, in pieces").piece(2))
            .pace(Duration::from_millis(100)),
    );
    let s = a.call(10, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let sent = Instant::now();
    a.send(
        11,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    a.updates_until(&sid, |u| u["sessionUpdate"] == "agent_message_chunk");
    eprintln!(
        "first agent_message_chunk {:?} after session/prompt (the fake paces pieces 100 ms apart)",
        sent.elapsed()
    );
    let (code, msg) = a.error(
        12,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}),
    );
    assert_eq!(code, -32600, "{msg}");
    assert!(msg.contains("a turn is running"), "{msg}");
    let (code, msg) = a.error(
        13,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
    );
    assert_eq!(code, -32602, "{msg}");
    assert_eq!(a.answer(11)["result"]["stopReason"], "end_turn");
    assert_eq!(
        api.requests().len(),
        1,
        "only the real prompt reached the model"
    );
    assert_eq!(a.close(), Some(0));
}

/// Permission modes as ACP session modes: `session/new` lists them, `session/set_mode` switches
/// (a `current_mode_update` follows), and plan mode then refuses an Edit with the reference's
/// text and puts its reminder in the environment section.
#[test]
fn session_set_mode_switches_the_permission_mode() {
    let ws = world();
    let readme = ws.write("README.md", "# Shop\n");
    let api = FakeAnthropic::spawn();
    api.push(Turn::new().tool_use(
        "toolu_0",
        "Edit",
        json!({"file_path": readme, "old_string": "# Shop", "new_string": "# Shop!"}),
    ));
    api.push(Turn::new().text("Here is the plan."));
    let mut a = agent(&ws, &api);
    a.initialize();
    let s = a.call(1, "session/new", json!({"cwd": ws.root, "mcpServers": []}));
    assert_eq!(s["modes"]["currentModeId"], "default", "{s}");
    let ids: Vec<&str> = s["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    for m in ["default", "acceptEdits", "plan", "dontAsk"] {
        assert!(ids.contains(&m), "{ids:?}");
    }
    // Root without IS_SANDBOX=1 (as the tests run): no bypass, as the reference refuses it.
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let (code, _) = a.error(
        2,
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "fly"}),
    );
    assert_eq!(code, -32602);
    let r = a.call(
        3,
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "plan"}),
    );
    assert_eq!(r, json!({}));
    let u = a.updates_until(&sid, |u| u["sessionUpdate"] == "current_mode_update");
    assert_eq!(u.last().unwrap()["currentModeId"], "plan");
    a.send(
        4,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "plan the change"}]}),
    );
    assert_eq!(a.answer(4)["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# Shop\n");
    let requests = api.requests();
    let system = requests[0].json()["system"].to_string();
    assert!(
        system.contains("Plan mode is active. The user indicated"),
        "{system}"
    );
    let last = requests[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last.to_string().contains(&format!(
            "Cannot write to {} while in plan mode.",
            readme.display()
        )),
        "{last}"
    );
    assert_eq!(a.close(), Some(0));
}

#[test]
fn a_claude_code_session_loads_and_continues_in_a_new_session_of_ours() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let slug: String = ws
        .root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = ws.home.join(".claude/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "0b9d1f3e-1111-2222-3333-444455556666";
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        json!({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
               "version": "2.1.12", "timestamp": "2025-07-01T12:00:00.000Z", "cwd": ws.root,
               "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let raw = format!(
        "{}\n{}\n",
        line("u1", None, "user", "Their question"),
        line("a1", Some("u1"), "assistant", "Their answer")
    );
    let theirs = dir.join(format!("{sid}.jsonl"));
    std::fs::write(&theirs, &raw).unwrap();

    let mut a = agent(&ws, &api);
    a.initialize();
    let cwd = ws.root.to_string_lossy().to_string();
    a.send(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    let loaded = a.answer(1);
    let ours = loaded["result"]["_meta"]["claudeContext"]["continuedIn"]
        .as_str()
        .unwrap_or_else(|| panic!("{loaded}"))
        .to_string();
    assert_ne!(ours, sid);
    // The replay came before the answer: it is in what was read meanwhile.
    let replay: Vec<Value> = a
        .seen
        .iter()
        .filter(|v| v["method"] == "session/update" && v["params"]["sessionId"] == sid)
        .map(|v| v["params"]["update"].clone())
        .collect();
    assert_eq!(replay[0]["sessionUpdate"], "user_message_chunk");
    assert_eq!(replay[0]["content"]["text"], "Their question");
    assert_eq!(replay[1]["sessionUpdate"], "agent_message_chunk");
    assert_eq!(replay[1]["content"]["text"], "Their answer");

    api.push(Turn::new().text("Ours."));
    let r = a.call(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Mine"}]}),
    );
    assert_eq!(r["stopReason"], "end_turn");
    let body = api.requests()[0].json();
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3, "their two messages, then mine");
    assert_eq!(
        m[0]["content"].as_array().unwrap().last().unwrap()["text"],
        "Their question"
    );
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        raw,
        "never written"
    );
    let state = ws.dir.path().join("state");
    let written: Vec<PathBuf> = walk(&state)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy() == format!("{ours}.jsonl"))
        })
        .collect();
    assert_eq!(written.len(), 1, "our transcript of the continuation");

    // session/list: the continuation (just written) first, then theirs, titled by its first prompt.
    let list = a.call(3, "session/list", json!({"cwd": cwd}));
    let sessions = list["sessions"].as_array().unwrap();
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ours.as_str(), sid], "{list}");
    assert_eq!(sessions[1]["title"], "Their question", "{list}");
    assert_eq!(sessions[1]["cwd"], cwd.as_str(), "{list}");
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_session_open_in_one_agent_cannot_be_loaded_by_another() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let cwd = ws.root.to_string_lossy().to_string();
    let mut first = agent(&ws, &api);
    first.initialize();
    let sid = first.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    api.push(Turn::new().text("Hi."));
    first.call(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}),
    );
    let mut second = agent(&ws, &api);
    second.initialize();
    let (code, msg) = second.error(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(code, -32603, "{msg}");
    assert!(msg.contains("open"), "says where it is open: {msg}");
    assert_eq!(first.close(), Some(0));
    // Once the first agent is gone, the second loads it.
    second.call(
        2,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
}

/// Issue 25, item 3 over ACP: the model prints the key (split across deltas, and reversed) and
/// passes it to a command; no `session/update` and no `session/request_permission` carries it.
#[test]
fn the_key_is_in_no_update_and_no_permission_request() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let reversed: String = KEY.chars().rev().collect();
    api.push(
        Turn::new()
            .text(&format!("The key: {KEY}!"))
            .piece(4)
            .tool_use(
                "toolu_0",
                "Bash",
                json!({"command": format!("echo {KEY} > /dev/null")}),
            ),
    );
    api.push(Turn::new().text(&format!("Reversed: {reversed}.")).piece(3));
    let mut a = agent(&ws, &api);
    a.initialize();
    let cwd = ws.root.to_string_lossy().to_string();
    let sid = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = a.call_allowing(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "show me"}]}),
    );
    assert_eq!(seen.last().unwrap()["result"]["stopReason"], "end_turn");
    let asked: Vec<&Value> = seen
        .iter()
        .filter(|v| v["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{seen:#?}");
    let text: String = seen
        .iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|v| {
            v["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    assert!(text.contains("The key: [redacted]!"), "{text}");
    assert!(text.contains("Reversed: [redacted]."), "{text}");
    for v in &seen {
        let line = v.to_string();
        assert!(!line.contains(KEY), "the key reached the client: {line}");
        assert!(
            !line.contains(&reversed),
            "the key reached the client: {line}"
        );
    }
}

/// Issue 25, item 4: an ACP client reads and writes the files it is asked for by path, as
/// editors do, following links. Another process swaps a folder of the workspace for a link to
/// one outside, over and over, while the model reads and writes a file in it: the client must
/// never be the way a file outside is read or written (today: 3 of 1,400 reads, and two
/// overwrites).
#[test]
fn files_the_client_reads_and_writes_never_resolve_outside_through_a_swapped_link() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let ws = world();
    ws.write("notes/todo.txt", "inside text\n");
    let outside = ws.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("todo.txt"), "OUTSIDE-SECRET-0451\n").unwrap();
    let file = ws.root.join("notes/todo.txt");
    let api = FakeAnthropic::spawn();
    const READS: usize = 400;
    const WRITES: usize = 100;
    let mut reads = Turn::new();
    for i in 0..READS {
        reads = reads.tool_use(&format!("toolu_r{i}"), "Read", json!({"file_path": file}));
    }
    api.push(reads);
    let mut writes = Turn::new();
    for i in 0..WRITES {
        writes = writes.tool_use(
            &format!("toolu_w{i}"),
            "Write",
            json!({"file_path": file, "content": format!("written by the model {i}\n")}),
        );
    }
    api.push(writes);
    api.push(Turn::new().text("Done."));

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, notes, real, outside) = (
            stop.clone(),
            ws.root.join("notes"),
            ws.root.join("notes.real"),
            outside.clone(),
        );
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(&notes, &real).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, &notes);
                    std::thread::sleep(Duration::from_micros(300));
                    let _ = std::fs::remove_file(&notes);
                    let _ = std::fs::rename(&real, &notes);
                    swaps += 1;
                }
                std::thread::sleep(Duration::from_micros(300));
            }
            swaps
        })
    };

    let mut a = agent(&ws, &api);
    a.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
    );
    let cwd = ws.root.to_string_lossy().to_string();
    let sid = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    a.send(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "read and write it"}]}),
    );
    let (mut client_reads, mut client_writes, mut outside_asked) = (0, 0, 0);
    let end = Instant::now() + Duration::from_secs(240);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let v = a.recv(left).expect("the turn ended");
        let reply = |a: &mut harness::acp::Agent, result: Value| {
            a.raw(&json!({"jsonrpc": "2.0", "id": v["id"], "result": result}).to_string());
        };
        match v["method"].as_str() {
            // The client as an editor: it reads and writes by path, a moment later.
            Some("fs/read_text_file") => {
                client_reads += 1;
                std::thread::sleep(Duration::from_millis(1));
                let path = v["params"]["path"].as_str().unwrap();
                match std::fs::read_to_string(path) {
                    Ok(content) => reply(&mut a, json!({"content": content})),
                    Err(e) => a.raw(
                        &json!({"jsonrpc": "2.0", "id": v["id"], "error": {"code": -32603, "message": e.to_string()}})
                            .to_string(),
                    ),
                }
            }
            Some("fs/write_text_file") => {
                client_writes += 1;
                std::thread::sleep(Duration::from_millis(1));
                let _ = std::fs::write(
                    v["params"]["path"].as_str().unwrap(),
                    v["params"]["content"].as_str().unwrap(),
                );
                reply(&mut a, json!({}));
            }
            // The user allows the model's work in the workspace; a question about a file
            // outside it (the tool met the link the swapper had just put there) is left
            // unanswered, as a user would not allow it: `cancelled` refuses that call and the
            // turn goes on, so every later call still meets the swapper (a rejection would end
            // the turn).
            Some("session/request_permission") => {
                let title = v["params"]["toolCall"]["title"]
                    .as_str()
                    .unwrap_or_default();
                if title.contains("outside the workspace") {
                    outside_asked += 1;
                    reply(&mut a, json!({"outcome": {"outcome": "cancelled"}}));
                } else {
                    reply(
                        &mut a,
                        json!({"outcome": {"outcome": "selected", "optionId": "allowSession"}}),
                    );
                }
            }
            Some(_) => {}
            None if v["id"] == json!(2) => {
                assert!(v.get("error").is_none(), "{v}");
                break;
            }
            None => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!(
        "{swaps} swaps; the client was asked {client_reads} reads and {client_writes} writes; \
         {outside_asked} questions about the file outside"
    );
    assert!(swaps > 100, "the swapper barely ran: {swaps}");
    assert_eq!(
        std::fs::read_to_string(outside.join("todo.txt")).unwrap(),
        "OUTSIDE-SECRET-0451\n",
        "the client overwrote the file outside"
    );
    let leaked = api
        .requests()
        .iter()
        .filter(|r| r.raw_text().contains("OUTSIDE-SECRET-0451"))
        .count();
    assert_eq!(leaked, 0, "a request carried the file outside");
}

/// Issue 25, item 5: a prompt too large for any request (4.3 MB against the default model's
/// 1,000,000-token window)
/// was written to the transcript and sent to compaction, which could not shorten it: that
/// prompt and every later one failed, after `session/load` too. It is now refused before it is
/// written, and the session goes on.
#[test]
fn a_prompt_too_large_to_send_is_refused_before_it_is_written() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let cwd = ws.root.to_string_lossy().to_string();
    let mut a = agent(&ws, &api);
    a.initialize();
    let sid = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let huge = format!("HUGE-PROMPT-MARKER {}", "lorem ipsum ".repeat(360_000));
    let (code, msg) = a.error(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": huge}]}),
    );
    assert_eq!(code, -32602, "{msg}");
    assert!(msg.contains("Shorten it"), "{msg}");
    assert!(api.requests().is_empty(), "nothing was sent");
    api.push(Turn::new().text("Fine."));
    let r = a.call(
        3,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "a normal question"}]}),
    );
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(a.close(), Some(0));
    let state = ws.dir.path().join("state");
    for p in walk(&state) {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(
            !text.contains("HUGE-PROMPT-MARKER"),
            "{} kept it",
            p.display()
        );
    }
    // Loaded again, the session answers.
    let mut b = agent(&ws, &api);
    b.initialize();
    b.call(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    api.push(Turn::new().text("Still fine."));
    let r = b.call(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "and another"}]}),
    );
    assert_eq!(r["stopReason"], "end_turn");
}

/// A 1×1 PNG, whole (signature, header, data, end), base64.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Issue 29, item 4: an image in a prompt reaches the model as the API's image block, before
/// the text, and again after `session/load`; a bad one refuses the prompt with its reason,
/// writes and sends nothing, and the session goes on.
#[test]
fn images_in_a_prompt_reach_the_model_and_a_bad_one_refuses_the_prompt() {
    let ws = world();
    let api = FakeAnthropic::spawn();
    let cwd = ws.root.to_string_lossy().to_string();
    let mut a = agent(&ws, &api);
    let init = a.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    let sid = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // A JPEG's bytes declared as PNG: refused, nothing sent or written.
    let jpeg = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQ==";
    let (code, msg) = a.error(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [
            {"type": "text", "text": "BAD-IMAGE-MARKER look"},
            {"type": "image", "mimeType": "image/png", "data": jpeg}
        ]}),
    );
    assert_eq!(code, -32602, "{msg}");
    assert!(
        msg.contains("prompt[1]: the image is declared image/png but its bytes are image/jpeg"),
        "{msg}"
    );
    assert!(api.requests().is_empty(), "nothing was sent");

    api.push(Turn::new().text("A single pixel."));
    let r = a.call(
        3,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": PNG_1X1}
        ]}),
    );
    assert_eq!(r["stopReason"], "end_turn");
    let body = api.requests()[0].json();
    let content = body["messages"][0]["content"].as_array().unwrap();
    let n = content.len();
    assert_eq!(
        content[n - 2],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}),
        "the image, whole, right before the text: {body}"
    );
    assert_eq!(content[n - 1]["text"], "what is this?");
    assert_eq!(a.close(), Some(0));
    let state = ws.dir.path().join("state");
    for p in walk(&state) {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(
            !text.contains("BAD-IMAGE-MARKER"),
            "{} kept the refused prompt",
            p.display()
        );
    }

    // Loaded in a new agent: the image is replayed, and the next request sends it again.
    let mut b = agent(&ws, &api);
    b.initialize();
    b.call(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    let replayed = b.seen.iter().any(|v| {
        v["method"] == "session/update"
            && v["params"]["update"]["sessionUpdate"] == "user_message_chunk"
            && v["params"]["update"]["content"]
                == json!({"type": "image", "mimeType": "image/png", "data": PNG_1X1})
    });
    assert!(replayed, "the image is replayed: {:?}", b.seen);
    api.push(Turn::new().text("Still a pixel."));
    b.call(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "and now?"}]}),
    );
    let body = api.requests()[1].json();
    let first = body["messages"][0]["content"].as_array().unwrap();
    assert!(
        first
            .iter()
            .any(|b| b["type"] == "image" && b["source"]["data"] == PNG_1X1),
        "the resumed session sends the image again: {body}"
    );
    assert_eq!(b.close(), Some(0));
}
