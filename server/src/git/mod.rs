//! The git snapshot: the second block of the first user message.
//!
//! [`snapshot`] reads the repository once (branch, default branch, `user.name`, `git status --short`, the five newest
//! commits) and [`render_block`] turns the result into the exact `<system-reminder>` text the reference CLI sends.
//! Formatting is pure; only [`snapshot`] does IO.
//!
//! The status reproduces `git status --short` byte for byte: porcelain v1 `XY` codes, staged renames (`R  old -> new`),
//! unmerged codes (`UU`, `AA`, ...), submodule codes (` m`, ` ?`), untracked directories collapsed to `dir/`, paths
//! relative to the working directory and quoted like git's `core.quotePath`. It honours `status.showUntrackedFiles`,
//! `status.relativePaths`, `status.renames` / `diff.renames`, `status.renameLimit` / `diff.renameLimit`,
//! `core.quotePath` and `core.abbrev`; it does not print the `## branch` header of `status.branch`.
//!
//! Two engines compute the status:
//! - the native one (Unix; the usual case) reads `.git/index` itself (no checksum pass, no copy), checks the work tree
//!   directory by directory on several threads (one listing per tracked directory gives the untracked names; each
//!   tracked name is `fstatat`'ed through its directory and compared with the index's stat data; content is hashed only
//!   when the stat data moved or is racy), applies git's exclude rules itself (`.gitignore` files, `info/exclude`,
//!   `core.excludesFile`, compiled with globset), and compares HEAD with the index through the cache-tree, so
//!   directories unchanged since the last `git write-tree` are never read. libgit2 still answers what needs more of
//!   git: submodules, content filters (end-of-line conversion), inexact rename scoring, and exclude patterns the
//!   translation cannot express (POSIX character classes).
//! - libgit2's diffs, for what the native engine does not reproduce: split or sparse indexes, case-insensitive or
//!   Unicode-precomposing file systems (`core.ignorecase`, `core.precomposeunicode`, so macOS by default),
//!   `core.symlinks=false`, SHA-256 repositories, non-Unix platforms. Known differences from git there: an
//!   intent-to-add entry shows `AM` (git: ` A`), an empty nested repository is not listed.
//!
//! Neither runs external filter drivers (Git LFS's `clean`): a tracked file whose stat data moved and whose raw content
//! differs from the index shows as modified.
//!
//! Cost: the walks run on their own threads while the calling thread reads the branch, config and log. They are
//! time-boxed by [`GitOptions::status_timeout`]; when the time is up the snapshot says the status is incomplete, and the
//! abandoned walks finish in the background (libgit2 cannot be interrupted from safe Rust). On the standard benchmark
//! tree (20,000 files) the snapshot takes about 0.6 of `git status --short` plus `git log -n 5` (see
//! `scripts/bench-git.sh`).
//!
//! Layout: `render` (the block and status text, status lines, paths and quoting; pure), `index` (the index file
//! parser), `ignore` (gitignore rules), `config` (the settings that shape the status, config files, repository
//! handles), `status` (engine choice, the walk threads and their deadline), `native` (the native work tree walk),
//! `staged` (the native HEAD-against-index comparison), `fallback` (the libgit2 engine), `repo` (branch, user and
//! log). This file holds the public types and [`snapshot`], which ties them together.

// The native walker is Unix-only; elsewhere its helpers are unused.
#![cfg_attr(not(unix), allow(dead_code))]

mod config;
mod fallback;
mod ignore;
mod index;
mod native;
mod render;
mod repo;
mod staged;
mod status;
#[cfg(test)]
mod test_support;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{ErrorCode, Repository, RepositoryOpenFlags};

use config::{RepoHandle, Settings, apply_config, config_plan, excludes_file, parse_git_bool};
use render::{PathStyle, StatusParts, build_lines};
use repo::{abbrev_len, branch_name, main_branch, recent_commits, user_name};
use status::{Tuning, plan_jobs, spawn_jobs, wait_status};

