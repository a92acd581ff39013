//! Hostile trees (quality R7): symlink loops, a 1 GB file, FIFOs and `/dev/zero` as include
//! targets, unreadable directories, invalid UTF-8, binary includes, include cycles and deep
//! chains, broken frontmatter, a 5 MB line. Each test builds a real tree in a temp dir and runs
//! the real binary (`preview --json` and `check`) under a watchdog, asserting: no hang (killed
//! and failed after [`TIMEOUT`](crate::hostile::tree::TIMEOUT)), no crash (exit 0 for preview, 0 or 1 for check), nothing lost
//! (the other instruction files still load), and a finding or record with a clear reason for the
//! hostile thing. The last tests are regressions for inputs found by fuzzing (`fuzz/`).
//!
//! Timings: these tests run in the debug profile on shared CI machines, so every time limit here
//! is generous (10x or more what a debug build needs) and only tells "linear and bounded" from
//! "reads a gigabyte" or "quadratic/exponential", which take minutes or never end.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::hostile::tree::{Tree, assert_check_line, chmod};

// (1) Symlink loops.

#[test]
fn symlink_loops_in_rules_and_includes() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP-OK\n@inc/self.md\n@inc/ok.md\n");
    let ok_inc = t.write("inc/ok.md", "INC-OK\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");
    t.write(".claude/rules/sub/deeper.md", "RULE-DEEPER\n");
    // A link to the rules directory itself, one to its parent (`.claude`, which holds `rules`
    // again), one from a subdirectory back up, and a fan of three links to `.`: without loop
    // detection the fan alone is 3^16 directories (this hung before the fix in walk.rs).
    t.symlink(".", ".claude/rules/self");
    t.symlink("..", ".claude/rules/parent");
    t.symlink("..", ".claude/rules/sub/up");
    for name in ["fan1", "fan2", "fan3"] {
        t.symlink(".", &format!(".claude/rules/{name}"));
    }
    // A file symlink to itself, as an include target and as a rule (ELOOP).
    t.symlink("self.md", "inc/self.md");
    t.symlink("loop.md", ".claude/rules/loop.md");

    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&ok_inc);
    p.assert_loaded(&rule);
    p.assert_loaded(&t.path(".claude/rules/sub/deeper.md"));
    let text = p.instructions();
    assert_eq!(
        text.matches("RULE-OK").count(),
        1,
        "a rule is loaded once:\n{text}"
    );
    assert_eq!(
        text.matches("RULE-DEEPER").count(),
        1,
        "a rule is loaded once:\n{text}"
    );
    // Every loaded record is a distinct file reached without going through a link loop.
    assert!(
        p.files().len() < 12,
        "too many records (a loop was walked): {:#}",
        p.json["files"]
    );

    p.assert_skipped(&t.path("inc/self.md"), "symbolic links");
    p.assert_finding(&claude, "include-unreadable", "symbolic links");
    // `parent` is `.claude`: read once, its `rules` is the loop.
    for link in ["self", "parent/rules", "sub/up", "fan1", "fan2", "fan3"] {
        let dir = t.path(format!(".claude/rules/{link}"));
        p.assert_finding(&dir, "rules-symlink-loop", "not read again");
    }
    p.assert_finding(
        &t.path(".claude/rules/loop.md"),
        "unreadable",
        "symlink loop",
    );

    let c = t.check();
    assert_check_line(&c, "CLAUDE.md:2:", "symbolic links");
    assert_check_line(&c, ".claude/rules/loop.md", "symlink loop");
    for link in ["self", "parent/rules", "sub/up", "fan1", "fan2", "fan3"] {
        assert_check_line(&c, &format!(".claude/rules/{link}:"), "not read again");
    }
}

