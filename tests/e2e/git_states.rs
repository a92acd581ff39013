//! The git status block on every repository state git handles (issue 7's list): each state is built with the git
//! CLI in a temp dir and our status must equal `git --no-optional-locks status --short --ignore-submodules=dirty`
//! byte for byte, before and after git refreshes the index. Each test also says which engine must answer: the
//! native one where it reproduces git, the git CLI where the native engine declines, so a fallback that answered
//! everything would fail here. States no engine can read keep the block and say why, with a finding.
#![allow(clippy::disallowed_methods)] // reason: tests, benches and examples drive real processes and read their own environment.

use crate::git_support;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use claude_context::git::{self, Engine, GitErrorKind, StatusEngine, StatusProblemKind};
use git_support::{BIN, Repo, lines};

const NATIVE: StatusEngine = StatusEngine::Native;
const CLI: StatusEngine = StatusEngine::GitCli;

fn base_repo() -> Repo {
    let r = Repo::new();
    r.write("a.txt", "alpha\n");
    r.write("d/b.txt", "b\n");
    r.write("d/e/c.txt", "c\n");
    r.write("x/y.txt", "y\n");
    r.commit("init");
    r
}

/// A few changes of every kind on top of [`base_repo`].
fn dirty(r: &Repo) {
    r.write("a.txt", "alpha changed\n");
    r.write("d/staged.txt", "s\n");
    r.git(&["add", "d/staged.txt"]);
    fs::remove_file(r.root.join("d/e/c.txt")).expect("rm");
    r.write("new/untracked.txt", "u\n");
}

#[test]
fn split_index_is_answered_by_git() {
    let r = base_repo();
    r.git(&["update-index", "--split-index"]);
    dirty(&r);
    r.git(&["add", "a.txt"]);
    assert!(
        r.root
            .join(".git")
            .read_dir()
            .expect("ls")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
    );
    let (status, engine) = r.check();
    assert_eq!(
        status,
        lines(&["M  a.txt", " D d/e/c.txt", "A  d/staged.txt", "?? new/"])
    );
    assert_eq!(engine, CLI);
    let s = r.snap_in(&r.root, Engine::Auto);
    assert!(
        s.status_declined
            .as_deref()
            .unwrap_or("")
            .contains("split index")
    );
}

#[test]
fn sparse_index_is_answered_by_git() {
    let r = base_repo();
    r.git(&["sparse-checkout", "set", "--cone", "d", "--sparse-index"]);
    assert!(!r.root.join("x/y.txt").exists());
    r.write("d/b.txt", "changed\n");
    r.write("d/new.txt", "n\n");
    let (status, engine) = r.check();
    assert_eq!(status, lines(&[" M d/b.txt", "?? d/new.txt"]));
    assert_eq!(engine, CLI);
}

#[test]
fn sparse_checkout_without_sparse_index_is_native() {
    let r = base_repo();
    r.git(&["sparse-checkout", "set", "--cone", "d"]);
    assert!(!r.root.join("x/y.txt").exists());
    r.write("d/b.txt", "changed\n");
    assert_eq!(r.check(), (lines(&[" M d/b.txt"]), NATIVE));
    // A file outside the cone that is present again: git clears its skip-worktree bit and compares it.
    r.write("x/y.txt", "y but different\n");
    r.write("x/stray.txt", "s\n");
    assert_eq!(
        r.check(),
        (
            lines(&[" M d/b.txt", " M x/y.txt", "?? x/stray.txt"]),
            NATIVE
        )
    );
}

#[test]
fn intent_to_add_with_a_staged_rename_and_edit() {
    // The example: one engine for the whole answer.
    let r = base_repo();
    r.write("ita.txt", "i\n");
    r.git(&["add", "-N", "ita.txt"]);
    r.git(&["mv", "d/b.txt", "d/b2.txt"]);
    r.write("d/b2.txt", "b\nmore\n");
    r.git(&["add", "d/b2.txt"]);
    let (status, _) = r.check();
    assert_eq!(status, lines(&["D  d/b.txt", "A  d/b2.txt", " A ita.txt"]));
}

