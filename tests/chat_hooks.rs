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
//! `<fx>/log/NAME.<n>.stdin` and its environment to `NAME.<n>.env.json`.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

mod fake_anthropic;
mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fake_anthropic::{FakeAnthropic, Turn};
use harness::{Server, Workspace};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789abcdef";

const HK: &str = r#"import json, os, sys, time
name = sys.argv[1]
fx = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
data = sys.stdin.read()
log = os.path.join(fx, "log")
os.makedirs(log, exist_ok=True)
n = len([f for f in os.listdir(log) if f.startswith(name + ".") and f.endswith(".stdin")])
with open(os.path.join(log, "%s.%d.env.json" % (name, n)), "w") as f:
    json.dump(dict(os.environ), f)
with open(os.path.join(log, "%s.%d.cwd" % (name, n)), "w") as f:
    f.write(os.getcwd())
with open(os.path.join(log, "%s.%d.stdin" % (name, n)), "w") as f:
    f.write(data)
beh = {}
p = os.path.join(fx, "beh", name + ".json")
if os.path.exists(p):
    with open(p) as f:
        beh = json.load(f)
steps = beh.get("steps")
if steps:
    beh = steps[min(n, len(steps) - 1)]
time.sleep(beh.get("sleep", 0))
sys.stdout.write(beh.get("stdout", ""))
sys.stdout.flush()
sys.stderr.write(beh.get("stderr", ""))
sys.stderr.flush()
time.sleep(beh.get("sleep_after", 0))
sys.exit(beh.get("exit", 0))
"#;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

/// A project, its fixtures, the fake API.
struct Fx {
    ws: Workspace,
    api: FakeAnthropic,
    state: PathBuf,
    fx: PathBuf,
}

impl Fx {
    /// A project in a folder its user trusted in Claude Code (`~/.claude.json`).
    fn new() -> Fx {
        let fx = Fx::untrusted();
        fx.trust();
        fx
    }

    fn untrusted() -> Fx {
        let ws = Workspace::new();
        ws.write("CLAUDE.md", "# Shop\n");
        let fx = ws.dir.path().canonicalize().unwrap().join("fx");
        std::fs::create_dir_all(fx.join("bin")).unwrap();
        std::fs::create_dir_all(fx.join("beh")).unwrap();
        std::fs::write(fx.join("bin/hk.py"), HK).unwrap();
        let state = ws.dir.path().join("state");
        Fx {
            ws,
            api: FakeAnthropic::spawn(),
            state,
            fx,
        }
    }

    fn trust(&self) {
        let root = self.ws.root.display().to_string();
        std::fs::create_dir_all(&self.ws.home).unwrap();
        std::fs::write(
            self.ws.home.join(".claude.json"),
            json!({"projects": {root: {"hasTrustDialogAccepted": true}}}).to_string(),
        )
        .unwrap();
    }

    /// The command of hook `name`.
    fn cmd(&self, name: &str) -> String {
        format!("/usr/bin/python3 {}/bin/hk.py {name}", self.fx.display())
    }

    /// What hook `name` does.
    fn behave(&self, name: &str, b: Value) {
        std::fs::write(
            self.fx.join("beh").join(format!("{name}.json")),
            b.to_string(),
        )
        .unwrap();
    }

    /// `{"hooks": {event: [{"matcher"?: m, "hooks": [{"type": "command", "command": cmd(name)}]}]}}`
    /// for each `(event, matcher, name)`.
    fn hooks(&self, list: &[(&str, Option<&str>, &str)]) -> Value {
        let mut events = serde_json::Map::new();
        for (event, matcher, name) in list {
            let mut group = json!({"hooks": [{"type": "command", "command": self.cmd(name)}]});
            if let Some(m) = matcher {
                group["matcher"] = json!(m);
            }
            events
                .entry(event.to_string())
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .unwrap()
                .push(group);
        }
        json!({ "hooks": events })
    }

    /// The project's `.claude/settings.json`.
    fn project_settings(&self, v: Value) {
        self.ws.write(".claude/settings.json", &v.to_string());
    }

    fn server(&self, answers: &[(&str, Value)]) -> Server {
        self.server_with(answers, &[])
    }

    fn server_with(&self, answers: &[(&str, Value)], more: &[(&str, &str)]) -> Server {
        let base = self.api.base_url();
        let mut vars = vec![
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", KEY),
            ("XDG_STATE_HOME", self.state.to_str().unwrap()),
        ];
        vars.extend_from_slice(more);
        let mut s = self.ws.spawn_with(&bin(), &vars);
        for (m, v) in answers {
            s.answers.lock().unwrap().insert(m.to_string(), v.clone());
        }
        s
    }

