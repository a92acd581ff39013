//! MCP servers in a chat, end to end: the real binary (the language server over the JSON-RPC
//! harness, and the command line on a pseudo-terminal), real MCP servers (the official Python
//! SDK's, `tests/data/mcp/demo_server.py`; hostile ones of ours; `server-everything` from npm when
//! `.ci/run` installed it), the fake Anthropic API on 127.0.0.1 scripting the model's calls.
//! Assertions are on what the API received (`../shared/spec/skills-mcp.md` sections 6 to 8 and
//! checks 6 to 8), on what the user was asked and what was remembered, and on the processes.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY, new_session};
use crate::{fake_anthropic, harness, mcp_http};
use harness::bin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_anthropic::Turn;
use harness::{Server, Workspace};
use serde_json::{Value, json};

const DEFERRED_HEADER: &str = "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/mcp")
        .join(name)
}

/// A project with a skill, and a copy of the demo server of its own (so its processes can be
/// told from other tests'), which its user trusts (as `claude-context trust --yes` records it):
/// the MCP tests are about approval, not trust (the trust tests use [`untrusted`]).
fn trusted() -> Chat {
    let chat = untrusted();
    answer_trust(&chat, "--yes");
    chat
}

/// [`trusted`]'s project, nobody asked to trust it yet.
fn untrusted() -> Chat {
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "# Shop\n");
    ws.write(
        ".claude/skills/proj-skill/SKILL.md",
        "---\nname: proj-skill\ndescription: Project skill\n---\n\nPROJ-BODY-MARKER\n",
    );
    let chat = Chat::on(ws);
    std::fs::create_dir_all(demo(&chat).parent().unwrap()).unwrap();
    std::fs::copy(data("demo_server.py"), demo(&chat)).unwrap();
    chat
}

/// The project's own copy of the demo server.
fn demo(chat: &Chat) -> PathBuf {
    chat.ws.dir.path().join("servers/demo_server.py")
}

/// Where `.ci/run` installs what the tests need: `${XDG_CACHE_HOME:-$HOME/.cache}/claude-context-ci`.
fn ci_cache() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("claude-context-ci"))
}

/// The PyPI `mcp` SDK that `.ci/run` installs in the cache when `python3` has none of its own
/// (the demo server imports it).
fn python_sdk_dir() -> Option<String> {
    let dir = ci_cache()?.join("python-mcp");
    dir.join("mcp").is_dir().then(|| dir.display().to_string())
}

