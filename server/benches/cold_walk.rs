//! The cold preview against the syscall floor, and the warm preview from a running server (issue
//! 30; `cargo bench --bench cold_walk`).
//!
//! Measured side by side in one run, on the standard tree and (when it exists) the large one:
//!
//! * `floor`: only the system calls a status must make, a `stat` of every tracked file (through
//!   its directory's handle) and a listing of every tracked directory, spread over 2 or 4
//!   threads, in process (`floor_in_process`) and as a whole process (`floor_process`: this bench
//!   program run again, reading the tracked paths from a list file, as git and we read the index).
//! * `git_status`: `git status --short`, a child process (the figure every ratio is against).
//! * `snapshot`: our git snapshot in process (index, work tree walk, HEAD against the index,
//!   branch and log).
//! * `preview_cold` / `preview_warm`: `claude-context preview --json --cwd DIR --file DEEP`, whole
//!   process, with `--cold`, and with a language server running on the tree (the answer comes
//!   from its watched state over the local socket). `DIR` is the root (`root`) or the deepest
//!   directory's parent (`deep`).
//! * `reference`: Claude Code itself (`$CC_REFERENCE_BIN`, its `claude` binary, e.g. from the npm
//!   package `@anthropic-ai/claude-code@2.1.328`), `claude -p hi` in the same directory, whole
//!   process, against the fake Anthropic server (`tests/fake-api`, answering `ok` at once): what
//!   the reference takes to build the same context and send it, plus one instant answer. It
//!   gets a copy of the tree's `~/.claude` as its home (it writes there).
//!
//! Trees: `$CC_BENCH_TREE` (default `/tmp/cc-bench/standard`, or its `repo/`) and
//! `$CC_BENCH_LARGE_TREE` (default `/tmp/cc-bench/large`), made by `../shared/bench/make-monorepo`
//! (`--files 100000 --dirs 6000 --rules 1000` for the large one); their homes are
//! `$CC_BENCH_HOME` / `$CC_BENCH_LARGE_HOME` (default: `home` beside `repo/`, else `<tree>-home`).
//! A missing tree skips its benches. The trees are not modified.
#![allow(clippy::disallowed_methods)] // reason: benches drive real processes with their own environment.
#![allow(clippy::print_stderr)] // reason: the bench says which trees it measures.

#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::ffi::CString;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use divan::Bencher;
use rustix::fs::{AtFlags, Mode, OFlags, RawDir};

/// Set in the environment of `floor_process`'s child: `<threads>:<list file>`.
const FLOOR_CHILD: &str = "CC_COLD_WALK_FLOOR";

fn main() {
    if let Ok(spec) = std::env::var(FLOOR_CHILD) {
        let (threads, list) = spec.split_once(':').expect("threads:list");
        let dirs = read_list(Path::new(list));
        floor(&dirs, threads.parse().expect("threads"));
        return;
    }
    for t in [&*STANDARD, &*LARGE].into_iter().flatten() {
        eprintln!(
            "cold_walk bench: {} ({} tracked directories), home {}, deep file {}",
            t.root.display(),
            t.dirs.len(),
            t.home.display(),
            t.deep_file.display()
        );
    }
    divan::main();
    if let Some(mut fake) = FAKE.lock().unwrap_or_else(|p| p.into_inner()).take() {
        let _ = fake.child.kill();
        let _ = fake.child.wait();
    }
    for t in [&*STANDARD, &*LARGE].into_iter().flatten() {
        if let Some(s) = t.server.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = s.shutdown();
        }
        let _ = std::fs::remove_file(&t.list);
    }
}

/// A tracked directory: its absolute path and its tracked file names, ready for the system calls.
struct Dir {
    path: CString,
    files: Vec<CString>,
}

struct Tree {
    root: PathBuf,
    home: PathBuf,
    dirs: Vec<Dir>,
    /// `floor_process`'s input: the tracked directories and names, one directory a line.
    list: PathBuf,
    deep_file: PathBuf,
    deep_dir: PathBuf,
    /// A language server on the tree, started by the first warm bench.
    server: std::sync::Mutex<Option<harness::Server>>,
}

