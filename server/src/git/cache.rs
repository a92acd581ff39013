//! [`StatusCache`]: a repository's snapshot kept current from file-change notifications, so that a long-running
//! server starts a session without walking the tree again (P6: a new session's snapshot in a few milliseconds).
//!
//! The first [`StatusCache::snapshot`] is a full one. After that, [`StatusCache::changed`] records paths the editor
//! reported; the next snapshot redoes only the tracked directories that hold them (one listing and the `lstat`s of
//! one directory each, the same code as the full walk) and keeps everything else. What a notification cannot be
//! trusted to report is checked on every snapshot instead: the files of the git directory that the answer depends on
//! (index, `HEAD` and the branch it names, `packed-refs`, config files, exclude and attribute files) are compared by
//! their stat data, and any change there means a full snapshot; directories holding submodules are always redone
//! (their commit lives in their own git directory). A `.gitignore` change redoes every tracked directory below it;
//! a `.gitattributes` change, or a status the native engine did not give, means a full snapshot.
//!
//! **Architecture Invariant:** the cache never changes an answer: a snapshot from the cache equals a full snapshot
//! taken at the same moment, provided every change in the work tree was reported (`tests/git_cache.rs` checks this
//! against full snapshots and the git CLI). A client that cannot report every file should call
//! [`StatusCache::invalidate`] before each session instead.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::index::{parse_index, read_index_file};
use super::native::{Flags, Halt, TrackedDir, WorktreePart, rescan, tracked_dirs};
use super::repo::Meta;
use super::staged::native_staged;
use super::status::{NativeState, StatusAnswer, StatusJob, Tuning};
use super::{GitError, GitOptions, GitSnapshot, StatusEngine, Taken, assemble, take};

/// Keeps the snapshot of the repository holding `cwd` current. Cheap to create (no IO until the first snapshot);
/// `Sync`: notifications and snapshots may come from different threads, and snapshots are single-flight.
pub struct StatusCache {
    cwd: PathBuf,
    opts: GitOptions,
    pending: Mutex<Pending>,
    state: Mutex<Option<Kept>>,
    full: AtomicU64,
}

#[derive(Default)]
struct Pending {
    paths: Vec<PathBuf>,
    all: bool,
}

/// What the last full snapshot left.
struct Kept {
    snapshot: GitSnapshot,
    meta: Meta,
    job: StatusJob,
    native: Option<Native>,
    stamps: Vec<Stamp>,
    /// The work tree as discovered (not resolved), for notifications about paths under a symbolic link.
    work_tree_alias: Option<PathBuf>,
    /// The last snapshot given for a directory other than `job.cwd` (its paths printed relative to that
    /// directory): given again while nothing changed, instead of rendering every line again.
    styled: Option<(PathBuf, GitSnapshot)>,
}

struct Native {
    state: NativeState,
    /// Tracked directory path → its position.
    dir_index: HashMap<Vec<u8>, usize>,
    /// Tracked directories that hold a submodule: redone on every snapshot.
    with_gitlinks: Vec<usize>,
}

/// A file's identity and stat data, or its absence.
type Stamp = Option<(u64, i64, i64, u64, i64)>;

fn stamp(p: &Path) -> Stamp {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(p)
            .ok()
            .map(|m| (m.len(), m.mtime(), m.mtime_nsec(), m.ino(), m.ctime_nsec()))
    }
    #[cfg(not(unix))]
    {
        fs::metadata(p).ok().map(|m| (m.len(), 0, 0, 0, 0))
    }
}