/// Records an answer for the project with `claude-context trust` (`--yes`, `--no`,
/// `--forget`), in the test's state directory.
fn answer_trust(chat: &Chat, answer: &str) {
    let o = chat
        .command(bin())
        .args(["trust", answer])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The project's trust as `claude-context trust --json` shows it.
fn trust_state(chat: &Chat) -> Value {
    let o = chat
        .command(bin())
        .args(["trust", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap()
}

fn demo_entry(chat: &Chat) -> Value {
    match python_sdk_dir() {
        Some(dir) => {
            json!({"command": "python3", "args": [demo(chat)], "env": {"PYTHONPATH": dir}})
        }
        None => json!({"command": "python3", "args": [demo(chat)]}),
    }
}

/// `.mcp.json` in the project (servers that need the user's approval).
fn project_servers(chat: &Chat, servers: Value) {
    chat.ws.write(
        ".mcp.json",
        &serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    );
}

/// `~/.claude.json`'s `mcpServers` (the user's own: no approval).
fn user_servers(chat: &Chat, servers: Value) {
    std::fs::create_dir_all(&chat.ws.home).unwrap();
    std::fs::write(
        chat.ws.home.join(".claude.json"),
        serde_json::to_string(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
}

/// The language server; `answers`: what the client answers, by method (or `method:tool`).
fn server(chat: &Chat, answers: &[(&str, Value)], more: &[(&str, &str)]) -> Server {
    server_with(chat, answers, more, json!({}))
}

/// [`server`] with these `initializationOptions`.
fn server_with(
    chat: &Chat,
    answers: &[(&str, Value)],
    more: &[(&str, &str)],
    init: Value,
) -> Server {
    let mut s = chat.spawn(answers, more);
    s.initialize(&chat.ws.root, init);
    s
}

/// The demo server behind `sh`, which first appends a line to `started` in the project:
/// the marker says the server was started at all.
fn marked_entry(chat: &Chat) -> Value {
    let entry = demo_entry(chat);
    let script = format!(
        "echo started >> '{}'; exec python3 \"$0\"",
        marker(chat).display()
    );
    json!({"command": "sh", "args": ["-c", script, demo(chat)], "env": entry.get("env").cloned().unwrap_or(json!({}))})
}

/// The marker [`marked_entry`]'s server leaves.
fn marker(chat: &Chat) -> PathBuf {
    chat.ws.path("started")
}

/// A cloned repository that approves its own server: `.mcp.json` (the marked server) and a
/// committed `.claude/settings.local.json` with `enableAllProjectMcpServers`.
fn self_approving_repository(chat: &Chat) {
    project_servers(chat, json!({"demo": marked_entry(chat)}));
    chat.ws.write(
        ".claude/settings.local.json",
        r#"{"enableAllProjectMcpServers": true}"#,
    );
    chat.ws.git_init();
}

fn local_settings_of(chat: &Chat) -> Option<Value> {
    std::fs::read_to_string(chat.ws.path(".claude/settings.local.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap())
}

/// Processes whose command line names this project's demo server copy.
fn demo_processes(chat: &Chat) -> Vec<u32> {
    processes_with(&demo(chat).display().to_string())
}

fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
            && !String::from_utf8_lossy(
                &std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default(),
            )
            .contains(") Z ")
        {
            out.push(pid);
        }
    }
    out
}

fn wait_until(what: &str, timeout: Duration, f: impl Fn() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn system_env(r: &fake_anthropic::Recorded) -> String {
    r.json()["system"][1]["text"].as_str().unwrap().to_string()
}

fn tool_names(r: &fake_anthropic::Recorded) -> Vec<String> {
    r.json()["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn last_message(r: &fake_anthropic::Recorded) -> Value {
    r.json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

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

fn permissions(s: &Server, tool: &str) -> Vec<Value> {
    s.server_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "chat/permission" && r["params"]["tool"] == tool)
        .map(|r| r["params"].clone())
        .collect()
}

const DEMO_NAMES: &str =
    "\nmcp__demo__add\nmcp__demo__echo\nmcp__demo__env\nmcp__demo__fail\nmcp__demo__sleep";

/// The skill, a `select:` ToolSearch, two MCP calls (one asking the server for the key).
fn skill_and_mcp_script(chat: &Chat) {
    chat.script(
        &[
            ("Skill", json!({"skill": "proj-skill"})),
            (
                "ToolSearch",
                json!({"query": "select:mcp__demo__add,mcp__demo__env"}),
            ),
            ("mcp__demo__add", json!({"a": 2, "b": 3})),
            ("mcp__demo__env", json!({"name": "ANTHROPIC_API_KEY"})),
        ],
        "All done.",
    );
}

/// What the API must have received for [`skill_and_mcp_script`], whichever front end.
fn check_skill_and_mcp_requests(chat: &Chat) {
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 5, "{reqs:#?}");
    // Check 6: the deferred list (no resource tools: ours has none) and the instructions,
    // between the model line and the skills listing, in the measured order.
    let env = system_env(&reqs[0]);
    let deferred = format!("{DEFERRED_HEADER}{DEMO_NAMES}");
    let instructions = "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n\n## demo\nDEMO-INSTRUCTIONS-MARKER: use add for sums.\nSecond line <b>bold</b> & more.";
    let skills = "The following skills are available for use with the Skill tool:\n\n- proj-skill: Project skill";
    // The agent types come between the deferred list and the instructions (skills-mcp.md
    // section 1, part 5).
    let agents_closing = "When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.";
    assert!(
        env.contains(&format!(
            "\n\n{deferred}\n\nAvailable agent types for the Agent tool:\n- claude: "
        )),
        "{env}"
    );
    assert!(
        env.contains(&format!(
            "{agents_closing}\n\n{instructions}\n\n{skills}\n\nToday's date is "
        )),
        "{env}"
    );
    assert!(!env.contains("ListMcpResourcesTool"), "{env}");
    let tools = tool_names(&reqs[0]);
    assert!(tools.contains(&"ToolSearch".to_string()), "{tools:?}");
    assert!(tools.contains(&"Skill".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__")),
        "deferred: {tools:?}"
    );
    // The skill.
    assert_eq!(
        result_text(&last_message(&reqs[1])["content"][0]),
        "Launching skill: proj-skill"
    );
    // Check 8: tool references, then `Tool loaded.`; the next request carries the definitions.
    let m = last_message(&reqs[2]);
    assert_eq!(
        m["content"][0]["content"],
        json!([
            {"type": "tool_reference", "tool_name": "mcp__demo__add"},
            {"type": "tool_reference", "tool_name": "mcp__demo__env"}
        ]),
        "{m:#}"
    );
    assert_eq!(m["content"][1]["text"], "Tool loaded.");
    let body = String::from_utf8_lossy(&reqs[2].body).to_string();
    assert!(
        body.contains("{\"name\":\"mcp__demo__add\",\"description\":\"Add two numbers.\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"a\":"),
        "{body}"
    );
    let add = reqs[2].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__demo__add")
        .cloned()
        .unwrap();
    assert_eq!(add["defer_loading"], json!(true));
    assert_eq!(add["input_schema"]["required"], json!(["a", "b"]));
    assert_eq!(add["input_schema"]["title"], "addArguments");
    assert!(!tool_names(&reqs[1]).contains(&"mcp__demo__add".to_string()));
    // The system prompt of the first request stays (the prompt cache).
    assert_eq!(system_env(&reqs[2]), env);
    // The call's result: structuredContent as compact JSON.
    let m = last_message(&reqs[3]);
    assert_eq!(result_text(&m["content"][0]), "{\"result\":5}", "{m:#}");
    assert_ne!(m["content"][0]["is_error"], json!(true));
    // No key reached the server's environment.
    let m = last_message(&reqs[4]);
    let text = result_text(&m["content"][0]);
    assert!(text.contains("<unset>"), "{text}");
    for r in &reqs {
        assert!(!String::from_utf8_lossy(&r.body).contains(KEY));
    }
}

/// Issue 21's "done when", over the language server: the project's server is asked about with
/// the reference dialog's words, remembered, started; its tools are listed in the prompt, a
/// ToolSearch loads two definitions, each call asks like Write and returns; a project skill in
/// the same turn. A second session starts the server without asking again; shutdown stops it.
#[test]
fn a_chat_over_the_language_server_approves_loads_and_calls_an_mcp_server() {
    let chat = trusted();
    project_servers(&chat, json!({"demo": demo_entry(&chat)}));
    skill_and_mcp_script(&chat);
    let mut s = server(
        &chat,
        &[
            ("chat/permission:mcpServer", json!({"decision": "allow"})),
            ("chat/permission", json!({"decision": "allow"})),
        ],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "use the skill and add");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    check_skill_and_mcp_requests(&chat);
    // The dialog's question, once.
    let asked = permissions(&s, "mcpServer");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let q = &asked[0];
    assert_eq!(q["summary"], "New MCP server found in this project: demo");
    assert_eq!(
        q["warning"],
        "MCP servers may execute code or access system resources. All tool calls require approval."
    );
    assert_eq!(
        q["choices"],
        json!({"allow": "Use this MCP server", "allowSession": "Use this and all future MCP servers in this project", "deny": "Continue without using this MCP server"})
    );
    assert_eq!(q["input"]["command"], "python3");
    assert_eq!(q["input"]["server"], "demo");
    assert_eq!(q["sessionId"], id.as_str());
    // Remembered as the dialog remembers it.
    assert_eq!(
        local_settings_of(&chat).unwrap()["enabledMcpjsonServers"],
        json!(["demo"])
    );
    // Each MCP call asked like Write.
    let add = permissions(&s, "mcp__demo__add");
    assert_eq!(add.len(), 1);
    assert_eq!(
        add[0]["sessionScope"],
        "every call of mcp__demo__add for this session"
    );
    assert_eq!(add[0]["input"], json!({"a": 2, "b": 3}));
    assert_eq!(permissions(&s, "mcp__demo__env").len(), 1);
    // The session preview shows the server running, with its tools.
    let p = s.call("context/preview", json!({"sessionId": id}));
    let demo = &p["mcp"]["servers"][0];
    assert_eq!(demo["status"], "running", "{:#}", p["mcp"]);
    assert_eq!(demo["tools"].as_array().unwrap().len(), 5);
    // A second session: not asked again; its server started too.
    chat.api.push(Turn::new().text("Hi."));
    let id2 = new_session(&mut s);
    let events = s.chat_send(&id2, "hello");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    assert_eq!(permissions(&s, "mcpServer").len(), 1, "remembered");
    let last = chat.api.requests().last().unwrap().clone();
    assert!(
        system_env(&last).contains(DEMO_NAMES),
        "{}",
        system_env(&last)
    );
    assert_eq!(demo_processes(&chat).len(), 2, "one server per session");
    // Shutdown stops them.
    let _ = s.shutdown();
    wait_until("the servers stop", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });
}

/// The same turn on the command line: the dialog on the terminal (a pseudo-terminal from
/// util-linux `script`), the calls' prompts after it; the next run starts the server unasked,
/// and without a terminal nothing is remembered.
#[test]
fn a_chat_on_the_command_line_approves_loads_and_calls_an_mcp_server() {
    let chat = trusted();
    project_servers(&chat, json!({"demo": demo_entry(&chat)}));
    // Without a terminal: not asked, not remembered, not started.
    chat.api.push(Turn::new().text("Hi."));
    let o = chat
        .command("setsid")
        .arg("--wait")
        .arg(bin())
        .args(["chat", "--no-git", "hello"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("New MCP server found in this project: demo: denied: there is no terminal"),
        "{stderr}"
    );
    assert_eq!(local_settings_of(&chat), None, "nothing remembered");
    let first = chat.api.requests()[0].clone();
    assert!(!system_env(&first).contains("mcp__demo"), "not started");
    assert!(!tool_names(&first).contains(&"ToolSearch".to_string()));
    chat.api.reset();

    // On a terminal: `y` uses the server, then `y` for each call.
    skill_and_mcp_script(&chat);
    let command = format!(
        "{} chat --no-git 'use the skill and add'",
        bin().display().to_string().replace('\'', "'\\''")
    );
    let mut child = chat
        .command("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .env("MCP_CONNECTION_NONBLOCKING", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"y\ny\ny\n").unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("New MCP server found in this project: demo\r\n  WARNING: MCP servers may execute code or access system resources. All tool calls require approval.\r\n  command: python3 "),
        "{out}"
    );
    assert!(
        out.contains("  y: Use this MCP server\r\n  a: Use this and all future MCP servers in this project\r\n  n: Continue without using this MCP server (default)"),
        "{out}"
    );
    assert!(
        out.contains("Allow mcp__demo__add (MCP server demo): {\"a\":2,\"b\":3}?"),
        "{out}"
    );
    assert!(out.contains("All done."), "{out}");
    assert_eq!(
        local_settings_of(&chat).unwrap()["enabledMcpjsonServers"],
        json!(["demo"])
    );
    check_skill_and_mcp_requests(&chat);
    chat.api.reset();

    // Remembered: the next run (no terminal) starts it without asking.
    let mut api_turn = Turn::new();
    api_turn = api_turn.text("Hi again.");
    chat.api.push(api_turn);
    let (code, out, err) = harness::chat_cli(
        &bin(),
        &chat.ws,
        &["--no-git", "hello"],
        &chat
            .vars(&[("MCP_CONNECTION_NONBLOCKING", "0")])
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
        "",
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains("New MCP server"), "{err}");
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    wait_until(
        "the server stops with the command",
        Duration::from_secs(30),
        || demo_processes(&chat).is_empty(),
    );
}

/// "Continue without using this MCP server" is remembered as the dialog remembers it, and the
/// model hears nothing of the server; "Use this and all future" starts the other servers
/// unasked.
#[test]
fn a_rejected_server_is_remembered_and_use_all_approves_the_rest() {
    let chat = trusted();
    project_servers(&chat, json!({"demo": demo_entry(&chat)}));
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server(
        &chat,
        &[("chat/permission:mcpServer", json!({"decision": "deny"}))],
        &[],
    );
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    let first = chat.api.requests()[0].clone();
    assert!(!system_env(&first).contains("mcp__demo"));
    assert!(!tool_names(&first).contains(&"ToolSearch".to_string()));
    assert_eq!(
        local_settings_of(&chat).unwrap()["disabledMcpjsonServers"],
        json!(["demo"])
    );
    assert!(demo_processes(&chat).is_empty(), "never started");
    let _ = s.shutdown();

    let chat = trusted();
    project_servers(
        &chat,
        json!({"a-demo": demo_entry(&chat), "b-demo": demo_entry(&chat)}),
    );
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server(
        &chat,
        &[(
            "chat/permission:mcpServer",
            json!({"decision": "allowSession"}),
        )],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    let asked = permissions(&s, "mcpServer");
    assert_eq!(asked.len(), 1, "the second is not asked: {asked:#?}");
    assert_eq!(asked[0]["input"]["server"], "a-demo");
    let env = system_env(&chat.api.requests()[0]);
    assert!(
        env.contains("\nmcp__a-demo__add\n") && env.contains("\nmcp__b-demo__add\n"),
        "{env}"
    );
    let settings = local_settings_of(&chat).unwrap();
    assert_eq!(settings["enableAllProjectMcpServers"], json!(true));
    assert_eq!(settings["enabledMcpjsonServers"], json!(["a-demo"]));
    let _ = s.shutdown();
}

/// Check 7 and section 6: failed servers in the note right after the deferred list (a command
/// that does not exist; one that exits, started twice); a `select:` of a failed server's tool is
/// left out without a word; a search that finds nothing says so.
#[test]
fn failed_servers_are_in_the_note_and_searches_leave_them_out() {
    let chat = trusted();
    let starts = chat.ws.dir.path().join("starts.txt");
    user_servers(
        &chat,
        json!({
            "broken": {"command": "/nonexistent/bin/mcp-server"},
            "failing": {"command": "python3", "args": [data("hostile_server.py"), "exit", starts]},
            "demo": demo_entry(&chat),
        }),
    );
    chat.script(
        &[
            (
                "ToolSearch",
                json!({"query": "select:mcp__failing__ok,mcp__demo__echo,mcp__nope__x"}),
            ),
            ("ToolSearch", json!({"query": "zebra quantum"})),
            ("ToolSearch", json!({"query": "select:mcp__broken__x"})),
        ],
        "Done.",
    );
    let mut s = server(&chat, &[], &[("MCP_CONNECTION_NONBLOCKING", "0")]);
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "search");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert!(
        permissions(&s, "mcpServer").is_empty(),
        "the user's own servers are not asked about"
    );
    let reqs = chat.api.requests();
    let env = system_env(&reqs[0]);
    let note = "The following MCP servers are configured but failed to connect — their tools (typically named mcp__<server>__*) are unavailable for this session:\nbroken (ENOENT): \"ENOENT: no such file or directory, posix_spawn '/nonexistent/bin/mcp-server'\"\nfailing (CONNECTION_CLOSED): \"Connection closed\"\n\nTreat this as a connection failure";
    assert!(
        env.contains(&format!("{DEFERRED_HEADER}{DEMO_NAMES}\n\n{note}")),
        "{env}"
    );
    assert_eq!(
        std::fs::read_to_string(&starts).unwrap().lines().count(),
        2,
        "started a second time before it was reported"
    );
    assert_eq!(
        last_message(&reqs[1])["content"][0]["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__demo__echo"}])
    );
    for i in [2, 3] {
        let m = last_message(&reqs[i]);
        assert_eq!(
            result_text(&m["content"][0]),
            "No matching deferred tools found"
        );
        assert_eq!(
            m["content"].as_array().unwrap().len(),
            1,
            "no `Tool loaded.`"
        );
    }
    let _ = s.shutdown();
}

/// Sections 6 and 7: the first request waits about 2 s, then lists a server still connecting in
/// the note; a `select:` of its tool waits for it; after that result, the delta brings the names
/// not loaded yet and its instructions (a `<system-reminder>` after the results, our layout).
#[test]
fn a_server_that_connects_late_is_noted_then_announced_after_the_next_result() {
    let chat = trusted();
    user_servers(
        &chat,
        json!({
            "slow": {"command": "python3", "args": [data("hostile_server.py"), "slow", "12"]},
        }),
    );
    chat.script(
        &[("ToolSearch", json!({"query": "select:mcp__slow__ok"}))],
        "Done.",
    );
    let mut s = server(&chat, &[], &[]);
    let started = Instant::now();
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "is it fine?");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = chat.api.requests();
    let waited = reqs[0].at.duration_since(started);
    eprintln!("first request after {} ms", waited.as_millis());
    // About 2 s after the server started; the bound below is generous for a loaded machine,
    // and the server (12 s to connect) is still connecting either way: the note below says so.
    assert!(waited >= Duration::from_millis(1_900), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    let env = system_env(&reqs[0]);
    assert!(
        env.contains("The following MCP servers are still connecting — their tools (typically named mcp__<server>__*) are not yet available but will appear shortly:\nslow\n\nIf the user's request might be served"),
        "{env}"
    );
    assert!(!env.contains(DEFERRED_HEADER), "{env}");
    assert!(tool_names(&reqs[0]).contains(&"ToolSearch".to_string()));
    let m = last_message(&reqs[1]);
    let blocks = m["content"].as_array().unwrap();
    assert_eq!(
        blocks[0]["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__slow__ok"}]),
        "the select waited for the server: {m:#}"
    );
    assert_eq!(blocks[1]["text"], "Tool loaded.");
    assert_eq!(
        blocks[2]["text"].as_str().unwrap(),
        format!(
            "<system-reminder>\n{DEFERRED_HEADER}\nmcp__slow__other\n\n# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n\n## slow\nSLOW-INSTRUCTIONS-MARKER\n</system-reminder>"
        )
    );
    assert_eq!(blocks.len(), 3);
    assert!(tool_names(&reqs[1]).contains(&"mcp__slow__ok".to_string()));
    let _ = s.shutdown();
}

/// A hung call (the demo server's `sleep`) stops when the turn is cancelled: the turn ends at
/// once, the model is told, and the server still answers afterwards.
#[test]
fn a_hung_mcp_call_is_cancelled_with_the_turn() {
    let chat = trusted();
    user_servers(&chat, json!({"demo": demo_entry(&chat)}));
    chat.script(
        &[
            (
                "ToolSearch",
                json!({"query": "select:mcp__demo__sleep,mcp__demo__echo"}),
            ),
            ("mcp__demo__sleep", json!({"seconds": 600})),
        ],
        "unused",
    );
    let mut s = server(
        &chat,
        &[("chat/permission", json!({"decision": "allowSession"}))],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "sleep"}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    s.notification("chat/event", |p| {
        p["turnId"] == turn.as_str() && p["kind"] == "toolUse" && p["name"] == "mcp__demo__sleep"
    })
    .expect("the sleep call");
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    let r = s.call("chat/cancel", json!({"sessionId": id}));
    assert_eq!(r["cancelled"], json!(true));
    let done = s
        .notification("chat/event", |p| {
            p["turnId"] == turn.as_str() && p["kind"] == "done"
        })
        .unwrap();
    let took = t.elapsed();
    eprintln!("cancel → done: {} ms", took.as_millis());
    assert_eq!(done["outcome"], "cancelled");
    // Not the 600 s the call asked for; generous for a loaded machine.
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The server answers the next call.
    chat.api.reset();
    chat.script(&[("mcp__demo__echo", json!({"text": "still here"}))], "ok");
    let events = s.chat_send(&id, "echo");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let m = last_message(&chat.api.requests()[1]);
    assert!(
        result_text(&m["content"][0]).contains("still here"),
        "{m:#}"
    );
    let _ = s.shutdown();
}

/// Hostile servers are bounded and reported, and the session goes on: 3,000 tools (1,000 kept),
/// garbage on stdout, a server that never answers, a 12 MB tool list (over the message cap):
/// each within the connection deadline (`MCP_TIMEOUT`); a grandchild the server started dies with
/// the session's end.
#[test]
fn hostile_servers_are_bounded_and_the_session_goes_on() {
    let chat = trusted();
    let pid_file = chat.ws.dir.path().join("grandchild.pid");
    let h = |mode: &str| json!({"command": "python3", "args": [data("hostile_server.py"), mode]});
    user_servers(
        &chat,
        json!({
            "many": h("many-tools"),
            "garbage": h("garbage"),
            "silent": h("silent"),
            "huge": h("huge-descriptions"),
            "grandchild": {"command": "python3", "args": [data("hostile_server.py"), "grandchild", pid_file]},
        }),
    );
    chat.api.push(Turn::new().text("Still here."));
    let mut s = server(
        &chat,
        &[],
        &[("MCP_CONNECTION_NONBLOCKING", "0"), ("MCP_TIMEOUT", "4000")],
    );
    let id = new_session(&mut s);
    let t = Instant::now();
    let events = s.chat_send(&id, "hello");
    let took = t.elapsed();
    eprintln!("first turn with hostile servers: {} ms", took.as_millis());
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    // Within the 4 s connection deadline, not the 30 s default; generous for a loaded machine.
    assert!(took < Duration::from_secs(25), "{took:?}");
    let env = system_env(&chat.api.requests()[0]);
    let many = env.lines().filter(|l| l.starts_with("mcp__many__")).count();
    assert_eq!(many, 1_000, "the first 1,000 tools are kept");
    assert!(env.contains("\nmcp__grandchild__ok\n"), "{env}");
    for name in ["garbage", "silent", "huge"] {
        assert!(
            env.contains(&format!(
                "\n{name} (TIMEOUT): \"Connection timed out after 4000ms\""
            )),
            "{name}: {env}"
        );
    }
    let (_, peak) = s.memory_kib();
    eprintln!("server peak RSS with hostile MCP servers: {peak} KiB");
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{grandchild}")).exists());
    let _ = s.shutdown();
    wait_until(
        "the grandchild dies with the server's group",
        Duration::from_secs(30),
        || {
            let stat =
                std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
            stat.is_empty() || stat.contains(") Z ")
        },
    );
}

/// Remote servers over streamable HTTP: a project's http server is asked about (its URL in the
/// question), approved, listed; ToolSearch loads its tool and the call goes over HTTP with the
/// configured headers (`${VAR}` expanded, the key never); a server that wants OAuth and one
/// whose answer never ends are failed servers in the note, and the session goes on.
#[test]
fn an_approved_http_server_is_loaded_and_called_and_hostile_ones_are_noted() {
    let chat = trusted();
    let log = chat.ws.dir.path().join("requests.jsonl");
    let demo = mcp_http::HttpServer::start(
        "demo_server.py",
        &["--http", "{port}", "--log", log.to_str().unwrap()],
    );
    let oauth = mcp_http::HttpServer::start("hostile_http_server.py", &["unauthorized", "{port}"]);
    let endless =
        mcp_http::HttpServer::start("hostile_http_server.py", &["huge-chunked", "{port}"]);
    project_servers(
        &chat,
        json!({
            "figma": {
                "type": "http",
                "url": demo.url(),
                "headers": {"Authorization": "Bearer ${DEMO_TOKEN}", "X-Key": "${ANTHROPIC_API_KEY}"},
            },
            "locked": {"type": "http", "url": oauth.url()},
            "endless": {"type": "http", "url": endless.url()},
        }),
    );
    chat.script(
        &[
            ("ToolSearch", json!({"query": "select:mcp__figma__add"})),
            ("mcp__figma__add", json!({"a": 20, "b": 22})),
        ],
        "Added.",
    );
    let mut s = server(
        &chat,
        &[
            ("chat/permission:mcpServer", json!({"decision": "allow"})),
            ("chat/permission", json!({"decision": "allow"})),
        ],
        &[("MCP_CONNECTION_NONBLOCKING", "0"), ("DEMO_TOKEN", "tok-7")],
    );
    let id = new_session(&mut s);
    let t = Instant::now();
    let events = s.chat_send(&id, "add over http");
    eprintln!("turn with http servers: {} ms", t.elapsed().as_millis());
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let asked = permissions(&s, "mcpServer");
    let figma = asked
        .iter()
        .find(|p| p["input"]["server"] == "figma")
        .unwrap_or_else(|| panic!("{asked:#?}"));
    assert_eq!(figma["input"]["url"], json!(demo.url()), "{figma:#}");
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let env = system_env(&reqs[0]);
    assert!(
        env.contains("\nmcp__figma__add\nmcp__figma__echo\n"),
        "{env}"
    );
    assert!(env.contains("## figma\nDEMO-INSTRUCTIONS-MARKER"), "{env}");
    assert!(
        env.contains(
            "\nendless (HTTP): \"HTTP response body exceeded the maximum size of 4194304 bytes\""
        ),
        "{env}"
    );
    assert!(
        env.contains("\nlocked (UNAUTHORIZED): \"needs authorization (OAuth), which claude-context does not support; give a token with `headers`\""),
        "{env}"
    );
    assert_eq!(
        last_message(&reqs[1])["content"][0]["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__figma__add"}])
    );
    let m = last_message(&reqs[2]);
    assert_eq!(result_text(&m["content"][0]), "{\"result\":42}", "{m:#}");
    // What the server received: the token, and never the key.
    let received = std::fs::read_to_string(&log).unwrap();
    assert!(!received.contains(KEY), "{received}");
    let lines: Vec<Value> = received
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 4, "{received}");
    for h in &lines {
        assert_eq!(h["authorization"], "Bearer tok-7", "{h}");
        assert_eq!(h["x-key"], "${ANTHROPIC_API_KEY}", "not expanded: {h}");
    }
    // The endless answer was cut at 4 MB: the server's memory stays far below what was sent.
    let (_, peak) = s.memory_kib();
    eprintln!("server peak RSS with an endless http server: {peak} KiB");
    assert!(peak < 1 << 20, "peak RSS {peak} KiB");
    let _ = s.shutdown();
}

