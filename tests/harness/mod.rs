//! A stdio LSP client for end-to-end tests and benchmarks: spawns the real binary, speaks
//! `Content-Length` framed JSON-RPC, answers the server's own requests (`workspace/configuration`,
//! `client/registerCapability`), and keeps every message the server sent for assertions.
//!
//! Anything on the server's stdout that is not a well-formed frame of JSON is recorded in
//! [`Server::junk`]: a test asserts it stays empty (stdout is for JSON-RPC only).

#![allow(dead_code)] // reason: shared by tests and benches; each uses a part.

pub mod acp;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The default wait for an expected message.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Put in [`Server::answers`] for a method the client leaves unanswered (a prompt still open).
pub const NO_ANSWER: &str = "<the client does not answer>";

/// A running `claude-context lsp`.
pub struct Server {
    child: Child,
    stdin: Stdin,
    rx: Receiver<Value>,
    /// Messages received and not yet taken by a `wait_*` call.
    pub backlog: Vec<Value>,
    /// Every message received, in order (taken or not).
    pub received: Vec<Value>,
    /// Every server → client request seen (already answered).
    pub server_requests: Arc<Mutex<Vec<Value>>>,
    /// What the client answers to `workspace/configuration`.
    pub settings: Arc<Mutex<Value>>,
    /// What the client answers to other server requests, by method (`null` when absent;
    /// [`NO_ANSWER`]: the request stays unanswered).
    pub answers: Arc<Mutex<HashMap<String, Value>>>,
    /// Bytes on stdout that were not a JSON-RPC frame.
    pub junk: Arc<Mutex<Vec<String>>>,
    next_id: i64,
    pub started: Instant,
}

/// A hook command for tests (`python3 <fx>/bin/hk.py <name>`): it logs its stdin, environment
/// and working directory under `<fx>/log/<name>.<n>.*`, then behaves as `<fx>/beh/<name>.json`
/// says (`stdout`, `stderr`, `exit`, `sleep`, `sleep_after`, `env_line`; `steps` for one
/// behaviour per run).
pub const HOOK_SCRIPT: &str = r#"import json, os, sys, time
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
if beh.get("env_line"):
    with open(os.environ["CLAUDE_ENV_FILE"], "a") as f:
        f.write(beh["env_line"] + "\n")
time.sleep(beh.get("sleep", 0))
sys.stdout.write(beh.get("stdout", ""))
sys.stdout.flush()
sys.stderr.write(beh.get("stderr", ""))
sys.stderr.flush()
time.sleep(beh.get("sleep_after", 0))
sys.exit(beh.get("exit", 0))
"#;

/// The `claude-context` binary cargo built for this test (or bench) target.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

/// `file://` URI of an absolute path.
pub fn uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The server's stdin, owned by a writer thread: whoever sends (the test, or the reader
/// answering a server request) never blocks on a full pipe, so a server that stops reading
/// while its output is full cannot deadlock the harness.
#[derive(Clone)]
pub struct Stdin(Arc<Mutex<Option<Sender<Vec<u8>>>>>);

impl Stdin {
    fn new(mut w: ChildStdin) -> Stdin {
        let (tx, rx) = channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for bytes in rx {
                if w.write_all(&bytes).is_err() || w.flush().is_err() {
                    return;
                }
            }
        });
        Stdin(Arc::new(Mutex::new(Some(tx))))
    }

    fn send(&self, bytes: Vec<u8>) {
        if let Some(tx) = self.0.lock().unwrap().as_ref() {
            let _ = tx.send(bytes);
        }
    }

    /// Closes stdin once everything queued is written.
    fn close(&self) {
        self.0.lock().unwrap().take();
    }
}

fn write_frame(stdin: &Stdin, body: &[u8]) {
    stdin.send(frame(body));
}

fn read_loop(
    stdout: impl Read,
    tx: Sender<Value>,
    stdin: Stdin,
    settings: Arc<Mutex<Value>>,
    answers: Arc<Mutex<HashMap<String, Value>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    junk: Arc<Mutex<Vec<String>>>,
) {
    let mut r = BufReader::new(stdout);
    loop {
        let mut length: Option<usize> = None;
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            match line.strip_prefix("Content-Length: ") {
                Some(n) => length = n.trim().parse().ok(),
                None => junk.lock().unwrap().push(line),
            }
        }
        let Some(n) = length else {
            junk.lock()
                .unwrap()
                .push("header without Content-Length".into());
            continue;
        };
        let mut body = vec![0; n];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let msg: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                junk.lock().unwrap().push(format!(
                    "not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                ));
                continue;
            }
        };
        if msg.get("method").is_some() && msg.get("id").is_some() {
            let result = match msg["method"].as_str() {
                Some("workspace/configuration") => {
                    let n = msg["params"]["items"].as_array().map_or(1, Vec::len);
                    Value::Array(vec![settings.lock().unwrap().clone(); n])
                }
                // An answer for `method:tool` (a chat/permission of one kind) wins over the
                // method's.
                Some(m) => {
                    let answers = answers.lock().unwrap();
                    let by_tool = msg["params"]["tool"]
                        .as_str()
                        .and_then(|t| answers.get(&format!("{m}:{t}")));
                    by_tool
                        .or_else(|| answers.get(m))
                        .cloned()
                        .unwrap_or(Value::Null)
                }
                None => Value::Null,
            };
            if result != NO_ANSWER {
                let answer = json!({"jsonrpc": "2.0", "id": msg["id"].clone(), "result": result});
                write_frame(&stdin, answer.to_string().as_bytes());
            }
            requests.lock().unwrap().push(msg.clone());
        }
        if tx.send(msg).is_err() {
            return;
        }
    }
}

