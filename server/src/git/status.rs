//! Computing the status: one engine per answer. The native engine answers when it can reproduce git exactly; when it
//! declines (or meets an error), the git CLI answers the whole status instead, under the same deadline and stop flag.
//! A status that neither can give is a [`StatusProblem`], never a guess.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Instant;

use git2::{ErrorCode, Repository};

use super::command;
use super::config::{Renames, RepoHandle, Settings, attributes_file, excludes_file};
use super::env::GitEnv;
use super::ignore::IgnoreFile;
use super::index::{IndexReadError, ParsedIndex, parse_index, read_index_file};
use super::native::{Flags, Halt, NativeCtx, TrackedDir, WorktreePart, tracked_dirs};
use super::render::{Change, PathStyle, StatusParts, build_lines};
use super::staged::native_staged;
use super::{Engine, StatusEngine, StatusProblem, StatusProblemKind};

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

pub(super) fn head_tree(repo: &Repository) -> Result<Option<git2::Tree<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_tree()?)),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Knobs for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tuning {
    /// Work tree walkers (native engine); `None`: by core count and index size.
    pub(super) workers: Option<usize>,
}

/// Everything a status computation needs, owned (it runs on its own thread).
#[derive(Debug, Clone)]
pub(super) struct StatusJob {
    pub(super) handle: RepoHandle,
    pub(super) common_dir: PathBuf,
    /// The session's directory (canonical): paths are relative to it, and the git CLI runs in it.
    pub(super) cwd: PathBuf,
    pub(super) env: GitEnv,
    pub(super) engine: Engine,
    pub(super) tuning: Tuning,
    pub(super) deadline: Instant,
}

/// The status, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StatusAnswer {
    Lines {
        lines: Vec<String>,
        engine: StatusEngine,
        /// Why the native engine did not answer (when the git CLI did).
        declined: Option<String>,
        /// Tracked directories the native walk did not list (git's untracked cache vouched for them).
        unlisted: usize,
    },
    Problem(StatusProblem),
}

/// What the native engine needs besides the job, prepared from the repository.
pub(super) struct Prepared {
    pub(super) ctx: NativeCtx,
    pub(super) repo: Repository,
}

/// Opens the repository, reads its settings and its index, and builds the native engine's context. `Err` says why
/// the native engine cannot answer (`Halt::Declined`), or that git cannot either (`Err(Ok(problem))`).
pub(super) fn prepare(
    job: &StatusJob,
    stop: &AtomicBool,
) -> Result<(Prepared, PathStyleOwned), Result<StatusProblem, Halt>> {
    let declined = |m: String| Err(Err(Halt::Declined(m)));
    let repo = match job.handle.open() {
        Ok(r) => r,
        Err(e) => {
            return declined(format!(
                "libgit2 cannot open the repository: {}",
                e.message()
            ));
        }
    };
    let cfg = match repo.config().and_then(|mut c| c.snapshot()) {
        Ok(c) => c,
        Err(e) => return declined(format!("cannot read the config: {}", e.message())),
    };
    let settings = Settings::read(&cfg);
    let style = path_style(job, settings);
    if let Some(why) = settings.native_blocker {
        return declined(why.to_owned());
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Err(Halt::Stopped));
    }
    let index_path = job.handle.git_dir.join("index");
    let (index, racy_from) = match read_index_file(&index_path) {
        Ok(None) => (ParsedIndex::default(), 0),
        Ok(Some((buf, mtime))) => match parse_index(buf) {
            Some(p) => (p, mtime),
            None => return declined("the index is not in a format it reads".into()),
        },
        Err(IndexReadError::NotAFile(m)) => {
            return Err(Ok(StatusProblem {
                kind: StatusProblemKind::Unavailable,
                message: format!("git cannot read the index: {m}"),
            }));
        }
        Err(IndexReadError::Io(m)) => return declined(format!("cannot read the index: {m}")),
    };
    if let Some(what) = index.unsupported {
        return declined(format!("the index uses {what}"));
    }
    if let Err(why) = super::native::check_precompose(&index, &settings) {
        return declined(why);
    }
    let mut sources: Vec<PathBuf> = Vec::new();
    for i in 0..index.len() {
        let name = index.name(i);
        if name == b".gitattributes" || name.ends_with(b"/.gitattributes") {
            sources.push(job.handle.work_tree.join(super::bytes_to_path(name)));
        }
    }
    sources.push(job.common_dir.join("info/attributes"));
    sources.extend(attributes_file(&cfg, &job.env));
    let mut inputs: Vec<PathBuf> = sources
        .iter()
        .filter(|p| !p.starts_with(&job.handle.work_tree))
        .cloned()
        .collect();
    let mut complex_attributes = false;
    let mut any_attributes = index.has_attributes;
    for p in &sources {
        // Never `fs::read`: a FIFO here would hold the worker forever (git itself blocks).
        match crate::fs::read_regular(p) {
            Ok(text) => {
                any_attributes = true;
                complex_attributes |= [&b"filter"[..], b"ident", b"working-tree-encoding"]
                    .iter()
                    .any(|w| text.windows(w.len()).any(|x| x == *w));
            }
            // A tracked .gitattributes missing from the work tree: git reads the index's copy, we don't.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                complex_attributes |= p.starts_with(&job.handle.work_tree);
            }
            Err(e) => return declined(format!("cannot read {}: {e}", p.display())),
        }
    }
    let mut base_ignores = Vec::new();
    // The object names git's untracked cache records for these two files (`None`: it cannot be used).
    let mut exclude_oids: [Option<[u8; super::index::HASH_LEN]>; 2] = [Some([0; 20]); 2];
    for (k, p) in [
        excludes_file(&cfg, &job.env),
        Some(job.common_dir.join("info/exclude")),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(p) = p else { continue };
        inputs.push(p.clone());
        match crate::fs::read_regular(&p) {
            Ok(t) => {
                exclude_oids[k] = Some(super::untracked::exclude_oid(&t));
                base_ignores.push(IgnoreFile::parse_with(&t, settings.ignore_case));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if crate::fs::is_directory_error(&e) => exclude_oids[k] = None,
            Err(e) => return declined(format!("cannot read {}: {e}", p.display())),
        }
    }
    let filters = settings.eol_config || any_attributes;
    let untracked = usable_untracked_cache(
        &index,
        &settings,
        filters,
        &job.handle.work_tree,
        exclude_oids,
    );
    let ctx = NativeCtx {
        index,
        work_tree: job.handle.work_tree.clone(),
        settings,
        filters,
        complex_attributes,
        racy_from,
        untracked,
        exclude_oids,
        base_ignores,
        inputs,
    };
    Ok((Prepared { ctx, repo }, style))
}

