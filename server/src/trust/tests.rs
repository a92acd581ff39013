//! Unit tests of workspace trust: our record, Claude Code's record (the exact folder only), the
//! order of the sources, the gate and the question's words.

use std::path::Path;

use super::gate::Kind;
use super::*;
use crate::context::settings::{Locations, Settings};
use crate::fs::{MemFs, RealFs};

fn places(dir: &Path) -> Where {
    Where {
        records: Some(dir.join("state/trust")),
        claude_json: Some(dir.join("home/.claude.json")),
        editor: None,
        ceilings: Vec::new(),
    }
}

/// Our record: kept per folder, private, replaced whole; another folder's record (or a forged
/// one naming another folder) is no record; a record too large is ignored.
#[test]
fn our_record_keeps_each_answer_privately() {
    let t = tempfile::tempdir().unwrap();
    let at = places(t.path());
    let (a, b) = (Path::new("/work/a"), Path::new("/work/b"));
    assert_eq!(verdict(&RealFs, &at, a).state, TrustState::NeverAsked);
    let file = answer(&RealFs, &RealFs, &at, a, true, "2026-01-02").unwrap();
    answer(&RealFs, &RealFs, &at, b, false, "2026-01-02").unwrap();
    let v = verdict(&RealFs, &at, a);
    assert_eq!(
        (v.state, v.source, v.record.as_deref()),
        (
            TrustState::Trusted,
            Some(Source::Ours),
            Some(file.as_path())
        )
    );
    assert_eq!(verdict(&RealFs, &at, b).state, TrustState::NotTrusted);
    assert_eq!(
        verdict(&RealFs, &at, Path::new("/work")).state,
        TrustState::NeverAsked
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"folder\": \"/work/a\""), "{text}");
    assert!(text.contains("\"answeredAt\": \"2026-01-02\""), "{text}");
    // Changing the answer replaces it.
    answer(&RealFs, &RealFs, &at, a, false, "2026-01-03").unwrap();
    assert_eq!(verdict(&RealFs, &at, a).state, TrustState::NotTrusted);
    // A record that names another folder (copied over, or forged) counts for nothing.
    std::fs::write(
        record::path(at.records.as_ref().unwrap(), Path::new("/work/c")),
        r#"{"folder": "/work/a", "trusted": true}"#,
    )
    .unwrap();
    assert_eq!(
        verdict(&RealFs, &at, Path::new("/work/c")).state,
        TrustState::NeverAsked
    );
    // Too large: not read.
    let big = record::path(at.records.as_ref().unwrap(), Path::new("/work/d"));
    let mut text = String::from(r#"{"folder": "/work/d", "trusted": true, "x": ""#);
    text.push_str(&"x".repeat(record::MAX_RECORD_BYTES as usize));
    text.push_str("\"}");
    std::fs::write(&big, text).unwrap();
    assert_eq!(
        verdict(&RealFs, &at, Path::new("/work/d")).state,
        TrustState::NeverAsked
    );
    assert!(record::forget(at.records.as_ref().unwrap(), a).unwrap());
    assert_eq!(verdict(&RealFs, &at, a).state, TrustState::NeverAsked);
}

/// Claude Code's record counts for exactly the folder it names (measured: r4/parent_trusted,
/// r4/child_trusted); only `true` trusts; our record is asked first; the editor's own trust
/// first of all.
#[test]
fn claude_codes_record_counts_for_the_exact_folder_only() {
    let fs = MemFs::with_files([(
        "/h/.claude.json",
        r#"{"projects": {"/w/repo": {"hasTrustDialogAccepted": true},
                        "/w/parent": {"hasTrustDialogAccepted": true},
                        "/w/child/src": {"hasTrustDialogAccepted": true},
                        "/w/no": {"hasTrustDialogAccepted": false},
                        "/w/str": {"hasTrustDialogAccepted": "true"}}}"#,
    )]);
    let at = Where {
        claude_json: Some("/h/.claude.json".into()),
        ..Where::default()
    };
    let v = verdict(&fs, &at, Path::new("/w/repo"));
    assert_eq!(
        (v.state, v.source),
        (TrustState::Trusted, Some(Source::ClaudeCode))
    );
    for never in [
        "/w/parent/repo",
        "/w/child",
        "/w/no",
        "/w/str",
        "/w/repo/sub",
        "/w",
    ] {
        assert_eq!(
            verdict(&fs, &at, Path::new(never)).state,
            TrustState::NeverAsked,
            "{never}"
        );
    }
    // A file that is not JSON trusts nothing.
    let bad = MemFs::with_files([("/h/.claude.json", "{\"projects\": {\"/w/repo\": ")]);
    assert_eq!(
        verdict(&bad, &at, Path::new("/w/repo")).state,
        TrustState::NeverAsked
    );
    // The editor's own trust is the answer.
    let v = verdict(
        &fs,
        &at.clone().with_editor(Some(false)),
        Path::new("/w/repo"),
    );
    assert_eq!(
        (v.state, v.source),
        (TrustState::NotTrusted, Some(Source::Editor))
    );
    // Our record first: the user's "no" to us stands over Claude Code's record.
    let t = tempfile::tempdir().unwrap();
    let at = Where {
        records: Some(t.path().join("trust")),
        ..at
    };
    answer(&RealFs, &RealFs, &at, Path::new("/w/repo"), false, "d").unwrap();
    assert_eq!(
        verdict(&fs, &at, Path::new("/w/repo")).state,
        TrustState::Trusted,
        "the MemFs does not hold our record: Claude Code's alone trusts it"
    );
    // Both records on one disk: ours is asked first.
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".claude.json"),
        r#"{"projects": {"/w/repo": {"hasTrustDialogAccepted": true}}}"#,
    )
    .unwrap();
    let at = Where {
        claude_json: Some(home.join(".claude.json")),
        ..at
    };
    assert_eq!(
        verdict(&RealFs, &at, Path::new("/w/repo")).state,
        TrustState::NotTrusted
    );
    assert!(record::forget(at.records.as_ref().unwrap(), Path::new("/w/repo")).unwrap());
    assert_eq!(
        verdict(&RealFs, &at, Path::new("/w/repo")).source,
        Some(Source::ClaudeCode)
    );
}

