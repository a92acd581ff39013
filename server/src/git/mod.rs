//! The git snapshot: the second block of the first user message.
//!
//! [`snapshot`] reads the repository once (branch, default branch, `user.name`, the status, the five newest commits)
//! and [`render_block`] turns the result into the exact `<system-reminder>` text the reference CLI sends. Formatting
//! is pure; [`snapshot`] does the IO. [`StatusCache`] keeps a repository's snapshot current from file-change
//! notifications, for a long-running server.
//!
//! **The status is what `git --no-optional-locks status --short --ignore-submodules=dirty` prints**, byte for byte:
//! porcelain v1 `XY` codes, staged renames, unmerged codes, submodules only when their checked-out commit moved,
//! untracked directories collapsed to `dir/`, paths relative to the working directory and quoted like git. It honours
//! `status.showUntrackedFiles`, `status.relativePaths`, `status.renames` / `diff.renames`, `core.quotePath`; it never
//! prints the `## branch` header of `status.branch` (the git CLI is run with `--no-branch`).
//!
//! **Architecture Invariant: one engine per answer, and never a guess.** The native engine (`native`, `staged`:
//! the index read directly, the work tree walked on several threads) answers when it reproduces git exactly; on
//! anything it does not (a split or sparse index, a name that differs from a tracked one only by case under
//! `core.ignorecase`, an exclude pattern it cannot translate, content that a filter could change, staged copies, an
//! I/O error other than "not found", ...) it declines with a reason
//! and the git CLI answers the whole status (`status`). When neither can, the block keeps branch, main branch, user
//! and log and says why the status is unavailable ([`StatusProblem`]); a cut walk shows no partial lines.
//!
//! **Architecture Invariant: bounded from the first byte.** Everything after discovery runs on worker threads under
//! one deadline ([`GitOptions::status_timeout`]), the index read included (opened without blocking; a FIFO is refused).
//! When the deadline passes, the stop flag is raised: walkers check it between directories and while hashing, the
//! git child is killed with its process group. A repository's snapshot is single-flight until its workers have
//! actually exited (a gate per git directory), so a server refreshing a slow repository never piles threads up.
//!
//! `git/` reads no environment variable: the caller passes a [`GitEnv`]. Processes start only in `command`.
//!
//! Layout: `discover` (which repository; the crate's one discovery routine), `env`, `command` (spawning, time
//! limits), `config` (config files and the settings that shape the status), `index` (the index file), `ignore`
//! (gitignore rules), `native` (the work tree walk), `untracked` (git's untracked cache, which spares the walk
//! listings), `staged` (HEAD against the index), `rename` (git's similarity
//! scoring for renames), `status` (engine choice, the git CLI engine), `repo` (branch, user, log; submodule heads), `render` (the block; pure), `cache` (the status kept
//! current from notifications), `tracked` (whether git tracks a file: workspace trust asks it). This file holds the public types, the gate and [`snapshot`].

// The native walker is Unix-only; elsewhere its helpers are unused.
#![cfg_attr(not(unix), allow(dead_code))]

mod cache;
mod command;
mod config;
mod discover;
mod env;
mod ignore;
mod index;
mod native;
mod render;
mod repo;
mod staged;
mod status;
#[cfg(test)]
mod test_support;
mod tracked;
mod untracked;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use config::{RepoHandle, config_plan};
use status::{NativeState, StatusAnswer, StatusJob, Tuning};

pub use cache::StatusCache;
pub use command::command;
pub use discover::{DiscoverError, Repository, discover};
pub use env::GitEnv;
pub use render::{
    STATUS_LIMIT, TRUNCATION_NOTE, UNAVAILABLE_NOTE, count_changed, is_clean, render_block,
    status_text,
};
pub use tracked::{Tracked, tracks};

/// The number of commits listed under `Recent commits:`.
pub const RECENT_COMMITS: usize = 5;

/// Which engine may answer the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The native engine, and the git CLI when it declines (the default).
    #[default]
    Auto,
    /// The native engine only: a decline is reported as a [`StatusProblem`] (tests and benchmarks).
    Native,
    /// The git CLI only.
    Cli,
}

