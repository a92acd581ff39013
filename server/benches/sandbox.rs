//! The Bash sandbox's cost per command (issue 25): `true` and `git status` (in a small real
//! repository) run through the Bash tool as a session runs them — the reaper (this build's
//! `claude-context __reap`), the output pipe, the permission answer — with the sandbox
//! (bubblewrap: mount, PID, network and IPC namespaces, the binds of `tools/sandbox/`) and
//! without it, side by side in one run.
//!
//! First the percentiles the issue asks for (p50, p90, p99 of `CC_SANDBOX_ROUNDS` calls each,
//! default 200, the four kinds interleaved call by call so that the machine's load falls on all
//! alike), then divan's own figures (fastest, median, mean). Run: `cargo bench --bench sandbox`.
//! Needs bubblewrap (`apt install bubblewrap`); without it, only the plain figures are measured.
#![allow(clippy::disallowed_methods)] // reason: benches drive real processes and read their own environment.
#![allow(clippy::print_stdout)] // reason: a harness=false bench reports on stdout.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use claude_context::tools::{
    Asker, CancellationToken, Decision, DiskOnly, PermissionRequest, Tools, ToolsConfig, Workspace,
};
use futures::future::BoxFuture;
use serde_json::json;

/// Says yes to everything: the cost measured is the command's, not a person's.
struct Yes;

impl Asker for Yes {
    fn ask(&self, _request: PermissionRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async { Decision::AllowSession })
    }
}

/// A small git repository (20 files, one commit, one change) in a temp folder.
struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("repo");
    std::fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..20 {
        std::fs::write(
            root.join(format!("src/f{i}.rs")),
            format!("fn f{i}() {{}}\n"),
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "commit",
        "-qm",
        "one",
    ]);
    std::fs::write(root.join("src/f0.rs"), "fn changed() {}\n").unwrap();
    Repo { _dir: dir, root }
}

static REPO: LazyLock<Repo> = LazyLock::new(repo);
static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// The session's tools in `root`, sandboxed or not, with this build's reaper.
fn tools(root: &Path, sandboxed: bool) -> Tools {
    let mut c = ToolsConfig::new(Workspace::new([root.to_path_buf()], []));
    c.bash.reaper = Some(PathBuf::from(env!("CARGO_BIN_EXE_claude-context")));
    c.bash.sandbox.enabled = sandboxed;
    Tools::new(c, Arc::new(DiskOnly), Arc::new(Yes))
}

static PLAIN: LazyLock<Tools> = LazyLock::new(|| tools(&REPO.root, false));
static SANDBOXED: LazyLock<Tools> = LazyLock::new(|| tools(&REPO.root, true));

fn run(t: &Tools, command: &str) -> Duration {
    let started = Instant::now();
    let o = RT.block_on(t.run(
        "Bash",
        &json!({ "command": command }),
        &CancellationToken::new(),
    ));
    let took = started.elapsed();
    assert!(!o.is_error, "{command}: {}", o.content);
    took
}

fn sandbox_works() -> bool {
    match claude_context::tools::find_bwrap() {
        Some(b) => match RT.block_on(claude_context::tools::probe_sandbox(&b)) {
            Ok(()) => true,
            Err(e) => {
                println!("no sandbox here ({e}): only the plain figures");
                false
            }
        },
        None => {
            println!("bubblewrap is not installed: only the plain figures");
            false
        }
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn report() {
    let rounds: usize = std::env::var("CC_SANDBOX_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let sandbox = sandbox_works();
    let kinds: Vec<(&str, &Tools, &str)> = [
        ("true, outside", &*PLAIN, "true"),
        ("true, sandboxed", &*SANDBOXED, "true"),
        ("git status, outside", &*PLAIN, "git status --short"),
        ("git status, sandboxed", &*SANDBOXED, "git status --short"),
    ]
    .into_iter()
    .filter(|(name, _, _)| sandbox || name.ends_with("outside"))
    .collect();
    // Warm up each (the first sandboxed call probes bubblewrap and makes the private /tmp).
    for (_, t, c) in &kinds {
        run(t, c);
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); kinds.len()];
    for _ in 0..rounds {
        for (i, (_, t, c)) in kinds.iter().enumerate() {
            samples[i].push(run(t, c));
        }
    }
    println!("per command, {rounds} calls each, interleaved:");
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>9}",
        "", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut p = Vec::new();
    for ((name, _, _), s) in kinds.iter().zip(samples.iter_mut()) {
        let (p50, p90, p99) = (percentile(s, 0.5), percentile(s, 0.9), percentile(s, 0.99));
        println!(
            "{name:<24} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            ms(p50),
            ms(p90),
            ms(p99),
            ms(*s.last().unwrap())
        );
        p.push((p50, p99));
    }
    if sandbox {
        for (what, plain, boxed) in [("true", 0, 1), ("git status", 2, 3)] {
            println!(
                "the sandbox adds to {what}: {:+.2} ms at p50, {:+.2} ms at p99",
                ms(p[boxed].0) - ms(p[plain].0),
                ms(p[boxed].1) - ms(p[plain].1)
            );
        }
    }
}

fn main() {
    report();
    divan::main();
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn true_outside() {
    run(&PLAIN, "true");
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn true_sandboxed() {
    run(&SANDBOXED, "true");
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn git_status_outside() {
    run(&PLAIN, "git status --short");
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn git_status_sandboxed() {
    run(&SANDBOXED, "git status --short");
}
