//! Subagents in a chat, end to end: the real binary (the language server), a real project with
//! agent files in a temp dir, a hook script that logs what it read, and the fake Anthropic API on
//! 127.0.0.1 scripting the parent's and the subagent's answers. Assertions are on the requests
//! the API recorded, byte for byte where `../shared/spec/hooks-agents-styles.md` quotes the text
//! (section 15, checks 17, 18 and 19), on the events and on the transcripts.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY, new_session};
use crate::{fake_anthropic, harness};

use std::path::PathBuf;
use std::time::Duration;

use fake_anthropic::Turn;
use harness::{Server, Workspace};
use serde_json::{Value, json};

/// The a1 fixture of section 9 (project and user agents), in a folder its user trusted, hooks
/// installed.
fn project() -> Chat {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    ws.write("README.md", "README-BODY-MARKER\n");
    let p = ".claude/agents/";
    ws.write(&format!("{p}alpha.md"), "---\nname: alpha\ndescription: ALPHA-DESC-MARKER tools as a YAML list\ntools:\n  - Bash\n  - Read\n---\nALPHA-BODY\n");
    ws.write(
        &format!("{p}badfm.md"),
        "---\nname: badfm\ndescription: [unclosed\n---\nBAD-BODY\n",
    );
    ws.write(&format!("{p}multi.md"), "---\nname: multi\ndescription: \"MULTI-DESC-MARKER line one\\nline two <b>&amp;</b>\"\ntools: Read, NoSuchTool\n---\nMULTI-BODY\n");
    ws.write(
        &format!("{p}sub/nested.md"),
        "---\nname: nested\ndescription: NESTED-DESC-MARKER in a subfolder\n---\nNESTED-BODY\n",
    );
    ws.write(&format!("{p}file-name.md"), "---\nname: other-name\ndescription: OTHERNAME-DESC-MARKER name differs from the file name\n---\nOTHER-BODY\n");
    ws.write(&format!("{p}reviewer.md"), "---\nname: reviewer\ndescription: REVIEWER-DESC-MARKER Reviews code for bugs\ntools: Read, Grep\nmodel: sonnet\ncolor: blue\n---\nREVIEWER-BODY-MARKER You are a code reviewer.\n");
    ws.write(
        &format!("{p}shared.md"),
        "---\nname: shared\ndescription: PROJECT-SHARED-DESC-MARKER\n---\nPROJECT-SHARED-BODY\n",
    );
    ws.write(&format!("{p}explore.md"), "---\nname: Explore\ndescription: PROJECT-EXPLORE-DESC-MARKER shadows the built-in Explore\n---\nEXPLORE-BODY\n");
    ws.write(
        &format!("{p}zeta.md"),
        "---\nname: zeta\ndescription: ZETA-DESC-MARKER no tools field\n---\nZETA-BODY\n",
    );
    ws.write(
        &format!("{p}noname.md"),
        "---\ndescription: NONAME-DESC-MARKER\n---\nx\n",
    );
    ws.write(&format!("{p}nodesc.md"), "---\nname: nodesc\n---\nx\n");
    ws.write(&format!("{p}nofm.md"), "NOFM-BODY-MARKER no frontmatter\n");
    ws.write(
        &format!("{p}notes.txt"),
        "---\nname: txtagent\ndescription: TXT-DESC-MARKER\n---\nx\n",
    );
    let user = ws.home.join(".claude/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("shared.md"),
        "---\nname: shared\ndescription: USER-SHARED-DESC-MARKER\n---\nUSER-SHARED-BODY\n",
    )
    .unwrap();
    std::fs::write(user.join("user-agent.md"), "---\nname: user-agent\ndescription: USER-AGENT-DESC-MARKER from the home folder\ntools: Bash\n---\nUSER-AGENT-BODY\n").unwrap();
    let fx = Chat::on(ws);
    fx.install_hooks();
    fx.trust();
    fx
}

/// The language server, not initialised; `answers`: what the client answers, by method.
fn server(fx: &Chat, answers: &[(&str, Value)]) -> Server {
    fx.spawn(answers, &[])
}