/// Which engine answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusEngine {
    Native,
    GitCli,
}

/// Why a snapshot has no status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusProblemKind {
    /// The time limit passed (the walk was stopped, the git child killed).
    TimedOut,
    /// Neither engine could read it (git's own error, or the index is not a file).
    Unavailable,
    /// [`Engine::Native`] only: the native engine declined.
    Declined,
}

/// Why a snapshot has no status, in a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusProblem {
    pub kind: StatusProblemKind,
    pub message: String,
}

/// What the block shows, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSnapshot {
    /// The current branch's short name; the branch HEAD names on an unborn branch; `HEAD` when detached.
    pub branch: String,
    /// The branch `refs/remotes/origin/HEAD` points to (without `origin/`), otherwise `main`.
    pub main_branch: String,
    /// `user.name`, `None` when unset or blank.
    pub user_name: Option<String>,
    /// The lines of `git status --short`, in git's order; empty when there is a `status_problem`.
    pub status_lines: Vec<String>,
    /// Why there is no status, if there is none.
    pub status_problem: Option<StatusProblem>,
    /// Which engine answered (`None` with a problem).
    pub status_engine: Option<StatusEngine>,
    /// Why the native engine did not answer, when the git CLI did.
    pub status_declined: Option<String>,
    /// How many tracked directories the native walk did not list because git's untracked cache vouched for their
    /// untracked names (a diagnostic: the status is the same either way).
    pub status_unlisted_dirs: usize,
    /// The newest commits reachable from HEAD, newest first: (abbreviated hash, subject).
    pub commits: Vec<(String, String)>,
    /// The root of the work tree (canonical, no trailing slash).
    pub work_tree: PathBuf,
}

impl GitSnapshot {
    /// The status is known (no [`StatusProblem`]).
    pub fn status_complete(&self) -> bool {
        self.status_problem.is_none()
    }
}

/// How [`snapshot`] finds the repository and how long it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// What git takes from the environment.
    pub env: GitEnv,
    /// Everything after discovery (index read, walk, git CLI) must finish within this; then the status is reported
    /// as unavailable. Zero skips the status.
    pub status_timeout: Duration,
    /// Which engine may answer the status.
    pub engine: Engine,
}

impl Default for GitOptions {
    fn default() -> Self {
        Self::new(GitEnv::default())
    }
}

impl GitOptions {
    /// The defaults (5 s, [`Engine::Auto`]) for `env`.
    pub fn new(env: GitEnv) -> Self {
        Self {
            env,
            status_timeout: Duration::from_secs(5),
            engine: Engine::Auto,
        }
    }
}

/// What went wrong with a repository as a whole (no block can be made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitErrorKind {
    /// A `.git` git refuses (a gitfile pointing nowhere, a worktree whose main repository is gone).
    Broken,
    /// The repository exists but its branch and log could not be read.
    Unreadable,
    /// The branch and log were not read in time.
    TimedOut,
    /// A previous snapshot's workers are still running.
    Busy,
}

/// A repository that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    pub kind: GitErrorKind,
    /// The `.git` (or the work tree) concerned.
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git: {}", self.message)
    }
}

impl std::error::Error for GitError {}

/// A problem with the git block worth a finding in `preview` and `check`: a stable code, the path concerned and a
/// message. (Plain data: `features` turns it into a `Finding`.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitFinding {
    /// `git-unreadable` (no block), `git-status-timeout` or `git-status-unavailable` (a block without status).
    pub code: &'static str,
    pub path: PathBuf,
    pub message: String,
}

/// The findings a snapshot's result deserves: none for a complete status or no repository.
pub fn findings(result: &Result<Option<GitSnapshot>, GitError>) -> Vec<GitFinding> {
    match result {
        Ok(None) => Vec::new(),
        Ok(Some(s)) => match &s.status_problem {
            None => Vec::new(),
            Some(p) => vec![GitFinding {
                code: match p.kind {
                    StatusProblemKind::TimedOut => "git-status-timeout",
                    _ => "git-status-unavailable",
                },
                path: s.work_tree.clone(),
                message: format!(
                    "the git block has no status (the model is told so): {}",
                    p.message
                ),
            }],
        },
        Err(e) => vec![GitFinding {
            code: "git-unreadable",
            path: e.path.clone(),
            message: format!("no git block: {}", e.message),
        }],
    }
}

