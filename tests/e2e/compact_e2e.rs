//! Compaction in chat sessions, end to end: the real `claude-context lsp` binary over stdio, a
//! real project in a temp dir, the fake Anthropic API on 127.0.0.1. The fake's `usage` figures
//! drive the session's count (as the real API's do), against a small configured window
//! (`window` 40,000 and `chat.maxTokens` 2,000: threshold 25,000, blocking 35,000):
//! - a session masks old tool results first, then summarises once, continues, and after the
//!   server is killed resumes from the compacted history;
//! - three summaries in a row without a `<summary>` stop automatic compaction, and the user is
//!   told with `window/showMessage`;
//! - `compact/run`: a dry run changes nothing; a manual summary uses the focus hint and reports
//!   `$/progress` on the request's token.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary and git, with their own environment.

use crate::support::chat::{Chat, KEY, new_session};
use crate::{fake_anthropic, harness};

use std::path::Path;

use fake_anthropic::{Reply, Turn};
use harness::{Server, Workspace};
use serde_json::{Value, json};

fn settings() -> Value {
    json!({
        "window": 40000,
        "chat": {"maxTokens": 2000},
        "compaction": {"keepRecent": 1}
    })
}

/// A project with three source files of about 700 tokens each once line-numbered.
fn project() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n\nBe exact.\n");
    for name in ["a", "b", "c"] {
        let body: String = (0..60)
            .map(|i| format!("export const {name}{i:02} = \"{}\";\n", "x".repeat(14)))
            .collect();
        ws.write(&format!("src/{name}.ts"), &body);
    }
    ws.git_init();
    ws
}

/// A server for a client that supports work-done progress, with the small window.
fn server(chat: &Chat) -> Server {
    server_with(chat, settings())
}

/// [`server`] with other settings.
fn server_with(chat: &Chat, settings: Value) -> Server {
    chat.server_with_capabilities(
        json!({"window": {"workDoneProgress": true}, "workspace": {"configuration": true}}),
        settings,
        &[],
        &[],
    )
}

fn file(chat: &Chat, name: &str) -> String {
    chat.ws.root.join(name).display().to_string()
}

/// Sends `text` and returns the turn's events up to its `done`, which must say `completed`.
fn send(s: &mut Server, id: &str, text: &str) -> Vec<Value> {
    let events = s.chat_send(id, text);
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    events
}

fn compacted(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "compacted")
        .map(|e| e["mode"].as_str().unwrap().to_string())
        .collect()
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m.to_string().contains("All User Messages"))
}

