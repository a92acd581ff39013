//! The one chat fixture of the end-to-end tests: a project ([`Workspace`]: its home, managed
//! folder and repository in a temp dir), the fake Anthropic API on 127.0.0.1 ([`FakeAnthropic`]),
//! the state folder the transcripts go to, and the real binary started on them (the language
//! server, the command line), with a known fake key that must reach no file, log or request.
//!
//! A test module builds its project (a `fn project() -> Workspace`), wraps it with [`Chat::on`],
//! and adds what only it needs as free functions taking `&Chat`. Hooks: [`Chat::install_hooks`]
//! puts `harness::HOOK_SCRIPT` in a folder of its own, and `hook_*` read what each hook saw.
#![allow(dead_code)] // reason: each test module uses a part.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::fake_anthropic::{FakeAnthropic, Turn};
use crate::harness::{self, Server, Workspace, bin};

/// The known fake key (the ACP harness's too): it must appear in no file, log, transcript,
/// event or request body.
pub use crate::harness::acp::KEY;

/// A project, the fake API, the state folder, and the hooks' folder (used once installed).
pub struct Chat {
    pub ws: Workspace,
    pub api: FakeAnthropic,
    /// `XDG_STATE_HOME` of every process started: the transcripts are under it.
    pub state: PathBuf,
    /// The hooks' folder (outside the project): `bin/hk.py`, `beh/NAME.json` (what hook NAME
    /// does), `log/NAME.N.stdin` and `log/NAME.N.env.json` (what its N-th call read).
    pub hooks: PathBuf,
}

impl Chat {
    /// The fixture over `ws` (the project as the test built it) and a fake API of its own.
    pub fn on(ws: Workspace) -> Chat {
        Chat {
            state: ws.dir.path().join("state"),
            hooks: ws.dir.path().canonicalize().unwrap().join("fx"),
            api: FakeAnthropic::spawn(),
            ws,
        }
    }

    /// The plainest project: a `CLAUDE.md` and nothing else, nobody asked to trust it.
    pub fn new() -> Chat {
        let ws = Workspace::new();
        ws.write("CLAUDE.md", "# Shop\n");
        Chat::on(ws)
    }

