//! The native work-tree engine (Unix): the work tree checked directory by directory on several threads against the
//! parsed index, the way git's `run_diff_files` and `read_directory` do it.
//!
//! One listing per tracked directory gives the untracked names; each tracked name is `fstatat`'ed through its
//! directory and compared with the index's stat data as git compares it (`ce_match_stat`: whole seconds, as git
//! builds without `USE_NSEC` do; `core.trustctime`, `core.checkStat`, `core.filemode`); content is hashed only when
//! the stat data moved, the entry is racily clean or smudged. gitignore rules are applied natively; submodules are
//! compared by their checked-out `HEAD` (`--ignore-submodules=dirty`).
//!
//! **Architecture Invariant:** the engine answers only what it reproduces exactly. Everything else halts the walk
//! with [`Halt::Declined`] and a reason, and the caller asks the git CLI for the whole answer: a directory or file it
//! cannot read (other than "not found"), an exclude pattern the translation cannot express, content that end-of-line
//! conversion could change (a `\r` with conversion configured) or any `filter`, `ident` or `working-tree-encoding`
//! attribute when content must be compared, an untracked `.gitattributes` after a content comparison, a
//! `.gitignore` git would read from the index.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::config::Settings;
use super::ignore::IgnoreFile;
use super::index::ParsedIndex;

#[cfg(unix)]
pub(super) use walk::{rescan, worktree};

/// Why a native walk stopped before its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Halt {
    /// Something the engine does not reproduce exactly: the git CLI must answer.
    Declined(String),
    /// The stop flag was raised (time limit, or another walker declined).
    Stopped,
}

/// The stop flags a walk checks: the snapshot's (time limit) and the walk's own (a walker declined).
pub(super) struct Flags<'a> {
    pub(super) stop: &'a AtomicBool,
    pub(super) abort: AtomicBool,
}

impl<'a> Flags<'a> {
    pub(super) fn new(stop: &'a AtomicBool) -> Self {
        Self {
            stop,
            abort: AtomicBool::new(false),
        }
    }

    pub(super) fn check(&self) -> Result<(), Halt> {
        if self.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed) {
            Err(Halt::Stopped)
        } else {
            Ok(())
        }
    }
}

/// What the native walks share.
#[derive(Debug)]
pub(super) struct NativeCtx {
    pub(super) index: ParsedIndex,
    pub(super) work_tree: PathBuf,
    pub(super) settings: Settings,
    /// Content conversion may apply: attributes exist somewhere, or end-of-line conversion is configured.
    pub(super) filters: bool,
    /// An attribute source mentions `filter`, `ident` or `working-tree-encoding` (or could not be read).
    pub(super) complex_attributes: bool,
    /// Entries modified in or after this second may be "racily clean" and get their content compared.
    pub(super) racy_from: u32,
    /// `core.excludesFile` then `info/exclude` (lowest priority first), under every `.gitignore`.
    pub(super) base_ignores: Vec<IgnoreFile>,
    /// The files outside the work tree that the answer depends on (exclude and attribute files).
    pub(super) inputs: Vec<PathBuf>,
}

/// `core.precomposeUnicode` on the index: the native engine declines on a non-ASCII path (git compares names in
/// NFC there, the file system may hold NFD).
pub(super) fn check_precompose(index: &ParsedIndex, settings: &Settings) -> Result<(), String> {
    if settings.precompose
        && let Some(i) = (0..index.len()).find(|&i| !index.name(i).is_ascii())
    {
        return Err(format!(
            "core.precomposeUnicode and a non-ASCII path ({})",
            String::from_utf8_lossy(index.name(i))
        ));
    }
    Ok(())
}

/// What the work tree walks found: changed tracked paths and untracked entries, and what decides whether the answer
/// stands once all walkers are done.
#[derive(Debug, Default, Clone)]
pub(super) struct WorktreePart {
    pub(super) changes: Vec<super::render::Change>,
    pub(super) untracked: Vec<Vec<u8>>,
    /// An untracked `.gitattributes` sits in a tracked directory (it applies to the files there).
    pub(super) untracked_attributes: bool,
    /// Some content was compared without conversion (no attributes known at the time).
    pub(super) compared_raw: bool,
}

/// A tracked directory and the index entries directly in it (all stages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TrackedDir {
    pub(super) path: Vec<u8>,
    pub(super) direct: Vec<usize>,
    /// The names of the tracked directories directly in it.
    pub(super) children: Vec<Vec<u8>>,
}

