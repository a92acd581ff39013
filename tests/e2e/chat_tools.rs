//! The agent's tools in a chat, end to end: the real `claude-context` binary over stdio (the
//! language server, and the command line), a real project in a temp dir, the fake Anthropic API
//! on 127.0.0.1 scripting `tool_use` answers. Assertions are on the requests the API recorded
//! (byte for byte where the spec gives a format), on what the editor was asked, and on the disk.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};

use fake_anthropic::Turn;
use harness::{Server, Workspace, uri};
use serde_json::{Value, json};

/// The project of these tests: a conditional TypeScript rule and a source file.
fn project() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    ws.write(
        ".claude/rules/typescript.md",
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode.\n",
    );
    ws.write("src/cart.ts", "export const cart = 1;\n");
    ws
}

/// The language server; `apply_edit`: the client declares `workspace.applyEdit`.
/// `answers`: what the client answers to server requests, by method.
fn server(chat: &Chat, apply_edit: bool, answers: &[(&str, Value)]) -> Server {
    server_with(chat, apply_edit, answers, &[])
}

/// [`server`] with more environment variables.
fn server_with(
    chat: &Chat,
    apply_edit: bool,
    answers: &[(&str, Value)],
    more: &[(&str, &str)],
) -> Server {
    let mut s = chat.spawn(answers, more);
    s.initialize_with(&chat.ws.root, json!({}), apply_edit);
    s
}

/// Scripts one tool call per answer, then a final text answer.
fn script(chat: &Chat, calls: &[(&str, Value)]) {
    chat.script(calls, "All done.");
}

/// The request that answered tool call `i` (the request after the one that made it).
fn result_request(chat: &Chat, i: usize) -> fake_anthropic::Recorded {
    chat.api.requests()[i + 1].clone()
}

/// Sends `text` in a new session and returns the turn's events up to its `done`.
fn turn(s: &mut Server, text: &str) -> (String, Vec<Value>) {
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let events = s.chat_send(&id, text);
    (id, events)
}

/// The last message of a recorded request: the user message carrying the tool result.
fn last_message(r: &fake_anthropic::Recorded) -> Value {
    r.json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

/// A `tool_result`'s text, whether the wire sent it as a string (the reference CLI) or as text
/// parts (ours: one `{"type": "text"}` part).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

fn server_requests(s: &Server, method: &str) -> Vec<Value> {
    s.server_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == method)
        .cloned()
        .collect()
}

fn done_completed(events: &[Value]) {
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "completed", "{events:#?}");
}

#[test]
fn a_read_attaches_the_matching_rule_after_the_result_in_the_next_request() {
    let chat = Chat::on(project());
    let file = chat.ws.root.join("src/cart.ts");
    script(&chat, &[("Read", json!({"file_path": file}))]);
    let mut s = server(&chat, false, &[]);
    let (id, events) = turn(&mut s, "read the cart");
    done_completed(&events);

    // The tools are offered, in their stable order.
    let first = chat.api.requests()[0].json();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Read",
            "Write",
            "Edit",
            "Glob",
            "Grep",
            "Bash",
            "TodoWrite",
            "Agent"
        ]
    );

    // The next request: the tool result, then the rule as its own block (context.md §4).
    let r = result_request(&chat, 0);
    let m = last_message(&r);
    assert_eq!(m["role"], "user");
    let blocks = m["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{m:#}");
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_0");
    let result = serde_json::to_string(&blocks[0]["content"]).unwrap();
    assert!(result.contains("export const cart = 1;"), "{result}");
    let rule = chat.ws.root.join(".claude/rules/typescript.md");
    let want = format!(
        "<system-reminder>\nContents of {}:\n\nTypeScript: strict mode.\n\n</system-reminder>",
        rule.display()
    );
    assert_eq!(blocks[1]["type"], "text");
    assert_eq!(blocks[1]["text"], want.as_str());
    // The same bytes as the API received them (JSON-escaped).
    let escaped = serde_json::to_string(&want).unwrap();
    assert!(
        String::from_utf8_lossy(&r.body).contains(escaped.trim_matches('"')),
        "not in the request bytes: {escaped}"
    );

    // The editor saw the call, its result and the attachment.
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let pos = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(pos("toolUse") < pos("toolResult"), "{kinds:?}");
    assert!(pos("toolResult") < pos("attachment"), "{kinds:?}");
    let a = events.iter().find(|e| e["kind"] == "attachment").unwrap();
    assert_eq!(a["path"], rule.display().to_string());
    assert_eq!(a["trigger"], file.display().to_string());
    // Read-only inside the workspace: nobody was asked.
    assert!(server_requests(&s, "chat/permission").is_empty());
    // The call, its result and the attachment are in the transcript.
    let transcript: String = all_files(&chat.state)
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|(_, t)| t)
        .collect();
    for want in [
        "\"tool_use\"",
        "\"tool_result\"",
        "toolu_0",
        "TypeScript: strict mode.",
    ] {
        assert!(transcript.contains(want), "{want} not in the transcript");
    }
    // What made the rule apply is kept for the editor, never sent to the model.
    assert!(!String::from_utf8_lossy(&r.body).contains("\"trigger\""));

    // Resumed in another server, the history shows the result's text and why the rule applies.
    drop(s);
    let mut again = server(&chat, false, &[]);
    let h = again.call("chat/resume", json!({"sessionId": id}));
    let messages = h["messages"].as_array().unwrap();
    let with_result = messages
        .iter()
        .find(|m| m["toolResults"].is_array())
        .unwrap_or_else(|| panic!("no tool result in {h:#}"));
    assert_eq!(with_result["toolResults"][0]["toolUseId"], "toolu_0");
    assert!(
        with_result["toolResults"][0]["content"]
            .as_str()
            .unwrap()
            .contains("export const cart = 1;"),
        "{with_result:#}"
    );
    let att = &with_result["attachments"][0];
    assert_eq!(att["path"], rule.display().to_string());
    assert_eq!(att["trigger"], file.display().to_string());
    assert!(att["tokens"].as_u64().unwrap() > 0);
}

