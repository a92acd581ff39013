//! The agent tools (`server/src/tools/`) through their public API, on real files in temp dirs and
//! a real shell: what a user (or the model) notices of each tool, the workspace confinement
//! (symbolic links and `..` included), the permission policy (a denial runs nothing), the editor
//! seam (edits of open files land in the buffer, the disk untouched), caps, cancellation and
//! malformed input.
#![allow(clippy::disallowed_methods)] // reason: tests drive real processes and files.

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use claude_context::tools::{
    Access, Asker, BufferEdit, CancellationToken, Decision, Editor, OutsidePolicy,
    PermissionRequest, ToolOutcome, Tools, ToolsConfig, Workspace, definitions,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Test doubles: an asker with scripted answers, an editor with open buffers.

#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Decision>>,
    asked: Mutex<Vec<PermissionRequest>>,
}

impl Script {
    fn answer(&self, d: Decision) {
        self.answers.lock().unwrap().push_back(d);
    }
    fn asked(&self) -> Vec<PermissionRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Asker for Script {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision> {
        self.asked.lock().unwrap().push(request);
        // No scripted answer: deny (a test that did not expect a question sees it in `asked`).
        let d = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Decision::Deny);
        Box::pin(async move { d })
    }
}

#[derive(Default)]
struct Buffers {
    open: Mutex<HashMap<PathBuf, String>>,
    can_apply: bool,
    refuse: bool,
    applied: Mutex<Vec<BufferEdit>>,
}

impl Editor for Buffers {
    fn open_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>> {
        let text = self.open.lock().unwrap().get(path).cloned();
        Box::pin(async move { text })
    }
    fn can_apply_edits(&self) -> bool {
        self.can_apply
    }
    fn apply_edit(&self, edit: BufferEdit) -> BoxFuture<'_, Result<(), String>> {
        let result = if self.refuse {
            Err("the user rejected it".to_string())
        } else {
            let mut open = self.open.lock().unwrap();
            let text = open.get_mut(&edit.path).expect("edit of an open buffer");
            assert_eq!(*text, edit.base, "edits are computed on the buffer's text");
            let mut out = String::new();
            let mut at = 0;
            for e in &edit.edits {
                out.push_str(&text[at..e.range.start]);
                out.push_str(&e.new_text);
                at = e.range.end;
            }
            out.push_str(&text[at..]);
            *text = out;
            Ok(())
        };
        self.applied.lock().unwrap().push(edit);
        Box::pin(async move { result })
    }
}

struct Env {
    _dir: tempfile::TempDir,
    /// The workspace folder (real path).
    ws: PathBuf,
    /// A sibling folder outside the workspace, with `secret.txt`.
    out: PathBuf,
    asker: Arc<Script>,
    editor: Arc<Buffers>,
    tools: Tools,
}

const SECRET: &str = "TOP-SECRET-CONTENT-42";

fn env_with(f: impl FnOnce(&mut ToolsConfig), editor: Buffers) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    let out = root.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    let mut config = ToolsConfig::new(Workspace::new([ws.clone()], []));
    f(&mut config);
    let asker = Arc::new(Script::default());
    let editor = Arc::new(editor);
    let tools = Tools::new(config, editor.clone(), asker.clone());
    Env {
        _dir: dir,
        ws,
        out,
        asker,
        editor,
        tools,
    }
}

fn env() -> Env {
    env_with(|_| {}, Buffers::default())
}

impl Env {
    async fn run(&self, name: &str, input: Value) -> ToolOutcome {
        self.tools
            .run(name, &input, &CancellationToken::new())
            .await
    }
    fn path(&self, rel: &str) -> String {
        self.ws.join(rel).display().to_string()
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.join(rel)).unwrap()
    }
}

#[track_caller]
fn ok(o: &ToolOutcome) {
    assert!(!o.is_error, "unexpected error: {}", o.content);
}

/// What the model gets when the user rejects a call in a prompt (permissions-trust.md check 26).
const REJECTED: &str =
    "The user doesn't want to proceed with this tool use. The tool use was rejected";

#[track_caller]
fn err(o: &ToolOutcome, needle: &str) {
    assert!(o.is_error, "expected an error, got: {}", o.content);
    assert!(
        o.content.contains(needle),
        "error {:?} does not contain {needle:?}",
        o.content
    );
}

// ---------------------------------------------------------------------------------------------
// Schemas and input validation.

#[test]
fn definitions_are_valid_json_schema_for_the_tools_field() {
    let defs = definitions();
    let names: Vec<&str> = defs.iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"]
    );
    for d in &defs {
        let wire = serde_json::to_value(d).unwrap();
        // The set of keys (serde_json keeps insertion order when a dependency asks it to).
        let mut keys: Vec<&String> = wire.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["description", "input_schema", "name"]);
        assert!(
            d.name.len() <= 64
                && d.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert!(
            d.description.len() > 80,
            "{} has a real description",
            d.name
        );
        assert_eq!(d.input_schema["type"], "object");
        jsonschema::meta::validate(&d.input_schema)
            .unwrap_or_else(|e| panic!("{}: not a valid JSON Schema: {e}", d.name));
        for (field, spec) in d.input_schema["properties"].as_object().unwrap() {
            assert!(
                spec.get("description").is_some() || spec.get("enum").is_some(),
                "{}.{field} is described",
                d.name
            );
        }
    }
}

/// What the schema accepts, the parser accepts; what the schema rejects, the tool rejects.
#[tokio::test]
async fn the_schemas_and_the_parser_agree() {
    let e = env();
    e.write("a.txt", "one\n");
    let valid: Vec<(&str, Value)> = vec![
        (
            "Read",
            json!({"file_path": e.path("a.txt"), "offset": 1, "limit": 5}),
        ),
        ("Glob", json!({"pattern": "*.txt", "path": e.path("")})),
        (
            "Grep",
            json!({"pattern": "one", "path": e.path(""), "glob": "*.txt", "output_mode": "content",
                   "-i": true, "-n": true, "-A": 1, "-B": 1, "-C": 0, "multiline": false, "head_limit": 3}),
        ),
        (
            "TodoWrite",
            json!({"todos": [{"content": "x", "status": "pending", "activeForm": "xing"}]}),
        ),
    ];
    let defs = definitions();
    for (name, input) in valid {
        let schema = &defs.iter().find(|d| d.name == name).unwrap().input_schema;
        assert!(jsonschema::is_valid(schema, &input), "{name} {input}");
        let o = e.run(name, input).await;
        ok(&o);
    }
    let invalid: Vec<(&str, Value, &str)> = vec![
        ("Read", json!({"file_path": 7}), "file_path"),
        (
            "Read",
            json!({"file_path": e.path("a.txt"), "offset": "3"}),
            "offset",
        ),
        (
            "Read",
            json!({"file_path": e.path("a.txt"), "offset": -1}),
            "offset",
        ),
        ("Read", json!({"path": e.path("a.txt")}), "file_path"),
        (
            "Edit",
            json!({"file_path": e.path("a.txt"), "old_string": "one"}),
            "new_string",
        ),
        (
            "Grep",
            json!({"pattern": "x", "output_mode": "lines"}),
            "output_mode",
        ),
        ("Bash", json!({"command": ["ls"]}), "command"),
        (
            "TodoWrite",
            json!({"todos": [{"content": "x", "status": "doing"}]}),
            "status",
        ),
    ];
    for (name, input, field) in invalid {
        let schema = &defs.iter().find(|d| d.name == name).unwrap().input_schema;
        assert!(!jsonschema::is_valid(schema, &input), "{name} {input}");
        let o = e.run(name, input).await;
        err(&o, field);
        assert!(o.content.contains("It takes:"), "{}", o.content);
    }
    assert!(
        e.asker.asked().is_empty(),
        "nothing malformed reached the user"
    );
}

