//! Skills in a chat, end to end: the real binary (the language server and the command line),
//! a real project in a temp dir, the fake Anthropic API on 127.0.0.1 scripting the model's
//! `Skill` and `Read` calls. Assertions are on the requests the API recorded, byte for byte
//! where `../shared/spec/skills-mcp.md` gives the text (section 11, checks 4 and 5).
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, new_session};
use crate::{fake_anthropic, harness};

use fake_anthropic::{FakeAnthropic, Turn};
use harness::Workspace;
use serde_json::{Value, json};

/// s2/calls' `proj-skill` and s4/root's nested folders.
fn project() -> Workspace {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    ws.write(
        ".claude/skills/proj-skill/SKILL.md",
        "---\nname: proj-skill\ndescription: Project skill\n---\n\n# Proj skill\n\nPROJ-BODY-MARKER line 1\nArguments were: $ARGUMENTS\nSkill dir: ${CLAUDE_SKILL_DIR}\n<!-- a comment in the body -->\nLast line.\n",
    );
    ws.write(
        ".claude/skills/hidden/SKILL.md",
        "---\ndescription: Hidden\ndisable-model-invocation: true\n---\nx\n",
    );
    ws.write(
        "a/b/.claude/skills/b-skill/SKILL.md",
        "---\ndescription: B-DESC-MARKER\n---\nB body\n",
    );
    ws.write("a/b/c/f.txt", "f\n");
    // Class K36: a conditional skill, announced when a touched file first matches.
    ws.write(
        ".claude/skills/cond/SKILL.md",
        "---\ndescription: COND DESC\npaths: \"src/**\"\n---\nCOND BODY\n",
    );
    ws.write("src/app.ts", "app\n");
    ws
}

fn script(api: &FakeAnthropic, ws: &Workspace) {
    let calls = [
        ("Skill", json!({"skill": "proj-skill", "args": "A1 B2"})),
        ("Read", json!({"file_path": ws.root.join("a/b/c/f.txt")})),
        ("Skill", json!({"skill": "proj-skill"})),
        ("Skill", json!({"skill": "hidden"})),
        ("Skill", json!({"skill": "b-skill"})),
        ("Skill", json!({"skill": "cond"})),
        ("Read", json!({"file_path": ws.root.join("src/app.ts")})),
        ("Skill", json!({"skill": "cond"})),
    ];
    for (i, (name, input)) in calls.iter().enumerate() {
        api.push(Turn::new().tool_use(&format!("toolu_{i}"), name, input.clone()));
    }
    api.push(Turn::new().text("All done."));
}

