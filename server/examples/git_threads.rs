//! Thread count of a long-running process that refreshes a repository's git snapshot over and over: 100 full
//! snapshots under a time limit short enough that many are cut (their walks must stop and exit), then 100 refreshes
//! through a `StatusCache` with one reported change each. Prints `Threads:` of `/proc/self/status` before, at most
//! during, and after. (Issue 7: no thread pile-up on a long-running server.)
//!
//! `cargo run --release --example git_threads -- DIR [--timeout-ms N]`
#![allow(clippy::disallowed_methods)] // reason: tests, benches and examples drive real processes and read their own environment.
#![allow(clippy::print_stdout)] // reason: an example whose output is the measurement.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use claude_context::git::{GitEnv, GitOptions, StatusCache, snapshot};

fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().parse().ok()))
                .flatten()
        })
        .unwrap_or(0)
}

fn main() {
    let mut dir = None;
    let mut timeout_ms = 30u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--timeout-ms" => timeout_ms = args.next().and_then(|n| n.parse().ok()).unwrap_or(30),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let dir = dir.unwrap_or_else(|| std::env::current_dir().expect("current dir"));
    let env = GitEnv::from_vars(std::env::vars_os());
    let before = threads();

    let cut_opts = GitOptions {
        status_timeout: Duration::from_millis(timeout_ms),
        ..GitOptions::new(env.clone())
    };
    let (mut most, mut cut) = (before, 0);
    let t = Instant::now();
    for _ in 0..100 {
        match snapshot(&dir, &cut_opts) {
            Ok(Some(s)) => cut += usize::from(!s.status_complete()),
            other => panic!("no snapshot: {other:?}"),
        }
        most = most.max(threads());
    }
    let full_time = t.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let after_full = threads();

    let cache = StatusCache::new(dir.clone(), GitOptions::new(env));
    let first = cache.snapshot().expect("snapshot").expect("repository");
    let changed = first.work_tree.join("README.md");
    let t = Instant::now();
    for _ in 0..100 {
        cache.changed([changed.clone()]);
        cache.snapshot().expect("snapshot").expect("repository");
        most = most.max(threads());
    }
    let cache_time = t.elapsed();
    let after_cache = threads();
    println!("tree {}", dir.display());
    println!(
        "100 full snapshots, time limit {timeout_ms} ms: {cut} cut by the limit, {:.1} ms each",
        full_time.as_secs_f64() * 10.0
    );
    println!(
        "100 cache refreshes (one reported change each): {:.2} ms each, {} full",
        cache_time.as_secs_f64() * 10.0,
        cache.full_snapshots()
    );
    println!(
        "threads: before {before}, at most {most} during, {after_full} after the full snapshots, {after_cache} after the cache refreshes"
    );
}
