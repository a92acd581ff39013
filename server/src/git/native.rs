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

/// The object name of the empty blob.
pub(super) const EMPTY_BLOB: [u8; 20] = [
    0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2,
    0xe4, 0x8c, 0x53, 0x91,
];

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
    /// git's untracked cache, when the index has one and git would use it as it is (`untracked.rs`).
    pub(super) untracked: Option<super::untracked::UntrackedCache>,
    /// The object names the untracked cache must have recorded for `core.excludesFile` and `info/exclude` to be
    /// usable (`None`: it cannot be).
    pub(super) exclude_oids: [Option<[u8; 20]>; 2],
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
    /// The directory was not listed: git's untracked cache vouched for its untracked names.
    pub(super) from_untracked_cache: bool,
}

/// A tracked directory and the index entries directly in it (all stages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TrackedDir {
    pub(super) path: Vec<u8>,
    pub(super) direct: Vec<usize>,
    /// The names of the tracked directories directly in it, sorted.
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
    // By name (index order puts `b-c/` before `b/`), for binary searches.
    for d in &mut dirs {
        d.children.sort_unstable();
    }
    dirs
}

/// The walkers themselves (Unix: `fstatat` through directory entries, raw file names).
#[cfg(unix)]
mod walk {
    use std::cmp::Ordering;
    use std::collections::HashMap;
    use std::ffi::{CStr, OsStr};
    use std::fs;
    use std::io::{ErrorKind, Read};
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use rustix::fs::{AtFlags, Mode, OFlags, RawDir};
    use rustix::io::Errno;

    use super::{EMPTY_BLOB, Flags, Halt, NativeCtx, TrackedDir, WorktreePart};
    use crate::git::config::Untracked;
    use crate::git::ignore::IgnoreFile;
    use crate::git::index::{IndexEntry, ParsedIndex};
    use crate::git::render::Change;
    use crate::git::repo::submodule_head;
    use crate::git::untracked::{self, StatNow};

    const S_IFMT: u32 = 0o170000;
    const S_IFREG: u32 = 0o100000;
    const S_IFDIR: u32 = 0o040000;
    const S_IFLNK: u32 = 0o120000;
    const S_IFGITLINK: u32 = 0o160000;

    type Res<T> = Result<T, Halt>;

    fn declined(msg: String) -> Halt {
        Halt::Declined(msg)
    }

    fn show(p: &[u8]) -> String {
        String::from_utf8_lossy(p).into_owned()
    }

