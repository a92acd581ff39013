//! Hooks in a chat, end to end: the real binary (the language server and the command line), a
//! real project in a temp dir whose settings configure hooks, a hook script that does what each
//! test tells it (print, exit 2, sleep, block once) and logs what it read, and the fake Anthropic
//! API on 127.0.0.1. Each test is one or more of the conformance checks of
//! `../shared/spec/hooks-agents-styles.md` section 15, asserted on the requests the API recorded
//! (byte for byte where the spec quotes the text).
//!
//! The hook command is `/usr/bin/python3 <fx>/bin/hk.py NAME`, as in the reference's fixtures:
//! `<fx>/beh/NAME.json` says what it does (`stdout`, `stderr`, `exit`, `sleep` before printing,
//! `sleep_after` after it, or `steps`, one such object per call), and it writes what it read to
//! `<fx>/log/NAME.<n>.stdin` and its environment to `NAME.<n>.env.json` (`env_line`: a line it
//! appends to its `CLAUDE_ENV_FILE`). The hooks run in the sandbox Bash runs in (issue 25), so
//! the user's settings let them write the fixtures' folder (`sandbox.filesystem.allowWrite`).
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY, new_session};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fake_anthropic::Turn;
use harness::Server;
use serde_json::{Value, json};

/// A project in a folder its user trusted in Claude Code (`~/.claude.json`), hooks installed.
fn trusted() -> Chat {
    let fx = untrusted();
    fx.trust();
    fx
}

/// A project nobody trusted yet, hooks installed.
fn untrusted() -> Chat {
    let fx = Chat::new();
    fx.install_hooks();
    fx
}

/// The language server, not initialised; `answers`: what the client answers, by method.
fn server(fx: &Chat, answers: &[(&str, Value)]) -> Server {
    fx.spawn(answers, &[])
}

/// A new chat session (`model`: the settings' model, default the reference's).
fn session(fx: &Chat, s: &mut Server, model: Option<&str>) -> String {
    let mut options = json!({});
    if let Some(m) = model {
        options = json!({"model": m});
    }
    *s.settings.lock().unwrap() = options.clone();
    s.initialize(&fx.ws.root, options);
    new_session(s)
}

/// `system[1]`'s environment section: from the first hook text or `# Environment` to the date.
fn environment(req: &Value) -> String {
    req["system"][1]["text"].as_str().unwrap().to_string()
}

/// A text block's or a tool result's text.
fn text_of(block: &Value) -> String {
    if let Some(t) = block["text"].as_str() {
        return t.to_string();
    }
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

fn last_message(req: &Value) -> Value {
    req["messages"].as_array().unwrap().last().unwrap().clone()
}

fn blocks(message: &Value) -> Vec<Value> {
    message["content"].as_array().cloned().unwrap_or_default()
}

fn bash(id: &str, command: &str) -> Turn {
    Turn::new().tool_use(id, "Bash", json!({"command": command}))
}

/// The whole of every request, for "appears nowhere".
fn all_text(reqs: &[Value]) -> String {
    reqs.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// An object's keys, in the order they were written.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn permission_allowed() -> (&'static str, Value) {
    ("chat/permission", json!({"decision": "allow"}))
}

/// Check 1 and 2 (h1/plain): SessionStart's and UserPromptSubmit's plain output in the
/// environment section, first and last before the date; PostToolUse's and Stop's plain output
/// nowhere; the tool ran. Also what every hook reads and its environment (section 2).
#[test]
fn plain_output_lands_in_the_environment_section_and_nowhere_else() {
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
        ("PreToolUse", Some("Bash"), "PRE"),
        ("PostToolUse", Some("Bash"), "POST"),
        ("Stop", None, "STOP"),
    ]));
    fx.behave(
        "SS",
        json!({"stdout": "SS-STDOUT-MARKER line1\nline2\n", "env_line": "export FROM_SS=1"}),
    );
    fx.behave("UPS", json!({"stdout": "UPS-STDOUT-MARKER line1\nline2\n"}));
    fx.behave("POST", json!({"stdout": "POST-STDOUT-MARKER\n"}));
    fx.behave("STOP", json!({"stdout": "STOP-STDOUT-MARKER\n"}));
    fx.api.push(bash("toolu_1", "echo BASH-RAN-MARKER"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = fx.spawn(&[permission_allowed()], &[("SOME_KEYLESS_VAR", "kept")]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 2);
    let env = environment(&reqs[0]);
    assert!(
        env.contains(
            "\n\nSessionStart:startup hook success: SS-STDOUT-MARKER line1\nline2\n\n# Environment\n"
        ),
        "{env}"
    );
    let date = env.rfind("\n\nToday's date is ").unwrap();
    assert!(
        env[..date].ends_with("\n\nUserPromptSubmit hook success: UPS-STDOUT-MARKER line1\nline2"),
        "{env}"
    );
    // The same system prompt on the second request (it is the session's).
    assert_eq!(reqs[1]["system"], reqs[0]["system"]);
    // Check 2: PostToolUse and Stop plain output reach no request; the tool ran.
    let all = all_text(&reqs);
    assert!(!all.contains("POST-STDOUT-MARKER") && !all.contains("STOP-STDOUT-MARKER"));
    let results = blocks(&last_message(&reqs[1]));
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(text_of(&results[0]).trim_end(), "BASH-RAN-MARKER");
    // What they read: one line of JSON, keys in the measured order.
    let ss = fx.hook_stdin_text("SS", 0);
    assert!(!ss.trim_end().contains('\n'));
    let transcript = s.call("chat/list", json!({}))["sessions"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let cwd = fx.ws.root.display().to_string();
    assert_eq!(
        ss,
        json!({"session_id": id, "transcript_path": transcript, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}).to_string()
    );
    let ups = fx.hook_stdin("UPS", 0);
    assert_eq!(
        keys(&ups),
        [
            "session_id",
            "transcript_path",
            "cwd",
            "prompt_id",
            "permission_mode",
            "hook_event_name",
            "prompt"
        ]
    );
    assert_eq!(ups["prompt"], "hello");
    let pre = fx.hook_stdin("PRE", 0);
    assert_eq!(
        pre["tool_input"],
        json!({"command": "echo BASH-RAN-MARKER"})
    );
    assert_eq!(pre["tool_use_id"], "toolu_1");
    assert_eq!(pre["effort"], json!({"level": "medium"}));
    assert_eq!(pre["prompt_id"], ups["prompt_id"]);
    let post = fx.hook_stdin("POST", 0);
    assert_eq!(
        keys(&post),
        [
            "session_id",
            "transcript_path",
            "cwd",
            "prompt_id",
            "permission_mode",
            "effort",
            "hook_event_name",
            "tool_name",
            "tool_input",
            "tool_response",
            "tool_use_id",
            "duration_ms"
        ]
    );
    assert_eq!(post["tool_response"]["stdout"], "BASH-RAN-MARKER\n");
    let stop = fx.hook_stdin("STOP", 0);
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(stop["last_assistant_message"], "Done.");
    // Their environment: the session's variables, the server's own (a key's never), the folder.
    let env = fx.hook_env("SS", 0);
    assert_eq!(env["CLAUDE_PROJECT_DIR"], cwd.as_str());
    assert_eq!(env["CLAUDECODE"], "1");
    assert_eq!(env["CLAUDE_CODE_SESSION_ID"], id.as_str());
    let env_file = env["CLAUDE_ENV_FILE"].as_str().unwrap();
    assert!(env_file.ends_with("sessionstart-hook-0.sh"));
    // Its folder is writable in the sandbox the hook runs in (outside the workspace).
    assert_eq!(
        std::fs::read_to_string(env_file).unwrap(),
        "export FROM_SS=1\n"
    );
    assert_eq!(env["SOME_KEYLESS_VAR"], "kept");
    assert!(env.get("ANTHROPIC_API_KEY").is_none(), "{env}");
    assert!(!env.to_string().contains(KEY));
    assert!(fx.hook_env("UPS", 0).get("CLAUDE_ENV_FILE").is_none());
    assert_eq!(fx.hook_env("PRE", 0)["CLAUDE_EFFORT"], "medium");
    assert_eq!(
        std::fs::read_to_string(fx.hooks.join("log/PRE.0.cwd")).unwrap(),
        cwd
    );
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

/// The hooks of h2/json: SessionStart, UserPromptSubmit, PreToolUse (allow with a new input,
/// context), PostToolUse (context), each also saying `systemMessage`.
fn json_hooks(fx: &Chat) {
    fx.project_settings(fx.hooks_settings(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
        ("PreToolUse", Some("Bash"), "PRE"),
        ("PostToolUse", Some("Bash"), "POST"),
    ]));
    let ctx = |event: &str, marker: &str| json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": marker}, "systemMessage": "SYSMSG"}).to_string()});
    fx.behave("SS", ctx("SessionStart", "SS-JSON-CTX-MARKER"));
    fx.behave("UPS", ctx("UserPromptSubmit", "UPS-JSON-CTX-MARKER"));
    fx.behave(
        "PRE",
        json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "PRE-REASON-MARKER", "updatedInput": {"command": "echo UPDATED-INPUT-MARKER"}, "additionalContext": "PRE-CTX-MARKER"}, "systemMessage": "SYSMSG"}).to_string()}),
    );
    fx.behave("POST", ctx("PostToolUse", "POST-JSON-CTX-MARKER"));
    fx.api.push(bash("toolu_1", "echo BASH-RAN-MARKER"));
    fx.api.push(Turn::new().text("Done."));
}

