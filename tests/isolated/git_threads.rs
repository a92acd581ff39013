//! Cancellation: a status past its time limit is dropped (no partial lines), its workers see the stop flag and
//! exit, and repeated snapshots never pile threads up. A target of its own: it counts this process's threads, which
//! other tests running in parallel would disturb.
#![allow(clippy::disallowed_methods)] // reason: tests, benches and examples drive real processes and read their own environment.

use crate::git_support;
use std::time::{Duration, Instant};

use claude_context::git::{self, Engine, StatusProblemKind};
use git_support::{Repo, threads_named};

/// The tests count the process's `git-` threads: run one at a time, or one test's snapshot
/// counts as the other's stuck worker (seen on a loaded machine: "a worker is stuck: 1").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn wait_for_no_git_threads() -> usize {
    let t = Instant::now();
    while threads_named("git-") > 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    threads_named("git-")
}

#[test]
fn a_status_past_its_time_limit_is_dropped_and_its_threads_exit() {
    let _serial = one_at_a_time();
    let r = Repo::new();
    for i in 0..3000 {
        r.write(&format!("many/d{}/f{i}.txt", i % 60), "x\n");
    }
    r.commit("many");
    for i in 0..3000 {
        r.write(&format!("many/d{}/f{i}.txt", i % 60), "y\n");
    }
    let mut opts = r.opts(Engine::Auto);
    opts.status_timeout = Duration::from_millis(1);
    let s = git::snapshot(&r.root, &opts).expect("ok").expect("repo");
    let p = s.status_problem.clone().expect("no time for a status");
    assert_eq!(p.kind, StatusProblemKind::TimedOut);
    assert!(s.status_lines.is_empty(), "no partial lines");
    assert_eq!(s.branch, "main");
    let findings = git::findings(&Ok(Some(s)));
    assert_eq!(findings[0].code, "git-status-timeout");
    // The workers saw the stop flag: none is left after a moment.
    assert_eq!(wait_for_no_git_threads(), 0);
    // A new snapshot right after works.
    assert!(
        git::snapshot(&r.root, &r.opts(Engine::Auto))
            .expect("ok")
            .expect("repo")
            .status_complete()
    );
    // 100 snapshots cut by their time limit, one after another: the threads never pile up.
    let mut most = 0;
    for _ in 0..100 {
        let s = git::snapshot(&r.root, &opts).expect("ok").expect("repo");
        assert!(!s.status_complete());
        most = most.max(threads_named("git-"));
    }
    assert!(most <= 16, "{most} git threads alive at once");
    assert_eq!(wait_for_no_git_threads(), 0);
}

/// A FIFO where git reads its excludes or attributes: git itself can block on it forever. The
/// snapshot still ends within its time limit (with the status said to be missing where git
/// would need the file), and no worker is left blocked in an `open` (each read opens without
/// blocking and refuses what is not a regular file).
#[test]
fn a_fifo_where_git_reads_its_excludes_never_holds_a_worker() {
    let _serial = one_at_a_time();
    for place in [".git/info/exclude", ".gitattributes"] {
        let r = Repo::new();
        r.write("a.txt", "changed\n");
        let p = r.root.join(place);
        let _ = std::fs::remove_file(&p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        if !git::command("mkfifo")
            .arg(&p)
            .status()
            .is_ok_and(|s| s.success())
        {
            eprintln!("mkfifo unavailable: {place} not tested");
            continue;
        }
        let mut opts = r.opts(Engine::Auto);
        opts.status_timeout = Duration::from_secs(2);
        let t = Instant::now();
        let s = git::snapshot(&r.root, &opts).expect("ok").expect("repo");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{place}: {:?}",
            t.elapsed()
        );
        if place == ".git/info/exclude" {
            // git reads it for every untracked scan (and blocks): no status can be had.
            assert!(
                !s.status_complete(),
                "{place}: a status was invented: {:?}",
                s.status_lines
            );
            assert!(s.status_lines.is_empty());
        }
        assert_eq!(s.branch, "main");
        assert_eq!(wait_for_no_git_threads(), 0, "{place}: a worker is stuck");
    }
}
