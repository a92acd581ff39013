//! `claude-context acp` over raw JSON lines, for end-to-end tests: spawns the agent in a
//! workspace with a clean environment, sends requests, waits for answers and updates.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Workspace;

/// The API key the agent runs with (a test checks that no line carries it).
pub const KEY: &str = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789abcdef";

/// An agent and its lines.
pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Messages read but not asked for yet.
    pub seen: Vec<Value>,
}

impl Agent {
    /// `bin acp --no-git` in `ws`'s project against the API at `base_url`, with `vars` more.
    pub fn start(bin: &Path, ws: &Workspace, base_url: &str, vars: &[(&str, &str)]) -> Agent {
        let state = ws.dir.path().join("state");
        let mut child = Command::new(bin)
            .args(["acp", "--no-git"])
            .current_dir(&ws.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &ws.home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
            .env("XDG_STATE_HOME", state)
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
            .env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", base_url)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn claude-context acp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the agent wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            rx,
            seen: Vec::new(),
        }
    }

    pub fn raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, id: u64, method: &str, params: Value) {
        self.raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
    }

    /// The next message matching `pred` (others are kept for later).
    pub fn wait(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.seen.push(v),
                Err(_) => panic!("no {what}; seen: {:#?}", self.seen),
            }
        }
    }

    pub fn answer(&mut self, id: u64) -> Value {
        let want = json!(id);
        self.wait(&format!("answer {id}"), |v| {
            v.get("id") == Some(&want) && v.get("method").is_none()
        })
    }

    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(id, method, params);
        let a = self.answer(id);
        assert!(a.get("error").is_none(), "{method}: {a}");
        a["result"].clone()
    }

    pub fn error(&mut self, id: u64, method: &str, params: Value) -> (i64, String) {
        self.send(id, method, params);
        let a = self.answer(id);
        (
            a["error"]["code"]
                .as_i64()
                .unwrap_or_else(|| panic!("{method}: {a}")),
            a["error"]["message"].as_str().unwrap().to_string(),
        )
    }

    pub fn initialize(&mut self) {
        self.call(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
    }

    /// Every `session/update` of `session` read so far, and until `until` holds for one.
    pub fn updates_until(&mut self, session: &str, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let u = self.wait("a session/update", |v| {
                v["method"] == "session/update" && v["params"]["sessionId"] == session
            });
            let done = until(&u["params"]["update"]);
            out.push(u["params"]["update"].clone());
            if done {
                return out;
            }
        }
    }

    /// The next message (one read but not asked for first), waiting up to `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        if !self.seen.is_empty() {
            return Some(self.seen.remove(0));
        }
        self.rx.recv_timeout(timeout).ok()
    }

    /// Sends request `id` and reads until its answer, allowing every permission prompt once;
    /// every message read meanwhile is returned (the answer last).
    pub fn call_allowing(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(id, method, params);
        let mut out = std::mem::take(&mut self.seen);
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}; seen: {out:#?}"));
            out.push(v.clone());
            if v["method"] == "session/request_permission" {
                let answer = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
                self.raw(&json!({"jsonrpc": "2.0", "id": v["id"], "result": answer}).to_string());
            } else if v.get("method").is_none() && v["id"] == json!(id) {
                return out;
            }
        }
    }

    /// Ends the input; the exit status.
    pub fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