/// Checks 3 and 4 (h2/json): JSON contexts in the environment section, first and before the
/// date; after the tool result one `system` message (ours: one `<system-reminder>` block) with
/// the PreToolUse and PostToolUse contexts; the tool ran with the hook's input and without a
/// prompt; `systemMessage` reaches no request (the editor shows it).
#[test]
fn json_contexts_and_an_allow_with_a_new_input() {
    let fx = trusted();
    json_hooks(&fx);
    // The user would deny: the hook's allow means nobody is asked.
    let mut s = server(&fx, &[("chat/permission", json!({"decision": "deny"}))]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert!(server_requests(&s, "chat/permission").is_empty());
    let reqs = fx.requests();
    let env = environment(&reqs[0]);
    assert!(
        env.contains(
            "\n\nSessionStart hook additional context: SS-JSON-CTX-MARKER\n\n# Environment\n"
        ),
        "{env}"
    );
    let date = env.rfind("\n\nToday's date is ").unwrap();
    assert!(
        env[..date].ends_with("\n\nUserPromptSubmit hook additional context: UPS-JSON-CTX-MARKER"),
        "{env}"
    );
    let m = blocks(&last_message(&reqs[1]));
    assert_eq!(m.len(), 2, "{m:#?}");
    assert_eq!(m[0]["type"], "tool_result");
    assert_eq!(text_of(&m[0]).trim_end(), "UPDATED-INPUT-MARKER");
    assert_eq!(
        text_of(&m[1]),
        "<system-reminder>\nPreToolUse:Bash hook additional context: PRE-CTX-MARKER\n\nPostToolUse:Bash hook additional context: POST-JSON-CTX-MARKER\n</system-reminder>"
    );
    let all = all_text(&reqs);
    assert!(!all.contains("SYSMSG") && !all.contains("PRE-REASON-MARKER"));
    // The editor sees what the hooks did: the allow, the contexts, the messages.
    let hooks: Vec<&Value> = events.iter().filter(|e| e["kind"] == "hook").collect();
    assert!(
        hooks
            .iter()
            .any(|h| h["event"] == "PreToolUse" && h["outcome"] == "allowed"),
        "{hooks:#?}"
    );
    assert_eq!(
        hooks
            .iter()
            .filter(|h| h["outcome"] == "message" && h["text"] == "SYSMSG")
            .count(),
        4,
        "{hooks:#?}"
    );
}

/// Check 5 (h2/json_sonnet): under a model of the other layout, each text is its own
/// `<system-reminder>` block: SessionStart first in the first user message, UserPromptSubmit
/// next, the tool hooks' right after the tool result.
#[test]
fn the_reminder_layout_gives_each_text_its_own_block() {
    let fx = trusted();
    json_hooks(&fx);
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, Some("claude-sonnet-4-5"));
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = fx.requests();
    assert_eq!(reqs[0]["model"], "claude-sonnet-4-5");
    assert!(!environment(&reqs[0]).contains("JSON-CTX-MARKER"));
    let first = blocks(&reqs[0]["messages"][0]);
    assert_eq!(
        text_of(&first[0]),
        "<system-reminder>\nSessionStart hook additional context: SS-JSON-CTX-MARKER\n</system-reminder>"
    );
    assert_eq!(
        text_of(&first[1]),
        "<system-reminder>\nUserPromptSubmit hook additional context: UPS-JSON-CTX-MARKER\n</system-reminder>"
    );
    assert!(
        text_of(&first[2]).contains("Contents of "),
        "the instructions follow"
    );
    assert_eq!(text_of(first.last().unwrap()), "hello");
    let m = blocks(&last_message(&reqs[1]));
    assert_eq!(m.len(), 3, "{m:#?}");
    assert_eq!(text_of(&m[0]).trim_end(), "UPDATED-INPUT-MARKER");
    assert_eq!(
        text_of(&m[1]),
        "<system-reminder>\nPreToolUse:Bash hook additional context: PRE-CTX-MARKER\n</system-reminder>"
    );
    assert_eq!(
        text_of(&m[2]),
        "<system-reminder>\nPostToolUse:Bash hook additional context: POST-JSON-CTX-MARKER\n</system-reminder>"
    );
}

/// What one hooked Bash call came to.
struct Called {
    fx: Chat,
    /// The `toolResult` event (`content`, `isError`).
    result: Value,
    /// `ran.txt` exists: the command ran.
    ran: bool,
    /// The `chat/permission` requests the user got.
    asked: Vec<Value>,
    /// The requests the API got in this turn.
    requests: usize,
}

impl Called {
    fn text(&self) -> String {
        self.result["content"]
            .as_str()
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// Hook `name` ran (its stdin was logged).
    fn hook_ran(&self, name: &str) -> bool {
        self.fx
            .hooks
            .join("log")
            .join(format!("{name}.0.stdin"))
            .exists()
    }
}

/// One session whose project settings are `settings` (hooks with `fx.hooks`, and whatever
/// `permissions` it adds), hooks behaving as `behs`, a Bash call of `command`, the user
/// answering `answer` (`None`: nobody answers, as in `-p`).
fn hooked_bash(
    settings: impl Fn(&Chat) -> Value,
    behs: &[(&str, Value)],
    command: &str,
    answer: Option<&str>,
) -> Called {
    let fx = trusted();
    fx.project_settings(settings(&fx));
    for (name, beh) in behs {
        fx.behave(name, beh.clone());
    }
    fx.api.push(bash("toolu_1", command));
    fx.api.push(Turn::new().text("Done."));
    let answers: Vec<(&str, Value)> = answer
        .map(|a| vec![("chat/permission", json!({"decision": a}))])
        .unwrap_or_default();
    let mut s = server(&fx, &answers);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "go");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let result = events
        .iter()
        .find(|e| e["kind"] == "toolResult")
        .cloned()
        .unwrap_or_else(|| panic!("no tool result: {events:#?}"));
    let asked = server_requests(&s, "chat/permission");
    let requests = fx.requests().len();
    let ran = fx.ws.root.join("ran.txt").exists();
    Called {
        fx,
        result,
        ran,
        asked,
        requests,
    }
}

/// A PreToolUse hook (`PRE`) on Bash behaving as `beh`, a Bash call that would create a file:
/// what came of it.
fn pre_tool_use(beh: Value, answer: Option<&str>) -> Called {
    hooked_bash(
        |fx| fx.hooks_settings(&[("PreToolUse", Some("Bash"), "PRE")]),
        &[("PRE", beh)],
        "touch ran.txt && echo BASH-RAN-MARKER",
        answer,
    )
}