#[test]
fn intent_to_add_and_a_deleted_file_make_a_work_tree_rename() {
    let r = base_repo();
    r.write("big.txt", &"a line of text\n".repeat(20));
    r.commit("big");
    fs::rename(r.root.join("big.txt"), r.root.join("moved.txt")).expect("mv");
    r.git(&["add", "-N", "moved.txt"]);
    assert_eq!(r.check(), (lines(&[" R big.txt -> moved.txt"]), CLI));
}

/// The block of `preview --json` run in `dir` as a user would (the binary, a private environment), and its findings.
fn preview(r: &Repo, wrapper: &[&str]) -> (Option<String>, serde_json::Value) {
    let mut c = if wrapper.is_empty() {
        git::command(BIN)
    } else {
        let mut c = git::command(wrapper[0]);
        c.args(&wrapper[1..]).arg(BIN);
        c
    };
    let out = c
        .args(["preview", "--json", "--cwd"])
        .arg(&r.root)
        .env_clear()
        .envs(r.vars())
        .current_dir(&r.root)
        .output()
        .expect("run the binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let block = v["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .find(|b| b["kind"] == "gitStatus")
        .map(|b| b["text"].as_str().expect("text").to_owned());
    (block, v["findings"].clone())
}

fn status_of_block(block: &str) -> &str {
    let start = block.find("Status:\n").expect("status") + "Status:\n".len();
    let end = block[start..].find("\n\nRecent commits:").expect("commits") + start;
    &block[start..end]
}

fn has_finding(findings: &serde_json::Value, code: &str) -> bool {
    findings
        .as_array()
        .is_some_and(|a| a.iter().any(|f| f["code"] == code))
}

#[test]
fn an_index_no_engine_can_read_keeps_the_block_and_says_why() {
    for (what, make) in [
        (
            "empty",
            (|p: &Path| fs::write(p, b"")) as fn(&Path) -> std::io::Result<()>,
        ),
        ("directory", |p: &Path| {
            fs::remove_file(p)?;
            fs::create_dir(p)
        }),
        ("garbage", |p: &Path| fs::write(p, b"DIRC\0\0\0\x02garbage")),
        ("fifo", |p: &Path| {
            fs::remove_file(p)?;
            let ok = git::command("mkfifo").arg(p).status()?.success();
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::other("mkfifo"))
            }
        }),
    ] {
        let r = base_repo();
        r.write("a.txt", "changed\n");
        make(&r.root.join(".git/index")).expect(what);
        let t = Instant::now();
        let s = r.snap_in(&r.root, Engine::Auto);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{what}: took {:?}",
            t.elapsed()
        );
        let problem = s
            .status_problem
            .clone()
            .unwrap_or_else(|| panic!("{what}: a status was invented: {:?}", s.status_lines));
        assert_eq!(
            problem.kind,
            StatusProblemKind::Unavailable,
            "{what}: {problem:?}"
        );
        assert!(s.status_lines.is_empty());
        assert_eq!(s.branch, "main", "{what}");
        assert_eq!(s.commits.len(), 1, "{what}");
        // The user sees it: the block says the status is unavailable, and preview has a finding.
        let (block, findings) = preview(&r, &[]);
        let block = block.unwrap_or_else(|| panic!("{what}: the block was dropped"));
        assert!(
            status_of_block(&block).starts_with(git::UNAVAILABLE_NOTE),
            "{what}: {block}"
        );
        assert!(
            has_finding(&findings, "git-status-unavailable"),
            "{what}: {findings}"
        );
        if what == "fifo" {
            assert!(problem.message.contains("FIFO"), "{problem:?}");
        }
    }
}