static STANDARD: LazyLock<Option<Tree>> = LazyLock::new(|| {
    load(
        "CC_BENCH_TREE",
        "/tmp/cc-bench/standard",
        "CC_BENCH_HOME",
        "std",
    )
});
static LARGE: LazyLock<Option<Tree>> = LazyLock::new(|| {
    load(
        "CC_BENCH_LARGE_TREE",
        "/tmp/cc-bench/large",
        "CC_BENCH_LARGE_HOME",
        "large",
    )
});

fn load(var: &str, default: &str, home_var: &str, tag: &str) -> Option<Tree> {
    let dir = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    let (root, home) = if dir.join(".git").exists() {
        (
            dir.clone(),
            PathBuf::from(format!("{}-home", dir.display())),
        )
    } else if dir.join("repo/.git").exists() {
        (dir.join("repo"), dir.join("home"))
    } else {
        eprintln!(
            "cold_walk bench: no tree at {} ({var}); skipped",
            dir.display()
        );
        return None;
    };
    let home = std::env::var_os(home_var).map_or(home, PathBuf::from);
    let out = Command::new("git")
        .current_dir(&root)
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    let mut dirs: Vec<Dir> = Vec::new();
    let mut last: Option<String> = None;
    let mut deepest = String::new();
    for name in String::from_utf8_lossy(&out.stdout).split('\0') {
        if name.is_empty() {
            continue;
        }
        if name.matches('/').count() > deepest.matches('/').count() {
            deepest = name.to_owned();
        }
        let (d, f) = name.rsplit_once('/').unwrap_or(("", name));
        if last.as_deref() != Some(d) {
            let abs = if d.is_empty() {
                root.clone()
            } else {
                root.join(d)
            };
            dirs.push(Dir {
                path: CString::new(abs.as_os_str().as_encoded_bytes()).expect("no NUL"),
                files: Vec::new(),
            });
            last = Some(d.to_owned());
        }
        if let Some(dir) = dirs.last_mut() {
            dir.files.push(CString::new(f).expect("no NUL"));
        }
    }
    let list = std::env::temp_dir().join(format!("cc-cold-walk-{tag}-{}.list", std::process::id()));
    let mut text = Vec::new();
    for d in &dirs {
        text.extend_from_slice(d.path.as_bytes());
        for f in &d.files {
            text.push(0);
            text.extend_from_slice(f.as_bytes());
        }
        text.push(b'\n');
    }
    std::fs::write(&list, text).expect("write the list");
    let deep_file = root.join(&deepest);
    let deep_dir = deep_file
        .parent()
        .map_or_else(|| root.clone(), Path::to_path_buf);
    Some(Tree {
        root,
        home,
        dirs,
        list,
        deep_file,
        deep_dir,
        server: std::sync::Mutex::new(None),
    })
}

fn read_list(path: &Path) -> Vec<Dir> {
    let bytes = std::fs::read(path).expect("read the list");
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut parts = line.split(|&b| b == 0);
            let path = CString::new(parts.next().unwrap_or_default()).expect("no NUL");
            Dir {
                path,
                files: parts.map(|f| CString::new(f).expect("no NUL")).collect(),
            }
        })
        .collect()
}

/// The floor: each tracked directory opened and listed, each tracked file `fstatat`'ed through
/// the directory's handle, on `threads` threads taking directories from a shared counter.
fn floor(dirs: &[Dir], threads: usize) -> usize {
    let next = AtomicUsize::new(0);
    let found = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 32 * 1024];
                let mut n = 0;
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(d) = dirs.get(k) else { break };
                    let Ok(fd) = rustix::fs::open(
                        d.path.as_c_str(),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                    ) else {
                        continue;
                    };
                    let mut it = RawDir::new(&fd, &mut buf);
                    while let Some(Ok(e)) = it.next() {
                        n += black_box(e.file_name().to_bytes().len());
                    }
                    for f in &d.files {
                        if let Ok(st) =
                            rustix::fs::statat(&fd, f.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                        {
                            n += black_box(st.st_size as usize);
                        }
                    }
                }
                found.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    found.load(Ordering::Relaxed)
}

fn run(mut c: Command) {
    let out = c.stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(out.is_ok_and(|s| s.success()), "{c:?} failed");
}

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_claude-context"))
}

/// `claude-context preview --json` of a session in `cwd` that touched the deep file.
fn preview(t: &Tree, cwd: &Path, cold: bool) -> Command {
    preview_with(bin(), t, cwd, cold)
}