/// A rules link to `/` never walks the disk: a project rule folder linking out of cwd is not
/// walked at all (one finding at the link, where each file below it was walked and reported
/// before: 6,441 findings and up to 4 s), and a user rules link to `/` or to the home directory
/// is refused (it loaded 5,522 files from across the disk before).
#[test]
fn a_rules_link_to_the_root_never_walks_the_disk() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP-OK\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");
    t.symlink("/", ".claude/rules/root");
    let user_rules = t.home.join(".claude/rules");
    fs::create_dir_all(&user_rules).unwrap();
    let user_rule = user_rules.join("mine.md");
    fs::write(&user_rule, "USER-RULE-OK\n").unwrap();
    std::os::unix::fs::symlink("/", user_rules.join("root")).unwrap();
    std::os::unix::fs::symlink(&t.home, user_rules.join("home")).unwrap();

    let p = t.preview(&[]);
    p.run.assert_faster_than(
        crate::hostile::tree::time_budget(Duration::from_millis(500)),
        "preview",
    );
    p.assert_loaded(&claude);
    p.assert_loaded(&rule);
    p.assert_loaded(&user_rule);
    assert_eq!(
        p.files().len(),
        3,
        "nothing from the disk: {:#}",
        p.json["files"]
    );
    assert!(
        p.findings().len() <= 4,
        "one finding per link: {:#}",
        p.json["findings"]
    );
    p.assert_finding(
        &t.path(".claude/rules/root"),
        "rules-link-too-wide",
        "every .md file below it",
    );
    p.assert_finding(
        &user_rules.join("root"),
        "rules-link-too-wide",
        "Link the folder that holds the rules",
    );
    p.assert_finding(&user_rules.join("home"), "rules-link-too-wide", "not read");

    // A project rules folder linking elsewhere out of cwd: one finding at the link, nothing
    // below it walked.
    let t2 = Tree::new();
    let outside = t2.tmp.path().join("elsewhere");
    for i in 0..50 {
        let d = outside.join(format!("d{i}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("r.md"), "OUTSIDE\n").unwrap();
    }
    t2.write("CLAUDE.md", "TOP\n");
    t2.symlink(outside.to_str().unwrap(), ".claude/rules/shared");
    let p = t2.preview(&[]);
    assert!(!p.instructions().contains("OUTSIDE"));
    let out: Vec<_> = p
        .findings()
        .iter()
        .filter(|f| f["code"] == "rules-link-out")
        .collect();
    assert_eq!(out.len(), 1, "{:#}", p.json["findings"]);
    assert!(
        out[0]["message"]
            .as_str()
            .unwrap()
            .contains("outside the working directory")
    );
    assert!(p.findings().len() <= 2, "{:#}", p.json["findings"]);
    let c = t2.check();
    assert_check_line(&c, ".claude/rules/shared", "outside the working directory");
    assert!(c.stdout.lines().count() < 5, "{}", c.stdout);
}

// (2) A 1 GB file.

#[test]
fn one_gigabyte_sparse_files_are_not_read() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP-OK\n@big-include.md\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");
    let gb = 1u64 << 30;
    for rel in ["CLAUDE.local.md", "big-include.md", ".claude/rules/big.md"] {
        let f = fs::File::create(t.path(rel)).expect("create");
        f.set_len(gb).expect("set_len: a sparse 1 GB file");
    }

    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&rule);
    let local = t.path("CLAUDE.local.md");
    p.assert_skipped(&local, "too large");
    p.assert_finding(&local, "unreadable", "1.0 GB");
    p.assert_skipped(&t.path("big-include.md"), "too large");
    p.assert_finding(&claude, "include-unreadable", "too large");
    p.assert_skipped(&t.path(".claude/rules/big.md"), "too large");
    // Reading (or even mapping) 1 GB would take seconds and a gigabyte of memory. Generous:
    // a debug build does this in well under 100 ms.
    assert!(
        p.run.elapsed < Duration::from_secs(10),
        "took {:?}: the 1 GB files were read",
        p.run.elapsed
    );
    eprintln!(
        "1 GB files: preview took {:?}, peak RSS seen {:?} KB",
        p.run.elapsed, p.run.peak_rss_kb
    );
    if let Some(kb) = p.run.peak_rss_kb {
        assert!(
            kb < 200 * 1024,
            "peak RSS {kb} KB: the 1 GB files were read"
        );
    }

    let c = t.check();
    assert_check_line(&c, "CLAUDE.local.md", "too large");
    assert_check_line(&c, ".claude/rules/big.md", "too large");
    assert_check_line(&c, "CLAUDE.md:2:", "too large");
    assert!(
        c.elapsed < Duration::from_secs(10),
        "check took {:?}",
        c.elapsed
    );
}

// (3) FIFOs and /dev/zero.