/// git's untracked cache, when the index has one that `git status` would use as it is: `core.untrackedCache` is not
/// `false`, the cache was made for this work tree on this system (its identity string), for `git status` without
/// `-uall` (its flags), with `.gitignore` as the per-directory file, and the global exclude files still have the
/// content it recorded. The walk uses it only where it reproduces git exactly without it: never with
/// `core.ignorecase` or `core.precomposeUnicode` (names compared otherwise than byte for byte) nor when attributes or
/// end-of-line conversion could change how git reads a `.gitignore`.
pub(super) fn usable_untracked_cache(
    index: &ParsedIndex,
    settings: &Settings,
    filters: bool,
    work_tree: &std::path::Path,
    exclude_oids: [Option<[u8; super::index::HASH_LEN]>; 2],
) -> Option<super::untracked::UntrackedCache> {
    use super::config::Untracked;
    if settings.untracked_cache_off
        || settings.untracked != Untracked::Normal
        || settings.ignore_case
        || settings.precompose
        || filters
    {
        return None;
    }
    let uc = super::untracked::parse(index.untracked_data()?)?;
    let ident = format!(
        "Location {}, system {}",
        work_tree.display(),
        super::untracked::system_name()
    );
    let [excludes_file, info_exclude] = exclude_oids;
    (uc.ident == ident.as_bytes()
        && uc.dir_flags == super::untracked::NORMAL_FLAGS
        && uc.exclude_per_dir == b".gitignore"
        && excludes_file == Some(uc.excludes_file_oid)
        && info_exclude == Some(uc.info_exclude_oid)
        && !uc.nodes.is_empty())
    .then_some(uc)
}

/// How paths are printed, owned.
#[derive(Debug, Clone)]
pub(super) struct PathStyleOwned {
    pub(super) prefix: Vec<u8>,
    pub(super) quote_fully: bool,
}

impl PathStyleOwned {
    pub(super) fn borrow(&self) -> PathStyle<'_> {
        PathStyle {
            prefix: &self.prefix,
            quote_fully: self.quote_fully,
        }
    }
}

fn path_style(job: &StatusJob, settings: Settings) -> PathStyleOwned {
    path_style_in(&job.cwd, &job.handle.work_tree, settings)
}

