//! The memory directory is judged on its normalised absolute form (issue 8, item 2): `/..`,
//! `/./` and `/tmp/..` are all the root and were accepted; `C:\x` was accepted on Unix, where it
//! is a relative name, and a `MEMORY.md` in the process's working directory was loaded.

use crate::hostile::tree::{Tree, run};

/// `preview` with `CLAUDE_CONTEXT_MEMORY_DIR=value`: refused (exit 2) with a message naming it.
fn assert_refused(t: &Tree, value: &str, why: &str) {
    let mut cmd = t.command(&["preview", "--json", "--no-git"]);
    cmd.env("CLAUDE_CONTEXT_MEMORY_DIR", value);
    let r = run(cmd);
    assert_eq!(
        r.code,
        Some(2),
        "{value:?} must be refused; stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("{value:?}")) && r.stderr.contains(why),
        "the message names {value:?} and says {why:?}: {}",
        r.stderr
    );
    assert!(!r.stdout.contains("LEAKED-MEMORY"), "{}", r.stdout);
}

#[test]
fn every_spelling_of_the_root_is_refused() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    for root in ["/..", "/./", "/tmp/..", "/tmp/../../.", "/"] {
        assert_refused(&t, root, "root directory");
    }
}

#[test]
fn a_windows_drive_path_is_relative_on_unix() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    // What `C:\x` names on Unix, relative to the process's working directory (the project).
    t.write("C:\\x/MEMORY.md", "LEAKED-MEMORY\n");
    assert_refused(&t, "C:\\x", "relative");
    assert_refused(&t, "mem/dir", "relative");
}

#[test]
fn a_dedicated_directory_is_accepted_normalised() {
    let t = Tree::new();
    t.write("CLAUDE.md", "TOP\n");
    let mem = t.tmp.path().join("mem");
    std::fs::create_dir_all(&mem).expect("mkdir");
    std::fs::write(mem.join("MEMORY.md"), "- MEMORY-OK\n").expect("write");
    let spelled = format!("{}/./x/../mem/", t.tmp.path().display());
    let mut cmd = t.command(&["preview", "--json", "--no-git"]);
    cmd.env("CLAUDE_CONTEXT_MEMORY_DIR", &spelled);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let memory = mem.join("MEMORY.md");
    assert!(
        json["files"]
            .as_array()
            .expect("files")
            .iter()
            .any(|f| f["path"] == memory.to_string_lossy().as_ref() && f["status"] == "loaded"),
        "{:#}",
        json["files"]
    );
}