#[tokio::test]
async fn malformed_calls_are_error_results_that_say_what_is_wrong() {
    let e = env();
    err(&e.run("Delete", json!({})).await, "no tool named `Delete`");
    err(
        &e.run("Read", json!("{\"file_path\": \"/x")).await,
        "not valid JSON",
    );
    err(
        &e.run("Read", json!([1, 2])).await,
        "must be a JSON object, not an array",
    );
    err(&e.run("Read", Value::Null).await, "not null");
    err(
        &e.run("Read", json!({"file_path": "a", "bogus": 1})).await,
        "unknown field `bogus`",
    );
    err(&e.run("Read", json!({"file_path": ""})).await, "empty");
    err(&e.run("Bash", json!({"command": "  "})).await, "empty");
    err(
        &e.run(
            "Edit",
            json!({"file_path": e.path("x"), "old_string": "a", "new_string": "a"}),
        )
        .await,
        "the same",
    );
    assert!(e.asker.asked().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Read.

#[tokio::test]
async fn read_numbers_lines_like_cat_n_with_offset_and_limit() {
    let e = env();
    e.write("src/a.rs", "fn main() {\r\n    println!(\"hi\");\n}\n");
    let o = e
        .run("Read", json!({"file_path": e.path("src/a.rs")}))
        .await;
    ok(&o);
    assert_eq!(
        o.content,
        "     1\tfn main() {\n     2\t    println!(\"hi\");\n     3\t}\n"
    );
    assert_eq!(o.summary, "lines 1–3 of 3");
    assert_eq!(o.touched.len(), 1);
    assert_eq!(o.touched[0].real, e.ws.join("src/a.rs"));
    assert_eq!(o.touched[0].access, Access::Read);
    // Relative to the first folder; offset and limit.
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    e.write("b.txt", &text);
    let o = e
        .run(
            "Read",
            json!({"file_path": "b.txt", "offset": 10, "limit": 3}),
        )
        .await;
    ok(&o);
    assert!(
        o.content
            .starts_with("    10\tline 10\n    11\tline 11\n    12\tline 12\n")
    );
    assert!(
        o.content
            .contains("the file has 50 lines; continue with offset=13")
    );
    let o = e
        .run("Read", json!({"file_path": "b.txt", "offset": 60}))
        .await;
    ok(&o);
    assert!(o.content.contains("has 50 lines"));
    let o = e.run("Read", json!({"file_path": "empty"})).await;
    err(&o, "does not exist");
    // A failed read still touches the file (context.md section 4).
    assert_eq!(o.touched.len(), 1);
    e.write("empty.txt", "");
    let o = e.run("Read", json!({"file_path": "empty.txt"})).await;
    ok(&o);
    assert!(o.content.contains("exists and is empty"));
    assert!(e.asker.asked().is_empty(), "reads inside never ask");
}

#[tokio::test]
async fn read_refuses_images_binaries_directories_and_fifos_clearly() {
    let e = env();
    std::fs::write(e.ws.join("logo.png"), b"\x89PNG\r\n\x1a\n....").unwrap();
    err(
        &e.run("Read", json!({"file_path": "logo.png"})).await,
        "is an image",
    );
    std::fs::write(e.ws.join("prog"), b"\x7fELF\x02\x01\x00\x00binary").unwrap();
    err(&e.run("Read", json!({"file_path": "prog"})).await, "binary");
    std::fs::create_dir(e.ws.join("dir")).unwrap();
    err(
        &e.run("Read", json!({"file_path": "dir"})).await,
        "is a directory",
    );
    let fifo = e.ws.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let started = Instant::now();
        err(
            &e.run("Read", json!({"file_path": "fifo"})).await,
            "not a regular file",
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a FIFO never blocks a Read"
        );
    }
}

#[tokio::test]
async fn read_caps_long_lines_and_huge_outputs() {
    let e = env();
    let long = "x".repeat(10_000);
    e.write("min.js", &format!("{long}\nshort\n"));
    let o = e.run("Read", json!({"file_path": "min.js"})).await;
    ok(&o);
    assert!(o.content.contains("[… line cut]"));
    assert!(o.content.contains("     2\tshort"));
    assert!(o.content.len() < 3_000);
    // 2000 lines of 200 characters: more than the output cap.
    let line = "y".repeat(200);
    let big: String = (0..20_000).map(|_| format!("{line}\n")).collect();
    e.write("big.log", &big);
    let o = e.run("Read", json!({"file_path": "big.log"})).await;
    ok(&o);
    assert!(o.content.len() <= 110 * 1024, "{}", o.content.len());
    assert!(
        o.content.contains("size limit at line"),
        "says where it stopped"
    );
    // Any offset of a big file, without reading it all into the answer.
    let o = e
        .run(
            "Read",
            json!({"file_path": "big.log", "offset": 19_999, "limit": 5}),
        )
        .await;
    ok(&o);
    assert_eq!(o.content.lines().filter(|l| l.contains('\t')).count(), 2);
    assert_eq!(o.summary, "lines 19999–20000 of 20000");
}

#[tokio::test]
async fn read_of_an_open_file_returns_the_unsaved_text() {
    let editor = Buffers::default();
    let e = env_with(|_| {}, editor);
    e.write("main.rs", "on disk\n");
    e.editor
        .open
        .lock()
        .unwrap()
        .insert(e.ws.join("main.rs"), "unsaved edit\nsecond\n".into());
    let o = e.run("Read", json!({"file_path": e.path("main.rs")})).await;
    ok(&o);
    assert!(
        o.content
            .starts_with("     1\tunsaved edit\n     2\tsecond\n")
    );
    assert!(!o.content.contains("on disk"));
    assert!(o.content.contains("unsaved changes"));
}

// ---------------------------------------------------------------------------------------------
// Confinement.

#[tokio::test]
async fn nothing_outside_the_workspace_is_read_or_written_without_permission() {
    let e = env();
    let secret = e.out.join("secret.txt");
    std::fs::create_dir(e.ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&secret, e.ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&e.out, e.ws.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(e.out.join("not-yet"), e.ws.join("dangling")).unwrap();
    let ways_out = [
        secret.display().to_string(),
        "../outside/secret.txt".to_string(),
        "sub/../../outside/secret.txt".to_string(),
        "link.txt".to_string(),
        "linkdir/secret.txt".to_string(),
    ];
    for p in &ways_out {
        let o = e.run("Read", json!({"file_path": p})).await;
        err(&o, "outside the workspace");
        assert!(!o.content.contains(SECRET), "{p}: {}", o.content);
        assert!(o.touched.is_empty());
        let o = e
            .run("Write", json!({"file_path": p, "content": "pwned"}))
            .await;
        err(&o, "outside the workspace");
        let o = e
            .run(
                "Edit",
                json!({"file_path": p, "old_string": SECRET, "new_string": "pwned"}),
            )
            .await;
        err(&o, "outside the workspace");
        assert!(!o.content.contains("occurs"), "nothing about its content");
        let o = e
            .run(
                "Grep",
                json!({"pattern": "SECRET", "path": p, "output_mode": "content"}),
            )
            .await;
        err(&o, "outside the workspace");
    }
    for p in ["linkdir", "../outside", "linkdir/new"] {
        err(
            &e.run("Glob", json!({"pattern": "**/*", "path": p})).await,
            "outside the workspace",
        );
        err(
            &e.run(
                "Write",
                json!({"file_path": format!("{p}/x.txt"), "content": "x"}),
            )
            .await,
            "outside the workspace",
        );
    }
    // A dangling link must not become a way to create a file outside.
    let o = e
        .run("Write", json!({"file_path": "dangling", "content": "x"}))
        .await;
    err(&o, "target does not exist");
    assert!(!e.out.join("not-yet").exists());
    // A search of the whole workspace does not follow the links out of it.
    let o = e
        .run(
            "Grep",
            json!({"pattern": "SECRET", "output_mode": "content"}),
        )
        .await;
    ok(&o);
    assert!(!o.content.contains(SECRET), "{}", o.content);
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        format!("{SECRET}\n")
    );
    assert_eq!(std::fs::read_dir(&e.out).unwrap().count(), 1);
    assert!(e.asker.asked().is_empty(), "refused, not asked");
}

#[tokio::test]
async fn outside_paths_are_asked_for_under_the_ask_policy() {
    let e = env_with(|c| c.outside = OutsidePolicy::Ask, Buffers::default());
    let secret = e.out.join("secret.txt").display().to_string();
    // Denied: the content is never returned.
    e.asker.answer(Decision::Deny);
    let o = e.run("Read", json!({"file_path": secret})).await;
    err(&o, REJECTED);
    assert!(!o.content.contains(SECRET));
    let asked = e.asker.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].summary.contains("outside the workspace"),
        "{}",
        asked[0].summary
    );
    // Allowed for the session: that tool on that path is not asked again.
    e.asker.answer(Decision::AllowSession);
    let o = e.run("Read", json!({"file_path": secret})).await;
    ok(&o);
    assert!(o.content.contains(SECRET));
    ok(&e.run("Read", json!({"file_path": secret})).await);
    assert_eq!(e.asker.asked().len(), 2);
    // Another tool on it is a new question (denied by default here).
    err(
        &e.run("Write", json!({"file_path": secret, "content": "x"}))
            .await,
        REJECTED,
    );
    assert_eq!(e.asker.asked().len(), 3);
}

