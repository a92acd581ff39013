//! Auto-memory extraction end to end: the real `claude-context lsp` binary over stdio, a real
//! git project in a temp dir, the fake Anthropic API on 127.0.0.1. A completed turn is followed
//! by a background extraction request that shares the session's prefix; its scripted answer
//! becomes a topic file and one MEMORY.md index line; a second answer of the same name updates
//! both; a stalled extraction never delays the next turn; the key reaches no memory file.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Reply, Turn};
use harness::{Server, Workspace};
use serde_json::{Value, json};

/// The language server with auto-memory on, initialised on the project.
fn server(chat: &Chat) -> Server {
    let mut s = chat.spawn(&[], &[("CLAUDE_CONTEXT_AUTO_MEMORY", "1")]);
    s.initialize(&chat.ws.root, json!({}));
    s
}

fn memory_dir(ws: &Workspace) -> PathBuf {
    let slug: String = ws
        .root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    ws.home.join(".claude/projects").join(slug).join("memory")
}

fn send(s: &mut Server, id: &str, text: &str) -> Vec<Value> {
    s.chat_send(id, text)
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn extraction(name: &str, kind: &str, description: &str, content: &str) -> Turn {
    let list =
        json!([{"type": kind, "name": name, "description": description, "content": content}]);
    Turn::new().text(&format!("```json\n{list}\n```"))
}

#[test]
fn a_stated_preference_is_saved_updated_in_place_and_never_delays_the_next_turn() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n\nBe exact.\n");
    ws.git_init();
    let chat = Chat::on(ws);
    let (ws, api) = (&chat.ws, &chat.api);
    let mut s = server(&chat);
    let dir = memory_dir(ws);
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // Turn 1: the user states a preference; the extraction answer (which echoes the key, as a
    // confused model might) names a feedback memory.
    api.push(Turn::new().text("Understood: tabs."));
    api.push(extraction(
        "indent_style",
        "feedback",
        "Indent with tabs, never spaces",
        &format!("The user wants tabs for indentation. Their key is {KEY}."),
    ));
    let events = send(&mut s, &id, "Please always indent with tabs, never spaces.");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    wait_for("the extraction request", || api.requests().len() == 2);
    let topic = dir.join("indent_style.md");
    wait_for("the topic file", || {
        read(&dir.join("MEMORY.md")).contains("indent_style")
    });

    // The extraction request starts with the turn's own prefix: same system blocks (and
    // breakpoints), same tools, the same messages plus the answer, then one instruction.
    let reqs = api.requests();
    let (turn, extract) = (reqs[0].json(), reqs[1].json());
    assert_eq!(extract["system"], turn["system"]);
    assert_eq!(extract["tools"], turn["tools"]);
    assert_eq!(extract["model"], turn["model"]);
    let tm = turn["messages"].as_array().unwrap();
    let em = extract["messages"].as_array().unwrap();
    assert_eq!(em.len(), tm.len() + 2, "{extract}");
    assert_eq!(
        harness::without_cache(&em[0]),
        harness::without_cache(&tm[0])
    );
    assert_eq!(em[1]["role"], "assistant");
    assert_eq!(em[1]["content"][0]["text"], "Understood: tabs.");
    let ask = em[2]["content"].as_array().unwrap().last().unwrap();
    assert!(
        ask["text"].as_str().unwrap().contains("memory keeper"),
        "{ask}"
    );
    assert_eq!(ask["cache_control"]["type"], "ephemeral");

    let text = read(&topic);
    assert!(
        text.starts_with(
            "---\nname: indent_style\ndescription: \"Indent with tabs, never spaces\"\ntype: feedback\n---\n\nThe user wants tabs"
        ),
        "{text}"
    );
    assert_eq!(
        read(&dir.join("MEMORY.md")),
        "- [indent_style](indent_style.md) — Indent with tabs, never spaces\n"
    );

    // The running session's preview shows the change at once, as pending.
    wait_for("MEMORY.md pending in the session's preview", || {
        let p = s.call("context/preview", json!({"sessionId": id}));
        p["pending"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"].as_str().unwrap().ends_with("memory/MEMORY.md"))
    });

    // Turn 2: the same name again updates the file and its line, nothing is duplicated.
    api.push(Turn::new().text("Width 4, noted."));
    api.push(extraction(
        "indent_style",
        "feedback",
        "Tabs, shown 4 wide",
        "Tabs for indentation, displayed 4 columns wide.",
    ));
    send(&mut s, &id, "And tabs are 4 columns wide.");
    wait_for("the second extraction", || {
        read(&dir.join("MEMORY.md")).contains("4 wide")
    });
    assert_eq!(
        read(&dir.join("MEMORY.md")),
        "- [indent_style](indent_style.md) — Tabs, shown 4 wide\n"
    );
    assert!(read(&topic).ends_with("\n\nTabs for indentation, displayed 4 columns wide.\n"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // (`.MEMORY.md.lock`: the lock the project's sessions take to rewrite the index.)
    assert_eq!(names, [".MEMORY.md.lock", "MEMORY.md", "indent_style.md"]);
    // The second review covered only what came after the first (two new messages).
    let ask = api.requests()[3].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("the last 2 messages"), "{ask}");
    assert!(
        ask.contains("indent_style.md"),
        "shows the kept memory: {ask}"
    );

    // Turn 3: its extraction stalls (the API never answers). Turn 4 is not delayed by it.
    api.push(Turn::new().text("Sure."));
    api.push(Reply::Hang);
    send(&mut s, &id, "I am the team's release manager.");
    wait_for("the stalled extraction request", || {
        api.requests().len() == 6
    });
    api.push(Turn::new().text("Still here."));
    let started = Instant::now();
    let events = send(&mut s, &id, "Are you there?");
    let took = started.elapsed();
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    assert!(
        took < Duration::from_secs(5),
        "the next turn waited {took:?} for the stalled extraction"
    );

    // A new session sees the saved memory in its instructions.
    let id2 = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let p = s.call("context/preview", json!({"sessionId": id2}));
    let instructions = p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "instructions")
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        instructions.contains("- [indent_style](indent_style.md) — Tabs, shown 4 wide"),
        "{instructions}"
    );

    // The key reached no memory file (it was scrubbed from the answer that echoed it).
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        assert!(!read(&p).contains(KEY), "{} holds the key", p.display());
    }
    s.shutdown();
}

