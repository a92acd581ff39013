//! Language-server benchmarks on the standard tree (quality.md): P2 (warm `context/preview`
//! round trip), P3 (`didChange` of a CLAUDE.md then `context/preview`), P5 (resident memory with
//! 200 open documents), P8 (`initialize` answered after process start).
//!
//! The real release binary is spawned and driven over stdio by the e2e harness, so the figures
//! include JSON-RPC framing and pipes. The machine is small and shared: every figure is a
//! percentile over many iterations, with a baseline measured in the same run.
//!
//! Needs the standard tree: `python3 ../shared/bench/make-monorepo /tmp/cc-bench/standard
//! --home /tmp/cc-bench/standard-home` (or set `CC_BENCH_TREE` to its JSON description). Run with
//! `cargo bench --bench lsp`. To compare with another build in the same run (interleaved rounds),
//! point `CC_BASELINE_BIN` at its binary and set `CC_BENCH_ROUNDS`, e.g. main's release build made
//! in a separate worktree: `git worktree add /tmp/base main && (cd /tmp/base && cargo build
//! --release)`, then `CC_BASELINE_BIN=/tmp/base/target/release/claude-context CC_BENCH_ROUNDS=3
//! cargo bench --bench lsp`.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.
#![allow(clippy::print_stdout)] // reason: a harness=false bench reports on stdout.

#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{Server, uri};
use serde_json::{Value, json};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn show(name: &str, samples: &mut [Duration]) -> (Duration, Duration) {
    let p50 = percentile(samples, 0.5);
    let p99 = percentile(samples, 0.99);
    println!(
        "{name}: n={} p50={:.3} ms p90={:.3} ms p99={:.3} ms max={:.3} ms",
        samples.len(),
        p50.as_secs_f64() * 1e3,
        percentile(samples, 0.9).as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3,
    );
    (p50, p99)
}

struct Tree {
    root: PathBuf,
    home: PathBuf,
    samples: Vec<String>,
}

fn tree() -> Option<Tree> {
    let desc =
        std::env::var("CC_BENCH_TREE").unwrap_or_else(|_| "/tmp/cc-bench/standard.json".into());
    let text = std::fs::read_to_string(&desc).ok()?;
    let v: Value = serde_json::from_str(text.lines().last()?).ok()?;
    Some(Tree {
        root: PathBuf::from(v["root"].as_str()?),
        // Older descriptions have no "home": make-monorepo's default is `<root>-home`.
        home: v["home"].as_str().map_or_else(
            || PathBuf::from(format!("{}-home", v["root"].as_str().unwrap_or(""))),
            PathBuf::from,
        ),
        samples: v["samples"]
            .as_array()?
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
    })
}

fn spawn(t: &Tree, bin: &Path) -> Server {
    let managed = std::env::temp_dir().join("cc-bench-no-managed");
    Server::spawn(
        bin,
        &t.home,
        &managed,
        t.root.parent().unwrap_or(Path::new("/")),
    )
}

fn initialize_params(root: &Path) -> Value {
    json!({
        "processId": null,
        "rootUri": uri(root),
        "workspaceFolders": [{"uri": uri(root), "name": "standard"}],
        "capabilities": {"workspace": {"configuration": true}}
    })
}