/// The environment is the language server's (`harness::Server::spawn`): a server answers only a
/// client whose git reads the same configuration.
fn preview_with(bin: &Path, t: &Tree, cwd: &Path, cold: bool) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &t.home)
        .env("CLAUDE_CONTEXT_MANAGED_DIR", t.home.join("no-managed"))
        .env("GIT_CEILING_DIRECTORIES", ceiling(t))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CLAUDE_CONTEXT_AUTO_MEMORY", "0")
        .args(["preview", "--json", "--cwd"])
        .arg(cwd)
        .arg("--file")
        .arg(&t.deep_file);
    if cold {
        c.arg("--cold");
    }
    c
}

/// The baseline build (`$CC_BASELINE_BIN`, e.g. main's release binary), measured in the same run.
fn baseline() -> Option<PathBuf> {
    std::env::var_os("CC_BASELINE_BIN").map(PathBuf::from)
}

/// Claude Code's `claude` (`$CC_REFERENCE_BIN`), measured in the same run.
fn reference() -> Option<PathBuf> {
    std::env::var_os("CC_REFERENCE_BIN").map(PathBuf::from)
}

/// The fake Anthropic server the reference talks to, started by the first reference bench.
struct Fake {
    child: std::process::Child,
    base_url: String,
    /// Homes of the reference runs: copies of the trees' `~/.claude`.
    homes: Vec<tempfile::TempDir>,
}

static FAKE: std::sync::Mutex<Option<Fake>> = std::sync::Mutex::new(None);

/// Starts the fake (next to this bench's `claude-context`: `cargo build --release --workspace`
/// builds it) with enough `ok` answers for every run.
fn fake_base_url() -> Option<String> {
    let mut g = FAKE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(f) = g.as_ref() {
        return Some(f.base_url.clone());
    }
    let exe = bin().with_file_name("fake-anthropic");
    if !exe.exists() {
        eprintln!(
            "cold_walk bench: no {} (cargo build --release --workspace); reference skipped",
            exe.display()
        );
        return None;
    }
    let script =
        std::env::temp_dir().join(format!("cc-cold-walk-fake-{}.json", std::process::id()));
    let replies = vec![serde_json::json!({"text": "ok"}); 5_000];
    std::fs::write(&script, serde_json::to_vec(&replies).expect("json")).expect("script");
    let mut child = Command::new(&exe)
        .arg("--script")
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fake-anthropic");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the fake's first line");
    let _ = std::fs::remove_file(&script);
    let v: serde_json::Value = serde_json::from_str(&line).expect("the fake's address");
    let base_url = v["baseUrl"].as_str().expect("baseUrl").to_string();
    *g = Some(Fake {
        child,
        base_url: base_url.clone(),
        homes: Vec::new(),
    });
    Some(base_url)
}

/// A home for the reference: a copy of the tree home's `.claude` (instructions, rules, memory).
fn reference_home(t: &Tree) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
            let (src, dst) = (e.path(), to.join(e.file_name()));
            if e.file_type().is_ok_and(|f| f.is_dir()) {
                copy(&src, &dst);
            } else {
                std::fs::copy(&src, &dst).expect("copy");
            }
        }
    }
    let dir = tempfile::Builder::new()
        .prefix("cc-cold-walk-home-")
        .tempdir()
        .expect("home");
    copy(&t.home.join(".claude"), &dir.path().join(".claude"));
    let path = dir.path().to_path_buf();
    if let Some(f) = FAKE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        f.homes.push(dir);
    }
    path
}

/// `claude -p hi` in `cwd`, against the fake.
fn reference_run(exe: &Path, home: &Path, cwd: &Path, base_url: &str) -> Command {
    let mut c = Command::new(exe);
    c.current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["-p", "hi"]);
    c
}

fn ceiling(t: &Tree) -> &Path {
    t.root.parent().unwrap_or(Path::new("/"))
}