#[tokio::test]
async fn allowed_directories_work_like_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    std::fs::create_dir_all(root.join("extra")).unwrap();
    std::fs::write(root.join("extra/notes.md"), "allowed text\n").unwrap();
    let asker = Arc::new(Script::default());
    let tools = Tools::new(
        ToolsConfig::new(Workspace::new([root.join("ws")], [root.join("extra")])),
        Arc::new(Buffers::default()),
        asker.clone(),
    );
    let o = tools
        .run(
            "Read",
            &json!({"file_path": root.join("extra/notes.md")}),
            &CancellationToken::new(),
        )
        .await;
    ok(&o);
    assert!(o.content.contains("allowed text"));
    assert!(asker.asked().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Write and Edit on disk, with permission.

#[tokio::test]
async fn write_asks_then_creates_or_replaces_keeping_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let e = env();
    // Denied: nothing is written.
    let o = e
        .run(
            "Write",
            json!({"file_path": "new/dir/a.txt", "content": "hello\n"}),
        )
        .await;
    err(&o, REJECTED);
    assert!(o.touched.is_empty());
    assert!(!e.ws.join("new").exists());
    let asked = e.asker.asked();
    assert_eq!(asked[0].tool, "Write");
    assert_eq!(asked[0].input["content"], "hello\n");
    assert!(asked[0].summary.contains("a.txt"));
    // Allowed once: created, with its parent folders.
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Write",
            json!({"file_path": "new/dir/a.txt", "content": "hello\n"}),
        )
        .await;
    ok(&o);
    assert!(o.content.starts_with("Created"));
    assert_eq!(e.read("new/dir/a.txt"), "hello\n");
    assert_eq!(o.touched[0].access, Access::Write);
    // Replacing keeps the file's mode and leaves no temporary file behind.
    let script = e.ws.join("run.sh");
    std::fs::write(&script, "old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    ok(&e.run("Read", json!({"file_path": "run.sh"})).await);
    e.asker.answer(Decision::AllowSession);
    ok(&e
        .run(
            "Write",
            json!({"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
        )
        .await);
    assert_eq!(e.read("run.sh"), "#!/bin/sh\necho new\n");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    assert_eq!(
        std::fs::read_dir(&e.ws).unwrap().count(),
        2,
        "only new/ and run.sh: no temporary file left"
    );
    // Allowed for the session: later Writes are not asked; Edits still are.
    let before = e.asker.asked().len();
    ok(&e
        .run("Write", json!({"file_path": "b.txt", "content": "b"}))
        .await);
    assert_eq!(e.asker.asked().len(), before);
    err(
        &e.run(
            "Edit",
            json!({"file_path": "b.txt", "old_string": "b", "new_string": "c"}),
        )
        .await,
        REJECTED,
    );
    assert_eq!(e.asker.asked().len(), before + 1);
    assert_eq!(e.read("b.txt"), "b");
}

#[tokio::test]
async fn write_never_replaces_a_file_the_model_has_not_seen_as_it_is() {
    let e = env();
    e.write("notes.md", "the user's notes\n");
    // Never read: refused before anyone is asked.
    let o = e
        .run("Write", json!({"file_path": "notes.md", "content": "x"}))
        .await;
    err(&o, "has not been read");
    assert!(e.asker.asked().is_empty());
    // Read, then changed on disk by someone else: refused again.
    ok(&e
        .run("Read", json!({"file_path": "notes.md", "limit": 1}))
        .await);
    std::thread::sleep(Duration::from_millis(20));
    e.write("notes.md", "the user's notes, edited meanwhile\n");
    err(
        &e.run("Write", json!({"file_path": "notes.md", "content": "x"}))
            .await,
        "changed on disk since you last read it",
    );
    assert_eq!(e.read("notes.md"), "the user's notes, edited meanwhile\n");
    // Read again: allowed; and a file it wrote itself can be written again.
    ok(&e.run("Read", json!({"file_path": "notes.md"})).await);
    e.asker.answer(Decision::AllowSession);
    ok(&e
        .run("Write", json!({"file_path": "notes.md", "content": "v1\n"}))
        .await);
    ok(&e
        .run("Write", json!({"file_path": "notes.md", "content": "v2\n"}))
        .await);
    assert_eq!(e.read("notes.md"), "v2\n");
    // A file that cannot be read as text cannot have been read: not replaced (issue 16).
    std::fs::write(e.ws.join("data.bin"), b"\x00\xff").unwrap();
    err(
        &e.run(
            "Write",
            json!({"file_path": "data.bin", "content": "text\n"}),
        )
        .await,
        "cannot be read as text",
    );
    assert_eq!(std::fs::read(e.ws.join("data.bin")).unwrap(), b"\x00\xff");
}

#[tokio::test]
async fn edit_replaces_one_exact_match_or_says_why_not() {
    let e = env();
    let src = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
    e.write("lib.rs", src);
    let edit = |old: &str, new: &str, all: bool| json!({"file_path": "lib.rs", "old_string": old, "new_string": new, "replace_all": all});
    // Failing edits are refused before anyone is asked.
    err(
        &e.run("Edit", edit("y();", "z();", false)).await,
        "not found",
    );
    let o = e.run("Edit", edit("x();", "z();", false)).await;
    err(&o, "occurs 2 times");
    assert!(o.content.contains("lines 2, 5"), "{}", o.content);
    err(
        &e.run(
            "Edit",
            json!({"file_path": "nope.rs", "old_string": "a", "new_string": "b"}),
        )
        .await,
        "does not exist",
    );
    assert!(e.asker.asked().is_empty());
    assert_eq!(e.read("lib.rs"), src);
    // A unique match, allowed.
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Edit",
            edit("fn b() {\n    x();", "fn b() {\n    y();", false),
        )
        .await;
    ok(&o);
    assert!(
        o.content.contains("replaced 1 occurrence at line 4"),
        "{}",
        o.content
    );
    assert!(
        o.content.contains("     5\t    y();"),
        "shows the result: {}",
        o.content
    );
    assert_eq!(
        e.read("lib.rs"),
        "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n"
    );
    // replace_all.
    e.write("lib.rs", src);
    e.asker.answer(Decision::Allow);
    let o = e.run("Edit", edit("x()", "renamed()", true)).await;
    ok(&o);
    assert!(o.content.contains("replaced 2 occurrences"));
    assert_eq!(e.read("lib.rs").matches("renamed()").count(), 2);
    // Denied: unchanged.
    e.write("lib.rs", src);
    err(&e.run("Edit", edit("fn a", "fn c", false)).await, REJECTED);
    assert_eq!(e.read("lib.rs"), src);
}

#[tokio::test]
async fn edit_keeps_crlf_files_crlf_and_refuses_non_utf8() {
    let e = env();
    e.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    e.asker.answer(Decision::Allow);
    ok(&e
        .run(
            "Edit",
            json!({"file_path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
        )
        .await);
    assert_eq!(e.read("win.txt"), "1\r\n2\r\nthree\r\n");
    std::fs::write(e.ws.join("latin1.txt"), b"caf\xe9\n").unwrap();
    err(
        &e.run(
            "Edit",
            json!({"file_path": "latin1.txt", "old_string": "caf", "new_string": "bar"}),
        )
        .await,
        "not valid UTF-8",
    );
    assert_eq!(
        std::fs::read(e.ws.join("latin1.txt")).unwrap(),
        b"caf\xe9\n"
    );
}

// ---------------------------------------------------------------------------------------------
// Through the editor.

fn editing_env() -> Env {
    env_with(
        |_| {},
        Buffers {
            can_apply: true,
            ..Buffers::default()
        },
    )
}

#[tokio::test]
async fn edit_of_an_open_file_goes_to_the_buffer_and_leaves_the_disk_alone() {
    let e = editing_env();
    e.write("a.rs", "let x = 1;\n");
    let path = e.ws.join("a.rs");
    e.editor
        .open
        .lock()
        .unwrap()
        .insert(path.clone(), "let x = 1; // unsaved\n".into());
    e.asker.answer(Decision::Allow);
    let o = e
        .run("Edit", json!({"file_path": e.path("a.rs"), "old_string": "// unsaved", "new_string": "// edited"}))
        .await;
    ok(&o);
    assert!(o.content.contains("editor's buffer"), "{}", o.content);
    assert!(
        o.content.contains("not saved"),
        "tells the model the disk differs"
    );
    assert_eq!(e.read("a.rs"), "let x = 1;\n", "disk untouched");
    assert_eq!(
        e.editor.open.lock().unwrap()[&path],
        "let x = 1; // edited\n"
    );
    let applied = e.editor.applied.lock().unwrap();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].edits.len(), 1);
    assert_eq!(applied[0].edits[0].range, 11..21);
    assert!(applied[0].label.contains("a.rs"));
    assert_eq!(o.touched[0].access, Access::Write);
}

#[tokio::test]
async fn write_of_an_open_file_goes_to_the_buffer_as_a_small_edit() {
    let e = editing_env();
    let path = e.ws.join("n.txt");
    // Open but never saved: not on disk at all.
    e.editor
        .open
        .lock()
        .unwrap()
        .insert(path.clone(), "alpha\nbeta\ngamma\n".into());
    ok(&e.run("Read", json!({"file_path": "n.txt"})).await);
    e.asker.answer(Decision::Allow);
    ok(&e
        .run(
            "Write",
            json!({"file_path": "n.txt", "content": "alpha\nBETA\ngamma\n"}),
        )
        .await);
    assert!(!path.exists(), "disk untouched");
    assert_eq!(e.editor.open.lock().unwrap()[&path], "alpha\nBETA\ngamma\n");
    let applied = e.editor.applied.lock().unwrap();
    assert_eq!(
        applied[0].edits[0].new_text, "BETA",
        "only the changed part"
    );
}

#[tokio::test]
async fn an_editor_that_refuses_or_cannot_apply_edits() {
    let e = env_with(
        |_| {},
        Buffers {
            can_apply: true,
            refuse: true,
            ..Buffers::default()
        },
    );
    e.write("a.txt", "old\n");
    e.editor
        .open
        .lock()
        .unwrap()
        .insert(e.ws.join("a.txt"), "old\n".into());
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Edit",
            json!({"file_path": "a.txt", "old_string": "old", "new_string": "new"}),
        )
        .await;
    err(&o, "the user rejected it");
    assert!(o.touched.is_empty());
    assert_eq!(e.read("a.txt"), "old\n");
    // An editor without applyEdit: the disk is written even though the file is open.
    let e = env();
    e.write("a.txt", "old\n");
    e.editor
        .open
        .lock()
        .unwrap()
        .insert(e.ws.join("a.txt"), "old\n".into());
    e.asker.answer(Decision::Allow);
    ok(&e
        .run(
            "Edit",
            json!({"file_path": "a.txt", "old_string": "old", "new_string": "new"}),
        )
        .await);
    assert_eq!(e.read("a.txt"), "new\n");
}

