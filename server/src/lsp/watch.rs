//! The server's own file watcher. For clients that cannot watch files for it (no dynamic
//! registration of `workspace/didChangeWatchedFiles`: Neovim 0.11 on Linux, or a registration the
//! client refused) it watches everything ([`Scope::Everything`]): without it the previews, hovers,
//! lenses and the git block would keep what they read first while a new chat session reads the
//! disk. rust-analyzer does the same for such clients, with the same crate (`notify`: inotify,
//! FSEvents, ReadDirectoryChangesW).
//!
//! For clients that do watch, it still watches the places outside the workspace itself
//! ([`Scope::OutsideOnly`]): the user's and managed folders, `~/.claude.json`'s folder and the
//! memory directories. Asking the client for those would be a relative pattern based at the
//! home folder, and clients implement that as a recursive watch of the base (Neovim 0.11 walks
//! the whole home folder, synchronously, for `{baseUri: ~, pattern: ".claude.json"}`); here each
//! is one non-recursive watch.
//!
//! What is watched, each directory on its own (never a recursive watch of the whole tree):
//! every directory of each workspace folder that git would not ignore (the `ignore` crate's
//! walker, as `check`'s scan; `node_modules/` or `target/` cost nothing), every `.claude` folder
//! whatever `.gitignore` says, the git directory itself (not its contents: `HEAD`, the index
//! and the branch files move there on a commit or a checkout), and outside the workspace what
//! the client's watchers would cover: `~/.claude` and its rules, `~/.claude.json`'s folder, the
//! managed directory, each folder's memory directory. A directory created later is walked and
//! watched when its event arrives, and the files already in it are reported as created (they
//! may have been written before the watch was in place).
//!
//! Events are gathered for [`QUIET`] (at most [`MAX_DELAY`] under a steady stream), then go
//! where the client's events go ([`on_disk`]): the walks, previews and status caches. Once every
//! directory is watched the status caches trust the events ([`State::trust_file_events`]); when
//! a watch cannot be added (the inotify limit, [`MAX_DIRS`]) or the kernel's queue overflowed,
//! they go back to a full walk before each snapshot and everything is read again.
//!
//! [`State::trust_file_events`]: super::state::State::trust_file_events

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use notify::event::{EventKind, ModifyKind, RenameMode};
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::Backend;
use super::handlers::did_change_watched_files::{DiskChange, on_disk};
use crate::tasks::{OnConflict, TaskKind};

/// Events closer together than this are handled as one batch.
pub const QUIET: Duration = Duration::from_millis(50);
/// A batch is handled at the latest this long after its first event.
pub const MAX_DELAY: Duration = Duration::from_millis(300);
/// Directories watched at most (each is one inotify watch, about 1 KB of kernel memory).
pub const MAX_DIRS: usize = 50_000;

/// What the server's watcher covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The workspace folders and the places outside them: the client watches nothing.
    Everything,
    /// Only the places outside the workspace folders: the client watches the folders.
    OutsideOnly,
}

/// The watcher and what it watches.
pub struct ServerWatch {
    pub(crate) scope: Scope,
    watcher: Mutex<notify::RecommendedWatcher>,
    dirs: Mutex<HashSet<PathBuf>>,
    /// The user was told that not everything is watched.
    warned: AtomicBool,
    /// Marks written by [`ServerWatch::settle`] and how far the handling of events has come.
    settle: Settle,
    /// Bumped by every batch that created, deleted or renamed something, or changed a directory
    /// or an ignore file: what a kept project scan depends on (`lsp/warm.rs`).
    pub(crate) structure: AtomicU64,
}

/// The marks of [`ServerWatch::settle`]: `settle-<pid>-<n>` files created in a folder the watch
/// covers; when the event of mark `n` comes out of the queue, every event queued before it has
/// been handled once the batch holding it is.
#[derive(Default)]
struct Settle {
    dir: Mutex<Option<PathBuf>>,
    asked: AtomicU64,
    handled: Mutex<u64>,
    cv: Condvar,
}

/// The mark number of `path` when it is one of this process's marks in `dir`.
fn mark_of(dir: Option<&Path>, path: &Path) -> Option<u64> {
    let dir = dir?;
    if path.parent() != Some(dir) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("settle-")?;
    let (pid, n) = rest.split_once('-')?;
    (pid == std::process::id().to_string()).then(|| n.parse().ok())?
}