/// Runs the binary and the oracle without the capabilities that let root read anything (file permissions apply),
/// when `setpriv` can; `None` otherwise.
fn without_dac(r: &Repo) -> Option<(String, Vec<String>)> {
    const WRAP: [&str; 3] = [
        "setpriv",
        "--bounding-set",
        "-dac_override,-dac_read_search",
    ];
    let probe = git::command(WRAP[0]).args(&WRAP[1..]).arg("true").status();
    if !probe.is_ok_and(|s| s.success()) {
        return None;
    }
    let (block, _) = preview(r, &WRAP);
    let out = git::command(WRAP[0])
        .args(&WRAP[1..])
        .args([
            "git",
            "--no-optional-locks",
            "status",
            "--short",
            "--ignore-submodules=dirty",
        ])
        .env_clear()
        .envs(r.vars())
        .current_dir(&r.root)
        .output()
        .expect("git under setpriv");
    let git: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    Some((status_of_block(&block.expect("block")).to_owned(), git))
}

#[test]
fn a_tracked_directory_that_can_be_entered_but_not_listed() {
    let r = base_repo();
    r.write("x/new-but-hidden.txt", "n\n");
    fs::set_permissions(r.root.join("x"), fs::Permissions::from_mode(0o311)).expect("chmod");
    r.write("a.txt", "changed\n");
    let outcome = without_dac(&r);
    fs::set_permissions(r.root.join("x"), fs::Permissions::from_mode(0o755)).expect("chmod");
    if let Some((ours, git)) = outcome {
        // git lstat's the tracked file (clean) and cannot list the directory (no untracked names).
        assert_eq!(git, lines(&[" M a.txt"]));
        assert_eq!(ours, git.join("\n"));
    } else {
        // Without setpriv, as a user whose permissions apply: the same check in process.
        let (status, _) = r.check();
        assert_eq!(status, lines(&[" M a.txt", "?? x/new-but-hidden.txt"]));
    }
}

#[test]
fn an_unreadable_index_keeps_the_block() {
    let r = base_repo();
    fs::set_permissions(r.root.join(".git/index"), fs::Permissions::from_mode(0o000))
        .expect("chmod");
    let outcome = without_dac(&r);
    fs::set_permissions(r.root.join(".git/index"), fs::Permissions::from_mode(0o644))
        .expect("chmod");
    if let Some((ours, git)) = outcome {
        assert!(git.is_empty(), "git fails: {git:?}");
        assert!(ours.starts_with(git::UNAVAILABLE_NOTE), "{ours}");
        assert!(ours.contains("Permission denied"), "{ours}");
    }
}

#[test]
fn core_ignorecase_and_precomposeunicode() {
    for key in ["core.ignorecase", "core.precomposeunicode"] {
        let r = base_repo();
        r.git(&["config", key, "true"]);
        r.write(".gitignore", "*.LOG\n");
        r.write("x/skip.log", "ignored only when case is ignored\n");
        dirty(&r);
        let (status, engine) = r.check();
        let why = r.snap_in(&r.root, Engine::Auto).status_declined;
        assert_eq!(
            engine, NATIVE,
            "{key}: ASCII names, no case variants ({why:?})"
        );
        assert!(status.contains(&" M a.txt".to_owned()), "{key}: {status:?}");
    }
    // A name that differs from a tracked one only by case: git takes it for the tracked file.
    let r = base_repo();
    r.git(&["config", "core.ignorecase", "true"]);
    r.write("A.txt", "same name, other case\n");
    r.write("D/other.txt", "o\n");
    assert_eq!(r.check().1, CLI);
    // A non-ASCII name to precompose: git answers.
    let r = base_repo();
    r.git(&["config", "core.precomposeunicode", "true"]);
    r.write("caf\u{65}\u{301}.txt", "decomposed\n");
    assert_eq!(r.check().1, CLI);
}