    /// What every process of the chat gets: the fake API's address, the key, the state
    /// folder; then `more`.
    pub fn vars<'a>(&'a self, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, String)> {
        let mut vars = vec![
            ("ANTHROPIC_BASE_URL", self.api.base_url()),
            ("ANTHROPIC_API_KEY", KEY.to_string()),
            ("XDG_STATE_HOME", self.state.display().to_string()),
        ];
        vars.extend(more.iter().map(|(name, value)| (*name, value.to_string())));
        vars
    }

    /// The language server, not yet initialised, with its debug log on (its stderr is shown
    /// with `CC_LSP_STDERR=1`). `answers`: what the client answers to the server's requests,
    /// by method (or `method:tool`); `more`: more environment variables.
    pub fn spawn(&self, answers: &[(&str, Value)], more: &[(&str, &str)]) -> Server {
        let mut all = vec![("CLAUDE_CONTEXT_LOG", "debug")];
        all.extend_from_slice(more);
        let vars = self.vars(&all);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = self.ws.spawn_with(&bin(), &vars);
        for (method, answer) in answers {
            server
                .answers
                .lock()
                .unwrap()
                .insert(method.to_string(), answer.clone());
        }
        server
    }

    /// The language server, initialised on the project with these `initializationOptions`.
    pub fn server(&self, settings: Value) -> Server {
        let mut server = self.spawn(&[], &[]);
        server.initialize(&self.ws.root, settings);
        server
    }

    /// The language server, initialised by a client declaring exactly `capabilities`, and with
    /// these `initializationOptions` (also the answer to `workspace/configuration`).
    pub fn server_with_capabilities(
        &self,
        capabilities: Value,
        settings: Value,
        answers: &[(&str, Value)],
        more: &[(&str, &str)],
    ) -> Server {
        let mut server = self.spawn(answers, more);
        *server.settings.lock().unwrap() = settings.clone();
        let root = harness::uri(&self.ws.root);
        server.call(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": "ws"}],
                "initializationOptions": settings,
                "capabilities": capabilities,
            }),
        );
        server.notify("initialized", json!({}));
        server
    }

    /// `program` in the project, with nothing of this process's environment but `PATH`: the
    /// test's home, managed folder and [`Chat::vars`].
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.ws.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.ws.home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", &self.ws.managed)
            .envs(self.vars(&[]));
        command
    }

    /// `claude-context chat ARGS` as a user runs it in the project ([`harness::chat_cli`]),
    /// `stdin` one message a line; `more`: more environment variables. Returns the exit code,
    /// stdout and stderr.
    pub fn cli(&self, args: &[&str], stdin: &str, more: &[(&str, &str)]) -> (i32, String, String) {
        let vars = self.vars(more);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        harness::chat_cli(&bin(), &self.ws, args, &vars, stdin)
    }

    /// The fake API's answers: one tool call per answer (`toolu_0`, `toolu_1`, ...), then `last`.
    pub fn script(&self, calls: &[(&str, Value)], last: &str) {
        for (i, (name, input)) in calls.iter().enumerate() {
            self.api
                .push(Turn::new().tool_use(&format!("toolu_{i}"), name, input.clone()));
        }
        self.api.push(Turn::new().text(last));
    }

    /// Every request the fake API received, as JSON.
    pub fn requests(&self) -> Vec<Value> {
        self.api.requests().iter().map(|r| r.json()).collect()
    }

    /// `~/.claude.json` trusting the project, as Claude Code records an accepted trust dialog.
    pub fn trust(&self) {
        let root = self.ws.root.display().to_string();
        write_json(
            &self.ws.home.join(".claude.json"),
            &json!({"projects": {root: {"hasTrustDialogAccepted": true}}}),
        );
    }

    /// The user's `~/.claude/settings.json`: `v`, and once [`Chat::install_hooks`] ran, the
    /// hooks' folder writable in the sandbox the hooks run in (they write their logs there).
    pub fn user_settings(&self, mut v: Value) {
        if self.hooks.is_dir() {
            v["sandbox"] =
                json!({"filesystem": {"allowWrite": [self.hooks.display().to_string()]}});
        }
        write_json(&self.ws.home.join(".claude/settings.json"), &v);
    }

    /// The project's `.claude/settings.json`.
    pub fn project_settings(&self, v: Value) {
        write_json(&self.ws.path(".claude/settings.json"), &v);
    }

    /// The project's `.claude/settings.local.json`.
    pub fn local_settings(&self, v: Value) {
        write_json(&self.ws.path(".claude/settings.local.json"), &v);
    }

    /// Every transcript (`.jsonl`) under the state folder.
    pub fn transcripts(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.state.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "jsonl") {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Puts the hook script in the hooks' folder, and the user's settings (empty) that let the
    /// hooks write there.
    pub fn install_hooks(&self) {
        std::fs::create_dir_all(self.hooks.join("bin")).unwrap();
        std::fs::create_dir_all(self.hooks.join("beh")).unwrap();
        std::fs::write(self.hooks.join("bin/hk.py"), harness::HOOK_SCRIPT).unwrap();
        self.user_settings(json!({}));
    }

    /// The command of hook `name`.
    pub fn hook_command(&self, name: &str) -> String {
        format!("/usr/bin/python3 {}/bin/hk.py {name}", self.hooks.display())
    }

    /// What hook `name` does (`harness::HOOK_SCRIPT` says what `b` may hold).
    pub fn behave(&self, name: &str, b: Value) {
        std::fs::write(
            self.hooks.join("beh").join(format!("{name}.json")),
            b.to_string(),
        )
        .unwrap();
    }

    /// `{"hooks": {event: [{"matcher"?: m, "hooks": [{"type": "command", "command": ...}]}]}}`
    /// for each `(event, matcher, name)`.
    pub fn hooks_settings(&self, list: &[(&str, Option<&str>, &str)]) -> Value {
        let mut events = serde_json::Map::new();
        for (event, matcher, name) in list {
            let mut group =
                json!({"hooks": [{"type": "command", "command": self.hook_command(name)}]});
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

    /// What hook `name` read on its `n`-th call (0-based), as JSON.
    pub fn hook_stdin(&self, name: &str, n: usize) -> Value {
        let text = self.hook_stdin_text(name, n);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    /// What hook `name` read on its `n`-th call (0-based), as text.
    pub fn hook_stdin_text(&self, name: &str, n: usize) -> String {
        let p = self.hooks.join("log").join(format!("{name}.{n}.stdin"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The environment hook `name` ran in on its `n`-th call.
    pub fn hook_env(&self, name: &str, n: usize) -> Value {
        let p = self.hooks.join("log").join(format!("{name}.{n}.env.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// How many times hook `name` ran.
    pub fn hook_calls(&self, name: &str) -> usize {
        std::fs::read_dir(self.hooks.join("log"))
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
}

/// A new chat session of `server`: its id.
pub fn new_session(server: &mut Server) -> String {
    server.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Writes `v` (pretty) to `path`, creating its folder.
pub fn write_json(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}