#[cfg(unix)]
fn bytes_to_path(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

#[cfg(not(unix))]
fn bytes_to_path(b: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(b).into_owned())
}

#[cfg(unix)]
fn os_to_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_to_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

/// One per git directory: how many of a snapshot's tickets (the snapshot itself and each of its threads) are alive.
#[derive(Default)]
struct Gate {
    alive: Mutex<usize>,
    exited: Condvar,
}

static GATES: LazyLock<Mutex<HashMap<PathBuf, Arc<Gate>>>> = LazyLock::new(Mutex::default);

/// A share of a gate; the gate opens again when the last share is dropped.
struct Ticket(Arc<Gate>);

impl Gate {
    fn for_repo(git_dir: &Path) -> Arc<Gate> {
        let mut gates = GATES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(gates.entry(git_dir.to_path_buf()).or_default())
    }

    /// Waits (until `until`) for the previous snapshot's threads to exit, then takes the gate.
    fn enter(self: &Arc<Self>, until: Instant) -> Option<Ticket> {
        let mut alive = self
            .alive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *alive > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            alive = self
                .exited
                .wait_timeout(alive, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        *alive = 1;
        Some(Ticket(Arc::clone(self)))
    }
}

impl Ticket {
    fn share(&self) -> Ticket {
        *self
            .0
            .alive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        Ticket(Arc::clone(&self.0))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut alive = self
            .0
            .alive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *alive -= 1;
        if *alive == 0 {
            self.0.exited.notify_all();
        }
    }
}

/// Raises the stop flag when dropped: whatever a snapshot leaves behind stops at once.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `f` on a named thread that holds a share of the gate; its result arrives on the returned channel.
fn spawn_worker<T: Send + 'static>(
    ticket: &Ticket,
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<mpsc::Receiver<T>, std::io::Error> {
    let (tx, rx) = mpsc::channel();
    let share = ticket.share();
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let _share = share;
            let _ = tx.send(f());
        })?;
    Ok(rx)
}

/// The branch and log are read even with a zero status time limit, within at least this long.
const META_MIN: Duration = Duration::from_secs(2);

/// Takes the snapshot for a session started in `cwd` (an absolute path).
///
/// `Ok(None)` when `cwd` is not inside a git work tree (no repository below the ceiling directories, a bare
/// repository, or `cwd` inside the `.git` directory). `Err` when a repository exists but no block can be made (see
/// [`GitErrorKind`]). A status that cannot be had is not an error: the snapshot says why in
/// [`GitSnapshot::status_problem`]. Never panics.
///
/// Cost: discovery reads a few small files on the calling thread; the branch and log are read on one thread while
/// the status is computed on others (the native engine: one `lstat` per tracked file, one listing per tracked
/// directory, HEAD against the index through the cache-tree).
pub fn snapshot(cwd: &Path, opts: &GitOptions) -> Result<Option<GitSnapshot>, GitError> {
    snapshot_tuned(cwd, opts, Tuning::default())
}

/// The repository of `cwd` as the snapshot sees it: discovered, with canonical paths.
struct Located {
    repo: Repository,
    work_tree: PathBuf,
    git_dir: PathBuf,
    cwd: PathBuf,
}

fn locate(cwd: &Path, env: &GitEnv) -> Result<Option<Located>, GitError> {
    if !cwd.is_dir() {
        return Ok(None);
    }
    let repo = match discover(&crate::fs::RealFs, cwd, &env.ceiling_dirs) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(GitError {
                kind: GitErrorKind::Broken,
                path: e.path,
                message: e.message,
            });
        }
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    Ok(Some(Located {
        work_tree: canon(&repo.work_tree),
        git_dir: canon(&repo.git_dir),
        cwd: canon(cwd),
        repo,
    }))
}

