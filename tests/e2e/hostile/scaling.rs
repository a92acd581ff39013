//! Linear or close to it in every input dimension, with caps that become findings (issue 8,
//! item 4). Measured before the fix (release build, `scripts/hostile-trees.py`): `check` on
//! 20,000 rules 9.6 s (quadratic: `files.contains` in loops); a cwd 1,000 directories deep tens
//! of seconds (the rules directory's real path resolved at every level); 500,000 missing
//! includes 931 MB; 100,000 conditional rules 1.6 GB; one 1 MB glob 179 MB; one rule with
//! 10,000 `paths` 184 MB and a 10.6 s `check`; in the server, 100,000 includes blocked every
//! request for 45 s. The bounds below are far below those and generous for a loaded machine.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use crate::hostile::tree::{Preview, Tree, time_budget};

/// `n` unconditional rules in `.claude/rules`.
fn rules_tree(n: usize) -> Tree {
    let t = Tree::new();
    t.write("CLAUDE.md", "# Project\n");
    for i in 0..n {
        t.write(
            format!(".claude/rules/r{i:06}.md"),
            format!("Rule {i}: keep functions short.\n"),
        );
    }
    t
}

/// A CLAUDE.md with `n` distinct missing includes.
fn includes_text(n: usize) -> String {
    let mut s = String::from("# Project\n");
    for i in 0..n {
        let _ = writeln!(s, "@missing/m{i}.md");
    }
    s
}

/// Whether some finding on `path` says how many there were (`500,000` or `500000`).
fn has_count_finding(p: &Preview, path: &std::path::Path, n: usize) -> bool {
    let plain = n.to_string();
    let grouped = claude_context::features::format::thousands(n as u64);
    p.findings().iter().any(|f| {
        f["path"] == path.to_string_lossy().as_ref()
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains(&plain) || m.contains(&grouped))
    })
}

#[test]
fn check_on_20000_rules() {
    let t = rules_tree(20_000);
    let c = t.check();
    c.assert_faster_than(time_budget(Duration::from_secs(2)), "check on 20,000 rules");
    // The walk reads 10,000 of them, and says so on the folder; `check` still lints them all.
    crate::hostile::tree::assert_check_line(
        &c,
        ".claude/rules:",
        "10,000 rule files in this folder are not read, from r0",
    );
    assert!(c.stdout.contains("No problems") || c.stdout.contains("1 file with findings"));
    let p = t.preview(&[]);
    let rules = p.files().iter().filter(|f| f["status"] == "loaded").count();
    assert_eq!(rules, 10_001, "CLAUDE.md and the first 10,000 rules");
    p.assert_finding(&t.path(".claude/rules"), "cap-rules", "10,000 were read");
}

/// 20 files of 1,000 includes each, all included from CLAUDE.md: the session follows 10,000
/// include sites, and each file that lost some says so once.
#[test]
fn includes_past_the_session_cap() {
    let t = Tree::new();
    let mut top = String::from("TOP\n");
    for i in 0..20 {
        let _ = writeln!(top, "@inc/i{i:02}.md");
        t.write(format!("inc/i{i:02}.md"), includes_text(1_000));
    }
    let claude = t.write("CLAUDE.md", top);
    let p = t.preview(&[]);
    p.run.assert_faster_than(
        time_budget(Duration::from_secs(2)),
        "preview, 20,000 includes",
    );
    p.assert_loaded(&claude);
    let cut = p.assert_finding(
        &t.path("inc/i09.md"),
        "cap-session-includes",
        "already pulled in 10,000 includes",
    );
    assert_eq!(cut["line"], 991, "{cut}");
    p.assert_finding(
        &claude,
        "cap-session-includes",
        "the 9 after it in this file",
    );
    assert!(p.records(&t.path("inc/i10.md")).is_empty());
}