    /// A new chat session (`model`: the settings' model, default the reference's).
    fn session(&self, s: &mut Server, model: Option<&str>) -> String {
        let mut options = json!({});
        if let Some(m) = model {
            options = json!({"model": m});
        }
        *s.settings.lock().unwrap() = options.clone();
        s.initialize(&self.ws.root, options);
        s.call("chat/new", json!({}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// What hook `name` read on its `n`-th call (0-based).
    fn stdin(&self, name: &str, n: usize) -> Value {
        let p = self.fx.join("log").join(format!("{name}.{n}.stdin"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn stdin_text(&self, name: &str, n: usize) -> String {
        std::fs::read_to_string(self.fx.join("log").join(format!("{name}.{n}.stdin"))).unwrap()
    }

    fn env(&self, name: &str, n: usize) -> Value {
        let p = self.fx.join("log").join(format!("{name}.{n}.env.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// How many times hook `name` ran.
    fn calls(&self, name: &str) -> usize {
        std::fs::read_dir(self.fx.join("log"))
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.starts_with(&format!("{name}.")) && n.ends_with(".stdin")
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    fn requests(&self) -> Vec<Value> {
        self.api.requests().iter().map(|r| r.json()).collect()
    }
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

fn permission_allowed() -> (&'static str, Value) {
    ("chat/permission", json!({"decision": "allow"}))
}

/// Check 1 and 2 (h1/plain): SessionStart's and UserPromptSubmit's plain output in the
/// environment section, first and last before the date; PostToolUse's and Stop's plain output
/// nowhere; the tool ran. Also what every hook reads and its environment (section 2).
#[test]
fn plain_output_lands_in_the_environment_section_and_nowhere_else() {
    let fx = Fx::new();
    fx.project_settings(fx.hooks(&[
        ("SessionStart", None, "SS"),
        ("UserPromptSubmit", None, "UPS"),
        ("PreToolUse", Some("Bash"), "PRE"),
        ("PostToolUse", Some("Bash"), "POST"),
        ("Stop", None, "STOP"),
    ]));
    fx.behave("SS", json!({"stdout": "SS-STDOUT-MARKER line1\nline2\n"}));
    fx.behave("UPS", json!({"stdout": "UPS-STDOUT-MARKER line1\nline2\n"}));
    fx.behave("POST", json!({"stdout": "POST-STDOUT-MARKER\n"}));
    fx.behave("STOP", json!({"stdout": "STOP-STDOUT-MARKER\n"}));
    fx.api.push(bash("toolu_1", "echo BASH-RAN-MARKER"));
    fx.api.push(Turn::new().text("Done."));
    let mut s = fx.server_with(&[permission_allowed()], &[("SOME_KEYLESS_VAR", "kept")]);
    let id = fx.session(&mut s, None);
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
    let ss = fx.stdin_text("SS", 0);
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
    let ups = fx.stdin("UPS", 0);
    let keys: Vec<&str> = ups
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
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
    let pre = fx.stdin("PRE", 0);
    assert_eq!(
        pre["tool_input"],
        json!({"command": "echo BASH-RAN-MARKER"})
    );
    assert_eq!(pre["tool_use_id"], "toolu_1");
    assert_eq!(pre["effort"], json!({"level": "medium"}));
    assert_eq!(pre["prompt_id"], ups["prompt_id"]);
    let post = fx.stdin("POST", 0);
    let keys: Vec<&str> = post
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
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
    let stop = fx.stdin("STOP", 0);
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(stop["last_assistant_message"], "Done.");
    // Their environment: the session's variables, the server's own (a key's never), the folder.
    let env = fx.env("SS", 0);
    assert_eq!(env["CLAUDE_PROJECT_DIR"], cwd.as_str());
    assert_eq!(env["CLAUDECODE"], "1");
    assert_eq!(env["CLAUDE_CODE_SESSION_ID"], id.as_str());
    assert!(
        env["CLAUDE_ENV_FILE"]
            .as_str()
            .unwrap()
            .ends_with("sessionstart-hook-0.sh")
    );
    assert_eq!(env["SOME_KEYLESS_VAR"], "kept");
    assert!(env.get("ANTHROPIC_API_KEY").is_none(), "{env}");
    assert!(!env.to_string().contains(KEY));
    assert!(fx.env("UPS", 0).get("CLAUDE_ENV_FILE").is_none());
    assert_eq!(fx.env("PRE", 0)["CLAUDE_EFFORT"], "medium");
    assert_eq!(
        std::fs::read_to_string(fx.fx.join("log/PRE.0.cwd")).unwrap(),
        cwd
    );
}