#[test]
fn edits_of_open_files_go_to_the_buffer_and_writes_of_closed_files_to_the_disk() {
    let chat = Chat::on(project());
    let cart = chat.ws.root.join("src/cart.ts");
    let fresh = chat.ws.root.join("src/fresh.ts");
    script(
        &chat,
        &[
            ("Read", json!({"file_path": cart})),
            (
                "Edit",
                json!({"file_path": cart, "old_string": "cart = 2", "new_string": "cart = 3"}),
            ),
            (
                "Write",
                json!({"file_path": fresh, "content": "export const fresh = true;\n"}),
            ),
        ],
    );
    let mut s = server(
        &chat,
        true,
        &[
            ("chat/permission", json!({"decision": "allow"})),
            ("workspace/applyEdit", json!({"applied": true})),
        ],
    );
    // Unsaved text in the editor: "2"; the disk says "1".
    s.open(&cart, "// é😀\nexport const cart = 2;\n");
    let (id, events) = turn(&mut s, "bump the cart");
    done_completed(&events);

    // The Read saw the editor's unsaved text.
    let read =
        serde_json::to_string(&last_message(&result_request(&chat, 0))["content"][0]).unwrap();
    assert!(read.contains("export const cart = 2;"), "{read}");

    // The Edit asked, then went to the buffer as workspace/applyEdit (UTF-16 columns).
    let asks = server_requests(&s, "chat/permission");
    assert_eq!(asks.len(), 2, "Edit and Write asked: {asks:#?}");
    assert_eq!(asks[0]["params"]["sessionId"], id.as_str());
    assert_eq!(asks[0]["params"]["tool"], "Edit");
    assert_eq!(asks[0]["params"]["input"]["new_string"], "cart = 3");
    assert!(
        asks[0]["params"]["summary"]
            .as_str()
            .unwrap()
            .contains("Edit")
    );
    assert_eq!(asks[1]["params"]["tool"], "Write");
    let applied = server_requests(&s, "workspace/applyEdit");
    assert_eq!(applied.len(), 1, "only the open file: {applied:#?}");
    let edits = &applied[0]["params"]["edit"]["changes"][uri(&cart)];
    let edits = edits.as_array().unwrap();
    let mut buffer = "// é😀\nexport const cart = 2;\n".to_string();
    for e in edits.iter().rev() {
        let at = |p: &Value| utf16_offset(&buffer, p);
        let (a, b) = (at(&e["range"]["start"]), at(&e["range"]["end"]));
        buffer.replace_range(a..b, e["newText"].as_str().unwrap());
    }
    assert_eq!(buffer, "// é😀\nexport const cart = 3;\n");
    let edited = last_message(&result_request(&chat, 1));
    assert_ne!(edited["content"][0]["is_error"], json!(true), "{edited:#}");
    // The disk is untouched until the user saves.
    assert_eq!(
        std::fs::read_to_string(&cart).unwrap(),
        "export const cart = 1;\n"
    );

    // The Write of a file that is not open went to the disk.
    assert_eq!(
        std::fs::read_to_string(&fresh).unwrap(),
        "export const fresh = true;\n"
    );
    let wrote = last_message(&result_request(&chat, 2));
    assert_ne!(wrote["content"][0]["is_error"], json!(true), "{wrote:#}");
}

/// The byte offset of an LSP position (UTF-16 column) in `text`.
fn utf16_offset(text: &str, p: &Value) -> usize {
    let (line, col) = (
        p["line"].as_u64().unwrap(),
        p["character"].as_u64().unwrap(),
    );
    let start: usize = text
        .split_inclusive('\n')
        .take(line as usize)
        .map(str::len)
        .sum();
    let mut units = 0;
    for (i, c) in text[start..].char_indices() {
        if units >= col as usize {
            return start + i;
        }
        units += c.len_utf16();
    }
    text.len()
}

#[test]
fn an_edit_the_editor_refuses_is_an_error_result_and_changes_nothing() {
    let chat = Chat::on(project());
    let cart = chat.ws.root.join("src/cart.ts");
    script(
        &chat,
        &[
            ("Read", json!({"file_path": cart})),
            (
                "Edit",
                json!({"file_path": cart, "old_string": "cart = 1", "new_string": "cart = 3"}),
            ),
        ],
    );
    let mut s = server(
        &chat,
        true,
        &[
            ("chat/permission", json!({"decision": "allow"})),
            (
                "workspace/applyEdit",
                json!({"applied": false, "failureReason": "the buffer is read-only"}),
            ),
        ],
    );
    s.open(&cart, "export const cart = 1;\n");
    let (_, events) = turn(&mut s, "bump the cart");
    done_completed(&events);
    let m = last_message(&result_request(&chat, 1));
    assert_eq!(m["content"][0]["is_error"], json!(true), "{m:#}");
    let text = serde_json::to_string(&m["content"][0]["content"]).unwrap();
    assert!(text.contains("the buffer is read-only"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&cart).unwrap(),
        "export const cart = 1;\n"
    );
}

/// permissions-trust.md check 26: a Bash the user rejects runs nothing; the model gets the
/// reference's text (is_error) followed by `[Request interrupted by user for tool use]\n` in the
/// same message, and the turn stops there: no request until the user writes again.
#[test]
fn a_denied_bash_is_an_error_result_and_nothing_ran() {
    let chat = Chat::on(project());
    script(&chat, &[("Bash", json!({"command": "touch ran.txt"}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "deny"}))],
    );
    let (id, events) = turn(&mut s, "run it");
    done_completed(&events);
    let asks = server_requests(&s, "chat/permission");
    assert_eq!(asks.len(), 1);
    assert_eq!(asks[0]["params"]["sessionId"], id.as_str());
    assert_eq!(asks[0]["params"]["tool"], "Bash");
    assert_eq!(asks[0]["params"]["input"]["command"], "touch ran.txt");
    assert!(!chat.ws.root.join("ran.txt").exists(), "the command ran");
    let r = events.iter().find(|e| e["kind"] == "toolResult").unwrap();
    assert_eq!(r["isError"], json!(true));
    // The turn stopped after the rejection: the model was not asked again.
    assert_eq!(chat.api.requests().len(), 1);
    assert!(!events.iter().any(|e| e["kind"] == "text"), "{events:#?}");
    // The user's next message carries the results and the interruption.
    let next = s.chat_send(&id, "do something else");
    done_completed(&next);
    let body = chat.api.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    let results = &messages[messages.len() - 2];
    assert_eq!(results["role"], "user");
    assert_eq!(results["content"][0]["type"], "tool_result");
    assert_eq!(results["content"][0]["is_error"], json!(true));
    assert_eq!(
        result_text(&results["content"][0]["content"]),
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
    );
    assert_eq!(results["content"][1]["type"], "text");
    assert_eq!(
        results["content"][1]["text"],
        "[Request interrupted by user for tool use]\n"
    );
    let last = &messages[messages.len() - 1];
    assert_eq!(
        last["content"].as_array().unwrap().last().unwrap()["text"],
        "do something else"
    );
}