#[test]
fn submodules_count_only_their_checked_out_commit() {
    let r = base_repo();
    let src = r.base.join("subsrc");
    fs::create_dir_all(&src).expect("mkdir");
    r.git_in(&src, &["init", "-q", "-b", "main"]);
    fs::write(src.join("s.txt"), "s\n").expect("write");
    r.git_in(&src, &["add", "."]);
    r.git_in(&src, &["commit", "-q", "-m", "s"]);
    let src_s = src.to_str().expect("utf-8");
    r.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        src_s,
        "sub",
    ]);
    r.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        src_s,
        "other",
    ]);
    r.commit("subs");
    assert_eq!(r.check(), (vec![], NATIVE));
    // Dirty content, untracked content: not listed.
    fs::write(r.root.join("sub/s.txt"), "changed\n").expect("write");
    fs::write(r.root.join("sub/new.txt"), "n\n").expect("write");
    assert_eq!(r.check(), (vec![], NATIVE));
    // A new commit inside: ` M`; then staged: `M `.
    r.git_in(&r.root.join("sub"), &["commit", "-q", "-am", "inner"]);
    assert_eq!(r.check(), (lines(&[" M sub"]), NATIVE));
    r.git(&["add", "sub"]);
    assert_eq!(r.check(), (lines(&["M  sub"]), NATIVE));
    // Not checked out (an empty directory): unchanged; gone: ` D`; a file in its place: ` T`.
    fs::remove_dir_all(r.root.join("other")).expect("rm");
    assert_eq!(r.check(), (lines(&[" D other", "M  sub"]), NATIVE));
    fs::create_dir(r.root.join("other")).expect("mkdir");
    assert_eq!(r.check(), (lines(&["M  sub"]), NATIVE));
    fs::remove_dir(r.root.join("other")).expect("rmdir");
    fs::write(r.root.join("other"), "f\n").expect("write");
    assert_eq!(r.check(), (lines(&[" T other", "M  sub"]), NATIVE));
}

#[test]
fn merge_conflicts() {
    let r = base_repo();
    r.write("both.txt", "base\n");
    r.write("theirs-deletes.txt", "base\n");
    r.write("ours-deletes.txt", "base\n");
    r.commit("base");
    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("both.txt", "other\n");
    r.write("added.txt", "other\n");
    r.write("ours-deletes.txt", "other\n");
    fs::remove_file(r.root.join("theirs-deletes.txt")).expect("rm");
    r.commit("other");
    r.git(&["checkout", "-q", "main"]);
    r.write("both.txt", "main\n");
    r.write("added.txt", "main\n");
    r.write("theirs-deletes.txt", "main\n");
    fs::remove_file(r.root.join("ours-deletes.txt")).expect("rm");
    r.commit("main");
    assert!(
        !r.try_git(&["merge", "-q", "other"]),
        "the merge should conflict"
    );
    r.write("a.txt", "edited during the merge\n");
    assert_eq!(
        r.check(),
        (
            lines(&[
                " M a.txt",
                "AA added.txt",
                "UU both.txt",
                "DU ours-deletes.txt",
                "UD theirs-deletes.txt"
            ]),
            NATIVE
        )
    );
}

#[test]
fn detached_head_no_commits_and_linked_worktrees() {
    let r = base_repo();
    r.write("a.txt", "second\n");
    r.commit("second");
    r.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    dirty(&r);
    let (_, engine) = r.check();
    assert_eq!(engine, NATIVE);
    let s = r.snap_in(&r.root, Engine::Auto);
    assert_eq!((s.branch.as_str(), s.commits.len()), ("HEAD", 1));

    let fresh = Repo::new();
    fresh.write("staged.txt", "s\n");
    fresh.write("loose.txt", "l\n");
    fresh.git(&["add", "staged.txt"]);
    assert_eq!(
        fresh.check(),
        (lines(&["A  staged.txt", "?? loose.txt"]), NATIVE)
    );
    assert!(fresh.snap_in(&fresh.root, Engine::Auto).commits.is_empty());

    let wt = r.base.join("wt");
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        wt.to_str().expect("utf-8"),
        "main",
    ]);
    fs::write(wt.join("a.txt"), "in the worktree\n").expect("write");
    fs::write(wt.join("new.txt"), "n\n").expect("write");
    assert_eq!(
        r.check_in(&wt),
        (lines(&[" M a.txt", "?? new.txt"]), NATIVE)
    );
    assert_eq!(r.snap_in(&wt, Engine::Auto).branch, "side");
}