/// PreToolUse's JSON decision, with `reason`.
fn decide(decision: &str, reason: &str) -> Value {
    json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}}).to_string()})
}

/// Check 6 (h3/deny, h3/exit2, h3/ask_norule, h3/exit1, h3/badjson, legacy block): what the
/// tool result is, and whether the tool ran.
#[test]
fn pre_tool_use_denies_asks_and_lets_through() {
    let c = pre_tool_use(decide("deny", "PRE-DENY-REASON-MARKER"), Some("allow"));
    assert_eq!(c.result["isError"], true);
    assert_eq!(
        c.text(),
        "PreToolUse:Bash hook error: PRE-DENY-REASON-MARKER"
    );
    assert!(
        !c.ran && c.asked.is_empty(),
        "denied: not run, nobody asked"
    );
    assert_eq!(
        c.requests, 2,
        "a hook's denial is no rejection: the turn goes on"
    );

    let legacy = json!({"stdout": json!({"decision": "block", "reason": "PRE-LEGACY-BLOCK-REASON-MARKER"}).to_string()});
    let c = pre_tool_use(legacy, Some("allow"));
    assert_eq!(
        c.text(),
        "PreToolUse:Bash hook error: PRE-LEGACY-BLOCK-REASON-MARKER"
    );
    assert!(!c.ran);

    let exit2 =
        json!({"stdout": "ignored", "stderr": "PRE-EXIT2-STDERR-MARKER line1\nline2\n", "exit": 2});
    let c = pre_tool_use(exit2, Some("allow"));
    assert_eq!(c.result["isError"], true);
    let t = c.result["content"].as_str().unwrap();
    assert!(
        t.starts_with("PreToolUse:Bash hook error: [/usr/bin/python3 ")
            && t.ends_with("/bin/hk.py PRE]: PRE-EXIT2-STDERR-MARKER line1\nline2\n"),
        "{t:?}"
    );
    assert!(!c.ran);

    // Ask, nobody to answer (the reference's -p, h3/ask_norule): the reason alone.
    let ask = decide("ask", "PRE-ASK-REASON-MARKER");
    let c = pre_tool_use(ask.clone(), None);
    assert_eq!(c.result["isError"], true);
    assert_eq!(c.text(), "PRE-ASK-REASON-MARKER");
    assert!(!c.ran && c.asked.len() == 1);
    assert_eq!(c.requests, 2);
    // The user is asked, with the hook's reason; a rejection is the user's: the turn stops.
    let c = pre_tool_use(ask.clone(), Some("deny"));
    assert_eq!(
        c.asked[0]["params"]["reason"],
        "a PreToolUse hook asks: PRE-ASK-REASON-MARKER"
    );
    assert!(
        c.text().starts_with("The user doesn't want to proceed"),
        "{}",
        c.text()
    );
    assert!(!c.ran);
    assert_eq!(c.requests, 1, "a rejection ends the turn");
    // Allowed: the tool runs, and its own prompt is not asked again.
    let c = pre_tool_use(ask, Some("allow"));
    assert_eq!(c.text(), "BASH-RAN-MARKER");
    assert!(
        c.ran && c.asked.len() == 1,
        "one prompt, not two ({:?})",
        c.asked
    );

    // Exit 1, and output that is not JSON: the tool's own prompt decides, and it runs.
    for beh in [
        json!({"stdout": "PRE-EXIT1-STDOUT", "stderr": "PRE-EXIT1-STDERR", "exit": 1}),
        json!({"stdout": "not json {"}),
    ] {
        let c = pre_tool_use(beh, Some("allow"));
        assert_eq!(c.text(), "BASH-RAN-MARKER");
        assert!(c.ran && c.asked.len() == 1);
    }
}

/// Hooks meet the permission rules as Claude Code's do: a PreToolUse `allow` skips the question
/// no rule settled but never a deny rule, nor an ask rule's question; its `ask` asks even what
/// an allow rule runs; `updatedInput` is what the rules judge; PermissionRequest hooks run only
/// when a question is asked, and answer it.
#[test]
fn hook_decisions_meet_the_permission_rules() {
    let touch = "touch ran.txt && echo BASH-RAN-MARKER";
    let with = |rules: Value| {
        move |fx: &Chat| {
            let mut v = fx.hooks_settings(&[
                ("PreToolUse", Some("Bash"), "PRE"),
                ("PermissionRequest", Some("Bash"), "PERM"),
            ]);
            v["permissions"] = rules.clone();
            v
        }
    };
    let allow = decide("allow", "PRE-ALLOW-REASON");
    let quiet = json!({"stdout": ""});

    // Allow, no rule: runs unasked; no question, so PermissionRequest does not run.
    let c = hooked_bash(
        with(json!({})),
        &[("PRE", allow.clone()), ("PERM", quiet.clone())],
        touch,
        Some("deny"),
    );
    assert_eq!(c.text(), "BASH-RAN-MARKER");
    assert!(c.ran && c.asked.is_empty());
    assert!(c.hook_ran("PRE") && !c.hook_ran("PERM"));
    assert_eq!(c.fx.hook_stdin("PRE", 0)["permission_mode"], "default");

    // Allow meets a deny rule: still denied, with the rule's text; nobody asked.
    let c = hooked_bash(
        with(json!({"deny": ["Bash(touch:*)"]})),
        &[("PRE", allow.clone()), ("PERM", quiet.clone())],
        touch,
        Some("allow"),
    );
    assert_eq!(c.result["isError"], true);
    assert_eq!(
        c.text(),
        format!("Permission to use Bash with command {touch} has been denied.")
    );
    assert!(!c.ran && c.asked.is_empty() && !c.hook_ran("PERM"));

    // Allow meets an ask rule: the user is still asked (PermissionRequest first).
    let c = hooked_bash(
        with(json!({"ask": ["Bash(touch:*)"]})),
        &[("PRE", allow.clone()), ("PERM", quiet.clone())],
        touch,
        Some("deny"),
    );
    assert_eq!(c.asked.len(), 1);
    assert!(c.hook_ran("PERM"));
    assert!(!c.ran, "the user said no");

    // Allow meets plan mode: the mode's refusal stands; the hook was told the mode.
    let c = hooked_bash(
        with(json!({"defaultMode": "plan"})),
        &[("PRE", allow.clone()), ("PERM", quiet.clone())],
        touch,
        Some("allow"),
    );
    assert!(!c.ran && c.asked.is_empty() && c.result["isError"] == true);
    assert_eq!(c.fx.hook_stdin("PRE", 0)["permission_mode"], "plan");

    // Ask meets an allow rule: asked all the same; meets a deny rule: denied unasked.
    let ask = decide("ask", "PRE-ASK-REASON-MARKER");
    let c = hooked_bash(
        with(json!({"allow": ["Bash(touch:*)"]})),
        &[("PRE", ask.clone()), ("PERM", quiet.clone())],
        touch,
        Some("allow"),
    );
    assert_eq!(c.asked.len(), 1);
    assert!(c.ran);
    let c = hooked_bash(
        with(json!({"deny": ["Bash(touch:*)"]})),
        &[("PRE", ask.clone()), ("PERM", quiet.clone())],
        touch,
        Some("allow"),
    );
    assert!(c.asked.is_empty() && !c.ran);
    assert!(c.text().ends_with("has been denied."), "{}", c.text());

    // Deny beats an allow rule.
    let c = hooked_bash(
        with(json!({"allow": ["Bash(touch:*)"]})),
        &[("PRE", decide("deny", "PRE-DENY-REASON-MARKER"))],
        touch,
        Some("allow"),
    );
    assert_eq!(
        c.text(),
        "PreToolUse:Bash hook error: PRE-DENY-REASON-MARKER"
    );
    assert!(!c.ran && c.asked.is_empty());

    // updatedInput is what the rules judge: a harmless call made into a denied one is denied…
    let rewrite = |command: &str| json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": command}}}).to_string()});
    let c = hooked_bash(
        with(json!({"deny": ["Bash(touch:*)"]})),
        &[("PRE", rewrite(touch))],
        "echo harmless",
        Some("allow"),
    );
    assert!(
        !c.ran && c.text().ends_with("has been denied."),
        "{}",
        c.text()
    );
    // …and a denied call made harmless runs (the tool sees the new input).
    let c = hooked_bash(
        with(json!({"deny": ["Bash(touch:*)"]})),
        &[("PRE", rewrite("echo UPDATED-INPUT-MARKER"))],
        touch,
        Some("allow"),
    );
    assert_eq!(c.text(), "UPDATED-INPUT-MARKER");
    assert!(!c.ran && c.asked.is_empty());

    // PermissionRequest runs only when a question would be asked: not under an allow rule…
    let c = hooked_bash(
        with(json!({"allow": ["Bash(touch:*)"]})),
        &[("PERM", quiet.clone())],
        touch,
        Some("deny"),
    );
    assert!(c.ran && c.asked.is_empty() && !c.hook_ran("PERM"));
    // …and its allow answers an ask rule's question (the user is not asked).
    let perm_allow = json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}).to_string()});
    let c = hooked_bash(
        with(json!({"ask": ["Bash(touch:*)"]})),
        &[("PERM", perm_allow)],
        touch,
        Some("deny"),
    );
    assert!(c.ran && c.asked.is_empty() && c.hook_ran("PERM"));
    // Its deny is the result, not a rejection: the turn goes on.
    let perm_deny = json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "PERM-DENY-MESSAGE-MARKER"}}}).to_string()});
    let c = hooked_bash(
        with(json!({})),
        &[("PERM", perm_deny)],
        touch,
        Some("allow"),
    );
    assert_eq!(c.text(), "PERM-DENY-MESSAGE-MARKER");
    assert!(!c.ran && c.asked.is_empty());
    assert_eq!(c.requests, 2);
}