/// The directories that hold index entries, in pre-order (the root first), each with its direct entries.
pub(super) fn tracked_dirs(idx: &ParsedIndex) -> Vec<TrackedDir> {
    let mut dirs = vec![TrackedDir {
        path: Vec::new(),
        direct: Vec::new(),
        children: Vec::new(),
    }];
    let mut open: Vec<usize> = vec![0];
    for i in 0..idx.len() {
        let name = idx.name(i);
        while open.len() > 1
            && !open
                .last()
                .is_some_and(|&d| name.starts_with(&dirs[d].path))
        {
            open.pop();
        }
        let mut start = open.last().map_or(0, |&d| dirs[d].path.len());
        while let Some(p) = name[start..].iter().position(|&b| b == b'/') {
            if let Some(&parent) = open.last() {
                dirs[parent].children.push(name[start..start + p].to_vec());
            }
            start += p + 1;
            dirs.push(TrackedDir {
                path: name[..start].to_vec(),
                direct: Vec::new(),
                children: Vec::new(),
            });
            open.push(dirs.len() - 1);
        }
        if let Some(&d) = open.last() {
            dirs[d].direct.push(i);
        }
    }
    dirs
}

/// The walkers themselves (Unix: `fstatat` through directory entries, raw file names).
#[cfg(unix)]
mod walk {
    use std::cmp::Ordering;
    use std::collections::HashMap;
    use std::ffi::OsStr;
    use std::fs;
    use std::io::{ErrorKind, Read};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{DirEntryExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use super::{Flags, Halt, NativeCtx, TrackedDir, WorktreePart};
    use crate::git::config::Untracked;
    use crate::git::ignore::IgnoreFile;
    use crate::git::index::{IndexEntry, ParsedIndex};
    use crate::git::render::Change;
    use crate::git::repo::submodule_head;

    const S_IFMT: u32 = 0o170000;
    const S_IFREG: u32 = 0o100000;
    const S_IFLNK: u32 = 0o120000;
    const S_IFGITLINK: u32 = 0o160000;
    /// The object name of the empty blob.
    const EMPTY_BLOB: [u8; 20] = [
        0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8,
        0xc2, 0xe4, 0x8c, 0x53, 0x91,
    ];

    type Res<T> = Result<T, Halt>;

    fn declined(msg: String) -> Halt {
        Halt::Declined(msg)
    }

    fn show(p: &[u8]) -> String {
        String::from_utf8_lossy(p).into_owned()
    }

    /// A walker's cache: the exclude rules of the directories it has looked at.
    pub(super) struct WalkState<'a> {
        ctx: &'a NativeCtx,
        flags: &'a Flags<'a>,
        dirs: HashMap<Vec<u8>, DirIgnore>,
    }

    struct DirIgnore {
        file: Option<IgnoreFile>,
        /// The directory itself is excluded (then so is everything under it).
        excluded: bool,
    }

    /// `"a/b/"` → `"a/"`, `"a/"` → `""`.
    fn parent_dir(dir: &[u8]) -> &[u8] {
        let d = dir.strip_suffix(b"/").unwrap_or(dir);
        d.iter()
            .rposition(|&b| b == b'/')
            .map_or(&d[..0], |p| &d[..=p])
    }

    impl<'a> WalkState<'a> {
        pub(super) fn new(ctx: &'a NativeCtx, flags: &'a Flags<'a>) -> Self {
            Self {
                ctx,
                flags,
                dirs: HashMap::new(),
            }
        }