/// Waits until the preview of `doc` has its git block.
fn warm(s: &mut Server, doc: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p = s.preview(Some(doc));
        if p["gitPending"] == false || Instant::now() > deadline {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The figures of one binary.
struct Summary {
    p2: (Duration, Duration),
    p3: (Duration, Duration),
    p5_mb: f64,
    p8: Duration,
}

fn main() {
    let Some(t) = tree() else {
        println!("lsp bench skipped: no standard tree (see the module docs)");
        return;
    };
    println!("standard tree: {}", t.root.display());
    // A baseline binary (e.g. main's release build) measured in the same run.
    let mut runs = vec![("this build".to_string(), bin())];
    if let Some(base) = std::env::var_os("CC_BASELINE_BIN") {
        runs.push(("baseline".to_string(), PathBuf::from(base)));
    }
    let mut summaries = Vec::new();
    // Interleaved rounds: machine load hits both binaries alike.
    let rounds: usize = std::env::var("CC_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    for round in 0..rounds {
        for (name, bin) in &runs {
            println!("\n== {name} ({}), round {}", bin.display(), round + 1);
            summaries.push((name.clone(), suite(&t, bin)));
        }
    }
    in_process(&t);
    for (name, s) in &summaries {
        println!(
            "summary [{name}]: P2 p50 {:.3} ms p99 {:.3} ms (target 1/5) | P3 p50 {:.3} ms p99 {:.3} ms (target 2) | P5 {:.1} MB (target 50) | P8 p50 {:.1} ms (target 20)",
            s.p2.0.as_secs_f64() * 1e3,
            s.p2.1.as_secs_f64() * 1e3,
            s.p3.0.as_secs_f64() * 1e3,
            s.p3.1.as_secs_f64() * 1e3,
            s.p5_mb,
            s.p8.as_secs_f64() * 1e3,
        );
    }
}

fn suite(t: &Tree, bin: &Path) -> Summary {
    // P8: initialize answered after process start, vs. the process start of `--version`.
    let mut base = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        let out = std::process::Command::new(bin)
            .arg("--version")
            .output()
            .unwrap();
        assert!(out.status.success());
        base.push(start.elapsed());
    }
    show(
        "baseline: `claude-context --version` process, whole run",
        &mut base,
    );
    let mut init = Vec::new();
    for _ in 0..30 {
        let mut s = spawn(t, bin);
        let _ = s.call("initialize", initialize_params(&t.root));
        init.push(s.started.elapsed());
        drop(s);
    }
    let (p8, _) = show("P8 initialize answered after spawn", &mut init);

    // P2: warm preview of the same document.
    let mut s = spawn(t, bin);
    s.call("initialize", initialize_params(&t.root));
    s.notify("initialized", json!({}));
    let doc = t.root.join(&t.samples[0]);
    s.open(&doc, &std::fs::read_to_string(&doc).unwrap_or_default());
    let first = Instant::now();
    let p = warm(&mut s, &doc);
    println!(
        "first preview with git (cold, includes the background git snapshot): {:.1} ms; {} files, {} attachments, {} tokens",
        first.elapsed().as_secs_f64() * 1e3,
        p["files"].as_array().map_or(0, Vec::len),
        p["attachments"].as_array().map_or(0, Vec::len),
        p["totals"]["tokens"]
    );
    let mut samples = Vec::new();
    for _ in 0..2000 {
        let start = Instant::now();
        let _ = s.preview(Some(&doc));
        samples.push(start.elapsed());
    }
    let (p2_50, p2_99) = show(
        "P2 warm context/preview round trip (1 open document)",
        &mut samples,
    );
    // Baseline in the same run: the smallest round trip the server can do (shutdown-free no-op:
    // an unknown method answered -32601).
    let mut rtt = Vec::new();
    for _ in 0..2000 {
        let start = Instant::now();
        let _ = s.request("bench/noop", json!({}));
        rtt.push(start.elapsed());
    }
    show(
        "baseline: JSON-RPC round trip of an unknown method",
        &mut rtt,
    );

    // P3: edit the root CLAUDE.md, then preview.
    let claude = t.root.join("CLAUDE.md");
    let original = std::fs::read_to_string(&claude).unwrap();
    s.open(&claude, &original);
    let lines = original.lines().count() as u32;
    let mut samples = Vec::new();
    for i in 0..500 {
        let text = if i % 2 == 0 { "x" } else { "" };
        let end = if i % 2 == 0 { 0 } else { 1 };
        let start = Instant::now();
        s.change(
            &claude,
            i + 2,
            json!([{"range": {"start": {"line": lines, "character": 0}, "end": {"line": lines, "character": end}}, "text": text}]),
        );
        let p = s.preview(Some(&doc));
        samples.push(start.elapsed());
        assert!(p["files"].is_array());
        if i % 50 == 0 {
            s.drain();
        }
    }
    let (p3_50, p3_99) = show(
        "P3 didChange of CLAUDE.md then context/preview",
        &mut samples,
    );
    s.drain();

    // P5: 200 open documents (source files across the tree, plus instruction files).
    let listing = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(&t.root)
        .output()
        .unwrap();
    let all: Vec<String> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let step = (all.len() / 200).max(1);
    let mut opened = 0;
    for rel in all.iter().step_by(step).take(199) {
        let p = t.root.join(rel);
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        s.open(&p, &text);
        opened += 1;
    }
    let start = Instant::now();
    let p = s.preview(Some(&doc));
    println!(
        "preview with {} open documents (cold after the opens): {:.2} ms; {} attachments",
        opened + 2,
        start.elapsed().as_secs_f64() * 1e3,
        p["attachments"].as_array().map_or(0, Vec::len)
    );
    let mut samples = Vec::new();
    for _ in 0..1000 {
        let start = Instant::now();
        let _ = s.preview(Some(&doc));
        samples.push(start.elapsed());
    }
    show(
        "P2 warm context/preview round trip (201 open documents)",
        &mut samples,
    );
    let mut hovers = Vec::new();
    for rel in all.iter().step_by(step).take(50) {
        let p = t.root.join(rel);
        let start = Instant::now();
        let _ = s.call(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&p)}, "position": {"line": 0, "character": 0}}),
        );
        hovers.push(start.elapsed());
    }
    show(
        "hover on an open source file (201 open documents)",
        &mut hovers,
    );
    let (rss, hwm) = s.memory_kib();
    println!(
        "P5 resident memory with {} open documents: VmRSS {:.1} MB, peak VmHWM {:.1} MB",
        opened + 2,
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let code = s.shutdown().code();
    println!("exit {code:?}");
    Summary {
        p2: (p2_50, p2_99),
        p3: (p3_50, p3_99),
        p5_mb: hwm as f64 / 1024.0,
        p8,
    }
}