/// Issue 25, item 6: a remote server's approval said nothing of the headers it sends (a token
/// from the environment, a value written in `.mcp.json`); it now names each header and the
/// variables that fill it, never a value. Once approved, the previews show it approved (the
/// session's: running; the project's: approved), not waiting for an answer.
#[test]
fn a_remote_servers_approval_names_its_headers_and_the_preview_follows_the_answer() {
    let chat = trusted();
    let demo = mcp_http::HttpServer::start("demo_server.py", &["--http", "{port}"]);
    project_servers(
        &chat,
        json!({
            "figma": {
                "type": "http",
                "url": demo.url(),
                "headers": {
                    "Authorization": "Bearer ${DEMO_TOKEN}",
                    "X-Team": "team-secret-1234",
                    "X-Both": "${A:-a}-${B}"
                },
            },
        }),
    );
    chat.script(&[], "Hi.");
    let mut s = server(
        &chat,
        &[
            ("chat/permission:mcpServer", json!({"decision": "allow"})),
            ("chat/permission", json!({"decision": "allow"})),
        ],
        &[
            ("MCP_CONNECTION_NONBLOCKING", "0"),
            ("DEMO_TOKEN", "tok-7"),
            ("B", "bee"),
        ],
    );
    // Before any answer, the project's preview says it waits for one.
    let before = s.call("context/preview", json!({}));
    assert_eq!(
        before["mcp"]["servers"][0]["status"], "not approved",
        "{:#}",
        before["mcp"]
    );
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let asked = permissions(&s, "mcpServer");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let q = &asked[0];
    assert_eq!(
        q["input"]["headers"],
        json!([
            {"name": "Authorization", "variables": ["DEMO_TOKEN"]},
            {"name": "X-Team", "variables": []},
            {"name": "X-Both", "variables": ["A", "B"]}
        ]),
        "{q:#}"
    );
    let warning = q["warning"].as_str().unwrap();
    assert!(
        warning.contains(
            "It sends these headers with every request: Authorization (filled from ${DEMO_TOKEN}), X-Team (written in the file), X-Both (filled from ${A}, ${B}). Their values are not shown."
        ),
        "{warning}"
    );
    for secret in ["tok-7", "team-secret-1234", "bee"] {
        assert!(!q.to_string().contains(secret), "{secret} in {q}");
    }
    // Approved: the session's preview shows it running, the project's approved.
    let p = s.call("context/preview", json!({"sessionId": id}));
    assert_eq!(
        p["mcp"]["servers"][0]["status"], "running",
        "{:#}",
        p["mcp"]
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let p = s.call("context/preview", json!({}));
        let status = p["mcp"]["servers"][0]["status"].clone();
        if status != "not approved" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the project's preview still says {status}: {:#}",
            p["mcp"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = s.shutdown();
}

/// Item 5: a resumed session (a new server process) has the Skill tool, the skills listing and
/// its MCP servers like a new one, and sends again the definitions its history loaded.
#[test]
fn a_resumed_session_has_its_skills_servers_and_loaded_tools() {
    let chat = trusted();
    user_servers(&chat, json!({"demo": demo_entry(&chat)}));
    chat.script(
        &[("ToolSearch", json!({"query": "select:mcp__demo__add"}))],
        "Loaded.",
    );
    let answers = [("chat/permission", json!({"decision": "allow"}))];
    let more = [("MCP_CONNECTION_NONBLOCKING", "0")];
    let mut s = server(&chat, &answers, &more);
    let id = new_session(&mut s);
    s.chat_send(&id, "load add");
    let _ = s.shutdown();
    chat.api.reset();

    chat.script(&[("mcp__demo__add", json!({"a": 40, "b": 2}))], "42.");
    let mut s = server(&chat, &answers, &more);
    let r = s.call("chat/resume", json!({"sessionId": id}));
    assert_eq!(r["sessionId"], id.as_str());
    let events = s.chat_send(&id, "add them");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = chat.api.requests();
    let env = system_env(&reqs[0]);
    assert!(env.contains("- proj-skill: Project skill"), "{env}");
    assert!(env.contains(DEMO_NAMES), "{env}");
    let tools = tool_names(&reqs[0]);
    for t in ["Skill", "ToolSearch", "mcp__demo__add"] {
        assert!(tools.contains(&t.to_string()), "{t}: {tools:?}");
    }
    assert_eq!(
        result_text(&last_message(&reqs[1])["content"][0]),
        "{\"result\":42}"
    );
    let _ = s.shutdown();
}

/// `@modelcontextprotocol/server-everything` (npm), when `.ci/run` installed it
/// (`scripts/install-mcp-everything`; skipped otherwise, saying so): loaded and called.
#[test]
fn the_reference_everything_server_is_loaded_and_called() {
    let dir = std::env::var_os("CLAUDE_CONTEXT_MCP_EVERYTHING")
        .map(PathBuf::from)
        .or_else(|| ci_cache().map(|c| c.join("server-everything")));
    let Some(entry) = dir
        .map(|d| d.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .filter(|p| p.is_file())
    else {
        eprintln!(
            "SKIPPED: @modelcontextprotocol/server-everything is not installed (scripts/install-mcp-everything)"
        );
        return;
    };
    let chat = trusted();
    user_servers(
        &chat,
        json!({"everything": {"command": "node", "args": [entry, "stdio"]}}),
    );
    chat.script(
        &[
            (
                "ToolSearch",
                json!({"query": "select:mcp__everything__echo"}),
            ),
            (
                "mcp__everything__echo",
                json!({"message": "hello everything"}),
            ),
        ],
        "Done.",
    );
    let mut s = server(
        &chat,
        &[("chat/permission", json!({"decision": "allow"}))],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "echo");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let reqs = chat.api.requests();
    let env = system_env(&reqs[0]);
    assert!(env.contains("\nmcp__everything__echo\n"), "{env}");
    assert!(env.contains("## everything\n# Everything Server"), "{env}");
    let echo = reqs[1].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .cloned()
        .unwrap();
    assert_eq!(echo["defer_loading"], json!(true));
    let m = last_message(&reqs[2]);
    assert!(
        result_text(&m["content"][0]).contains("hello everything"),
        "{m:#}"
    );
    let _ = s.shutdown();
}

/// `claude-context acp` as an ACP client drives it, one JSON message per line: requests the
/// agent makes (`session/request_permission`) are answered by `choose`, and every message is
/// kept.
struct AcpClient {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    rx: std::sync::mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl AcpClient {
    fn start(chat: &Chat) -> AcpClient {
        let mut child = chat
            .command(bin())
            .args(["acp", "--no-git"])
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
            .env("MCP_CONNECTION_NONBLOCKING", "0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    panic!("not JSON: {line}")
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        AcpClient {
            stdin: child.stdin.take(),
            child,
            rx,
            seen: Vec::new(),
        }
    }

    fn write(&mut self, v: &Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends request `id` and reads until its answer, answering the agent's permission prompts
    /// with the option of kind `kind`.
    fn call(&mut self, id: u64, method: &str, params: Value, kind: &str) -> Value {
        self.call_with(id, method, params, |_| kind.to_string())
    }

    /// [`AcpClient::call`], answering each prompt with the kind `pick` gives for its params.
    fn call_with(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        pick: impl Fn(&Value) -> String,
    ) -> Value {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let end = Instant::now() + Duration::from_secs(90);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}; seen: {:#?}", self.seen));
            self.seen.push(v.clone());
            if v["method"] == "session/request_permission" {
                let kind = pick(&v["params"]);
                let kind = kind.as_str();
                let option = v["params"]["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["kind"] == kind)
                    .unwrap_or_else(|| panic!("no {kind} option: {v}"));
                let answer =
                    json!({"outcome": {"outcome": "selected", "optionId": option["optionId"]}});
                self.write(&json!({"jsonrpc": "2.0", "id": v["id"], "result": answer}));
            } else if v.get("method").is_none() && v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn prompts(&self) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|v| v["method"] == "session/request_permission")
            .map(|v| v["params"].clone())
            .collect()
    }

    /// Ends the input: the agent stops its turns and servers and exits.
    fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        None
    }
}

/// The same turn through `claude-context acp` (issue 22): the session is equipped as over LSP
/// and on the command line (the skills listing and the Skill tool, the project's server asked
/// about in the dialog's words through `session/request_permission`, remembered, started, its
/// tools deferred, each call asked like Write); the end of the input stops the server. The MCP
/// servers the client offers in `session/new` are declined.
#[test]
fn a_chat_over_acp_approves_loads_and_calls_an_mcp_server() {
    let chat = trusted();
    project_servers(&chat, json!({"demo": demo_entry(&chat)}));
    skill_and_mcp_script(&chat);
    let mut c = AcpClient::start(&chat);
    c.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
        "allow_once",
    );
    let s = c.call(
        1,
        "session/new",
        json!({"cwd": chat.ws.root, "mcpServers": []}),
        "allow_once",
    );
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let prompt =
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "use the skill and add"}]});
    let r = c.call(2, "session/prompt", prompt, "allow_once");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    check_skill_and_mcp_requests(&chat);
    let prompts = c.prompts();
    // The server's approval first, in the dialog's words, then one prompt per MCP call.
    let q = &prompts[0];
    assert_eq!(q["sessionId"], sid.as_str());
    assert_eq!(
        q["toolCall"]["title"],
        "New MCP server found in this project: demo"
    );
    let labels: Vec<&str> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "Use this MCP server",
            "Use this and all future MCP servers in this project",
            "Continue without using this MCP server"
        ]
    );
    let calls: Vec<&str> = prompts[1..]
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap())
        .collect();
    // Each names the call the client already shows.
    assert_eq!(calls, ["toolu_2", "toolu_3"], "{prompts:#?}");
    assert_eq!(
        local_settings_of(&chat).unwrap()["enabledMcpjsonServers"],
        json!(["demo"])
    );
    assert_eq!(demo_processes(&chat).len(), 1);
    assert_eq!(c.close(), Some(0));
    wait_until(
        "the server stops with the agent",
        Duration::from_secs(30),
        || demo_processes(&chat).is_empty(),
    );

    // session/load in a new agent: the resumed session has its skills, its server (approved:
    // not asked again) and the tools its history loaded.
    chat.api.reset();
    chat.script(&[("mcp__demo__add", json!({"a": 40, "b": 2}))], "42.");
    let mut c = AcpClient::start(&chat);
    c.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
        "allow_once",
    );
    c.call(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": chat.ws.root, "mcpServers": []}),
        "allow_once",
    );
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "add them"}]});
    let r = c.call(2, "session/prompt", prompt, "allow_once");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let reqs = chat.api.requests();
    let env = system_env(&reqs[0]);
    assert!(env.contains("- proj-skill: Project skill"), "{env}");
    assert!(env.contains(DEMO_NAMES), "{env}");
    let tools = tool_names(&reqs[0]);
    for t in ["Skill", "ToolSearch", "mcp__demo__add"] {
        assert!(tools.contains(&t.to_string()), "{t}: {tools:?}");
    }
    assert_eq!(
        result_text(&last_message(&reqs[1])["content"][0]),
        "{\"result\":42}"
    );
    let asked: Vec<Value> = c.prompts();
    assert_eq!(asked.len(), 1, "only the call, not the server: {asked:#?}");
    assert_eq!(c.close(), Some(0));
}