#[test]
fn fifos_and_dev_zero_never_block() {
    let t = Tree::new();
    let claude = t.write(
        "CLAUDE.md",
        "TOP-OK\n@inc/pipe.md\n@/dev/zero\n@inc/ok.md\n",
    );
    let ok_inc = t.write("inc/ok.md", "INC-OK\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");
    let fifos = t.fifo("inc/pipe.md") && t.fifo(".claude/rules/pipe.md");

    // Without approval, /dev/zero is cut as outside the working directory before any read.
    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&ok_inc);
    p.assert_loaded(&rule);
    let zero = Path::new("/dev/zero");
    p.assert_skipped(zero, "outside the working directory");
    p.assert_finding(&claude, "include-external", "/dev/zero is outside");
    if fifos {
        p.assert_skipped(&t.path("inc/pipe.md"), "not a regular file");
        p.assert_finding(&claude, "include-unreadable", "not a regular file");
        p.assert_skipped(&t.path(".claude/rules/pipe.md"), "not a regular file");
        p.assert_finding(&t.path(".claude/rules/pipe.md"), "unreadable", "FIFO");
    }

    // Approved: the read path itself must refuse /dev/zero.
    t.approve_external_includes();
    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&ok_inc);
    p.assert_loaded(&rule);
    p.assert_skipped(zero, "not a regular file");
    p.assert_finding(
        &claude,
        "include-unreadable",
        "/dev/zero: not a regular file",
    );

    let c = t.check();
    assert_check_line(&c, "CLAUDE.md:3:", "/dev/zero");
    if fifos {
        assert_check_line(&c, "CLAUDE.md:2:", "not a regular file");
        assert_check_line(&c, ".claude/rules/pipe.md", "not a regular file");
    }
}

// (4) Unreadable directories.

#[test]
fn unreadable_directories() {
    let mut t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP-OK\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");
    t.write(".claude/rules/sub/hidden.md", "RULE-HIDDEN\n");
    t.write("deep/nested/CLAUDE.md", "NESTED-HIDDEN\n");
    t.write("deep/nested/x.rs", "fn main() {}\n");
    let sub = t.path(".claude/rules/sub");
    let nested = t.path("deep/nested");
    // As root (CI), chmod 000 stops nothing: then run the binary as `nobody` when possible,
    // else assert only that nothing crashes or hangs.
    let privileged = {
        chmod(&sub, 0o000);
        let readable = fs::read_dir(&sub).is_ok();
        chmod(&sub, 0o755);
        readable
    };
    let enforced = !privileged || t.drop_privileges();
    if !enforced {
        eprintln!(
            "running as root without setpriv: chmod 000 does not stop reads; asserting no crash only"
        );
    }
    chmod(&sub, 0o000);
    chmod(&nested, 0o000);
    let touched = t.path("deep/nested/x.rs").to_string_lossy().into_owned();
    let p = t.preview(&["--file", &touched]);
    let c = t.check();
    chmod(&sub, 0o755);
    chmod(&nested, 0o755);

    p.assert_loaded(&claude);
    p.assert_loaded(&rule);
    if enforced {
        p.assert_finding(&sub, "unreadable-dir", "ermission denied");
        assert!(!p.instructions().contains("RULE-HIDDEN"));
        // Touching a file below the unreadable directory: a finding about what could not be
        // read there (its rules directory), and nothing of it attached.
        let nested_finding = p.findings().iter().any(|f| {
            f["path"]
                .as_str()
                .is_some_and(|q| Path::new(q).starts_with(&nested))
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("ermission denied"))
        });
        assert!(
            nested_finding,
            "no finding under {}; findings: {:#}",
            nested.display(),
            p.json["findings"]
        );
        assert!(!p.run.stdout.contains("NESTED-HIDDEN"));
        assert_check_line(&c, ".claude/rules/sub:", "ermission denied");
    }
}

// (5) Invalid UTF-8, (6) binary includes.