/// A nine-section summary whose section 6 lists `users` only.
fn summary(users: &[&str]) -> String {
    let six: String = users.iter().map(|u| format!("   - \"{u}\"\n")).collect();
    format!(
        "<analysis>Reviewing.</analysis>\n<summary>\n1. Primary Request and Intent:\n   Find the coupon bug.\n2. Key Technical Concepts:\n   - TypeScript\n3. Files and Code Sections:\n   - src/a.ts, src/b.ts, src/c.ts\n4. Errors and fixes:\n   - none\n5. Problem Solving:\n   Read the three files.\n6. All User Messages:\n{six}7. Pending Tasks:\n   - find the bug\n8. Current Work:\n   Reading the coupon code.\n9. Optional Next Step:\n   Look at applyCoupon.\n</summary>"
    )
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_session_over_a_small_window_masks_first_then_summarises_once_continues_and_resumes_compacted()
{
    let chat = Chat::on(project());
    let mut s = server(&chat);
    let id = new_session(&mut s);

    // Turn A: three Reads; the answer to the third says the window holds 24,500 tokens, so
    // the result that follows passes the threshold and masking the two older ones is enough.
    for (i, (f, used)) in [
        ("src/a.ts", 3_000),
        ("src/b.ts", 9_000),
        ("src/c.ts", 24_500),
    ]
    .iter()
    .enumerate()
    {
        chat.api.push(
            Turn::new()
                .id(&format!("msg_read_{i}"))
                .tool_use(
                    &format!("toolu_{i}"),
                    "Read",
                    json!({"file_path": file(&chat, f)}),
                )
                .usage(*used, 10, 0, 0),
        );
    }
    chat.api.push(
        Turn::new()
            .text("Looking at the coupon code.")
            .usage(20_000, 10, 0, 0),
    );
    let a = send(&mut s, &id, "Find the coupon bug.");
    assert_eq!(compacted(&a), ["micro"], "masking alone: {a:#?}");
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 4);
    let masked = reqs[3].json()["messages"].to_string();
    assert_eq!(
        masked.matches("[Old tool result content cleared]").count(),
        2,
        "the two older results are cleared, the newest kept"
    );
    assert!(masked.contains("export const c00"));

    // Turn B: the answer reports 30,000 tokens in the window.
    chat.api
        .push(Turn::new().text("Noted.").usage(30_000, 10, 0, 0));
    let b = send(&mut s, &id, "Keep the public API unchanged.");
    assert!(compacted(&b).is_empty(), "{b:#?}");

    // Turn C: above the threshold, nothing left to mask: one summary (the model lists only the
    // first message; the session appends the other), then the request goes out.
    chat.api
        .push(Turn::new().text(&summary(&["Find the coupon bug."])));
    chat.api.push(
        Turn::new()
            .text("The bug is in applyCoupon.")
            .usage(9_000, 10, 0, 0),
    );
    let c = send(&mut s, &id, "What now?");
    assert_eq!(compacted(&c), ["full"], "{c:#?}");
    let full = c.iter().find(|e| e["kind"] == "compacted").unwrap();
    assert!(full["tokensBefore"].as_u64().unwrap() > 30_000);
    assert!(full["tokensAfter"].as_u64().unwrap() < 25_000);

    let reqs = chat.api.requests();
    let summaries: Vec<Value> = reqs
        .iter()
        .map(|r| r.json())
        .filter(is_summary_request)
        .collect();
    assert_eq!(summaries.len(), 1, "one summary");
    let first = reqs[0].json();
    assert_eq!(
        summaries[0]["system"], first["system"],
        "the session's prefix"
    );
    assert_eq!(summaries[0]["tools"], first["tools"]);
    // The request after the summary: the continuation first (instructions, git, summary),
    // the files re-read as Read calls, the last answer, then the new message.
    let after = reqs.last().unwrap().json();
    let messages = after["messages"].as_array().unwrap();
    let head = messages[0].to_string();
    assert!(head.contains("This session continues"), "{head}");
    assert!(
        head.contains("Be exact."),
        "the instructions re-read: {head}"
    );
    assert!(head.contains("gitStatus"), "the git block re-read");
    for typed in ["Find the coupon bug.", "Keep the public API unchanged."] {
        assert!(head.contains(typed), "{typed:?} kept in section 6");
    }
    let all = after["messages"].to_string();
    assert!(
        all.contains("export const a00"),
        "a recent file re-injected"
    );
    assert_eq!(
        messages.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["text"],
        "What now?"
    );
    // Progress on a token the server created.
    let created = s
        .server_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "window/workDoneProgress/create")
        .map(|r| r["params"]["token"].clone())
        .collect::<Vec<_>>();
    assert_eq!(created.len(), 1);
    let kinds: Vec<String> = s
        .received
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == created[0])
        .map(|m| m["params"]["value"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["begin", "end"]);
    // The transcript holds the compaction.
    let transcript = &chat.transcripts()[0];
    let recs = records(transcript);
    assert!(recs.iter().any(|r| r["subtype"] == "microcompact"));
    assert!(recs.iter().any(|r| r["subtype"] == "compact_boundary"));
    assert!(!std::fs::read_to_string(transcript).unwrap().contains(KEY));

    // Killed, restarted, resumed: the next request sends the compacted history.
    let pid = s.pid();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let _ = s.wait_exit();
    let mut s = server(&chat);
    s.call("chat/resume", json!({"sessionId": id}));
    chat.api
        .push(Turn::new().text("Fixed.").usage(9_500, 10, 0, 0));
    let d = send(&mut s, &id, "Fix it.");
    assert!(compacted(&d).is_empty(), "nothing more to compact: {d:#?}");
    let resumed = chat.api.requests().last().unwrap().json();
    let sent = resumed["messages"].as_array().unwrap();
    assert_eq!(sent.len(), messages.len() + 2);
    assert_eq!(
        harness::without_cache(&Value::Array(sent[..messages.len()].to_vec())),
        harness::without_cache(&Value::Array(messages.clone())),
        "the history the model saw before the kill"
    );
    assert_eq!(
        sent[messages.len()]["content"][0]["text"],
        "The bug is in applyCoupon."
    );
    s.shutdown();
}

