//! The chat end to end: the real `claude-context lsp` binary over stdio, a real project (files
//! and a git repository in a temp dir), and the fake Anthropic API on 127.0.0.1
//! (`ANTHROPIC_BASE_URL`, a known fake key). Assertions are on what the editor receives and on
//! the requests the fake API recorded.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary and git, with their own environment.

use crate::support::chat::{Chat, KEY, new_session};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_anthropic::{Reply, Turn};
use harness::{Server, Workspace};
use serde_json::{Value, json};

/// A project with instructions, a conditional TypeScript rule and a source file, committed.
fn project() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n\nProject rules: be exact.\n");
    ws.write(
        ".claude/rules/typescript.md",
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode.\n",
    );
    ws.write("src/cart.ts", "export const cart = 1;\n");
    ws.git_init();
    ws
}

/// The events of one turn, up to and including its `done`.
fn turn_events(s: &mut Server, turn: &str) -> Vec<Value> {
    s.turn_events(turn)
}

fn streamed(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["kind"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

fn texts(content: &Value) -> Vec<String> {
    content
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Every file under `dir`, read as text (lossy).
fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&b).into_owned()));
            }
        }
    }
    out
}

#[test]
fn a_turn_streams_and_its_first_request_has_the_specified_shape() {
    let chat = Chat::on(project());
    // Paced, as the API streams: each piece goes out as its own event.
    chat.api.push(
        Reply::from(
            Turn::new()
                .text("Hello from the fake model.")
                .piece(4)
                .usage(12, 7, 1500, 0),
        )
        .pace(std::time::Duration::from_millis(20)),
    );
    let mut s = chat.server(json!({}));
    // A file open in the editor when sending activates its conditional rule in that request.
    s.open(&chat.ws.path("src/cart.ts"), "export const cart = 1;\n");
    let id = new_session(&mut s);
    let sent = s.request(
        "chat/send",
        json!({"sessionId": id, "text": "What is cart?"}),
    );
    let turn = sent["result"]["turnId"].as_str().unwrap().to_string();
    let events = turn_events(&mut s, &turn);
    // The answer reached the editor before any event it caused.
    let pos = |pred: &dyn Fn(&Value) -> bool| s.received.iter().position(pred).unwrap();
    let answer_at = pos(&|m| m["result"]["turnId"] == turn.as_str());
    let first_event =
        pos(&|m| m["method"] == "chat/event" && m["params"]["turnId"] == turn.as_str());
    assert!(answer_at < first_event, "{answer_at} < {first_event}");
    assert_eq!(streamed(&events), "Hello from the fake model.");
    assert!(
        events.iter().filter(|e| e["kind"] == "text").count() > 3,
        "streamed in pieces"
    );
    let attachment = events.iter().find(|e| e["kind"] == "attachment").unwrap();
    assert!(
        attachment["path"]
            .as_str()
            .unwrap()
            .ends_with("typescript.md")
    );
    assert!(attachment["trigger"].as_str().unwrap().ends_with("cart.ts"));
    let usage = events.iter().find(|e| e["kind"] == "usage").unwrap();
    assert_eq!(usage["contextTokens"], 12 + 1500 + 7);
    let done = events.last().unwrap();
    assert_eq!(
        (done["outcome"].as_str(), done["stopReason"].as_str()),
        (Some("completed"), Some("end_turn"))
    );

    // The request as the API received it.
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    let body = r.json();
    assert_eq!(body["stream"], true);
    // The agent's tools are offered (tests/e2e/chat_tools.rs drives them), and `Agent` (every
    // session lists the built-in agent types; tests/e2e/chat_agents.rs drives it).
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(8));
    let system = body["system"].as_array().unwrap();
    assert_eq!(system.len(), 2, "static and dynamic system blocks");
    for b in system {
        assert_eq!(b["cache_control"]["type"], "ephemeral");
    }
    assert!(
        system[1]["text"]
            .as_str()
            .unwrap()
            .contains("Is a git repository: true")
    );
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1);
    let content = &msgs[0]["content"];
    let t = texts(content);
    // The rule the open file activated, then instructions, git, the user's text.
    assert_eq!(t.len(), 4, "{t:#?}");
    assert!(
        t[0].starts_with("<system-reminder>\nContents of "),
        "{}",
        t[0]
    );
    assert!(t[0].contains("TypeScript: strict mode."));
    assert!(t[1].contains("Project rules: be exact."));
    assert!(
        t[2].contains("# gitStatus") || t[2].contains("gitStatus"),
        "{}",
        t[2]
    );
    assert!(t[2].contains("Current branch:"));
    assert_eq!(t[3], "What is cart?");
    let blocks = content.as_array().unwrap();
    for b in &blocks[..3] {
        assert!(b.get("cache_control").is_none());
    }
    assert_eq!(blocks[3]["cache_control"]["type"], "ephemeral");

    // The preview of the session: the real figures once known.
    let p = s.call("context/preview", json!({"sessionId": id}));
    assert_eq!(p["session"]["messages"], 2);
    assert_eq!(p["session"]["estimated"], false);
    assert_eq!(p["session"]["lastUsage"]["cacheCreationInputTokens"], 1500);
    assert!(p["totals"]["tokens"].as_u64().unwrap() >= 1519);

    // A second turn: the breakpoint moved to the newest message; the first message's blocks
    // are unchanged (the cache prefix holds).
    chat.api
        .push(Turn::new().text("Again.").usage(20, 3, 0, 1500));
    let turn2 = s.call("chat/send", json!({"sessionId": id, "text": "More?"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn2);
    let body2 = chat.api.requests()[1].json();
    let msgs2 = body2["messages"].as_array().unwrap();
    assert_eq!(msgs2.len(), 3);
    assert_eq!(
        texts(&msgs2[0]["content"]),
        t,
        "the first message is sent again as is"
    );
    assert!(msgs2[0]["content"][3].get("cache_control").is_none());
    assert_eq!(msgs2[2]["content"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        msgs2[2]["content"].as_array().unwrap().len(),
        1,
        "the rule is attached once"
    );
    assert!(s.junk.lock().unwrap().is_empty());
    let seen: String = s_messages_text(&s);
    s.shutdown();

    // R6: the key is nowhere on disk (transcripts, state, home, project) nor in what the
    // editor received.
    for (path, text) in all_files(chat.ws.dir.path()) {
        assert!(!text.contains(KEY), "the key is in {}", path.display());
    }
    assert!(!seen.contains(KEY));
}

fn s_messages_text(s: &Server) -> String {
    s.received
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn cancel_stops_the_stream_at_once_and_keeps_the_partial_answer() {
    let chat = Chat::on(project());
    let long = "word ".repeat(400);
    chat.api
        .push(Reply::from(Turn::new().text(&long).piece(5)).pace(Duration::from_millis(20)));
    let mut s = chat.server(json!({}));
    let id = new_session(&mut s);
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "Talk"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    // Wait for a few deltas, then cancel.
    let mut got = 0;
    while got < 3 {
        let e = s
            .notification("chat/event", |p| p["turnId"] == turn)
            .unwrap();
        if e["kind"] == "text" {
            got += 1;
        }
    }
    let asked = Instant::now();
    let c = s.call("chat/cancel", json!({"sessionId": id}));
    assert_eq!(c["cancelled"], true);
    let rest = turn_events(&mut s, &turn);
    let took = asked.elapsed();
    let done = rest.last().unwrap();
    assert_eq!(done["outcome"], "cancelled");
    assert!(took < Duration::from_secs(2), "cancel took {took:?}");

    // The partial answer is kept, marked, and the model is told of the interruption.
    let r = s.call("chat/resume", json!({"sessionId": id}));
    let msgs = r["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["text"], "Talk");
    assert_eq!(msgs[1]["role"], "assistant");
    let partial = msgs[1]["text"].as_str().unwrap();
    assert!(partial.starts_with("word word"), "{partial}");
    assert!(partial.len() < long.len());
    assert_eq!(msgs[2]["interruption"], true);
    let transcript = s.call("context/preview", json!({"sessionId": id}))["session"]["transcript"]
        .as_str()
        .unwrap()
        .to_string();
    let raw = std::fs::read_to_string(&transcript).unwrap();
    assert!(raw.contains("\"reason\":\"cancelled\""), "{raw}");

    // The session goes on: the next request carries the partial answer and the interruption.
    chat.api.push(Turn::new().text("OK."));
    let turn2 = s.call("chat/send", json!({"sessionId": id, "text": "Go on"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let ev = turn_events(&mut s, &turn2);
    assert_eq!(ev.last().unwrap()["outcome"], "completed");
    let body = chat.api.requests().last().unwrap().json();
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4, "{body}");
    assert!(
        m[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("word")
    );
    s.shutdown();
}

#[test]
fn a_session_resumes_after_the_server_is_killed() {
    let chat = Chat::on(project());
    chat.api.push(Turn::new().text("First answer."));
    let mut s = chat.server(json!({}));
    let id = new_session(&mut s);
    let turn = s.call(
        "chat/send",
        json!({"sessionId": id, "text": "First question"}),
    )["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    // SIGKILL: no shutdown, no flush.
    let pid = s.pid();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let _ = s.wait_exit();

    let mut s = chat.server(json!({}));
    let list = s.call("chat/list", json!({}));
    let entry = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["sessionId"] == id.as_str())
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(entry["source"], "ours");
    assert_eq!(entry["firstPrompt"], "First question");
    let r = s.call("chat/resume", json!({"sessionId": id}));
    assert_eq!(r["sessionId"], id.as_str());
    let msgs = r["messages"].as_array().unwrap();
    assert_eq!(
        msgs.iter()
            .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [("user", "First question"), ("assistant", "First answer.")]
    );
    chat.api.push(Turn::new().text("Second answer."));
    let turn = s.call(
        "chat/send",
        json!({"sessionId": id, "text": "Second question"}),
    )["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    let reqs = chat.api.requests();
    let (first, second) = (reqs[0].json(), reqs[1].json());
    // The exact history the model saw before, then the new message; same system prompt
    // blocks' static part.
    assert_eq!(second["messages"][0], {
        let mut m = first["messages"][0].clone();
        // The breakpoint moved on.
        let last = m["content"].as_array().unwrap().len() - 1;
        m["content"][last]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        m
    });
    assert_eq!(second["messages"][1]["content"][0]["text"], "First answer.");
    assert_eq!(
        second["messages"][2]["content"][0]["text"],
        "Second question"
    );
    assert_eq!(second["system"][0], first["system"][0]);
    s.shutdown();
}

#[test]
fn a_reference_cli_session_is_listed_and_continues_in_a_new_transcript() {
    let chat = Chat::on(project());
    // The reference CLI's project folder for this workspace.
    let slug: String = chat
        .ws
        .root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = chat.ws.home.join(".claude/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "0b9d1f3e-1111-2222-3333-444455556666";
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        json!({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
               "version": "2.1.12", "timestamp": "2025-07-01T12:00:00.000Z", "cwd": chat.ws.root,
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

    let mut s = chat.server(json!({}));
    let list = s.call("chat/list", json!({}));
    let e = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["sessionId"] == sid)
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(
        (e["source"].as_str(), e["readOnly"].as_bool()),
        (Some("reference"), Some(true))
    );
    let r = s.call("chat/resume", json!({"sessionId": sid}));
    let new_id = r["sessionId"].as_str().unwrap().to_string();
    assert_ne!(new_id, sid);
    assert_eq!(r["continues"], sid);
    chat.api.push(Turn::new().text("Ours."));
    let turn = s.call("chat/send", json!({"sessionId": new_id, "text": "Mine"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        raw,
        "never written"
    );
    let body = chat.api.requests()[0].json();
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    // Their first message, with the instructions and git blocks a new session would send first
    // (Claude Code's own --resume sends them again).
    let first = m[0]["content"].as_array().unwrap();
    assert_eq!(first.last().unwrap()["text"], "Their question");
    assert!(
        first[0]["text"].as_str().unwrap().contains("Project rules"),
        "{first:#?}"
    );
    s.shutdown();
}

#[test]
fn bad_chat_requests_get_clear_errors_and_nothing_is_lost() {
    let chat = Chat::on(project());
    let mut s = chat.server(json!({}));
    let e = s.request("chat/send", json!({"sessionId": "nope", "text": "x"}));
    assert_eq!(e["error"]["code"], -32602);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session")
    );
    let e = s.request("chat/send", json!({"text": "x"}));
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sessionId")
    );
    let id = new_session(&mut s);
    let e = s.request("chat/send", json!({"sessionId": id, "text": "  "}));
    assert!(e["error"]["message"].as_str().unwrap().contains("text"));
    let e = s.request("chat/resume", json!({"sessionId": "../../etc/passwd"}));
    assert!(e.get("error").is_some());
    let e = s.request("context/preview", json!({"sessionId": "nope"}));
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session")
    );
    // A busy session refuses a second message, and says which turn runs.
    chat.api.push(
        Reply::from(Turn::new().text(&"x".repeat(200)).piece(1)).pace(Duration::from_millis(10)),
    );
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "one"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let e = s.request("chat/send", json!({"sessionId": id, "text": "two"}));
    assert!(
        e["error"]["message"].as_str().unwrap().contains(&turn),
        "{e}"
    );
    s.call("chat/cancel", json!({"sessionId": id}));
    turn_events(&mut s, &turn);
    assert!(s.alive());
    s.shutdown();
}

/// Runs `claude-context chat ARGS` in the project with the fake API; `(status, stdout, stderr)`.
fn cli(chat: &Chat, args: &[&str], stdin: &str) -> (i32, String, String) {
    chat.cli(args, stdin, &[])
}

#[test]
fn the_command_line_chats_without_an_editor_and_resumes() {
    let chat = Chat::on(project());
    chat.api.push(Turn::new().text("Answer one.").piece(3));
    let (code, stdout, stderr) = cli(&chat, &["What", "is", "this?"], "");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "Answer one.\n", "only the answer on stdout");
    let id = stderr
        .split("--resume ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_string();
    let first = chat.api.requests()[0].json();
    assert_eq!(first["system"].as_array().unwrap().len(), 2);
    let t = texts(&first["messages"][0]["content"]);
    assert!(t[0].contains("Project rules: be exact."));
    assert_eq!(t.last().unwrap(), "What is this?");

    // Resume, and two messages from stdin.
    chat.api.push(Turn::new().text("Answer two."));
    chat.api.push(Turn::new().text("Answer three."));
    let (code, stdout, stderr) = cli(&chat, &["--resume", &id], "Second\n\nThird\n");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "> What is this?\n\nAnswer one.\n\nAnswer two.\nAnswer three.\n"
    );
    let last = chat.api.requests()[2].json();
    let m = last["messages"].as_array().unwrap();
    assert_eq!(m.len(), 5);
    assert_eq!(m[2]["content"][0]["text"], "Second");
    assert_eq!(m[4]["content"][0]["text"], "Third");

    // A 4xx is a clear error and exit status 1; the key appears nowhere.
    chat.api.push(Reply::error(
        400,
        "invalid_request_error",
        "prompt is too long",
    ));
    let (code, stdout, stderr) = cli(&chat, &["--resume", &id, "Fourth"], "");
    assert_eq!(code, 1);
    assert!(stderr.contains("prompt is too long"), "{stderr}");
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    // Without a key: says what to set.
    let mut c = std::process::Command::new(bin());
    let o = c
        .args(["chat", "hi"])
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("HOME", &chat.ws.home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ANTHROPIC_API_KEY"));
}

/// R4 through the language server: every fault kind is retried (and the answer completes) or
/// ends the turn with a clear error; nothing the user sent is lost.
#[test]
fn r4_every_fault_is_retried_or_a_clear_error() {
    let chat = Chat::on(project());
    let mut s = chat.server(json!({"chat": {"idleTimeoutSeconds": 1}}));
    let id = new_session(&mut s);
    let answer = |n: usize| format!("Answer {n} arrived whole.");
    let faults: Vec<(&str, Reply)> = vec![
        (
            "429 with retry-after",
            Reply::error(
                429,
                "rate_limit_error",
                "Number of requests has exceeded your rate limit",
            )
            .retry_after("1"),
        ),
        ("529", Reply::error(529, "overloaded_error", "Overloaded")),
        (
            "500",
            Reply::error(500, "api_error", "Internal server error"),
        ),
        (
            "reset mid-stream",
            Reply::from(Turn::new().text("Cut short here").piece(2)).reset_after(4),
        ),
        (
            "malformed SSE",
            Reply::from(Turn::new().text("Garbled").piece(2)).garbage_after(3),
        ),
        (
            "stalled stream",
            Reply::from(Turn::new().text("Silent").piece(2))
                .stall_after(3, Duration::from_secs(10)),
        ),
        (
            "overloaded error event",
            Reply::from(Turn::new().text("Error event").piece(2)).error_event_after(
                3,
                "overloaded_error",
                "Overloaded",
            ),
        ),
    ];
    let mut sent = Vec::new();
    for (n, (name, fault)) in faults.into_iter().enumerate() {
        chat.api.push(fault);
        chat.api.push(Turn::new().text(&answer(n)).piece(5));
        let text = format!("Question {n} ({name})");
        let turn = s.call("chat/send", json!({"sessionId": id, "text": text}))["turnId"]
            .as_str()
            .unwrap()
            .to_string();
        sent.push(text);
        let ev = turn_events(&mut s, &turn);
        let done = ev.last().unwrap();
        assert_eq!(done["outcome"], "completed", "{name}: {ev:#?}");
        let err = ev
            .iter()
            .find(|e| e["kind"] == "error")
            .unwrap_or_else(|| panic!("{name}: the fault is reported: {ev:#?}"));
        assert!(
            err.get("retry").is_some() || err["restart"] == true,
            "{name}: {err}"
        );
        assert!(!err["message"].as_str().unwrap().is_empty());
        // What the editor shows after the last restart is the whole answer.
        let after: Vec<&Value> = match ev.iter().rposition(|e| e["restart"] == true) {
            Some(i) => ev[i + 1..].iter().collect(),
            None => ev.iter().collect(),
        };
        let shown: String = after
            .iter()
            .filter(|e| e["kind"] == "text")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(shown, answer(n), "{name}");
    }
    // Not retried: 401 and 400 end the turn with the API's own message.
    for (status, kind, message, error_kind) in [
        (401, "authentication_error", "invalid x-api-key", "auth"),
        (
            400,
            "invalid_request_error",
            "max_tokens: too large",
            "rejected",
        ),
    ] {
        let before = chat.api.requests().len();
        chat.api.push(Reply::error(status, kind, message));
        let turn = s.call(
            "chat/send",
            json!({"sessionId": id, "text": format!("Q {status}")}),
        )["turnId"]
            .as_str()
            .unwrap()
            .to_string();
        sent.push(format!("Q {status}"));
        let ev = turn_events(&mut s, &turn);
        assert_eq!(ev.last().unwrap()["outcome"], "failed");
        let err = ev.iter().find(|e| e["kind"] == "error").unwrap();
        assert_eq!(err["status"], status);
        assert_eq!(err["errorKind"], error_kind);
        assert!(err["message"].as_str().unwrap().contains(message), "{err}");
        assert!(err.get("retry").is_none());
        assert_eq!(chat.api.requests().len(), before + 1, "not retried");
    }
    // Nothing lost: every message and every completed answer is in the history.
    let r = s.call("chat/resume", json!({"sessionId": id}));
    let msgs = r["messages"].as_array().unwrap();
    let users: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "user" && !m["text"].as_str().unwrap().is_empty())
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, sent.iter().map(String::as_str).collect::<Vec<_>>());
    for n in 0..7 {
        assert!(
            msgs.iter().any(|m| m["text"] == answer(n).as_str()),
            "answer {n}"
        );
    }
    let seen = s_messages_text(&s);
    assert!(!seen.contains(KEY));
    s.shutdown();
}

/// R3: the server is killed (SIGKILL) at random points of streaming turns, 100 times; each time
/// a new server resumes the session. No user message whose `chat/send` was answered and no
/// answer whose `done` arrived is ever lost.
#[test]
fn r3_sigkill_at_100_random_points_loses_no_message_and_no_completed_answer() {
    let chat = Chat::on(project());
    let runs: usize = std::env::var("CHAT_R3_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut rng = fastrand::Rng::with_seed(
        std::env::var("CHAT_R3_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0x5eed),
    );
    let mut id: Option<String> = None;
    // The session's transcript: created by its first write (the first message), so a kill
    // before that leaves nothing to resume (and nothing was lost).
    let mut transcript = std::path::PathBuf::new();
    let mut confirmed: Vec<String> = Vec::new();
    let mut completed: Vec<String> = Vec::new();
    let (mut killed_streaming, mut killed_after) = (0, 0);
    for run in 0..runs {
        let mut s = chat.server(json!({}));
        let sid = match &id {
            None => {
                let r = s.call("chat/new", json!({}));
                transcript = std::path::PathBuf::from(r["transcript"].as_str().unwrap());
                r["sessionId"].as_str().unwrap().to_string()
            }
            Some(sid) => {
                let r = s.call("chat/resume", json!({"sessionId": sid}));
                let msgs = r["messages"].as_array().unwrap();
                let texts: Vec<&str> = msgs.iter().map(|m| m["text"].as_str().unwrap()).collect();
                for c in &confirmed {
                    assert!(texts.contains(&c.as_str()), "run {run}: lost message {c:?}");
                }
                for a in &completed {
                    assert!(texts.contains(&a.as_str()), "run {run}: lost answer {a:?}");
                }
                sid.clone()
            }
        };
        id = Some(sid.clone());
        let answer = format!("Answer {run}: {}", "lorem ipsum ".repeat(8));
        chat.api
            .push(Reply::from(Turn::new().text(&answer).piece(6)).pace(Duration::from_millis(2)));
        let text = format!("Message {run}");
        let send = s.send_request("chat/send", json!({"sessionId": sid, "text": text}));
        // Kill somewhere between just after sending and a little after the answer would end.
        let delay = Duration::from_micros(rng.u64(0..200_000));
        let started = Instant::now();
        let mut turn: Option<String> = None;
        let mut done = false;
        while started.elapsed() < delay {
            let left = delay.saturating_sub(started.elapsed());
            let Some(m) = s.wait_for(left, |_| true) else {
                break;
            };
            if m.get("id") == Some(&send) && m.get("result").is_some() {
                turn = m["result"]["turnId"].as_str().map(str::to_string);
            }
            if m["method"] == "chat/event" && m["params"]["kind"] == "done" {
                done = m["params"]["outcome"] == "completed";
            }
        }
        let pid = s.pid();
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        let _ = s.wait_exit();
        if turn.is_some() {
            confirmed.push(text);
        }
        if !transcript.exists() {
            // Killed before the session's first message reached the disk (a loaded machine
            // can take longer than the whole delay to get there): it was never answered, so
            // nothing is lost, and there is no session to resume; the next run starts one.
            assert!(
                confirmed.is_empty(),
                "run {run}: a confirmed message left no transcript"
            );
            id = None;
        }
        if done {
            completed.push(answer);
            killed_after += 1;
        } else {
            killed_streaming += 1;
        }
        // Replies the killed run did not take are dropped.
        chat.api.clear();
    }
    // The final check, and the figures.
    let mut s = chat.server(json!({}));
    let Some(id) = id else {
        assert!(confirmed.is_empty() && completed.is_empty());
        return;
    };
    let r = s.call("chat/resume", json!({"sessionId": id}));
    let texts: Vec<String> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    for c in confirmed.iter().chain(&completed) {
        assert!(texts.contains(c), "lost {c:?}");
    }
    s.shutdown();
    eprintln!(
        "R3: {runs} kills ({killed_streaming} before the answer completed, {killed_after} after), {} messages confirmed, {} answers completed, none lost",
        confirmed.len(),
        completed.len()
    );
    assert!(killed_streaming >= runs / 10, "kills land mid-turn too");
}

#[test]
fn chat_new_reports_work_done_progress_on_the_clients_token_before_its_answer() {
    let chat = Chat::on(project());
    let base = chat.api.base_url();
    let state = chat.state.to_string_lossy().to_string();
    let mut s = chat.ws.spawn_with(
        &bin(),
        &[
            ("ANTHROPIC_BASE_URL", &base),
            ("ANTHROPIC_API_KEY", KEY),
            ("XDG_STATE_HOME", &state),
        ],
    );
    let root = harness::uri(&chat.ws.root);
    s.call(
        "initialize",
        json!({"processId": null, "rootUri": root, "workspaceFolders": [{"uri": root, "name": "ws"}],
               "capabilities": {"window": {"workDoneProgress": true}}}),
    );
    s.notify("initialized", json!({}));
    let id = s.send_request("chat/new", json!({"workDoneToken": "tok-1"}));
    s.response(&id);
    let kinds: Vec<(usize, String)> = s
        .received
        .iter()
        .enumerate()
        .filter(|(_, m)| m["method"] == "$/progress" && m["params"]["token"] == "tok-1")
        .map(|(i, m)| {
            (
                i,
                m["params"]["value"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let answer_at = s
        .received
        .iter()
        .position(|m| m.get("id") == Some(&id))
        .unwrap();
    assert_eq!(
        kinds.first().map(|k| k.1.as_str()),
        Some("begin"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(|k| k.1.as_str()), Some("end"));
    assert!(
        kinds.iter().all(|(i, _)| *i < answer_at),
        "progress before the answer"
    );
    // Without the capability, no progress.
    let mut s2 = chat.server(json!({}));
    s2.call("chat/new", json!({"workDoneToken": "tok-2"}));
    assert!(!s2.received.iter().any(|m| m["method"] == "$/progress"));
    s.shutdown();
    s2.shutdown();
}

#[test]
fn a_session_keeps_its_instructions_and_shows_later_edits_as_pending() {
    let chat = Chat::on(project());
    let mut s = chat.server(json!({}));
    let id = new_session(&mut s);
    // An edit after the session started (the editor's buffer), and a new rule on disk.
    s.open(
        &chat.ws.path("CLAUDE.md"),
        "# Shop\n\nProject rules: be vague.\n",
    );
    chat.ws.write(".claude/rules/always.md", "Always rule.\n");
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": harness::uri(&chat.ws.path(".claude/rules/always.md")), "type": 1}]}),
    );
    let p = s.call("context/preview", json!({"sessionId": id}));
    let pending: Vec<(String, String)> = p["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        pending
            .iter()
            .any(|(p, m)| p.ends_with("/CLAUDE.md") && m.starts_with("changed")),
        "{pending:?}"
    );
    assert!(
        pending
            .iter()
            .any(|(p, m)| p.ends_with("always.md") && m.starts_with("added")),
        "{pending:?}"
    );
    let instructions = p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "instructions")
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(instructions.contains("be exact."), "frozen at the start");
    assert!(!instructions.contains("Always rule."));
    assert_eq!(p["session"]["estimated"], true, "no answer yet");
    // The request carries the frozen instructions.
    chat.api.push(Turn::new().text("ok"));
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "Hi"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    let body = chat.api.requests()[0].json();
    let t = texts(&body["messages"][0]["content"]);
    assert!(t.iter().any(|b| b.contains("be exact.")));
    assert!(
        !t.iter()
            .any(|b| b.contains("be vague.") || b.contains("Always rule."))
    );
    // A new session sees the saved change.
    let id2 = new_session(&mut s);
    let p2 = s.call("context/preview", json!({"sessionId": id2}));
    assert!(
        p2["pending"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["path"].as_str().unwrap().ends_with("always.md"))
    );
    s.shutdown();
}

/// A 1×1 PNG and a 1×1 GIF, whole, base64.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const GIF_1X1: &str = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==";

/// Issue 29, item 4: images pasted in the editor's chat (`chat/send` `images`) reach the model
/// as image blocks, in order, before the text; a bad one or too many refuse the message with
/// the reason and keep nothing; `chat/resume` lists them and the resumed session sends them
/// again.
#[test]
fn pasted_images_reach_the_model_in_order_and_a_bad_one_refuses_the_message() {
    let chat = Chat::new();
    let mut s = chat.server(json!({}));
    let id = new_session(&mut s);
    let e = s.request(
        "chat/send",
        json!({"sessionId": id, "text": "REFUSED-MARKER", "images": [
            {"mediaType": "image/png", "data": PNG_1X1},
            {"mediaType": "image/webp", "data": PNG_1X1}
        ]}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("images[1]: the image is declared image/webp but its bytes are image/png"),
        "{msg}"
    );
    let many: Vec<Value> = (0..21)
        .map(|_| json!({"mediaType": "image/png", "data": PNG_1X1}))
        .collect();
    let e = s.request(
        "chat/send",
        json!({"sessionId": id, "text": "REFUSED-MARKER", "images": many}),
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 20"),
        "{e}"
    );
    assert!(chat.api.requests().is_empty(), "nothing was sent");

    chat.api.push(Turn::new().text("A pixel and a pixel."));
    let turn = s.call(
        "chat/send",
        json!({"sessionId": id, "text": "compare these", "images": [
            {"mediaType": "image/png", "data": PNG_1X1},
            {"mediaType": "image/gif", "data": GIF_1X1}
        ]}),
    )["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    let body = chat.api.requests()[0].json();
    let content = body["messages"][0]["content"].as_array().unwrap();
    let n = content.len();
    assert_eq!(
        content[n - 3..],
        [
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": GIF_1X1}}),
            json!({"type": "text", "text": "compare these", "cache_control": {"type": "ephemeral"}}),
        ],
        "{body}"
    );
    // An image alone is a message.
    chat.api.push(Turn::new().text("Another pixel."));
    let turn = s.call(
        "chat/send",
        json!({"sessionId": id, "text": "", "images": [{"mediaType": "image/png", "data": PNG_1X1}]}),
    )["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    s.shutdown();
    for (p, text) in all_files(&chat.state) {
        assert!(!text.contains("REFUSED-MARKER"), "{} kept it", p.display());
    }

    let mut s = chat.server(json!({}));
    let r = s.call("chat/resume", json!({"sessionId": id}));
    let msgs = r["messages"].as_array().unwrap();
    assert_eq!(
        msgs[0]["images"],
        json!([{"mediaType": "image/png", "size": 70}, {"mediaType": "image/gif", "size": 43}]),
        "{r}"
    );
    chat.api.push(Turn::new().text("Yes."));
    let turn = s.call(
        "chat/send",
        json!({"sessionId": id, "text": "still there?"}),
    )["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    turn_events(&mut s, &turn);
    let reqs = chat.api.requests();
    let last = reqs.last().unwrap().json();
    let images = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "image")
        .count();
    assert_eq!(
        images, 3,
        "the resumed session sends every image again: {last}"
    );
    s.shutdown();
}