fn last_message(api: &FakeAnthropic, request: usize) -> Value {
    api.requests()[request].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

/// A `tool_result`'s text (our encoder sends it as text blocks; the reference CLI as a string).
fn result_text(block: &Value) -> String {
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

/// What every run must have sent, whichever driver.
fn check_requests(api: &FakeAnthropic, ws: &Workspace) {
    let root = ws.root.canonicalize().unwrap();
    let first = api.requests()[0].json();
    let system = first["system"][1]["text"].as_str().unwrap();
    assert!(
        system.contains(
            "\n\nThe following skills are available for use with the Skill tool:\n\n- proj-skill: Project skill\n\nToday's date is "
        ),
        "the listing in the environment section: {system}"
    );
    assert!(!system.contains("- hidden"), "{system}");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"Skill"), "{tools:?}");

    // Check 4: `Launching skill: proj-skill`, then the body with its substitutions.
    let m = last_message(api, 1);
    assert_eq!(m["content"][0]["type"], "tool_result", "{m:#}");
    assert_eq!(result_text(&m["content"][0]), "Launching skill: proj-skill");
    let dir = root.join(".claude/skills/proj-skill");
    assert_eq!(
        m["content"][1]["text"].as_str().unwrap(),
        format!(
            "Base directory for this skill: {d}\n\n# Proj skill\n\nPROJ-BODY-MARKER line 1\nArguments were: A1 B2\nSkill dir: {d}\n<!-- a comment in the body -->\nLast line.\n",
            d = dir.display()
        )
    );
    // Check 5: the Read below a/b discovers a/b's skills; the note follows the result.
    let m = last_message(api, 2);
    let blocks = m["content"].as_array().unwrap();
    let note = blocks.last().unwrap()["text"].as_str().unwrap();
    assert_eq!(
        note,
        "<system-reminder>\nNew skills discovered in a/b/.claude/skills, now available via the Skill tool:\n- b-skill\n\nThe following skills are available for use with the Skill tool:\n\n- b-skill: B-DESC-MARKER (from a/b/.claude/skills — applies when working on files under a/b/)\n</system-reminder>"
    );
    // Loaded again: the measured text; a hidden skill: the measured error.
    let m = last_message(api, 3);
    assert_eq!(
        result_text(&m["content"][0]),
        "Skill /proj-skill is already loaded above; instructions unchanged."
    );
    assert_eq!(m["content"].as_array().unwrap().len(), 1, "no body again");
    let m = last_message(api, 4);
    assert_eq!(m["content"][0]["is_error"], json!(true));
    assert!(
        result_text(&m["content"][0])
            .starts_with("<tool_use_error>Skill hidden cannot be used with Skill tool due to disable-model-invocation.")
    );
    // A discovered skill is invoked by its plain name; discovery happened once.
    let m = last_message(api, 5);
    assert_eq!(result_text(&m["content"][0]), "Launching skill: b-skill");
    let last = api.requests()[5].json()["messages"].to_string();
    assert_eq!(
        last.matches("New skills discovered in a/b").count(),
        1,
        "once"
    );
    // K36: the conditional skill is not listed (above) and unknown until a touched file
    // matches its paths; then the measured listing follows the tool result, once.
    let m = last_message(api, 6);
    assert_eq!(m["content"][0]["is_error"], json!(true));
    assert_eq!(
        result_text(&m["content"][0]),
        "<tool_use_error>Unknown skill: cond</tool_use_error>"
    );
    let m = last_message(api, 7);
    let blocks = m["content"].as_array().unwrap();
    assert_eq!(
        blocks.last().unwrap()["text"].as_str().unwrap(),
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- cond: COND DESC\n</system-reminder>"
    );
    let m = last_message(api, 8);
    assert_eq!(result_text(&m["content"][0]), "Launching skill: cond");
    assert_eq!(
        m["content"][1]["text"].as_str().unwrap(),
        format!(
            "Base directory for this skill: {}\n\nCOND BODY\n",
            root.join(".claude/skills/cond").display()
        )
    );
    let last = api.requests()[8].json()["messages"].to_string();
    assert_eq!(last.matches("- cond: COND DESC").count(), 1, "once");
}

#[test]
fn a_chat_over_the_language_server_invokes_a_project_skill() {
    let chat = Chat::on(project());
    let (ws, api) = (&chat.ws, &chat.api);
    script(api, ws);
    let mut s = chat.server(json!({}));
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "use the skill");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert_eq!(api.requests().len(), 9);
    check_requests(api, ws);
}

#[test]
fn a_chat_on_the_command_line_invokes_a_project_skill() {
    let chat = Chat::on(project());
    let (ws, api) = (&chat.ws, &chat.api);
    script(api, ws);
    let (code, out, err) = chat.cli(&["--no-git", "use the skill"], "", &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("All done."), "{out}");
    check_requests(api, ws);
}

/// Issue 25: a skill's shell block runs through the Bash tool, so in its sandbox: allowed by the
/// user, it writes in the workspace and nowhere else, and sees no other process of the user.
#[test]
fn a_skills_shell_block_runs_in_the_sandbox() {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    let planted = ws.home.join("planted-by-a-skill");
    ws.write(
        ".claude/skills/setup/SKILL.md",
        &format!(
            "---\ndescription: Sets things up\n---\nResult: !`touch made-here; touch {} 2>/dev/null; ls /proc | grep -c '^[0-9]'`\n",
            planted.display()
        ),
    );
    let chat = Chat::on(ws);
    let (ws, api) = (&chat.ws, &chat.api);
    api.push(Turn::new().tool_use("toolu_0", "Skill", json!({"skill": "setup"})));
    api.push(Turn::new().text("Done."));
    let mut s = chat.spawn(&[("chat/permission", json!({"decision": "allow"}))], &[]);
    s.initialize(&ws.root, json!({}));
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "set up");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let body = last_message(api, 1).to_string();
    assert!(ws.root.join("made-here").exists(), "{body}");
    assert!(
        !planted.exists(),
        "a skill's command wrote in the home folder: {body}"
    );
    // (The home folder of this test lies under `/tmp`, which the sandbox replaces with its own:
    // the `touch` lands there, never in the real one.) Its own processes only.
    let count: u32 = body
        .split("Result: ")
        .nth(1)
        .and_then(|r| r.split('\\').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{body}"));
    assert!(
        count <= 8,
        "the skill's command saw {count} processes: {body}"
    );
    let _ = s.shutdown();
}