impl Server {
    /// Spawns `bin lsp` with a clean environment: `HOME=home`, the managed directory, no system
    /// git config, git discovery stopped at `ceiling`.
    pub fn spawn(bin: &Path, home: &Path, managed: &Path, ceiling: &Path) -> Server {
        Server::spawn_with(bin, home, managed, ceiling, &[])
    }

    /// [`Server::spawn`] with more environment variables (`ANTHROPIC_BASE_URL`, a fake key).
    pub fn spawn_with(
        bin: &Path,
        home: &Path,
        managed: &Path,
        ceiling: &Path,
        vars: &[(&str, &str)],
    ) -> Server {
        let started = Instant::now();
        let mut cmd = Command::new(bin);
        cmd.arg("lsp")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", managed)
            .env("GIT_CEILING_DIRECTORIES", ceiling)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // Memory extraction sends a request after every turn; tests that script their
            // replies turn by turn opt in (`CLAUDE_CONTEXT_AUTO_MEMORY=1` in `vars`).
            .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("CC_LSP_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        cmd.envs(vars.iter().copied());
        let mut child = cmd.spawn().expect("spawn claude-context lsp");
        let stdin = Stdin::new(child.stdin.take().unwrap());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        let settings = Arc::new(Mutex::new(json!({})));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let junk = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(HashMap::new()));
        {
            let (stdin, settings, answers, requests, junk) = (
                stdin.clone(),
                settings.clone(),
                answers.clone(),
                requests.clone(),
                junk.clone(),
            );
            std::thread::spawn(move || {
                read_loop(stdout, tx, stdin, settings, answers, requests, junk)
            });
        }
        Server {
            child,
            stdin,
            rx,
            backlog: Vec::new(),
            received: Vec::new(),
            server_requests: requests,
            settings,
            answers,
            junk,
            next_id: 1,
            started,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&self, bytes: &[u8]) {
        self.stdin.send(bytes.to_vec());
    }

    pub fn send(&self, msg: &Value) {
        write_frame(&self.stdin, msg.to_string().as_bytes());
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn pump(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(v) => {
                self.received.push(v.clone());
                self.backlog.push(v);
                true
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => false,
        }
    }

    /// The first message (old or new) matching `pred`, removed from the backlog.
    pub fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut checked = 0;
        loop {
            if let Some(i) = self.backlog[checked..].iter().position(&pred) {
                return Some(self.backlog.remove(checked + i));
            }
            checked = self.backlog.len();
            if !self.pump(deadline) {
                return None;
            }
        }
    }

    /// The response to `id` (result or error).
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(TIMEOUT, |m| {
            m.get("id") == Some(&id) && m.get("method").is_none()
        })
        .unwrap_or_else(|| panic!("no response to request {id}"))
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(&id)
    }

