//! Git snapshot benchmarks (`cargo bench --bench git_snapshot`).
//!
//! P6 (`../shared/spec/quality.md`): the snapshot must be no slower than `git status --short` plus
//! `git log -n 5` through the git CLI on the same tree. Both are measured here in the same run:
//! `snapshot` (in process) against `git_cli_status_and_log` (two processes, as the reference CLI
//! runs them) and `git_cli_status` alone. `scripts/bench-git.sh` compares whole processes.
//!
//! The standard tree is `$CC_BENCH_TREE` (default `/tmp/cc-bench/standard`; a `repo/` inside it is
//! found too). When it is missing it is made with `../shared/bench/make-monorepo` (deterministic).
//! The large tree (`--files 100000 --dirs 6000 --rules 1000`) is measured when
//! `$CC_BENCH_LARGE_TREE` (default `/tmp/cc-bench/large`) already exists; it is never made here.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;

use claude_context::git::{GitEnv, GitOptions, GitSnapshot, render_block, snapshot, status_text};
use divan::Bencher;

fn main() {
    // Set up (and say what was set up) before divan prints its table.
    LazyLock::force(&STANDARD);
    divan::main();
}

static STANDARD: LazyLock<PathBuf> = LazyLock::new(standard_tree);

static LARGE: LazyLock<Option<PathBuf>> = LazyLock::new(|| {
    let dir = std::env::var_os("CC_BENCH_LARGE_TREE")
        .map_or_else(|| PathBuf::from("/tmp/cc-bench/large"), PathBuf::from);
    find_repo(&dir)
});

/// `dir` itself when it is a work tree, else `dir/repo` when that is one.
fn find_repo(dir: &Path) -> Option<PathBuf> {
    [dir.to_path_buf(), dir.join("repo")]
        .into_iter()
        .find(|d| d.join(".git").exists())
}

fn standard_tree() -> PathBuf {
    let dir = std::env::var_os("CC_BENCH_TREE")
        .map_or_else(|| PathBuf::from("/tmp/cc-bench/standard"), PathBuf::from);
    if let Some(repo) = find_repo(&dir) {
        eprintln!("git_snapshot bench: tree {}", repo.display());
        return repo;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/make-monorepo");
    let repo = dir.join("repo");
    eprintln!(
        "git_snapshot bench: making the standard tree in {}",
        repo.display()
    );
    std::fs::create_dir_all(&dir).expect("create the bench directory");
    let status = Command::new("python3")
        .arg(&script)
        .arg(&repo)
        .arg("--home")
        .arg(dir.join("home"))
        .stdout(Stdio::null())
        .status()
        .expect("run make-monorepo");
    assert!(status.success(), "make-monorepo failed");
    repo
}

fn opts() -> GitOptions {
    GitOptions::new(GitEnv::from_vars(std::env::vars_os()))
}

fn take(tree: &Path) -> GitSnapshot {
    match snapshot(tree, &opts()) {
        Ok(Some(s)) => s,
        other => panic!("no snapshot of {}: {other:?}", tree.display()),
    }
}

fn git(tree: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(tree)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?} failed");
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn snapshot_standard(b: Bencher) {
    let tree = &*STANDARD;
    git(tree, &["status", "--short"]); // a refreshed index, as a user's shell leaves it
    b.bench(|| take(black_box(tree)));
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn git_cli_status_and_log_standard(b: Bencher) {
    let tree = &*STANDARD;
    b.bench(|| {
        git(tree, &["status", "--short"]);
        git(tree, &["log", "-n", "5", "--oneline"]);
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn git_cli_status_standard(b: Bencher) {
    let tree = &*STANDARD;
    b.bench(|| git(tree, &["status", "--short"]));
}

#[divan::bench(sample_count = 15, sample_size = 1)]
fn snapshot_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else {
        eprintln!("git_snapshot bench: no large tree; skipping snapshot_large");
        return;
    };
    git(tree, &["status", "--short"]);
    b.bench(|| take(black_box(tree)));
}

#[divan::bench(sample_count = 15, sample_size = 1)]
fn git_cli_status_and_log_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    b.bench(|| {
        git(tree, &["status", "--short"]);
        git(tree, &["log", "-n", "5", "--oneline"]);
    });
}

/// Formatting only: the block for the standard tree's snapshot (400 status lines, cut at 2000 characters).
#[divan::bench]
fn render(b: Bencher) {
    let s = take(&STANDARD);
    b.bench(|| render_block(black_box(&s)));
}

#[divan::bench]
fn status_text_300_lines(b: Bencher) {
    let lines: Vec<String> = (1..=300)
        .map(|i| format!("?? untracked_file_with_a_longish_name_{i:03}.txt"))
        .collect();
    b.bench(|| status_text(black_box(&lines), None));
}