#[test]
fn three_failed_summaries_stop_automatic_compaction_and_the_editor_shows_why() {
    let chat = Chat::on(project());
    let mut s = server(&chat);
    let id = new_session(&mut s);
    chat.api
        .push(Turn::new().text("Hello.").usage(30_000, 10, 0, 0));
    send(&mut s, &id, "Message 0.");
    // Each of the next three turns: a summary attempt that gets no <summary>, then the
    // request itself (30,000 is below blocking, so it goes out).
    for i in 1..=3 {
        chat.api
            .push(Turn::new().text("I cannot summarise this conversation."));
        chat.api
            .push(Turn::new().text("Answer.").usage(30_000, 10, 0, 0));
        let events = send(&mut s, &id, &format!("Message {i}."));
        assert!(compacted(&events).is_empty());
    }
    let shown = s
        .notification("window/showMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("Automatic compaction is off"))
        })
        .expect("the user is told");
    assert_eq!(shown["type"], 2, "a warning");
    assert!(shown["message"].as_str().unwrap().contains("focus hint"));
    // Turn 4: no summary is attempted.
    let before = chat.api.requests().len();
    chat.api
        .push(Turn::new().text("Answer.").usage(30_000, 10, 0, 0));
    send(&mut s, &id, "Message 4.");
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), before + 1);
    assert_eq!(
        reqs.iter()
            .filter(|r| is_summary_request(&r.json()))
            .count(),
        3
    );
    // A manual run still summarises, and its success turns automatic compaction back on.
    chat.api.push(Turn::new().text(&summary(&[
        "Message 0.",
        "Message 1.",
        "Message 2.",
        "Message 3.",
        "Message 4.",
    ])));
    let r = s.call("compact/run", json!({"sessionId": id, "mode": "full"}));
    assert_eq!(r["mode"], "full");
    assert_eq!(r["preservedUserMessages"], 5);
    s.shutdown();
}