/// How paths are printed for a session in `cwd` (canonical) of the work tree `work_tree`.
pub(super) fn path_style_in(
    cwd: &std::path::Path,
    work_tree: &std::path::Path,
    settings: Settings,
) -> PathStyleOwned {
    let prefix = match cwd.strip_prefix(work_tree) {
        Ok(rel) if settings.relative && !rel.as_os_str().is_empty() => {
            let mut p = super::os_to_bytes(rel.as_os_str());
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
    PathStyleOwned {
        prefix,
        quote_fully: settings.quote_fully,
    }
}

/// How many walkers: more than cores (the work is mostly system calls; git's preload uses up to 20), fewer for a
/// small index.
pub(super) fn walkers(tuning: Tuning, entries: usize) -> usize {
    tuning.workers.unwrap_or_else(|| {
        let cores = thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 4)
            * 2;
        cores.min(entries / 1500).max(1)
    })
}

/// The native engine's answer and what it was made of: what a [`super::StatusCache`] needs to redo part of it.
pub(super) struct NativeState {
    pub(super) ctx: NativeCtx,
    pub(super) dirs: Vec<TrackedDir>,
    /// What each of `dirs` holds (same positions).
    pub(super) results: Vec<WorktreePart>,
    pub(super) staged: Vec<Change>,
    pub(super) style: PathStyleOwned,
}

impl NativeState {
    /// How many tracked directories were not listed (git's untracked cache vouched for them).
    pub(super) fn unlisted(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.from_untracked_cache)
            .count()
    }

    /// The status lines from the parts, after the checks that need the whole answer.
    pub(super) fn lines(&self) -> Result<Vec<String>, Halt> {
        self.lines_with(&self.style)
    }

    /// [`NativeState::lines`], with paths printed in `style` (a session in another directory).
    pub(super) fn lines_with(&self, style: &PathStyleOwned) -> Result<Vec<String>, Halt> {
        let mut worktree = WorktreePart::default();
        for w in &self.results {
            worktree.changes.extend(w.changes.iter().cloned());
            // git's `index_name_is_other`: a name the index has is not untracked (only a replayed untracked cache
            // can offer one: a directory where a tracked file was, shown as `dir/`).
            let index = &self.ctx.index;
            let other = |u: &&Vec<u8>| {
                self.ctx.untracked.is_none()
                    || !index.has_name(u.strip_suffix(b"/").unwrap_or(u.as_slice()))
            };
            worktree
                .untracked
                .extend(w.untracked.iter().filter(other).cloned());
            worktree.untracked_attributes |= w.untracked_attributes;
            worktree.compared_raw |= w.compared_raw;
        }
        let parts = finish(&self.ctx, self.staged.clone(), worktree)?;
        Ok(build_lines(&parts, style.borrow()))
    }
}

/// The native engine's whole answer: HEAD against the index on one thread, the work tree on `walkers` threads,
/// all scoped to this call (they have exited when it returns).
pub(super) fn run_native(
    prepared: Prepared,
    style: PathStyleOwned,
    walkers: usize,
    stop: &AtomicBool,
) -> Result<NativeState, Halt> {
    let Prepared { ctx, repo } = prepared;
    let flags = Flags::new(stop);
    let dirs = tracked_dirs(&ctx.index);
    let next = AtomicUsize::new(0);
    let (staged, parts) = thread::scope(|s| {
        let (ctx, flags, dirs, next) = (&ctx, &flags, &dirs, &next);
        let staged = thread::Builder::new()
            .name("git-status-staged".into())
            .spawn_scoped(s, move || {
                let r = native_staged(&ctx.index, ctx.settings, &repo, flags);
                if r.is_err() {
                    flags.abort.store(true, Ordering::Relaxed);
                }
                r
            });
        let mut handles = Vec::with_capacity(walkers);
        for _ in 0..walkers {
            let h = thread::Builder::new()
                .name("git-status-worktree".into())
                .spawn_scoped(s, move || {
                    let r = super::native::worktree(ctx, dirs, next, flags);
                    if r.is_err() {
                        flags.abort.store(true, Ordering::Relaxed);
                    }
                    r
                });
            handles.push(h);
        }
        let parts: Vec<_> = handles.into_iter().map(join).collect();
        (join(staged), parts)
    });
    // A decline anywhere decides (the others stopped because of it).
    let mut halt: Option<Halt> = None;
    let mut note = |h: Halt| {
        if !matches!(halt, Some(Halt::Declined(_))) {
            halt = Some(h);
        }
    };
    let staged = staged.map_err(&mut note).ok();
    let mut results = vec![WorktreePart::default(); dirs.len()];
    for p in parts {
        match p {
            Ok(done) => {
                for (k, part) in done {
                    results[k] = part;
                }
            }
            Err(h) => note(h),
        }
    }
    if let Some(h) = halt {
        return Err(h);
    }
    Ok(NativeState {
        ctx,
        dirs,
        results,
        staged: staged.unwrap_or_default(),
        style,
    })
}