impl ServerWatch {
    /// Watches `dir` (not recursively). `false` when it could not be added.
    fn add(&self, dir: &Path) -> bool {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        if dirs.contains(dir) {
            return true;
        }
        if dirs.len() >= MAX_DIRS {
            return false;
        }
        let mut w = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        match w.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                dirs.insert(dir.to_path_buf());
                true
            }
            Err(e) => {
                crate::log_debug!("not watched: {}: {e}", dir.display());
                false
            }
        }
    }

    /// Forgets `dir` and everything below it (deleted or renamed away).
    pub(crate) fn remove_below(&self, gone: &Path) {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        let below: Vec<PathBuf> = dirs
            .iter()
            .filter(|d| d.starts_with(gone))
            .cloned()
            .collect();
        let mut w = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        for d in below {
            let _ = w.unwatch(&d);
            dirs.remove(&d);
        }
    }

    /// Returns once every change made on disk before the call has been handled (reached the
    /// walks, previews and status caches), as [`on_disk`] handles them: a mark file is created
    /// in `dir` (a private folder, watched here) and its event awaited; the kernel queues events
    /// in order, so the ones before it came out of the queue first. `Err` when that takes longer
    /// than `wait` or the mark cannot be made.
    pub fn settle(&self, dir: &Path, wait: Duration) -> Result<(), String> {
        let until = Instant::now() + wait;
        {
            let mut d = self.settle.dir.lock().unwrap_or_else(|p| p.into_inner());
            if d.as_deref() != Some(dir) {
                if !self.add(dir) {
                    return Err(format!("cannot watch {}", dir.display()));
                }
                *d = Some(dir.to_path_buf());
            }
        }
        let n = self.settle.asked.fetch_add(1, Ordering::AcqRel) + 1;
        let mark = dir.join(format!("settle-{}-{n}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&mark)
            .map_err(|e| format!("{}: {e}", mark.display()))?;
        let handled = self
            .settle
            .handled
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let left = until.saturating_duration_since(Instant::now());
        let (handled, _) = self
            .settle
            .cv
            .wait_timeout_while(handled, left, |h| *h < n)
            .unwrap_or_else(|p| p.into_inner());
        let done = *handled >= n;
        drop(handled);
        let _ = std::fs::remove_file(&mark);
        if done {
            Ok(())
        } else {
            Err(format!("the file watcher did not catch up within {wait:?}"))
        }
    }

    fn settle_dir(&self) -> Option<PathBuf> {
        self.settle
            .dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many directories are watched.
    pub fn len(&self) -> usize {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Watches the tree at `root` as described in the module doc; returns the files found when
    /// `files` (for a directory that just appeared) and whether every directory could be watched.
    fn add_tree(&self, root: &Path, ignore_rules: bool, files: bool) -> (Vec<PathBuf>, bool) {
        let (dirs, files) = tree(root, ignore_rules, files);
        let mut complete = true;
        for d in &dirs {
            complete &= self.add(d);
        }
        (files, complete)
    }
}

/// The directories (and the files, when `want_files`) of the tree at `root`: with
/// `ignore_rules`, those git would not ignore plus every `.claude` folder and the git directory
/// itself; without, all of them. Links are not followed. The files of a whole workspace folder
/// are not kept when nobody reads them (100,000 paths, ~10 MiB the allocator keeps after).
fn tree(root: &Path, ignore_rules: bool, want_files: bool) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut claude = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(ignore_rules)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk.flatten() {
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            let d = entry.into_path();
            if ignore_rules {
                let c = d.join(".claude");
                if c.is_dir() {
                    claude.push(c);
                }
                let g = d.join(".git");
                if g.is_dir() {
                    dirs.push(g);
                }
            }
            dirs.push(d);
        } else if want_files {
            files.push(entry.into_path());
        }
    }
    for c in claude {
        if !dirs.contains(&c) {
            let (d, f) = tree(&c, false, want_files);
            dirs.extend(d);
            files.extend(f);
        }
    }
    (dirs, files)
}

/// The places outside the workspace folders that change what a session loads, each with
/// whether its whole tree is watched: the managed folder (tree), the home folder (for
/// `~/.claude.json`), the user's folder (`~/.claude`, or `CLAUDE_CONFIG_DIR`: CLAUDE.md,
/// settings) and its rules (tree), each folder's memory directory.
fn outside(b: &Backend) -> Vec<(PathBuf, bool)> {
    let st = &b.state;
    let mut out = vec![(st.env.managed_dir.clone(), true)];
    if let Some(home) = &st.env.home {
        out.push((home.clone(), false));
    }
    let user = st
        .env
        .config_dir
        .clone()
        .or_else(|| st.env.home.as_ref().map(|h| h.join(".claude")));
    if let Some(user) = user {
        // `CLAUDE_CONFIG_DIR` holds `.claude.json` itself.
        out.push((user.join("rules"), true));
        out.push((user, false));
    }
    for f in st.folders() {
        if let Some(m) = st.context(&f).memory_dir.clone() {
            out.push((m, false));
        }
    }
    out
}

/// Whether a directory that just appeared outside the workspace is watched: one of the places
/// of [`outside`] (created after the server started), or a folder inside a watched tree.
fn outside_wanted(b: &Backend, dir: &Path) -> bool {
    outside(b)
        .iter()
        .any(|(d, tree)| d == dir || (*tree && dir.starts_with(d)))
}

/// Starts the server's watcher (a task): over everything when the client cannot watch, or
/// refused the registration; over the places outside the workspace when it watches the folders.
pub fn start(b: &Backend, scope: Scope) {
    let (tx, rx) = mpsc::unbounded_channel();
    // Only changes: without the mask inotify reports every open and close in the tree (the
    // server's own reads among them), each one read, allocated and sent here to be dropped.
    let watcher = notify::RecommendedWatcher::new(
        move |e: notify::Result<notify::Event>| {
            let _ = tx.send(e);
        },
        notify::Config::default().with_event_kinds(notify::EventKindMask::CORE),
    );
    let watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            crate::log_warn!(
                "cannot watch files ({e}): previews follow the disk only every git.refreshSeconds"
            );
            return;
        }
    };
    let watch = Arc::new(ServerWatch {
        scope,
        watcher: Mutex::new(watcher),
        dirs: Mutex::default(),
        warned: AtomicBool::new(false),
        settle: Settle::default(),
        structure: AtomicU64::new(0),
    });
    if b.state.watch.set(watch.clone()).is_err() {
        return;
    }
    let b2 = b.clone();
    b.spawn(
        TaskKind::Refresh,
        "watch".into(),
        OnConflict::Join,
        move |token| async move {
            let (w, b3) = (watch.clone(), b2.clone());
            let (complete, missed) = tokio::task::spawn_blocking(move || {
                let mut complete = true;
                if w.scope == Scope::Everything {
                    for f in b3.state.folders() {
                        complete &= w.add_tree(&f, true, false).1;
                    }
                }
                let mut seen = Vec::new();
                for (d, recursive) in outside(&b3) {
                    if !d.is_dir() {
                        continue;
                    }
                    if recursive {
                        seen.extend(w.add_tree(&d, false, true).0);
                    } else if w.add(&d) {
                        let files = std::fs::read_dir(&d).into_iter().flatten().flatten();
                        seen.extend(files.map(|e| e.path()));
                    }
                }
                (complete, changed_since(seen, b3.state.started))
            })
            .await
            .unwrap_or((false, Vec::new()));
            // A walk may have read these places before their watch was in place: what changed
            // there since the server started is read again (nothing, at a usual start).
            if !missed.is_empty() {
                on_disk(&b2, missed);
            }
            if watch.scope == Scope::Everything {
                crate::log_info!(
                    "watching {} folders for changes on disk (the client does not watch files)",
                    watch.len()
                );
                trust(&b2, &watch, complete);
            } else {
                crate::log_debug!(
                    "watching {} folders outside the workspace for changes on disk",
                    watch.len()
                );
            }
            tokio::select! {
                _ = serve(&b2, &watch, rx) => {}
                _ = token.cancelled() => {}
            }
        },
    );
}