    /// A walker's cache: the exclude rules of the directories it has looked at, what it decided about the untracked
    /// cache's directories, and its scratch buffers.
    pub(super) struct WalkState<'a> {
        ctx: &'a NativeCtx,
        flags: &'a Flags<'a>,
        dirs: HashMap<Vec<u8>, DirIgnore>,
        /// Per block of the untracked cache: 0 not looked at, 1 its `.gitignore` is as recorded, 2 it is not.
        gitignore_ok: Vec<u8>,
        scratch: Scratch,
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
                gitignore_ok: Vec::new(),
                scratch: Scratch::new(),
            }
        }

        /// Whether git's untracked cache may stand in for listing the directory `dir` (its block `n`), read with
        /// `check_only` as git reads it (`valid_cached_dir`): the block holds a complete list (`valid`) made the same
        /// way, the directory's stat data are as recorded (nothing was added, removed or renamed in it since),
        /// neither it nor a parent is excluded, and the `.gitignore` of every directory from the root down to it is
        /// as recorded (`prep_exclude` drops a whole subtree otherwise). `now`: the directory's stat when the caller
        /// has it (an open handle), else it is `lstat`'ed.
        fn node_valid(
            &mut self,
            dir: &[u8],
            n: usize,
            check_only: bool,
            now: Option<StatNow>,
        ) -> Res<bool> {
            let ctx = self.ctx;
            let Some(uc) = ctx.untracked.as_ref() else {
                return Ok(false);
            };
            let node = &uc.nodes[n];
            let Some(recorded) = node.stat else {
                return Ok(false);
            };
            if node.check_only != check_only {
                return Ok(false);
            }
            let Some(now) = now.or_else(|| self.lstat_dir(dir)) else {
                return Ok(false);
            };
            if !untracked::unchanged(&recorded, &now, ctx.racy_from) {
                return Ok(false);
            }
            self.load(dir)?;
            if self.dirs.get(dir).is_some_and(|d| d.excluded) {
                return Ok(false);
            }
            if self.gitignore_ok.len() != uc.nodes.len() {
                self.gitignore_ok = vec![0; uc.nodes.len()];
            }
            let mut chain = Vec::new();
            let mut m = Some(n);
            while let Some(k) = m {
                chain.push(k);
                m = uc.nodes[k].parent;
            }
            for &k in chain.iter().rev() {
                let ok = match self.gitignore_ok[k] {
                    1 => true,
                    2 => false,
                    _ => {
                        let ok = self.gitignore_as_recorded(k, (k == n).then_some(now));
                        self.gitignore_ok[k] = if ok { 1 } else { 2 };
                        ok
                    }
                };
                if !ok {
                    return Ok(false);
                }
            }
            Ok(true)
        }

        /// The stat of the directory `dir` (relative, `/`-terminated), not following a symbolic link.
        fn lstat_dir(&mut self, dir: &[u8]) -> Option<StatNow> {
            let root = self.ctx.work_tree.as_os_str().as_bytes();
            let rel = dir.strip_suffix(b"/").unwrap_or(dir);
            let sep: &[u8] = if rel.is_empty() { b"" } else { b"/" };
            let p = self.scratch.cstr(&[root, sep, rel])?;
            let st = rustix::fs::statat(rustix::fs::CWD, p, AtFlags::SYMLINK_NOFOLLOW).ok()?;
            Some(Meta::of(&st).now())
        }

        /// Whether the `.gitignore` of block `k`'s directory has the object name git recorded (`prep_exclude`): git
        /// does not even look when the directory is unchanged and had none. `now` is the directory's stat when known.
        fn gitignore_as_recorded(&mut self, k: usize, now: Option<StatNow>) -> bool {
            let ctx = self.ctx;
            let Some(uc) = ctx.untracked.as_ref() else {
                return false;
            };
            let path = uc.nodes[k].path.clone();
            let now = now.or_else(|| self.lstat_dir(&path));
            let node = &uc.nodes[k];
            // (`valid` as git sees it then: a directory it had to list again has it cleared; with no .gitignore
            // recorded and none possible since, both ways give the same answer.)
            let unchanged = node
                .stat
                .is_some_and(|r| now.is_some_and(|s| untracked::unchanged(&r, &s, ctx.racy_from)));
            if unchanged && node.exclude_oid.is_none() {
                return true;
            }
            match gitignore_oid(ctx, &node.path) {
                Some(oid) => oid == node.exclude_oid,
                None => false,
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

    /// The object name git gives the `.gitignore` of `dir` in the untracked cache (`add_patterns` with an
    /// `oid_stat`): `Some(None)` when there is none (or it is a symbolic link, which git does not open); the index's
    /// object name when it is tracked and its content is the index's; otherwise the blob of its content with a newline
    /// added. `None` when git's answer cannot be told (unreadable, not a regular file, only in the index).
    fn gitignore_oid(ctx: &NativeCtx, dir: &[u8]) -> Option<Option<[u8; 20]>> {
        let mut rel = dir.to_vec();
        rel.extend_from_slice(b".gitignore");
        let mut abs = ctx.work_tree.as_os_str().as_bytes().to_vec();
        abs.push(b'/');
        abs.extend_from_slice(&rel);
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let tracked = ctx.index.find(&rel).map(|i| ctx.index.entry(i));
        let fd = match rustix::fs::open(abs.as_slice(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) if errno_absent(e) => {
                // git reads a skip-worktree entry's content from the index then.
                return match tracked {
                    Some(e) if e.skip_worktree() => None,
                    _ => Some(None),
                };
            }
            Err(_) => return None,
        };
        let st = rustix::fs::fstat(&fd).ok()?;
        if st.st_mode as u32 & S_IFMT != S_IFREG {
            return None;
        }
        let size = usize::try_from(st.st_size).ok()?;
        if size == 0 {
            return Some(Some(EMPTY_BLOB));
        }
        if size > 100 << 20 {
            return None;
        }
        let mut content = Vec::with_capacity(size);
        std::fs::File::from(fd)
            .take(size as u64 + 1)
            .read_to_end(&mut content)
            .ok()?;
        if content.len() != size {
            return None; // changed while read
        }
        if let Some(e) = tracked {
            if e.assume_unchanged() || e.skip_worktree() {
                return None;
            }
            if e.mode & S_IFMT == S_IFREG && blob_id(&content) == e.oid {
                return Some(Some(e.oid));
            }
        }
        Some(Some(untracked::exclude_oid(&content)))
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

    /// A file's stat, as the comparisons need it.
    #[derive(Clone, Copy, Debug)]
    struct Meta {
        mode: u32,
        size: u64,
        mtime: (i64, u32),
        ctime: (i64, u32),
        dev: u64,
        ino: u64,
        uid: u32,
        gid: u32,
    }

    impl Meta {
        // `stat`'s field types differ between targets (32-bit, macOS): the casts are not no-ops
        // everywhere.
        #[allow(clippy::unnecessary_cast)]
        fn of(st: &rustix::fs::Stat) -> Meta {
            Meta {
                mode: st.st_mode as u32,
                size: st.st_size as u64,
                mtime: (st.st_mtime as i64, st.st_mtime_nsec as u32),
                ctime: (st.st_ctime as i64, st.st_ctime_nsec as u32),
                dev: st.st_dev as u64,
                ino: st.st_ino as u64,
                uid: st.st_uid as u32,
                gid: st.st_gid as u32,
            }
        }

        fn is_dir(&self) -> bool {
            self.mode & S_IFMT == S_IFDIR
        }

        fn now(&self) -> StatNow {
            StatNow {
                ctime: self.ctime,
                mtime: self.mtime,
                dev: self.dev,
                ino: self.ino,
                uid: self.uid,
                gid: self.gid,
                size: self.size,
            }
        }
    }

    /// The type a listing gives a name (`d_type`); `Unknown` on file systems that do not fill it in.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum Kind {
        File,
        Dir,
        Symlink,
        Other,
        Unknown,
    }

    impl Kind {
        fn of_mode(mode: u32) -> Kind {
            match mode & S_IFMT {
                S_IFREG => Kind::File,
                S_IFDIR => Kind::Dir,
                S_IFLNK => Kind::Symlink,
                _ => Kind::Other,
            }
        }

        fn of_type(t: rustix::fs::FileType) -> Kind {
            use rustix::fs::FileType as T;
            match t {
                T::RegularFile => Kind::File,
                T::Directory => Kind::Dir,
                T::Symlink => Kind::Symlink,
                T::Unknown => Kind::Unknown,
                _ => Kind::Other,
            }
        }
    }

    /// One listed name: where it sits in [`Scratch::names`] (NUL-terminated there) and its type.
    #[derive(Clone, Copy, Debug)]
    struct Ent {
        at: u32,
        len: u32,
        kind: Kind,
    }

    /// What a walker reuses from one directory to the next, so that listing and stat'ing allocate nothing per entry.
    pub(super) struct Scratch {
        /// The `getdents` buffer.
        buf: Vec<MaybeUninit<u8>>,
        /// The listing's names, each followed by a NUL.
        names: Vec<u8>,
        ents: Vec<Ent>,
        /// A path or a name being built, NUL-terminated for the system call.
        path: Vec<u8>,
    }

    impl Scratch {
        fn new() -> Scratch {
            Scratch {
                buf: vec![MaybeUninit::uninit(); 32 * 1024],
                names: Vec::new(),
                ents: Vec::new(),
                path: Vec::new(),
            }
        }

        /// `bytes` with a NUL, as a C string (`None` when it holds a NUL itself).
        fn cstr(&mut self, parts: &[&[u8]]) -> Option<&CStr> {
            self.path.clear();
            for p in parts {
                self.path.extend_from_slice(p);
            }
            self.path.push(0);
            CStr::from_bytes_with_nul(&self.path).ok()
        }
    }

    fn errno_absent(e: rustix::io::Errno) -> bool {
        matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP)
    }

    /// Opens the tracked directory `dir` (relative, `/`-terminated; `""` is the work tree) for listing and
    /// `fstatat`. `None` when it is gone, or is no longer a directory (a file, or a symbolic link, which git does not
    /// follow: "beyond a symbolic link").
    fn open_dir(ctx: &NativeCtx, dir: &[u8], scratch: &mut Scratch) -> Res<Option<OwnedFd>> {
        let root = ctx.work_tree.as_os_str().as_bytes();
        let rel = dir.strip_suffix(b"/").unwrap_or(dir);
        let sep: &[u8] = if rel.is_empty() { b"" } else { b"/" };
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !rel.is_empty() {
            flags |= OFlags::NOFOLLOW;
        }
        let Some(path) = scratch.cstr(&[root, sep, rel]) else {
            return Ok(None);
        };
        match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(fd)),
            Err(e) if errno_absent(e) => Ok(None),
            Err(e) => Err(declined(format!(
                "cannot list {}: {}",
                show(path.to_bytes()),
                std::io::Error::from(e)
            ))),
        }
    }

    /// Lists the open directory into `scratch`, sorted by name (`.`, `..` and `.git` left out).
    fn list(ctx: &NativeCtx, fd: &OwnedFd, dir: &[u8], scratch: &mut Scratch) -> Res<()> {
        let Scratch {
            buf, names, ents, ..
        } = scratch;
        names.clear();
        ents.clear();
        let mut it = RawDir::new(fd, buf);
        while let Some(e) = it.next() {
            let e = e.map_err(|e| {
                declined(format!(
                    "cannot list {}: {}",
                    show(dir),
                    std::io::Error::from(e)
                ))
            })?;
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." || name == b".git" {
                continue;
            }
            if ctx.settings.precompose && !name.is_ascii() {
                return Err(declined(format!(
                    "core.precomposeUnicode and a non-ASCII name in {}",
                    show(dir)
                )));
            }
            let (Ok(at), Ok(len)) = (u32::try_from(names.len()), u32::try_from(name.len())) else {
                return Err(declined(format!("{} lists too much", show(dir))));
            };
            ents.push(Ent {
                at,
                len,
                kind: Kind::of_type(e.file_type()),
            });
            names.extend_from_slice(name);
            names.push(0);
        }
        let names = &*names;
        let name = |e: &Ent| &names[e.at as usize..(e.at + e.len) as usize];
        ents.sort_unstable_by(|a, b| name(a).cmp(name(b)));
        Ok(())
    }

    fn stat_at(fd: &OwnedFd, name: &CStr) -> Result<Meta, Errno> {
        rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| Meta::of(&st))
    }

    /// Whether `name` (a name in `dir`) is one of the tracked directories directly in it.
    fn is_tracked_child(dir: &TrackedDir, name: &[u8]) -> bool {
        dir.children
            .binary_search_by(|c| c.as_slice().cmp(name))
            .is_ok()
    }

    /// One tracked directory: its listing merged with its index entries; or, when git's untracked cache says the
    /// directory holds the same names as when git last listed it, its index entries and the untracked names git
    /// recorded.
    fn scan_tracked_dir(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        state: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) -> Res<()> {
        let idx = &ctx.index;
        let node = ctx
            .untracked
            .as_ref()
            .and_then(|uc| uc.by_path.get(&dir.path).copied());
        let Some(fd) = open_dir(ctx, &dir.path, &mut state.scratch)? else {
            // Gone, or no longer a directory: every file in it is deleted.
            return scan_entries(ctx, dir, None, state, part);
        };
        let now = || rustix::fs::fstat(&fd).ok().map(|st| Meta::of(&st).now());
        if let Some(n) = node
            && let Some(now) = now()
            && state.node_valid(&dir.path, n, false, Some(now))?
        {
            part.from_untracked_cache = true;
            scan_entries(ctx, dir, Some(&fd), state, part)?;
            return cached_untracked(ctx, dir, &fd, n, state, part);
        }
        // `status.showUntrackedFiles=no` needs no listing: every tracked file is stat'ed by name.
        if ctx.settings.untracked == Untracked::No && !ctx.settings.ignore_case {
            return scan_entries(ctx, dir, Some(&fd), state, part);
        }
        list(ctx, &fd, &dir.path, &mut state.scratch)?;
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
                        show(&dir.path)
                    )));
                }
            }
            *folded = Some(set);
            Ok(())
        };
        let ents = std::mem::take(&mut state.scratch.ents);
        let names = std::mem::take(&mut state.scratch.names);
        let name_of = |e: &Ent| &names[e.at as usize..(e.at + e.len) as usize];
        let result = (|| -> Res<()> {
            let mut d = 0;
            let mut k = 0;
            let mut steps = 0usize;
            while k < dir.direct.len() || d < ents.len() {
                steps += 1;
                if steps.is_multiple_of(256) {
                    state.flags.check()?;
                }
                let iname = dir.direct.get(k).map(|&i| &idx.name(i)[base..]);
                let dname = ents.get(d).map(name_of);
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
                            if ents
                                .iter()
                                .any(|e| name_of(e).to_ascii_lowercase() == lower)
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
                        let ent = ents[d];
                        let name = name_of(&ent);
                        d += 1;
                        if name == b".gitattributes" {
                            part.untracked_attributes = true;
                        }
                        if ent.kind == Kind::Dir && is_tracked_child(dir, name) {
                            continue; // checked on its own
                        }
                        let mut kind = ent.kind;
                        if kind == Kind::Unknown {
                            let c = CStr::from_bytes_with_nul(
                                &names[ent.at as usize..=(ent.at + ent.len) as usize],
                            )
                            .unwrap_or_default();
                            kind = match stat_at(&fd, c) {
                                Ok(m) => Kind::of_mode(m.mode),
                                Err(e) if errno_absent(e) => continue,
                                Err(e) => {
                                    return Err(declined(format!(
                                        "cannot stat {}{}: {}",
                                        show(&dir.path),
                                        show(name),
                                        std::io::Error::from(e)
                                    )));
                                }
                            };
                            if kind == Kind::Dir && is_tracked_child(dir, name) {
                                continue;
                            }
                        }
                        if ctx.settings.ignore_case {
                            fold(&mut folded)?;
                            // (The exact name of a tracked directory is not another case of it.)
                            let exact = dir.children.iter().any(|c| c == name);
                            let lower = name.to_ascii_lowercase();
                            if !exact && folded.as_ref().is_some_and(|f| f.contains(&lower)) {
                                return Err(declined(format!(
                                    "core.ignorecase and {}{} tracked under another case",
                                    show(&dir.path),
                                    show(name)
                                )));
                            }
                        }
                        let mut full = dir.path.clone();
                        full.extend_from_slice(name);
                        untracked_entry(ctx, full, kind, state, &mut part.untracked)?;
                    }
                    Ordering::Equal => {
                        let i = dir.direct[k];
                        let ent = ents[d];
                        let c = CStr::from_bytes_with_nul(
                            &names[ent.at as usize..=(ent.at + ent.len) as usize],
                        )
                        .unwrap_or_default();
                        let code = entry_code(ctx, i, &fd, c, ent.kind == Kind::Dir, state, part)?;
                        if let Some(code) = code {
                            push_change(part, idx.name(i), code);
                        }
                        k = next_name(idx, &dir.direct, k);
                        d += 1;
                    }
                }
            }
            Ok(())
        })();
        state.scratch.ents = ents;
        state.scratch.names = names;
        result
    }

    /// The tracked files of `dir` checked by name, without a listing (the directory is gone when `fd` is `None`).
    fn scan_entries(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        fd: Option<&OwnedFd>,
        state: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) -> Res<()> {
        let idx = &ctx.index;
        let base = dir.path.len();
        let mut k = 0;
        while k < dir.direct.len() {
            if k % 256 == 255 {
                state.flags.check()?;
            }
            let i = dir.direct[k];
            let e = idx.entry(i);
            let next = next_name(idx, &dir.direct, k);
            // Entries that give no line whether or not the file is there need no stat.
            let silent = e.stage() != 0
                || e.assume_unchanged()
                || (e.skip_worktree() && !ctx.settings.sparse_clear);
            if silent {
                k = next;
                continue;
            }
            let found = match fd {
                None => None,
                Some(fd) => {
                    let name = &idx.name(i)[base..];
                    let Some(c) = state.scratch.cstr(&[name]) else {
                        return Err(declined(format!("{} holds a NUL", show(idx.name(i)))));
                    };
                    match stat_at(fd, c) {
                        Ok(m) => Some(m),
                        Err(err) if errno_absent(err) => None,
                        Err(err) => {
                            return Err(declined(format!(
                                "cannot stat {}: {}",
                                show(idx.name(i)),
                                std::io::Error::from(err)
                            )));
                        }
                    }
                }
            };
            let code = match found {
                // Tracked, not on disk (a skip-worktree entry that is absent is not a change).
                None => (!e.skip_worktree()).then_some(b'D'),
                Some(m) => entry_code_with(ctx, &e, idx.name(i), m, state.flags, part)?,
            };
            if let Some(code) = code {
                push_change(part, idx.name(i), code);
            }
            k = next;
        }
        Ok(())
    }

    /// The code of entry `i`, present on disk as `name` in the directory `fd` (a directory when `is_dir`).
    fn entry_code(
        ctx: &NativeCtx,
        i: usize,
        fd: &OwnedFd,
        name: &CStr,
        is_dir: bool,
        state: &WalkState<'_>,
        part: &mut WorktreePart,
    ) -> Res<Option<u8>> {
        let idx = &ctx.index;
        let e = idx.entry(i);
        if e.stage() != 0
            || e.assume_unchanged()
            || (e.skip_worktree() && !ctx.settings.sparse_clear)
        {
            return Ok(None);
        }
        if e.intent_to_add() {
            // Added with `git add -N`: new in the work tree, whatever its content.
            return Ok(Some(if is_dir { b'D' } else { b'A' }));
        }
        let md = match stat_at(fd, name) {
            Ok(md) => md,
            Err(err) if errno_absent(err) => return Ok(Some(b'D')), // removed since the listing
            Err(err) => {
                return Err(declined(format!(
                    "cannot stat {}: {}",
                    show(idx.name(i)),
                    std::io::Error::from(err)
                )));
            }
        };
        check_entry(ctx, &e, idx.name(i), md, state.flags, part)
    }

    /// [`entry_code`] for an entry already stat'ed.
    fn entry_code_with(
        ctx: &NativeCtx,
        e: &IndexEntry,
        name: &[u8],
        md: Meta,
        flags: &Flags<'_>,
        part: &mut WorktreePart,
    ) -> Res<Option<u8>> {
        if e.intent_to_add() {
            return Ok(Some(if md.is_dir() { b'D' } else { b'A' }));
        }
        check_entry(ctx, e, name, md, flags, part)
    }

    /// What git makes of a path while it reads a directory (`enum path_treatment`, in its order).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Treat {
        None,
        Recurse,
        Excluded,
        Untracked,
    }

    /// The untracked entries of a tracked directory git's untracked cache vouches for, as git replays its block
    /// (`read_cached_dir`, `treat_path_fast`): the directories it read below (each untracked one read again with
    /// `check_only`, as git does, and shown as `dir/` when it holds something), then the untracked names it recorded,
    /// shown as they are: git does not look at them again (a recorded `dir/` stays even once emptied, as in git).
    fn cached_untracked(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        fd: &OwnedFd,
        n: usize,
        state: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) -> Res<()> {
        let Some(uc) = ctx.untracked.as_ref() else {
            return Ok(());
        };
        let node = &uc.nodes[n];
        for &c in &node.dirs {
            let child = &uc.nodes[c];
            let name = &child.path[dir.path.len()..child.path.len() - 1];
            if !child.check_only && is_tracked_child(dir, name) {
                continue; // a tracked directory: checked on its own (git recurses into it the same way)
            }
            let first = if child.check_only {
                rdr(ctx, state, &child.path, Some(c), true, &mut part.untracked)?
            } else {
                Treat::Recurse
            };
            if first == Treat::Recurse {
                rdr(ctx, state, &child.path, Some(c), false, &mut part.untracked)?;
            } else if first == Treat::Untracked {
                part.untracked.push(child.path.clone());
            }
        }
        for name in &node.untracked {
            let mut full = dir.path.clone();
            full.extend_from_slice(name);
            if name.as_slice() == b".gitattributes" {
                part.untracked_attributes = true;
            }
            part.untracked.push(full);
        }
        // An untracked .gitattributes that the rules ignore is not in git's list, and it still applies.
        let base = dir.path.len();
        let mut p = dir.path.clone();
        p.extend_from_slice(b".gitattributes");
        if !part.untracked_attributes
            && state.ignored(&p)?
            && stat_at(fd, c".gitattributes").is_ok()
            && dir
                .direct
                .binary_search_by(|&i| ctx.index.name(i)[base..].cmp(b".gitattributes"))
                .is_err()
        {
            part.untracked_attributes = true;
        }
        Ok(())
    }

    /// git's `read_directory_recursive` for a directory that is not tracked (`path`, `/`-terminated), with its block
    /// `node` of the untracked cache: replayed when valid, listed otherwise. With `check_only` (how git looks into an
    /// untracked directory to decide whether to show it) it stops at the first untracked entry; without, it adds each
    /// untracked entry to `out`. Returns the most significant treatment met.
    fn rdr(
        ctx: &NativeCtx,
        state: &mut WalkState<'_>,
        path: &[u8],
        node: Option<usize>,
        check_only: bool,
        out: &mut Vec<Vec<u8>>,
    ) -> Res<Treat> {
        state.flags.check()?;
        let Some(uc) = ctx.untracked.as_ref() else {
            return Ok(Treat::None);
        };
        let mut dir_state = Treat::None;
        if let Some(n) = node
            && state.node_valid(path, n, check_only, None)?
        {
            let node = &uc.nodes[n];
            for &c in &node.dirs {
                let child = &uc.nodes[c];
                let first = if child.check_only {
                    rdr(ctx, state, &child.path, Some(c), true, out)?
                } else {
                    Treat::Recurse
                };
                let mut st = first;
                if first == Treat::Recurse {
                    st = st.max(rdr(ctx, state, &child.path, Some(c), check_only, out)?);
                }
                dir_state = dir_state.max(st);
                if check_only {
                    if dir_state == Treat::Untracked {
                        return Ok(dir_state);
                    }
                    continue;
                }
                if first == Treat::Untracked {
                    out.push(child.path.clone());
                }
            }
            for name in &node.untracked {
                dir_state = Treat::Untracked;
                if check_only {
                    return Ok(dir_state);
                }
                let mut full = path.to_vec();
                full.extend_from_slice(name);
                out.push(full);
            }
            return Ok(dir_state);
        }
        let entries = read_dir_names(&abs_of(ctx, path), ctx.settings.precompose)?;
        for (name, kind) in entries {
            let mut full = path.to_vec();
            full.extend_from_slice(&name);
            let first = match kind {
                Kind::Dir => {
                    full.push(b'/');
                    if state.ignored(&full)? {
                        Treat::Excluded
                    } else {
                        treat_directory(ctx, state, &full, out)?
                    }
                }
                Kind::File | Kind::Symlink => {
                    if ctx.index.has_name(&full) {
                        Treat::None
                    } else if state.ignored(&full)? {
                        Treat::Excluded
                    } else {
                        Treat::Untracked
                    }
                }
                _ => Treat::None,
            };
            let mut st = first;
            if first == Treat::Recurse {
                let sub = uc.by_path.get(&full).copied().filter(|_| node.is_some());
                st = st.max(rdr(ctx, state, &full, sub, check_only, out)?);
            }
            dir_state = dir_state.max(st);
            if check_only {
                if dir_state == Treat::Untracked {
                    return Ok(dir_state);
                }
                continue;
            }
            if first == Treat::Untracked {
                out.push(full);
            }
        }
        Ok(dir_state)
    }

    /// git's `treat_directory` for a directory that is not excluded and not tracked (`path`, `/`-terminated):
    /// a tracked directory is recursed into, a nested repository is untracked, anything else is looked into with
    /// `check_only` (through its block of the untracked cache).
    fn treat_directory(
        ctx: &NativeCtx,
        state: &mut WalkState<'_>,
        path: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Res<Treat> {
        if ctx.index.has_dir(path) {
            return Ok(Treat::Recurse);
        }
        let name = &path[..path.len() - 1];
        let mut i = ctx.index.lower_bound(name);
        while i < ctx.index.len() && ctx.index.name(i) == name {
            if ctx.index.entry(i).mode & S_IFMT == S_IFGITLINK {
                return Ok(Treat::None);
            }
            i += 1;
        }
        if is_nested_repo(ctx, path) {
            return Ok(Treat::Untracked);
        }
        let node = ctx
            .untracked
            .as_ref()
            .and_then(|uc| uc.by_path.get(path).copied());
        rdr(ctx, state, path, node, true, out)
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
        kind: Kind,
        state: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) -> Res<()> {
        if kind == Kind::Dir {
            full.push(b'/');
            if ctx.index.has_dir(&full) {
                return Ok(()); // a tracked directory, checked on its own
            }
            if ctx.settings.untracked != Untracked::No {
                untracked_dir(ctx, full, state, out)?;
            }
        } else if matches!(kind, Kind::File | Kind::Symlink)
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
        md: Meta,
        flags: &Flags<'_>,
        part: &mut WorktreePart,
    ) -> Res<Option<u8>> {
        let itype = e.mode & S_IFMT;
        let wtype = md.mode & S_IFMT;
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
            && (e.mode & 0o100 != 0) != (md.mode & 0o100 != 0)
        {
            return Ok(Some(b'M'));
        }
        let size = md.size as u32;
        if size != e.size && e.size != 0 {
            return Ok(Some(b'M'));
        }
        // git's match_stat_data, without USE_NSEC (git's default build): whole seconds only.
        let full = !ctx.settings.check_stat_minimal;
        let stat_same = size == e.size
            && md.mtime.0 as u32 == e.mtime.0
            && (!(ctx.settings.trust_ctime && full) || md.ctime.0 as u32 == e.ctime.0)
            && (!full || (md.ino as u32 == e.ino && md.uid == e.uid && md.gid == e.gid));
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
        let (oid, has_cr) = match hash_file(&abs, md.size, flags)? {
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

    fn read_dir_names(abs: &Path, precompose: bool) -> Res<Vec<(Vec<u8>, Kind)>> {
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
            let kind = if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else if ft.is_symlink() {
                Kind::Symlink
            } else {
                Kind::Other
            };
            out.push((e.file_name().as_bytes().to_vec(), kind));
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
        if ctx.untracked.is_some() {
            // As git reads it with its untracked cache (only ever used without `-uall`).
            match treat_directory(ctx, state, &dir, out)? {
                Treat::Untracked => out.push(dir),
                Treat::Recurse => {
                    let node = ctx
                        .untracked
                        .as_ref()
                        .and_then(|uc| uc.by_path.get(&dir).copied());
                    rdr(ctx, state, &dir, node, false, out)?;
                }
                _ => {}
            }
        } else if ctx.settings.untracked == Untracked::All && !is_nested_repo(ctx, &dir) {
            for (name, ft) in read_dir_names(&abs_of(ctx, &dir), ctx.settings.precompose)? {
                let mut full = dir.clone();
                full.extend_from_slice(&name);
                if ft == Kind::Dir {
                    full.push(b'/');
                    untracked_dir(ctx, full, state, out)?;
                } else if matches!(ft, Kind::File | Kind::Symlink) && !state.ignored(&full)? {
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
            let found = if ft == Kind::Dir {
                full.push(b'/');
                !state.ignored(&full)? && has_untracked(ctx, &full, state)?
            } else {
                matches!(ft, Kind::File | Kind::Symlink) && !state.ignored(&full)?
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
    use crate::git::test_support::{ENGINES, FALLBACK, Fixture, lines};
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
    fn untracked_cache_spares_listings_and_changes_nothing() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitignore", "*.log\n");
        for d in ["a", "a/b", "c", "c/d/e"] {
            f.write(&format!("{d}/t.txt"), "t\n");
        }
        f.write("c/.gitignore", "*.tmp\n");
        f.commit("init");
        f.write("a/u.txt", "u\n");
        f.write("c/d/skip.tmp", "s\n");
        f.write("a/only-ignored/x.log", "x\n");
        f.write("c/newdir/n.txt", "n\n");
        f.git(&f.root, &["config", "core.untrackedCache", "true"]);
        f.git(&f.root, &["update-index", "--untracked-cache"]);
        // Directories written in the second the index is written are racy: git and we list them.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]); // writes the untracked cache
        let unlisted = |f: &Fixture| f.snap_with(&f.root, ENGINES[0]).status_unlisted_dirs;
        let status = f.assert_status(&f.root);
        assert_eq!(
            status,
            lines(&["?? a/u.txt", "?? c/newdir/"]),
            "git's own answer"
        );
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]);
        let all = unlisted(&f);
        assert!(all >= 5, "every tracked directory from the cache: {all}");

        // A content edit leaves every directory's stat alone: still from the cache, the edit found by its stat.
        f.write("a/t.txt", "changed\n");
        // Inside an untracked directory that held only ignored files (its parent unchanged): shown now.
        f.write("a/only-ignored/y.txt", "y\n");
        assert_eq!(unlisted(&f), all);
        f.assert_status(&f.root);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]);
        // A .gitignore edited in place: its directory and everything below are listed again.
        f.write("c/.gitignore", "*.tmp\nnewdir/\n");
        assert!(unlisted(&f) <= all - 3, "c, c/d and c/d/e listed again");
        let status = f.assert_status(&f.root);
        assert!(!status.iter().any(|l| l.contains("newdir")), "{status:?}");
        // A tracked file removed from the index only (its directory unchanged): git drops the directory's block.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]);
        f.git(&f.root, &["rm", "-q", "--cached", "a/b/t.txt"]);
        let status = f.assert_status(&f.root);
        assert!(status.contains(&"?? a/b/".to_owned()), "{status:?}");
        // info/exclude changed: the whole cache is set aside.
        fs::write(f.root.join(".git/info/exclude"), "u.txt\n").expect("exclude");
        assert_eq!(unlisted(&f), 0);
        f.assert_status(&f.root);
        // core.untrackedCache=false: git drops it, so do we.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]);
        assert!(unlisted(&f) > 0);
        f.git(&f.root, &["config", "core.untrackedCache", "false"]);
        assert_eq!(unlisted(&f), 0);
        f.assert_status(&f.root);
    }

    #[test]
    fn an_emptied_untracked_directory_stays_listed_as_git_replays_its_cache() {
        // git 2.47's untracked cache keeps `dir/` in its parent's list; the parent did not change, so git replays
        // it without looking inside. The status must be git's, not what a listing would say.
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        f.git(&f.root, &["config", "core.untrackedCache", "true"]);
        f.git(&f.root, &["update-index", "--untracked-cache"]);
        f.write("d/x.txt", "x\n");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        f.git(&f.root, &["status", "--short"]);
        fs::remove_file(f.root.join("d/x.txt")).expect("rm");
        let git = f.git_status(&f.root);
        assert_eq!(git, lines(&["?? d/"]), "git's answer from its cache");
        let s = f.snap_with(&f.root, ENGINES[0]);
        assert!(s.status_unlisted_dirs > 0);
        assert_eq!(s.status_lines, git);
        f.git(&f.root, &["config", "core.untrackedCache", "false"]);
        assert!(f.assert_status(&f.root).is_empty(), "without the cache");
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
