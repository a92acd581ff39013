//! The policy's decisions, table-tested against the spec's sections 5 (precedence), 6 (texts)
//! and 7 (modes), on made-up paths (no disk).

use std::path::{Path, PathBuf};

use super::rule::Bases;
use super::*;

const REPO: &str = "/R/repo";

struct NoDisk;

impl Lookup for NoDisk {
    fn real(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
    fn expand(&self, _: &Path) -> Vec<PathBuf> {
        Vec::new()
    }
    fn runs_code(&self, real: &Path) -> bool {
        real.components().any(|c| c.as_os_str() == ".git")
    }
}

fn rule(kind: Kind, text: &str, origin: Origin) -> Rule {
    let bases = Bases {
        cwd: REPO.into(),
        home: Some("/R/home".into()),
        root: REPO.into(),
    };
    let source = Source {
        origin,
        file: None,
        line: None,
    };
    Rule::parse(text, kind, source, &bases, "x", &mut Vec::new())
}

fn policy(rules: &[(Kind, &str, Origin)], mode: Mode) -> Policy {
    Policy::with_rules(
        rules.iter().map(|(k, t, o)| rule(*k, t, *o)).collect(),
        mode,
    )
}

fn file(p: &Policy, tool: &str, path: &str) -> Action {
    let access = match tool {
        "Write" => Access::Write,
        "Edit" => Access::Edit,
        _ => Access::Read,
    };
    let path = Path::new(path);
    p.file(&FileCall {
        tool,
        access,
        written: path,
        real: path,
        inside: path.starts_with(REPO),
        runs_code: path
            .components()
            .any(|c| c.as_os_str() == ".git")
            .then_some("git"),
        dir: false,
    })
}

fn bash(p: &Policy, cmd: &str) -> Action {
    let working = [PathBuf::from(REPO)];
    p.bash(
        cmd,
        &Dirs {
            cwd: Path::new(REPO),
            working: &working,
            home: Some(Path::new("/R/home")),
        },
        &NoDisk,
    )
}

/// ✓ ran, ✗ refused or asked (as `-p` sees it: an ask is a refusal there).
fn ran(a: &Action) -> bool {
    *a == Action::Run
}

fn text(a: &Action) -> String {
    match a {
        Action::Run => "ran".into(),
        Action::Ask(a) => a.unanswered.clone(),
        Action::Refuse(r) => r.text.clone(),
    }
}

/// Section 7's table, call by call (`✓` ran). Ours differs where the table says (docs/decisions.md):
/// `echo hi` asks in default, plan and don't-ask modes; plan mode asks for a Read outside.
#[test]
fn modes_decide_as_the_table_says() {
    let calls: [(&str, &str); 8] = [
        ("Write", "/R/repo/src/n.ts"),
        ("Read", "/R/repo/README.md"),
        ("Edit", "/R/repo/README.md"),
        ("Bash", "mkdir m1"),
        ("Bash", "echo hi"),
        ("Read", "/R/outside/o.txt"),
        ("Write", "/R/outside/n.txt"),
        ("Bash", "rm -f README.md"),
    ];
    let table: [(Mode, [bool; 8]); 5] = [
        (
            Mode::Default,
            [false, true, false, false, false, false, false, false],
        ),
        (
            Mode::AcceptEdits,
            [true, true, true, true, true, false, false, true],
        ),
        (
            Mode::Plan,
            [false, true, false, false, false, false, false, false],
        ),
        (
            Mode::DontAsk,
            [false, true, false, false, false, false, false, false],
        ),
        (Mode::BypassPermissions, [true; 8]),
    ];
    for (mode, want) in table {
        let p = policy(&[], mode);
        for ((tool, arg), want) in calls.iter().zip(want) {
            let a = if *tool == "Bash" {
                bash(&p, arg)
            } else {
                file(&p, tool, arg)
            };
            assert_eq!(ran(&a), want, "{mode:?} {tool} {arg}: {a:?}");
        }
    }
    // The texts of each refusal.
    let p = policy(&[], Mode::Default);
    assert_eq!(
        text(&file(&p, "Write", "/R/repo/src/n.ts")),
        "Claude requested permissions to write to /R/repo/src/n.ts, but you haven't granted it yet."
    );
    assert_eq!(
        text(&file(&p, "Read", "/R/outside/o.txt")),
        "Claude requested permissions to read from /R/outside/o.txt, but you haven't granted it yet."
    );
    assert!(text(&bash(&p, "mkdir m1")).starts_with("mkdir in '/R/repo/m1' needs approval."));
    let p = policy(&[], Mode::Plan);
    assert_eq!(
        text(&file(&p, "Write", "/R/repo/src/n.ts")),
        "Cannot write to /R/repo/src/n.ts while in plan mode."
    );
    assert_eq!(
        text(&file(&p, "Edit", "/R/repo/README.md")),
        "Cannot write to /R/repo/README.md while in plan mode."
    );
    assert!(text(&bash(&p, "rm -f README.md")).starts_with("Auto mode is unavailable: its safety check does not run for this session, so Bash was not run."));
    let p = policy(&[], Mode::DontAsk);
    assert!(text(&file(&p, "Write", "/R/repo/src/n.ts")).starts_with("Permission to use Write has been denied because Claude Code is running in don't ask mode. IMPORTANT: "));
    assert!(
        text(&bash(&p, "mkdir m1")).starts_with("Permission to use Bash has been denied because")
    );
    // md/dontAsk_allow: allow rules still allow.
    let p = policy(
        &[
            (Kind::Allow, "Bash(mkdir:*)", Origin::User),
            (Kind::Allow, "Edit(src/**)", Origin::User),
        ],
        Mode::DontAsk,
    );
    assert!(ran(&bash(&p, "mkdir m1")));
    assert!(ran(&file(&p, "Write", "/R/repo/src/n.ts")));
}

/// Section 5: deny > ask > allow whatever the file, and deny rules hold in bypass mode.
#[test]
fn deny_beats_ask_beats_allow_across_sources() {
    use Origin::*;
    type Case<'a> = (&'a [(Kind, &'a str, Origin)], &'a str, &'a str);
    let cases: &[Case<'_>] = &[
        (
            &[
                (Kind::Allow, "Bash(touch:*)", User),
                (Kind::Deny, "Bash(touch:*)", Project),
            ],
            "touch t",
            "deny",
        ),
        (
            &[
                (Kind::Deny, "Bash(ln:*)", User),
                (Kind::Allow, "Bash(ln:*)", Project),
            ],
            "ln -s a b",
            "deny",
        ),
        (
            &[
                (Kind::Allow, "Bash(ln:*)", CommandLine),
                (Kind::Deny, "Bash(ln:*)", User),
            ],
            "ln -s a b",
            "deny",
        ),
        (
            &[
                (Kind::Deny, "Bash(touch:*)", CommandLine),
                (Kind::Allow, "Bash(touch:*)", User),
            ],
            "touch t",
            "deny",
        ),
        (
            &[
                (Kind::Deny, "Bash(touch:*)", Managed),
                (Kind::Allow, "Bash(touch:*)", User),
            ],
            "touch t",
            "deny",
        ),
        (
            &[
                (Kind::Deny, "Bash(ln:*)", User),
                (Kind::Allow, "Bash(ln:*)", Managed),
            ],
            "ln -s a b",
            "deny",
        ),
        (
            &[
                (Kind::Ask, "Bash(mkdir:*)", User),
                (Kind::Allow, "Bash(mkdir:*)", User),
            ],
            "mkdir d",
            "ask",
        ),
        (
            &[
                (Kind::Allow, "Bash(cp:*)", User),
                (Kind::Ask, "Bash(cp:*)", Project),
            ],
            "cp a b",
            "ask",
        ),
        (
            &[
                (Kind::Ask, "Bash(chmod:*)", User),
                (Kind::Allow, "Bash(chmod:*)", Local),
            ],
            "chmod +x a",
            "ask",
        ),
        (
            &[
                (Kind::Ask, "Bash(mkdir:*)", User),
                (Kind::Allow, "Bash(mkdir:*)", CommandLine),
            ],
            "mkdir d",
            "ask",
        ),
        (
            &[
                (Kind::Ask, "Bash(chmod:*)", Managed),
                (Kind::Allow, "Bash(chmod:*)", User),
            ],
            "chmod +x a",
            "ask",
        ),
        (&[(Kind::Allow, "Bash(cp:*)", User)], "cp a b", "run"),
    ];
    for (rules, cmd, want) in cases {
        let a = bash(&policy(rules, Mode::Default), cmd);
        let got = match &a {
            Action::Run => "run",
            Action::Ask(_) => "ask",
            Action::Refuse(_) => "deny",
        };
        assert_eq!(got, *want, "{rules:?} {cmd}: {a:?}");
    }
    // An ask rule gives the measured `-p` text, and no session answer covers it.
    let p = policy(
        &[
            (Kind::Ask, "Bash(mkdir:*)", User),
            (Kind::Allow, "Bash(mkdir:*)", User),
        ],
        Mode::Default,
    );
    match bash(&p, "mkdir d") {
        Action::Ask(a) => {
            assert_eq!(
                a.unanswered,
                "Claude requested permissions to use Bash, but you haven't granted it yet."
            );
            assert!(!a.session);
        }
        a => panic!("{a:?}"),
    }
    // r4/ask_modes: an ask rule beats acceptEdits and the read-only default.
    let p = policy(
        &[
            (Kind::Ask, "Edit(src/**)", User),
            (Kind::Allow, "Edit(src/**)", User),
            (Kind::Ask, "Read(docs/**)", User),
        ],
        Mode::AcceptEdits,
    );
    assert!(matches!(
        file(&p, "Write", "/R/repo/src/n.ts"),
        Action::Ask(_)
    ));
    assert_eq!(
        text(&file(&p, "Read", "/R/repo/docs/d.md")),
        "Claude requested permissions to read from /R/repo/docs/d.md, but you haven't granted it yet."
    );
    // md/bypass_deny.
    let p = policy(
        &[
            (Kind::Deny, "Edit(src/**)", User),
            (Kind::Deny, "Bash(rm:*)", User),
            (Kind::Deny, "Read(//R/outside/**)", User),
        ],
        Mode::BypassPermissions,
    );
    assert_eq!(
        text(&file(&p, "Write", "/R/repo/src/n.ts")),
        texts::FILE_DENIED
    );
    assert_eq!(
        text(&bash(&p, "rm -f x")),
        "Permission to use Bash with command rm -f x has been denied."
    );
    assert_eq!(
        text(&file(&p, "Read", "/R/outside/o.txt")),
        texts::FILE_DENIED
    );
    assert_eq!(
        text(&file(&p, "Write", "/R/outside/n.txt")),
        texts::WRITE_READ_DENIED
    );
    assert!(ran(&file(&p, "Write", "/R/elsewhere/n.txt")));
}

/// Section 6's rule texts: a Read deny on a Write or Edit, Grep's path, a whole tool, MCP.
#[test]
fn denials_say_what_the_reference_says() {
    let p = policy(
        &[
            (Kind::Deny, "Read(./.env)", Origin::User),
            (Kind::Deny, "Read(*)", Origin::User),
            (Kind::Deny, "mcp__other__ping", Origin::User),
            (Kind::Allow, "mcp__mini", Origin::User),
            (Kind::Allow, "mcp__third__*", Origin::User),
        ],
        Mode::Default,
    );
    assert_eq!(text(&file(&p, "Read", "/R/repo/.env")), texts::FILE_DENIED);
    assert_eq!(
        text(&file(&p, "Write", "/R/repo/.env")),
        "<tool_use_error>File is covered by a Read deny rule in your permission settings and cannot be written.</tool_use_error>"
    );
    assert_eq!(
        text(&file(&p, "Edit", "/R/repo/.env")),
        "<tool_use_error>File is covered by a Read deny rule in your permission settings and cannot be edited.</tool_use_error>"
    );
    assert_eq!(
        text(&file(&p, "Grep", "/R/repo/.env")),
        "Permission to read /R/repo/.env has been denied."
    );
    assert!(p.hidden(Path::new("/R/repo/.env")) && !p.hidden(Path::new("/R/repo/config/app.env")));
    assert!(p.removed("Read").is_some() && p.removed("Edit").is_none());
    assert_eq!(
        Policy::removed_text("Read"),
        "<tool_use_error>Error: No such tool available: Read. Read is disabled for this session, in subagents as well as here.</tool_use_error>"
    );
    assert_eq!(
        text(&p.mcp("mcp__other__ping")),
        "<tool_use_error>Error: No such tool available: mcp__other__ping</tool_use_error>"
    );
    assert!(ran(&p.mcp("mcp__mini__ping")));
    assert!(ran(&p.mcp("mcp__third__echo")));
    assert_eq!(
        text(&p.mcp("mcp__fourth__ping")),
        "Claude requested permissions to use mcp__fourth__ping, but you haven't granted it yet."
    );
    // r2/user_forms: an Edit path rule covers Write; Write(path) covers nothing.
    let p = policy(
        &[
            (Kind::Allow, "Edit(lib/**)", Origin::User),
            (Kind::Allow, "Write(src/**)", Origin::User),
            (Kind::Allow, "Read(~/x.txt)", Origin::User),
        ],
        Mode::Default,
    );
    assert!(ran(&file(&p, "Write", "/R/repo/lib/n4.ts")));
    assert!(!ran(&file(&p, "Write", "/R/repo/src/n.ts")));
    assert!(ran(&file(&p, "Read", "/R/home/x.txt")));
    // r5: bare Edit does not allow Write, bare Write not Edit; Edit(*) only inside.
    let p = policy(&[(Kind::Allow, "Edit", Origin::User)], Mode::Default);
    assert!(ran(&file(&p, "Edit", "/R/outside/x")) && !ran(&file(&p, "Write", "/R/repo/x")));
    let p = policy(&[(Kind::Allow, "Write", Origin::User)], Mode::Default);
    assert!(ran(&file(&p, "Write", "/R/repo/x")) && !ran(&file(&p, "Edit", "/R/repo/x")));
    let p = policy(&[(Kind::Allow, "Edit(*)", Origin::User)], Mode::Default);
    assert!(ran(&file(&p, "Write", "/R/repo/x")) && !ran(&file(&p, "Write", "/R/outside/x")));
    // A file that makes programs run code asks, even in bypass mode and under an allow rule.
    let p = policy(
        &[(Kind::Allow, "Edit", Origin::User)],
        Mode::BypassPermissions,
    );
    match file(&p, "Edit", "/R/repo/.git/config") {
        Action::Ask(a) => assert!(a.runs_code.is_some() && !a.session),
        a => panic!("{a:?}"),
    }
}

#[test]
fn modes_switch_within_what_is_available() {
    let p = Policy::new(settings::Loaded::default(), None, true, Bypass::Root);
    assert_eq!(p.mode(), Mode::Default);
    assert!(!p.available().contains(&Mode::BypassPermissions));
    assert!(p.set_mode(Mode::BypassPermissions).is_err());
    assert_eq!(p.set_mode(Mode::Plan), Ok(Mode::Default));
    assert_eq!(
        (p.mode(), p.mode_source()),
        (Mode::Plan, ModeSource::Session)
    );
    assert_eq!(mode_change_note(Mode::Default, Mode::AcceptEdits), None);
    assert!(
        mode_change_note(Mode::Default, Mode::Plan)
            .unwrap()
            .starts_with("Plan mode is active.")
    );
    assert!(
        mode_change_note(Mode::Plan, Mode::Default)
            .unwrap()
            .starts_with("## Exited Plan Mode")
    );
    let e = p.environment(&[PathBuf::from("/R/outside")]);
    assert_eq!(e.additional_dirs, ["/R/outside"]);
    assert!(e.mode_text.unwrap().starts_with("Plan mode is active."));
}

/// One notion of trust (workspace trust, as the walk read it: the editor's, our record, Claude
/// Code's for the exact folder) decides what the repository's settings files grant
/// (permissions-trust.md sections 1 and 7). Before trust: the project file's `allow` and
/// `additionalDirectories` are ignored with the reference's warning, its `deny` and `ask` apply,
/// its `acceptEdits` and `bypassPermissions` do not; the user's own (untracked)
/// `settings.local.json` applies whole, as measured (r5/flags, dm/local_accept), but a
/// `settings.local.json` git tracks is the repository's and grants nothing either. Trusted: all
/// of it applies (bypass still only from the user's settings).
#[test]
fn the_repositorys_settings_grant_nothing_before_the_folder_is_trusted() {
    use crate::context::settings::{Trust, TrustState};
    let project = "{\"permissions\": {\"allow\": [\"Bash(mv:*)\"], \"deny\": [\"Bash(touch:*)\"], \"ask\": [\"Bash(cp:*)\"], \"additionalDirectories\": [\"../outside\"], \"defaultMode\": \"acceptEdits\"}}";
    let local =
        "{\"permissions\": {\"allow\": [\"Bash(chmod:*)\"], \"defaultMode\": \"acceptEdits\"}}";
    let fs = crate::fs::MemFs::with_files([
        ("/R/repo/.claude/settings.json", project),
        ("/R/repo/.claude/settings.local.json", local),
    ]);
    let policy = |state: TrustState, local_tracked: bool| {
        let opts = crate::context::Options {
            cwd: "/R/repo".into(),
            home: Some("/R/home".into()),
            managed_dir: "/etc/claude-code".into(),
            trust: Trust {
                state,
                preview: false,
                local_tracked,
            },
            ..Default::default()
        };
        let ctx = crate::context::build(&fs, &opts);
        for_context(&fs, &ctx, &Options::default(), false)
    };
    let allows = |p: &Policy| -> Vec<String> {
        p.rules()
            .iter()
            .filter(|r| r.kind == Kind::Allow)
            .map(|r| r.text.clone())
            .collect()
    };
    for state in [TrustState::NeverAsked, TrustState::NotTrusted] {
        // The user's own local file: it applies, allow and mode included.
        let p = policy(state, false);
        assert!(!p.trusted());
        assert_eq!(allows(&p), ["Bash(chmod:*)"], "{state:?}");
        assert!(p.rules().iter().any(|r| r.text == "Bash(touch:*)"));
        assert!(p.rules().iter().any(|r| r.text == "Bash(cp:*)"));
        assert!(p.additional_dirs().is_empty());
        assert_eq!(p.mode(), Mode::AcceptEdits, "the user's local file's mode");
        assert!(
            p.notices()
                .iter()
                .any(|n| n.message.starts_with("Ignoring 1 permissions.allow entry from .claude/settings.json: this workspace has not been trusted.")),
            "{:?}",
            p.notices()
        );
        // A local file git tracks (a clone brought it): it grants nothing either.
        let p = policy(state, true);
        assert!(allows(&p).is_empty(), "{:?}", allows(&p));
        assert_eq!(p.mode(), Mode::Default);
        assert!(
            p.mode_notes()
                .iter()
                .any(|n| n.contains("until this folder is trusted")),
            "{:?}",
            p.mode_notes()
        );
        assert!(
            p.notices().iter().any(|n| n.message.starts_with(
                "Ignoring 1 permissions.allow entry from .claude/settings.local.json"
            )),
            "{:?}",
            p.notices()
        );
    }
    // Trusted: everything applies.
    let p = policy(TrustState::Trusted, true);
    assert!(p.trusted());
    assert_eq!(allows(&p), ["Bash(mv:*)", "Bash(chmod:*)"]);
    assert_eq!(p.additional_dirs().len(), 1);
    assert_eq!(p.mode(), Mode::AcceptEdits);
    // A repository's bypassPermissions never applies, trusted or not.
    let fs = crate::fs::MemFs::with_files([(
        "/R/repo/.claude/settings.json",
        "{\"permissions\": {\"defaultMode\": \"bypassPermissions\"}}",
    )]);
    let opts = crate::context::Options {
        cwd: "/R/repo".into(),
        home: Some("/R/home".into()),
        managed_dir: "/etc/claude-code".into(),
        trust: Trust::trusted_folder(),
        ..Default::default()
    };
    let ctx = crate::context::build(&fs, &opts);
    assert_eq!(
        for_context(&fs, &ctx, &Options::default(), false).mode(),
        Mode::Default
    );
}