#[test]
fn a_malformed_answer_writes_nothing_and_the_next_turn_reviews_again() {
    let ws = Workspace::new();
    ws.write("README.md", "A shop.\n");
    ws.git_init();
    let chat = Chat::on(ws);
    let (ws, api) = (&chat.ws, &chat.api);
    let mut s = server(&chat);
    let dir = memory_dir(ws);
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    api.push(Turn::new().text("Hello."));
    api.push(Turn::new().text("I think the user likes short answers."));
    let events = send(&mut s, &id, "Keep answers short, please.");
    assert!(events.iter().all(|e| e["kind"] != "error"), "{events:?}");
    wait_for("the extraction request", || api.requests().len() == 2);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!dir.exists(), "a malformed answer wrote nothing");
    api.push(Turn::new().text("Ok."));
    api.push(extraction(
        "answer_length",
        "user",
        "Prefers short answers",
        "Short answers.",
    ));
    let events = send(&mut s, &id, "Thanks.");
    assert!(events.iter().all(|e| e["kind"] != "error"), "{events:?}");
    wait_for("the retried extraction", || {
        read(&dir.join("MEMORY.md")).contains("answer_length")
    });
    // The retry reviewed the messages of both turns (the failed review did not count).
    let ask = api.requests()[3].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("the last 4 messages"), "{ask}");
    s.shutdown();
}