#[test]
fn untracked_cache_and_fsmonitor() {
    let r = base_repo();
    r.git(&["config", "core.untrackedCache", "true"]);
    r.git(&["update-index", "--untracked-cache"]);
    r.git(&["status", "--short"]);
    dirty(&r);
    r.write("d/e/more.txt", "m\n");
    assert_eq!(
        r.check(),
        (
            lines(&[
                " M a.txt",
                " D d/e/c.txt",
                "A  d/staged.txt",
                "?? d/e/more.txt",
                "?? new/"
            ]),
            NATIVE
        )
    );
    // An fsmonitor hook that says "everything may have changed": git uses it, we need not.
    let hook = r.base.join("fsmonitor-hook");
    fs::write(&hook, "#!/bin/sh\nprintf 'token\\0/\\0'\n").expect("hook");
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).expect("chmod");
    r.git(&["config", "core.fsmonitor", hook.to_str().expect("utf-8")]);
    r.git(&["config", "core.fsmonitorHookVersion", "2"]);
    r.git(&["status", "--short"]);
    r.write("d/b.txt", "changed under fsmonitor\n");
    let (status, engine) = r.check();
    assert!(status.contains(&" M d/b.txt".to_owned()), "{status:?}");
    assert_eq!(engine, NATIVE);
}

#[test]
fn index_versions_2_3_and_4() {
    for version in ["2", "3", "4"] {
        let r = base_repo();
        r.write("ita.txt", "i\n");
        r.git(&["add", "-N", "ita.txt"]); // an extended flag: needs version 3 or more
        r.git(&["update-index", "--index-version", version]);
        // (No deleted file: with an intent-to-add entry it could pair into a rename, which git answers.)
        r.write("a.txt", "alpha changed\n");
        r.write("d/staged.txt", "s\n");
        r.git(&["add", "d/staged.txt"]);
        r.write("new/untracked.txt", "u\n");
        let header = fs::read(r.root.join(".git/index")).expect("index");
        let written = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        assert!(
            written >= 3 || version == "2",
            "v{version} written as v{written}"
        );
        assert_eq!(
            r.check(),
            (
                lines(&[" M a.txt", "A  d/staged.txt", " A ita.txt", "?? new/"]),
                NATIVE
            ),
            "index version {version}"
        );
    }
}

#[test]
fn crlf_and_eol_conversion() {
    let r = Repo::new();
    r.write(
        ".gitattributes",
        "*.txt text=auto\n*.crlf text eol=crlf\n*.bin binary\n",
    );
    r.write("lf.txt", "one\ntwo\n");
    r.write("w.crlf", "one\ntwo\n");
    r.write("data.bin", "raw\r\nbytes\n");
    r.commit("init");
    // Checked out again with CRLF, content unchanged: clean for git.
    fs::remove_file(r.root.join("w.crlf")).expect("rm");
    r.git(&["checkout", "--", "w.crlf"]);
    assert_eq!(
        fs::read(r.root.join("w.crlf")).expect("read"),
        b"one\r\ntwo\r\n"
    );
    fs::write(r.root.join("w.crlf"), b"one\r\ntwo\r\n").expect("touch");
    // An LF file edited: compared without conversion (no CR), natively.
    r.write("lf.txt", "one\ntwo\nthree\n");
    let (status, _) = r.check();
    assert_eq!(status, lines(&[" M lf.txt"]));
    // core.autocrlf and a file that now holds CRLF: its size moved, so it is modified for git whatever the
    // conversion; the same size with a CR needs the conversion: git answers.
    r.git(&["config", "core.autocrlf", "true"]);
    fs::write(r.root.join("lf.txt"), b"one\r\ntwo\r\n").expect("write");
    assert_eq!(r.check().0, lines(&[" M lf.txt"]));
    r.commit("crlf");
    fs::write(r.root.join("lf.txt"), b"one\r\ntwo\r\n").expect("rewrite");
    // Its stat data moved for certain (an mtime in another second than the index entry's), so the content is
    // compared and the CR needs the conversion. Not `check()`: once git refreshed the index the stat data
    // matches again and the native engine rightly answers; which of the two happens within the same second
    // depends on the clock.
    let ten_s_ago = std::time::SystemTime::now() - Duration::from_secs(10);
    fs::File::options()
        .write(true)
        .open(r.root.join("lf.txt"))
        .and_then(|f| f.set_modified(ten_s_ago))
        .expect("set mtime");
    let s = r.snap_in(&r.root, Engine::Auto);
    assert_eq!(s.status_lines, r.oracle(&r.root));
    assert_eq!(s.status_lines, Vec::<String>::new());
    assert_eq!(s.status_engine, Some(CLI));
}

