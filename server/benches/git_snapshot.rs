//! Git snapshot benchmarks (`cargo bench --bench git_snapshot`).
//!
//! P6 (`../shared/spec/quality.md`): the snapshot must be no slower than `git status --short` plus
//! `git log -n 5` through the git CLI on the same tree, and on a running server a new session's
//! snapshot takes at most 5 ms. All are measured here in the same run: `snapshot` (in process, a
//! full walk) against `git_cli_status_and_log` (two processes, as the reference CLI runs them) and
//! `git_cli_status` alone; and the server's way, a `StatusCache` kept current from notifications:
//! `cache_unchanged` (nothing reported since the last snapshot), `cache_one_change` (one file
//! reported changed: its directory is listed and stat'ed again) and `cache_index_rewritten` (the
//! index rewritten, as a prompt's `git status` does: it is parsed again and compared entry by
//! entry). `scripts/bench-git.sh` compares whole processes. The trees are not modified (the index
//! is rewritten with its own bytes and mtime).
//!
//! The standard tree is `$CC_BENCH_TREE` (default `/tmp/cc-bench/standard`; a `repo/` inside it is
//! found too). When it is missing it is made with `../shared/bench/make-monorepo` (deterministic).
//! The large tree (`--files 100000 --dirs 6000 --rules 1000`) is measured when
//! `$CC_BENCH_LARGE_TREE` (default `/tmp/cc-bench/large`) already exists; it is never made here.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::LazyLock;

use claude_context::git::{
    GitEnv, GitOptions, GitSnapshot, StatusCache, render_block, snapshot, status_text,
};
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
    let status = claude_context::git::command("python3")
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
    let ok = claude_context::git::command("git")
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

/// A cache that has taken its first (full) snapshot.
fn warm_cache(tree: &Path) -> StatusCache {
    let cache = StatusCache::new(tree.to_path_buf(), opts());
    assert!(cache.snapshot().expect("snapshot").is_some());
    cache
}

/// A deep tracked file of the tree (the directory the cache redoes).
fn deep_file(tree: &Path) -> PathBuf {
    let out = claude_context::git::command("git")
        .current_dir(tree)
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    let names = String::from_utf8_lossy(&out.stdout).into_owned();
    let deepest = names
        .split('\0')
        .filter(|n| !n.is_empty())
        .max_by_key(|n| n.matches('/').count())
        .expect("a tracked file")
        .to_owned();
    tree.join(deepest)
}

/// Rewrites the index with its own bytes and modification time: its identity (inode, ctime) changes as when git
/// rewrites it, the tree's state does not.
fn rewrite_index(tree: &Path) {
    let index = tree.join(".git/index");
    let bytes = std::fs::read(&index).expect("read index");
    let mtime = std::fs::metadata(&index)
        .and_then(|m| m.modified())
        .expect("mtime");
    let tmp = tree.join(".git/index.bench-tmp");
    std::fs::write(&tmp, &bytes).expect("write index copy");
    let f = std::fs::File::options()
        .write(true)
        .open(&tmp)
        .expect("open copy");
    f.set_modified(mtime).expect("set mtime");
    std::fs::rename(&tmp, &index).expect("replace index");
}

fn bench_cache(b: Bencher, tree: &Path, what: &str) {
    let cache = warm_cache(tree);
    let file = deep_file(tree);
    match what {
        "unchanged" => b.bench(|| cache.snapshot()),
        "one_change" => b.bench(|| {
            cache.changed([file.clone()]);
            cache.snapshot()
        }),
        _ => b
            .with_inputs(|| rewrite_index(tree))
            .bench_values(|()| cache.snapshot()),
    }
    assert_eq!(
        cache.full_snapshots(),
        1,
        "the cache answered from what it kept ({what})"
    );
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn cache_unchanged_standard(b: Bencher) {
    bench_cache(b, &STANDARD, "unchanged");
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn cache_one_change_standard(b: Bencher) {
    bench_cache(b, &STANDARD, "one_change");
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn cache_index_rewritten_standard(b: Bencher) {
    bench_cache(b, &STANDARD, "index");
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn cache_unchanged_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    bench_cache(b, tree, "unchanged");
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn cache_one_change_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    bench_cache(b, tree, "one_change");
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn cache_index_rewritten_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    bench_cache(b, tree, "index");
}

#[divan::bench(sample_count = 15, sample_size = 1)]
fn git_cli_status_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    b.bench(|| git(tree, &["status", "--short"]));
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

/// P6 on a running server: what a new session pays for its git snapshot, through the language
/// server's state (`State::git_snapshot_now`, the call a session start makes) once file events
/// are trusted: one file reported changed since the last snapshot, then the snapshot.
fn bench_server(b: Bencher, tree: &Path) {
    use claude_context::lsp::state::State;
    let state = State::new(claude_context::host::Host::from_process());
    state.trust_file_events();
    assert!(matches!(state.git_snapshot_now(tree), Ok(Some(_))));
    let file = deep_file(tree);
    b.bench(|| {
        state.git_paths_changed(std::slice::from_ref(&file));
        state.git_snapshot_now(tree)
    });
    assert_eq!(
        state.git_cache(tree).full_snapshots(),
        1,
        "sessions were answered from the kept status"
    );
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn server_session_snapshot_standard(b: Bencher) {
    bench_server(b, &STANDARD);
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn server_session_snapshot_large(b: Bencher) {
    let Some(tree) = LARGE.as_deref() else { return };
    bench_server(b, tree);
}