pub use render::{
    INCOMPLETE_NOTE, STATUS_LIMIT, TRUNCATION_NOTE, count_changed, is_clean, render_block,
    status_text,
};

/// The number of commits listed under `Recent commits:`.
pub const RECENT_COMMITS: usize = 5;

/// What the block shows, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSnapshot {
    /// The current branch's short name; the branch HEAD names on an unborn branch; `HEAD` when detached.
    pub branch: String,
    /// The branch `refs/remotes/origin/HEAD` points to (without `origin/`), otherwise `main`.
    pub main_branch: String,
    /// `user.name`, `None` when unset or blank.
    pub user_name: Option<String>,
    /// The lines of `git status --short`, in git's order.
    pub status_lines: Vec<String>,
    /// False when the status walk was cut by the time limit (the lines are then partial).
    pub status_complete: bool,
    /// The newest commits reachable from HEAD, newest first: (abbreviated hash, subject).
    pub commits: Vec<(String, String)>,
    /// The root of the work tree (canonical, no trailing slash).
    pub work_tree: PathBuf,
}

/// How [`snapshot`] finds the repository and its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// Discovery does not climb into these directories (`GIT_CEILING_DIRECTORIES`).
    pub ceiling_dirs: Vec<PathBuf>,
    /// The status walk is abandoned after this long. Zero skips the status entirely (reported as incomplete).
    pub status_timeout: Duration,
    /// Read the global config from `<home>/.gitconfig` and `<home>/.config/git/config` instead of the process's
    /// `$HOME`. `None`: libgit2's own lookup.
    pub home: Option<PathBuf>,
    /// Skip the system config (`/etc/gitconfig`), like `GIT_CONFIG_NOSYSTEM`.
    pub no_system_config: bool,
}

impl Default for GitOptions {
    fn default() -> Self {
        Self {
            ceiling_dirs: Vec::new(),
            status_timeout: Duration::from_secs(5),
            home: None,
            no_system_config: false,
        }
    }
}

impl GitOptions {
    /// Defaults plus what git itself reads from the environment: `GIT_CEILING_DIRECTORIES` and `GIT_CONFIG_NOSYSTEM`.
    #[allow(clippy::disallowed_methods)] // reason: for examples and benches; the server builds GitOptions from host::Host.
    pub fn from_env() -> Self {
        let ceiling_dirs = std::env::var_os("GIT_CEILING_DIRECTORIES")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let no_system_config = std::env::var("GIT_CONFIG_NOSYSTEM")
            .map(|v| parse_git_bool(&v).unwrap_or(false))
            .unwrap_or(false);
        Self {
            ceiling_dirs,
            no_system_config,
            ..Self::default()
        }
    }
}

/// A repository that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    pub message: String,
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git: {}", self.message)
    }
}

impl std::error::Error for GitError {}