/// Sparse 9 MB rules: 32 MB of text is read, then a finding, and nothing more is read.
#[test]
fn text_past_the_byte_cap() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP\n");
    for name in ["a", "b", "c", "d", "e", "f"] {
        let f = std::fs::File::create(t.path(format!(".claude/rules/{name}.md")))
            .or_else(|_| {
                std::fs::create_dir_all(t.path(".claude/rules"))?;
                std::fs::File::create(t.path(format!(".claude/rules/{name}.md")))
            })
            .expect("create");
        f.set_len(9 << 20).expect("a sparse 9 MB file");
    }
    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    // Rules load in listing order: whichever three come first are read, the others are not.
    let rules: Vec<&serde_json::Value> = p
        .files()
        .iter()
        .filter(|f| {
            f["path"]
                .as_str()
                .is_some_and(|p| p.contains("/.claude/rules/"))
        })
        .collect();
    let loaded = rules.iter().filter(|f| f["status"] == "loaded").count();
    let skipped: Vec<&str> = rules
        .iter()
        .filter(|f| {
            f["status"] == "skipped" && f["reason"].as_str().is_some_and(|r| r.contains("32 MB"))
        })
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!((loaded, skipped.len()), (3, 3), "{rules:#?}");
    p.assert_finding(
        std::path::Path::new(skipped[0]),
        "cap-bytes",
        "nor any instruction file after it",
    );
    let caps = p
        .findings()
        .iter()
        .filter(|f| f["code"] == "cap-bytes")
        .count();
    assert_eq!(caps, 1, "one finding for the cap");
}

#[test]
fn a_cwd_1000_directories_deep() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP-OK\n");
    t.write(".claude/rules/style.md", "RULE-OK\n");
    let deep = t.root.join("d/".repeat(1000));
    std::fs::create_dir_all(&deep).expect("mkdir 1,000 levels");
    let p = t.preview_in(&deep, &[]);
    p.run.assert_faster_than(
        time_budget(Duration::from_secs(1)),
        "preview 1,000 directories deep",
    );
    p.assert_loaded(&t.path("CLAUDE.md"));
    p.assert_loaded(&t.path(".claude/rules/style.md"));
}

#[test]
fn half_a_million_missing_includes() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", includes_text(500_000));
    let p = t.preview(&[]);
    p.run.assert_peak_below_mb(300, "preview, 500,000 includes");
    p.run.assert_faster_than(
        time_budget(Duration::from_secs(5)),
        "preview, 500,000 includes",
    );
    p.assert_loaded(&claude);
    assert!(
        has_count_finding(&p, &claude, 500_000),
        "a finding on CLAUDE.md says how many includes there were and what was cut: {:#}",
        p.json["findings"]
    );
    let c = t.check();
    c.assert_peak_below_mb(300, "check, 500,000 includes");
    assert!(
        c.stdout.len() < 1 << 20,
        "check printed {} bytes: one finding per problem, long lists shortened",
        c.stdout.len()
    );
}

#[test]
/// 100,000 distinct conditional rules: 10,000 are read (a cap-rules finding says so), and their
/// globs are compiled without a regular expression each (globset's set took 17 KB per rule, and
/// a set this large failed to build at all, so no rule ever attached).
fn a_hundred_thousand_conditional_rules() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP-OK\n");
    for i in 0..100_000 {
        t.write(
            format!(".claude/rules/c{i:06}.md"),
            format!("---\npaths: src/d{i}/**/*.ts\n---\nConditional rule {i}.\n"),
        );
    }
    t.write("src/d0/a.ts", "export {};\n");
    let p = t.preview(&["--file", "src/d0/a.ts"]);
    p.run
        .assert_peak_below_mb(300, "preview, 100,000 conditional rules");
    p.run.assert_faster_than(
        time_budget(Duration::from_secs(5)),
        "preview, 100,000 conditional rules",
    );
    p.assert_loaded(&t.path("CLAUDE.md"));
    p.assert_finding(&t.path(".claude/rules"), "cap-rules", "90,000 rule files");
    // Whichever rule for src/d0 the listing reached, if any, attached; nothing else did.
    let attached: Vec<&serde_json::Value> = p
        .files()
        .iter()
        .filter(|f| f["status"] == "attached")
        .collect();
    assert!(attached.len() <= 1, "{attached:#?}");
    if let Some(a) = attached.first() {
        assert_eq!(a["matchedGlob"], "src/d0/**/*.ts");
    }
}

#[test]
fn a_one_megabyte_glob() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP-OK\n");
    let chunk = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0*";
    let glob = chunk.repeat((1 << 20) / chunk.len());
    let rule = t.write(
        ".claude/rules/huge-glob.md",
        format!("---\npaths: \"src/{glob}.ts\"\n---\nOne huge glob.\n"),
    );
    t.write("src/a.ts", "export {};\n");
    let p = t.preview(&["--file", "src/a.ts"]);
    p.run.assert_peak_below_mb(64, "preview, one 1 MB glob");
    let f = p.assert_finding(&rule, "cap-glob-length", "never matches here");
    let message = f["message"].as_str().unwrap_or_default();
    assert!(message.len() < 1_000, "a short message: {message}");
    // The rule stays conditional (as in Claude Code), it just never attaches here.
    assert_eq!(p.records(&rule)[0]["status"], "inactive");
    let c = t.check();
    let longest = c.stdout.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 1_000, "check printed a {longest}-byte line");
}