/// Check 7 (h4/block, h4/exit2): the tool result is unchanged; the block (with its context)
/// and the exit-2 error follow it.
#[test]
fn post_tool_use_blocks_follow_the_unchanged_result() {
    for (beh, want) in [
        (
            json!({"stdout": json!({"decision": "block", "reason": "POST-BLOCK-REASON-MARKER", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "POST-CTX2-MARKER"}}).to_string()}),
            "PostToolUse:Bash hook blocking error from command: \"{cmd}\": POST-BLOCK-REASON-MARKER\n\nPostToolUse:Bash hook additional context: POST-CTX2-MARKER",
        ),
        (
            json!({"stdout": "ignored", "stderr": "POST-EXIT2-STDERR-MARKER\n", "exit": 2}),
            "PostToolUse:Bash hook blocking error from command: \"{cmd}\": [{cmd}]: POST-EXIT2-STDERR-MARKER\n",
        ),
        (json!({"stdout": "x", "stderr": "y", "exit": 1}), ""),
    ] {
        let fx = trusted();
        fx.project_settings(fx.hooks_settings(&[("PostToolUse", Some("Bash"), "POST")]));
        fx.behave("POST", beh);
        fx.api.push(bash("toolu_1", "echo BASH-RAN-MARKER"));
        fx.api.push(Turn::new().text("Done."));
        let mut s = server(&fx, &[permission_allowed()]);
        let id = session(&fx, &mut s, None);
        s.chat_send(&id, "go");
        let m = blocks(&last_message(&fx.requests()[1]));
        assert_eq!(text_of(&m[0]).trim_end(), "BASH-RAN-MARKER");
        assert_ne!(m[0]["is_error"], true);
        if want.is_empty() {
            assert_eq!(m.len(), 1, "{m:#?}");
        } else {
            assert_eq!(m.len(), 2, "{m:#?}");
            let want = want.replace("{cmd}", &fx.hook_command("POST"));
            assert_eq!(
                text_of(&m[1]),
                format!("<system-reminder>\n{want}\n</system-reminder>")
            );
        }
    }
}

/// Check 8 (h5/exit2, h5/block, h5/exit1): a Stop hook that blocks its first call makes the
/// model continue with its feedback; the second call says `stop_hook_active: true`.
#[test]
fn a_stop_hook_makes_the_model_continue() {
    for (beh, user, system) in [
        (
            json!({"steps": [{"stderr": "STOP-EXIT2-STDERR-MARKER\n", "exit": 2}, {}]}),
            "Stop hook feedback:\n[{cmd}]: STOP-EXIT2-STDERR-MARKER\n",
            None,
        ),
        (
            json!({"steps": [{"stdout": json!({"decision": "block", "reason": "STOP-BLOCK-REASON-MARKER"}).to_string()}, {}]}),
            "Stop hook feedback:\nSTOP-BLOCK-REASON-MARKER",
            Some("Stop hook blocking error from command: \"{cmd}\": STOP-BLOCK-REASON-MARKER"),
        ),
        (json!({"stderr": "x", "exit": 1}), "", None),
    ] {
        let fx = trusted();
        fx.project_settings(fx.hooks_settings(&[("Stop", None, "STOP")]));
        fx.behave("STOP", beh);
        fx.api.push(Turn::new().text("FIRST-TEXT"));
        fx.api.push(Turn::new().text("SECOND-TEXT"));
        let mut s = server(&fx, &[]);
        let id = session(&fx, &mut s, None);
        let events = s.chat_send(&id, "go");
        assert_eq!(
            events.last().unwrap()["outcome"],
            "completed",
            "{events:#?}"
        );
        let reqs = fx.requests();
        let cmd = fx.hook_command("STOP");
        if user.is_empty() {
            assert_eq!(reqs.len(), 1);
            assert_eq!(fx.hook_calls("STOP"), 1);
            continue;
        }
        assert_eq!(reqs.len(), 2);
        let msgs = reqs[1]["messages"].as_array().unwrap();
        assert_eq!(text_of(&blocks(&msgs[msgs.len() - 2])[0]), "FIRST-TEXT");
        let last = blocks(&msgs[msgs.len() - 1]);
        assert_eq!(text_of(&last[0]), user.replace("{cmd}", &cmd));
        match system {
            Some(sys) => assert_eq!(
                text_of(&last[1]),
                format!(
                    "<system-reminder>\n{}\n</system-reminder>",
                    sys.replace("{cmd}", &cmd)
                )
            ),
            None => assert_eq!(last.len(), 1, "{last:#?}"),
        }
        assert_eq!(fx.hook_stdin("STOP", 0)["stop_hook_active"], false);
        assert_eq!(fx.hook_stdin("STOP", 1)["stop_hook_active"], true);
        assert_eq!(
            fx.hook_stdin("STOP", 1)["last_assistant_message"],
            "SECOND-TEXT"
        );
        let said: String = events
            .iter()
            .filter(|e| e["kind"] == "text")
            .filter_map(|e| e["text"].as_str())
            .collect();
        assert_eq!(said, "FIRST-TEXTSECOND-TEXT");
    }
}

/// `claude-context chat TEXT` in the fixture's project.
fn cli(fx: &Chat, text: &str) -> (i32, String, String) {
    fx.cli(&["--no-git", text], "", &[])
}