// ---- MCP servers the ACP client offers (issue 29, item 4) ----

/// An entry of `.mcp.json`'s shape as ACP's stdio `McpServer` (`env` as `[{name, value}]`, the
/// command by its absolute path), with `more` variables.
fn offered(name: &str, entry: &Value, more: &[(&str, &str)]) -> Value {
    let mut env: Vec<Value> = entry["env"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect()
        })
        .unwrap_or_default();
    env.extend(more.iter().map(|(k, v)| json!({"name": k, "value": v})));
    let command = match entry["command"].as_str().unwrap() {
        "sh" => "/bin/sh",
        other => other,
    };
    json!({"name": name, "command": command, "args": entry["args"], "env": env})
}

impl AcpClient {
    /// Reads what arrives for `wait` (between turns: the client answers nothing).
    fn idle(&mut self, wait: Duration) {
        let end = Instant::now() + wait;
        while let Ok(v) = self
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            self.seen.push(v);
        }
    }

    /// `initialize`, then `session/new` in the project with these `mcpServers`: the session id.
    fn open(&mut self, chat: &Chat, servers: &Value) -> String {
        let init = self.call(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
            "allow_once",
        );
        // Offered servers: stdio, and the remote transports the agent's MCP client speaks.
        assert_eq!(
            init["agentCapabilities"]["mcpCapabilities"],
            json!({"http": true, "sse": true}),
            "{init}"
        );
        let s = self.call(
            1,
            "session/new",
            json!({"cwd": chat.ws.root, "mcpServers": servers}),
            "allow_once",
        );
        s["sessionId"].as_str().unwrap().to_string()
    }
}

