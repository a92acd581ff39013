//! Issue 30's latency goals as divan benches, each beside its baseline in the same run
//! (`cargo bench --bench latency`):
//!
//! * `edit_preview`: in process, the language server's state with CLAUDE.md open: an edit of its
//!   text (`didChange`'s work: [`State::set_text`]) then the preview of a source file
//!   (`context/preview`'s work: [`State::preview`], the git part left out). Beside it, the
//!   preview when nothing changed (a cache hit) and the walk alone (`context::build`: what every
//!   edit of an instruction file redoes at least).
//! * `chat_new`: `chat/new` answered by the release binary over stdio (JSON-RPC framing and pipes
//!   included, as an editor sees it), beside the round trip of a request the server answers at
//!   once (an unknown method: `-32601`), which is the transport's own cost.
//!
//! The tree is `$CC_BENCH_TREE` (default `/tmp/cc-bench/standard`; made by
//! `../shared/bench/make-monorepo`, its home `$CC_BENCH_HOME`, else beside it as `<tree>-home` or
//! `home/`), else a small
//! project made here. The warm preview over the local socket against the cold one is in
//! `cold_walk.rs` (it needs the trees as processes see them).
#![allow(clippy::disallowed_methods)] // reason: benches drive real processes with their own environment.
#![allow(clippy::print_stderr)] // reason: the bench says which tree it measures.

#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use claude_context::lsp::state::{GitNow, State};
use divan::Bencher;
use serde_json::json;

fn main() {
    eprintln!(
        "latency bench: {} (home {})",
        TREE.root.display(),
        TREE.home.display()
    );
    divan::main();
    if let Some(s) = SERVER.lock().unwrap_or_else(|p| p.into_inner()).take() {
        let _ = s.shutdown();
    }
    let _ = std::fs::remove_dir_all(state_dir());
}

/// The server's state folder (transcripts), removed at the end.
fn state_dir() -> PathBuf {
    std::env::temp_dir().join(format!("cc-latency-state-{}", std::process::id()))
}

struct Tree {
    root: PathBuf,
    home: PathBuf,
    managed: PathBuf,
    /// A source file deep in the tree (the document previewed).
    doc: PathBuf,
    _made: Option<tempfile::TempDir>,
}

static TREE: LazyLock<Tree> = LazyLock::new(|| {
    let dir = std::env::var_os("CC_BENCH_TREE")
        .map_or_else(|| PathBuf::from("/tmp/cc-bench/standard"), PathBuf::from);
    let found = if dir.join(".git").exists() {
        Some((
            dir.clone(),
            PathBuf::from(format!("{}-home", dir.display())),
        ))
    } else if dir.join("repo/.git").exists() {
        Some((dir.join("repo"), dir.join("home")))
    } else {
        None
    };
    if let Some((root, home)) = found {
        let home = std::env::var_os("CC_BENCH_HOME").map_or(home, PathBuf::from);
        let out = std::process::Command::new("git")
            .current_dir(&root)
            .args(["ls-files", "*.ts"])
            .output()
            .expect("git ls-files");
        let deepest = String::from_utf8_lossy(&out.stdout)
            .lines()
            .max_by_key(|l| l.matches('/').count())
            .map(str::to_owned)
            .expect("a .ts file");
        return Tree {
            doc: root.join(deepest),
            managed: home.join("no-managed"),
            root,
            home,
            _made: None,
        };
    }
    eprintln!(
        "latency bench: no tree at {} (CC_BENCH_TREE): a small project made here",
        dir.display()
    );
    let made = tempfile::tempdir().expect("tempdir");
    let base = made.path().canonicalize().expect("real path");
    let root = base.join("repo");
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("CLAUDE.md", "# Project\n\n@docs/style.md\n");
    write("docs/style.md", "Style.\n");
    for i in 0..20 {
        write(
            &format!(".claude/rules/r{i}.md"),
            &format!("---\npaths: src/m{i}/**\n---\nRule {i}.\n"),
        );
        write(&format!("src/m{i}/a.ts"), "export {};\n");
    }
    Tree {
        doc: root.join("src/m3/a.ts"),
        home: base.join("home"),
        managed: base.join("managed"),
        root,
        _made: Some(made),
    }
});