/// Transcripts under the state folder.
fn transcripts(state: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![state.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out
}

/// Check 9 (h6/exit2, h6/ups_block, h6/ups_continue_false): a blocked prompt sends no request,
/// is not kept, and the command line prints the measured text and exits 0. Exit 1 of either
/// hook and exit 2 of SessionStart stop nothing (h6/exit1, h6/ss_exit2).
#[test]
fn a_blocked_prompt_sends_nothing_and_says_why() {
    for (beh, want) in [
        (
            json!({"stdout": "ignored", "stderr": "UPS-EXIT2-STDERR-MARKER\n", "exit": 2}),
            "UserPromptSubmit operation blocked by hook:\n[{cmd}]: UPS-EXIT2-STDERR-MARKER\n\n\nOriginal prompt: hello\n",
        ),
        (
            json!({"stdout": json!({"decision": "block", "reason": "UPS-BLOCK-REASON-MARKER"}).to_string()}),
            "UserPromptSubmit operation blocked by hook:\nUPS-BLOCK-REASON-MARKER\n\nOriginal prompt: hello\n",
        ),
        (
            json!({"stdout": json!({"continue": false, "stopReason": "UPS-STOPREASON-MARKER"}).to_string()}),
            "Operation stopped by hook: UPS-STOPREASON-MARKER\n",
        ),
    ] {
        let fx = trusted();
        fx.project_settings(fx.hooks_settings(&[("UserPromptSubmit", None, "UPS")]));
        fx.behave("UPS", beh);
        let (code, out, err) = cli(&fx, "hello");
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, want.replace("{cmd}", &fx.hook_command("UPS")), "{err}");
        assert!(fx.api.requests().is_empty(), "no request");
        for t in transcripts(&fx.state) {
            let text = std::fs::read_to_string(&t).unwrap();
            assert!(!text.contains("hello"), "the prompt is not kept: {text}");
        }
    }
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
    ]));
    fx.behave("SS", json!({"stdout": "SS-OUT", "stderr": "e", "exit": 2}));
    fx.behave(
        "UPS",
        json!({"stdout": "UPS-OUT", "stderr": "e", "exit": 1}),
    );
    fx.api.push(Turn::new().text("ANSWER"));
    let (code, out, err) = cli(&fx, "hello");
    assert_eq!((code, out.as_str()), (0, "ANSWER\n"), "{err}");
    let all = all_text(&fx.requests());
    assert!(!all.contains("SS-OUT") && !all.contains("UPS-OUT"));
}

/// Check 10 (h7/matchers): which PreToolUse matchers fire for `Bash` and for an MCP tool's name.
#[test]
fn matchers_as_measured() {
    let fx = trusted();
    let matchers: [(&str, Option<&str>); 12] = [
        ("M_Bash", Some("Bash")),
        ("M_EditWrite", Some("Edit|Write")),
        ("M_caret", Some("^B.*")),
        ("M_dot", Some("Ba.h")),
        ("M_star", Some("*")),
        ("M_empty", Some("")),
        ("M_none", None),
        ("M_mcp", Some("mcp__.*")),
        ("M_ping", Some("mcp__mini__ping")),
        ("M_Read", Some("Read")),
        ("M_lower", Some("bash")),
        ("M_Bas", Some("Bas")),
    ];
    let list: Vec<(&str, Option<&str>, &str)> = matchers
        .iter()
        .map(|(n, m)| ("PreToolUse", *m, *n))
        .collect();
    fx.project_settings(fx.hooks_settings(&list));
    fx.api.push(
        Turn::new()
            .tool_use("toolu_1", "Bash", json!({"command": "true"}))
            .tool_use("toolu_2", "mcp__mini__ping", json!({})),
    );
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[permission_allowed()]);
    let id = session(&fx, &mut s, None);
    s.chat_send(&id, "go");
    let fired = |name: &str| -> Vec<String> {
        (0..fx.hook_calls(name))
            .map(|n| {
                fx.hook_stdin(name, n)["tool_name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    let both = ["Bash", "mcp__mini__ping"];
    assert_eq!(fired("M_Bash"), ["Bash"]);
    assert_eq!(fired("M_caret"), ["Bash"]);
    assert_eq!(fired("M_dot"), ["Bash"]);
    for all in ["M_star", "M_empty", "M_none"] {
        let mut f = fired(all);
        f.sort();
        assert_eq!(f, both, "{all}");
    }
    assert_eq!(fired("M_mcp"), ["mcp__mini__ping"]);
    assert_eq!(fired("M_ping"), ["mcp__mini__ping"]);
    for none in ["M_EditWrite", "M_Read", "M_lower", "M_Bas"] {
        assert!(fired(none).is_empty(), "{none}");
    }
}

/// Check 11 (h8/scopes): managed, user, project and local hooks all run; a command in three
/// files runs once.
#[test]
fn every_scope_runs_and_a_duplicate_once() {
    let fx = trusted();
    let one = |name: &str| {
        json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": fx.hook_command(name)}, {"type": "command", "command": fx.hook_command("DUP")}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": fx.hook_command(&format!("{name}_UPS"))}]}],
        }})
    };
    std::fs::write(
        fx.ws.managed.join("managed-settings.json"),
        one("M").to_string(),
    )
    .unwrap();
    fx.user_settings(one("U"));
    fx.ws.write(".claude/settings.json", &one("P").to_string());
    fx.ws
        .write(".claude/settings.local.json", &one("L").to_string());
    for n in ["M", "U", "P", "L", "DUP"] {
        fx.behave(n, json!({"stdout": format!("{n}-OUT-MARKER\n")}));
        fx.behave(
            &format!("{n}_UPS"),
            json!({"stdout": format!("{n}-UPS-MARKER\n")}),
        );
    }
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    s.chat_send(&id, "hello");
    let env = environment(&fx.requests()[0]);
    for n in ["M", "U", "P", "L", "DUP"] {
        assert_eq!(
            env.matches(&format!(
                "SessionStart:startup hook success: {n}-OUT-MARKER"
            ))
            .count(),
            1,
            "{n}: {env}"
        );
    }
    for n in ["M", "U", "P", "L"] {
        assert!(
            env.contains(&format!("UserPromptSubmit hook success: {n}-UPS-MARKER")),
            "{n}"
        );
    }
    assert_eq!(fx.hook_calls("DUP"), 1);
}

/// Check 12 (h9/*, h13/managed_*): `disableAllHooks` in local, project or user settings leaves
/// only managed hooks; in managed settings none; `allowManagedHooksOnly` keeps only managed.
#[test]
fn the_switches_as_measured() {
    for (user, project, local, managed, want) in [
        (
            json!({}),
            json!({}),
            json!({"disableAllHooks": true}),
            json!({}),
            vec!["M"],
        ),
        (
            json!({}),
            json!({"disableAllHooks": true}),
            json!({}),
            json!({}),
            vec!["M"],
        ),
        (
            json!({"disableAllHooks": true}),
            json!({}),
            json!({}),
            json!({}),
            vec!["M"],
        ),
        (
            json!({}),
            json!({}),
            json!({}),
            json!({"disableAllHooks": true}),
            vec![],
        ),
        (
            json!({}),
            json!({}),
            json!({}),
            json!({"allowManagedHooksOnly": true}),
            vec!["M"],
        ),
        (
            json!({}),
            json!({}),
            json!({}),
            json!({}),
            vec!["M", "U", "P", "L"],
        ),
    ] {
        let fx = trusted();
        let with = |mut v: Value, name: &str| {
            v["hooks"] = json!({"SessionStart": [{"hooks": [{"type": "command", "command": fx.hook_command(name)}]}]});
            fx.behave(name, json!({"stdout": format!("{name}-MARKER")}));
            v.to_string()
        };
        std::fs::write(
            fx.ws.managed.join("managed-settings.json"),
            with(managed, "M"),
        )
        .unwrap();
        fx.user_settings(serde_json::from_str(&with(user, "U")).unwrap());
        fx.ws.write(".claude/settings.json", &with(project, "P"));
        fx.ws
            .write(".claude/settings.local.json", &with(local, "L"));
        fx.api.push(Turn::new().text("Done."));
        let mut s = server(&fx, &[]);
        let id = session(&fx, &mut s, None);
        s.chat_send(&id, "hello");
        let env = environment(&fx.requests()[0]);
        let present: Vec<&str> = ["M", "U", "P", "L"]
            .into_iter()
            .filter(|n| env.contains(&format!("{n}-MARKER")))
            .collect();
        assert_eq!(present, want, "{env}");
    }
}