/// The lines of the marker the marked servers leave.
fn starts(chat: &Chat) -> usize {
    std::fs::read_to_string(marker(chat))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Issue 29, item 4: a stdio server offered in `session/new` (on main: declined, logged, never
/// started) is started only after the approval a project's server needs, asked inside the first
/// `session/prompt` (nothing between turns), with what it runs and no variable's value; its
/// tools reach the model's request, are loaded and called; no key reaches it, whatever name the
/// client passes it under. The answer is kept for the definition: the same definition starts
/// unasked in the next agent; a changed one is asked again, and rejected offers no tool and
/// starts nothing, in that agent and the next.
#[test]
fn over_acp_a_server_the_client_offers_is_approved_inside_the_first_prompt_for_its_definition() {
    let chat = trusted();
    let entry = marked_entry(&chat);
    let theirs = |team: &str| {
        json!([offered(
            "demo",
            &entry,
            &[
                ("ANTHROPIC_API_KEY", KEY),
                ("SMUGGLED", KEY),
                ("TEAM", team)
            ]
        )])
    };
    chat.script(
        &[
            (
                "ToolSearch",
                json!({"query": "select:mcp__demo__add,mcp__demo__env"}),
            ),
            ("mcp__demo__add", json!({"a": 2, "b": 3})),
            ("mcp__demo__env", json!({"name": "ANTHROPIC_API_KEY"})),
            ("mcp__demo__env", json!({"name": "SMUGGLED"})),
            ("mcp__demo__env", json!({"name": "TEAM"})),
        ],
        "Done.",
    );
    let mut c = AcpClient::start(&chat);
    let sid = c.open(&chat, &theirs("blue"));
    c.idle(Duration::from_millis(1500));
    assert!(c.prompts().is_empty(), "asked between turns: {:#?}", c.seen);
    assert_eq!(starts(&chat), 0, "started before its approval");
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "add"}]});
    let r = c.call(2, "session/prompt", prompt, "allow_once");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let prompts = c.prompts();
    let q = &prompts[0];
    assert_eq!(q["sessionId"], sid.as_str());
    assert_eq!(
        q["toolCall"]["title"],
        "New MCP server offered by the editor: demo"
    );
    let options: Vec<(&str, &str)> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        [
            ("Use this MCP server", "allow_once"),
            ("Continue without using this MCP server", "reject_once")
        ]
    );
    let text = q["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("MCP servers may execute code or access system resources.")
            && text.contains("It runs ` /bin/sh -c ")
            && text.contains(&format!("in {}", chat.ws.root.display())),
        "{text}"
    );
    // The variables by name (never one that can hold the key), no value.
    assert!(
        !text.contains("SMUGGLED") && text.contains("TEAM"),
        "{text}"
    );
    assert!(!text.contains("blue") && !text.contains(KEY), "{text}");
    let calls: Vec<&str> = prompts[1..]
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]);
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 6, "{reqs:#?}");
    assert!(
        system_env(&reqs[0]).contains(&format!("{DEFERRED_HEADER}{DEMO_NAMES}")),
        "{}",
        system_env(&reqs[0])
    );
    assert_eq!(
        result_text(&last_message(&reqs[2])["content"][0]),
        "{\"result\":5}"
    );
    for (i, want) in [(3, "<unset>"), (4, "<unset>"), (5, "blue")] {
        assert_eq!(
            result_text(&last_message(&reqs[i])["content"][0]),
            format!("{{\"result\":\"{want}\"}}")
        );
    }
    for r in &reqs {
        assert!(!String::from_utf8_lossy(&r.body).contains(KEY));
    }
    // Kept outside the repository (the project's settings are not touched).
    assert!(local_settings_of(&chat).is_none());
    assert_eq!(starts(&chat), 1);
    assert_eq!(c.close(), Some(0));
    wait_until(
        "the server stops with the agent",
        Duration::from_secs(30),
        || demo_processes(&chat).is_empty(),
    );

    // The same definition: started unasked.
    let run = |chat: &Chat, servers: &Value, kind: &str| -> (Vec<Value>, String) {
        chat.api.reset();
        chat.api.push(Turn::new().text("Hi."));
        let mut c = AcpClient::start(chat);
        let sid = c.open(chat, servers);
        let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]});
        let r = c.call(2, "session/prompt", prompt, kind);
        assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
        let env = system_env(&chat.api.requests()[0]);
        let prompts = c.prompts();
        assert_eq!(c.close(), Some(0));
        (prompts, env)
    };
    let (prompts, env) = run(&chat, &theirs("blue"), "allow_once");
    assert!(prompts.is_empty(), "{prompts:#?}");
    assert!(env.contains(DEMO_NAMES), "{env}");
    assert_eq!(starts(&chat), 2);
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });

    // A changed definition (one variable's value): asked again; rejected, nothing starts and
    // the model is offered none of its tools; the rejection is kept for it.
    let (prompts, env) = run(&chat, &theirs("red"), "reject_once");
    assert_eq!(prompts.len(), 1, "{prompts:#?}");
    assert_eq!(
        prompts[0]["toolCall"]["title"],
        "New MCP server offered by the editor: demo"
    );
    assert!(
        !env.contains("mcp__demo") && !env.contains(DEFERRED_HEADER),
        "{env}"
    );
    let (prompts, env) = run(&chat, &theirs("red"), "allow_once");
    assert!(prompts.is_empty(), "{prompts:#?}");
    assert!(!env.contains("mcp__demo"), "{env}");
    assert_eq!(starts(&chat), 2, "a rejected server started");
}