/// Initialises `s` on the project and opens a chat session: its id.
fn session(fx: &Chat, s: &mut Server) -> String {
    s.initialize(&fx.ws.root, json!({}));
    new_session(s)
}

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

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn last_blocks(req: &Value) -> Vec<Value> {
    req["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn agent(id: &str, input: Value) -> Turn {
    Turn::new().tool_use(id, "Agent", input)
}

/// Check 17 (a1/first): the agent types list, exactly, in the environment section; the `Agent`
/// tool offered with the measured sentence.
#[test]
fn check_17_the_agent_types_are_listed_as_measured() {
    let fx = project();
    fx.api.push(Turn::new().text("ok"));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = fx.requests();
    let env = reqs[0]["system"][1]["text"].as_str().unwrap();
    let start = env
        .find("\n\nAvailable agent types for the Agent tool:\n")
        .unwrap_or_else(|| panic!("no listing: {env}"))
        + 2;
    let closing = "When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.";
    let end = env[start..].find(closing).unwrap() + start + closing.len();
    let listing = &env[start..end];
    let lines: Vec<&str> = listing.split("\n- ").collect();
    assert_eq!(
        &lines[..5],
        &[
            "Available agent types for the Agent tool:",
            "alpha: ALPHA-DESC-MARKER tools as a YAML list (Tools: Bash, Read)",
            "badfm: [unclosed (Tools: All tools)",
            "claude: Catch-all for any task that doesn't fit a more specific agent. FleetView's default when no agent name is typed. (Tools: *)",
            "Explore: PROJECT-EXPLORE-DESC-MARKER shadows the built-in Explore (Tools: All tools)",
        ],
        "{listing}"
    );
    assert!(
        lines[5].starts_with("general-purpose: General-purpose agent for ")
            && lines[5].ends_with(" (Tools: *)")
    );
    assert_eq!(
        &lines[6..9],
        &[
            "multi: MULTI-DESC-MARKER line one\nline two <b>&amp;</b> (Tools: Read, NoSuchTool)",
            "nested: NESTED-DESC-MARKER in a subfolder (Tools: All tools)",
            "other-name: OTHERNAME-DESC-MARKER name differs from the file name (Tools: All tools)",
        ]
    );
    assert!(lines[9].starts_with("Plan: Software architect agent ") && lines[9].ends_with(" (Tools: All tools except Agent, Artifact, ArtifactComments, ArtifactData, ArtifactCheck, ExitPlanMode, Edit, Write, NotebookEdit)"));
    assert_eq!(
        &lines[10..],
        &[
            "reviewer: REVIEWER-DESC-MARKER Reviews code for bugs (Tools: Read, Grep)",
            "shared: PROJECT-SHARED-DESC-MARKER (Tools: All tools)",
            "statusline-setup: Use this agent to configure the user's Claude Code status line setting. (Tools: Read, Edit)",
            "user-agent: USER-AGENT-DESC-MARKER from the home folder (Tools: Bash)",
            &format!("zeta: ZETA-DESC-MARKER no tools field (Tools: All tools)\n\n{closing}"),
        ]
    );
    for absent in ["NONAME", "nodesc", "NOFM", "txtagent", "USER-SHARED"] {
        assert!(!env.contains(absent), "{absent}: {env}");
    }
    // The listing comes after the model line and before the date (skills-mcp.md section 1).
    assert!(env.find("You are powered by the model named").unwrap() < start);
    assert!(end < env.find("Today's date is ").unwrap());
    // The tool says where the list is, not the list.
    let tool = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Agent")
        .expect("the Agent tool is offered")
        .clone();
    let d = tool["description"].as_str().unwrap();
    assert!(d.contains(
        "Available agent types are listed in messages from the system in the conversation."
    ));
    assert!(!d.contains("REVIEWER-DESC-MARKER"));
}

/// Checks 18 and 19 (a1/reviewer, a1/sub_tool): the subagent's own request, its tool call's
/// hook stdin, the parent's hand-back; the events; the sidechain transcript.
#[test]
fn checks_18_and_19_the_subagents_request_hooks_and_hand_back() {
    let fx = project();
    fx.user_settings(fx.hooks_settings(&[
        ("SubagentStart", None, "SAS"),
        ("SubagentStop", None, "SASTOP"),
        ("PreToolUse", Some("Read"), "PRE"),
    ]));
    fx.behave(
        "SAS",
        json!({"stdout": json!({"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "SAS-CTX-MARKER"}}).to_string()}),
    );
    fx.behave("SASTOP", json!({"stdout": "SASTOP-STDOUT-MARKER\n"}));
    let readme = fx.ws.root.join("README.md");
    fx.api.push(agent(
        "toolu_agent",
        json!({"description": "review the readme", "subagent_type": "reviewer", "prompt": "SUBTASK-PROMPT-MARKER review README.md", "run_in_background": false}),
    ));
    fx.api
        .push(Turn::new().tool_use("toolu_read", "Read", json!({"file_path": readme})));
    fx.api
        .push(Turn::new().text("SUB-RESULT-MARKER the review is done"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[("chat/permission", json!({"decision": "allow"}))]);
    let id = session(&fx, &mut s);
    let events = s.chat_send(&id, "review it");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 4, "parent, subagent ×2, parent");
    let sub = &reqs[1];
    // Check 19: model, tools, system, messages.
    assert_eq!(sub["model"], "claude-sonnet-5-5");
    assert_eq!(tool_names(sub), ["Read", "Grep"]);
    assert_eq!(
        sub["system"][0]["text"],
        "You are a Claude agent, built on Anthropic's Claude Agent SDK."
    );
    let body = sub["system"][1]["text"].as_str().unwrap();
    assert!(body.starts_with("REVIEWER-BODY-MARKER You are a code reviewer.\n\nMessages from the agent that launched you \u{2014} your task and any mid-task course corrections \u{2014} direct your work."), "{body}");
    assert!(body.contains("\n\nNotes:\n- Agent threads always have their cwd reset"));
    let env = sub["system"][2]["text"].as_str().unwrap();
    assert!(
        env.starts_with("SubagentStart hook additional context: SAS-CTX-MARKER\n\n# Environment\n"),
        "{env}"
    );
    assert!(
        env.contains("The exact model ID is claude-sonnet-5-5."),
        "{env}"
    );
    assert!(
        env.trim_end()
            .rsplit("\n\n")
            .next()
            .unwrap()
            .starts_with("Today's date is ")
    );
    let all = sub.to_string();
    assert!(
        !all.contains("Available agent types"),
        "no agent list in the subagent's request"
    );
    let first = sub["messages"][0]["content"].as_array().unwrap();
    assert!(
        text_of(&first[0]).contains("# Shop"),
        "the CLAUDE.md block first: {first:#?}"
    );
    assert_eq!(
        text_of(first.last().unwrap()),
        "SUBTASK-PROMPT-MARKER review README.md"
    );
    // The main system prompt is not the subagent's.
    assert_ne!(sub["system"][0], reqs[0]["system"][0]);
    // Its Read ran, and its result went to the subagent, not the parent.
    let read = last_blocks(&reqs[2]);
    assert!(
        text_of(&read[0]).contains("README-BODY-MARKER"),
        "{read:#?}"
    );
    // Check 18: the PreToolUse stdin has agent_id and agent_type after permission_mode.
    let pre = fx.hook_stdin("PRE", 0);
    let keys: Vec<&str> = pre
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let at = keys.iter().position(|k| *k == "permission_mode").unwrap();
    assert_eq!(
        &keys[at + 1..at + 3],
        &["agent_id", "agent_type"],
        "{keys:?}"
    );
    assert_eq!(pre["agent_type"], "reviewer");
    assert_eq!(pre["tool_name"], "Read");
    let agent_id = pre["agent_id"].as_str().unwrap().to_string();
    let sas = fx.hook_stdin("SAS", 0);
    assert_eq!(sas["agent_id"], agent_id.as_str());
    assert_eq!(sas["agent_type"], "reviewer");
    let stop = fx.hook_stdin("SASTOP", 0);
    assert_eq!(
        stop["last_assistant_message"],
        "SUB-RESULT-MARKER the review is done"
    );
    // The parent's tool_result: the hand-back as measured.
    let back = last_blocks(&reqs[3]);
    assert_eq!(back[0]["tool_use_id"], "toolu_agent");
    let text = text_of(&back[0]);
    assert!(text.starts_with("  <tools-used-before-summary>Read</tools-used-before-summary>\n  \n[Subagent hand-back] The text below is the final report of a subagent"), "{text}");
    assert!(
        text.contains("The report follows:\n  SUB-RESULT-MARKER the review is done\nagentId: "),
        "{text}"
    );
    assert!(text.contains(&format!("agentId: {agent_id}\n<usage>subagent_tokens: ")));
    assert!(text.contains("\ntool_uses: 1\nduration_ms: "));
    assert!(
        !reqs[3].to_string().contains("SASTOP-STDOUT-MARKER"),
        "SubagentStop's stdout goes nowhere"
    );
    // The events: one subagent item, its tool call under the Agent call.
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let start_at = kinds
        .iter()
        .position(|k| *k == "subagentStart")
        .expect("subagentStart");
    let end_at = kinds
        .iter()
        .position(|k| *k == "subagentEnd")
        .expect("subagentEnd");
    assert!(start_at < end_at);
    assert_eq!(events[start_at]["toolUseId"], "toolu_agent");
    assert_eq!(events[start_at]["agentType"], "reviewer");
    assert_eq!(events[start_at]["model"], "claude-sonnet-5-5");
    assert_eq!(events[end_at]["outcome"], "completed");
    assert_eq!(events[end_at]["toolUses"], 1);
    let inner: Vec<&Value> = events[start_at..end_at]
        .iter()
        .filter(|e| e["kind"] == "toolUse" || e["kind"] == "toolResult")
        .collect();
    assert_eq!(inner.len(), 2, "{inner:#?}");
    assert!(inner.iter().all(|e| e["parentToolUseId"] == "toolu_agent"));
    let agent_result = events
        .iter()
        .position(|e| e["kind"] == "toolResult" && e["toolUseId"] == "toolu_agent")
        .unwrap();
    assert!(agent_result > end_at);
    // The transcripts: the parent's has the Agent call and its hand-back; the sidechain the
    // subagent's messages, each `isSidechain` with its agent id.
    let transcript = PathBuf::from(
        s.call("chat/list", json!({}))["sessions"][0]["path"]
            .as_str()
            .unwrap(),
    );
    let main = std::fs::read_to_string(&transcript).unwrap();
    assert!(main.contains("toolu_agent") && main.contains("[Subagent hand-back]"));
    assert!(!main.contains("\"isSidechain\""));
    let side = transcript
        .with_extension("")
        .join("subagents")
        .join(format!("agent-{agent_id}.jsonl"));
    let side = std::fs::read_to_string(&side).unwrap_or_else(|e| panic!("{}: {e}", side.display()));
    let records: Vec<Value> = side
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        records.len(),
        4,
        "prompt, Read call, its result, the report"
    );
    assert!(records.iter().all(|r| r["isSidechain"] == true
        && r["agentId"] == agent_id.as_str()
        && r["sessionId"] == id.as_str()));
    assert!(side.contains("SUBTASK-PROMPT-MARKER") && side.contains("SUB-RESULT-MARKER"));
    assert!(!side.contains(KEY));
}

/// a1/listagents: an unknown type is an error naming every agent, as measured; a background
/// run is refused, not pretended.
#[test]
fn an_unknown_type_and_a_background_run_are_errors() {
    let fx = project();
    fx.api.push(
        Turn::new()
            .tool_use("toolu_1", "Agent", json!({"description": "x", "subagent_type": "no-such-agent", "prompt": "p"}))
            .tool_use("toolu_2", "Agent", json!({"description": "y", "subagent_type": "zeta", "prompt": "p", "run_in_background": true})),
    );
    fx.api.push(Turn::new().text("ok"));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s);
    s.chat_send(&id, "go");
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 2, "no subagent request");
    let results = last_blocks(&reqs[1]);
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(
        text_of(&results[0]),
        "Agent type 'no-such-agent' not found. Available agents: alpha, badfm, claude, Explore, general-purpose, multi, nested, other-name, Plan, reviewer, shared, statusline-setup, user-agent, zeta"
    );
    assert_eq!(results[1]["is_error"], true);
    assert!(text_of(&results[1]).contains("does not run agents in the background"));
}

/// A subagent's tool call meets the session's deny rules: the denied file's bytes reach no
/// request, and the subagent gets the rule's refusal.
#[test]
fn a_subagents_call_denied_by_a_deny_rule_is_refused() {
    let fx = project();
    fx.ws.write(".env", "SECRET-ENV-MARKER=1\n");
    let mut settings = json!({"permissions": {"deny": ["Read(./.env)"]}});
    settings["sandbox"] = json!({});
    fx.ws.write(".claude/settings.json", &settings.to_string());
    fx.api.push(agent(
        "toolu_agent",
        json!({"description": "d", "subagent_type": "zeta", "prompt": "read .env"}),
    ));
    fx.api.push(Turn::new().tool_use(
        "toolu_read",
        "Read",
        json!({"file_path": fx.ws.root.join(".env")}),
    ));
    fx.api.push(Turn::new().text("SUB-DONE"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = server(&fx, &[("chat/permission", json!({"decision": "allow"}))]);
    let id = session(&fx, &mut s);
    let events = s.chat_send(&id, "go");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 4);
    let r = last_blocks(&reqs[2]);
    assert_eq!(r[0]["is_error"], true, "{r:#?}");
    assert!(
        !fx.api
            .requests()
            .iter()
            .any(|q| String::from_utf8_lossy(&q.body).contains("SECRET-ENV-MARKER"))
    );
    assert!(
        !events
            .iter()
            .any(|e| e.to_string().contains("SECRET-ENV-MARKER"))
    );
}

/// Cancelling the parent's turn while the subagent's tool waits for the user stops both: the
/// command never runs, no further request is sent, the turn ends cancelled.
#[test]
fn cancelling_the_turn_stops_the_subagent_and_its_tool() {
    let fx = project();
    fx.api.push(agent(
        "toolu_agent",
        json!({"description": "d", "subagent_type": "user-agent", "prompt": "touch"}),
    ));
    fx.api.push(Turn::new().tool_use(
        "toolu_bash",
        "Bash",
        json!({"command": "touch made-by-subagent.txt"}),
    ));
    fx.api.push(Turn::new().text("never"));
    let mut s = server(&fx, &[("chat/permission", json!(harness::NO_ANSWER))]);
    let id = session(&fx, &mut s);
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "go"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    s.wait_for(Duration::from_secs(30), |m| {
        m["method"] == "chat/permission"
    })
    .expect("the subagent's Bash asks the user, as the parent's would");
    s.call("chat/cancel", json!({"sessionId": id}));
    let events = s.turn_events(&turn);
    assert_eq!(
        events.last().unwrap()["outcome"],
        "cancelled",
        "{events:#?}"
    );
    let end = events
        .iter()
        .find(|e| e["kind"] == "subagentEnd")
        .expect("subagentEnd");
    assert_eq!(end["outcome"], "cancelled");
    assert_eq!(fx.requests().len(), 2, "parent and one subagent request");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!fx.ws.root.join("made-by-subagent.txt").exists());
}

/// permissions-trust.md section 6 (r5/star): a deny rule naming `Agent` removes the tool and the
/// agent types list with it.
#[test]
fn denying_the_agent_tool_removes_the_listing() {
    let fx = project();
    fx.ws.write(
        ".claude/settings.local.json",
        &json!({"permissions": {"deny": ["Agent"]}}).to_string(),
    );
    fx.api.push(Turn::new().text("ok"));
    let mut s = server(&fx, &[]);
    let id = session(&fx, &mut s);
    s.chat_send(&id, "hello");
    let reqs = fx.requests();
    assert!(!tool_names(&reqs[0]).contains(&"Agent".to_string()));
    let system = reqs[0]["system"].to_string();
    assert!(!system.contains("Available agent types"), "{system}");
    assert!(system.contains("# Environment"));
}