/// Check 13 (h14/n10000, h14/n10001, h10/big): 10,000 characters pass whole, 10,001 are saved
/// and previewed; 100,000 characters of exit-2 standard error pass whole.
#[test]
fn the_ten_thousand_character_cap() {
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
        ("PreToolUse", Some("Bash"), "PRE"),
    ]));
    let exactly = "a".repeat(10_000);
    let over = format!("{}{}", "b".repeat(2_000), "c".repeat(8_001));
    let stderr = "e".repeat(100_000);
    fx.behave("SS", json!({"stdout": exactly}));
    fx.behave("UPS", json!({"stdout": over}));
    fx.behave("PRE", json!({"stderr": stderr, "exit": 2}));
    fx.api.push(bash("toolu_1", "true"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    s.chat_send(&id, "hello");
    let reqs = fx.requests();
    let env = environment(&reqs[0]);
    assert!(env.contains(&format!(
        "SessionStart:startup hook success: {exactly}\n\n# Environment"
    )));
    let start = "UserPromptSubmit hook success: <persisted-output>\nOutput too large (9.8KB). Full output saved to: ";
    let at = env.find(start).unwrap_or_else(|| panic!("{env}"));
    let rest = &env[at + start.len()..];
    let (path, preview) = rest.split_once("\n\nPreview (first 2KB):\n").unwrap();
    assert!(
        path.ends_with("-stdout.txt") && path.contains("/tool-results/hook-"),
        "{path}"
    );
    assert_eq!(std::fs::read_to_string(path).unwrap(), over);
    assert!(preview.starts_with(&format!(
        "{}\n...\n</persisted-output>\n\nToday's date is ",
        "b".repeat(2_000)
    )));
    let r = &blocks(&last_message(&reqs[1]))[0];
    assert_eq!(
        text_of(r),
        format!(
            "PreToolUse:Bash hook error: [{}]: {stderr}",
            fx.hook_command("PRE")
        )
    );
}

/// Check 14 (h11/timeout): a hook killed at its `timeout` said nothing: a late deny does not
/// stop the tool, and a prompt hook that printed at once adds nothing; the next step goes on at
/// the timeout.
#[test]
fn a_hook_killed_at_its_timeout_said_nothing() {
    let fx = trusted();
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "LATE-DENY"}}).to_string();
    fx.project_settings(json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": fx.hook_command("UPS"), "timeout": 1}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": fx.hook_command("PRE"), "timeout": 1}]}],
    }}));
    fx.behave(
        "UPS",
        json!({"stdout": "UPS-SLOW-MARKER", "sleep_after": 30}),
    );
    fx.behave("PRE", json!({"sleep": 30, "stdout": deny}));
    fx.api.push(bash("toolu_1", "echo BASH-RAN-MARKER"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[permission_allowed()]);
    let id = session(&fx, &mut s, None);
    let started = std::time::Instant::now();
    let events = s.chat_send(&id, "hello");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let reqs = fx.requests();
    assert!(!all_text(&reqs).contains("UPS-SLOW-MARKER"));
    assert_eq!(
        text_of(&blocks(&last_message(&reqs[1]))[0]).trim_end(),
        "BASH-RAN-MARKER"
    );
    let timeouts = events
        .iter()
        .filter(|e| e["kind"] == "hook" && e["outcome"] == "timeout")
        .count();
    assert_eq!(timeouts, 2, "{events:#?}");
}

/// Check 25 (h15/perm_allow, h15/perm_deny): a PermissionRequest hook answers the tool's
/// prompt: `allow` runs it, `deny` gives its message alone as the error result. The user is not
/// asked.
#[test]
fn permission_request_hooks_answer_the_prompt() {
    for (decision, ran, result) in [
        (json!({"behavior": "allow"}), true, "BASH-RAN-MARKER"),
        (
            json!({"behavior": "deny", "message": "PERM-DENY-MESSAGE-MARKER"}),
            false,
            "PERM-DENY-MESSAGE-MARKER",
        ),
    ] {
        let fx = trusted();
        fx.project_settings(fx.hooks_settings(&[("PermissionRequest", Some("Bash"), "PERM")]));
        fx.behave(
            "PERM",
            json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}).to_string()}),
        );
        fx.api.push(bash(
            "toolu_1",
            "touch perm-test.txt && echo BASH-RAN-MARKER",
        ));
        fx.api.push(Turn::new().text("Done."));
        let mut s = server(&fx, &[("chat/permission", json!({"decision": "deny"}))]);
        let id = session(&fx, &mut s, None);
        s.chat_send(&id, "go");
        let r = blocks(&last_message(&fx.requests()[1]))[0].clone();
        assert_eq!(text_of(&r).trim_end(), result);
        assert_eq!(r["is_error"] == true, !ran);
        assert_eq!(fx.ws.root.join("perm-test.txt").exists(), ran);
        assert!(server_requests(&s, "chat/permission").is_empty());
        let stdin = fx.hook_stdin("PERM", 0);
        assert_eq!(stdin["hook_event_name"], "PermissionRequest");
        assert_eq!(
            stdin["tool_input"]["command"],
            "touch perm-test.txt && echo BASH-RAN-MARKER"
        );
    }
}

/// Check 16 (i1/untrusted): in a folder its user never trusted, no hook runs, user hooks
/// included; (i1/trusted_default) a prompt that waits fires Notification `permission_prompt`,
/// after PermissionRequest said nothing.
#[test]
fn no_hook_runs_before_trust_and_a_waiting_prompt_notifies() {
    let fx = untrusted();
    fx.user_settings(fx.hooks_settings(&[
        ("SessionStart", None, "USER_SS"),
        ("UserPromptSubmit", None, "USER_UPS"),
    ]));
    fx.project_settings(fx.hooks_settings(&[("SessionStart", None, "SS"), ("Stop", None, "STOP")]));
    fx.behave("SS", json!({"stdout": "SS-MARKER"}));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "hello");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    for n in ["USER_SS", "USER_UPS", "SS", "STOP"] {
        assert_eq!(fx.hook_calls(n), 0, "{n} ran in an untrusted folder");
    }
    assert!(!all_text(&fx.requests()).contains("SS-MARKER"));
    // The trust question answered yes (the workspace trust of issue 32): it comes before any
    // hook of the first turn, and they all run in it.
    let fx = untrusted();
    fx.user_settings(fx.hooks_settings(&[
        ("SessionStart", None, "USER_SS"),
        ("UserPromptSubmit", None, "USER_UPS"),
    ]));
    fx.project_settings(fx.hooks_settings(&[("SessionStart", None, "SS"), ("Stop", None, "STOP")]));
    fx.behave("SS", json!({"stdout": "SS-MARKER"}));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[permission_allowed()]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "hello");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    let asked = server_requests(&s, "chat/permission");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["params"]["tool"], "workspaceTrust", "{asked:#?}");
    for n in ["USER_SS", "USER_UPS", "SS", "STOP"] {
        assert_eq!(
            fx.hook_calls(n),
            1,
            "{n} did not run once the folder was trusted"
        );
    }
    assert!(all_text(&fx.requests()).contains("SS-MARKER"));

    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("PermissionRequest", None, "PERM"),
        ("Notification", None, "NOTE"),
    ]));
    fx.api.push(bash("toolu_1", "touch x.txt"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[("chat/permission", json!(harness::NO_ANSWER))]);
    let id = session(&fx, &mut s, None);
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "go"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    s.wait_for(Duration::from_secs(20), |m| {
        m["method"] == "chat/permission"
    })
    .expect("a permission prompt");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fx.hook_calls("NOTE") == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(fx.hook_calls("PERM"), 1);
    let note = fx.hook_stdin("NOTE", 0);
    assert_eq!(note["message"], "Claude needs your permission");
    assert_eq!(note["notification_type"], "permission_prompt");
    assert_eq!(note["hook_event_name"], "Notification");
    s.call("chat/cancel", json!({"sessionId": id}));
    let events = s.turn_events(&turn);
    assert_eq!(events.last().unwrap()["outcome"], "cancelled");
}