/// The language server on `t`, started once (its first snapshot taken and its watcher in place
/// before the first sample). Its client watches no files (as Neovim 0.11 on Linux): the server
/// watches them itself, the case where it answers over the socket.
fn server(t: &Tree) -> std::sync::MutexGuard<'_, Option<harness::Server>> {
    let mut g = t.server.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        let mut s = harness::Server::spawn(bin(), &t.home, &t.home.join("no-managed"), ceiling(t));
        let uri = harness::uri(&t.root);
        s.call(
            "initialize",
            serde_json::json!({
                "processId": null,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "bench"}],
                "capabilities": {}
            }),
        );
        s.notify("initialized", serde_json::json!({}));
        // Wait until the preview over the socket answers warm.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        loop {
            let out = preview(t, &t.root, false)
                .env("CLAUDE_CONTEXT_LOG", "debug")
                .output()
                .expect("preview");
            if String::from_utf8_lossy(&out.stderr).contains("answered by the running server") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server never answered warm"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        // Item 3 of the issue: what the running server holds, its watcher in place.
        let (rss, hwm) = s.memory_kib();
        let watches = std::fs::read_dir(format!("/proc/{}/fdinfo", s.pid()))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .map(|info| {
                info.lines()
                    .filter(|l| l.starts_with("inotify wd:"))
                    .count()
            })
            .sum::<usize>();
        eprintln!(
            "cold_walk bench: server on {}: RSS {:.1} MiB (peak {:.1} MiB), {watches} inotify watches",
            t.root.display(),
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
        *g = Some(s);
    }
    g
}

macro_rules! tree_benches {
    ($module:ident, $tree:ident) => {
        mod $module {
            use super::*;

            fn t() -> Option<&'static Tree> {
                $tree.as_ref()
            }

            #[divan::bench(args = [2, 4], sample_count = 30, sample_size = 1)]
            fn floor_in_process(b: Bencher, threads: usize) {
                let Some(t) = t() else { return };
                b.bench(|| floor(black_box(&t.dirs), threads));
            }

            #[divan::bench(args = [2, 4], sample_count = 30, sample_size = 1)]
            fn floor_process(b: Bencher, threads: usize) {
                let Some(t) = t() else { return };
                let exe = std::env::current_exe().expect("this bench");
                let spec = format!("{threads}:{}", t.list.display());
                b.bench(|| {
                    let mut c = Command::new(&exe);
                    c.env(FLOOR_CHILD, &spec);
                    run(c)
                });
            }

            #[divan::bench(sample_count = 30, sample_size = 1)]
            fn git_status(b: Bencher) {
                let Some(t) = t() else { return };
                b.bench(|| {
                    let mut c = Command::new("git");
                    c.current_dir(&t.root).args(["status", "--short"]);
                    run(c)
                });
            }

            #[divan::bench(sample_count = 30, sample_size = 1)]
            fn snapshot(b: Bencher) {
                let Some(t) = t() else { return };
                let opts = claude_context::git::GitOptions::new(
                    claude_context::git::GitEnv::from_vars(std::env::vars_os()),
                );
                b.bench(|| claude_context::git::snapshot(black_box(&t.root), &opts));
            }

            #[divan::bench(args = ["root", "deep"], sample_count = 30, sample_size = 1)]
            fn preview_cold(b: Bencher, cwd: &str) {
                let Some(t) = t() else { return };
                let dir = if cwd == "root" { &t.root } else { &t.deep_dir };
                b.bench(|| run(preview(t, dir, true)));
            }

            #[divan::bench(args = ["root", "deep"], sample_count = 30, sample_size = 1)]
            fn preview_baseline(b: Bencher, cwd: &str) {
                let (Some(t), Some(base)) = (t(), baseline()) else {
                    return;
                };
                let dir = if cwd == "root" { &t.root } else { &t.deep_dir };
                // The baseline is always cold (it has no server socket nor `--cold`).
                b.bench(|| run(preview_with(&base, t, dir, false)));
            }

            #[divan::bench(args = ["root", "deep"], sample_count = 30, sample_size = 1)]
            fn reference(b: Bencher, cwd: &str) {
                let (Some(t), Some(exe)) = (t(), super::reference()) else {
                    return;
                };
                let Some(url) = fake_base_url() else { return };
                let home = reference_home(t);
                let dir = if cwd == "root" { &t.root } else { &t.deep_dir };
                b.bench(|| run(reference_run(&exe, &home, dir, &url)));
            }

            #[divan::bench(args = ["root", "deep"], sample_count = 30, sample_size = 1)]
            fn preview_warm(b: Bencher, cwd: &str) {
                let Some(t) = t() else { return };
                let dir = if cwd == "root" { &t.root } else { &t.deep_dir };
                let _server = server(t);
                b.bench(|| run(preview(t, dir, false)));
            }
        }
    };
}

tree_benches!(standard, STANDARD);
tree_benches!(large, LARGE);