/// Issue 29, item 4: the remote transports `mcpCapabilities` advertises. An `http` and an `sse`
/// server offered in `session/new` are asked about with their URL and the names of their headers
/// (never a value; a header holding the key neither named nor sent), then loaded and called; the
/// servers receive the client's token and never the key.
#[test]
fn over_acp_offered_http_and_sse_servers_are_approved_then_called() {
    let chat = trusted();
    let log = chat.ws.dir.path().join("requests.jsonl");
    let web = mcp_http::HttpServer::start(
        "demo_server.py",
        &["--http", "{port}", "--log", log.to_str().unwrap()],
    );
    let events = mcp_http::HttpServer::start("demo_server.py", &["--sse", "{port}"]);
    let headers = json!([
        {"name": "Authorization", "value": "Bearer tok-7"},
        {"name": "X-Key", "value": KEY},
    ]);
    let servers = json!([
        {"type": "http", "name": "web", "url": web.url(), "headers": headers},
        {"type": "sse", "name": "events", "url": events.sse_url(), "headers": []},
    ]);
    chat.script(
        &[
            (
                "ToolSearch",
                json!({"query": "select:mcp__web__add,mcp__events__add"}),
            ),
            ("mcp__web__add", json!({"a": 20, "b": 22})),
            ("mcp__events__add", json!({"a": 1, "b": 2})),
        ],
        "Added.",
    );
    let mut c = AcpClient::start(&chat);
    let sid = c.open(&chat, &servers);
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "add"}]});
    let r = c.call(2, "session/prompt", prompt, "allow_once");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let prompts = c.prompts();
    let text = |i: usize| {
        prompts[i]["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        prompts[0]["toolCall"]["title"],
        "New MCP server offered by the editor: events"
    );
    assert!(
        text(0).contains(&format!(
            "It connects to \"{}\" (HTTP+SSE).",
            events.sse_url()
        )),
        "{}",
        text(0)
    );
    assert_eq!(
        prompts[1]["toolCall"]["title"],
        "New MCP server offered by the editor: web"
    );
    assert!(
        text(1).contains(&format!(
            "It connects to \"{}\" (streamable HTTP), sending these headers with every request: Authorization (their values are not shown).",
            web.url()
        )),
        "{}",
        text(1)
    );
    assert!(!text(1).contains("tok-7") && !text(1).contains("X-Key"));
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 4, "{reqs:#?}");
    let env = system_env(&reqs[0]);
    assert!(
        env.contains("\nmcp__events__add") && env.contains("\nmcp__web__add"),
        "{env}"
    );
    assert_eq!(
        result_text(&last_message(&reqs[2])["content"][0]),
        "{\"result\":42}"
    );
    assert_eq!(
        result_text(&last_message(&reqs[3])["content"][0]),
        "{\"result\":3}"
    );
    let received = std::fs::read_to_string(&log).unwrap();
    assert!(!received.contains(KEY), "{received}");
    for line in received.lines() {
        let h: Value = serde_json::from_str(line).unwrap();
        assert_eq!(h["authorization"], "Bearer tok-7", "{h}");
        assert!(h.get("x-key").is_none(), "{h}");
    }
    assert_eq!(c.close(), Some(0));
}

/// Issue 29, item 4: in a folder nobody was asked to trust, offered servers wait for trust: the
/// first prompt asks the trust question (naming them), "no" starts none and asks nothing more;
/// once trusted, each is asked about inside the first prompt, and one that fails is noted to
/// the model with its reason as a project's is. An offered server named as one of the user's
/// own configuration is not used: the configured one is (the permission rules and approvals of
/// that name are its).
#[test]
fn over_acp_offered_servers_wait_for_trust_and_a_configured_name_wins() {
    let chat = untrusted();
    user_servers(&chat, json!({"demo": demo_entry(&chat)}));
    let marked = marked_entry(&chat);
    let servers = json!([
        offered("demo", &marked, &[]),
        offered("theirs", &marked, &[]),
        {"name": "broken", "command": "/nonexistent/bin/mcp-server", "args": [], "env": []},
    ]);
    chat.api.push(Turn::new().text("Hi."));
    let mut c = AcpClient::start(&chat);
    let sid = c.open(&chat, &servers);
    c.idle(Duration::from_millis(1500));
    assert!(c.prompts().is_empty(), "asked between turns: {:#?}", c.seen);
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]});
    let r = c.call(2, "session/prompt", prompt, "reject_always");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let prompts = c.prompts();
    assert_eq!(prompts.len(), 1, "the trust question only: {prompts:#?}");
    assert_eq!(
        prompts[0]["toolCall"]["title"],
        format!("Accessing workspace: {}", chat.ws.root.display())
    );
    let text = prompts[0]["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.ends_with(
            "Trusting this folder loads the MCP servers the editor offers (broken, theirs)."
        ),
        "{text}"
    );
    let env = system_env(&chat.api.requests()[0]);
    // The user's own server runs untrusted (it is theirs); no offered one does.
    assert!(env.contains("\nmcp__demo__add"), "{env}");
    assert!(
        !env.contains("mcp__theirs") && !env.contains("broken"),
        "{env}"
    );
    assert_eq!(starts(&chat), 0);
    assert_eq!(c.close(), Some(0));

    answer_trust(&chat, "--forget");
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut c = AcpClient::start(&chat);
    let sid = c.open(&chat, &servers);
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]});
    let r = c.call_with(2, "session/prompt", prompt, |p| {
        if p["toolCall"]["title"]
            .as_str()
            .unwrap()
            .starts_with("Accessing workspace")
        {
            "allow_always".into()
        } else {
            "allow_once".into()
        }
    });
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let titles: Vec<String> = c
        .prompts()
        .iter()
        .map(|p| p["toolCall"]["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        titles,
        [
            format!("Accessing workspace: {}", chat.ws.root.display()),
            "New MCP server offered by the editor: broken".into(),
            "New MCP server offered by the editor: theirs".into(),
        ]
    );
    let env = system_env(&chat.api.requests()[0]);
    assert!(
        env.contains("\nmcp__demo__add") && env.contains("\nmcp__theirs__add"),
        "{env}"
    );
    assert!(
        env.contains("The following MCP servers are configured but failed to connect — their tools (typically named mcp__<server>__*) are unavailable for this session:\nbroken (ENOENT): \"ENOENT: no such file or directory, posix_spawn '/nonexistent/bin/mcp-server'\""),
        "{env}"
    );
    // Theirs started once; the offered "demo" never (the user's runs unmarked).
    assert_eq!(starts(&chat), 1);
    assert_eq!(c.close(), Some(0));
    wait_until("the servers stop", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });
}

// ---- Workspace trust (issue 32) ----

/// The trust question's words, as every front end gets them.
const TRUST_LOADS: &str = "Trusting this folder loads .mcp.json (MCP servers: demo) and .claude/settings.local.json (committed by the repository: approves the project's MCP servers).";