impl From<git2::Error> for GitError {
    fn from(e: git2::Error) -> Self {
        Self {
            message: e.message().to_owned(),
        }
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

/// Takes the snapshot for a session started in `cwd`.
///
/// `Ok(None)` when `cwd` is not inside a git work tree (no repository below the ceiling directories, a bare
/// repository, or `cwd` inside the `.git` directory). `Err` when a repository exists but cannot be read. Never panics.
///
/// Cost: the work tree check runs on worker threads (one `lstat` per tracked file, one directory listing per tracked
/// directory, as git does) while the calling thread reads the branch, config and log; HEAD is compared with the index
/// through the cache-tree, so unchanged directories are not read.
pub fn snapshot(cwd: &Path, opts: &GitOptions) -> Result<Option<GitSnapshot>, GitError> {
    snapshot_tuned(cwd, opts, Tuning::default())
}

fn snapshot_tuned(
    cwd: &Path,
    opts: &GitOptions,
    tuning: Tuning,
) -> Result<Option<GitSnapshot>, GitError> {
    let deadline = Instant::now() + opts.status_timeout;
    let repo = match Repository::open_ext(cwd, RepositoryOpenFlags::empty(), &opts.ceiling_dirs) {
        Ok(r) => r,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(work_tree) = repo.workdir() else {
        return Ok(None);
    };
    let work_tree = work_tree
        .canonicalize()
        .unwrap_or_else(|_| work_tree.to_path_buf());
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let git_dir = repo.path().to_path_buf();
    if cwd.starts_with(git_dir.canonicalize().unwrap_or_else(|_| git_dir.clone())) {
        return Ok(None); // git: "this operation must be run in a work tree"
    }
    let plan = config_plan(&repo, opts);
    apply_config(&repo, plan.as_ref())?;
    let cfg = repo.config()?.snapshot()?;
    let settings = Settings::read(&cfg);

    let prefix: Vec<u8> = match cwd.strip_prefix(&work_tree) {
        Ok(rel) if settings.relative && !rel.as_os_str().is_empty() => {
            let mut p = os_to_bytes(rel.as_os_str());
            if cfg!(windows) {
                p.iter_mut()
                    .filter(|b| **b == b'\\')
                    .for_each(|b| *b = b'/');
            }
            p.push(b'/');
            p
        }
        _ => Vec::new(),
    };

    // The walks run on their own threads so that the reads below overlap them.
    let status = if opts.status_timeout.is_zero() {
        None
    } else {
        let handle = RepoHandle {
            git_dir,
            work_tree: work_tree.clone(),
            config: plan,
        };
        let excludes = excludes_file(&cfg, opts);
        Some(spawn_jobs(plan_jobs(
            &repo, &handle, settings, excludes, tuning,
        ))?)
    };

    let branch = branch_name(&repo);
    let main_branch = main_branch(&repo);
    let user_name = user_name(&cfg);
    let abbrev = abbrev_len(&repo, &cfg);
    let commits = recent_commits(&repo, abbrev, RECENT_COMMITS);

    let (parts, status_complete) = match &status {
        Some((rx, jobs)) => wait_status(rx, *jobs, deadline)?,
        None => (StatusParts::default(), false),
    };
    let style = PathStyle {
        prefix: &prefix,
        quote_fully: settings.quote_fully,
    };
    let status_lines = build_lines(&parts, style);
    Ok(Some(GitSnapshot {
        branch,
        main_branch,
        user_name,
        status_lines,
        status_complete,
        commits,
        work_tree,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_support::{BLOCK_HEAD, BLOCK_TAIL, Fixture, lines, normalize_hashes};
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
        opts.ceiling_dirs = vec![f.root.clone()];
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
        let s = f.snap_with(&wt, Tuning::default());
        assert_eq!(s.branch, "side");
        assert_eq!(s.work_tree, wt);
        assert_eq!(s.user_name.as_deref(), Some("U"));
        assert!(f.assert_status(&f.root).is_empty());
    }

    #[test]
    fn zero_timeout_reports_an_incomplete_status() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("a.txt", "b\n");
        let mut opts = f.opts();
        opts.status_timeout = Duration::ZERO;
        let s = snapshot(&f.root, &opts).expect("ok").expect("repo");
        assert!(!s.status_complete);
        assert!(s.status_lines.is_empty());
        assert_eq!(s.commits.len(), 1);
        assert!(render_block(&s).contains(INCOMPLETE_NOTE));
    }

    #[test]
    fn options_from_env_parse_ceilings() {
        let o = GitOptions::from_env();
        assert_eq!(o.status_timeout, Duration::from_secs(5));
        assert!(o.ceiling_dirs.iter().all(|p| !p.as_os_str().is_empty()));
        assert_eq!(parse_git_bool("Yes"), Some(true));
        assert_eq!(parse_git_bool("off"), Some(false));
        assert_eq!(parse_git_bool("maybe"), None);
    }
}