#[test]
fn cancelling_the_turn_closes_an_open_permission_prompt_and_runs_nothing() {
    let chat = Chat::on(project());
    script(&chat, &[("Bash", json!({"command": "touch ran.txt"}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!(harness::NO_ANSWER))],
    );
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "run it"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let ask = s
        .wait_for(harness::TIMEOUT, |m| {
            m["method"] == "chat/permission" && m.get("id").is_some()
        })
        .expect("the server asks");
    let cancelled = s.call("chat/cancel", json!({"sessionId": id}));
    assert_eq!(cancelled["cancelled"], true);
    // The server gives the prompt up: the client may close it.
    let c = s
        .notification("$/cancelRequest", |p| p["id"] == ask["id"])
        .expect("$/cancelRequest for the prompt");
    assert_eq!(c["id"], ask["id"]);
    let done = s
        .notification("chat/event", |p| p["turnId"] == turn && p["kind"] == "done")
        .expect("the turn ends");
    assert_eq!(done["outcome"], "cancelled");
    assert!(!chat.ws.root.join("ran.txt").exists(), "the command ran");
    assert_eq!(
        chat.api.requests().len(),
        1,
        "nothing more was asked of the model"
    );
}

#[test]
fn a_client_without_chat_permission_denies_rather_than_running() {
    let chat = Chat::on(project());
    script(&chat, &[("Bash", json!({"command": "touch ran.txt"}))]);
    // The harness answers unknown requests with `null`: not a decision.
    let mut s = server(&chat, false, &[]);
    let (_, events) = turn(&mut s, "run it");
    done_completed(&events);
    let m = last_message(&result_request(&chat, 0));
    assert_eq!(m["content"][0]["is_error"], json!(true), "{m:#}");
    assert!(!chat.ws.root.join("ran.txt").exists());
}

/// A Write or an Edit of a file outside the workspace folders is asked with the words that say
/// so, like a read: the tools' own summaries ("Write x (2 lines)", "Edit x") did not, so a user
/// answering "allow" to what looked like a workspace file let the model write outside.
#[test]
fn a_write_or_edit_outside_the_workspace_is_asked_as_outside() {
    let chat = Chat::on(project());
    let outside = chat.ws.dir.path().join("elsewhere/notes.txt");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::write(&outside, "kept\n").unwrap();
    script(
        &chat,
        &[
            ("Write", json!({"file_path": outside, "content": "x\ny\n"})),
            (
                "Edit",
                json!({"file_path": outside, "old_string": "kept", "new_string": "gone"}),
            ),
        ],
    );
    let mut s = server(&chat, false, &[]);
    let (_, events) = turn(&mut s, "write there");
    done_completed(&events);
    let asked = server_requests(&s, "chat/permission");
    assert!(!asked.is_empty(), "nothing was asked");
    for q in &asked {
        let summary = q["params"]["summary"].as_str().unwrap_or_default();
        assert!(
            summary.ends_with("(outside the workspace folders)"),
            "{summary}"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept\n");
}

/// A read outside the workspace folders is the user's to allow (the reference asks too): with
/// nobody to answer (a client that does not answer `chat/permission`), nothing outside is sent
/// and the model gets the reference's `-p` text, whatever path leads there.
#[test]
fn a_read_outside_the_workspace_never_sends_the_file() {
    let chat = Chat::on(project());
    let outside = chat.ws.dir.path().join("elsewhere/secret.txt");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::write(&outside, "TOP-SECRET-OUTSIDE-0451\n").unwrap();
    // A link inside the workspace that leads to it.
    std::os::unix::fs::symlink(&outside, chat.ws.root.join("link.txt")).unwrap();
    let relative = "../../../../elsewhere/secret.txt";
    script(
        &chat,
        &[
            ("Read", json!({"file_path": outside})),
            ("Read", json!({"file_path": relative})),
            ("Read", json!({"file_path": chat.ws.root.join("link.txt")})),
            (
                "Grep",
                json!({"pattern": "TOP-SECRET", "path": outside.parent().unwrap()}),
            ),
        ],
    );
    // The harness answers requests it has no answer for with `null`: not a decision.
    let mut s = server(&chat, false, &[]);
    let (_, events) = turn(&mut s, "read it");
    done_completed(&events);
    let requests = chat.api.requests();
    assert_eq!(requests.len(), 5);
    for (i, r) in requests.iter().enumerate() {
        assert!(
            !r.raw_text().contains("TOP-SECRET-OUTSIDE-0451"),
            "request {i} carries the file"
        );
    }
    let lexical = |p: PathBuf| -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                c => out.push(c.as_os_str()),
            }
        }
        out
    };
    let shown = [
        outside.clone(),
        lexical(chat.ws.root.join(relative)),
        chat.ws.root.join("link.txt"),
        outside.parent().unwrap().to_path_buf(),
    ];
    for (i, path) in shown.iter().enumerate() {
        let m = last_message(&requests[i + 1]);
        assert_eq!(m["content"][0]["is_error"], json!(true), "call {i}: {m:#}");
        assert_eq!(
            result_text(&m["content"][0]["content"]),
            format!(
                "Claude requested permissions to read from {}, but you haven't granted it yet.",
                path.display()
            ),
            "call {i}"
        );
    }
    assert_eq!(
        server_requests(&s, "chat/permission").len(),
        4,
        "each was asked"
    );
    for e in &events {
        assert!(!e.to_string().contains("TOP-SECRET-OUTSIDE-0451"), "{e}");
    }
}

#[test]
fn the_key_never_reaches_a_tool_result_the_transcript_or_the_log() {
    let chat = Chat::on(project());
    chat.ws.write("deploy.env", &format!("API_KEY={KEY}\n"));
    script(
        &chat,
        &[
            (
                "Read",
                json!({"file_path": chat.ws.root.join("deploy.env")}),
            ),
            (
                "Bash",
                json!({"command": "echo \"var:${ANTHROPIC_API_KEY:+present}\"; cat deploy.env"}),
            ),
        ],
    );
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let (_, events) = turn(&mut s, "show the config");
    done_completed(&events);
    let requests = chat.api.requests();
    assert_eq!(requests.len(), 3);
    for (i, r) in requests.iter().enumerate() {
        assert!(
            !String::from_utf8_lossy(&r.body).contains(KEY),
            "request body {i} carries the key"
        );
    }
    let read = serde_json::to_string(&last_message(&requests[1])["content"][0]).unwrap();
    assert!(read.contains("API_KEY=[redacted]"), "{read}");
    let bash = serde_json::to_string(&last_message(&requests[2])["content"][0]).unwrap();
    assert!(bash.contains("var:"), "{bash}");
    assert!(
        !bash.contains("var:present"),
        "the key's variable reached Bash: {bash}"
    );
    assert!(bash.contains("API_KEY=[redacted]"), "{bash}");
    // Nothing the editor received (events, log lines) and no file written carries it.
    for m in &s.received {
        assert!(!m.to_string().contains(KEY), "{m}");
    }
    let _ = s.shutdown();
    for (p, text) in all_files(&chat.state) {
        assert!(!text.contains(KEY), "{} carries the key", p.display());
    }
}

fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&b).into_owned()));
            }
        }
    }
    assert!(!out.is_empty(), "nothing under {}", dir.display());
    out
}