/// Over the language server: a cloned repository that commits `.claude/settings.local.json`
/// with `enableAllProjectMcpServers` starts nothing at `chat/new` (no process, no marker: on the
/// main branch before issue 32 it started right there). The first `chat/send` asks
/// `workspaceTrust` inside its turn, before any request, in the dialog's words; "no" is kept
/// (the next chat does not ask) and nothing starts; "yes" (after `trust --forget`) starts the
/// server with no MCP question, as the reference does once trusted (t/accept_enableall).
#[test]
fn over_lsp_a_self_approving_repository_runs_nothing_until_trusted() {
    let chat = untrusted();
    self_approving_repository(&chat);
    chat.api.push(Turn::new().text("Hi."));
    chat.api.push(Turn::new().text("Hi again."));
    let mut s = server(
        &chat,
        &[(
            "chat/permission:workspaceTrust",
            json!({"decision": "deny"}),
        )],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !marker(&chat).exists(),
        "chat/new started the repository's server"
    );
    assert!(demo_processes(&chat).is_empty());
    assert!(
        permissions(&s, "workspaceTrust").is_empty(),
        "asked before the turn"
    );
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let asked = permissions(&s, "workspaceTrust");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let q = &asked[0];
    assert_eq!(q["sessionId"], id.as_str());
    assert_eq!(
        q["summary"],
        format!("Accessing workspace: {}", chat.ws.root.display())
    );
    assert_eq!(
        q["choices"],
        json!({"allow": "Yes, I trust this folder", "deny": "No, don't trust this folder"})
    );
    let text = q["warning"].as_str().unwrap();
    assert!(
        text.starts_with("Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source project, or work from your team). If not, take a moment to review what's in this folder first.\n"),
        "{text}"
    );
    assert!(text.ends_with(&format!("\n{TRUST_LOADS}")), "{text}");
    assert_eq!(q["input"]["loads"], TRUST_LOADS);
    assert!(q.get("sessionScope").is_none(), "{q:#}");
    // No: kept, nothing started, nothing asked about the server, the model hears nothing of it.
    assert!(!system_env(&chat.api.requests()[0]).contains("mcp__demo"));
    assert!(!marker(&chat).exists() && demo_processes(&chat).is_empty());
    assert!(permissions(&s, "mcpServer").is_empty());
    assert_eq!(trust_state(&chat)["state"], "notTrusted");
    let p = s.call("context/preview", json!({"sessionId": id}));
    assert_eq!(p["trust"]["state"], "notTrusted", "{:#}", p["trust"]);
    assert_eq!(p["mcp"]["servers"][0]["status"], "not trusted");
    let p = s.call("context/preview", json!({}));
    assert_eq!(p["trust"]["source"], "ours", "{:#}", p["trust"]);
    // The next chat does not ask again.
    let id2 = new_session(&mut s);
    s.chat_send(&id2, "again");
    assert_eq!(permissions(&s, "workspaceTrust").len(), 1);
    assert!(!marker(&chat).exists());
    let _ = s.shutdown();

    // Yes: the server starts, approved by the repository's own file now that it is trusted.
    answer_trust(&chat, "--forget");
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server(
        &chat,
        &[(
            "chat/permission:workspaceTrust",
            json!({"decision": "allow"}),
        )],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
    );
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert_eq!(permissions(&s, "workspaceTrust").len(), 1);
    assert!(
        permissions(&s, "mcpServer").is_empty(),
        "approved by its own file once trusted, as measured"
    );
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    assert!(marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "trusted");
    let p = s.call("context/preview", json!({"sessionId": id}));
    assert_eq!(p["trust"]["state"], "trusted", "{:#}", p["trust"]);
    assert_eq!(p["mcp"]["servers"][0]["status"], "running");
    let _ = s.shutdown();
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });
}

/// A folder trusted in Claude Code's record (`projects["<folder>"].hasTrustDialogAccepted` in
/// `~/.claude.json`) gets no question and its approved server starts; a record of its parent or
/// of a child folder does not count (measured): the question comes.
#[test]
fn claude_codes_record_trusts_the_exact_folder_without_a_question() {
    let chat = untrusted();
    project_servers(&chat, json!({"demo": marked_entry(&chat)}));
    chat.ws.write(
        ".claude/settings.json",
        r#"{"enabledMcpjsonServers": ["demo"]}"#,
    );
    let record = |keys: &[&std::path::Path]| {
        let projects: serde_json::Map<String, Value> = keys
            .iter()
            .map(|k| {
                (
                    k.display().to_string(),
                    json!({"hasTrustDialogAccepted": true}),
                )
            })
            .collect();
        std::fs::create_dir_all(&chat.ws.home).unwrap();
        std::fs::write(
            chat.ws.home.join(".claude.json"),
            json!({ "projects": projects }).to_string(),
        )
        .unwrap();
    };
    record(&[chat.ws.root.parent().unwrap(), &chat.ws.path("servers")]);
    chat.api.push(Turn::new().text("Hi."));
    // The client does not answer the question: the session stays restricted, nothing is kept.
    let mut s = server(&chat, &[], &[("MCP_CONNECTION_NONBLOCKING", "0")]);
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    assert_eq!(
        permissions(&s, "workspaceTrust").len(),
        1,
        "a parent's or child's record"
    );
    assert!(!marker(&chat).exists());
    assert_eq!(
        trust_state(&chat)["state"],
        "neverAsked",
        "no answer is not kept"
    );
    let _ = s.shutdown();

    record(&[&chat.ws.root]);
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server(&chat, &[], &[("MCP_CONNECTION_NONBLOCKING", "0")]);
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    assert!(permissions(&s, "workspaceTrust").is_empty());
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    assert!(marker(&chat).exists());
    let p = s.call("context/preview", json!({"sessionId": id}));
    assert_eq!(p["trust"]["source"], "claudeCode", "{:#}", p["trust"]);
    let _ = s.shutdown();
}

/// VS Code's workspace trust is the answer: restricted mode (`workspaceTrust: false` beside the
/// `claudeContext` section) is untrusted without a question, and granting trust later
/// (`trust/changed`) starts the session's servers and redoes the previews; a trusted workspace
/// gets no question. A `workspaceTrust` inside the section (where a repository's editor settings
/// can put it) is not read.
#[test]
fn the_editors_own_workspace_trust_is_the_answer() {
    let chat = untrusted();
    self_approving_repository(&chat);
    chat.script(
        &[("Read", json!({"file_path": chat.ws.path("CLAUDE.md")}))],
        "Hi.",
    );
    let mut s = server_with(
        &chat,
        &[],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
        json!({"claudeContext": {}, "workspaceTrust": false}),
    );
    let id = new_session(&mut s);
    let events = s.chat_send(&id, "hello");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert!(permissions(&s, "workspaceTrust").is_empty(), "no question");
    assert!(!marker(&chat).exists());
    let p = s.call("context/preview", json!({}));
    assert_eq!(p["trust"]["state"], "notTrusted", "{:#}", p["trust"]);
    assert_eq!(p["trust"]["source"], "editor");
    assert_eq!(
        trust_state(&chat)["state"],
        "neverAsked",
        "the editor's answer is its own"
    );
    // Trust granted: the running session starts its server, the previews follow.
    s.notify("trust/changed", json!({"trusted": true}));
    wait_until(
        "the session's server starts",
        Duration::from_secs(30),
        || marker(&chat).exists(),
    );
    s.notification("context/changed", |_| true)
        .expect("context/changed after trust/changed");
    let p = s.call("context/preview", json!({}));
    assert_eq!(p["trust"]["state"], "trusted", "{:#}", p["trust"]);
    let _ = s.shutdown();
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });

    // A trusted workspace: no question, the server starts at the first turn's settling.
    std::fs::remove_file(marker(&chat)).unwrap();
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server_with(
        &chat,
        &[],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
        json!({"claudeContext": {}, "workspaceTrust": true}),
    );
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    assert!(permissions(&s, "workspaceTrust").is_empty());
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    let _ = s.shutdown();
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });

    // Inside the section (a repository's .vscode/settings.json can put keys there): ignored.
    std::fs::remove_file(marker(&chat)).unwrap();
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut s = server_with(
        &chat,
        &[],
        &[("MCP_CONNECTION_NONBLOCKING", "0")],
        json!({"workspaceTrust": true}),
    );
    let id = new_session(&mut s);
    s.chat_send(&id, "hello");
    assert_eq!(permissions(&s, "workspaceTrust").len(), 1);
    assert!(!marker(&chat).exists());
    s.notify("trust/changed", json!({"trusted": true}));
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        !marker(&chat).exists(),
        "trust/changed from a client without workspaceTrust"
    );
    let _ = s.shutdown();
}

/// Over ACP: nothing of the repository starts at `session/new`, and no request reaches the
/// client between turns (codecompanion.nvim never shows one: its chat hung); the question comes
/// inside the first `session/prompt`, as `session/request_permission` before the turn's answer,
/// with options that say the answer is kept. Rejected: kept, nothing starts; allowed (after
/// `trust --forget`): the server starts with no MCP question.
#[test]
fn over_acp_the_trust_question_comes_inside_the_first_prompt() {
    let chat = untrusted();
    self_approving_repository(&chat);
    chat.api.push(Turn::new().text("Hi."));
    let mut c = AcpClient::start(&chat);
    c.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
        "reject_always",
    );
    let s = c.call(
        1,
        "session/new",
        json!({"cwd": chat.ws.root, "mcpServers": []}),
        "reject_always",
    );
    let sid = s["sessionId"].as_str().unwrap().to_string();
    // Between turns: no request, nothing started.
    let end = Instant::now() + Duration::from_millis(1500);
    while let Ok(v) =
        c.rx.recv_timeout(end.saturating_duration_since(Instant::now()))
    {
        c.seen.push(v);
    }
    assert!(c.prompts().is_empty(), "asked between turns: {:#?}", c.seen);
    assert!(!marker(&chat).exists() && demo_processes(&chat).is_empty());
    let before = c.seen.len();
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]});
    let r = c.call(2, "session/prompt", prompt, "reject_always");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    let asked: Vec<&Value> = c.seen[before..]
        .iter()
        .filter(|v| v["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{:#?}", c.seen);
    let q = &asked[0]["params"];
    assert_eq!(
        q["toolCall"]["title"],
        format!("Accessing workspace: {}", chat.ws.root.display())
    );
    let options: Vec<(&str, &str)> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        [
            ("Yes, I trust this folder", "allow_always"),
            ("No, don't trust this folder", "reject_always")
        ]
    );
    let text = q["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("Quick safety check") && text.ends_with(TRUST_LOADS),
        "{text}"
    );
    assert!(!system_env(&chat.api.requests()[0]).contains("mcp__demo"));
    assert!(!marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "notTrusted");
    assert_eq!(c.close(), Some(0));

    answer_trust(&chat, "--forget");
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let mut c = AcpClient::start(&chat);
    c.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
        "allow_always",
    );
    let s = c.call(
        1,
        "session/new",
        json!({"cwd": chat.ws.root, "mcpServers": []}),
        "allow_always",
    );
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]});
    let r = c.call(2, "session/prompt", prompt, "allow_always");
    assert_eq!(r["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(
        c.prompts().len(),
        1,
        "the trust question only: {:#?}",
        c.prompts()
    );
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    assert!(marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "trusted");
    assert_eq!(c.close(), Some(0));
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });
}