// ---------------------------------------------------------------------------------------------
// Glob and Grep.

fn set_mtime(p: &Path, secs_ago: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

fn git_init(dir: &Path) {
    let s = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(s.success());
}

#[tokio::test]
async fn glob_lists_newest_first_respects_gitignore_and_caps() {
    let e = env();
    git_init(&e.ws);
    e.write(".gitignore", "target/\n");
    e.write("old.rs", "");
    e.write("src/new.rs", "");
    e.write("src/deep/mid.rs", "");
    e.write("target/build.rs", "");
    e.write(".github/ci.yml", "");
    set_mtime(&e.ws.join("old.rs"), 300);
    set_mtime(&e.ws.join("src/deep/mid.rs"), 200);
    set_mtime(&e.ws.join("src/new.rs"), 100);
    let o = e.run("Glob", json!({"pattern": "**/*.rs"})).await;
    ok(&o);
    assert_eq!(
        o.content,
        format!(
            "{}\n{}\n{}\n",
            e.path("src/new.rs"),
            e.path("src/deep/mid.rs"),
            e.path("old.rs")
        )
    );
    assert_eq!(o.summary, "3 files");
    // `*` stays in one directory; hidden files are found; a search path.
    let o = e.run("Glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(o.content, format!("{}\n", e.path("old.rs")));
    let o = e.run("Glob", json!({"pattern": "**/*.yml"})).await;
    assert!(o.content.contains("ci.yml"));
    let o = e
        .run("Glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(o.content, format!("{}\n", e.path("src/new.rs")));
    let o = e.run("Glob", json!({"pattern": "**/*.py"})).await;
    ok(&o);
    assert!(o.content.starts_with("No files match"));
    err(
        &e.run("Glob", json!({"pattern": "a/[b"})).await,
        "Invalid glob",
    );
    for i in 0..130 {
        e.write(&format!("many/f{i:03}.txt"), "");
    }
    let o = e.run("Glob", json!({"pattern": "many/*.txt"})).await;
    assert_eq!(
        o.content.lines().filter(|l| l.starts_with('/')).count(),
        100
    );
    assert!(o.content.contains("of 130 files"));
}

#[tokio::test]
async fn grep_finds_files_lines_and_counts() {
    let e = env();
    git_init(&e.ws);
    e.write(".gitignore", "ignored.rs\n");
    e.write(
        "a.rs",
        "fn main() {\n    let todo = 1;\n    // TODO: more\n}\n",
    );
    e.write("b.py", "# todo here\nprint('x')\n");
    e.write("ignored.rs", "TODO hidden by gitignore\n");
    std::fs::write(e.ws.join("blob.bin"), b"TODO\x00\x01\x02").unwrap();
    set_mtime(&e.ws.join("a.rs"), 100);
    // Default: files with matches, newest first.
    let o = e.run("Grep", json!({"pattern": "(?i)todo"})).await;
    ok(&o);
    assert_eq!(
        o.content,
        format!("{}\n{}\n", e.path("b.py"), e.path("a.rs"))
    );
    // Case, line numbers, context.
    let o = e
        .run(
            "Grep",
            json!({"pattern": "TODO", "output_mode": "content", "path": "a.rs", "-B": 1}),
        )
        .await;
    ok(&o);
    let a = e.path("a.rs");
    assert_eq!(
        o.content,
        format!("{a}-2-    let todo = 1;\n{a}:3:    // TODO: more\n")
    );
    let o = e
        .run(
            "Grep",
            json!({"pattern": "todo", "-i": true, "output_mode": "count"}),
        )
        .await;
    assert!(o.content.contains(&format!("{a}:2\n")), "{}", o.content);
    assert!(
        o.content.contains("3 matching lines in 2 files"),
        "{}",
        o.content
    );
    // Filters.
    let o = e
        .run("Grep", json!({"pattern": "todo", "glob": "*.py"}))
        .await;
    assert_eq!(o.content, format!("{}\n", e.path("b.py")));
    let o = e
        .run("Grep", json!({"pattern": "todo", "type": "rust"}))
        .await;
    assert_eq!(o.content, format!("{a}\n"));
    err(
        &e.run("Grep", json!({"pattern": "x", "type": "klingon"}))
            .await,
        "Unknown file type",
    );
    err(
        &e.run("Grep", json!({"pattern": "fn main("})).await,
        "Invalid regular expression",
    );
    // Multiline.
    let o = e
        .run("Grep", json!({"pattern": "main\\(\\) \\{\\n\\s+let", "multiline": true, "output_mode": "content"}))
        .await;
    assert!(
        o.content.contains(&format!("{a}:1:fn main() {{")),
        "{}",
        o.content
    );
    assert!(
        o.content.contains(&format!("{a}:2:    let todo")),
        "{}",
        o.content
    );
    let o = e.run("Grep", json!({"pattern": "nothing-like-this"})).await;
    ok(&o);
    assert!(o.content.starts_with("No matches"));
}

#[tokio::test]
async fn grep_output_is_capped() {
    let e = env();
    let body: String = (0..2000)
        .map(|i| format!("match {i} {}\n", "z".repeat(900)))
        .collect();
    e.write("huge.txt", &body);
    let o = e
        .run(
            "Grep",
            json!({"pattern": "match", "output_mode": "content"}),
        )
        .await;
    ok(&o);
    assert!(o.content.len() < 70 * 1024, "{}", o.content.len());
    assert!(o.content.contains("[… line cut]"));
    assert!(o.content.contains("output cut at"));
    let o = e
        .run(
            "Grep",
            json!({"pattern": "match", "output_mode": "content", "head_limit": 3}),
        )
        .await;
    assert_eq!(
        o.content.lines().filter(|l| l.contains(":match")).count(),
        3
    );
}

// ---------------------------------------------------------------------------------------------
// Bash.

/// Is a process alive (not gone, not a zombie)?
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits for the command to have written its pid file (it started what it says), then gives
/// whether a process running `sleep <marker>` is alive on this machine. Found by its command line,
/// not by the pid it wrote: in the sandbox's PID namespace `$!` is not the machine's pid.
fn started_and_running(p: &Path, marker: &str) -> bool {
    for _ in 0..100 {
        if std::fs::read_to_string(p).is_ok_and(|t| !t.trim().is_empty()) {
            return running(marker);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no pid in {}", p.display());
}

/// Is a process whose command line is `sleep <marker>` alive (not gone, not a zombie)?
fn running(marker: &str) -> bool {
    let want = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            return false;
        };
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want.as_bytes()) && alive(pid)
    })
}

/// Watches for `sleep <marker>` for up to 10 s from now: the flag is set once it was seen
/// running (so that a test of its end is not passed by a process that never started).
fn watch(marker: &'static str) -> Arc<std::sync::atomic::AtomicBool> {
    let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = seen.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if running(marker) {
                s.store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    seen
}

/// Waits up to a second for `sleep <marker>` to be gone.
fn gone(marker: &str) -> bool {
    for _ in 0..50 {
        if !running(marker) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test]
async fn bash_runs_in_the_workspace_and_reports_output_and_status() {
    let e = env();
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": "pwd; echo out; echo err >&2; exit 3", "description": "try"}),
        )
        .await;
    assert!(o.is_error);
    assert_eq!(
        o.content,
        format!("{}\nout\nerr\n[exit code 3]\n", e.ws.display())
    );
    assert_eq!(o.summary, "exit 3");
    let asked = e.asker.asked();
    assert_eq!(asked[0].tool, "Bash");
    assert!(asked[0].summary.contains("echo out"));
    assert!(
        asked[0]
            .session_scope
            .as_deref()
            .unwrap()
            .contains("exact command")
    );
    e.asker.answer(Decision::Allow);
    let o = e.run("Bash", json!({"command": "true"})).await;
    ok(&o);
    assert_eq!(o.content, "(no output)\n");
}

#[tokio::test]
async fn bash_never_runs_without_an_answer_and_a_denial_runs_nothing() {
    let e = env();
    let marker = e.ws.join("ran");
    let cmd = format!("touch {}", marker.display());
    let o = e.run("Bash", json!({"command": cmd})).await;
    err(&o, REJECTED);
    assert_eq!(o.summary, "denied by the user");
    assert!(o.stop && o.refused, "a rejection ends the turn");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "a denied command never ran");
    // Allowed once: asked again next time.
    e.asker.answer(Decision::Allow);
    ok(&e.run("Bash", json!({"command": cmd})).await);
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    err(&e.run("Bash", json!({"command": cmd})).await, REJECTED);
    assert!(!marker.exists());
    assert_eq!(e.asker.asked().len(), 3);
    // Allowed for the session: that exact command is not asked again, any other is.
    e.asker.answer(Decision::AllowSession);
    ok(&e.run("Bash", json!({"command": "echo one"})).await);
    ok(&e.run("Bash", json!({"command": "echo one"})).await);
    assert_eq!(e.asker.asked().len(), 4);
    let o = e
        .run("Bash", json!({"command": format!("echo one; {cmd}")}))
        .await;
    err(&o, REJECTED);
    assert!(
        !marker.exists(),
        "a longer command is not covered by a prefix"
    );
    assert_eq!(e.asker.asked().len(), 5);
}

#[tokio::test]
async fn bash_timeout_kills_the_command_and_what_it_started() {
    let e = env();
    e.asker.answer(Decision::Allow);
    let pidfile = e.ws.join("bg.pid");
    let seen = watch("60.101");
    let started = Instant::now();
    let o = e
        .run(
            "Bash",
            json!({"command": format!("echo started; sleep 60.101 & echo $! > {}; wait", pidfile.display()), "timeout": 700}),
        )
        .await;
    let took = started.elapsed();
    err(&o, "time limit");
    assert!(
        o.content.starts_with("started\n"),
        "output before the kill is kept"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let _ = started_and_running(&pidfile, "60.101");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        "sleep 60.101 never ran"
    );
    assert!(
        gone("60.101"),
        "the background sleep was killed with the group"
    );
}

#[tokio::test]
async fn bash_background_jobs_do_not_outlive_the_call() {
    let e = env();
    e.asker.answer(Decision::Allow);
    let pidfile = e.ws.join("bg.pid");
    let seen = watch("60.102");
    let started = Instant::now();
    let o = e
        .run(
            "Bash",
            json!({"command": format!("sleep 60.102 & echo $! > {}; sleep 0.3; echo done", pidfile.display())}),
        )
        .await;
    ok(&o);
    assert_eq!(o.content, "done\n");
    assert!(started.elapsed() < Duration::from_secs(10));
    let _ = started_and_running(&pidfile, "60.102");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        "sleep 60.102 never ran"
    );
    assert!(gone("60.102"));
}