/// h3/continue_false, h3/continue_false_next: `continue: false` lets the tool and PostToolUse
/// run, then ends the turn; the next prompt is told why.
#[test]
fn continue_false_ends_the_turn_and_the_next_prompt_is_told() {
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("PreToolUse", Some("Bash"), "PRE"),
        ("PostToolUse", Some("Bash"), "POST"),
    ]));
    fx.behave(
        "PRE",
        json!({"steps": [{"stdout": json!({"continue": false, "stopReason": "PRE-STOPREASON-MARKER"}).to_string()}, {}]}),
    );
    fx.api.push(bash("toolu_1", "touch ran.txt"));
    fx.api.push(Turn::new().text("NEXT"));
    let mut s = server(&fx, &[permission_allowed()]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "go");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    assert_eq!(fx.requests().len(), 1, "no request after the round");
    assert!(fx.ws.root.join("ran.txt").exists());
    assert_eq!(fx.hook_calls("POST"), 1);
    s.chat_send(&id, "next");
    let reqs = fx.requests();
    let last = blocks(&last_message(&reqs[1]));
    assert_eq!(text_of(&last[last.len() - 2]), "next");
    assert_eq!(
        text_of(last.last().unwrap()),
        "<system-reminder>\nPreToolUse:Bash hook stopped continuation: PRE-STOPREASON-MARKER\n</system-reminder>"
    );
}

/// A nine-section summary.
fn summary() -> String {
    "<analysis>Reviewing.</analysis>\n<summary>\n1. Primary Request and Intent:\n   Say hello.\n2. Key Technical Concepts:\n   - none\n3. Files and Code Sections:\n   - none\n4. Errors and fixes:\n   - none\n5. Problem Solving:\n   none\n6. All User Messages:\n   - \"hello\"\n7. Pending Tasks:\n   - none\n8. Current Work:\n   Greeting.\n9. Optional Next Step:\n   none\n</summary>".to_string()
}

/// Check 15 (h12/after, h12/resume, h12/compact_pc_exit2): a manual compaction runs PreCompact,
/// then SessionStart `compact` and PostCompact; the next request carries their output in a
/// `<local-command-stdout>` of its first user message and an environment section rebuilt after
/// the model line (the startup text gone); a resumed session runs SessionStart `resume` and sends
/// nothing of it. PreCompact exit 2 stops the compaction.
#[test]
fn compaction_and_resume_as_measured() {
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
        ("PreCompact", None, "PC"),
        ("PostCompact", None, "PCC"),
    ]));
    fx.behave(
        "SS",
        json!({"steps": [{"stdout": "SS-STARTUP-MARKER\n"}, {"stdout": "SS-STDOUT-MARKER\n"}, {"stdout": "SS-RESUME-MARKER\n"}]}),
    );
    fx.behave("UPS", json!({"stdout": "UPS-STDOUT-MARKER\n"}));
    fx.behave("PC", json!({"stdout": "PC-STDOUT-MARKER\n"}));
    fx.behave("PCC", json!({"stdout": "PCC-STDOUT-MARKER\n"}));
    // A long answer: the compaction has something to free.
    let long = format!("Hi. {}", "Lorem ipsum dolor sit amet. ".repeat(400));
    fx.api.push(Turn::new().text(&long).usage(12_000, 10, 0, 0));
    fx.api.push(Turn::new().text(&summary()));
    fx.api.push(Turn::new().text("Next."));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    s.chat_send(&id, "hello");
    let r = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "full", "instructions": "focus on X"}),
    );
    assert_eq!(r["mode"], "full", "{r}");
    s.chat_send(&id, "what next?");
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 3);
    let pc = fx.hook_stdin("PC", 0);
    assert_eq!(
        (pc["trigger"].as_str(), pc["custom_instructions"].as_str()),
        (Some("manual"), Some("focus on X"))
    );
    let ss = fx.hook_stdin("SS", 1);
    assert_eq!(
        (ss["source"].as_str(), ss["model"].as_str()),
        (Some("compact"), Some("claude-opus-5-5"))
    );
    assert!(ss.get("prompt_id").is_some());
    assert!(
        fx.hook_stdin("PCC", 0)["compact_summary"]
            .as_str()
            .unwrap()
            .contains("Say hello.")
    );
    // The summary request carried the old environment section.
    assert!(environment(&reqs[1]).contains("SS-STARTUP-MARKER"));
    let after = &reqs[2];
    let first = blocks(&after["messages"][0]);
    let stdout = format!(
        "<local-command-stdout>Compacted (ctrl+o to see full summary)\nPreCompact [{}] completed successfully: PC-STDOUT-MARKER\nPostCompact [{}] completed successfully: PCC-STDOUT-MARKER</local-command-stdout>\n",
        fx.hook_command("PC"),
        fx.hook_command("PCC")
    );
    assert!(first.iter().any(|b| text_of(b) == stdout), "{first:#?}");
    let env = environment(after);
    assert!(!env.contains("SS-STARTUP-MARKER"), "{env}");
    assert!(
        env.contains(
            ". The exact model ID is claude-opus-5-5.\n\nSessionStart:compact hook success: SS-STDOUT-MARKER\n\nUserPromptSubmit hook success: UPS-STDOUT-MARKER\n\nToday's date is "
        ),
        "{env}"
    );
    assert_eq!(env.matches("UPS-STDOUT-MARKER").count(), 1);
    s.shutdown();

    // Resumed: SessionStart runs with `resume`; its output goes nowhere; the environment section
    // is the one the session had; the new prompt's text follows it.
    fx.api.push(Turn::new().text("Again."));
    let mut s = server(&fx, &[]);
    *s.settings.lock().unwrap() = json!({});
    s.initialize(&fx.ws.root, json!({}));
    s.call("chat/resume", json!({"sessionId": id}));
    s.chat_send(&id, "again");
    assert_eq!(fx.hook_stdin("SS", 2)["source"], "resume");
    let reqs = fx.requests();
    let last = reqs.last().unwrap();
    assert!(!all_text(&reqs).contains("SS-RESUME-MARKER"));
    assert!(!all_text(&reqs).contains("SessionStart:resume"));
    let env = environment(last);
    assert!(
        env.contains("SessionStart:compact hook success: SS-STDOUT-MARKER\n\n"),
        "{env}"
    );
    let m = blocks(&last_message(last));
    assert_eq!(
        text_of(m.last().unwrap()),
        "<system-reminder>\nUserPromptSubmit hook success: UPS-STDOUT-MARKER\n</system-reminder>"
    );
    s.shutdown();

    // PreCompact exit 2: no summary request; the run says why.
    let fx = trusted();
    fx.project_settings(fx.hooks_settings(&[("PreCompact", None, "PC")]));
    fx.behave(
        "PC",
        json!({"stderr": "PC-EXIT2-STDERR-MARKER\n", "exit": 2}),
    );
    fx.api.push(Turn::new().text(&long).usage(12_000, 10, 0, 0));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    s.chat_send(&id, "hello");
    let rid = s.send_request("compact/run", json!({"sessionId": id, "mode": "full"}));
    let resp = s.response(&rid);
    assert_eq!(
        resp["error"]["message"],
        format!(
            "Compaction blocked by PreCompact hook: [{}]: PC-EXIT2-STDERR-MARKER\n",
            fx.hook_command("PC")
        ),
        "{resp}"
    );
    assert_eq!(fx.requests().len(), 1);
}

