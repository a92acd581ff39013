//! Messages a user can act on (issue 8, item 5), and what `check` and `preview` say about files
//! reached through links. Each test names what was wrong before: a 10 MB MEMORY.md "costs
//! 2,500,000 tokens" when 200 lines are sent; a rule with a 249 KB frontmatter is "≈ 3 tokens";
//! a YAML bomb's error is Rust debug text; a warning for 10,000 globs is one 219 KB line; rules
//! with names that are not UTF-8 are skipped silently; git failures drop the block silently;
//! `check` counts 1 file while the preview loads 6 through links.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::hostile::tree::{Preview, Tree};

/// Every number written right before "tokens" in `message` (`≈ 2,500,000 tokens` → 2500000).
fn token_counts(message: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = message;
    while let Some(i) = rest.find(" tokens") {
        let before = rest[..i].trim_end();
        let digits: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .filter(char::is_ascii_digit)
            .collect();
        if let Ok(n) = digits.parse() {
            out.push(n);
        }
        rest = &rest[i + " tokens".len()..];
    }
    out
}

fn findings_on<'p>(p: &'p Preview, path: &Path) -> Vec<&'p Value> {
    p.findings()
        .iter()
        .filter(|f| f["path"] == path.to_string_lossy().as_ref())
        .collect()
}

#[test]
fn a_large_memory_file_costs_what_is_sent() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    let mem = t.tmp.path().join("mem");
    let mut text = String::new();
    for i in 0..50_000 {
        let _ = writeln!(text, "- entry {i}: {}", "x".repeat(90));
    }
    std::fs::create_dir_all(&mem).expect("mkdir");
    let memory = mem.join("MEMORY.md");
    std::fs::write(&memory, &text).expect("write");
    let mem_dir = mem.to_string_lossy().into_owned();
    let p = t.preview(&["--memory-dir", &mem_dir]);
    let sent = p.records(&memory)[0]["tokens"].as_u64().expect("tokens");
    assert!(sent < 10_000, "MEMORY.md is capped: {sent} tokens");
    for f in findings_on(&p, &memory) {
        let m = f["message"].as_str().unwrap_or_default();
        for n in token_counts(m) {
            assert!(n <= sent, "{m:?} claims {n} tokens; {sent} are sent");
        }
    }
}

#[test]
fn a_rule_with_a_huge_frontmatter_says_so() {
    let t = Tree::new();
    let rule = t.write(
        ".claude/rules/fat.md",
        format!("---\ndescription: {}\n---\nBody.\n", "x".repeat(249 * 1024)),
    );
    let p = t.preview(&[]);
    let large: Vec<_> = findings_on(&p, &rule)
        .into_iter()
        .filter(|f| f["code"] == "large-file")
        .collect();
    assert!(
        large.iter().all(|f| f["message"]
            .as_str()
            .is_some_and(|m| m.contains("frontmatter"))),
        "a large file whose size is frontmatter says so: {large:#?}"
    );
}

#[test]
fn a_yaml_bomb_is_explained_in_words() {
    let t = Tree::new();
    let mut yaml =
        String::from("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
    let mut prev = 'a';
    for n in ['b', 'c', 'd', 'e', 'f', 'g'] {
        let refs = vec![format!("*{prev}"); 10].join(",");
        let _ = writeln!(yaml, "{n}: &{n} [{refs}]");
        prev = n;
    }
    t.write(".claude/rules/bomb.md", format!("---\n{yaml}---\nBOMB\n"));
    let c = t.check();
    let line = c
        .stdout
        .lines()
        .find(|l| l.starts_with(".claude/rules/bomb.md:"))
        .unwrap_or_else(|| panic!("no finding for the bomb:\n{}", c.stdout));
    assert!(line.contains("YAML bomb"), "{line}");
    for debug in ["budget breached", "Nodes {", "{ nodes"] {
        assert!(
            !line.contains(debug),
            "Rust debug text reached the user: {line}"
        );
    }
    assert!(
        line.strip_prefix(".claude/rules/bomb.md:")
            .and_then(|r| r.split(':').next())
            .is_some_and(|n| n.parse::<usize>().is_ok()),
        "the line of the problem: {line}"
    );
}

#[test]
fn ten_thousand_globs_give_short_lines() {
    let t = Tree::new();
    let mut globs = String::new();
    for i in 0..10_000 {
        let _ = writeln!(globs, "  - nowhere/dir{i}/**/*.ts");
    }
    t.write(
        ".claude/rules/many.md",
        format!("---\npaths:\n{globs}---\nMany globs.\n"),
    );
    let c = t.check();
    let longest = c.stdout.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 2_000,
        "a {longest}-byte line:\n{:.2000}",
        c.stdout
    );
    let about = c
        .stdout
        .lines()
        .filter(|l| l.starts_with(".claude/rules/many.md"))
        .count();
    assert!(
        (1..=5).contains(&about),
        "{about} lines about many.md:\n{:.4000}",
        c.stdout
    );
}