#[test]
fn a_one_shot_command_line_chat_saves_its_memory_before_it_exits() {
    let ws = Workspace::new();
    ws.write("README.md", "A shop.\n");
    ws.git_init();
    let chat = Chat::on(ws);
    let (ws, api) = (&chat.ws, &chat.api);
    api.push(Turn::new().text("Noted."));
    api.push(extraction(
        "role",
        "user",
        "Release manager of the shop",
        "The user manages releases.",
    ));
    let (code, stdout, stderr) = chat.cli(
        &["I manage the releases here."],
        "",
        &[("CLAUDE_CONTEXT_AUTO_MEMORY", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "Noted.");
    let dir = memory_dir(ws);
    assert_eq!(
        read(&dir.join("MEMORY.md")),
        "- [role](role.md) — Release manager of the shop\n"
    );
    assert!(read(&dir.join("role.md")).contains("type: user\n"));
    assert_eq!(api.requests().len(), 2);
}

/// `claude-context acp` in `ws`'s project, its key and state as the language server's, with
/// auto-memory on: initialized, one session open. Its lines arrive on the receiver.
struct Acp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    rx: std::sync::mpsc::Receiver<Value>,
    session: String,
}

impl Acp {
    fn start(ws: &Workspace, api: &FakeAnthropic) -> Acp {
        use std::io::BufRead;
        let mut child = std::process::Command::new(bin())
            .args(["acp", "--no-git"])
            .current_dir(&ws.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &ws.home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
            .env("GIT_CEILING_DIRECTORIES", ws.dir.path())
            .env("XDG_STATE_HOME", ws.dir.path().join("state"))
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "1")
            .env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", api.base_url())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    break;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut a = Acp {
            stdin: child.stdin.take().unwrap(),
            child,
            rx,
            session: String::new(),
        };
        a.call(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        let cwd = ws.root.to_string_lossy().to_string();
        a.session = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        a
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        use std::io::Write;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let v = self
                .rx
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if v.get("method").is_none() && v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn prompt(&mut self, id: u64, text: &str) {
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": text}]});
        let r = self.call(id, "session/prompt", params);
        assert_eq!(r["stopReason"], "end_turn", "{r}");
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An extraction answer of `n` memories named `<prefix>_<i>`.
fn many(prefix: &str, n: usize) -> Turn {
    let list: Vec<Value> = (0..n)
        .map(|i| {
            json!({"type": "project", "name": format!("{prefix}_{i}"),
                   "description": format!("{prefix} fact {i}"), "content": format!("Fact {i} of {prefix}.")})
        })
        .collect();
    Turn::new().text(&format!("```json\n{}\n```", Value::Array(list)))
}

/// Issue 25, item 5: two sessions of one project, one in the editor (LSP) and one in an ACP
/// client, save memories at the same moment. Both read MEMORY.md, both add their lines, the
/// second rename wins: an index line was lost in 3 of 4 runs. The index is now rewritten under
/// a lock the two processes share.
#[test]
fn two_sessions_saving_memories_at_once_lose_no_index_line() {
    const ROUNDS: usize = 3;
    const EACH: usize = 20;
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    ws.git_init();
    // One fake API per process: each gets its own turn, then its own extraction answer.
    let chat = Chat::on(ws);
    let (ws, api_lsp, api_acp) = (&chat.ws, &chat.api, FakeAnthropic::spawn());
    let mut s = server(&chat);
    let mut a = Acp::start(ws, &api_acp);
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = memory_dir(ws);
    let mut lost = Vec::new();
    for round in 0..ROUNDS {
        api_lsp.push(Turn::new().text("Noted."));
        api_lsp.push(many(&format!("lsp{round}"), EACH));
        api_acp.push(Turn::new().text("Noted."));
        api_acp.push(many(&format!("acp{round}"), EACH));
        let acp = std::thread::spawn(move || {
            a.prompt(10 + round as u64, "Remember these facts.");
            a
        });
        let events = send(&mut s, &id, "Remember these facts.");
        assert_eq!(events.last().unwrap()["outcome"], "completed");
        a = acp.join().unwrap();
        // Both extractions answered and saved: every topic file of the round exists.
        wait_for("both rounds' topic files", || {
            (0..EACH).all(|i| {
                dir.join(format!("lsp{round}_{i}.md")).exists()
                    && dir.join(format!("acp{round}_{i}.md")).exists()
            })
        });
        std::thread::sleep(Duration::from_millis(300));
        let index = read(&dir.join("MEMORY.md"));
        for r in 0..=round {
            for who in ["lsp", "acp"] {
                for i in 0..EACH {
                    let link = format!("]({who}{r}_{i}.md)");
                    if !index.contains(&link) && !lost.contains(&link) {
                        lost.push(link);
                    }
                }
            }
        }
    }
    assert!(
        lost.is_empty(),
        "MEMORY.md lost {} index lines: {lost:?}",
        lost.len()
    );
    let index = read(&dir.join("MEMORY.md"));
    assert_eq!(index.lines().count(), ROUNDS * EACH * 2, "{index}");
}