fn many_paths_tree(n: usize) -> (Tree, std::path::PathBuf) {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP-OK\n");
    let mut globs = String::new();
    for i in 0..n {
        let _ = writeln!(globs, "  - src/dir{i}/**/*.ts");
    }
    let rule = t.write(
        ".claude/rules/many-paths.md",
        format!("---\npaths:\n{globs}---\nA rule with many globs.\n"),
    );
    t.write("src/dir0/a.ts", "export {};\n");
    (t, rule)
}

#[test]
fn a_rule_with_10000_paths() {
    let (t, rule) = many_paths_tree(10_000);
    let p = t.preview(&["--file", "src/dir0/a.ts"]);
    p.run
        .assert_peak_below_mb(64, "preview, a rule with 10,000 globs");
    assert!(
        has_count_finding(&p, &rule, 10_000),
        "a finding on the rule says how many globs it has and what was cut: {:#}",
        p.json["findings"]
    );
    let c = t.check();
    c.assert_faster_than(
        time_budget(Duration::from_secs(2)),
        "check, a rule with 10,000 globs",
    );
}

/// In the server, a CLAUDE.md with 100,000 includes blocked every request for 45 s.
#[test]
fn the_server_answers_with_100000_includes_open() {
    let ws = crate::hostile::lsp::Workspace::new();
    let text = includes_text(100_000);
    let claude = ws.write("CLAUDE.md", &text);
    let mut s = ws.spawn(&crate::hostile::tree::bin());
    s.initialize(&ws.root, json!(null));
    s.open(&claude, &text);
    let budget = time_budget(Duration::from_secs(2));
    let doc = json!({"uri": crate::hostile::lsp::uri(&claude)});
    for (method, params) in [
        (
            "textDocument/hover",
            json!({"textDocument": doc, "position": {"line": 1, "character": 2}}),
        ),
        ("context/preview", json!({"textDocument": doc})),
        ("textDocument/documentLink", json!({"textDocument": doc})),
    ] {
        let start = std::time::Instant::now();
        let id = s.send_request(method, params);
        let answer = s.wait_for(budget, |m| {
            m.get("id") == Some(&id) && m.get("method").is_none()
        });
        assert!(
            answer.is_some(),
            "{method} not answered within {budget:?} (waited {:?})",
            start.elapsed()
        );
    }
    let (_, peak) = s.memory_kib();
    assert!(peak < 300 * 1024, "server peak RSS {} MB", peak / 1024);
    s.shutdown();
}

/// A settings file of 300,000 exclude patterns (8 MB, under the 10 MB read cap) (with non-strings among them) beside 2,000
/// rules: 256 patterns are applied, the rest is one finding, and preview and check stay quick
/// (every file is matched against at most 256 compiled patterns; each pattern's place in the
/// file is found without scanning the whole file again).
#[test]
fn three_hundred_thousand_exclude_patterns() {
    let t = rules_tree(2_000);
    let mut patterns: Vec<serde_json::Value> = (0..300_000)
        .map(|i| json!(format!("**/nowhere{i}/**/*.md")))
        .collect();
    patterns[10] = json!(42);
    patterns[20] = json!({"deep": [1, 2, 3]});
    let settings = t.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, json!({"claudeMdExcludes": patterns}).to_string()).unwrap();
    let p = t.preview(&[]);
    p.run.assert_faster_than(
        time_budget(Duration::from_secs(3)),
        "preview with 300,000 exclude patterns",
    );
    p.assert_finding(&settings, "cap-excludes", "256 patterns were read");
    p.assert_finding(
        &settings,
        "exclude-not-string",
        "and 1 more values that are not strings",
    );
    assert_eq!(
        p.files().iter().filter(|f| f["status"] == "loaded").count(),
        2_001
    );
    let c = t.check();
    c.assert_faster_than(
        time_budget(Duration::from_secs(4)),
        "check with 300,000 exclude patterns",
    );
}