fn join<T>(h: std::io::Result<thread::ScopedJoinHandle<'_, Result<T, Halt>>>) -> Result<T, Halt> {
    match h {
        Ok(h) => h
            .join()
            .unwrap_or_else(|_| Err(Halt::Declined("a status thread panicked".into()))),
        Err(e) => Err(Halt::Declined(format!("cannot start a status thread: {e}"))),
    }
}

/// The checks that need the whole answer, then the parts.
pub(super) fn finish(
    ctx: &NativeCtx,
    staged: Vec<Change>,
    worktree: WorktreePart,
) -> Result<StatusParts, Halt> {
    if worktree.untracked_attributes && worktree.compared_raw {
        return Err(Halt::Declined(
            "an untracked .gitattributes may change how content was compared".into(),
        ));
    }
    // git detects renames in the work tree between intent-to-add entries (shown ` A`) and deleted files (and, with
    // copies, modified ones).
    if ctx.settings.renames != Renames::Off && worktree.changes.iter().any(|c| c.code == b'A') {
        let copies = ctx.settings.renames == Renames::Copies;
        if worktree
            .changes
            .iter()
            .any(|c| c.code == b'D' || (copies && c.code == b'M'))
        {
            return Err(Halt::Declined(
                "an intent-to-add file and a deleted file may pair into a work tree rename".into(),
            ));
        }
    }
    Ok(StatusParts {
        staged,
        worktree: worktree.changes,
        untracked: worktree.untracked,
    })
}

/// The git CLI's answer: `git --no-optional-locks status --short --ignore-submodules=dirty`, run in the session's
/// directory, its lines as they are.
pub(super) fn run_cli(
    job: &StatusJob,
    stop: &AtomicBool,
) -> Result<Vec<String>, command::RunError> {
    let mut c = command::git(&job.env, &job.cwd);
    c.args([
        "status",
        "--short",
        "--no-branch",
        "--ignore-submodules=dirty",
    ]);
    let out = command::run(c, job.deadline, stop)?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// The status for `job`: the native engine unless `job.engine` says otherwise or it declines, then the git CLI. With
/// the native engine's state when it answered.
pub(super) fn compute(job: &StatusJob, stop: &AtomicBool) -> (StatusAnswer, Option<NativeState>) {
    let timed_out = || {
        StatusAnswer::Problem(StatusProblem {
            kind: StatusProblemKind::TimedOut,
            message: "the status scan did not finish in time".into(),
        })
    };
    let declined = if job.engine == Engine::Cli {
        Some("the git CLI was asked for".to_owned())
    } else {
        let native = prepare(job, stop).and_then(|(prepared, style)| {
            let workers = walkers(job.tuning, prepared.ctx.index.len());
            let state = run_native(prepared, style, workers, stop).map_err(Err)?;
            let lines = state.lines().map_err(Err)?;
            Ok((lines, state))
        });
        match native {
            Ok((lines, state)) => {
                let answer = StatusAnswer::Lines {
                    lines,
                    engine: StatusEngine::Native,
                    declined: None,
                    unlisted: state.unlisted(),
                };
                return (answer, Some(state));
            }
            Err(Ok(problem)) => return (StatusAnswer::Problem(problem), None),
            Err(Err(Halt::Stopped)) => return (timed_out(), None),
            Err(Err(Halt::Declined(why))) => Some(why),
        }
    };
    let why = declined.unwrap_or_default();
    if job.engine == Engine::Native {
        let problem = StatusProblem {
            kind: StatusProblemKind::Declined,
            message: why,
        };
        return (StatusAnswer::Problem(problem), None);
    }
    let answer = match run_cli(job, stop) {
        Ok(lines) => StatusAnswer::Lines {
            lines,
            engine: StatusEngine::GitCli,
            declined: Some(why),
            unlisted: 0,
        },
        Err(command::RunError::TimedOut | command::RunError::Stopped) => timed_out(),
        Err(e) => StatusAnswer::Problem(StatusProblem {
            kind: StatusProblemKind::Unavailable,
            message: format!("`git status` failed: {e}"),
        }),
    };
    (answer, None)
}