#[tokio::test]
async fn a_process_that_leaves_the_group_cannot_hold_the_call() {
    if std::process::Command::new("setsid")
        .arg("true")
        .status()
        .is_err()
    {
        return; // no setsid on this system
    }
    let e = env();
    e.asker.answer(Decision::Allow);
    let started = Instant::now();
    // The escaped sleep keeps the output pipe open for 8 s; the call does not wait for it.
    let o = e
        .run("Bash", json!({"command": "setsid sleep 8 & echo quick"}))
        .await;
    ok(&o);
    assert_eq!(o.content, "quick\n");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn cancelling_a_bash_call_kills_it() {
    let e = env();
    e.asker.answer(Decision::Allow);
    let pidfile = e.ws.join("fg.pid");
    let seen = watch("60.103");
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let pf = pidfile.clone();
    tokio::spawn(async move {
        while !pf.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let o = e
        .tools
        .run(
            "Bash",
            &json!({"command": format!("sleep 60.103 & echo $! > {}; wait", pidfile.display())}),
            &cancel,
        )
        .await;
    err(&o, "cancelled");
    assert!(started.elapsed() < Duration::from_secs(10));
    let _ = started_and_running(&pidfile, "60.103");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        "sleep 60.103 never ran"
    );
    assert!(gone("60.103"), "the child's group was killed on cancel");
}

/// The same under the binary's reaper (as a session runs commands), in the sandbox when it
/// runs here: a cancel closes the reaper's control pipe and everything inside ends, a job that
/// left the command's process group (`setsid`) too.
#[tokio::test]
async fn cancelling_a_bash_call_under_the_reaper_kills_it() {
    let e = env_with(with_reaper, Buffers::default());
    e.asker.answer(Decision::Allow);
    e.asker.answer(Decision::Allow);
    let pidfile = e.ws.join("fg.pid");
    let seen = watch("60.104");
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let pf = pidfile.clone();
    tokio::spawn(async move {
        while !pf.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        c2.cancel();
    });
    let o = e
        .tools
        .run(
            "Bash",
            &json!({"command": format!("setsid sleep 60.104 & echo $! > {}; wait", pidfile.display())}),
            &cancel,
        )
        .await;
    err(&o, "cancelled");
    let _ = started_and_running(&pidfile, "60.104");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        "sleep 60.104 never ran"
    );
    assert!(
        gone("60.104"),
        "a job that left the group outlived the cancel"
    );
}

#[tokio::test]
async fn bash_output_is_capped_keeping_both_ends() {
    let e = env();
    e.asker.answer(Decision::Allow);
    let o = e
        .run("Bash", json!({"command": "echo FIRST; head -c 500000 /dev/zero | tr '\\0' x; echo; echo LAST"}))
        .await;
    ok(&o);
    assert!(o.content.len() < 31_000, "{}", o.content.len());
    assert!(o.content.starts_with("FIRST\n"));
    assert!(o.content.ends_with("LAST\n"));
    assert!(o.content.contains("of output left out"));
}

#[tokio::test]
async fn secrets_are_kept_out_of_what_the_model_sees() {
    let e = env_with(
        |c| {
            c.scrub = vec!["sk-test-SECRET-0123456789".into()];
            c.bash.env_remove = vec!["HOME".into()];
        },
        Buffers::default(),
    );
    e.write(".env", "KEY=sk-test-SECRET-0123456789\n");
    let o = e.run("Read", json!({"file_path": ".env"})).await;
    assert!(!o.content.contains("sk-test-SECRET"), "{}", o.content);
    assert!(o.content.contains("KEY=[redacted]"));
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": "cat .env; echo \"home=${HOME:-removed}\""}),
        )
        .await;
    assert!(!o.content.contains("sk-test-SECRET"), "{}", o.content);
    assert!(o.content.contains("home=removed"), "{}", o.content);
}

// ---------------------------------------------------------------------------------------------
// Bash's sandbox (issue 25): bubblewrap on Linux, on by default.

/// Skips a sandbox test where the machine has no working bubblewrap, saying how to get it.
async fn sandbox_here() -> bool {
    let Some(b) = claude_context::tools::find_bwrap() else {
        eprintln!("skipped: bubblewrap is not installed (apt install bubblewrap)");
        return false;
    };
    match claude_context::tools::probe_sandbox(&b).await {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipped: bubblewrap cannot make a sandbox here: {e}");
            false
        }
    }
}

/// The real binary as the commands' reaper (it also carries the sandbox's network).
fn with_reaper(c: &mut ToolsConfig) {
    c.bash.reaper = Some(PathBuf::from(env!("CARGO_BIN_EXE_claude-context")));
}

