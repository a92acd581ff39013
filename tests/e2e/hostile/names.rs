//! Names a person reads cannot drive the terminal or break a table (issue 8, item 1): a rule
//! named with `ESC[2K` and `\r` erased its own row in `preview`'s table and redrew it as
//! "skipped … not found" while the file was loaded; a newline in a name split the row. Names are
//! now quoted as `git status` quotes them (`"a\033[2K\rb.md"`), messages have their control
//! characters escaped, and JSON keeps the exact path. A path that is not UTF-8 made
//! `preview --json` exit 2 with no output; it is now written lossily plus its exact bytes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::hostile::tree::Tree;

/// The spoofing name of the issue: erase the row, return to its start, draw a fake one.
const SPOOF: &str =
    "evil\x1b[2K\r  project   skipped        —  .claude/rules/gone.md  not found.md";

/// Bytes a terminal acts on (ESC, CR, BEL, the C1 CSI, NEL) must not reach it raw.
fn assert_no_controls(out: &str, what: &str) {
    for c in ['\x1b', '\r', '\x07', '\u{9b}', '\u{85}'] {
        assert!(
            !out.contains(c),
            "{what}: a raw {c:?} reached the terminal:\n{out}"
        );
    }
}

fn spoof_tree() -> Tree {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP-OK\n@inc/\x1b[31mred.md\n");
    t.write(format!(".claude/rules/{SPOOF}"), "EVIL-RULE-BODY\n");
    t.write(".claude/rules/two\nlines.md", "TWO-LINES-BODY\n");
    t.write(".claude/rules/ok.md", "RULE-OK\n");
    // A broken rule whose name sets the terminal's title: `check` must name it.
    t.write(
        ".claude/rules/bad\x1b]0;pwned\x07.md",
        "---\npaths: [unclosed\n---\nBAD-BODY\n",
    );
    t
}

#[test]
fn the_preview_table_quotes_names_and_escapes_reasons() {
    let t = spoof_tree();
    let out = t.preview_table().stdout;
    assert_no_controls(&out, "preview");
    // The spoofing rule's row: loaded, its name quoted with the sequences visible.
    let row = out
        .lines()
        .find(|l| l.contains("evil\\033[2K\\r"))
        .unwrap_or_else(|| panic!("no row for the spoofing rule:\n{out}"));
    assert!(row.contains("loaded"), "{row}");
    // One row per file: a newline in a name no longer splits a row in two.
    let row = out
        .lines()
        .find(|l| l.contains("/two\\nlines.md\""))
        .unwrap_or_else(|| panic!("no row for two\\nlines.md:\n{out}"));
    assert!(row.contains("loaded"), "{row}");
    assert!(
        !out.lines().any(|l| l.trim() == "lines.md"),
        "a name split the table:\n{out}"
    );
    // The missing include's reason names it with its escape visible.
    assert!(out.contains("\\033[31mred.md"), "{out}");
}

#[test]
fn check_quotes_names_and_escapes_messages() {
    let t = spoof_tree();
    let c = t.check();
    assert_no_controls(&c.stdout, "check");
    // `path:line:col: severity: message`, the path quoted.
    assert!(
        c.stdout.lines().any(
            |l| l.starts_with("\".claude/rules/bad\\033]0;pwned\\a.md\":")
                && l.contains("frontmatter")
        ),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout
            .lines()
            .any(|l| l.starts_with("CLAUDE.md:2:") && l.contains("\\033[31mred.md")),
        "{}",
        c.stdout
    );
}

#[test]
fn json_keeps_the_exact_names() {
    let t = spoof_tree();
    let p = t.preview(&[]);
    p.assert_loaded(&t.path(format!(".claude/rules/{SPOOF}")));
    p.assert_loaded(&t.path(".claude/rules/two\nlines.md"));
    // Exact (UTF-8) paths have no `pathBytes`.
    assert!(p.files().iter().all(|f| f.get("pathBytes").is_none()));
}

/// A project whose directory name is Latin-1, not UTF-8.
fn latin1_tree() -> (Tree, PathBuf) {
    let t = Tree::new();
    let cwd = t.root.join(OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir_all(cwd.join(".claude/rules")).expect("mkdir");
    std::fs::write(cwd.join("CLAUDE.md"), "LATIN1-DIR-OK\n").expect("write");
    std::fs::write(
        cwd.join(".claude/rules/broken.md"),
        "---\npaths: [unclosed\n---\nBROKEN-BODY\n",
    )
    .expect("write");
    (t, cwd)
}

fn bytes_of(p: &Path) -> Value {
    json!(p.as_os_str().as_bytes())
}

#[test]
fn a_path_that_is_not_utf8_survives_json() {
    let (t, cwd) = latin1_tree();
    let p = t.preview_in(&cwd, &[]);
    assert_eq!(p.json["cwd"], cwd.to_string_lossy().as_ref());
    assert_eq!(p.json["cwdBytes"], bytes_of(&cwd));
    let claude = cwd.join("CLAUDE.md");
    let rec = p
        .files()
        .iter()
        .find(|f| f["pathBytes"] == bytes_of(&claude))
        .unwrap_or_else(|| panic!("no record with the exact bytes: {:#}", p.json["files"]));
    assert_eq!(rec["status"], "loaded");
    assert_eq!(rec["path"], claude.to_string_lossy().as_ref());
    assert!(p.instructions().contains("LATIN1-DIR-OK"));
    let broken = cwd.join(".claude/rules/broken.md");
    assert!(
        p.findings()
            .iter()
            .any(|f| f["pathBytes"] == bytes_of(&broken) && f["code"] == "frontmatter"),
        "{:#}",
        p.json["findings"]
    );

    // `check --json` too; and the text forms show the name exactly, octal-escaped.
    let c = t.check_in(&cwd, &["--json"]);
    let findings: Value = serde_json::from_str(&c.stdout).expect("check --json prints JSON");
    assert!(
        findings
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f["pathBytes"] == bytes_of(&broken))),
        "{findings:#}"
    );
    let table = crate::hostile::tree::run(t.command(&[
        OsStr::new("preview"),
        OsStr::new("--no-git"),
        OsStr::new("--cwd"),
        cwd.as_os_str(),
    ]));
    assert_eq!(table.code, Some(0), "{}", table.stderr);
    assert!(table.stdout.contains("caf\\351\""), "{}", table.stdout);
}

/// The hover's markdown table: a newline in a rule's name must not end its row.
#[test]
fn hover_markdown_quotes_names() {
    let ws = crate::hostile::lsp::Workspace::new();
    ws.write("CLAUDE.md", "TOP\n");
    ws.write(".claude/rules/two\nlines.md", "TWO\n");
    ws.write(".claude/rules/e\x1b[2Kvil.md", "EVIL\n");
    let file = ws.write("src/a.ts", "export {};\n");
    let mut s = ws.spawn(&crate::hostile::tree::bin());
    s.initialize(&ws.root, json!(null));
    s.open(&file, "export {};\n");
    let hover = s.call(
        "textDocument/hover",
        json!({"textDocument": {"uri": crate::hostile::lsp::uri(&file)}, "position": {"line": 0, "character": 0}}),
    );
    let md = hover["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("markdown hover: {hover}"))
        .to_string();
    assert!(!md.contains('\x1b'), "{md}");
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("lines.md")).collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert!(
        rows[0].starts_with('|') && rows[0].contains("two\\nlines.md"),
        "{md}"
    );
    assert!(md.contains("e\\033\\[2Kvil.md"), "{md}");
    s.shutdown();
}