#[test]
fn a_rule_name_that_is_not_utf8_is_reported() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    let rule = t
        .path(".claude/rules")
        .join(OsStr::from_bytes(b"r\xe8gle.md"));
    t.write(&rule, "LATIN1-NAMED-RULE\n");
    let p = t.preview(&[]);
    let bytes = json!(rule.as_os_str().as_bytes());
    let reported = p.files().iter().any(|f| f["pathBytes"] == bytes)
        || p.findings().iter().any(|f| f["pathBytes"] == bytes);
    assert!(
        reported,
        "files: {:#}\nfindings: {:#}",
        p.json["files"], p.json["findings"]
    );
    assert!(!p.instructions().contains("LATIN1-NAMED-RULE"));
    // `check` names it exactly, octal-escaped as git does.
    let c = t.check();
    crate::hostile::tree::assert_check_line(
        &c,
        "\".claude/rules/r\\350gle.md\"",
        "not valid UTF-8",
    );
}

/// `preview --json` with git, in a project whose git metadata is broken.
fn git_preview(t: &Tree) -> Preview {
    let root = t.root.to_string_lossy().into_owned();
    let r = crate::hostile::tree::run(t.command(&["preview", "--json", "--cwd", &root]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let json = serde_json::from_str(&r.stdout).expect("JSON");
    Preview { json, run: r }
}

fn says_why_there_is_no_git_block(p: &Preview) {
    assert!(
        p.findings()
            .iter()
            .any(|f| f["message"].as_str().is_some_and(|m| m.contains("git"))),
        "a finding says why there is no git block: {:#}",
        p.json["findings"]
    );
}

#[test]
fn a_git_failure_is_a_finding() {
    // A `.git` file pointing nowhere.
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    t.write(".git", "gitdir: /nowhere/at/all\n");
    says_why_there_is_no_git_block(&git_preview(&t));
}

#[test]
fn a_worktree_whose_repository_is_gone_is_a_finding() {
    let main = Tree::new();
    main.write("CLAUDE.md", "TOP\n");
    let git = |dir: &std::path::Path, args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&main.root, &["init", "-q"]);
    git(&main.root, &["add", "."]);
    git(&main.root, &["commit", "-qm", "one"]);
    let linked = Tree::new();
    std::fs::remove_dir(&linked.root).expect("empty dir");
    git(
        &main.root,
        &[
            "worktree",
            "add",
            "-q",
            &linked.root.to_string_lossy(),
            "-b",
            "wt",
        ],
    );
    std::fs::remove_dir_all(main.root.join(".git")).expect("main repository removed");
    says_why_there_is_no_git_block(&git_preview(&linked));
}

#[test]
fn check_counts_what_the_preview_loads_through_links() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    t.write("docs/a.md", "A-RULE\n");
    for name in ["one", "two", "three"] {
        t.write(format!("shared/{name}.md"), format!("SHARED-{name}\n"));
    }
    t.symlink("../../docs/a.md", ".claude/rules/a.md");
    t.symlink("../../docs/a.md", ".claude/rules/again.md");
    t.symlink("../../shared", ".claude/rules/linked");
    let p = t.preview(&[]);
    let text = p.instructions();
    assert_eq!(text.matches("A-RULE").count(), 1, "{text}");
    let loaded = p.files().iter().filter(|f| f["status"] == "loaded").count();
    assert_eq!(loaded, 5, "CLAUDE.md, a.md once, the three shared rules");
    let c = t.check();
    assert_eq!(
        c.stdout.trim_end(),
        format!("No problems in {loaded} instruction files."),
        "check lints what the preview loads"
    );
}