/// The command line with no terminal to ask on (a new session, no controlling tty): Bash is
/// denied at once with a note, the model gets the error, and the command did not run.
#[test]
fn the_cli_denies_without_a_terminal_and_never_hangs() {
    let chat = Chat::on(project());
    script(&chat, &[("Bash", json!({"command": "touch ran.txt"}))]);
    let o = std::process::Command::new("setsid")
        .arg("--wait")
        .arg(bin())
        .args(["chat", "--no-git", "run it"])
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &chat.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &chat.ws.managed)
        .env("ANTHROPIC_BASE_URL", chat.api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("XDG_STATE_HOME", &chat.state)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("no terminal"), "{stderr}");
    assert!(stdout.contains("All done."), "{stdout}");
    assert!(!chat.ws.root.join("ran.txt").exists(), "the command ran");
    let m = last_message(&result_request(&chat, 0));
    assert_eq!(m["content"][0]["is_error"], json!(true), "{m:#}");
}

/// The command line on a terminal (a pseudo-terminal from util-linux `script`): the prompt is
/// shown there, `y` allows, and the command runs.
#[test]
fn the_cli_asks_on_the_terminal_and_runs_what_was_allowed() {
    let chat = Chat::on(project());
    script(&chat, &[("Bash", json!({"command": "touch ran.txt"}))]);
    let command = format!(
        "{} chat --no-git 'run it'",
        bin().display().to_string().replace('\'', "'\\''")
    );
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &chat.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &chat.ws.managed)
        .env("ANTHROPIC_BASE_URL", chat.api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("XDG_STATE_HOME", &chat.state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Typed ahead: the terminal keeps the line until the prompt reads it. `script`'s input stays
    // open until the command ended (its end would end the terminal session).
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"y\n").unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("Allow Bash: touch ran.txt?"), "{out}");
    assert!(
        chat.ws.root.join("ran.txt").exists(),
        "the allowed command did not run: {out}"
    );
    let m = last_message(&result_request(&chat, 0));
    assert_ne!(m["content"][0]["is_error"], json!(true), "{m:#}");
}

/// Issue 16, finding 1: after "allow for the session" on a harmless Write, the model edits
/// `.git/config` (a clean filter) and writes `.gitattributes` (`* filter=x`). Each of those
/// asks again, with a warning and no session answer offered; and when the user does allow them,
/// the filter that our git snapshot then runs (the editor's, after a file event, and the command
/// line's preview) never sees the key in its environment.
#[test]
fn files_that_run_code_always_ask_and_no_git_child_gets_the_key() {
    let chat = Chat::on(project());
    chat.ws.git_init();
    let out = chat.ws.dir.path().join("filter-env.txt");
    let filter = format!(
        "[filter \"x\"]\n\tclean = env > {} && cat\n[core]",
        out.display()
    );
    script(
        &chat,
        &[
            (
                "Write",
                json!({"file_path": chat.ws.root.join("notes.txt"), "content": "hello\n"}),
            ),
            (
                "Edit",
                json!({"file_path": chat.ws.root.join(".git/config"), "old_string": "[core]", "new_string": filter}),
            ),
            (
                "Write",
                json!({"file_path": chat.ws.root.join(".gitattributes"), "content": "* filter=x\n"}),
            ),
        ],
    );
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allowSession"}))],
    );
    let (_, events) = turn(&mut s, "set things up");
    done_completed(&events);
    let asked = server_requests(&s, "chat/permission");
    let summaries: Vec<&str> = asked
        .iter()
        .map(|r| r["params"]["summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        asked.len(),
        3,
        "every file that runs code asks: {summaries:?}"
    );
    assert!(asked[0]["params"]["sessionScope"].is_string());
    assert!(asked[0]["params"].get("warning").is_none());
    for r in &asked[1..] {
        let p = &r["params"];
        assert!(p.get("sessionScope").is_none(), "no session answer: {p}");
        let warning = p["warning"].as_str().unwrap_or_default();
        assert!(warning.contains("run commands"), "{p}");
    }
    assert!(
        asked[1]["params"]["warning"]
            .as_str()
            .unwrap()
            .contains("git directory")
    );
    assert!(chat.ws.root.join(".gitattributes").exists());

    // A tracked file changes: the editor's watcher reports it and the server takes a snapshot
    // (git's CLI engine: the attributes name a filter), which runs the filter.
    chat.ws.write("src/cart.ts", "export const cart = 2;\n");
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&chat.ws.path("src/cart.ts")), "type": 2}]}),
    );
    let _ = s.preview(None);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !out.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let env = std::fs::read_to_string(&out).expect("the allowed filter ran");
    assert!(!env.contains(KEY), "the server's git child had the key");
    assert!(!env.contains("ANTHROPIC_API_KEY="), "{env}");
    let _ = s.shutdown();

    // The command line's preview, run from a shell that holds the key.
    std::fs::remove_file(&out).unwrap();
    chat.ws.write("src/cart.ts", "export const cart = 3;\n");
    let o = std::process::Command::new(bin())
        .args(["preview", "--json"])
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &chat.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &chat.ws.managed)
        .env("GIT_CEILING_DIRECTORIES", chat.ws.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let env = std::fs::read_to_string(&out).expect("the filter ran for the preview");
    assert!(!env.contains(KEY), "the preview's git child had the key");
}

/// Issue 25, item 2: after "allow for the session" on an ordinary Write, the model turned a
/// folder into a git directory (`config` with `core.fsmonitor`, `HEAD`, `objects/`, `refs/`),
/// whatever its name, and wrote the editor and tool files that run code on the next open or
/// build; none was asked about. Now the write that makes a folder git's shape asks, with the
/// warning, and so does every later write into it and every file of the list.
#[test]
fn a_git_directory_by_shape_and_the_files_that_run_code_always_ask() {
    let chat = Chat::on(project());
    let w = |rel: &str, content: &str| {
        (
            "Write",
            json!({"file_path": chat.ws.root.join(rel), "content": content}),
        )
    };
    let files = [
        ".zed/settings.json",
        ".zed/tasks.json",
        ".vimrc",
        ".devcontainer/devcontainer.json",
        ".helix/languages.toml",
        ".idea/workspace.xml",
        "mise.toml",
        ".cargo/config.toml",
    ];
    let mut calls = vec![
        w("notes.txt", "hello\n"),
        w("cache/config", "[core]\n\tfsmonitor = touch pwned\n"),
        w("cache/HEAD", "ref: refs/heads/main\n"),
        w("cache/objects/info/packs", "\n"),
        w(
            "cache/refs/heads/main",
            "0000000000000000000000000000000000000000\n",
        ),
    ];
    calls.extend(files.iter().map(|f| w(f, "x\n")));
    script(&chat, &calls);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allowSession"}))],
    );
    let (_, events) = turn(&mut s, "set things up");
    done_completed(&events);
    let asked = server_requests(&s, "chat/permission");
    let summaries: Vec<String> = asked
        .iter()
        .map(|r| r["params"]["summary"].as_str().unwrap().to_string())
        .collect();
    // The first Write (allowed for the session) and the `config` written before any `HEAD` are
    // ordinary; everything after asks.
    assert_eq!(asked.len(), 1 + 3 + files.len(), "{summaries:#?}");
    assert!(summaries[1].contains("cache/HEAD"), "{summaries:#?}");
    assert!(
        asked[1]["params"]["warning"]
            .as_str()
            .unwrap()
            .contains("makes its folder a git directory"),
        "{}",
        asked[1]
    );
    for r in &asked[1..] {
        let p = &r["params"];
        assert!(p.get("sessionScope").is_none(), "no session answer: {p}");
        assert!(
            p["warning"]
                .as_str()
                .unwrap_or_default()
                .contains("run commands"),
            "{p}"
        );
    }
    for f in files {
        assert!(
            summaries.iter().any(|s| s.contains(f)),
            "{f}: {summaries:#?}"
        );
    }
}