#[test]
fn invalid_utf8_and_binary_files() {
    let t = Tree::new();
    // As in Claude Code, every file is read as UTF-8 with replacement, NUL bytes kept: a Latin-1
    // CLAUDE.md loads with U+FFFD in it. Only an include whose extension is not a text one is
    // skipped, without being read.
    let bad = t.write("CLAUDE.md", b"caf\xe9 au lait\n@inc/ok.md\n");
    let dot = t.write(
        ".claude/CLAUDE.md",
        "DOT-OK\n@../inc/latin1.md\n@../inc/logo.png\n@../inc/nul.md\n@../inc/ok.md\n",
    );
    let ok_inc = t.write("inc/ok.md", "INC-OK\n");
    let latin1 = t.write("inc/latin1.md", b"r\xe9sum\xe9\n");
    t.write(
        "inc/logo.png",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89",
    );
    let nul = t.write("inc/nul.md", b"text with a NUL \0 byte\n");
    let bad_rule = t.write(".claude/rules/bad.md", b"\xff\xfe\xfd\n");
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");

    let p = t.preview(&[]);
    for loaded in [&bad, &dot, &ok_inc, &latin1, &nul, &bad_rule, &rule] {
        p.assert_loaded(loaded);
    }
    let text = p.instructions();
    assert!(text.contains("caf\u{FFFD} au lait"), "{text}");
    assert!(text.contains("r\u{FFFD}sum\u{FFFD}"), "{text}");
    assert!(text.contains("text with a NUL \0 byte"), "{text}");
    assert!(text.contains("\u{FFFD}\u{FFFD}\u{FFFD}"), "{text}");
    p.assert_skipped(&t.path("inc/logo.png"), "not a text extension");
    let f = p.assert_finding(&dot, "include-extension", ".png is not one");
    assert_eq!(f["line"], 2, "{f}");

    let c = t.check();
    assert_check_line(&c, ".claude/CLAUDE.md:3:", ".png is not one");
}

// (7) Include cycles and a 10-deep chain.

#[test]
fn include_cycles_and_deep_chains() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP\n@CLAUDE.md\n@cyc/a.md\n@chain/1.md\n");
    let a = t.write("cyc/a.md", "A\n@b.md\n");
    let b = t.write("cyc/b.md", "B\n@a.md\n@../CLAUDE.md\n");
    for i in 1..=10 {
        t.write(
            format!("chain/{i}.md"),
            format!("LEVEL-{i}\n@{}.md\n", i + 1),
        );
    }

    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&a);
    p.assert_loaded(&b);
    // The top file including itself, and b including a and the top file: each cut once.
    let cycles = p
        .findings()
        .iter()
        .filter(|f| f["code"] == "include-cycle")
        .count();
    assert_eq!(cycles, 3, "findings: {:#}", p.json["findings"]);
    p.assert_finding(&b, "include-cycle", "a.md");
    // Top file plus 4 levels: chain/1..4 load, chain/5 is cut with a reason, 6.. never looked at.
    for i in 1..=4 {
        let rec = &p.records(&t.path(format!("chain/{i}.md")))[0];
        assert_eq!(rec["status"], "loaded");
        assert_eq!(rec["depth"], i);
    }
    p.assert_skipped(&t.path("chain/5.md"), "too deep");
    p.assert_finding(
        &t.path("chain/4.md"),
        "include-too-deep",
        "at most 4 levels",
    );
    for i in 6..=11 {
        assert!(p.records(&t.path(format!("chain/{i}.md"))).is_empty());
    }
    let text = p.instructions();
    assert!(text.contains("LEVEL-4") && !text.contains("LEVEL-5"));

    // `check` lints the top file with its includes; it prints these under CLAUDE.md (the file
    // it linted), so only the message is asserted here, not the file named on the line.
    let c = t.check();
    assert!(
        c.stdout.contains("includes go at most 4 levels"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("(cycle)"), "{}", c.stdout);
}

// (8) Broken frontmatter.

#[test]
fn broken_frontmatter_is_an_error_in_check() {
    let t = Tree::new();
    let claude = t.write("CLAUDE.md", "TOP-OK\n");
    // A list item is never rewritten by Claude Code's retry: the YAML stays broken.
    let broken = t.write(
        ".claude/rules/broken.md",
        "---\ndescription: ok\npaths:\n  - [unclosed\n---\nBROKEN-RULE-BODY\n",
    );
    // A value is: `[unclosed` becomes a glob that matches nothing, and the rule waits forever.
    let retried = t.write(
        ".claude/rules/retried.md",
        "---\ndescription: ok\npaths: [unclosed\n---\nRETRIED-BODY\n",
    );
    // Not even YAML delimiters closed, and a non-mapping: both load as plain text.
    let unclosed = t.write(
        ".claude/rules/unclosed.md",
        "---\npaths: x\nUNCLOSED-BODY\n",
    );
    let scalar = t.write(
        ".claude/rules/scalar.md",
        "---\njust a string\n---\nSCALAR-BODY\n",
    );

    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    // The rule loads as if it had no `paths` (unconditional), with an error finding.
    p.assert_loaded(&broken);
    p.assert_loaded(&unclosed);
    p.assert_loaded(&scalar);
    let f = p.assert_finding(&broken, "frontmatter", "frontmatter is not valid YAML");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["line"], 3, "the list item's line (0-based): {f}");
    p.assert_finding(&scalar, "frontmatter", "not `key: value` fields");
    assert!(p.instructions().contains("BROKEN-RULE-BODY"));
    assert!(!p.instructions().contains("RETRIED-BODY"));
    let f = p.assert_finding(&retried, "frontmatter", "reads paths \"[unclosed\"");
    assert_eq!(f["severity"], "warning");
    p.assert_finding(&retried, "invalid-glob", "it matches nothing");

    let c = t.check();
    assert_eq!(c.code, Some(1), "check exits 1 on errors:\n{}", c.stdout);
    let line = c
        .stdout
        .lines()
        .find(|l| l.starts_with(".claude/rules/broken.md:"))
        .unwrap_or_else(|| panic!("no line for broken.md:\n{}", c.stdout));
    // `path:line:col: error: frontmatter: ...`
    let rest = line
        .strip_prefix(".claude/rules/broken.md:")
        .unwrap_or_default();
    let mut parts = rest.splitn(3, ':');
    let (l, col, msg) = (parts.next(), parts.next(), parts.next());
    assert_eq!(l, Some("4"), "{line}");
    assert!(
        col.is_some_and(|c| c.parse::<usize>().is_ok_and(|c| c >= 1)),
        "{line}"
    );
    assert!(
        msg.is_some_and(|m| m.starts_with(" error: frontmatter is not valid YAML")),
        "{line}"
    );
}