/// The language server's state on the tree, CLAUDE.md and the document open.
struct InProc {
    state: State,
    claude_uri: String,
    texts: [Arc<str>; 2],
    version: AtomicI32,
}

static IN_PROC: LazyLock<InProc> = LazyLock::new(|| {
    let t = &*TREE;
    let vars = [
        ("HOME", t.home.display().to_string()),
        (
            "CLAUDE_CONTEXT_MANAGED_DIR",
            t.managed.display().to_string(),
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
    let claude = t.root.join("CLAUDE.md");
    let text = std::fs::read_to_string(&claude).unwrap_or_default();
    let claude_uri = harness::uri(&claude);
    state.open(claude_uri.clone(), Some(claude), text.clone().into(), 1);
    state.open(
        harness::uri(&t.doc),
        Some(t.doc.clone()),
        std::fs::read_to_string(&t.doc).unwrap_or_default().into(),
        1,
    );
    InProc {
        state,
        claude_uri,
        texts: [
            format!("{text}\nOne more line.\n").into(),
            format!("{text}\nAnother line.\n").into(),
        ],
        version: AtomicI32::new(1),
    }
});

fn preview(p: &InProc) {
    let t = &*TREE;
    black_box(
        p.state
            .preview(&t.root, Some(&t.doc), None, None, GitNow::default),
    );
}

mod edit_preview {
    use super::*;

    /// An edit of CLAUDE.md (its text alternates between two versions), then the preview.
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn edit_then_preview(b: Bencher) {
        let p = &*IN_PROC;
        b.bench(|| {
            let v = p.version.fetch_add(1, Ordering::Relaxed) + 1;
            let text = p.texts[(v % 2) as usize].clone();
            p.state.set_text(&p.claude_uri, text, v);
            preview(p)
        });
    }

    /// Baseline: the preview with nothing changed (the cached one).
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn preview_unchanged(b: Bencher) {
        let p = &*IN_PROC;
        preview(p);
        b.bench(|| preview(p));
    }

    /// Baseline: the walk alone, from the disk (every instruction file parsed again).
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn walk_only(b: Bencher) {
        let p = &*IN_PROC;
        let opts = p.state.options(&TREE.root);
        b.bench(|| {
            claude_context::context::build(&claude_context::fs::RealFs, black_box(&opts))
                .files
                .len()
        });
    }
}

/// The release binary as a language server on the tree, initialised, its first walk done.
static SERVER: LazyLock<Mutex<Option<harness::Server>>> = LazyLock::new(|| {
    let t = &*TREE;
    let state_s = state_dir().display().to_string();
    let bin = Path::new(env!("CARGO_BIN_EXE_claude-context"));
    let mut s = harness::Server::spawn_with(
        bin,
        &t.home,
        &t.managed,
        t.root.parent().unwrap_or(Path::new("/")),
        &[
            // No request reaches the API in `chat/new`; the address only has to be valid.
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-key"),
            ("XDG_STATE_HOME", &state_s),
        ],
    );
    s.initialize(&t.root, json!({}));
    // The first session pays for the walk and the first git snapshot.
    s.call("chat/new", json!({}));
    Mutex::new(Some(s))
});

mod chat_new {
    use super::*;

    /// `chat/new` from the client: request written, answer read.
    #[divan::bench(sample_count = 100, sample_size = 1)]
    fn chat_new(b: Bencher) {
        let mut g = SERVER.lock().unwrap_or_else(|p| p.into_inner());
        let s = g.as_mut().expect("server");
        b.bench_local(|| {
            let r = s.call("chat/new", json!({}));
            assert!(r["sessionId"].is_string(), "{r}");
        });
    }

    /// Baseline: a request answered at once (`-32601`), the same pipes and framing.
    #[divan::bench(sample_count = 100, sample_size = 1)]
    fn round_trip(b: Bencher) {
        let mut g = SERVER.lock().unwrap_or_else(|p| p.into_inner());
        let s = g.as_mut().expect("server");
        b.bench_local(|| {
            let r = s.request("bench/nothing", json!({}));
            assert!(r.get("error").is_some(), "{r}");
        });
    }
}