        /// Loads the rules of `dir` (`""` or ending with `/`) and its parents, and whether it is excluded.
        fn load(&mut self, dir: &[u8]) -> Res<()> {
            if self.dirs.contains_key(dir) {
                return Ok(());
            }
            let excluded = !dir.is_empty() && {
                let parent = parent_dir(dir);
                self.load(parent)?;
                self.dirs.get(parent).is_some_and(|d| d.excluded)
                    || self.decide(parent, &dir[..dir.len() - 1], true)?
            };
            let file = if excluded {
                None
            } else {
                let mut p = dir.to_vec();
                p.extend_from_slice(b".gitignore");
                let abs = abs_of(self.ctx, &p);
                // git does not follow a symbolic link here.
                match fs::symlink_metadata(&abs) {
                    Ok(md) if md.is_file() => match crate::fs::read_regular(&abs) {
                        Ok(t) => Some(IgnoreFile::parse_with(&t, self.ctx.settings.ignore_case)),
                        Err(e) => {
                            return Err(declined(format!("cannot read {}: {e}", abs.display())));
                        }
                    },
                    Ok(_) => None,
                    Err(e) if is_absent(&e) => {
                        // git reads a sparse checkout's missing .gitignore from the index.
                        let i = self.ctx.index.lower_bound(&p);
                        if i < self.ctx.index.len()
                            && self.ctx.index.name(i) == p.as_slice()
                            && self.ctx.index.entry(i).skip_worktree()
                        {
                            return Err(declined(format!(
                                "{} is only in the index (sparse checkout)",
                                show(&p)
                            )));
                        }
                        None
                    }
                    Err(e) => {
                        return Err(declined(format!("cannot stat {}: {e}", abs.display())));
                    }
                }
            };
            self.dirs.insert(dir.to_vec(), DirIgnore { file, excluded });
            Ok(())
        }

        /// The rules from `dir` up to the root, then `info/exclude` and `core.excludesFile`; the deepest file with
        /// a matching rule decides.
        fn decide(&self, dir: &[u8], path: &[u8], is_dir: bool) -> Res<bool> {
            let exotic = |f: &IgnoreFile| {
                declined(format!(
                    "an exclude pattern it does not translate ({})",
                    f.exotic_line.as_deref().unwrap_or("?")
                ))
            };
            let mut d = dir;
            loop {
                if let Some(f) = self.dirs.get(d).and_then(|x| x.file.as_ref()) {
                    if f.exotic {
                        return Err(exotic(f));
                    }
                    if let Some(hit) = f.matched(&path[d.len()..], is_dir) {
                        return Ok(hit);
                    }
                }
                if d.is_empty() {
                    break;
                }
                d = parent_dir(d);
            }
            for f in self.ctx.base_ignores.iter().rev() {
                if f.exotic {
                    return Err(exotic(f));
                }
                if let Some(hit) = f.matched(path, is_dir) {
                    return Ok(hit);
                }
            }
            Ok(false)
        }

        /// Whether git ignores `rel` (a path in the work tree; directories end with `/`).
        fn ignored(&mut self, rel: &[u8]) -> Res<bool> {
            let is_dir = rel.ends_with(b"/");
            let path = if is_dir { &rel[..rel.len() - 1] } else { rel };
            let dir = path
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(&path[..0], |p| &path[..=p]);
            self.load(dir)?;
            if self.dirs.get(dir).is_some_and(|d| d.excluded) {
                return Ok(true);
            }
            self.decide(dir, path, is_dir)
        }
    }

    fn is_absent(e: &std::io::Error) -> bool {
        matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
    }

    /// Checks the tracked directories `dirs`, taking them in small batches from the shared counter `next` so that
    /// no walker idles while another still has a long list. Each directory's findings are kept apart (by its
    /// position in `dirs`), so that a [`crate::git::StatusCache`] can redo one directory alone.
    pub(in crate::git) fn worktree(
        ctx: &NativeCtx,
        dirs: &[TrackedDir],
        next: &AtomicUsize,
        flags: &Flags<'_>,
    ) -> Res<Vec<(usize, WorktreePart)>> {
        const BATCH: usize = 8;
        let mut state = WalkState::new(ctx, flags);
        let mut out = Vec::new();
        loop {
            let start = next.fetch_add(BATCH, AtomicOrdering::Relaxed);
            if start >= dirs.len() {
                break;
            }
            for (k, dir) in dirs
                .iter()
                .enumerate()
                .take((start + BATCH).min(dirs.len()))
                .skip(start)
            {
                flags.check()?;
                let mut part = WorktreePart::default();
                scan_tracked_dir(ctx, dir, &mut state, &mut part)?;
                out.push((k, part));
            }
        }
        Ok(out)
    }

    /// Checks the tracked directories `dirs[k]` for each `k` in `which`, on the calling thread.
    pub(in crate::git) fn rescan(
        ctx: &NativeCtx,
        dirs: &[TrackedDir],
        which: &[usize],
        flags: &Flags<'_>,
    ) -> Res<Vec<(usize, WorktreePart)>> {
        let mut state = WalkState::new(ctx, flags);
        let mut out = Vec::with_capacity(which.len());
        for &k in which {
            flags.check()?;
            let mut part = WorktreePart::default();
            scan_tracked_dir(ctx, &dirs[k], &mut state, &mut part)?;
            out.push((k, part));
        }
        Ok(out)
    }