/// Where P3's time goes, in process (no pipes, no JSON-RPC): the walk, the lint of CLAUDE.md, a
/// preview cache miss after an edit, and serialising the result.
fn in_process(t: &Tree) {
    use claude_context::fs::RealFs;
    use claude_context::lsp::state::State;
    let vars = [
        ("HOME", t.home.display().to_string()),
        (
            "CLAUDE_CONTEXT_MANAGED_DIR",
            std::env::temp_dir()
                .join("cc-bench-no-managed")
                .display()
                .to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let env = claude_context::host::Host::from_vars(
        vars,
        t.root.clone(),
        "linux".into(),
        "Linux".into(),
        claude_context::host::Clock::System,
    );
    let state = State::new(env);
    state.set_folders(vec![t.root.clone()]);
    let opts = state.options(&t.root);
    let mut walk = Vec::new();
    for _ in 0..300 {
        let start = Instant::now();
        let ctx = claude_context::context::build(&RealFs, &opts);
        walk.push(start.elapsed());
        assert!(!ctx.files.is_empty());
    }
    show("in-process: the walk (context::build)", &mut walk);
    let claude = t.root.join("CLAUDE.md");
    let lint = state.lint_options(&t.root);
    let mut lints = Vec::new();
    for _ in 0..300 {
        let start = Instant::now();
        let _ = claude_context::context::lint_file(&RealFs, &claude, &lint);
        lints.push(start.elapsed());
    }
    show("in-process: lint of CLAUDE.md", &mut lints);
    let doc = t.root.join(&t.samples[0]);
    state.open(
        uri(&doc),
        Some(doc.clone()),
        std::fs::read_to_string(&doc).unwrap_or_default().into(),
        1,
    );
    let mut misses = Vec::new();
    let mut ser = Vec::new();
    for _ in 0..300 {
        state.file_changed(&claude);
        let start = Instant::now();
        let p = state.preview(
            &t.root,
            Some(&doc),
            None,
            None,
            claude_context::lsp::state::GitNow::default,
        );
        misses.push(start.elapsed());
        let start = Instant::now();
        let bytes = serde_json::to_vec(&serde_json::to_value(&*p).unwrap()).unwrap();
        ser.push(start.elapsed());
        assert!(!bytes.is_empty());
    }
    show(
        "in-process: preview after an edit (walk + attach + assemble)",
        &mut misses,
    );
    show(
        "in-process: serialising the preview (to_value + to_vec)",
        &mut ser,
    );
}