/// Issue 16, finding 3: an approved Bash command read the key from `/proc/$PPID/environ` and
/// sent it out transformed (`rev`, `base64`), past the exact-string scrub. The server's own
/// environment block no longer holds it (the process re-executes itself without it), so there
/// is nothing to transform.
#[test]
fn the_key_is_not_in_the_servers_environment_for_a_command_to_read() {
    let chat = Chat::on(project());
    // Every ancestor's environment, the key's line reversed (the scrub matches the exact value
    // only).
    let command = "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null \
                   | grep -a 'API_KEY=' | rev; p=$(awk '{print $4}' /proc/$p/stat); done; echo end";
    script(&chat, &[("Bash", json!({"command": command}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let environ = std::fs::read(format!("/proc/{}/environ", s.pid())).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        !environ.contains(KEY),
        "the key is in the server's environment block"
    );
    assert!(!environ.contains("ANTHROPIC_API_KEY="), "{environ}");
    let (_, events) = turn(&mut s, "look around");
    done_completed(&events);
    let reversed: String = KEY.chars().rev().collect();
    let result = serde_json::to_string(&last_message(&result_request(&chat, 0))).unwrap();
    assert!(result.contains("end"), "the command ran: {result}");
    assert!(
        !result.contains(&reversed),
        "the key left reversed: {result}"
    );
    // The key still works: the requests carried it in their header.
    for r in chat.api.requests() {
        assert_eq!(r.header("x-api-key"), Some(KEY));
    }
}

/// The key as `tr 'A-Za-z' 'N-ZA-Mn-za-m'` prints it: a transform no scrub knows, so only the
/// sandbox can keep it from the model.
fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            c => c,
        })
        .collect()
}

/// The language server started by an "editor" that holds the key in its own environment
/// (a shell that runs the server and waits for it), as editors and users' shells do.
fn server_from_an_editor(chat: &Chat, answers: &[(&str, Value)], more: &[(&str, &str)]) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let editor = chat.ws.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\n'{}' \"$@\"\nexit $?\n", bin().display()),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let vars = chat.vars(more);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut s = chat.ws.spawn_with(&editor, &vars);
    for (m, v) in answers {
        s.answers.lock().unwrap().insert(m.to_string(), v.clone());
    }
    s.initialize_with(&chat.ws.root, json!({}), false);
    s
}

/// Issue 25: one approved Bash command walked up the process tree and read the key from the
/// process that started the server (the editor, the user's shell), and sent it on transformed.
/// Commands now run in the sandbox's own PID namespace: no process of the user is visible.
#[test]
fn an_approved_command_cannot_read_the_key_from_the_process_that_started_the_server() {
    let chat = Chat::on(project());
    // Every process's environment the command can see, and every ancestor's, the key's line in
    // rot13.
    let command = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null \
                   | grep -a 'API_KEY=' | tr 'A-Za-z' 'N-ZA-Mn-za-m'; done; \
                   p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null \
                   | grep -a 'API_KEY=' | tr 'A-Za-z' 'N-ZA-Mn-za-m'; p=$(awk '{print $4}' /proc/$p/stat); done; echo end";
    script(&chat, &[("Bash", json!({"command": command}))]);
    let mut s = server_from_an_editor(
        &chat,
        &[("chat/permission", json!({"decision": "allow"}))],
        &[],
    );
    // The editor holds the key: the attack has something to find.
    let environ = std::fs::read(format!("/proc/{}/environ", s.pid())).unwrap();
    assert!(String::from_utf8_lossy(&environ).contains(KEY));
    let (_, events) = turn(&mut s, "look around");
    done_completed(&events);
    let result = serde_json::to_string(&last_message(&result_request(&chat, 0))).unwrap();
    assert!(result.contains("end"), "the command ran: {result}");
    assert!(
        !result.contains(&rot13(KEY)),
        "the key left the editor's environment: {result}"
    );
    let _ = s.shutdown();
}