/// Watches a workspace folder added after `initialize` (only its memory directory when the
/// client watches the folders).
pub fn add_folder(b: &Backend, folder: PathBuf) {
    let Some(watch) = b.state.watch.get().cloned() else {
        return;
    };
    if watch.scope == Scope::OutsideOnly {
        let b2 = b.clone();
        b.spawn(
            TaskKind::Refresh,
            format!("watch:{}", folder.display()),
            OnConflict::Join,
            move |_| async move {
                let st = b2.state.clone();
                let missed = tokio::task::spawn_blocking(move || {
                    let Some(m) = st.context(&folder).memory_dir.clone() else {
                        return Vec::new();
                    };
                    if !watch.add(&m) {
                        return Vec::new();
                    }
                    let files = std::fs::read_dir(&m).into_iter().flatten().flatten();
                    changed_since(files.map(|e| e.path()), st.started)
                })
                .await
                .unwrap_or_default();
                if !missed.is_empty() {
                    on_disk(&b2, missed);
                }
            },
        );
        return;
    }
    let b2 = b.clone();
    let key = format!("watch:{}", folder.display());
    b.spawn(
        TaskKind::Refresh,
        key,
        OnConflict::Join,
        move |_| async move {
            let w = watch.clone();
            let complete = tokio::task::spawn_blocking(move || w.add_tree(&folder, true, false).1)
                .await
                .unwrap_or(false);
            if !complete {
                trust(&b2, &watch, false);
            }
        },
    );
}