#[tokio::test]
async fn sandboxed_commands_write_only_the_workspace_and_their_private_tmp() {
    if !sandbox_here().await {
        return;
    }
    let e = env_with(with_reaper, Buffers::default());
    let outside = e.out.join("planted.txt");
    let pid = std::process::id();
    let home_file =
        PathBuf::from(std::env::var_os("HOME").unwrap()).join(format!(".cc-sandbox-{pid}"));
    let note = format!("/tmp/cc-note-{pid}");
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": format!(
                "echo inside > made.txt && echo ok1; echo x > {} 2>&1 || echo refused1; \
                 echo x > {} 2>&1 || echo refused2; echo kept > {note} && echo ok2; \
                 echo \"tmpdir=$TMPDIR\"",
                outside.display(),
                home_file.display()
            )}),
        )
        .await;
    let planted = home_file.exists();
    let _ = std::fs::remove_file(&home_file);
    assert!(
        !planted,
        "a command wrote in the home folder: {}",
        o.content
    );
    assert!(!outside.exists(), "a command wrote outside the workspace");
    assert!(
        o.content.contains("ok1") && o.content.contains("ok2"),
        "{}",
        o.content
    );
    assert!(
        o.content.contains("refused1") && o.content.contains("refused2"),
        "{}",
        o.content
    );
    assert!(o.content.contains("Read-only file system"), "{}", o.content);
    assert!(o.content.contains("tmpdir=/tmp"), "{}", o.content);
    assert_eq!(e.read("made.txt"), "inside\n");
    // `/tmp` is the session's own: kept between its commands, never the machine's.
    assert!(
        !std::path::Path::new(&note).exists(),
        "the machine's /tmp was written"
    );
    e.asker.answer(Decision::Allow);
    let o = e
        .run("Bash", json!({"command": format!("cat {note}")}))
        .await;
    ok(&o);
    assert_eq!(o.content, "kept\n");
}

#[tokio::test]
async fn a_sandboxed_command_sees_no_other_process_and_no_network() {
    if !sandbox_here().await {
        return;
    }
    let e = env_with(with_reaper, Buffers::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let me = std::process::id();
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": format!(
                "test -e /proc/{me} && echo see-test || echo no-test; \
                 ls /proc | grep -c '^[0-9]' ; \
                 (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo no-network"
            )}),
        )
        .await;
    let lines: Vec<&str> = o.content.lines().collect();
    assert_eq!(lines[0], "no-test", "{}", o.content);
    let count: u32 = lines[1].parse().unwrap();
    assert!(
        count <= 8,
        "the sandbox shows {count} processes: {}",
        o.content
    );
    assert_eq!(lines[2], "no-network", "{}", o.content);
    drop(listener);
}

/// A hook of `command` (SessionStart, the project's), as the session's settings give it.
fn hook(command: &str) -> claude_context::hooks::Hook {
    claude_context::hooks::Hook {
        event: claude_context::hooks::Event::SessionStart,
        source: claude_context::hooks::Source::Project,
        file: "/p/.claude/settings.json".into(),
        line: None,
        matcher: claude_context::hooks::Matcher::parse(None),
        command: command.into(),
        timeout: Some(30.0),
        kind: "command".into(),
    }
}

/// The hooks' runner of a session in `e`'s workspace with `bash` (as `equip` makes it: the
/// session's Bash configuration and its sandbox state `rt`, its secrets scrubbed).
fn hook_runner(
    e: &Env,
    bash: &claude_context::tools::BashConfig,
    rt: Arc<claude_context::tools::SandboxRuntime>,
) -> claude_context::hooks::Runner {
    claude_context::hooks::Runner {
        bash: claude_context::hooks::run::hook_bash(bash),
        workspace: Workspace::new([e.ws.clone()], []),
        sandbox: rt,
        scrubber: Arc::new(claude_context::scrub::Scrubber::new([SECRET])),
        cwd: e.ws.clone(),
        env: Vec::new(),
        limits: Default::default(),
    }
}

/// Issue 26, item 3: a hook runs under the sandbox rules that apply to Bash. In a session whose
/// commands are sandboxed, a hook writes its workspace and nothing outside it (another folder,
/// the home folder), sees no other process (none of whose environments it could read), and what
/// it prints is scrubbed of the session's secrets before anything reads it.
#[tokio::test]
async fn a_hook_runs_in_the_sandbox_bash_runs_in() {
    if !sandbox_here().await {
        return;
    }
    let e = env();
    let bash = claude_context::tools::BashConfig {
        reaper: Some(PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))),
        ..Default::default()
    };
    let runner = hook_runner(&e, &bash, Arc::default());
    e.write("key.txt", &format!("{SECRET}\n"));
    let pid = std::process::id();
    let home_file =
        PathBuf::from(std::env::var_os("HOME").unwrap()).join(format!(".cc-hook-{pid}"));
    let h = hook(&format!(
        "echo made > by-hook.txt && echo ok1; \
         (echo x > {out}/planted.txt) 2>/dev/null || echo refused1; \
         (echo x > {home}) 2>/dev/null || echo refused2; \
         test -r /proc/{pid}/environ && echo see-test || echo no-test; \
         ls /proc | grep -c '^[0-9]'; \
         cat key.txt",
        out = e.out.display(),
        home = home_file.display(),
    ));
    let runs = runner
        .run(&[&h], b"{}", &[], &CancellationToken::new())
        .await;
    let planted = home_file.exists();
    let _ = std::fs::remove_file(&home_file);
    let out = &runs[0].stdout;
    assert_eq!(runs[0].end, claude_context::hooks::End::Exit(0), "{runs:?}");
    assert!(!planted, "a hook wrote in the home folder: {out}");
    assert!(!e.out.join("planted.txt").exists(), "a hook wrote outside");
    assert_eq!(e.read("by-hook.txt"), "made\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..4],
        ["ok1", "refused1", "refused2", "no-test"],
        "{out}"
    );
    let count: u32 = lines[4].parse().unwrap();
    assert!(
        count <= 8,
        "the hook's sandbox shows {count} processes: {out}"
    );
    assert_eq!(lines[5], "[redacted]", "{out}");
    assert!(!out.contains(SECRET));
}

/// Issue 26, item 3, where bubblewrap cannot run: a hook follows the session's one answer to
/// "run commands without a sandbox". Before it is given, the hook is not run and the user reads
/// why (nobody is asked per hook); once the user allowed it for the session (at a Bash
/// command's question), hooks run outside it too; a user whose settings turned the sandbox off
/// runs them without any question.
#[tokio::test]
async fn where_the_sandbox_cannot_run_a_hook_follows_the_sessions_answer() {
    let rt = Arc::new(claude_context::tools::SandboxRuntime::default());
    let mut e = env_with(
        |c| c.bash.sandbox.bwrap = Some(PathBuf::from("/bin/false")),
        Buffers::default(),
    );
    e.tools.share_sandbox(rt.clone());
    let mut bash = claude_context::tools::BashConfig::default();
    bash.sandbox.bwrap = Some(PathBuf::from("/bin/false"));
    let runner = hook_runner(&e, &bash, rt);
    let marker = e.ws.join("hook-ran");
    let h = hook(&format!("touch {}", marker.display()));
    let cancel = CancellationToken::new();
    let runs = runner.run(&[&h], b"{}", &[], &cancel).await;
    assert!(!marker.exists(), "a hook ran outside the sandbox unasked");
    let claude_context::hooks::End::Skipped(why) = &runs[0].end else {
        panic!("{runs:?}");
    };
    assert!(why.contains("cannot run in a sandbox here"), "{why}");
    assert!(why.contains("/bin/false"), "{why}");
    let notes = claude_context::hooks::outcome::notices(&runs);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].kind, "error");
    assert!(notes[0].text.starts_with("not run: "), "{}", notes[0].text);
    // A Bash command's question, answered for the session: the hooks' answer too.
    e.asker.answer(Decision::AllowSession);
    e.asker.answer(Decision::Allow);
    ok(&e.run("Bash", json!({"command": "true"})).await);
    let runs = runner.run(&[&h], b"{}", &[], &cancel).await;
    assert_eq!(runs[0].end, claude_context::hooks::End::Exit(0), "{runs:?}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    // The user's settings turned the sandbox off: the hook runs, nobody asked, another session.
    bash.sandbox.enabled = false;
    let off = hook_runner(&e, &bash, Arc::default());
    let runs = off.run(&[&h], b"{}", &[], &cancel).await;
    assert_eq!(runs[0].end, claude_context::hooks::End::Exit(0), "{runs:?}");
    assert!(marker.exists());
}