#[test]
fn quoted_and_unusual_names() {
    let r = Repo::new();
    let names = [
        "a b.txt",
        "ünï.txt",
        "tab\there.txt",
        "quo\"te.txt",
        "back\\slash.txt",
        "dir with space/f.txt",
        "-dash.txt",
    ];
    for n in names {
        r.write(n, "x\n");
    }
    r.commit("init");
    for n in names {
        r.write(n, "changed\n");
    }
    r.write("new ü/x.txt", "n\n");
    r.write("new\nline.txt", "n\n");
    let (status, engine) = r.check();
    assert_eq!(engine, NATIVE);
    assert!(
        status.contains(&" M \"\\303\\274n\\303\\257.txt\"".to_owned()),
        "{status:?}"
    );
    r.git(&["config", "core.quotePath", "false"]);
    let (status, _) = r.check();
    assert!(status.contains(&" M ünï.txt".to_owned()), "{status:?}");
    // Paths relative to a subdirectory.
    let (status, _) = r.check_in(&r.root.join("dir with space"));
    assert!(
        status.contains(&" M \"../a b.txt\"".to_owned()),
        "{status:?}"
    );
}

#[test]
fn fifos_and_sockets_are_never_untracked() {
    let r = base_repo();
    for p in ["fifo", "only-fifo/f", "d/fifo"] {
        let path = r.root.join(p);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        assert!(
            git::command("mkfifo")
                .arg(&path)
                .status()
                .expect("mkfifo")
                .success()
        );
    }
    assert_eq!(r.check(), (vec![], NATIVE));
}

#[test]
fn broken_repositories_are_a_finding_that_says_why() {
    // A `.git` file pointing nowhere.
    let r = Repo::bare_dirs();
    fs::write(
        r.root.join(".git"),
        "gitdir: /nonexistent/.git/worktrees/w\n",
    )
    .expect("write");
    let e = r.snapshot_in(&r.root, Engine::Auto).expect_err("broken");
    assert_eq!(e.kind, GitErrorKind::Broken);
    assert!(e.message.contains("does not exist"), "{e}");
    let (block, findings) = preview(&r, &[]);
    assert!(block.is_none());
    assert!(has_finding(&findings, "git-unreadable"), "{findings}");

    // A linked worktree whose main repository is gone.
    let main = base_repo();
    let wt = main.base.join("wt");
    main.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        wt.to_str().expect("utf-8"),
    ]);
    fs::remove_dir_all(main.root.join(".git")).expect("rm main");
    let e = main.snapshot_in(&wt, Engine::Auto).expect_err("broken");
    assert_eq!(e.kind, GitErrorKind::Broken);
    assert!(e.message.contains(".git"), "{e}");
    // check reports it too, without failing the build.
    let out = git::command(BIN)
        .args(["check", "--json", "--cwd"])
        .arg(&wt)
        .env_clear()
        .envs(main.vars())
        .output()
        .expect("check");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(has_finding(&findings, "git-unreadable"), "{findings}");
}