fn snapshot_tuned(
    cwd: &Path,
    opts: &GitOptions,
    tuning: Tuning,
) -> Result<Option<GitSnapshot>, GitError> {
    Ok(take(cwd, opts, tuning)?.map(|t| t.snapshot))
}

/// A full snapshot and what it was made of (for [`StatusCache`]).
struct Taken {
    snapshot: GitSnapshot,
    meta: repo::Meta,
    native: Option<NativeState>,
    job: StatusJob,
}

fn take(cwd: &Path, opts: &GitOptions, tuning: Tuning) -> Result<Option<Taken>, GitError> {
    let start = Instant::now();
    let deadline = start + opts.status_timeout;
    let Some(loc) = locate(cwd, &opts.env)? else {
        return Ok(None);
    };
    let meta_deadline = deadline.max(start + META_MIN);
    let gate = Gate::for_repo(&loc.git_dir);
    let Some(ticket) = gate.enter(meta_deadline) else {
        return Err(GitError {
            kind: GitErrorKind::Busy,
            path: loc.git_dir,
            message: "a previous scan of this repository is still running".into(),
        });
    };
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_return = StopOnDrop(Arc::clone(&stop));
    let handle = RepoHandle {
        config: config_plan(&opts.env, &loc.git_dir, &loc.repo.common_dir),
        git_dir: loc.git_dir.clone(),
        work_tree: loc.work_tree.clone(),
    };
    let job = StatusJob {
        handle: handle.clone(),
        common_dir: loc.repo.common_dir.clone(),
        cwd: loc.cwd.clone(),
        env: opts.env.clone(),
        engine: opts.engine,
        tuning,
        deadline,
    };
    let job_for_cache = job.clone();
    let status_rx = if opts.status_timeout.is_zero() {
        None
    } else {
        let (job, stop) = (job.clone(), Arc::clone(&stop));
        Some(spawn_worker(&ticket, "git-status", move || {
            status::compute(&job, &stop)
        }))
    };
    let meta_rx = {
        let (env, cwd, stop) = (opts.env.clone(), loc.cwd.clone(), Arc::clone(&stop));
        spawn_worker(&ticket, "git-meta", move || {
            read_meta(&handle, &env, &cwd, meta_deadline, &stop)
        })
    };
    let spawn_error = |e: std::io::Error| GitError {
        kind: GitErrorKind::Unreadable,
        path: loc.git_dir.clone(),
        message: format!("cannot start a thread: {e}"),
    };
    let meta_rx = meta_rx.map_err(spawn_error)?;
    let timed_out = |message: String| {
        let problem = StatusProblem {
            kind: StatusProblemKind::TimedOut,
            message,
        };
        (StatusAnswer::Problem(problem), None)
    };
    let (status, native) = match status_rx {
        None => timed_out("the status scan is turned off (time limit 0)".into()),
        Some(Err(e)) => return Err(spawn_error(e)),
        Some(Ok(rx)) => rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| {
                timed_out(format!(
                    "the status scan did not finish within {}",
                    human_duration(opts.status_timeout)
                ))
            }),
    };
    stop.store(true, Ordering::Relaxed); // whatever still runs of the status stops now
    let meta = match meta_rx.recv_timeout(meta_deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(m)) => m,
        Ok(Err(message)) => {
            return Err(GitError {
                kind: GitErrorKind::Unreadable,
                path: loc.git_dir,
                message,
            });
        }
        Err(_) => {
            return Err(GitError {
                kind: GitErrorKind::TimedOut,
                path: loc.git_dir,
                message: "the branch and log were not read in time".into(),
            });
        }
    };
    drop(ticket);
    Ok(Some(Taken {
        snapshot: assemble(meta.clone(), status, loc.work_tree),
        meta,
        native,
        job: job_for_cache,
    }))
}

fn assemble(meta: repo::Meta, status: StatusAnswer, work_tree: PathBuf) -> GitSnapshot {
    let (status_lines, status_problem, status_engine, status_declined, status_unlisted_dirs) =
        match status {
            StatusAnswer::Lines {
                lines,
                engine,
                declined,
                unlisted,
            } => (lines, None, Some(engine), declined, unlisted),
            StatusAnswer::Problem(p) => (Vec::new(), Some(p), None, None, 0),
        };
    GitSnapshot {
        branch: meta.branch,
        main_branch: meta.main_branch,
        user_name: meta.user_name,
        status_lines,
        status_problem,
        status_engine,
        status_declined,
        status_unlisted_dirs,
        commits: meta.commits,
        work_tree,
    }
}