/// A tiny HTTP server on 127.0.0.1 answering every request with `body`, for `n` requests.
fn http_once(body: &'static str, n: usize) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for s in listener.incoming().take(n) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[tokio::test]
async fn allowed_hosts_are_reached_through_the_proxy_and_no_other() {
    if !sandbox_here().await {
        return;
    }
    let e = env_with(
        |c| {
            with_reaper(c);
            c.bash.sandbox.allowed_domains = vec!["127.0.0.1".into()];
        },
        Buffers::default(),
    );
    let port = http_once("hello from outside", 2);
    // Straight to the port: no route; through the proxy the environment names: allowed. Spoken
    // by hand (bash's /dev/tcp), so no client's NO_PROXY decides.
    let through = |target: &str| {
        format!(
            "p=${{HTTP_PROXY##*:}}; exec 3<>/dev/tcp/127.0.0.1/$p && \
             printf 'GET {target} HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3 && cat <&3"
        )
    };
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": format!(
                "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo direct || echo no-direct; {}",
                through(&format!("http://127.0.0.1:{port}/"))
            )}),
        )
        .await;
    assert!(o.content.starts_with("no-direct\n"), "{}", o.content);
    assert!(o.content.contains("hello from outside"), "{}", o.content);
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": through(&format!("http://localhost:{port}/"))}),
        )
        .await;
    assert!(o.content.contains("403 Forbidden"), "{}", o.content);
    assert!(o.content.contains("allowedDomains"), "{}", o.content);
    assert!(!o.content.contains("hello from outside"), "{}", o.content);
}

#[tokio::test]
async fn where_the_sandbox_cannot_run_the_user_is_asked_once_and_a_no_runs_nothing() {
    let e = env_with(
        |c| c.bash.sandbox.bwrap = Some(PathBuf::from("/bin/false")),
        Buffers::default(),
    );
    let marker = e.ws.join("ran");
    let cmd = format!("touch {}", marker.display());
    // No: nothing runs, and the model is told why.
    e.asker.answer(Decision::Deny);
    let o = e.run("Bash", json!({"command": cmd})).await;
    err(&o, "cannot run in a sandbox");
    assert!(o.stop, "a no ends the turn, as any rejection does");
    assert!(!marker.exists());
    let asked = e.asker.asked();
    assert_eq!(asked.len(), 1, "the command itself was not asked about");
    assert!(asked[0].summary.contains("/bin/false"), "{:?}", asked[0]);
    assert!(
        asked[0]
            .warning
            .as_deref()
            .unwrap()
            .contains("Without the sandbox")
    );
    assert!(asked[0].choices.is_some());
    // Yes for the session: the command is asked about, runs, and the question is not asked again.
    e.asker.answer(Decision::AllowSession);
    e.asker.answer(Decision::Allow);
    ok(&e.run("Bash", json!({"command": cmd})).await);
    assert!(marker.exists());
    e.asker.answer(Decision::Allow);
    ok(&e.run("Bash", json!({"command": "true"})).await);
    let asked = e.asker.asked();
    assert_eq!(asked.len(), 4, "{asked:#?}");
    assert!(asked[3].summary.starts_with("Bash: true"), "{:?}", asked[3]);
}

/// The permission decision (issue 32) comes before the sandbox's question (issue 25): a command
/// a deny rule refuses is refused unasked, even where the sandbox cannot run; in don't ask mode
/// the sandbox's question is not asked either; a command an allow rule lets run still needs the
/// answer "run without a sandbox" there.
#[tokio::test]
async fn a_deny_rule_refuses_before_the_sandbox_is_asked_about_and_dont_ask_asks_nothing() {
    use claude_context::permissions::{Kind, Mode, Policy, Rule, Source, rule::Bases};
    let rule = |text: &str, kind: Kind, root: &Path| {
        let bases = Bases {
            cwd: root.to_path_buf(),
            home: None,
            root: root.to_path_buf(),
        };
        Rule::parse(
            text,
            kind,
            Source::command_line(),
            &bases,
            "x",
            &mut Vec::new(),
        )
    };
    for mode in [Mode::Default, Mode::DontAsk] {
        let e = env_with(
            |c| {
                c.bash.sandbox.bwrap = Some(PathBuf::from("/bin/false"));
                let root = c.workspace.roots()[0].clone();
                c.policy = Arc::new(Policy::with_rules(
                    vec![
                        rule("Bash(touch denied-file)", Kind::Deny, &root),
                        rule("Bash(touch allowed-file)", Kind::Allow, &root),
                    ],
                    mode,
                ));
            },
            Buffers::default(),
        );
        // Denied: refused with the rule's text, nothing asked, nothing run.
        let o = e.run("Bash", json!({"command": "touch denied-file"})).await;
        err(&o, "denied");
        assert!(o.refused, "{}", o.content);
        assert!(!e.ws.join("denied-file").exists());
        assert!(
            e.asker.asked().is_empty(),
            "{mode:?}: {:#?}",
            e.asker.asked()
        );
        // Allowed by a rule: where it runs is still the user's answer (once), never silently.
        e.asker.answer(Decision::Allow);
        let o = e
            .run("Bash", json!({"command": "touch allowed-file"}))
            .await;
        let asked = e.asker.asked();
        match mode {
            Mode::DontAsk => {
                err(&o, "don't ask mode");
                assert!(asked.is_empty(), "{asked:#?}");
                assert!(!e.ws.join("allowed-file").exists());
            }
            _ => {
                ok(&o);
                assert_eq!(asked.len(), 1, "{asked:#?}");
                assert!(
                    asked[0].summary.contains("cannot run in a sandbox"),
                    "{:?}",
                    asked[0]
                );
                assert!(e.ws.join("allowed-file").exists());
            }
        }
    }
}

#[tokio::test]
async fn the_files_that_run_code_are_read_only_inside_the_sandbox() {
    if !sandbox_here().await {
        return;
    }
    let e = env_with(with_reaper, Buffers::default());
    git_init(&e.ws);
    e.write(".vscode/tasks.json", "{}\n");
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": "git config core.fsmonitor 'touch pwned' 2>&1; echo '{\"x\":1}' > .vscode/tasks.json 2>&1; echo '#!/bin/sh' > .git/hooks/pre-commit 2>&1; echo done"}),
        )
        .await;
    assert!(o.content.ends_with("done\n"), "{}", o.content);
    assert!(
        !e.read(".git/config").contains("fsmonitor"),
        "{}",
        o.content
    );
    assert_eq!(e.read(".vscode/tasks.json"), "{}\n");
    assert!(!e.ws.join(".git/hooks/pre-commit").exists());
    // The rest of the repository works: a commit.
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Bash",
            json!({"command": "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm a && git log --oneline | wc -l"}),
        )
        .await;
    ok(&o);
}

#[tokio::test]
async fn a_linked_worktree_commits_in_the_sandbox_and_its_git_config_stays_read_only() {
    if !sandbox_here().await {
        return;
    }
    // The workspace is a linked worktree: its git directory is in the main repository's.
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let main = root.join("main");
    std::fs::create_dir_all(&main).unwrap();
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git_init(&main);
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(args)
            .current_dir(&main)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "a",
    ]);
    git(&["worktree", "add", "-q", root.join("wt").to_str().unwrap()]);
    let mut config = ToolsConfig::new(Workspace::new([root.join("wt")], []));
    with_reaper(&mut config);
    let asker = Arc::new(Script::default());
    let tools = Tools::new(config, Arc::new(Buffers::default()), asker.clone());
    asker.answer(Decision::Allow);
    let o = tools
        .run(
            "Bash",
            &json!({"command": "echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@t commit -qm b && echo committed; git config core.fsmonitor 'touch pwned' 2>&1; echo done"}),
            &CancellationToken::new(),
        )
        .await;
    assert!(o.content.contains("committed"), "{}", o.content);
    let config = std::fs::read_to_string(main.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
}

// ---------------------------------------------------------------------------------------------
// TodoWrite and descriptions.

#[tokio::test]
async fn todo_write_replaces_the_sessions_list() {
    let e = env();
    let o = e
        .run(
            "TodoWrite",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
                {"content": "Run the tests", "status": "pending"}
            ]}),
        )
        .await;
    ok(&o);
    assert_eq!(o.summary, "3 todos: 1 done, 1 in progress, 1 pending");
    let todos = e.tools.todos();
    assert_eq!(todos.len(), 3);
    assert_eq!(todos[1].active_form.as_deref(), Some("Fixing the bug"));
    err(
        &e.run(
            "TodoWrite",
            json!({"todos": [{"content": " ", "status": "pending"}]}),
        )
        .await,
        "empty",
    );
    assert_eq!(e.tools.todos().len(), 3, "a bad list changes nothing");
    assert!(e.asker.asked().is_empty());
}