/// The files outside the work tree the snapshot depends on, the index first.
fn inputs(job: &StatusJob, native: Option<&Native>) -> Vec<PathBuf> {
    let git_dir = &job.handle.git_dir;
    let common = &job.common_dir;
    let mut files = vec![
        git_dir.join("index"),
        git_dir.join("HEAD"),
        common.join("packed-refs"),
        common.join("refs/remotes/origin/HEAD"),
    ];
    // The branch HEAD names (a loose ref).
    if let Ok(head) = crate::fs::read_regular(&git_dir.join("HEAD"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        && let Some(target) = head.trim_end().strip_prefix("ref:")
    {
        files.push(common.join(target.trim()));
    }
    files.extend(job.handle.config.iter().map(|(p, _)| p.clone()));
    if let Some(n) = native {
        files.extend(n.state.ctx.inputs.iter().cloned());
    }
    files
}

impl StatusCache {
    /// A cache for the repository holding `cwd` (an absolute path), snapshots taken with `opts`.
    pub fn new(cwd: PathBuf, opts: GitOptions) -> StatusCache {
        StatusCache {
            cwd,
            opts,
            pending: Mutex::default(),
            state: Mutex::default(),
            full: AtomicU64::new(0),
        }
    }

    /// Files or directories that changed (created, modified, deleted), as absolute paths. Cheap: recorded for the
    /// next snapshot. Paths outside the work tree, and inside the git directory, are ignored (the git directory is
    /// checked on every snapshot).
    pub fn changed<I: IntoIterator<Item = PathBuf>>(&self, paths: I) {
        let mut p = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !p.all {
            p.paths.extend(paths);
            if p.paths.len() > 100_000 {
                p.all = true; // a flood: a full snapshot is cheaper than sorting it out
                p.paths.clear();
            }
        }
    }

    /// Forgets what is kept: the next snapshot is a full one.
    pub fn invalidate(&self) {
        let mut p = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        p.all = true;
        p.paths.clear();
    }

    /// The directories a client should watch for [`StatusCache::changed`]: the work tree, once a snapshot found it.
    pub fn work_tree(&self) -> Option<PathBuf> {
        self.lock_state()
            .as_ref()
            .map(|k| k.job.handle.work_tree.clone())
    }

    /// How many snapshots were full ones (the rest came from what was kept).
    pub fn full_snapshots(&self) -> u64 {
        self.full.load(Ordering::Relaxed)
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current snapshot: the kept one when nothing changed, the kept one with the changed directories redone,
    /// or a full one (the first time, after [`StatusCache::invalidate`], when the git directory changed, or when
    /// the last status did not come from the native engine). Same results as [`super::snapshot`].
    pub fn snapshot(&self) -> Result<Option<GitSnapshot>, GitError> {
        let mut state = self.lock_state();
        let pending = std::mem::take(
            &mut *self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !pending.all
            && let Some(kept) = state.as_mut()
        {
            let stamps: Vec<Stamp> = inputs(&kept.job, kept.native.as_ref())
                .iter()
                .map(|p| stamp(p))
                .collect();
            // Only the index moved (git add, a refresh by a prompt's `git status`): re-read it and redo what
            // changed in it; anything else in the git directory: a full snapshot.
            let same_rest = stamps.get(1..) == kept.stamps.get(1..);
            if same_rest && kept.native.is_some() && kept.snapshot.status_complete() {
                let index_moved = stamps.first() != kept.stamps.first();
                let updated = if index_moved {
                    let r = kept.update_index();
                    if r.is_ok() {
                        kept.stamps = stamps;
                    }
                    r
                } else {
                    Ok(Vec::new())
                };
                // Declined or could not tell: a full snapshot answers.
                if let Ok(dirty) = updated
                    && kept.update(&pending.paths, dirty).is_ok()
                {
                    return Ok(Some(kept.snapshot.clone()));
                }
            }
        }
        *state = None;
        self.full.fetch_add(1, Ordering::Relaxed);
        let taken = take(&self.cwd, &self.opts, Tuning::default())?;
        let Some(Taken {
            snapshot,
            meta,
            native,
            job,
        }) = taken
        else {
            return Ok(None);
        };
        let native = native
            .filter(|_| snapshot.status_engine == Some(StatusEngine::Native))
            .map(Native::new);
        // Stamps after the walk: a change during it is seen by the notification that reports it, or by the index
        // stamp (git writes the index when it changes anything the walk reads).
        let stamps = inputs(&job, native.as_ref())
            .iter()
            .map(|p| stamp(p))
            .collect();
        let alias =
            crate::git::discover(&crate::fs::RealFs, &self.cwd, &self.opts.env.ceiling_dirs)
                .ok()
                .flatten()
                .map(|r| r.work_tree)
                .filter(|w| *w != job.handle.work_tree);
        *state = Some(Kept {
            snapshot: snapshot.clone(),
            meta,
            job,
            native,
            stamps,
            work_tree_alias: alias,
            styled: None,
        });
        Ok(Some(snapshot))
    }
}

impl StatusCache {
    /// The snapshot of a session in `cwd` (absolute; the work tree of this cache or a directory in it) from what is
    /// kept, never from a full walk: the changed directories are redone as [`StatusCache::snapshot`] does, the paths
    /// printed relative to `cwd`. `None` when only a full snapshot could answer (nothing kept yet, everything to read
    /// again, the git directory changed, the last status did not come from the native engine), when `cwd` belongs to
    /// another repository, or when another snapshot holds the cache for longer than `wait`.
    pub fn kept_snapshot(&self, cwd: &Path, wait: std::time::Duration) -> Option<GitSnapshot> {
        let until = std::time::Instant::now() + wait;
        let mut state = loop {
            match self.state.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    if std::time::Instant::now() >= until {
                        return None;
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
        };
        let kept = state.as_mut()?;
        let here = crate::git::discover(&crate::fs::RealFs, cwd, &self.opts.env.ceiling_dirs)
            .ok()
            .flatten()?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if canon(&here.work_tree) != kept.job.handle.work_tree {
            return None;
        }
        let pending = std::mem::take(
            &mut *self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let give_back = |pending: Pending| {
            let mut p = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            p.all |= pending.all;
            p.paths.extend(pending.paths);
        };
        if pending.all || kept.native.is_none() || !kept.snapshot.status_complete() {
            give_back(pending);
            return None;
        }
        let stamps: Vec<Stamp> = inputs(&kept.job, kept.native.as_ref())
            .iter()
            .map(|p| stamp(p))
            .collect();
        if stamps.get(1..) != kept.stamps.get(1..) {
            give_back(pending);
            return None;
        }
        if stamps.first() != kept.stamps.first() || !pending.paths.is_empty() {
            kept.styled = None;
        }
        let dirty = if stamps.first() != kept.stamps.first() {
            match kept.update_index() {
                Ok(d) => {
                    kept.stamps = stamps;
                    d
                }
                Err(_) => {
                    // What is kept no longer matches the index: the next snapshot is a full one.
                    *state = None;
                    give_back(Pending {
                        paths: Vec::new(),
                        all: true,
                    });
                    return None;
                }
            }
        } else {
            Vec::new()
        };
        if kept.update(&pending.paths, dirty).is_err() {
            *state = None;
            give_back(Pending {
                paths: Vec::new(),
                all: true,
            });
            return None;
        }
        let cwd = canon(cwd);
        if cwd == kept.job.cwd {
            return Some(kept.snapshot.clone());
        }
        if let Some((at, snapshot)) = &kept.styled
            && *at == cwd
        {
            return Some(snapshot.clone());
        }
        let native = kept.native.as_ref()?;
        let style = super::status::path_style_in(
            &cwd,
            &kept.job.handle.work_tree,
            native.state.ctx.settings,
        );
        let lines = native.state.lines_with(&style).ok()?;
        let answer = StatusAnswer::Lines {
            lines,
            engine: StatusEngine::Native,
            declined: None,
            unlisted: native.state.unlisted(),
        };
        let snapshot = assemble(kept.meta.clone(), answer, kept.job.handle.work_tree.clone());
        kept.styled = Some((cwd, snapshot.clone()));
        Some(snapshot)
    }
}

impl Native {
    fn new(state: NativeState) -> Native {
        let mut n = Native {
            state,
            dir_index: HashMap::new(),
            with_gitlinks: Vec::new(),
        };
        n.reindex();
        n
    }

    fn reindex(&mut self) {
        let state = &self.state;
        self.dir_index = state
            .dirs
            .iter()
            .enumerate()
            .map(|(k, d)| (d.path.clone(), k))
            .collect();
        self.with_gitlinks = state
            .dirs
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                d.direct
                    .iter()
                    .any(|&i| state.ctx.index.entry(i).mode & 0o170000 == 0o160000)
            })
            .map(|(k, _)| k)
            .collect();
    }

    /// The tracked directories whose answer `rel` (a work tree path, `/`-separated) may change. `None`: only a
    /// full snapshot can tell.
    fn affected(&self, rel: &[u8], out: &mut Vec<usize>) -> Option<()> {
        if rel == b".git" || rel.starts_with(b".git/") {
            return Some(()); // the git directory: checked by its stamps
        }
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        if name == b".gitattributes" {
            return None;
        }
        let parent_len = rel.len() - name.len();
        let under = |prefix: &[u8], out: &mut Vec<usize>| {
            out.extend(
                self.state
                    .dirs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.path.starts_with(prefix))
                    .map(|(k, _)| k),
            );
        };
        if name == b".gitignore" {
            under(&rel[..parent_len], out);
        }
        // The path itself as a tracked directory (created, removed, replaced): it and everything below.
        let mut as_dir = rel.to_vec();
        as_dir.push(b'/');
        if self.dir_index.contains_key(&as_dir) {
            under(&as_dir, out);
        }
        // The nearest tracked directory holding it: its listing and its entries.
        let mut end = parent_len;
        loop {
            if let Some(&k) = self.dir_index.get(&rel[..end]) {
                out.push(k);
                break;
            }
            if end == 0 {
                break;
            }
            end = rel[..end - 1]
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(0, |p| p + 1);
        }
        Some(())
    }
}

impl Kept {
    fn relative(&self, p: &Path) -> Option<Vec<u8>> {
        let rel = p
            .strip_prefix(&self.job.handle.work_tree)
            .ok()
            .or_else(|| {
                self.work_tree_alias
                    .as_ref()
                    .and_then(|a| p.strip_prefix(a).ok())
            })?;
        let mut b = super::os_to_bytes(rel.as_os_str());
        if cfg!(windows) {
            b.iter_mut()
                .filter(|c| **c == b'\\')
                .for_each(|c| *c = b'/');
        }
        while b.ends_with(b"/") {
            b.pop();
        }
        Some(b)
    }

    /// Reads the index again and keeps the directories whose entries (and tracked subdirectories) did not change;
    /// compares HEAD with the new index. Returns the directories to redo.
    fn update_index(&mut self) -> Result<Vec<usize>, Halt> {
        let declined = |why: &str| Halt::Declined(why.into());
        let native = self
            .native
            .as_mut()
            .ok_or_else(|| declined("no native state"))?;
        let path = self.job.handle.git_dir.join("index");
        let (buf, racy_from) = read_index_file(&path)
            .ok()
            .flatten()
            .ok_or_else(|| declined("the index cannot be read"))?;
        let index = parse_index(buf).ok_or_else(|| declined("the index does not parse"))?;
        if index.unsupported.is_some() {
            return Err(declined(
                "the index uses an extension the native engine does not read",
            ));
        }
        let repo = self
            .job
            .handle
            .open()
            .map_err(|e| Halt::Declined(e.message().to_owned()))?;
        let never = AtomicBool::new(false);
        let staged = native_staged(
            &index,
            native.state.ctx.settings,
            &repo,
            &Flags::new(&never),
        )?;
        super::native::check_precompose(&index, &native.state.ctx.settings)
            .map_err(Halt::Declined)?;
        // git's untracked cache lives in the index: the one just written is the one git reads now.
        let ctx = &native.state.ctx;
        native.state.ctx.untracked = super::status::usable_untracked_cache(
            &index,
            &ctx.settings,
            ctx.filters,
            &ctx.work_tree,
            ctx.exclude_oids,
        );
        let old_index = std::mem::replace(&mut native.state.ctx.index, index);
        native.state.ctx.racy_from = racy_from;
        let new_dirs = tracked_dirs(&native.state.ctx.index);
        let old = &native.state;
        let same_entries = |o: &TrackedDir, n: &TrackedDir| {
            o.direct.len() == n.direct.len()
                && o.direct
                    .iter()
                    .zip(&n.direct)
                    .all(|(&a, &b)| old_index.entry_raw(a) == old.ctx.index.entry_raw(b))
        };
        let mut results = Vec::with_capacity(new_dirs.len());
        let mut dirty = Vec::new();
        for (k, d) in new_dirs.iter().enumerate() {
            match native.dir_index.get(&d.path) {
                Some(&o) if same_entries(&old.dirs[o], d) => results.push(old.results[o].clone()),
                _ => {
                    results.push(WorktreePart::default());
                    dirty.push(k);
                }
            }
        }
        // A tracked directory that appeared or went changes what its parent lists as untracked.
        let new_index: HashMap<Vec<u8>, usize> = new_dirs
            .iter()
            .enumerate()
            .map(|(k, d)| (d.path.clone(), k))
            .collect();
        let parent_of = |p: &[u8]| -> Vec<u8> {
            let t = p.strip_suffix(b"/").unwrap_or(p);
            t.iter()
                .rposition(|&b| b == b'/')
                .map_or_else(Vec::new, |i| t[..=i].to_vec())
        };
        for d in &new_dirs {
            if !native.dir_index.contains_key(&d.path) && !d.path.is_empty() {
                dirty.extend(new_index.get(&parent_of(&d.path)));
            }
        }
        for d in &old.dirs {
            if !new_index.contains_key(&d.path) {
                dirty.extend(new_index.get(&parent_of(&d.path)));
            }
        }
        native.state.dirs = new_dirs;
        native.state.results = results;
        native.state.staged = staged;
        native.reindex();
        Ok(dirty)
    }

    /// Redoes the directories `paths` affect, and `dirty`. `Err` when only a full snapshot can answer.
    fn update(&mut self, paths: &[PathBuf], mut dirty: Vec<usize>) -> Result<(), Halt> {
        let declined = || Halt::Declined("a full snapshot is needed".into());
        let native = self.native.as_ref().ok_or_else(declined)?;
        dirty.extend(native.with_gitlinks.iter().copied());
        for p in paths {
            let Some(rel) = self.relative(p) else {
                continue; // outside the work tree
            };
            if rel.is_empty() {
                return Err(declined()); // the work tree itself
            }
            native.affected(&rel, &mut dirty).ok_or_else(declined)?;
        }
        if dirty.is_empty() {
            return Ok(());
        }
        self.styled = None;
        dirty.sort_unstable();
        dirty.dedup();
        let never = AtomicBool::new(false);
        let flags = Flags::new(&never);
        let redone = rescan(&native.state.ctx, &native.state.dirs, &dirty, &flags)?;
        let native = self.native.as_mut().ok_or_else(declined)?;
        for (k, part) in redone {
            native.state.results[k] = part;
        }
        let lines = native.state.lines()?;
        let answer = StatusAnswer::Lines {
            lines,
            engine: StatusEngine::Native,
            declined: None,
            unlisted: native.state.unlisted(),
        };
        self.snapshot = assemble(self.meta.clone(), answer, self.job.handle.work_tree.clone());
        Ok(())
    }
}