/// Branch, main branch, user and log: through libgit2, or the git CLI when libgit2 cannot open the repository.
fn read_meta(
    handle: &RepoHandle,
    env: &GitEnv,
    cwd: &Path,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<repo::Meta, String> {
    let libgit2 = handle
        .open()
        .and_then(|r| {
            let cfg = r.config()?.snapshot()?;
            Ok(repo::meta(&r, &cfg, RECENT_COMMITS))
        })
        .map_err(|e| e.message().to_owned());
    match libgit2 {
        Ok(m) => Ok(m),
        Err(why) => repo::cli_meta(env, cwd, RECENT_COMMITS, deadline, stop)
            .map_err(|e| format!("the repository cannot be read (libgit2: {why}; git: {e})")),
    }
}

fn human_duration(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_support::{
        self, BLOCK_HEAD, BLOCK_TAIL, Fixture, lines, normalize_hashes,
    };
    use std::fs;

    #[test]
    fn dirty_branch_matches_the_reference_block() {
        // The conformance case git_dirty_branch.
        let f = Fixture::repo("main", Some("Oracle Tester"));
        f.write("README.md", "# g\n");
        for name in ["a.txt", "b.txt", "c.txt"] {
            f.write(name, &format!("{}\n", &name[..1]));
        }
        f.commit("initial commit");
        f.write("README.md", "# g\nsecond\n");
        f.commit("second commit: update readme");
        let mut a = String::from("a\n");
        for n in 3..=8 {
            a.push_str(&format!("{n}\n"));
            f.write("a.txt", &a);
            f.commit(&format!("commit number {n}"));
        }
        f.git(&f.root, &["checkout", "-q", "-b", "feature/x"]);
        f.write("a.txt", &format!("{a}mod\n"));
        f.write("b.txt", "b\nstaged\n");
        f.git(&f.root, &["add", "b.txt"]);
        f.git(&f.root, &["rm", "-q", "c.txt"]);
        f.write("untracked.txt", "u\n");

        let status = f.assert_status(&f.root);
        assert_eq!(
            status,
            lines(&[" M a.txt", "M  b.txt", "D  c.txt", "?? untracked.txt"])
        );
        let s = f.snap();
        let log: Vec<String> = f
            .git(&f.root, &["log", "--oneline", "-n", "5"])
            .lines()
            .map(str::to_owned)
            .collect();
        let ours: Vec<String> = s.commits.iter().map(|(h, m)| format!("{h} {m}")).collect();
        assert_eq!(ours, log);
        assert!(s.commits.iter().all(|(h, _)| h.len() == 7));
        let want = format!(
            "{BLOCK_HEAD}Current branch: feature/x\n\nMain branch (you will usually use this for PRs): main\n\nGit user: Oracle Tester\n\nStatus:\n M a.txt\nM  b.txt\nD  c.txt\n?? untracked.txt\n\nRecent commits:\n{{HASH}} commit number 8\n{{HASH}} commit number 7\n{{HASH}} commit number 6\n{{HASH}} commit number 5\n{{HASH}} commit number 4{BLOCK_TAIL}"
        );
        assert_eq!(normalize_hashes(&render_block(&s)), want);
        assert_eq!(s.work_tree, f.root);
        assert_eq!(count_changed(&s), 4);
    }

    #[test]
    fn no_user_name_omits_the_line() {
        // The conformance case git_no_user.
        let f = Fixture::repo("trunk", None);
        f.write("file.txt", "x\n");
        f.commit("c1");
        f.assert_status(&f.root);
        let s = f.snap();
        assert_eq!(s.user_name, None);
        let want = format!(
            "{BLOCK_HEAD}Current branch: trunk\n\nMain branch (you will usually use this for PRs): main\n\nStatus:\n(clean)\n\nRecent commits:\n{{HASH}} c1{BLOCK_TAIL}"
        );
        assert_eq!(normalize_hashes(&render_block(&s)), want);
    }

    #[test]
    fn truncated_status_matches_the_reference() {
        // The conformance case git_status_truncated.
        let f = Fixture::repo("main", Some("Oracle Tester"));
        f.write("README.md", "# big\n");
        f.commit("initial commit");
        f.write("README.md", "# big\nsecond\n");
        f.commit("second commit: update readme");
        for i in 1..=300 {
            f.write(
                &format!("untracked_file_with_a_longish_name_{i:03}.txt"),
                "u\n",
            );
        }
        let status = f.assert_status(&f.root);
        assert_eq!(status.len(), 300);
        let block = render_block(&f.snap());
        let listed: String = (1..=43)
            .map(|i| format!("?? untracked_file_with_a_longish_name_{i:03}.txt\n"))
            .collect();
        let want_status = format!(
            "Status:\n{listed}?? untracked_file_with{TRUNCATION_NOTE}\n\nRecent commits:\n"
        );
        assert!(block.contains(&want_status), "{block}");
    }

    #[test]
    fn clean_repository() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.write("d/b.txt", "b\n");
        f.commit("init");
        assert!(f.assert_status(&f.root).is_empty());
        let s = f.snap();
        assert!(is_clean(&s));
        assert!(render_block(&s).contains("Status:\n(clean)\n\n"));
    }

    #[test]
    fn not_a_repository_and_ceilings() {
        let f = Fixture::new();
        fs::create_dir_all(f.root.join("plain")).expect("mkdir");
        assert_eq!(snapshot(&f.root.join("plain"), &f.opts()), Ok(None));
        assert_eq!(snapshot(&f.root.join("missing"), &f.opts()), Ok(None));
        // A repository above the ceiling is not found.
        f.git(&f.root, &["init", "-q", "-b", "main"]);
        let inner = f.root.join("inner");
        fs::create_dir_all(&inner).expect("mkdir");
        let mut opts = f.opts();
        opts.env.ceiling_dirs = vec![f.root.clone()];
        assert_eq!(snapshot(&inner, &opts), Ok(None));
        assert!(snapshot(&inner, &f.opts()).expect("ok").is_some());
        // Inside .git is not a work tree.
        assert_eq!(snapshot(&f.root.join(".git"), &f.opts()), Ok(None));
        // A bare repository.
        let bare = f.base.join("bare.git");
        f.git(
            &f.base,
            &["init", "-q", "--bare", bare.to_str().expect("utf-8")],
        );
        assert_eq!(snapshot(&bare, &f.opts()), Ok(None));
    }

    #[test]
    fn linked_worktree() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.write("d/b.txt", "b\n");
        f.commit("init");
        let wt = f.base.join("wt");
        f.git(
            &f.root,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "side",
                wt.to_str().expect("utf-8"),
            ],
        );
        fs::write(wt.join("a.txt"), "changed\n").expect("write");
        fs::write(wt.join("new.txt"), "n\n").expect("write");
        let status = f.assert_status(&wt);
        assert_eq!(status, lines(&[" M a.txt", "?? new.txt"]));
        let s = f.snap_with(&wt, test_support::ENGINES[3]);
        assert_eq!(s.branch, "side");
        assert_eq!(s.work_tree, wt);
        assert_eq!(s.user_name.as_deref(), Some("U"));
        assert!(f.assert_status(&f.root).is_empty());
    }

    #[test]
    fn zero_timeout_keeps_the_block_and_says_the_status_is_unavailable() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("a.txt", "b\n");
        let mut opts = f.opts();
        opts.status_timeout = Duration::ZERO;
        let s = snapshot(&f.root, &opts).expect("ok").expect("repo");
        assert!(!s.status_complete());
        assert!(s.status_lines.is_empty());
        assert_eq!(s.commits.len(), 1);
        assert_eq!(s.branch, "main");
        assert!(render_block(&s).contains(&format!("Status:\n{UNAVAILABLE_NOTE}")));
        assert_eq!(findings(&Ok(Some(s)))[0].code, "git-status-timeout");
    }
}