    /// Sends a request and returns its result; panics on an error response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let resp = self.request(method, params);
        if let Some(e) = resp.get("error") {
            panic!("{method} failed: {e}");
        }
        resp["result"].clone()
    }

    /// The next notification `method` whose params satisfy `pred`.
    pub fn notification(&mut self, method: &str, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        self.wait_for(TIMEOUT, |m| {
            m["method"] == method && m.get("id").is_none() && pred(&m["params"])
        })
        .map(|m| m["params"].clone())
    }

    /// Drops notifications received so far (e.g. `context/changed` from setup steps); keeps
    /// responses and the server's requests.
    pub fn drain(&mut self) {
        while let Ok(v) = self.rx.try_recv() {
            self.received.push(v.clone());
            self.backlog.push(v);
        }
        self.backlog
            .retain(|m| m.get("method").is_none() || m.get("id").is_some());
    }

    /// The `chat/event` notifications of turn `turn`, in order, up to and including its `done`.
    pub fn turn_events(&mut self, turn: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let e = self
                .notification("chat/event", |p| p["turnId"] == turn)
                .unwrap_or_else(|| panic!("no chat/event for {turn}; so far {out:#?}"));
            let done = e["kind"] == "done";
            out.push(e);
            if done {
                return out;
            }
        }
    }

    /// `chat/send` of `text` in session `id`, and the turn's events up to its `done`.
    pub fn chat_send(&mut self, id: &str, text: &str) -> Vec<Value> {
        let turn = self.call("chat/send", json!({"sessionId": id, "text": text}))["turnId"]
            .as_str()
            .unwrap()
            .to_string();
        self.turn_events(&turn)
    }

    /// `initialize` for `folder` (as a client that supports configuration and watchers), then
    /// `initialized`. Returns the initialize result.
    pub fn initialize(&mut self, folder: &Path, options: Value) -> Value {
        self.initialize_with(folder, options, false)
    }

    /// [`Server::initialize`], declaring `workspace.applyEdit` when `apply_edit`.
    pub fn initialize_with(&mut self, folder: &Path, options: Value, apply_edit: bool) -> Value {
        let result = self.call(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri(folder),
                "workspaceFolders": [{"uri": uri(folder), "name": "ws"}],
                "initializationOptions": options,
                "capabilities": {
                    "workspace": {
                        "applyEdit": apply_edit,
                        "configuration": true,
                        "didChangeConfiguration": {"dynamicRegistration": true},
                        "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true}
                    },
                    "textDocument": {"hover": {"contentFormat": ["markdown"]}}
                }
            }),
        );
        self.notify("initialized", json!({}));
        result
    }

    pub fn open(&self, path: &Path, text: &str) {
        let lang = if path.extension().is_some_and(|e| e == "md") {
            "markdown"
        } else {
            "plaintext"
        };
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": lang, "version": 1, "text": text}}),
        );
    }

    pub fn close(&self, path: &Path) {
        self.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri(path)}}),
        );
    }

    /// An incremental change: replace `(line, col)..(line, col)` ranges (UTF-16 columns).
    pub fn change(&self, path: &Path, version: i64, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(path), "version": version}, "contentChanges": changes}),
        );
    }

    /// `context/preview` for a document (or none).
    pub fn preview(&mut self, doc: Option<&Path>) -> Value {
        let params = match doc {
            Some(p) => json!({"textDocument": {"uri": uri(p)}}),
            None => json!({}),
        };
        self.call("context/preview", params)
    }

    /// The latest diagnostics published for `path` (waits for the next publication matching
    /// `pred`).
    pub fn diagnostics(&mut self, path: &Path, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let u = uri(path);
        self.notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == u.as_str()
                && pred(p["diagnostics"].as_array().map_or(&[][..], Vec::as_slice))
        })
        .map(|p| p["diagnostics"].as_array().cloned().unwrap_or_default())
        .unwrap_or_else(|| panic!("no matching diagnostics for {}", path.display()))
    }

    /// Is the process still running?
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `shutdown`, `exit`, and the exit status.
    pub fn shutdown(mut self) -> ExitStatus {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "shutdown failed: {r}");
        self.notify("exit", Value::Null);
        self.wait_exit()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Resident memory (VmRSS) and its peak (VmHWM), in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Closes stdin: the server sees the end of its input.
    pub fn close_stdin(&mut self) {
        self.stdin.close();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A workspace on disk: a home, a managed directory, and a project (a git repository).
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub managed: PathBuf,
    pub root: PathBuf,
}

impl Workspace {
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = Workspace {
            home: base.join("home"),
            managed: base.join("managed"),
            root: base.join("home").join("work").join("shop"),
            dir,
        };
        std::fs::create_dir_all(&ws.root).unwrap();
        std::fs::create_dir_all(&ws.managed).unwrap();
        ws
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `git init` + one commit of everything, with a fixed identity.
    pub fn git_init(&self) {
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(&self.root)
                .env("HOME", &self.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "Test")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "Test")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .expect("git");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "Initial commit"]);
    }

    pub fn spawn(&self, bin: &Path) -> Server {
        Server::spawn(bin, &self.home, &self.managed, self.dir.path())
    }

    /// [`Workspace::spawn`] with more environment variables (the fake API's address, a key, the
    /// state directory, ...).
    pub fn spawn_with(&self, bin: &Path, vars: &[(&str, &str)]) -> Server {
        Server::spawn_with(bin, &self.home, &self.managed, self.dir.path(), vars)
    }
}

/// `claude-context chat ARGS` run by a user in `ws`'s project: a clean environment (the
/// workspace's home and managed directory, git discovery stopped above it, auto-memory off),
/// plus `vars` (the fake API's address, a key, the state directory, ...). `stdin` is written,
/// then closed. Returns the exit code, stdout and stderr.
pub fn chat_cli(
    bin: &Path,
    ws: &Workspace,
    args: &[&str],
    vars: &[(&str, &str)],
    stdin: &str,
) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(bin)
        .arg("chat")
        .args(args)
        .current_dir(&ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
        .env("GIT_CEILING_DIRECTORIES", ws.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A request's JSON without its cache breakpoints (the breakpoint moves to the newest block).
pub fn without_cache(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache).collect()),
        other => other.clone(),
    }
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace::new()
    }
}
