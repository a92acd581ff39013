//! Permission rules and modes against our own session (`../shared/spec/permissions-trust.md`
//! section 12, the checks about rules and modes): the real binary's `chat` on the command line
//! with no terminal (nobody can answer a prompt, as in the reference's `-p` runs the spec
//! measured), real files, and the fake Anthropic API scripting the model's calls. Assertions are
//! on what the API recorded: the `tool_result` texts byte for byte, the request's `tools` and
//! environment section, and that a denied file's bytes never reach it.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary with their own environment.

use crate::support::chat::{Chat, KEY, write_json};
use crate::{fake_anthropic, harness};
use harness::bin;

use std::path::{Path, PathBuf};

use fake_anthropic::Turn;
use harness::Workspace;
use serde_json::{Value, json};

/// The content of `.env`: it must never reach the API when a rule denies it.
const SECRET: &str = "SECRET=env-bytes-0451";

const FILE_DENIED: &str = "<tool_use_error>File is in a directory that is denied by your permission settings.</tool_use_error>";

/// The spec's fixture: `<R>/home` (the home folder), `<R>/home/work/shop` (the repository, cwd)
/// with `.env`, `config/app.env`, `src/a.ts`, `src/sub/b.ts`, `docs/d.md`, `README.md`, and
/// `<R>/outside/o.txt`, `<home>/x.txt`.
fn fixture() -> Chat {
    let ws = Workspace::new();
    ws.write(".env", &format!("{SECRET}\n"));
    ws.write("config/app.env", "APP=1\n");
    ws.write("src/a.ts", "export const a = 1;\n");
    ws.write("src/sub/b.ts", "export const b = 2;\n");
    ws.write("docs/d.md", "# Docs\n");
    ws.write("README.md", "# Shop\n");
    let f = Chat::on(ws);
    std::fs::create_dir_all(outside(&f)).unwrap();
    std::fs::write(outside(&f).join("o.txt"), "outside\n").unwrap();
    std::fs::write(f.ws.home.join("x.txt"), "home x\n").unwrap();
    f
}

/// `<R>/outside`: a folder outside the repository and the home folder.
fn outside(f: &Chat) -> PathBuf {
    f.ws.dir.path().canonicalize().unwrap().join("outside")
}

/// The repository (the session's working directory).
fn root(f: &Chat) -> &Path {
    &f.ws.root
}

/// The managed settings (`managed-settings.json`).
fn managed(f: &Chat, v: Value) {
    write_json(&f.ws.managed.join("managed-settings.json"), &v);
}

/// `~/.claude.json` trusting `folder` as Claude Code records it.
fn trust(f: &Chat, folder: &Path) {
    write_json(
        &f.ws.home.join(".claude.json"),
        &json!({"projects": {folder.display().to_string(): {"hasTrustDialogAccepted": true}}}),
    );
}

/// One tool call per answer, then a final text answer.
fn script(f: &Chat, calls: &[(&str, Value)]) {
    f.script(calls, "All done.");
}