/// Of `files`, those modified since `since`, as changes (a coarse timestamp rounds down: a file
/// written just before is never taken for one written after).
fn changed_since(
    files: impl IntoIterator<Item = PathBuf>,
    since: std::time::SystemTime,
) -> Vec<(PathBuf, DiskChange)> {
    files
        .into_iter()
        .filter(|f| {
            f.symlink_metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        })
        .map(|f| (f, DiskChange::Created))
        .collect()
}

/// The status caches may keep what they hold between events only while every directory is
/// watched.
fn trust(b: &Backend, watch: &ServerWatch, complete: bool) {
    if complete {
        b.state.trust_file_events();
        return;
    }
    b.state.watch_all.store(false, Ordering::Release);
    if !watch.warned.swap(true, Ordering::AcqRel) {
        crate::log_warn!(
            "not every folder can be watched (more than {MAX_DIRS}, or the system's limit \
             fs.inotify.max_user_watches): the git block is read again in full before each \
             snapshot, and changes in unwatched folders show after git.refreshSeconds"
        );
    }
}

/// Gathers events into batches and hands each to [`handle`].
async fn serve(
    b: &Backend,
    watch: &Arc<ServerWatch>,
    mut rx: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
) {
    while let Some(first) = rx.recv().await {
        // A mark of `settle` ends the batch at once: someone waits for what came before it.
        let dir = watch.settle_dir();
        let mut marks = 0;
        let mut batch = Vec::new();
        let mut take = |e: notify::Result<notify::Event>, batch: &mut Vec<_>| match e {
            Ok(e) if e.paths.iter().any(|p| mark_of(dir.as_deref(), p).is_some()) => {
                for p in &e.paths {
                    marks = marks.max(mark_of(dir.as_deref(), p).unwrap_or(0));
                }
                true
            }
            e => {
                batch.push(e);
                false
            }
        };
        let mut marked = take(first, &mut batch);
        let deadline = tokio::time::Instant::now() + MAX_DELAY;
        while !marked {
            let quiet = (tokio::time::Instant::now() + QUIET).min(deadline);
            match tokio::time::timeout_at(quiet, rx.recv()).await {
                Ok(Some(e)) => marked = take(e, &mut batch),
                Ok(None) => return,
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            let (b2, w) = (b.clone(), watch.clone());
            let _ = tokio::task::spawn_blocking(move || handle(&b2, &w, batch)).await;
        }
        if marks > 0 {
            let mut h = watch
                .settle
                .handled
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            *h = (*h).max(marks);
            watch.settle.cv.notify_all();
        }
    }
}

/// One batch of events: new directories watched, gone ones forgotten, then every path reported
/// as the client's events are.
fn handle(b: &Backend, watch: &ServerWatch, batch: Vec<notify::Result<notify::Event>>) {
    let mut changes: Vec<(PathBuf, DiskChange)> = Vec::new();
    let mut rescan = false;
    for e in batch {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                crate::log_debug!("file watcher: {err}");
                rescan = true;
                continue;
            }
        };
        rescan |= e.need_rescan();
        match e.kind {
            EventKind::Access(_) => {}
            EventKind::Create(_) => {
                changes.extend(e.paths.into_iter().map(|p| (p, DiskChange::Created)))
            }
            EventKind::Remove(_) => {
                changes.extend(e.paths.into_iter().map(|p| (p, DiskChange::Deleted)))
            }
            EventKind::Modify(ModifyKind::Name(mode)) => {
                for (i, p) in e.paths.into_iter().enumerate() {
                    let kind = match mode {
                        RenameMode::From => DiskChange::Deleted,
                        RenameMode::To => DiskChange::Created,
                        RenameMode::Both if i == 0 => DiskChange::Deleted,
                        RenameMode::Both => DiskChange::Created,
                        _ if p.symlink_metadata().is_ok() => DiskChange::Created,
                        _ => DiskChange::Deleted,
                    };
                    changes.push((p, kind));
                }
            }
            _ => changes.extend(e.paths.into_iter().map(|p| (p, DiskChange::Changed))),
        }
    }
    let mut complete = true;
    let mut found = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for (path, kind) in &changes {
        match kind {
            DiskChange::Deleted => watch.remove_below(path),
            DiskChange::Created
                if path.symlink_metadata().is_ok_and(|m| m.is_dir())
                    && seen.insert(path.clone()) =>
            {
                if outside_wanted(b, path) {
                    // A user's, managed or memory folder created after the start.
                    let tree = outside(b)
                        .into_iter()
                        .any(|(d, tree)| tree && path.starts_with(&d));
                    if tree {
                        let (files, _) = watch.add_tree(path, false, true);
                        found.extend(files.into_iter().map(|f| (f, DiskChange::Created)));
                    } else if watch.add(path) {
                        // Files written before the watch was in place.
                        let files = std::fs::read_dir(path).into_iter().flatten().flatten();
                        found.extend(files.map(|e| (e.path(), DiskChange::Created)));
                    }
                } else if watch.scope == Scope::Everything && wanted(path) {
                    let (files, ok) = watch.add_tree(path, true, true);
                    complete &= ok;
                    found.extend(files.into_iter().map(|f| (f, DiskChange::Created)));
                }
            }
            _ => {}
        }
        // A changed .gitignore may stop ignoring folders: watch what it now lets through.
        if watch.scope == Scope::Everything
            && path.file_name().is_some_and(|n| n == ".gitignore")
            && let Some(dir) = path.parent()
            && seen.insert(dir.to_path_buf())
        {
            complete &= watch.add_tree(dir, true, false).1;
        }
    }
    changes.extend(found);
    let structural = rescan
        || changes.iter().any(|(p, kind)| {
            *kind != DiskChange::Changed
                || p.file_name()
                    .is_some_and(|n| n == ".gitignore" || n == ".ignore" || n == "exclude")
                || p.symlink_metadata().is_ok_and(|m| m.is_dir())
        });
    if structural {
        watch.structure.fetch_add(1, Ordering::AcqRel);
    }
    if !complete && watch.scope == Scope::Everything {
        trust(b, watch, false);
    }
    if rescan && watch.scope == Scope::OutsideOnly {
        crate::log_info!("file watcher: events were lost; reading the user's files again");
        changes.extend(
            outside(b)
                .into_iter()
                .map(|(d, _)| (d, DiskChange::Created)),
        );
    } else if rescan {
        // Events were lost: everything may have changed.
        crate::log_info!("file watcher: events were lost; reading everything again");
        if b.state.watch_all.load(Ordering::Acquire) {
            b.state.trust_file_events();
        }
        for f in b.state.folders() {
            changes.push((f, DiskChange::Created));
        }
    }
    if !changes.is_empty() {
        on_disk(b, changes);
    }
}

/// Should a directory that just appeared be watched: not when git ignores it (a
/// `node_modules/` being filled), always when it is a `.claude` folder.
fn wanted(dir: &Path) -> bool {
    if dir.file_name().is_some_and(|n| n == ".claude") {
        return true;
    }
    let Some(parent) = dir.parent() else {
        return true;
    };
    ignore::WalkBuilder::new(parent)
        .hidden(false)
        .max_depth(Some(1))
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .flatten()
        .any(|e| e.path() == dir)
}