    /// One tracked directory: its listing merged with its index entries.
    fn scan_tracked_dir(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        state: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) -> Res<()> {
        let idx = &ctx.index;
        let abs = abs_of(ctx, &dir.path);
        // A symbolic link where a tracked directory was is not followed (git: "beyond a symbolic link").
        // (Without the trailing slash, which would make lstat follow the link.)
        let real_dir = dir.path.is_empty()
            || match fs::symlink_metadata(abs_of(ctx, &dir.path[..dir.path.len() - 1])) {
                Ok(m) => m.is_dir(),
                Err(e) if is_absent(&e) => false,
                Err(e) => return Err(declined(format!("cannot stat {}: {e}", abs.display()))),
            };
        let mut disk: Vec<(std::ffi::OsString, fs::DirEntry)> = Vec::new();
        if real_dir {
            match fs::read_dir(&abs) {
                Ok(rd) => {
                    for e in rd {
                        let e =
                            e.map_err(|e| declined(format!("cannot list {}: {e}", abs.display())))?;
                        let name = e.file_name();
                        if name.as_bytes() != b".git" {
                            if ctx.settings.precompose && !name.as_bytes().is_ascii() {
                                return Err(declined(format!(
                                    "core.precomposeUnicode and a non-ASCII name in {}",
                                    abs.display()
                                )));
                            }
                            disk.push((name, e));
                        }
                    }
                }
                Err(e) if is_absent(&e) => {} // gone: every file in it is deleted
                Err(e) => return Err(declined(format!("cannot list {}: {e}", abs.display()))),
            }
        }
        disk.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let base = dir.path.len();
        // core.ignorecase: the names this directory tracks (files and subdirectories), folded; built when first
        // needed (an untracked or a missing name).
        let mut folded: Option<std::collections::HashSet<Vec<u8>>> = None;
        let fold = |folded: &mut Option<std::collections::HashSet<Vec<u8>>>| -> Res<()> {
            if folded.is_some() {
                return Ok(());
            }
            let mut set = std::collections::HashSet::new();
            let mut last: Option<&[u8]> = None;
            let names = dir
                .direct
                .iter()
                .map(|&i| &idx.name(i)[base..])
                .chain(dir.children.iter().map(Vec::as_slice));
            for n in names {
                if last == Some(n) {
                    continue; // another stage of the same path
                }
                last = Some(n);
                if !set.insert(n.to_ascii_lowercase()) {
                    return Err(declined(format!(
                        "core.ignorecase and tracked names in {} that differ only by case",
                        abs.display()
                    )));
                }
            }
            *folded = Some(set);
            Ok(())
        };
        let mut d = 0;
        let mut k = 0;
        let mut steps = 0usize;
        while k < dir.direct.len() || d < disk.len() {
            steps += 1;
            if steps.is_multiple_of(256) {
                state.flags.check()?;
            }
            let iname = dir.direct.get(k).map(|&i| &idx.name(i)[base..]);
            let dname = disk.get(d).map(|(n, _)| n.as_bytes());
            let order = match (iname, dname) {
                (Some(i), Some(n)) => i.cmp(n),
                (Some(_), None) => Ordering::Less,
                (None, _) => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    // Tracked, not on disk (a skip-worktree entry that is absent is not a change).
                    let i = dir.direct[k];
                    if ctx.settings.ignore_case {
                        fold(&mut folded)?;
                        let lower = idx.name(i)[base..].to_ascii_lowercase();
                        if disk
                            .iter()
                            .any(|(n, _)| n.as_bytes().to_ascii_lowercase() == lower)
                        {
                            return Err(declined(format!(
                                "core.ignorecase and {} on disk under another case",
                                show(idx.name(i))
                            )));
                        }
                    }
                    let e = idx.entry(i);
                    if e.stage() == 0 && !e.assume_unchanged() && !e.skip_worktree() {
                        push_change(part, idx.name(i), b'D');
                    }
                    k = next_name(idx, &dir.direct, k);
                }
                Ordering::Greater => {
                    let (name, entry) = &disk[d];
                    let mut full = dir.path.clone();
                    full.extend_from_slice(name.as_bytes());
                    let ft = entry
                        .file_type()
                        .map_err(|e| declined(format!("cannot stat {}: {e}", show(&full))))?;
                    if name.as_bytes() == b".gitattributes" {
                        part.untracked_attributes = true;
                    }
                    if ctx.settings.ignore_case {
                        fold(&mut folded)?;
                        // (The exact name of a tracked directory is not another case of it.)
                        let exact = dir.children.iter().any(|c| c == name.as_bytes());
                        let lower = name.as_bytes().to_ascii_lowercase();
                        if !exact && folded.as_ref().is_some_and(|f| f.contains(&lower)) {
                            return Err(declined(format!(
                                "core.ignorecase and {} tracked under another case",
                                show(&full)
                            )));
                        }
                    }
                    untracked_entry(ctx, full, ft, state, &mut part.untracked)?;
                    d += 1;
                }
                Ordering::Equal => {
                    let i = dir.direct[k];
                    let e = idx.entry(i);
                    let entry = &disk[d].1;
                    let code = if e.stage() != 0
                        || e.assume_unchanged()
                        || (e.skip_worktree() && !ctx.settings.sparse_clear)
                    {
                        None
                    } else if e.intent_to_add() {
                        // Added with `git add -N`: new in the work tree, whatever its content.
                        Some(if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            b'D'
                        } else {
                            b'A'
                        })
                    } else {
                        check_entry(ctx, &e, idx.name(i), entry, state.flags, part)?
                    };
                    if let Some(code) = code {
                        push_change(part, idx.name(i), code);
                    }
                    k = next_name(idx, &dir.direct, k);
                    d += 1;
                }
            }
        }
        Ok(())
    }

    fn push_change(part: &mut WorktreePart, path: &[u8], code: u8) {
        part.changes.push(Change {
            path: path.to_vec(),
            orig: None,
            code,
            unmerged: None,
        });
    }

    /// The position after all stages of the name at `k`.
    fn next_name(idx: &ParsedIndex, direct: &[usize], k: usize) -> usize {
        let name = idx.name(direct[k]);
        let mut j = k + 1;
        while j < direct.len() && idx.name(direct[j]) == name {
            j += 1;
        }
        j
    }

    /// A name on disk that has no index entry of its own. git lists regular files and symbolic links, and
    /// directories that hold some; FIFOs, sockets and devices are never untracked.
    fn untracked_entry(
        ctx: &NativeCtx,
        mut full: Vec<u8>,
        ft: fs::FileType,
        state: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) -> Res<()> {
        if ft.is_dir() {
            full.push(b'/');
            if ctx.index.has_dir(&full) {
                return Ok(()); // a tracked directory, checked on its own
            }
            if ctx.settings.untracked != Untracked::No {
                untracked_dir(ctx, full, state, out)?;
            }
        } else if (ft.is_file() || ft.is_symlink())
            && ctx.settings.untracked != Untracked::No
            && !state.ignored(&full)?
        {
            out.push(full);
        }
        Ok(())
    }

    /// What `git status` says about one tracked file present on disk (git's `ie_match_stat`): `None` when unchanged.
    fn check_entry(
        ctx: &NativeCtx,
        e: &IndexEntry,
        name: &[u8],
        entry: &fs::DirEntry,
        flags: &Flags<'_>,
        part: &mut WorktreePart,
    ) -> Res<Option<u8>> {
        let md = match entry.metadata() {
            Ok(md) => md,
            Err(err) if is_absent(&err) => return Ok(Some(b'D')), // removed since the listing
            Err(err) => return Err(declined(format!("cannot stat {}: {err}", show(name)))),
        };
        let itype = e.mode & S_IFMT;
        let wtype = md.mode() & S_IFMT;
        if itype == S_IFGITLINK {
            if !md.is_dir() {
                return Ok(Some(b'T'));
            }
            // `--ignore-submodules=dirty`: only a checked-out commit other than the recorded one counts; a
            // submodule that is not checked out (or has no commit) is unchanged, as git's `ce_compare_gitlink`.
            let head = submodule_head(&abs_of(ctx, name))
                .map_err(|why| declined(format!("submodule {}: {why}", show(name))))?;
            return Ok(head.filter(|h| *h != e.oid).map(|_| b'M'));
        }
        if md.is_dir() {
            return Ok(Some(b'D')); // git's check_removed: a directory where a file was is a removal
        }
        if itype != wtype {
            return Ok(Some(b'T'));
        }
        if itype == S_IFREG
            && ctx.settings.filemode
            && (e.mode & 0o100 != 0) != (md.mode() & 0o100 != 0)
        {
            return Ok(Some(b'M'));
        }
        let size = md.size() as u32;
        if size != e.size && e.size != 0 {
            return Ok(Some(b'M'));
        }
        // git's match_stat_data, without USE_NSEC (git's default build): whole seconds only.
        let full = !ctx.settings.check_stat_minimal;
        let stat_same = size == e.size
            && md.mtime() as u32 == e.mtime.0
            && (!(ctx.settings.trust_ctime && full) || md.ctime() as u32 == e.ctime.0)
            && (!full || (entry.ino() as u32 == e.ino && md.uid() == e.uid && md.gid() == e.gid));
        // A "smudged" entry (size 0, not the empty blob) is always compared.
        let smudged = e.size == 0 && e.oid != EMPTY_BLOB;
        let racy = e.mtime.0 >= ctx.racy_from && ctx.racy_from != 0;
        if stat_same && !racy && !smudged {
            return Ok(None);
        }
        // The stat data moved, or cannot be trusted: compare the content (git's ce_modified_check_fs).
        let abs = abs_of(ctx, name);
        if itype == S_IFLNK {
            let same = fs::read_link(&abs)
                .ok()
                .is_some_and(|t| blob_id(t.as_os_str().as_bytes()) == e.oid);
            return Ok((!same).then_some(b'M'));
        }
        if ctx.filters && ctx.complex_attributes {
            return Err(declined(format!(
                "{} needs a content comparison and some attribute sets filter, ident or \
                 working-tree-encoding",
                show(name)
            )));
        }
        let (oid, has_cr) = match hash_file(&abs, md.size(), flags)? {
            Some(v) => v,
            None => return Ok(Some(b'M')), // git: a file it cannot open is modified
        };
        if ctx.filters && has_cr {
            return Err(declined(format!(
                "{} holds a carriage return and end-of-line conversion may apply",
                show(name)
            )));
        }
        if !ctx.filters {
            part.compared_raw = true;
        }
        Ok((oid != e.oid).then_some(b'M'))
    }

    /// The blob object name of `data`.
    fn blob_id(data: &[u8]) -> [u8; 20] {
        let mut h = sha1_smol::Sha1::new();
        h.update(format!("blob {}\0", data.len()).as_bytes());
        h.update(data);
        h.digest().bytes()
    }

    /// The blob object name of a file and whether it holds a `\r`, read in chunks so that the stop flag is seen in
    /// a large file. `None` when it cannot be opened.
    fn hash_file(abs: &Path, size: u64, flags: &Flags<'_>) -> Res<Option<([u8; 20], bool)>> {
        // Not `File::open`: a file swapped for a FIFO since its stat would block the worker.
        let Ok(mut f) = crate::fs::open_regular(abs) else {
            return Ok(None);
        };
        let mut buf = vec![0u8; (size as usize).clamp(1, 1 << 20)];
        let mut data_len = 0u64;
        let mut h = sha1_smol::Sha1::new();
        // The header needs the length up front: hash what was read, then check that it was the stat'ed size.
        h.update(format!("blob {size}\0").as_bytes());
        let mut has_cr = false;
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return Ok(None),
            };
            flags.check()?;
            has_cr |= buf[..n].contains(&b'\r');
            h.update(&buf[..n]);
            data_len += n as u64;
            if data_len > size {
                break;
            }
        }
        if data_len != size {
            // The file changed while it was read: git would have hashed whatever it saw; ask git.
            return Err(declined(format!(
                "{} changed while it was read",
                abs.display()
            )));
        }
        Ok(Some((h.digest().bytes(), has_cr)))
    }

    fn read_dir_names(abs: &Path, precompose: bool) -> Res<Vec<(Vec<u8>, fs::FileType)>> {
        let rd = match fs::read_dir(abs) {
            Ok(rd) => rd,
            Err(e) if is_absent(&e) => return Ok(Vec::new()),
            Err(e) => return Err(declined(format!("cannot list {}: {e}", abs.display()))),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(|e| declined(format!("cannot list {}: {e}", abs.display())))?;
            if e.file_name().as_bytes() == b".git" {
                continue;
            }
            if precompose && !e.file_name().as_bytes().is_ascii() {
                return Err(declined(format!(
                    "core.precomposeUnicode and a non-ASCII name in {}",
                    abs.display()
                )));
            }
            let ft = e
                .file_type()
                .map_err(|err| declined(format!("cannot stat {}: {err}", e.path().display())))?;
            out.push((e.file_name().as_bytes().to_vec(), ft));
        }
        Ok(out)
    }

    fn abs_of(ctx: &NativeCtx, rel: &[u8]) -> PathBuf {
        let mut p = ctx.work_tree.as_os_str().as_bytes().to_vec();
        p.push(b'/');
        p.extend_from_slice(rel);
        PathBuf::from(OsStr::from_bytes(&p))
    }

    /// git's `is_nonbare_repository_dir`: the directory's `.git` is a valid git directory or gitfile.
    fn is_nested_repo(ctx: &NativeCtx, dir: &[u8]) -> bool {
        let abs = abs_of(ctx, dir.strip_suffix(b"/").unwrap_or(dir));
        matches!(
            crate::git::discover::dot_git(&crate::fs::RealFs, &abs),
            crate::git::discover::DotGit::Repo(_)
        )
    }

    /// An untracked directory: shown as `dir/` when it holds something untracked that is not ignored (git's
    /// default), or file by file with `status.showUntrackedFiles=all`.
    fn untracked_dir(
        ctx: &NativeCtx,
        dir: Vec<u8>,
        state: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) -> Res<()> {
        state.flags.check()?;
        if state.ignored(&dir)? {
            return Ok(());
        }
        if ctx.settings.untracked == Untracked::All && !is_nested_repo(ctx, &dir) {
            for (name, ft) in read_dir_names(&abs_of(ctx, &dir), ctx.settings.precompose)? {
                let mut full = dir.clone();
                full.extend_from_slice(&name);
                if ft.is_dir() {
                    full.push(b'/');
                    untracked_dir(ctx, full, state, out)?;
                } else if (ft.is_file() || ft.is_symlink()) && !state.ignored(&full)? {
                    out.push(full);
                }
            }
        } else if has_untracked(ctx, &dir, state)? {
            out.push(dir);
        }
        Ok(())
    }

    fn has_untracked(ctx: &NativeCtx, dir: &[u8], state: &mut WalkState<'_>) -> Res<bool> {
        if is_nested_repo(ctx, dir) {
            return Ok(true);
        }
        state.flags.check()?;
        for (name, ft) in read_dir_names(&abs_of(ctx, dir), ctx.settings.precompose)? {
            let mut full = dir.to_vec();
            full.extend_from_slice(&name);
            let found = if ft.is_dir() {
                full.push(b'/');
                !state.ignored(&full)? && has_untracked(ctx, &full, state)?
            } else {
                (ft.is_file() || ft.is_symlink()) && !state.ignored(&full)?
            };
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
#[cfg(test)]
mod tests {
    use crate::git::test_support::{FALLBACK, Fixture, lines};
    use std::fs;

    #[test]
    fn show_untracked_files_all_and_no() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitignore", "*.log\n");
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("a.txt", "a2\n");
        f.write("u/one.txt", "1\n");
        f.write("u/deep/two.txt", "2\n");
        f.write("u/deep/skip.log", "s\n");
        f.write("top.txt", "t\n");
        f.assert_status(&f.root);
        f.git(&f.root, &["config", "status.showUntrackedFiles", "all"]);
        let status = f.assert_status(&f.root);
        assert!(
            status.contains(&"?? u/deep/two.txt".to_owned()),
            "{status:?}"
        );
        f.git(&f.root, &["config", "status.showUntrackedFiles", "no"]);
        assert_eq!(f.assert_status(&f.root), lines(&[" M a.txt"]));
    }

    #[test]
    #[cfg(unix)]
    fn type_and_mode_changes() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let f = Fixture::repo("main", Some("U"));
        for n in [
            "to-link",
            "to-dir",
            "exec",
            "same",
            "gone-dir/a",
            "gone-dir/b",
        ] {
            f.write(n, "content\n");
        }
        symlink("same", f.root.join("link")).expect("symlink");
        f.commit("init");
        fs::remove_file(f.root.join("to-link")).expect("rm");
        symlink("same", f.root.join("to-link")).expect("symlink");
        fs::remove_file(f.root.join("to-dir")).expect("rm");
        f.write("to-dir/inside.txt", "i\n");
        fs::set_permissions(f.root.join("exec"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::remove_dir_all(f.root.join("gone-dir")).expect("rm");
        fs::remove_file(f.root.join("link")).expect("rm");
        symlink("elsewhere", f.root.join("link")).expect("symlink");
        let status = f.assert_status(&f.root);
        assert!(status.contains(&" T to-link".to_owned()), "{status:?}");
        assert!(status.contains(&" M exec".to_owned()), "{status:?}");
        assert!(status.contains(&" M link".to_owned()), "{status:?}");
        assert!(status.contains(&" D to-dir".to_owned()), "{status:?}");
    }

    #[test]
    fn tracked_directory_replaced_by_a_file() {
        let f = Fixture::repo("main", Some("U"));
        f.write("d/a.txt", "a\n");
        f.write("d/e/b.txt", "b\n");
        f.commit("init");
        fs::remove_dir_all(f.root.join("d")).expect("rm");
        f.write("d", "now a file\n");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[" D d/a.txt", " D d/e/b.txt", "?? d"])
        );
    }

    #[test]
    #[cfg(unix)]
    fn tracked_directory_replaced_by_a_symlink() {
        let f = Fixture::repo("main", Some("U"));
        f.write("d/a.txt", "a\n");
        f.write("target/a.txt", "a\n");
        f.commit("init");
        fs::remove_dir_all(f.root.join("d")).expect("rm");
        std::os::unix::fs::symlink("target", f.root.join("d")).expect("symlink");
        assert_eq!(f.assert_status(&f.root), lines(&[" D d/a.txt", "?? d"]));
    }

    #[test]
    fn index_flags_assume_unchanged_skip_worktree_intent_to_add() {
        let f = Fixture::repo("main", Some("U"));
        f.write("assumed.txt", "a\n");
        f.write("skipped.txt", "s\n");
        f.write("plain.txt", "p\n");
        f.commit("init");
        f.git(
            &f.root,
            &["update-index", "--assume-unchanged", "assumed.txt"],
        );
        f.write("assumed.txt", "changed\n");
        f.write("plain.txt", "changed\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M plain.txt"]));
        f.git(&f.root, &["update-index", "--skip-worktree", "skipped.txt"]);
        f.write("skipped.txt", "changed\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M plain.txt"]));
        f.write("intent.txt", "i\n");
        f.git(&f.root, &["add", "-N", "intent.txt"]);
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[" A intent.txt", " M plain.txt"])
        );
        fs::remove_file(f.root.join("intent.txt")).expect("rm");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[" D intent.txt", " M plain.txt"])
        );
    }

    #[test]
    fn same_size_edit_right_after_commit_is_seen() {
        // Racily clean entries: the stat data may match, so the content must be compared.
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "aaaa\n");
        f.write("b.txt", "bbbb\n");
        f.commit("init");
        f.write("a.txt", "xxxx\n");
        let status = f.assert_status(&f.root);
        assert_eq!(status, lines(&[" M a.txt"]));
        // Touched but unchanged content: clean.
        f.write("b.txt", "bbbb\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M a.txt"]));
    }

    #[test]
    fn nested_repository() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        // An untracked nested repository shows as a directory, even when empty.
        f.git(&f.root, &["init", "-q", "nested"]);
        assert_eq!(f.assert_status(&f.root), lines(&["?? nested/"]));
        f.write("nested/n.txt", "n\n");
        assert_eq!(f.assert_status(&f.root), lines(&["?? nested/"]));
    }

    #[test]
    fn line_endings_through_attributes() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitattributes", "*.txt text eol=crlf\n");
        f.write("a.txt", "one\ntwo\n");
        f.write("b.txt", "b\n");
        f.commit("init");
        // Check out again so the work tree has CRLF, then touch without changing the content.
        fs::remove_file(f.root.join("a.txt")).expect("rm");
        f.git(&f.root, &["checkout", "--", "a.txt"]);
        let crlf = fs::read(f.root.join("a.txt")).expect("read");
        assert_eq!(crlf, b"one\r\ntwo\r\n");
        fs::write(f.root.join("a.txt"), &crlf).expect("touch");
        f.write("b.txt", "c\r\n");
        // A carriage return with conversion configured: the native engine declines, git answers.
        let status = f.assert_status_with(&f.root, &FALLBACK);
        assert_eq!(status, lines(&[" M b.txt"]));
    }
}