#[test]
fn compact_run_dry_run_changes_nothing_and_a_manual_summary_follows_the_focus_hint() {
    let chat = Chat::on(project());
    let mut s = server(&chat);
    let id = new_session(&mut s);
    for (i, f) in ["src/a.ts", "src/b.ts"].iter().enumerate() {
        chat.api.push(
            Turn::new()
                .tool_use(
                    &format!("toolu_{i}"),
                    "Read",
                    json!({"file_path": file(&chat, f)}),
                )
                .usage(12_000 + 2_000 * i as u64, 10, 0, 0),
        );
        chat.api.push(
            Turn::new()
                .text("Read it.")
                .usage(13_000 + 2_000 * i as u64, 10, 0, 0),
        );
        send(&mut s, &id, &format!("Read {f}."));
    }
    let transcript = chat.transcripts()[0].clone();
    let bytes = std::fs::read(&transcript).unwrap();
    let requests = chat.api.requests().len();

    let dry = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "micro", "dryRun": true}),
    );
    assert_eq!(dry["mode"], "micro");
    assert_eq!(dry["dryRun"], true);
    assert_eq!(dry["cleared"].as_array().unwrap().len(), 1, "{dry}");
    assert_eq!(dry["cleared"][0]["tool"], "Read");
    assert!(dry["tokensAfter"].as_u64() < dry["tokensBefore"].as_u64());
    let dry_full = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "full", "dryRun": true}),
    );
    assert_eq!(dry_full["mode"], "full");
    assert_eq!(dry_full["preservedUserMessages"], 2);
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        bytes,
        "nothing written"
    );
    assert_eq!(chat.api.requests().len(), requests, "no model call");

    // A manual summary with a focus hint and a progress token.
    chat.api
        .push(Turn::new().text(&summary(&["Read src/a.ts."])));
    let rid = s.send_request(
        "compact/run",
        json!({"sessionId": id, "mode": "full", "instructions": "keep the coupon API",
               "workDoneToken": "tok-c"}),
    );
    let resp = s.response(&rid);
    let r = &resp["result"];
    assert_eq!(r["mode"], "full", "{resp}");
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["preservedUserMessages"], 2);
    assert!(
        r["summary"].as_str().unwrap().contains("Read src/b.ts."),
        "appended"
    );
    let ask = chat.api.requests().last().unwrap().json();
    let last = ask["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains("Additional Instructions:"), "{last}");
    assert!(last.contains("keep the coupon API"));
    let answered = s
        .received
        .iter()
        .position(|m| m.get("id") == Some(&rid) && m.get("method").is_none())
        .unwrap();
    let progress: Vec<(usize, String)> = s
        .received
        .iter()
        .enumerate()
        .filter(|(_, m)| m["method"] == "$/progress" && m["params"]["token"] == "tok-c")
        .map(|(i, m)| {
            (
                i,
                m["params"]["value"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        progress.iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
        ["begin", "end"]
    );
    assert!(progress.iter().all(|(i, _)| *i < answered));

    // The next request continues from the summary.
    chat.api
        .push(Turn::new().text("Going on.").usage(5_000, 10, 0, 0));
    send(&mut s, &id, "Go on.");
    let next = chat.api.requests().last().unwrap().json();
    assert!(
        next["messages"][0]
            .to_string()
            .contains("This session continues")
    );
    // Bad requests get clear errors.
    let unknown = s.request("compact/run", json!({"sessionId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
    let bad_mode = s.request("compact/run", json!({"sessionId": id, "mode": "all"}));
    assert_eq!(bad_mode["error"]["code"], -32602);
    assert!(
        bad_mode["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mode"),
        "{bad_mode}"
    );
    s.shutdown();
}

/// `claude-context chat` in the project with extra environment, `stdin` as the messages.
fn cli(chat: &Chat, vars: &[(&str, &str)], stdin: &str) -> (i32, String, String) {
    chat.cli(&[], stdin, vars)
}

#[test]
fn the_command_line_compacts_under_the_environments_window_and_says_so() {
    // A window of 60,000 with the CLI's 32,000-token answers (20,000 reserved): threshold
    // 27,000, blocking 37,000.
    let chat = Chat::on(project());
    chat.api
        .push(Turn::new().text("One.").usage(30_000, 10, 0, 0));
    chat.api.push(Turn::new().text(&summary(&["First."])));
    chat.api
        .push(Turn::new().text("Two.").usage(8_000, 10, 0, 0));
    let (code, stdout, stderr) = cli(
        &chat,
        &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "60000")],
        "First.\nSecond.\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "One.\nTwo.\n", "only the answers on stdout");
    assert!(
        stderr.contains("[Compacting the conversation…]"),
        "{stderr}"
    );
    assert!(stderr.contains("conversation summarised"), "{stderr}");
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 3);
    assert!(is_summary_request(&reqs[1].json()));
    let last = reqs[2].json();
    let head = last["messages"][0].to_string();
    assert!(head.contains("This session continues") && head.contains("First."));
    // A value that is not a number is named, and the default window applies.
    chat.api.push(Turn::new().text("Three."));
    let (code, _, stderr) = cli(
        &chat,
        &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "lots")],
        "Third.\n",
    );
    assert_eq!(code, 0);
    assert!(
        stderr.contains("CLAUDE_CODE_AUTO_COMPACT_WINDOW") && stderr.contains("lots"),
        "{stderr}"
    );
}

#[test]
fn with_api_context_editing_requests_carry_it_and_what_the_api_cleared_is_reported() {
    let chat = Chat::on(project());
    let mut with_editing = settings();
    with_editing["compaction"]["apiContextEditing"] = json!(true);
    let mut s = server_with(&chat, with_editing);
    let id = new_session(&mut s);
    // The API reports it cleared 6 tool uses (21,000 tokens) from the prompt the model saw.
    chat.api.push(Reply::with_applied_edits(
        Turn::new().text("Done.").usage(12_000, 10, 0, 0),
        json!([{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 6, "cleared_input_tokens": 21_000}]),
    ));
    let events = send(&mut s, &id, "Go.");
    let api = events
        .iter()
        .find(|e| e["kind"] == "compacted")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(api["mode"], "api");
    assert_eq!(api["tokensBefore"], 33_010);
    assert_eq!(api["tokensAfter"], 12_010);
    let sent = &chat.api.requests()[0];
    assert!(
        sent.header("anthropic-beta")
            .is_some_and(|b| b.contains("context-management-2025-06-27")),
        "the beta header"
    );
    let edit = &sent.json()["context_management"]["edits"][0];
    assert_eq!(edit["type"], "clear_tool_uses_20250919");
    assert_eq!(edit["keep"]["value"], 1, "keepRecent");
    // Without the setting, nothing of the kind is sent.
    let mut plain = server(&chat);
    let id = new_session(&mut plain);
    chat.api.push(Turn::new().text("Done."));
    send(&mut plain, &id, "Go.");
    let sent = chat.api.requests().last().unwrap().json();
    assert!(sent.get("context_management").is_none());
    s.shutdown();
    plain.shutdown();
}