/// Issue 25: the sandbox's settings. A repository's `.claude/settings.json` and
/// `settings.local.json` cannot turn it off, run a command outside it nor open the network;
/// the user's own settings can.
#[test]
fn a_repository_cannot_loosen_the_sandbox_and_the_user_can() {
    let chat = Chat::on(project());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
        }
    });
    let outside = chat.ws.home.join("planted.txt");
    let loosen = json!({"sandbox": {
        "enabled": false,
        "excludedCommands": ["touch"],
        "network": {"allowedDomains": ["127.0.0.1"]},
        "filesystem": {"allowWrite": [chat.ws.home]}
    }});
    chat.ws.write(".claude/settings.json", &loosen.to_string());
    chat.ws
        .write(".claude/settings.local.json", &loosen.to_string());
    // Through the proxy when there is one, else straight to the port.
    let command = format!(
        "touch {}; echo wrote=$?; if [ -n \"$HTTP_PROXY\" ]; then p=${{HTTP_PROXY##*:}}; \
         exec 3<>/dev/tcp/127.0.0.1/$p && printf 'GET http://127.0.0.1:{port}/ HTTP/1.0\\r\\n\\r\\n' >&3 \
         && cat <&3; else (exec 3<>/dev/tcp/127.0.0.1/{port} && cat <&3) 2>/dev/null || echo no-network; fi",
        outside.display()
    );
    script(&chat, &[("Bash", json!({"command": command}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let (_, events) = turn(&mut s, "try");
    done_completed(&events);
    let warned = s.received.iter().any(|m| {
        m.to_string()
            .contains("a repository's settings cannot loosen the sandbox")
    });
    let _ = s.shutdown();
    assert!(warned, "the ignored keys are named in the log");
    let result = serde_json::to_string(&last_message(&result_request(&chat, 0))).unwrap();
    // (The command's `touch` may succeed in the sandbox's private `/tmp`, where the workspace's
    // parent folders are made to hold it; the home folder itself is untouched.)
    assert!(
        !outside.exists(),
        "a repository's settings opened the home folder: {result}"
    );
    assert!(result.contains("no-network"), "{result}");
    assert!(!result.contains("reached"), "{result}");

    // The same keys in the user's own settings: the network through the proxy, the folder.
    std::fs::remove_file(chat.ws.root.join(".claude/settings.json")).unwrap();
    std::fs::remove_file(chat.ws.root.join(".claude/settings.local.json")).unwrap();
    let user = json!({"sandbox": {
        "network": {"allowedDomains": ["127.0.0.1"]},
        "filesystem": {"allowWrite": [chat.ws.home]}
    }});
    std::fs::create_dir_all(chat.ws.home.join(".claude")).unwrap();
    std::fs::write(chat.ws.home.join(".claude/settings.json"), user.to_string()).unwrap();
    script(&chat, &[("Bash", json!({"command": command}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let (_, events) = turn(&mut s, "try again");
    done_completed(&events);
    let _ = s.shutdown();
    let requests = chat.api.requests();
    let result = serde_json::to_string(&last_message(&requests[requests.len() - 1])).unwrap();
    assert!(outside.exists(), "{result}");
    assert!(result.contains("wrote=0"), "{result}");
    assert!(result.contains("reached"), "{result}");
}

/// Forms of `KEY` a scrub must catch: itself, reversed, hex (both cases), and the middle of its
/// base64 in both alphabets at each alignment (what survives whatever surrounds it).
fn key_forms() -> Vec<String> {
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let mut forms = vec![
        KEY.to_string(),
        KEY.chars().rev().collect(),
        hex.clone(),
        hex.to_uppercase(),
    ];
    for prefix in ["", "x", "xy"] {
        for b64 in [
            b64_std(&format!("{prefix}{KEY}")),
            b64_url(&format!("{prefix}{KEY}")),
        ] {
            forms.push(b64[8..b64.len() - 8].to_string());
        }
    }
    forms
}

fn b64_std(s: &str) -> String {
    b64(
        s,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    )
}

fn b64_url(s: &str) -> String {
    b64(
        s,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    )
}

fn b64(s: &str, alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Issue 25, item 3: the model printed the key (split across deltas), passed it to a command and
/// read it base64-encoded from a file: the key, in any of those forms, reached the editor's
/// `chat/event`s and the permission prompt (`docs/protocol.md` promised otherwise).
#[test]
fn the_key_is_in_no_event_or_prompt_even_when_the_model_prints_it() {
    let chat = Chat::on(project());
    let reversed: String = KEY.chars().rev().collect();
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    chat.ws.write(
        "leak.txt",
        &format!(
            "std {}\nurl {}\n",
            b64_std(&format!("k={KEY}")),
            b64_url(&format!("xy{KEY}"))
        ),
    );
    chat.api.push(
        Turn::new()
            .text(&format!("Here it is: {KEY} and reversed {reversed}."))
            .piece(5)
            .tool_use(
                "toolu_0",
                "Bash",
                json!({"command": format!("echo {KEY} | wc -c")}),
            ),
    );
    chat.api.push(Turn::new().tool_use(
        "toolu_1",
        "Read",
        json!({"file_path": chat.ws.root.join("leak.txt")}),
    ));
    chat.api.push(
        Turn::new()
            .thinking(&format!("the key in hex is {hex}"), "sig")
            .text(&format!("Base64: {}", b64_std(KEY)))
            .piece(7),
    );
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let (_, events) = turn(&mut s, "print the key");
    done_completed(&events);
    let asked = server_requests(&s, "chat/permission");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].to_string().contains("[redacted]"),
        "the prompt shows where the key was: {}",
        asked[0]
    );
    let texts: String = events
        .iter()
        .filter(|e| e["kind"] == "text")
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect();
    assert!(
        texts.starts_with("Here it is: [redacted] and reversed [redacted]."),
        "{texts}"
    );
    let everything: Vec<String> = s
        .received
        .iter()
        .chain(asked.iter())
        .map(|m| m.to_string())
        .collect();
    for form in key_forms() {
        for m in &everything {
            assert!(!m.contains(&form), "{form} reached the editor: {m}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 16, finding 6: every size capped before it is allocated. Each attack runs against the
// real server; its peak memory (VmHWM) must stay under 300 MB and `context/preview` must answer
// within 100 ms after it.

const PEAK_LIMIT_MB: u64 = 300;

fn peak_mb(s: &Server) -> u64 {
    s.memory_kib().1 / 1024
}

/// How long `context/preview` takes to answer.
fn preview_ms(s: &mut Server) -> u128 {
    let t = std::time::Instant::now();
    let _ = s.preview(None);
    t.elapsed().as_millis()
}

/// The longest line of any transcript under `state`, in bytes.
fn longest_transcript_line(state: &Path) -> usize {
    all_files(state)
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
        .flat_map(|(_, t)| t.lines().map(str::len).collect::<Vec<_>>())
        .max()
        .unwrap_or(0)
}

fn report(name: &str, s: &mut Server, chat: &Chat, started: std::time::Instant) -> (u64, u128) {
    // The best of three: a busy machine delays one answer; an attack would delay them all.
    let preview = (0..3).map(|_| preview_ms(s)).min().unwrap();
    let peak = peak_mb(s);
    eprintln!(
        "{name}: {:.1} s, peak {peak} MB, preview {preview} ms, longest transcript line {} bytes",
        started.elapsed().as_secs_f64(),
        longest_transcript_line(&chat.state)
    );
    (peak, preview)
}

#[test]
fn an_endless_answer_stops_at_its_cap() {
    let chat = Chat::on(project());
    let start = Turn::new().text("x").frames();
    let delta = fake_anthropic::Frame::new(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "y".repeat(8192)}}),
    );
    // message_start, content_block_start, then deltas forever.
    chat.api
        .push(fake_anthropic::Reply::frames(start).endless_after(2, delta));
    let mut s = server(&chat, false, &[]);
    let t = std::time::Instant::now();
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let turn_id = s.call("chat/send", json!({"sessionId": id, "text": "talk"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    // The turn's events, with a watchdog: an answer that never stops must not hang the test.
    let mut events = Vec::new();
    loop {
        let e = s
            .notification("chat/event", |p| p["turnId"] == turn_id.as_str())
            .expect("an event");
        let done = e["kind"] == "done";
        if e["kind"] != "text" {
            events.push(e);
        }
        if done {
            break;
        }
        let peak = peak_mb(&s);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30) && peak < 2 * PEAK_LIMIT_MB,
            "the answer is still growing after {:.1} s, peak {peak} MB",
            t.elapsed().as_secs_f64()
        );
    }
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "failed", "{done}");
    let error = events.iter().find(|e| e["kind"] == "error").unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("max_tokens"),
        "{error}"
    );
    let (peak, preview) = report("endless answer", &mut s, &chat, t);
    assert!(peak < PEAK_LIMIT_MB, "peak {peak} MB");
    assert!(preview < 100, "preview took {preview} ms");
    // What arrived is kept, bounded: one line of about the cap.
    assert!(longest_transcript_line(&chat.state) < 4 << 20);
}

#[test]
fn a_replace_all_that_would_explode_is_refused_before_asking() {
    let chat = Chat::on(project());
    chat.ws.write("big.txt", &"ab\n".repeat(400_000));
    script(
        &chat,
        &[(
            "Edit",
            json!({"file_path": chat.ws.root.join("big.txt"), "old_string": "ab",
               "new_string": "z".repeat(1024), "replace_all": true}),
        )],
    );
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let t = std::time::Instant::now();
    let (_, events) = turn(&mut s, "grow it");
    done_completed(&events);
    let m = last_message(&result_request(&chat, 0));
    assert_eq!(m["content"][0]["is_error"], json!(true), "{m:#}");
    let text = m["content"][0]["content"].to_string();
    assert!(text.contains("Replacing every occurrence"), "{text}");
    assert!(text.contains("Nothing was changed"), "{text}");
    assert!(
        server_requests(&s, "chat/permission").is_empty(),
        "asked about an edit that cannot be made"
    );
    let (peak, preview) = report("replace_all", &mut s, &chat, t);
    assert!(peak < PEAK_LIMIT_MB, "peak {peak} MB");
    assert!(preview < 100, "preview took {preview} ms");
}

#[test]
fn grep_with_endless_context_keeps_only_what_it_shows() {
    let chat = Chat::on(project());
    // 40 MB of short lines after one match (each kept line costs far more than its bytes).
    let mut big = String::from("needle\n");
    big.push_str(&"x\n".repeat(20_000_000));
    chat.ws.write("big.log", &big);
    script(
        &chat,
        &[(
            "Grep",
            json!({"pattern": "needle", "path": chat.ws.root.join("big.log"),
               "output_mode": "content", "-A": 4294967295u64}),
        )],
    );
    let mut s = server(&chat, false, &[]);
    let t = std::time::Instant::now();
    let (_, events) = turn(&mut s, "search");
    done_completed(&events);
    let m = last_message(&result_request(&chat, 0));
    let text = m["content"][0]["content"].to_string();
    assert!(text.contains("needle"), "{text}");
    assert!(text.len() < 200_000, "{} bytes", text.len());
    let (peak, preview) = report("grep -A 4294967295", &mut s, &chat, t);
    assert!(peak < PEAK_LIMIT_MB, "peak {peak} MB");
    assert!(preview < 100, "preview took {preview} ms");
}

#[test]
fn thousands_of_reads_in_one_answer_are_bounded() {
    let chat = Chat::on(project());
    chat.ws
        .write("data.txt", &format!("{}\n", "d".repeat(1000)).repeat(100));
    let file = chat.ws.root.join("data.txt");
    let mut turn_ = Turn::new();
    for i in 0..5000 {
        turn_ = turn_.tool_use(&format!("toolu_{i}"), "Read", json!({"file_path": file}));
    }
    chat.api.push(turn_.piece(4096));
    chat.api.push(Turn::new().text("All done."));
    // No compaction: the results alone go to the next request.
    let mut s = server_with(&chat, false, &[], &[("DISABLE_AUTO_COMPACT", "1")]);
    let t = std::time::Instant::now();
    let (_, events) = turn(&mut s, "read it all");
    // The results are more than a request may hold (no compaction here): the turn stops there.
    assert_eq!(events.last().unwrap()["kind"], "done");
    let results: Vec<Value> = all_files(&chat.state)
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
        .flat_map(|(_, t)| t.lines().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|r| r["message"]["content"].as_array().cloned())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 5000, "every call is answered");
    let not_run = results
        .iter()
        .filter(|r| r["content"].to_string().contains("Not run"))
        .count();
    assert!(not_run >= 4900, "{not_run} not run");
    let (peak, preview) = report("5,000 Reads", &mut s, &chat, t);
    assert!(longest_transcript_line(&chat.state) < 16 << 20);
    assert!(peak < PEAK_LIMIT_MB, "peak {peak} MB");
    assert!(preview < 100, "preview took {preview} ms");
}

#[test]
fn chat_list_answers_a_page() {
    let chat = Chat::on(project());
    let mut s = server(&chat, false, &[]);
    // 2,000 sessions of this folder, each starting with a 20 KB message.
    let slug: String = chat
        .ws
        .root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = chat.state.join("claude-context/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let prompt = "p".repeat(20_000);
    for i in 0..2000 {
        let id = format!("00000000-0000-4000-8000-{i:012}");
        let line = json!({"type": "user", "uuid": format!("u{i}"), "parentUuid": null,
            "sessionId": id, "timestamp": format!("2026-01-01T00:00:{:02}.000Z", i % 60),
            "cwd": chat.ws.root, "message": {"role": "user", "content": prompt}});
        std::fs::write(dir.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    }
    let t = std::time::Instant::now();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    let mut largest = 0;
    loop {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        params["limit"] = json!(1000);
        let r = s.call("chat/list", params);
        largest = largest.max(r.to_string().len());
        for e in r["sessions"].as_array().unwrap() {
            assert!(seen.insert(e["sessionId"].as_str().unwrap().to_string()));
        }
        match r["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 2000);
    eprintln!(
        "chat/list of 2,000 sessions: {:.1} s, largest answer {largest} bytes, peak {} MB",
        t.elapsed().as_secs_f64(),
        peak_mb(&s)
    );
    assert!(largest < 2 << 20, "an answer of {largest} bytes");
}

#[test]
fn an_edit_of_an_open_buffer_is_linear() {
    let chat = Chat::on(project());
    let text = "ab cd ".repeat(80_000);
    let file = chat.ws.write("open.txt", &text);
    script(
        &chat,
        &[(
            "Edit",
            json!({"file_path": file, "old_string": "ab", "new_string": "xy", "replace_all": true}),
        )],
    );
    let mut s = server(
        &chat,
        true,
        &[
            ("chat/permission", json!({"decision": "allow"})),
            ("workspace/applyEdit", json!({"applied": true})),
        ],
    );
    s.open(&file, &text);
    let t = std::time::Instant::now();
    let cpu = cpu_time(&s);
    let (_, events) = turn(&mut s, "rename");
    done_completed(&events);
    // The server's own CPU time, not the wall clock: a loaded machine stretches the second,
    // a quadratic edit would take minutes of CPU either way.
    let took = cpu_time(&s) - cpu;
    let edits = server_requests(&s, "workspace/applyEdit");
    assert_eq!(edits.len(), 1);
    let (peak, _) = report("80,000 edits of an open buffer", &mut s, &chat, t);
    eprintln!("80,000 edits of an open buffer: {took:?} of the server's CPU");
    assert!(took < std::time::Duration::from_secs(10), "{took:?} of CPU");
    assert!(peak < PEAK_LIMIT_MB, "peak {peak} MB");
}

/// The CPU time (user and system) the server's process has used so far (Linux: `/proc`, in the
/// kernel's 100 ticks a second).
fn cpu_time(s: &Server) -> std::time::Duration {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", s.pid())).unwrap_or_default();
    // The fields after the command's name (in parentheses, which may hold blanks): utime and
    // stime are the 12th and 13th of them.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    std::time::Duration::from_millis(ticks * 10)
}

/// Issue 16, finding 2: the command line prints nothing the model wrote raw. A Bash command
/// holding `ESC[28D ESC[K` (cursor back, erase) would display as "Allow Bash: git status?" while
/// `touch PWNED` runs; an answer holding OSC 52 (clipboard write) and OSC 0 (window title) would
/// drive the terminal. On a real pseudo-terminal, every such byte shows as text.
#[test]
fn the_cli_prints_no_escape_sequence_the_model_wrote() {
    let chat = Chat::on(project());
    let spoof = "touch PWNED \u{1b}[28D\u{1b}[Kgit status";
    // The text streams before the prompt; the user's `n` then ends the turn (as the reference
    // CLI's rejection does).
    chat.api.push(
        Turn::new()
            .text("Done.\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;owned\u{7}\r\u{1b}[2Kline two\nend")
            .tool_use("toolu_0", "Bash", json!({"command": spoof})),
    );
    let command = format!(
        "{} chat --no-git 'go'",
        bin().display().to_string().replace('\'', "'\\''")
    );
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &chat.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &chat.ws.managed)
        .env("ANTHROPIC_BASE_URL", chat.api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .env("XDG_STATE_HOME", &chat.state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"n\n").unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("touch PWNED \\033[28D\\033[Kgit status"),
        "the prompt must show what runs: {out}"
    );
    assert!(out.contains("\\033]52;c;"), "{out}");
    assert!(
        out.contains("line two\nend") || out.contains("line two\r\nend"),
        "{out}"
    );
    assert!(
        !out.contains('\u{1b}'),
        "an escape sequence reached the terminal: {out:?}"
    );
    assert!(!chat.ws.root.join("PWNED").exists());
}

/// Issue 16, finding 7: one writer per session. A second server resuming a session another one
/// has open gets a clear error, instead of both appending and a resume dropping one's messages.
#[test]
fn a_session_open_in_one_server_cannot_be_resumed_in_another() {
    let chat = Chat::on(project());
    chat.api.push(Turn::new().text("First answer."));
    let mut a = server(&chat, false, &[]);
    let (id, events) = turn(&mut a, "hello");
    done_completed(&events);
    let mut b = server(&chat, false, &[]);
    let r = b.request("chat/resume", json!({"sessionId": id}));
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("open in another"), "{r}");
    // Once the first server is gone, the session resumes.
    let _ = a.shutdown();
    let r = b.call("chat/resume", json!({"sessionId": id}));
    assert_eq!(r["sessionId"], id.as_str());
}

/// Issue 16, finding 7: on a full disk, an answer that could not be written is not reported
/// completed (it is not part of the conversation), and a resume while the disk is still full
/// works. Needs a small tmpfs, so root; elsewhere the test says it was skipped.
#[test]
fn a_full_disk_loses_no_answer_reported_completed_and_resume_still_works() {
    let chat = Chat::on(project());
    let mount = chat.ws.dir.path().join("small");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mount)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    let state = mount.to_string_lossy().to_string();
    chat.api.push(Turn::new().text(&"x".repeat(100_000)));
    let mut s = server_with(&chat, false, &[], &[("XDG_STATE_HOME", &state)]);
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let turn_id = s.call("chat/send", json!({"sessionId": id, "text": "hello"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    // The message is on disk; now the disk fills up while the answer streams.
    let filler = mount.join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 256 * 1024]);
    let events = s.turn_events(&turn_id);
    let done = events.last().unwrap();
    assert_ne!(done["outcome"], "completed", "{events:#?}");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "error" && e["message"].to_string().contains("transcript")),
        "{events:#?}"
    );
    let _ = s.shutdown();
    // Still full: resuming works, and the history has the message without the lost answer.
    let mut b = server_with(&chat, false, &[], &[("XDG_STATE_HOME", &state)]);
    let r = b.call("chat/resume", json!({"sessionId": id}));
    let messages = r["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{r}");
    assert_eq!(messages[0]["text"], "hello");
    std::fs::remove_file(&filler).unwrap();
    let _ = b.shutdown();
}

/// Issue 16, findings 5 and 8: settings and requests that would move the key or the memory, or
/// open the disk to the model. `chat/new` with `folder: "file:///"` (the model could then read
/// `/etc/hostname` without a prompt), a `chat.baseUrl` of plain http to another host (the key in
/// clear text), a `memoryDir` inside `~/.claude/rules` (memories as global rules): each is
/// refused with a message that says why.
#[test]
fn settings_and_folders_that_would_leak_are_refused() {
    let chat = Chat::on(project());
    let mut s = server(&chat, false, &[]);
    let r = s.request("chat/new", json!({"folder": "file:///"}));
    let m = r["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(m.contains("not one of the workspace folders"), "{r}");
    let ok = s.call("chat/new", json!({"folder": uri(&chat.ws.root)}));
    assert!(ok["sessionId"].is_string());
    let _ = s.shutdown();

    let with = |settings: Value| {
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
        *s.settings.lock().unwrap() = settings.clone();
        s.initialize_with(&chat.ws.root, settings, false);
        s
    };
    let mut s = with(json!({"chat": {"baseUrl": "http://evil.example.com"}}));
    let r = s.request("chat/new", json!({}));
    let m = r["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(m.contains("clear text"), "{r}");
    let _ = s.shutdown();

    let rules = chat.ws.home.join(".claude/rules");
    let mut s = with(json!({"memoryDir": rules}));
    let shown = s
        .notification("window/showMessage", |p| {
            p["message"].to_string().contains("memoryDir")
        })
        .expect("the refusal is shown");
    assert!(
        shown["message"].to_string().contains("instructions"),
        "{shown}"
    );
}

/// Issue 16, finding 8: a background job started with `setsid` (it leaves the command's process
/// group) survived the Bash tool's kill. Commands now run under a child subreaper that ends
/// every descendant with the call.
#[test]
fn a_setsid_background_job_does_not_outlive_the_bash_call() {
    let chat = Chat::on(project());
    // Found by its command line: in the sandbox's PID namespace `$$` is not the machine's pid.
    let marker = "60.201";
    let command = format!(
        "setsid sh -c 'exec sleep {marker}' > /dev/null 2>&1 < /dev/null & sleep 0.3; echo started"
    );
    script(&chat, &[("Bash", json!({"command": command}))]);
    let mut s = server(
        &chat,
        false,
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while std::time::Instant::now() < end && !seen.load(std::sync::atomic::Ordering::SeqCst)
            {
                if !sleeping(marker).is_empty() {
                    seen.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let (_, events) = turn(&mut s, "start it");
    done_completed(&events);
    let _ = watcher.join();
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        "the job never ran"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !sleeping(marker).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let still = sleeping(marker);
    for pid in &still {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        still.is_empty(),
        "the setsid job {still:?} outlived the call"
    );
}

/// The machine's pids of the live processes whose command line is `sleep <marker>`.
fn sleeping(marker: &str) -> Vec<u32> {
    let want = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z');
            (cmdline == want.as_bytes() && !zombie).then_some(pid)
        })
        .collect()
}