/// On the command line: without a terminal the folder stays untrusted, said once, nothing kept
/// and nothing started; on a terminal (util-linux `script`) the dialog shows before the first
/// request, `n` is kept and starts nothing, `y` (after `trust --forget`) starts the server.
#[test]
fn on_the_command_line_the_trust_dialog_comes_before_the_first_request() {
    let chat = untrusted();
    self_approving_repository(&chat);
    chat.api.push(Turn::new().text("Hi."));
    chat.api.push(Turn::new().text("Hi again."));
    let o = chat
        .command("setsid")
        .arg("--wait")
        .arg(bin())
        .args(["chat", "--no-git"])
        .env("MCP_CONNECTION_NONBLOCKING", "0")
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(b"hello\nagain\n").unwrap();
            drop(stdin);
            child.wait_with_output()
        })
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("[this folder is not trusted: there is no terminal to ask on")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains(TRUST_LOADS), "{stderr}");
    assert_eq!(chat.api.requests().len(), 2);
    assert!(!marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "neverAsked", "nothing kept");

    let on_terminal = |answer: &[u8]| {
        let command = format!(
            "{} chat --no-git hello",
            bin().display().to_string().replace('\'', "'\\''")
        );
        let mut child = chat
            .command("script")
            .args(["-qfec", &command, "/dev/null"])
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
            .env("MCP_CONNECTION_NONBLOCKING", "0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, answer).unwrap();
        let o = child.wait_with_output().unwrap();
        drop(stdin);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let out = on_terminal(b"n\n");
    assert!(
        out.contains(&format!(
            "Accessing workspace: {}\r\nQuick safety check: Is this a project you created or one you trust?",
            chat.ws.root.display()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("{TRUST_LOADS}\r\n  y: Yes, I trust this folder\r\n  n: No, don't trust this folder (default)\r\n> ")), "{out}");
    assert!(out.contains("Hi."), "{out}");
    assert!(!marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "notTrusted");

    answer_trust(&chat, "--forget");
    chat.api.reset();
    chat.api.push(Turn::new().text("Hi."));
    let out = on_terminal(b"y\n");
    assert!(out.contains("Yes, I trust this folder"), "{out}");
    assert!(!out.contains("New MCP server found"), "{out}");
    assert!(system_env(&chat.api.requests()[0]).contains(DEMO_NAMES));
    assert!(marker(&chat).exists());
    assert_eq!(trust_state(&chat)["state"], "trusted");
    wait_until("the server stops", Duration::from_secs(30), || {
        demo_processes(&chat).is_empty()
    });
}

/// permissions-trust.md check 15 (r7/mcp): `mcp__mini` allows every tool of that server with no
/// prompt; a deny `mcp__other__echo` removes that tool (gone from the deferred-tools list; a
/// call gets "No such tool available"); another server's tool with no rule gets the reference's
/// `-p` text when nobody can answer.
#[test]
fn permission_rules_allow_deny_and_hide_mcp_tools() {
    let chat = trusted();
    user_servers(
        &chat,
        json!({"mini": demo_entry(&chat), "other": demo_entry(&chat)}),
    );
    std::fs::create_dir_all(chat.ws.home.join(".claude")).unwrap();
    std::fs::write(
        chat.ws.home.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["mcp__mini"], "deny": ["mcp__other__echo"]}}"#,
    )
    .unwrap();
    for (i, (name, input)) in [
        (
            "ToolSearch",
            json!({"query": "select:mcp__mini__add,mcp__other__add,mcp__other__echo"}),
        ),
        ("mcp__mini__add", json!({"a": 2, "b": 3})),
        ("mcp__other__echo", json!({"text": "hi"})),
        ("mcp__other__add", json!({"a": 1, "b": 1})),
    ]
    .into_iter()
    .enumerate()
    {
        chat.api
            .push(Turn::new().tool_use(&format!("toolu_{i}"), name, input));
    }
    chat.api.push(Turn::new().text("All done."));
    let o = chat
        .command("setsid")
        .arg("--wait")
        .arg(bin())
        .args(["chat", "--no-git", "use the servers"])
        .env("MCP_CONNECTION_NONBLOCKING", "0")
        .env("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 5);
    let env = system_env(&reqs[0]);
    assert!(
        env.contains("mcp__mini__echo") && env.contains("mcp__other__add"),
        "{env}"
    );
    assert!(
        !env.contains("mcp__other__echo"),
        "the denied tool is not listed: {env}"
    );
    let result = |i: usize| {
        let m = last_message(&reqs[i + 1]);
        (
            result_text(&m["content"][0]),
            m["content"][0]["is_error"] == json!(true),
        )
    };
    let (add, err) = result(1);
    assert!(!err && add.contains('5'), "allowed without a prompt: {add}");
    assert_eq!(
        result(2),
        (
            "<tool_use_error>Error: No such tool available: mcp__other__echo</tool_use_error>"
                .into(),
            true
        )
    );
    assert_eq!(
        result(3),
        (
            "Claude requested permissions to use mcp__other__add, but you haven't granted it yet."
                .into(),
            true
        )
    );
}

/// Class K38: remote servers over the older HTTP+SSE transport (`"type": "sse"`) are asked
/// about like http ones (the URL in the question), then connected: their tools are deferred,
/// their instructions listed, ToolSearch loads a tool and the call goes over the stream with
/// the configured headers; one nothing listens for is in the failed note with the reference's
/// code-less line.
#[test]
fn an_approved_sse_server_is_loaded_and_called_and_an_unreachable_one_is_noted() {
    let chat = trusted();
    let log = chat.ws.dir.path().join("requests.jsonl");
    let demo = mcp_http::HttpServer::start(
        "demo_server.py",
        &["--sse", "{port}", "--log", log.to_str().unwrap()],
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    project_servers(
        &chat,
        json!({
            "live": {
                "type": "sse",
                "url": demo.sse_url(),
                "headers": {"Authorization": "Bearer ${DEMO_TOKEN}"},
            },
            "gone": {"type": "sse", "url": format!("http://127.0.0.1:{closed}/sse")},
        }),
    );
    chat.script(
        &[
            ("ToolSearch", json!({"query": "select:mcp__live__add"})),
            ("mcp__live__add", json!({"a": 20, "b": 22})),
        ],
        "Added.",
    );
    let mut s = server(
        &chat,
        &[
            ("chat/permission:mcpServer", json!({"decision": "allow"})),
            ("chat/permission", json!({"decision": "allow"})),
        ],
        &[("MCP_CONNECTION_NONBLOCKING", "0"), ("DEMO_TOKEN", "tok-9")],
    );
    let id = new_session(&mut s);
    let t = Instant::now();
    let events = s.chat_send(&id, "add over sse");
    eprintln!("turn with sse servers: {} ms", t.elapsed().as_millis());
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    let asked = permissions(&s, "mcpServer");
    let live = asked
        .iter()
        .find(|p| p["input"]["server"] == "live")
        .unwrap_or_else(|| panic!("{asked:#?}"));
    assert_eq!(live["input"]["url"], json!(demo.sse_url()), "{live:#}");
    let reqs = chat.api.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let env = system_env(&reqs[0]);
    assert!(
        env.contains(&format!("{DEFERRED_HEADER}\nmcp__live__add\nmcp__live__echo\nmcp__live__env\nmcp__live__fail\nmcp__live__headers\nmcp__live__sleep\n\n")),
        "{env}"
    );
    assert!(env.contains("## live\nDEMO-INSTRUCTIONS-MARKER"), "{env}");
    assert!(
        env.contains("are unavailable for this session:\ngone: \"SSE error: ECONNREFUSED: Unable to connect. Is the computer able to access the url?\"\n\nTreat this"),
        "{env}"
    );
    assert_eq!(
        last_message(&reqs[1])["content"][0]["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__live__add"}])
    );
    let m = last_message(&reqs[2]);
    assert_eq!(result_text(&m["content"][0]), "{\"result\":42}", "{m:#}");
    // Every request the server received (the stream's GET, the POSTs) had the token, never
    // the key.
    let received = std::fs::read_to_string(&log).unwrap();
    assert!(!received.contains(KEY), "{received}");
    let lines: Vec<Value> = received
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 4, "{received}");
    for h in &lines {
        assert_eq!(h["authorization"], "Bearer tok-9", "{h}");
    }
    let _ = s.shutdown();
}