/// `claude-context chat --no-git <flags> go` in the repository, in a new session with no
/// controlling terminal (`setsid`): a prompt cannot be answered.
fn chat(f: &Chat, flags: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new("setsid");
    c.arg("--wait")
        .arg(bin())
        .args(["chat", "--no-git"])
        .args(flags)
        .arg("go")
        .current_dir(root(f))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &f.ws.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &f.ws.managed)
        .env("ANTHROPIC_BASE_URL", f.api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
        .env("XDG_STATE_HOME", &f.state)
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The `tool_result` of each call, in order: its text and `is_error`.
fn results(f: &Chat) -> Vec<(String, bool)> {
    let requests = f.api.requests();
    requests[1..]
        .iter()
        .map(|r| {
            let body = r.json();
            let last = body["messages"].as_array().unwrap().last().unwrap().clone();
            let block = &last["content"][0];
            assert_eq!(block["type"], "tool_result", "{last:#}");
            (
                result_text(&block["content"]),
                block["is_error"] == json!(true),
            )
        })
        .collect()
}

/// The names of the first request's `tools`.
fn tools(f: &Chat) -> Vec<String> {
    f.api.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The first request's environment section (the system prompt's dynamic block).
fn environment(f: &Chat) -> String {
    let body = f.api.requests()[0].json();
    body["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_string())
        .find(|t| t.contains("# Environment"))
        .unwrap()
}

/// No request carried `.env`'s bytes.
fn secret_never_sent(f: &Chat) {
    for (i, r) in f.api.requests().iter().enumerate() {
        assert!(!r.raw_text().contains(SECRET), "request {i} carries .env");
    }
}

fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

fn read(path: &Path) -> (&'static str, Value) {
    ("Read", json!({"file_path": path}))
}

fn write(path: &Path) -> (&'static str, Value) {
    ("Write", json!({"file_path": path, "content": "new\n"}))
}

fn bash(command: &str) -> (&'static str, Value) {
    ("Bash", json!({"command": command}))
}

fn not_granted_write(path: &Path) -> String {
    format!(
        "Claude requested permissions to write to {}, but you haven't granted it yet.",
        path.display()
    )
}

fn not_granted_read(path: &Path) -> String {
    format!(
        "Claude requested permissions to read from {}, but you haven't granted it yet.",
        path.display()
    )
}

/// Check 1 (r0/norules): with no rule, nobody to answer: the `-p` texts; a Read inside runs.
/// Ours: `echo hi` asks too (no command runs without a rule, a mode or the user).
#[test]
fn with_no_rules_what_changes_anything_gets_the_not_granted_texts() {
    let f = fixture();
    let new = root(&f).join("new.txt");
    let outside = outside(&f).join("o.txt");
    script(
        &f,
        &[
            write(&new),
            read(&outside),
            read(&root(&f).join("README.md")),
            bash("echo hi"),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert_eq!(r[0], (not_granted_write(&new), true));
    assert_eq!(r[1], (not_granted_read(&outside), true));
    assert!(!r[2].1 && r[2].0.contains("# Shop"), "{:?}", r[2]);
    assert_eq!(
        r[3],
        (
            "Claude requested permissions to use Bash, but you haven't granted it yet.".into(),
            true
        )
    );
    assert!(!new.exists());
}

/// Check 3 (r1/user_forms), and the first test: a user deny `Read(./.env)` keeps `.env`'s
/// bytes from the API (Read and `cat .env`); `Read(/src/a.ts)` in user settings denies nothing.
#[test]
fn a_read_deny_keeps_the_file_from_the_model_whatever_the_tool() {
    let f = fixture();
    f.user_settings(json!({"permissions": {"deny": ["Read(./.env)", "Read(/src/a.ts)"]}}));
    script(
        &f,
        &[
            read(&root(&f).join(".env")),
            bash("cat .env"),
            read(&root(&f).join("src/a.ts")),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert_eq!(r[0], (FILE_DENIED.into(), true));
    assert_eq!(
        r[1],
        (
            "Permission to use Bash with command cat .env has been denied.".into(),
            true
        )
    );
    assert!(!r[2].1 && r[2].0.contains("export const a"), "{:?}", r[2]);
    secret_never_sent(&f);
}

/// Checks 4, 5, 6 (r1/project_forms, r1/user_glob, r1/user_abs): `/x` in project settings is
/// below the project; `**/*.env` matches dot names at any depth; `//abs` is absolute, one slash
/// is not.
#[test]
fn path_forms_match_as_measured() {
    let f = fixture();
    let outside = outside(&f).join("o.txt");
    f.project_settings(json!({"permissions": {"deny": ["Read(/src/a.ts)", "Read(**/*.env)"]}}));
    f.user_settings(json!({"permissions": {
        "allow": [format!("Read(//{})", outside.display().to_string().trim_start_matches('/'))],
        "deny": [format!("Read({})", root(&f).join("docs/d.md").display())]
    }}));
    script(
        &f,
        &[
            read(&root(&f).join("src/a.ts")),
            read(&root(&f).join(".env")),
            read(&root(&f).join("config/app.env")),
            read(&outside),
            read(&root(&f).join("docs/d.md")),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert_eq!(r[0], (FILE_DENIED.into(), true), "project /src/a.ts");
    assert_eq!(r[1], (FILE_DENIED.into(), true), "**/*.env on .env");
    assert_eq!(
        r[2],
        (FILE_DENIED.into(), true),
        "**/*.env on config/app.env"
    );
    assert!(
        !r[3].1 && r[3].0.contains("outside"),
        "//abs allows: {:?}",
        r[3]
    );
    assert!(!r[4].1, "one-slash absolute denies nothing: {:?}", r[4]);
    secret_never_sent(&f);
}

/// Check 7 (r2/user_forms): `Edit(lib/**)` allows a Write of `lib/n4.ts` (no prompt: it is
/// written); `Write(src/**)` allows nothing and the reference's warning goes to stderr;
/// `Read(~/x.txt)` allows the home file.
#[test]
fn edit_rules_cover_writes_and_write_rules_cover_nothing() {
    let f = fixture();
    f.user_settings(
        json!({"permissions": {"allow": ["Edit(lib/**)", "Write(src/**)", "Read(~/x.txt)"]}}),
    );
    let n4 = root(&f).join("lib/n4.ts");
    let n = root(&f).join("src/n.ts");
    script(&f, &[write(&n4), write(&n), read(&f.ws.home.join("x.txt"))]);
    let o = chat(&f, &[], &[]);
    let r = results(&f);
    assert!(!r[0].1, "{:?}", r[0]);
    assert_eq!(std::fs::read_to_string(&n4).unwrap(), "new\n");
    assert_eq!(r[1], (not_granted_write(&n), true));
    assert!(!r[2].1 && r[2].0.contains("home x"), "{:?}", r[2]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("Permission allow rule (../../.claude/settings.json): Write(src/**) is not matched by file permission checks — only Edit(path) rules are. Use Edit(src/**) instead (Edit rules cover all file-editing tools)."),
        "{stderr}"
    );
}

/// Check 8 (r3/bash): compound commands part by part.
#[test]
fn bash_rules_judge_compound_commands_part_by_part() {
    let f = fixture();
    f.user_settings(json!({"permissions": {
        "allow": ["Bash(touch:*)", "Bash(mkdir d1)"],
        "deny": ["Bash(rm:*)"]
    }}));
    script(
        &f,
        &[
            bash("touch t2 && touch t3"),
            bash("touch t4 && mkdir d4"),
            bash("ls && rm -f t3"),
            bash("touchx t9"),
            bash("echo $(touch t12)"),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    let repo = root(&f).display().to_string();
    assert!(!r[0].1, "{:?}", r[0]);
    assert!(root(&f).join("t2").exists() && root(&f).join("t3").exists());
    assert_eq!(
        r[1],
        (
            format!(
                "mkdir in '{repo}/d4' needs approval. The path is inside the working directories for this session ('{repo}'), and Claude Code asks before a shell command creates, changes or removes files there."
            ),
            true
        )
    );
    assert!(
        !root(&f).join("t4").exists(),
        "nothing of a refused line runs"
    );
    assert_eq!(
        r[2],
        (
            "Permission to use Bash with command ls && rm -f t3 has been denied.".into(),
            true
        )
    );
    assert!(root(&f).join("t3").exists());
    assert_eq!(r[3], ("This command requires approval".into(), true));
    assert_eq!(
        r[4],
        (
            "A nested command in this command can't be checked before it runs".into(),
            true
        )
    );
    assert!(!root(&f).join("t12").exists());
}

/// Checks 9, 10, 11 (r4/untrusted, r4/trusted, r4/parent_trusted, r5/flags): an untrusted
/// project's allow entries are ignored with the reference's stderr line, its deny and ask
/// apply, a local allow applies; once trusted (Claude Code's record for that exact folder) the
/// project's allow rules apply; deny and ask beat allow from any file.
#[test]
fn trust_decides_whether_a_projects_allow_rules_apply() {
    let project = json!({"permissions": {
        "allow": ["Bash(mv:*)", "Edit(v/**)", "Bash(ln:*)"],
        "deny": ["Bash(touch:*)"],
        "ask": ["Bash(cp:*)"]
    }});
    let calls = |f: &Chat| {
        script(
            f,
            &[
                bash("mv README.md R2.md"),
                bash("touch t1"),
                bash("cp docs/d.md d2.md"),
                bash("chmod 644 docs/d.md"),
                bash("ln -s docs lnk"),
            ],
        );
    };
    // Untrusted, and a trust entry for the parent folder does not count.
    let f = fixture();
    f.project_settings(project.clone());
    f.local_settings(json!({"permissions": {"allow": ["Bash(chmod:*)"]}}));
    f.user_settings(json!({"permissions": {"deny": ["Bash(ln:*)"]}}));
    trust(&f, root(&f).parent().unwrap());
    calls(&f);
    let o = chat(&f, &[], &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let repo = root(&f).display().to_string();
    assert!(
        stderr.contains(&format!(
            "Ignoring 3 permissions.allow entries from .claude/settings.json: this workspace has not been trusted. Run Claude Code interactively here once and accept the trust dialog, or set projects[\"{repo}\"].hasTrustDialogAccepted: true in {}.",
            f.ws.home.join(".claude.json").display()
        )),
        "{stderr}"
    );
    let r = results(&f);
    assert!(r[0].1, "mv is not allowed untrusted: {:?}", r[0]);
    assert_eq!(
        r[1].0,
        "Permission to use Bash with command touch t1 has been denied."
    );
    assert_eq!(
        r[2].0,
        "Claude requested permissions to use Bash, but you haven't granted it yet."
    );
    assert!(!r[3].1, "the local allow applies untrusted: {:?}", r[3]);
    assert!(r[4].0.contains("has been denied"));
    // Trusted: the project's allow applies; the user's deny still beats its allow.
    let f = fixture();
    f.project_settings(project);
    f.user_settings(json!({"permissions": {"deny": ["Bash(ln:*)"]}}));
    trust(&f, root(&f));
    calls(&f);
    let o = chat(&f, &[], &[]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("Ignoring"));
    let r = results(&f);
    assert!(!r[0].1, "{:?}", r[0]);
    assert!(root(&f).join("R2.md").exists());
    assert!(r[1].0.contains("has been denied"));
    assert_eq!(
        r[2].0,
        "Claude requested permissions to use Bash, but you haven't granted it yet."
    );
    assert!(r[4].0.contains("has been denied"));
    assert!(!root(&f).join("lnk").exists());
}

/// Checks 12, 13 (r5/flags, r5/bare_edit_denybash): `--disallowedTools Read` and a deny `Bash`
/// remove those tools from `tools`, and a call gets the reference's text; `--allowedTools`
/// does not beat a settings deny; bare `Edit` does not allow Write.
#[test]
fn a_whole_tool_denied_is_no_tool_at_all() {
    let f = fixture();
    f.user_settings(json!({"permissions": {"deny": ["Bash", "Bash(ln:*)"], "allow": ["Edit"]}}));
    let n = root(&f).join("n.txt");
    script(
        &f,
        &[
            read(&root(&f).join("README.md")),
            bash("ln -s a b"),
            write(&n),
        ],
    );
    chat(
        &f,
        &["--disallowedTools", "Read", "--allowed-tools", "Bash(ln:*)"],
        &[],
    );
    let tools = tools(&f);
    assert!(!tools.contains(&"Read".to_string()), "{tools:?}");
    assert!(!tools.contains(&"Bash".to_string()), "{tools:?}");
    assert!(tools.contains(&"Edit".to_string()) && tools.contains(&"Grep".to_string()));
    let r = results(&f);
    assert_eq!(
        r[0],
        (
            "<tool_use_error>Error: No such tool available: Read. Read is disabled for this session, in subagents as well as here.</tool_use_error>".into(),
            true
        )
    );
    assert_eq!(
        r[1].0,
        "<tool_use_error>Error: No such tool available: Bash. Bash is disabled for this session, in subagents as well as here.</tool_use_error>"
    );
    assert_eq!(
        r[2],
        (not_granted_write(&n), true),
        "bare Edit is not Write"
    );
}

/// Check 14 (r6/read_deny): with deny `Read(./.env)`, Glob and Grep leave `.env` out, and a Grep
/// on it is refused with the reference's text.
#[test]
fn glob_and_grep_never_show_a_denied_file() {
    let f = fixture();
    f.ws.write("config/app.env", "SECRET=app\n");
    f.user_settings(json!({"permissions": {"deny": ["Read(./.env)"]}}));
    script(
        &f,
        &[
            ("Glob", json!({"pattern": "**/*.env"})),
            ("Grep", json!({"pattern": "SECRET"})),
            (
                "Grep",
                json!({"pattern": "SECRET", "path": root(&f).join(".env")}),
            ),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert_eq!(
        r[0].0,
        format!("{}\n", root(&f).join("config/app.env").display())
    );
    let env_line = root(&f).join(".env").display().to_string();
    assert!(
        r[1].0.contains("config/app.env") && !r[1].0.lines().any(|l| l == env_line),
        "{:?}",
        r[1]
    );
    assert_eq!(
        r[2],
        (
            format!(
                "Permission to read {} has been denied.",
                root(&f).join(".env").display()
            ),
            true
        )
    );
    secret_never_sent(&f);
}

/// Checks 16, 17, 19 (md/*, dm/*): modes call by call; plan's text in the environment section
/// before `Today's date is`, and its refusals; a user `defaultMode` applies and the flag
/// overrides it; an unknown mode exits 1 with the reference's message.
#[test]
fn modes_decide_and_plan_mode_refuses_edits() {
    let f = fixture();
    f.user_settings(json!({"permissions": {"defaultMode": "plan"}}));
    let n = root(&f).join("src/n.ts");
    let readme = root(&f).join("README.md");
    script(
        &f,
        &[
            write(&n),
            (
                "Edit",
                json!({"file_path": readme, "old_string": "# Shop", "new_string": "# Shop!"}),
            ),
            bash("mkdir m1"),
            read(&readme),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert_eq!(
        r[0],
        (
            format!("Cannot write to {} while in plan mode.", n.display()),
            true
        )
    );
    assert_eq!(
        r[1],
        (
            format!("Cannot write to {} while in plan mode.", readme.display()),
            true
        )
    );
    assert_eq!(
        r[2].0,
        "Auto mode is unavailable: its safety check does not run for this session, so Bash was not run. Other actions that need the check will be denied too, and retrying won't help. Finish what you can without them, then tell the user what is blocked and that they can switch to another permission mode."
    );
    assert!(!r[3].1);
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# Shop\n");
    let env = environment(&f);
    let at = env.find("Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any edits").expect(&env);
    assert!(env[at..].contains("\n\nToday's date is "), "{env}");
    assert!(env.contains("## Plan Workflow\n\n### Phase 1: Initial Understanding\n"));

    // The flag overrides the setting: acceptEdits writes inside, and the environment section
    // is the default one.
    let g = fixture();
    g.user_settings(json!({"permissions": {"defaultMode": "plan"}}));
    let n = root(&g).join("src/n.ts");
    script(
        &g,
        &[
            write(&n),
            bash("mkdir m1"),
            write(&outside(&g).join("n.txt")),
        ],
    );
    chat(&g, &["--permission-mode", "acceptEdits"], &[]);
    let r = results(&g);
    assert!(!r[0].1 && n.exists(), "{:?}", r[0]);
    assert!(!r[1].1 && root(&g).join("m1").is_dir(), "{:?}", r[1]);
    assert_eq!(r[2], (not_granted_write(&outside(&g).join("n.txt")), true));
    assert!(!environment(&g).contains("Plan mode is active"));

    // dontAsk (check 17).
    let h = fixture();
    let n = root(&h).join("src/n.ts");
    script(&h, &[write(&n)]);
    chat(&h, &["--permission-mode", "dontAsk"], &[]);
    assert!(results(&h)[0].0.starts_with("Permission to use Write has been denied because Claude Code is running in don't ask mode. IMPORTANT: You *may* attempt"));

    // An unknown mode: the reference's message, exit 1, no request.
    let o = std::process::Command::new(bin())
        .args(["chat", "--permission-mode", "bogus", "go"])
        .current_dir(root(&h))
        .env("HOME", &h.ws.home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: option '--permission-mode <mode>' argument 'bogus' is invalid. Allowed choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan.\n"
    );
}

/// Checks 18, 19 (md/bypass_deny, md/bypass_root, dm/*): bypass permissions runs everything but
/// what deny rules refuse; as root it needs `IS_SANDBOX=1`; from project settings it is ignored.
#[test]
fn bypass_permissions_keeps_deny_rules() {
    let f = fixture();
    f.user_settings(json!({"permissions": {"deny": ["Edit(src/**)", "Bash(rm:*)"]}}));
    let n = root(&f).join("src/n.ts");
    let out = outside(&f).join("n.txt");
    script(
        &f,
        &[
            write(&n),
            bash("rm -f README.md"),
            write(&out),
            bash("mkdir m1"),
        ],
    );
    chat(
        &f,
        &["--permission-mode", "bypassPermissions"],
        &[("IS_SANDBOX", "1")],
    );
    let r = results(&f);
    assert_eq!(r[0], (FILE_DENIED.into(), true));
    assert_eq!(
        r[1].0,
        "Permission to use Bash with command rm -f README.md has been denied."
    );
    assert!(!r[2].1 && out.exists(), "{:?}", r[2]);
    assert!(!r[3].1 && root(&f).join("m1").is_dir());
    assert!(environment(&f).contains("While bypass permissions mode is active:\n\n"));
    // A project cannot turn it on.
    let g = fixture();
    g.project_settings(json!({"permissions": {"defaultMode": "bypassPermissions"}}));
    script(&g, &[bash("mkdir m1")]);
    chat(&g, &[], &[("IS_SANDBOX", "1")]);
    assert!(results(&g)[0].1 && !root(&g).join("m1").exists());
}

/// Check 20 (ad/user): an additional directory is listed in the environment section after the
/// git line; a Read there needs no rule; a Write there still asks.
#[test]
fn additional_directories_widen_reads_not_writes() {
    let f = fixture();
    f.user_settings(
        json!({"permissions": {"additionalDirectories": [outside(&f).display().to_string()]}}),
    );
    let n = outside(&f).join("n.txt");
    script(
        &f,
        &[
            read(&outside(&f).join("o.txt")),
            write(&n),
            read(&f.ws.home.join("x.txt")),
        ],
    );
    chat(&f, &[], &[]);
    let env = environment(&f);
    assert!(
        env.contains(&format!(
            " - Is a git repository: false\n - Additional working directories:\n  - {}\n - Platform: ",
            outside(&f).display()
        )),
        "{env}"
    );
    let r = results(&f);
    assert!(!r[0].1 && r[0].0.contains("outside"), "{:?}", r[0]);
    assert_eq!(r[1], (not_granted_write(&n), true));
    assert_eq!(r[2], (not_granted_read(&f.ws.home.join("x.txt")), true));
}

/// Check 25 (x/managed, x/managed_only): managed rules are one more source under deny > ask >
/// allow; with `allowManagedPermissionRulesOnly` only the managed file's rules apply.
#[test]
fn managed_rules_and_managed_only() {
    let f = fixture();
    managed(
        &f,
        json!({"permissions": {"deny": ["Bash(touch:*)"], "allow": ["Bash(ln:*)"]}}),
    );
    f.user_settings(
        json!({"permissions": {"allow": ["Bash(touch:*)", "Bash(cp:*)"], "deny": ["Bash(ln:*)"]}}),
    );
    script(
        &f,
        &[
            bash("touch t1"),
            bash("ln -s docs l1"),
            bash("cp docs/d.md c1"),
        ],
    );
    chat(&f, &[], &[]);
    let r = results(&f);
    assert!(r[0].0.contains("has been denied"), "{:?}", r[0]);
    assert!(r[1].0.contains("has been denied"), "{:?}", r[1]);
    assert!(!r[2].1, "{:?}", r[2]);
    let g = fixture();
    managed(
        &g,
        json!({"allowManagedPermissionRulesOnly": true, "permissions": {"allow": ["Bash(ln:*)"]}}),
    );
    g.user_settings(json!({"permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(ln:*)"]}}));
    script(&g, &[bash("ln -s docs l1"), bash("touch t1")]);
    chat(&g, &[], &[]);
    let r = results(&g);
    assert!(!r[0].1, "the user's deny no longer applies: {:?}", r[0]);
    assert!(
        r[1].1 && !r[1].0.contains("denied"),
        "the user's allow no longer allows: {:?}",
        r[1]
    );
}

/// The second test: an allow rule removes a prompt. Over the language server, with a
/// client that would deny every question: `Bash(touch:*)` runs `touch` without asking.
#[test]
fn an_allow_rule_runs_a_command_without_a_prompt() {
    let f = fixture();
    f.user_settings(json!({"permissions": {"allow": ["Bash(touch:*)"]}}));
    script(&f, &[bash("touch allowed.txt")]);
    let base = f.api.base_url();
    let state = f.state.to_string_lossy().to_string();
    let mut s = f.ws.spawn_with(
        &bin(),
        &[
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", KEY),
            ("XDG_STATE_HOME", state.as_str()),
        ],
    );
    s.answers
        .lock()
        .unwrap()
        .insert("chat/permission".into(), json!({"decision": "deny"}));
    s.initialize_with(root(&f), json!({}), false);
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let events = s.chat_send(&id, "go");
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{events:#?}"
    );
    assert!(root(&f).join("allowed.txt").exists());
    let asked = s
        .server_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "chat/permission")
        .count();
    assert_eq!(asked, 0, "nobody was asked");
    assert!(!results(&f)[0].1);
}

/// The mode over the language server: `chat/new`'s `mode`, `chat/setMode` (with
/// `chat/modeChanged` after its answer), the plan reminder in the environment section of the
/// first request, and, when the user leaves plan mode mid-session, a reminder before the next
/// message's request.
#[test]
fn the_mode_switches_over_the_language_server_and_the_model_is_told() {
    let f = fixture();
    let readme = root(&f).join("README.md");
    f.api.push(Turn::new().tool_use(
        "toolu_0",
        "Edit",
        json!({"file_path": readme, "old_string": "# Shop", "new_string": "# Shop!"}),
    ));
    f.api.push(Turn::new().text("A plan."));
    f.api.push(Turn::new().text("Going ahead."));
    let base = f.api.base_url();
    let state = f.state.to_string_lossy().to_string();
    let mut s = f.ws.spawn_with(
        &bin(),
        &[
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", KEY),
            ("XDG_STATE_HOME", state.as_str()),
        ],
    );
    s.initialize_with(root(&f), json!({}), false);
    let started = s.call("chat/new", json!({"mode": "acceptEdits"}));
    assert_eq!(started["mode"], "acceptEdits", "{started}");
    let ids: Vec<&str> = started["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["default", "acceptEdits", "plan", "dontAsk"],
        "root without IS_SANDBOX"
    );
    let id = started["sessionId"].as_str().unwrap().to_string();
    let bad = s.request("chat/setMode", json!({"sessionId": id, "mode": "bogus"}))["error"].clone();
    assert_eq!(bad["code"], -32602, "{bad}");
    let bypass = s.request(
        "chat/setMode",
        json!({"sessionId": id, "mode": "bypassPermissions"}),
    )["error"]
        .clone();
    assert!(
        bypass["message"].as_str().unwrap().contains("root/sudo"),
        "{bypass}"
    );
    let set = s.call("chat/setMode", json!({"sessionId": id, "mode": "plan"}));
    assert_eq!(set, json!({"mode": "plan", "previous": "acceptEdits"}));
    let changed = s
        .notification("chat/modeChanged", |p| p["sessionId"] == id.as_str())
        .expect("chat/modeChanged");
    assert_eq!(changed["mode"], "plan");
    let events = s.chat_send(&id, "plan it");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# Shop\n");
    assert!(environment(&f).contains("Plan mode is active."));
    assert_eq!(
        results(&f)[0].0,
        format!("Cannot write to {} while in plan mode.", readme.display())
    );
    s.call("chat/setMode", json!({"sessionId": id, "mode": "default"}));
    let events = s.chat_send(&id, "go ahead");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
    let third = f.api.requests()[2].json();
    let messages = third["messages"].as_array().unwrap();
    let reminder = messages[messages.len() - 1]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let reminder = if reminder.contains("Exited Plan Mode") {
        reminder
    } else {
        messages[messages.len() - 2].to_string()
    };
    assert!(
        reminder.contains("<system-reminder>\n## Exited Plan Mode\n\nYou have exited plan mode."),
        "{messages:#?}"
    );
    // The system prompt stays as the first request sent it (the prompt cache holds).
    assert_eq!(third["system"], f.api.requests()[0].json()["system"]);
}
