//! Running the status: which engine computes it (native or libgit2), the jobs that start on their own threads, and
//! collecting what they send until the deadline; plus the helpers both engines share.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Instant;

use git2::{ErrorCode, Repository, SubmoduleIgnore, SubmoduleStatus};

use super::GitError;
use super::config::{RepoHandle, Settings};
use super::fallback::{staged_changes, worktree_changes};
use super::ignore::IgnoreFile;
use super::index::{ParsedIndex, parse_index, read_index_file};
use super::native::{self, NativeCtx, tracked_dirs};
use super::render::{Change, StatusParts};
use super::staged::native_staged;

/// What the work tree walks found: changed tracked paths and untracked entries.
#[derive(Debug, Default)]
pub(super) struct WorktreePart {
    pub(super) changes: Vec<Change>,
    pub(super) untracked: Vec<Vec<u8>>,
}

/// The two-letter code of an unmerged path from the stages present (1 base, 2 ours, 3 theirs).
pub(super) fn unmerged_code_from_mask(mask: u8) -> [u8; 2] {
    match mask {
        1 => *b"DD",
        2 => *b"AU",
        3 => *b"UD",
        4 => *b"UA",
        5 => *b"DU",
        6 => *b"AA",
        _ => *b"UU",
    }
}

/// A modified submodule the way `git status --short` shows it: `M` new commits, `m` modified content, `?`
/// untracked content; `None` when clean.
pub(super) fn submodule_code(repo: &Repository, path: &[u8]) -> Option<u8> {
    let p = std::str::from_utf8(path).ok()?.trim_end_matches('/');
    let sm = repo.find_submodule(p).ok()?;
    let st = repo
        .submodule_status(sm.name().ok()?, SubmoduleIgnore::Unspecified)
        .ok()?;
    if st.contains(SubmoduleStatus::WD_MODIFIED) {
        Some(b'M')
    } else if st.intersects(SubmoduleStatus::WD_INDEX_MODIFIED | SubmoduleStatus::WD_WD_MODIFIED) {
        Some(b'm')
    } else if st.contains(SubmoduleStatus::WD_UNTRACKED) {
        Some(b'?')
    } else {
        None
    }
}

pub(super) fn head_tree(repo: &Repository) -> Result<Option<git2::Tree<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_tree()?)),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) enum Part {
    Staged(Result<Vec<Change>, git2::Error>),
    Worktree(Result<WorktreePart, git2::Error>),
}

/// Knobs for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tuning {
    /// Use libgit2 even where the native engine would do.
    pub(super) force_libgit2: bool,
    /// Work tree walkers (native engine); `None`: by core count and index size.
    pub(super) workers: Option<usize>,
}

pub(super) type Job = Box<dyn FnOnce() -> Part + Send>;