/// A project as a team sets hooks up: a SessionStart hook that injects the sprint, a PreToolUse
/// guard that refuses `rm`, a PostToolUse formatter for every file written, and a Stop checklist
/// that sends the model back once. In a folder its user trusts.
fn team_project(fx: &Chat) {
    fx.ws.write(
        ".claude/hooks/context.sh",
        "#!/bin/sh\necho \"Sprint 42: the checkout API is frozen; open tickets SHOP-12, SHOP-15.\"\n",
    );
    fx.ws.write(
        ".claude/hooks/guard.py",
        "import json, sys\ncall = json.load(sys.stdin)\ncmd = call['tool_input'].get('command', '')\nif any(part.strip().startswith('rm ') for part in cmd.replace('&&', ';').split(';')):\n    sys.stderr.write('Blocked by the project guard: rm is not allowed; move files to .trash instead.\\n')\n    sys.exit(2)\n",
    );
    fx.ws.write(
        ".claude/hooks/format.py",
        "import json, os, sys\ncall = json.load(sys.stdin)\npath = call['tool_input']['file_path']\nwith open(path) as f:\n    lines = [l.rstrip() for l in f.read().splitlines()]\nwith open(path, 'w') as f:\n    f.write('\\n'.join(lines) + '\\n')\nrel = os.path.relpath(path, os.environ['CLAUDE_PROJECT_DIR'])\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': 'formatted ' + rel}}))\n",
    );
    fx.ws.write(
        ".claude/hooks/checklist.py",
        "import json, sys\ncall = json.load(sys.stdin)\nif not call['stop_hook_active']:\n    print(json.dumps({'decision': 'block', 'reason': 'Checklist: run the tests and say they pass before you finish.'}))\n",
    );
    let py =
        |script: &str| format!("/usr/bin/python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/{script}");
    fx.project_settings(json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/context.sh"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": py("guard.py"), "timeout": 10}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": py("format.py")}]}],
        "Stop": [{"hooks": [{"type": "command", "command": py("checklist.py")}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR\"/ended.json"}]}],
    }}));
    let cart = fx.ws.root.join("src/cart.ts");
    fx.api.push(bash("toolu_rm", "rm -rf build"));
    fx.api.push(Turn::new().tool_use(
        "toolu_w",
        "Write",
        json!({"file_path": cart, "content": "export const cart = 2;   \nexport const total = 0;\t\n"}),
    ));
    fx.api.push(Turn::new().text("Done."));
    fx.api.push(Turn::new().text("Tests pass."));
}

/// What the model got, whichever front end drove the turn.
fn check_team_requests(fx: &Chat) {
    let reqs = fx.requests();
    assert_eq!(
        reqs.len(),
        4,
        "the denied call, the write, the stop, the continuation"
    );
    assert!(
        environment(&reqs[0]).contains(
            "SessionStart:startup hook success: Sprint 42: the checkout API is frozen; open tickets SHOP-12, SHOP-15.\n\n# Environment"
        ),
        "{}",
        environment(&reqs[0])
    );
    let denied = &blocks(&last_message(&reqs[1]))[0];
    assert_eq!(denied["is_error"], true);
    assert!(
        text_of(denied).starts_with("PreToolUse:Bash hook error: [/usr/bin/python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py]: Blocked by the project guard: rm is not allowed"),
        "{}",
        text_of(denied)
    );
    let wrote = blocks(&last_message(&reqs[2]));
    assert_ne!(wrote[0]["is_error"], true, "{wrote:#?}");
    assert_eq!(
        text_of(wrote.last().unwrap()),
        "<system-reminder>\nPostToolUse:Write hook additional context: formatted src/cart.ts\n</system-reminder>"
    );
    assert_eq!(wrote.len(), 2, "{wrote:#?}");
    assert_eq!(
        std::fs::read_to_string(fx.ws.root.join("src/cart.ts")).unwrap(),
        "export const cart = 2;\nexport const total = 0;\n",
        "the formatter ran on the written file"
    );
    let feedback = blocks(&last_message(&reqs[3]));
    assert_eq!(
        text_of(&feedback[0]),
        "Stop hook feedback:\nChecklist: run the tests and say they pass before you finish."
    );
    assert!(!fx.ws.root.join("build").exists() || fx.ws.root.join("build").is_dir());
}

/// The hook-heavy project over the language server: every hook runs, the model gets each text
/// where the reference puts it, and the editor sees each hook's doing.
#[test]
fn a_hook_heavy_project_runs_end_to_end_over_lsp() {
    let fx = trusted();
    team_project(&fx);
    let mut s = server(&fx, &[permission_allowed()]);
    let id = session(&fx, &mut s, None);
    let events = s.chat_send(&id, "Clean the build, set the cart to 2 and finish.");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    check_team_requests(&fx);
    let hooks: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["kind"] == "hook")
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for want in [
        ("SessionStart", "context"),
        ("PreToolUse", "denied"),
        ("PostToolUse", "context"),
        ("Stop", "feedback"),
    ] {
        assert!(
            hooks.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {hooks:?}"
        );
    }
    // Only the Write asked the user: the guard denied the rm before its prompt.
    let asked = server_requests(&s, "chat/permission");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["params"]["tool"], "Write");
    // SessionEnd runs at shutdown.
    s.shutdown();
    check_session_end(&fx, &id);
}

/// The SessionEnd hook ran with the measured input.
fn check_session_end(fx: &Chat, id: &str) {
    let ended: Value = serde_json::from_str(
        &std::fs::read_to_string(fx.ws.root.join("ended.json")).expect("SessionEnd ran"),
    )
    .unwrap();
    assert_eq!(ended["hook_event_name"], "SessionEnd");
    assert_eq!(ended["reason"], "other");
    assert_eq!(ended["session_id"], id);
}

/// The same project over ACP: the same requests; the client sees each hook as a tool call of
/// kind `other`.
#[test]
fn a_hook_heavy_project_runs_end_to_end_over_acp() {
    let fx = trusted();
    team_project(&fx);
    let mut a = harness::acp::Agent::start(
        &bin(),
        &fx.ws,
        &fx.api.base_url(),
        &[("XDG_STATE_HOME", fx.state.to_str().unwrap())],
    );
    a.initialize();
    let cwd = fx.ws.root.to_string_lossy().to_string();
    let session = a.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    a.send(
        2,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "Clean the build, set the cart to 2 and finish."}]}),
    );
    // The Write asks; allow it.
    let ask = a.wait("a permission request", |v| {
        v["method"] == "session/request_permission"
    });
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "toolu_w");
    a.raw(
        &json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
            .to_string(),
    );
    let done = a.answer(2);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    check_team_requests(&fx);
    let updates: Vec<Value> = a
        .seen
        .iter()
        .filter(|v| v["method"] == "session/update")
        .map(|v| v["params"]["update"].clone())
        .collect();
    let titles: Vec<&str> = updates
        .iter()
        // Kind `other` (the default, so the field may be absent).
        .filter(|u| u["sessionUpdate"] == "tool_call" && u.get("kind").is_none_or(|k| k == "other"))
        .filter_map(|u| u["title"].as_str())
        .collect();
    for want in [
        "SessionStart hook: context",
        "PreToolUse hook: denied",
        "PostToolUse hook: context",
        "Stop hook: feedback",
    ] {
        assert!(titles.contains(&want), "{want} in {titles:?}: {updates:#?}");
    }
    let denied = updates
        .iter()
        .find(|u| u["title"] == "PreToolUse hook: denied")
        .unwrap();
    assert_eq!(denied["status"], "failed");
    assert!(denied.to_string().contains("rm is not allowed"), "{denied}");
    // SessionEnd runs when the input ends.
    assert_eq!(a.close(), Some(0));
    check_session_end(&fx, &session);
}

/// A hook is cancelled with its turn: `chat/cancel` while a UserPromptSubmit hook sleeps ends
/// the turn at once, the hook and what it started are killed, and the prompt is not kept.
#[test]
fn a_hook_is_cancelled_with_its_turn() {
    let fx = trusted();
    let marker = fx.ws.root.join("late");
    fx.project_settings(json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
        "command": format!("{}; (sleep 3; touch {}) & sleep 30", fx.hook_command("UPS"), marker.display())}]}]}}));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s, None);
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "hello"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fx.hook_calls("UPS") == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let cancelled_at = std::time::Instant::now();
    s.call("chat/cancel", json!({"sessionId": id}));
    let events = s.turn_events(&turn);
    assert_eq!(
        events.last().unwrap()["outcome"],
        "cancelled",
        "{events:#?}"
    );
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!marker.exists(), "what the hook started was killed with it");
    assert!(fx.api.requests().is_empty());
}