fn settings_of(files: &[(&str, &str)], trust: Trust) -> (MemFs, Settings) {
    let fs = MemFs::with_files(files.iter().copied());
    let s = crate::context::settings::read(
        &fs,
        &Locations {
            user: None,
            project: "/r/.claude/settings.json".into(),
            local: "/r/.claude/settings.local.json".into(),
            managed: "/m/managed-settings.json".into(),
            trust,
        },
    );
    (fs, s)
}

fn mcp_of(fs: &MemFs, settings: &Settings) -> crate::mcp::Config {
    crate::mcp::config::read(
        fs,
        &crate::mcp::config::Options {
            cwd: "/r".into(),
            settings,
            claude_json: None,
            var: &|_| None,
            plugins: &[],
        },
    )
}

/// The gate lists what waits for trust with why, marks what claude-context does not use, asks
/// only when something would change, and drops what a trusted folder applies; the question
/// names what trusting loads, file by file.
#[test]
fn the_gate_lists_what_waits_and_the_question_names_it() {
    let files = [
        (
            "/r/.claude/settings.json",
            r#"{"enableAllProjectMcpServers": true, "hooks": {"Stop": []}, "env": {"FOO": "1"}}"#,
        ),
        (
            "/r/.mcp.json",
            r#"{"mcpServers": {"demo": {"command": "python3", "args": ["srv.py"]}}}"#,
        ),
    ];
    let (fs, s) = settings_of(&files, Trust::default());
    let mcp = mcp_of(&fs, &s);
    let gate = Gate::of(
        Path::new("/r"),
        &s,
        Some(&mcp),
        None,
        &[],
        Verdict::default(),
    );
    let rows: Vec<(Kind, &str, HeldStatus)> = gate
        .held
        .iter()
        .map(|h| (h.kind, h.key.as_str(), h.status))
        .collect();
    assert_eq!(
        rows,
        [
            (Kind::McpServer, "demo", HeldStatus::WaitingForTrust),
            (
                Kind::McpApproval,
                "enableAllProjectMcpServers",
                HeldStatus::WaitingForTrust
            ),
            (Kind::Env, "env", HeldStatus::NotSupported),
            (Kind::Hooks, "hooks", HeldStatus::WaitingForTrust),
        ]
    );
    assert_eq!(gate.held[0].detail, "python3 srv.py");
    assert!(
        gate.held[0].reason.contains(
            "once trusted, it starts: enableAllProjectMcpServers in /r/.claude/settings.json"
        ),
        "{}",
        gate.held[0].reason
    );
    assert!(gate.would_ask());
    assert!(!gate.allows(Kind::Hooks));
    let q = question::of(&gate);
    assert_eq!(q.summary, "Accessing workspace: /r");
    assert_eq!(
        q.loads.as_deref(),
        Some(
            "Trusting this folder loads .mcp.json (MCP servers: demo) and .claude/settings.json (approves the project's MCP servers; runs hooks)."
        )
    );
    assert!(q.text.starts_with(question::SAFETY_CHECK), "{}", q.text);
    // Said no: listed as not trusted, never asked again.
    let no = Verdict {
        state: TrustState::NotTrusted,
        source: Some(Source::Ours),
        record: None,
    };
    let (fs, s) = settings_of(
        &files,
        Trust {
            state: TrustState::NotTrusted,
            ..Trust::default()
        },
    );
    let gate = Gate::of(Path::new("/r"), &s, Some(&mcp_of(&fs, &s)), None, &[], no);
    assert!(!gate.would_ask());
    assert_eq!(gate.held[0].status, HeldStatus::NotTrusted);
    // Trusted: what claude-context applies is no longer held; what it does not use still says so.
    let yes = Verdict {
        state: TrustState::Trusted,
        source: Some(Source::ClaudeCode),
        record: None,
    };
    let (fs, s) = settings_of(&files, Trust::trusted_folder());
    let gate = Gate::of(Path::new("/r"), &s, Some(&mcp_of(&fs, &s)), None, &[], yes);
    let kinds: Vec<Kind> = gate.held.iter().map(|h| h.kind).collect();
    assert_eq!(kinds, [Kind::Env]);
    assert!(gate.allows(Kind::McpServer) && gate.allows(Kind::Hooks));
    // Nothing that trust would change: no question.
    let (fs, s) = settings_of(&[("/r/CLAUDE.md", "# x\n")], Trust::default());
    let gate = Gate::of(
        Path::new("/r"),
        &s,
        Some(&mcp_of(&fs, &s)),
        None,
        &[],
        Verdict::default(),
    );
    assert!(gate.held.is_empty() && !gate.would_ask());
    assert_eq!(question::of(&gate).loads, None);
}