#[test]
fn calls_are_described_in_a_short_line() {
    let e = env();
    let d = |n: &str, v: Value| e.tools.describe(n, &v);
    assert_eq!(
        d("Read", json!({"file_path": e.path("src/a.rs")})),
        "Read src/a.rs"
    );
    assert_eq!(
        d("Edit", json!({"file_path": "/etc/hosts"})),
        "Edit /etc/hosts"
    );
    assert_eq!(
        d("Bash", json!({"command": "cargo test\nmore"})),
        "Bash: cargo test…"
    );
    assert_eq!(d("Grep", json!({"pattern": "fn"})), "Grep fn");
    assert_eq!(d("Read", json!(42)), "Read");
    assert_eq!(d("Nope", json!({})), "Nope");
}

/// Swaps `a` and `b` (a folder and a link to a folder outside) as fast as it can until stopped:
/// another local process racing the tools.
struct Swapper {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(a: PathBuf, b: PathBuf) -> Swapper {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0;
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                if rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .is_ok()
                {
                    swaps += 1;
                }
            }
            swaps
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops, leaving the two names as they are.
    fn stop_files(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }

    /// Stops, leaving `a` as it started (the real folder). Returns the number of swaps.
    fn stop(mut self, a: &Path, b: &Path) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = self.thread.take().unwrap().join().unwrap();
        if std::fs::symlink_metadata(a)
            .unwrap()
            .file_type()
            .is_symlink()
        {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                a,
                rustix::fs::CWD,
                b,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
        swaps
    }
}

/// Issue 16, finding 4: while another process swaps a folder of the workspace for a link to a
/// folder outside, 1,000 Reads and 1,000 Writes through it: no Read returns the outside file and
/// no Write creates a file outside (a race is an error result, never a file outside).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_during_reads_and_writes_never_escapes() {
    let e = env();
    let d = e.ws.join("d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("secret.txt"), "inside\n").unwrap();
    let link = e.ws.join("d-link");
    std::os::unix::fs::symlink(&e.out, &link).unwrap();
    e.asker.answer(Decision::AllowSession);
    let swapper = Swapper::start(d.clone(), link.clone());
    let (mut escaped, mut read_ok, mut read_err) = (0, 0, 0);
    for _ in 0..1000 {
        let o = e
            .run("Read", json!({"file_path": e.path("d/secret.txt")}))
            .await;
        if o.content.contains(SECRET) {
            escaped += 1;
        } else if o.is_error {
            read_err += 1;
        } else {
            read_ok += 1;
        }
    }
    let (mut write_ok, mut write_err) = (0, 0);
    for i in 0..1000 {
        let o = e
            .run(
                "Write",
                json!({"file_path": e.path(&format!("d/new-{i}.txt")), "content": "x\n"}),
            )
            .await;
        if o.is_error {
            write_err += 1;
        } else {
            write_ok += 1;
        }
    }
    let swaps = swapper.stop(&d, &link);
    let outside_files = std::fs::read_dir(&e.out).unwrap().count() - 1;
    eprintln!(
        "{swaps} swaps; Reads: {read_ok} ok, {read_err} errors, {escaped} escaped; Writes: \
         {write_ok} ok, {write_err} errors, {outside_files} files outside"
    );
    assert!(swaps > 1000, "the race did not run: {swaps} swaps");
    assert_eq!(escaped, 0, "Reads returned the file outside");
    assert_eq!(outside_files, 0, "Writes created files outside");
}

/// Issue 16, finding 4: a Write replaces the file; it never writes through a hard link, so the
/// other name (here outside the workspace) keeps its content.
#[tokio::test]
async fn a_hard_link_is_neither_read_nor_written_through() {
    let e = env();
    let target = e.out.join("target.txt");
    std::fs::write(&target, "outside content\n").unwrap();
    std::fs::hard_link(&target, e.ws.join("linked.txt")).unwrap();
    // Issue 25: a read through a hard link showed the file outside.
    let o = e
        .run("Read", json!({"file_path": e.path("linked.txt")}))
        .await;
    err(&o, "hard links");
    assert!(!o.content.contains("outside content"), "{}", o.content);
    let o = e
        .run(
            "Grep",
            json!({"pattern": "outside", "output_mode": "content"}),
        )
        .await;
    assert!(!o.content.contains("outside content"), "{}", o.content);
    e.asker.answer(Decision::Allow);
    let _ = e
        .run(
            "Write",
            json!({"file_path": e.path("linked.txt"), "content": "new\n"}),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "outside content\n",
        "the write went through the hard link"
    );
    // A new file of that name is written as any other (the link is replaced, not followed).
    std::fs::remove_file(e.ws.join("linked.txt")).unwrap();
    std::fs::hard_link(&target, e.ws.join("linked.txt")).unwrap();
    std::fs::remove_file(&target).unwrap();
    ok(&e
        .run("Read", json!({"file_path": e.path("linked.txt")}))
        .await);
}

/// The read position of this process's descriptor open on `path`, if one is.
fn read_position(path: &Path) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        if std::fs::read_link(e.path()).ok().as_deref() == Some(path) {
            let info = std::fs::read_to_string(format!(
                "/proc/self/fdinfo/{}",
                e.file_name().to_string_lossy()
            ))
            .ok()?;
            return info
                .lines()
                .find_map(|l| l.strip_prefix("pos:"))
                .and_then(|v| v.trim().parse().ok());
        }
    }
    None
}

/// Issue 16, finding 6: a cancelled Grep stops reading within 100 ms, even in the middle of one
/// huge file (the call's result said "cancelled" while the search went on before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_grep_stops_reading_within_100_ms() {
    let e = env();
    let line = "some text that the pattern never matches, again and again\n";
    e.write("huge.log", &line.repeat(2_000_000));
    let path = e.ws.join("huge.log");
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let tools = &e.tools;
    // No literal to look for: the regular expression runs over every line (seconds of work).
    let input = json!({"pattern": "[a-z]+ [0-9]{3}[a-z]", "path": path, "-i": true});
    let run = tools.run("Grep", &input, &c);
    tokio::pin!(run);
    // Let it start reading.
    let started = Instant::now();
    while read_position(&path).is_none() && started.elapsed() < Duration::from_secs(10) {
        tokio::select! {
            _ = &mut run => panic!("the search ended before it could be cancelled"),
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    }
    assert!(
        read_position(&path).is_some(),
        "the search never opened the file"
    );
    cancel.cancel();
    let out = run.await;
    err(&out, "cancelled");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let a = read_position(&path);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = read_position(&path);
    eprintln!("read position 100 ms after the cancel: {a:?}, 300 ms later: {b:?}");
    assert!(
        b.is_none() || a == b,
        "the search went on reading after the cancel: {a:?} then {b:?}"
    );
}

/// Issue 16, finding 6: a file swapped for a FIFO while Grep searches is skipped, never waited
/// on (Grep blocked forever in `open` before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_never_blocks_on_a_file_swapped_for_a_fifo() {
    let e = env();
    for i in 0..20 {
        e.write(&format!("f{i}.txt"), "needle\n");
    }
    let fifo = e.ws.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let target = e.ws.join("f0.txt");
    let swapper = Swapper::start(target.clone(), fifo.clone());
    let mut timed_out = 0;
    for _ in 0..200 {
        let input = json!({"pattern": "needle", "output_mode": "count"});
        let cancel = CancellationToken::new();
        let run = e.tools.run("Grep", &input, &cancel);
        if tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .is_err()
        {
            timed_out += 1;
            cancel.cancel();
            break;
        }
    }
    let swaps = swapper.stop_files();
    eprintln!("{swaps} swaps, {timed_out} Greps waited");
    // Release a search still waiting in `open` (before the fix), so the test can end.
    for p in [&target, &fifo] {
        if let Ok(m) = std::fs::symlink_metadata(p)
            && m.file_type().is_fifo()
        {
            for _ in 0..50 {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(p);
            }
        }
    }
    assert_eq!(timed_out, 0, "a Grep waited on a FIFO");
}

/// Issue 16, finding 7: Write's read-first rule holds for files Read cannot show (binary, over
/// 64 MB): such a file cannot have been read, so Write does not replace it.
#[tokio::test]
async fn write_never_replaces_a_binary_file_unseen() {
    let e = env();
    std::fs::write(e.ws.join("blob.bin"), b"\xff\xfe\x00binary").unwrap();
    e.asker.answer(Decision::Allow);
    e.asker.answer(Decision::Allow);
    let o = e
        .run(
            "Write",
            json!({"file_path": e.path("blob.bin"), "content": "text"}),
        )
        .await;
    err(&o, "cannot be read as text");
    assert_eq!(
        std::fs::read(e.ws.join("blob.bin")).unwrap(),
        b"\xff\xfe\x00binary"
    );
    assert!(
        e.asker.asked().is_empty(),
        "asked about a Write that is refused"
    );
}