// (9) A very long line.

#[test]
fn five_megabyte_single_line() {
    let t = Tree::new();
    let mut long = String::from("@inc/ok.md ");
    long.push_str(&"word ".repeat(1024 * 1024));
    long.push('\n');
    let claude = t.write("CLAUDE.md", &long);
    let ok_inc = t.write("inc/ok.md", "INC-OK\n");
    // 1.4 MB of code spans each followed by an `@`: include extraction used to test every `@`
    // against every code span (quadratic: minutes in debug); now linear.
    let spans = t.write(".claude/CLAUDE.md", "`x` @) ".repeat(200_000));
    let rule = t.write(".claude/rules/ok.md", "RULE-OK\n");

    let p = t.preview(&[]);
    p.assert_loaded(&claude);
    p.assert_loaded(&ok_inc);
    p.assert_loaded(&spans);
    p.assert_loaded(&rule);
    let rec = &p.records(&claude)[0];
    assert!(
        rec["tokens"].as_u64().is_some_and(|n| n > 1_000_000),
        "{rec}"
    );
    p.assert_finding(&claude, "large-file", "large instruction file");
    // A debug build needs about 1 s for this; a quadratic pass over 5 MB takes hours.
    assert!(
        p.run.elapsed < Duration::from_secs(15),
        "preview took {:?}",
        p.run.elapsed
    );

    let c = t.check();
    assert_check_line(&c, "CLAUDE.md:", "large instruction file");
    assert!(
        c.elapsed < Duration::from_secs(15),
        "check took {:?}",
        c.elapsed
    );
}

// Regressions from fuzzing (`fuzz/`, target `markdown`): each input inline, with the invariant
// it broke.

/// YAML breaks lines at a lone `\r`, the rest of the project only at `\n`: a frontmatter error
/// was reported at a line past the frontmatter (line 7 of a 7-line frontmatter here).
#[test]
fn fuzz_frontmatter_error_position_with_bare_cr() {
    use claude_context::context::frontmatter;
    let crash: &[u8] = b"---\np-\r-]]]]]]]]]]]]]]]]]]]]]]---\np-\r-]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\np-\r-]]]]]]]]]]]]]]]]]\npa\x8a\x97s: 2\n-\x98\n---\n";
    let small: &[u8] = b"---\na: 1\rb: c: d\n---\nbody\n";
    for input in [crash, small] {
        let text = String::from_utf8_lossy(input);
        let (fm, body) = frontmatter::split(&text);
        assert!(text.ends_with(body));
        let fm = fm.expect("frontmatter");
        // The frontmatter ends at the first `---`, mid-line too: the error (when the YAML is
        // invalid) is on a line of the frontmatter, the closing line included.
        let Some(err) = fm.error else { continue };
        assert!(
            err.line >= 1 && err.line <= fm.lines,
            "error at line {} of a {}-line frontmatter: {err:?}",
            err.line,
            fm.lines
        );
        let line = text
            .split('\n')
            .nth(err.line)
            .expect("the error's line exists");
        assert!(
            err.col <= line.len(),
            "column {} past the line {line:?}",
            err.col
        );
    }
}