/// Reads the index and decides the walks: the native engine when the index and config allow, else libgit2.
pub(super) fn plan_jobs(
    repo: &Repository,
    handle: &RepoHandle,
    settings: Settings,
    excludes_file: Option<PathBuf>,
    tuning: Tuning,
) -> Vec<(&'static str, Job)> {
    let index_path = repo.path().join("index");
    let buf = read_index_file(&index_path).unwrap_or_default();
    let parsed = if buf.is_empty() {
        Some(ParsedIndex::default())
    } else {
        parse_index(buf)
    };
    let native = settings.native_ok
        && !tuning.force_libgit2
        && parsed.as_ref().is_some_and(|p| !p.unsupported);
    let mut jobs: Vec<(&'static str, Job)> = Vec::with_capacity(4);
    if let (true, Some(index)) = (native, &parsed) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let racy_from = fs::metadata(&index_path).map_or(0, |m| m.mtime() as u32);
            let filters = settings.eol_filters
                || index.has_attributes
                || repo.path().join("info/attributes").is_file();
            let entries = index.len();
            let workers = tuning.workers.unwrap_or_else(|| {
                // More walkers than cores: the work is mostly system calls, and git's preload uses up to 20.
                let cores = thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .clamp(1, 4)
                    * 2;
                cores.min(entries / 1500).max(1)
            });
            let ctx = Arc::new(NativeCtx {
                index: parsed.unwrap_or_default(),
                work_tree: handle.work_tree.clone(),
                handle: handle.clone(),
                settings,
                filters,
                racy_from,
                base_ignores: [
                    excludes_file.as_deref(),
                    Some(&repo.commondir().join("info/exclude")),
                ]
                .into_iter()
                .flatten()
                .filter_map(|p| fs::read(p).ok())
                .map(|t| IgnoreFile::parse(&t))
                .collect(),
            });
            let c = Arc::clone(&ctx);
            jobs.push((
                "git-status-staged",
                Box::new(move || {
                    Part::Staged(match native_staged(&c) {
                        Ok(Some(changes)) => Ok(changes),
                        Ok(None) => staged_changes(&c.handle, c.settings),
                        Err(e) => Err(e),
                    })
                }),
            ));
            // The walkers take directories in small batches from a shared counter, so none idles while another
            // still has a long list.
            let dirs = Arc::new(tracked_dirs(&ctx.index));
            let next = Arc::new(AtomicUsize::new(0));
            for _ in 0..workers {
                let (c, d, n) = (Arc::clone(&ctx), Arc::clone(&dirs), Arc::clone(&next));
                jobs.push((
                    "git-status-worktree",
                    Box::new(move || Part::Worktree(Ok(native::worktree(&c, &d, &n)))),
                ));
            }
            return jobs;
        }
        #[cfg(not(unix))]
        let _ = index;
    }
    // libgit2: HEAD against the index (unless the cache-tree shows nothing is staged) and the work tree.
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_tree().ok())
        .map(|t| t.id());
    let staged = match (&parsed, head) {
        (Some(p), Some(head)) => !p.cache_tree.first().is_some_and(|n| {
            n.name.is_empty() && n.oid.is_some_and(|o| o.as_slice() == head.as_bytes())
        }),
        (Some(p), None) => !p.entries.is_empty(),
        (None, _) => true,
    };
    if staged {
        let h = handle.clone();
        jobs.push((
            "git-status-staged",
            Box::new(move || Part::Staged(staged_changes(&h, settings))),
        ));
    }
    let h = handle.clone();
    jobs.push((
        "git-status-worktree",
        Box::new(move || Part::Worktree(worktree_changes(&h, settings))),
    ));
    jobs
}

/// Starts each job on its own thread; returns the receiver and how many started.
pub(super) fn spawn_jobs(
    jobs: Vec<(&'static str, Job)>,
) -> Result<(mpsc::Receiver<Part>, usize), GitError> {
    let (tx, rx) = mpsc::channel();
    let count = jobs.len();
    for (name, job) in jobs {
        let tx = tx.clone();
        let spawned = thread::Builder::new().name(name.to_owned()).spawn(move || {
            let _ = tx.send(job());
        });
        if let Err(e) = spawned {
            return Err(GitError {
                message: format!("cannot start a status thread: {e}"),
            });
        }
    }
    Ok((rx, count))
}

/// Collects what the walks send until `deadline`; returns the parts and whether all of them arrived.
pub(super) fn wait_status(
    rx: &mpsc::Receiver<Part>,
    jobs: usize,
    deadline: Instant,
) -> Result<(StatusParts, bool), GitError> {
    let mut parts = StatusParts::default();
    let mut received = 0;
    while received < jobs {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Part::Staged(r)) => parts.staged = r?,
            Ok(Part::Worktree(r)) => {
                let w = r?;
                parts.worktree.extend(w.changes);
                parts.untracked.extend(w.untracked);
            }
            Err(_) => break,
        }
        received += 1;
    }
    Ok((parts, received == jobs))
}
