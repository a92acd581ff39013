//! `claude-context acp` over stdio, as raw JSON lines (what no SDK sends): malformed and
//! out-of-order messages get JSON-RPC errors and the agent keeps serving (the LSP storm test's
//! counterpart); a Claude Code session loads and continues in a new session of ours; a session
//! open in one agent cannot be loaded by another. The SDK clients' suites are `tests/acp/`.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

mod fake_anthropic;
mod harness;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Reply, Turn};
use harness::Workspace;
use serde_json::{Value, json};

const KEY: &str = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789abcdef";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

/// An agent and its lines.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Messages read but not asked for yet.
    seen: Vec<Value>,
}

impl Agent {
    fn start(ws: &Workspace, api: &FakeAnthropic) -> Agent {
        let state = ws.dir.path().join("state");
        let mut child = Command::new(bin())
            .args(["acp", "--no-git"])
            .current_dir(&ws.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &ws.home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
            .env("XDG_STATE_HOME", state)
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
            .env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", api.base_url())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn claude-context acp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the agent wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            rx,
            seen: Vec::new(),
        }
    }

    fn raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, id: u64, method: &str, params: Value) {
        self.raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
    }

    /// The next message matching `pred` (others are kept for later).
    fn wait(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.seen.push(v),
                Err(_) => panic!("no {what}; seen: {:#?}", self.seen),
            }
        }
    }

    fn answer(&mut self, id: u64) -> Value {
        let want = json!(id);
        self.wait(&format!("answer {id}"), |v| {
            v.get("id") == Some(&want) && v.get("method").is_none()
        })
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(id, method, params);
        let a = self.answer(id);
        assert!(a.get("error").is_none(), "{method}: {a}");
        a["result"].clone()
    }

    fn error(&mut self, id: u64, method: &str, params: Value) -> (i64, String) {
        self.send(id, method, params);
        let a = self.answer(id);
        (
            a["error"]["code"]
                .as_i64()
                .unwrap_or_else(|| panic!("{method}: {a}")),
            a["error"]["message"].as_str().unwrap().to_string(),
        )
    }

    fn initialize(&mut self) {
        self.call(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
    }

    /// Every `session/update` of `session` read so far, and until `until` holds for one.
    fn updates_until(&mut self, session: &str, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let u = self.wait("a session/update", |v| {
                v["method"] == "session/update" && v["params"]["sessionId"] == session
            });
            let done = until(&u["params"]["update"]);
            out.push(u["params"]["update"].clone());
            if done {
                return out;
            }
        }
    }

    /// Ends the input; the exit status.
    fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let mut a = Agent::start(&ws, &api);
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
    assert_eq!(a.error(41, "session/set_config_option", option).0, -32601);
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
    let mut a = Agent::start(&ws, &api);
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

    let mut a = Agent::start(&ws, &api);
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
    let mut first = Agent::start(&ws, &api);
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
    let mut second = Agent::start(&ws, &api);
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
