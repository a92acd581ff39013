//! The native work-tree engine (Unix): the index read directly, the work tree checked directory by directory on
//! several threads (one listing per tracked directory gives the untracked names, each tracked name is `fstatat`'ed
//! and compared with the index's stat data, content hashed only when the stat data moved or is racy), git's exclude
//! rules applied natively. libgit2 still answers what needs more of git: submodules, content filters, exotic
//! exclude patterns.

use std::path::PathBuf;

use git2::Repository;

use super::bytes_to_path;
use super::config::{RepoHandle, Settings};
use super::ignore::IgnoreFile;
use super::index::ParsedIndex;

#[cfg(unix)]
pub(super) use walk::worktree;

/// What the native walks share.
#[derive(Debug)]
pub(super) struct NativeCtx {
    pub(super) index: ParsedIndex,
    pub(super) work_tree: PathBuf,
    pub(super) handle: RepoHandle,
    pub(super) settings: Settings,
    /// Content filters may apply (`.gitattributes` anywhere, or end-of-line config).
    pub(super) filters: bool,
    /// Entries modified in or after this second may be "racily clean" and get their content compared.
    pub(super) racy_from: u32,
    /// `core.excludesFile` then `info/exclude` (lowest priority first), under every `.gitignore`.
    pub(super) base_ignores: Vec<IgnoreFile>,
}

/// A repository handle opened on first use (most walks never need one).
pub(super) struct LazyRepo<'a> {
    handle: &'a RepoHandle,
    repo: Option<Repository>,
}

impl<'a> LazyRepo<'a> {
    fn new(handle: &'a RepoHandle) -> Self {
        Self { handle, repo: None }
    }

    fn get(&mut self) -> Option<&Repository> {
        if self.repo.is_none() {
            self.repo = self.handle.open().ok();
        }
        self.repo.as_ref()
    }

    /// Whether git ignores `rel` (a path in the work tree; directories end with `/`). Errors count as not ignored,
    /// so that the path shows.
    fn ignored(&mut self, rel: &[u8]) -> bool {
        self.get()
            .is_some_and(|r| r.is_path_ignored(bytes_to_path(rel)).unwrap_or(false))
    }
}

/// A tracked directory and the index entries directly in it (all stages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TrackedDir {
    pub(super) path: Vec<u8>,
    pub(super) direct: Vec<usize>,
}

/// The directories that hold index entries, in pre-order (the root first), each with its direct entries.
pub(super) fn tracked_dirs(idx: &ParsedIndex) -> Vec<TrackedDir> {
    let mut dirs = vec![TrackedDir {
        path: Vec::new(),
        direct: Vec::new(),
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
            start += p + 1;
            dirs.push(TrackedDir {
                path: name[..start].to_vec(),
                direct: Vec::new(),
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
    use std::ffi::OsStr;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{DirEntryExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use git2::{ObjectType, Oid, Repository, Status};

    use super::{LazyRepo, NativeCtx, TrackedDir};
    use crate::git::bytes_to_path;
    use crate::git::config::Untracked;
    use crate::git::ignore::IgnoreFile;
    use crate::git::index::{IndexEntry, ParsedIndex};
    use crate::git::render::Change;
    use crate::git::status::{WorktreePart, submodule_code};

    const S_IFMT: u32 = 0o170000;
    const S_IFREG: u32 = 0o100000;
    const S_IFLNK: u32 = 0o120000;
    const S_IFGITLINK: u32 = 0o160000;

    /// A walker's caches: its repository handle (opened on first use) and the exclude rules of the directories it
    /// has looked at.
    pub(super) struct WalkState<'a> {
        ctx: &'a NativeCtx,
        repo: LazyRepo<'a>,
        dirs: std::collections::HashMap<Vec<u8>, DirIgnore>,
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
        pub(super) fn new(ctx: &'a NativeCtx) -> Self {
            Self {
                ctx,
                repo: LazyRepo::new(&ctx.handle),
                dirs: std::collections::HashMap::new(),
            }
        }

        fn get(&mut self) -> Option<&Repository> {
            self.repo.get()
        }

        /// Loads the rules of `dir` (`""` or ending with `/`) and its parents, and whether it is excluded.
        fn load(&mut self, dir: &[u8]) {
            if self.dirs.contains_key(dir) {
                return;
            }
            let excluded = !dir.is_empty() && {
                let parent = parent_dir(dir);
                self.load(parent);
                self.dirs.get(parent).is_some_and(|d| d.excluded)
                    || self.decide(parent, &dir[..dir.len() - 1], true) == Some(true)
            };
            let file = if excluded {
                None
            } else {
                let mut p = dir.to_vec();
                p.extend_from_slice(b".gitignore");
                let abs = abs_of(self.ctx, &p);
                // git does not follow a symbolic link here.
                match fs::symlink_metadata(&abs) {
                    Ok(md) if md.is_file() => fs::read(&abs).ok().map(|t| IgnoreFile::parse(&t)),
                    _ => None,
                }
            };
            self.dirs.insert(dir.to_vec(), DirIgnore { file, excluded });
        }

        /// The rules from `dir` up to the root, then `info/exclude` and `core.excludesFile`; the deepest file with
        /// a matching rule decides. `None` when a file on the way has a pattern only libgit2 reads right.
        fn decide(&self, dir: &[u8], path: &[u8], is_dir: bool) -> Option<bool> {
            let mut d = dir;
            loop {
                if let Some(f) = self.dirs.get(d).and_then(|x| x.file.as_ref()) {
                    if f.exotic {
                        return None;
                    }
                    if let Some(hit) = f.matched(&path[d.len()..], is_dir) {
                        return Some(hit);
                    }
                }
                if d.is_empty() {
                    break;
                }
                d = parent_dir(d);
            }
            for f in self.ctx.base_ignores.iter().rev() {
                if f.exotic {
                    return None;
                }
                if let Some(hit) = f.matched(path, is_dir) {
                    return Some(hit);
                }
            }
            Some(false)
        }

        /// Whether git ignores `rel` (a path in the work tree; directories end with `/`).
        fn ignored(&mut self, rel: &[u8]) -> bool {
            let is_dir = rel.ends_with(b"/");
            let path = if is_dir { &rel[..rel.len() - 1] } else { rel };
            let dir = path
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(&path[..0], |p| &path[..=p]);
            self.load(dir);
            if self.dirs.get(dir).is_some_and(|d| d.excluded) {
                return true;
            }
            match self.decide(dir, path, is_dir) {
                Some(hit) => hit,
                None => self.repo.ignored(rel),
            }
        }
    }

    /// Checks the tracked directories `dirs`: each listing gives the untracked names, and each tracked name is
    /// stat'ed through the directory (`fstatat`, one path component to resolve) and compared with its index entry.
    pub(in crate::git) fn worktree(
        ctx: &NativeCtx,
        dirs: &[TrackedDir],
        next: &AtomicUsize,
    ) -> WorktreePart {
        const BATCH: usize = 8;
        let mut lazy = WalkState::new(ctx);
        let mut part = WorktreePart::default();
        loop {
            let start = next.fetch_add(BATCH, AtomicOrdering::Relaxed);
            if start >= dirs.len() {
                break;
            }
            for dir in &dirs[start..(start + BATCH).min(dirs.len())] {
                scan_tracked_dir(ctx, dir, &mut lazy, &mut part);
            }
        }
        part
    }

    fn scan_tracked_dir(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        lazy: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) {
        let idx = &ctx.index;
        let abs = abs_of(ctx, &dir.path);
        // A symbolic link where a tracked directory was is not followed (git: "beyond a symbolic link").
        // (Without the trailing slash, which would make lstat follow the link.)
        let real_dir = dir.path.is_empty()
            || fs::symlink_metadata(abs_of(ctx, &dir.path[..dir.path.len() - 1]))
                .is_ok_and(|m| m.is_dir());
        let mut disk: Vec<(std::ffi::OsString, fs::DirEntry)> = match fs::read_dir(&abs) {
            Ok(rd) if real_dir => rd
                .flatten()
                .map(|e| (e.file_name(), e))
                .filter(|(n, _)| n.as_bytes() != b".git")
                .collect(),
            _ => Vec::new(), // gone: every file in it is deleted
        };
        disk.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let base = dir.path.len();
        let mut d = 0;
        let mut k = 0;
        while k < dir.direct.len() || d < disk.len() {
            let iname = dir.direct.get(k).map(|&i| &idx.name(i)[base..]);
            let dname = disk.get(d).map(|(n, _)| n.as_bytes());
            let order = match (iname, dname) {
                (Some(i), Some(n)) => i.cmp(n),
                (Some(_), None) => Ordering::Less,
                (None, _) => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    // Tracked, not on disk.
                    let i = dir.direct[k];
                    let e = idx.entry(i);
                    if e.stage() == 0 && !e.assume_unchanged() && !e.skip_worktree() {
                        part.changes.push(Change {
                            path: idx.name(i).to_vec(),
                            orig: None,
                            code: b'D',
                            unmerged: None,
                        });
                    }
                    k = next_name(idx, &dir.direct, k);
                }
                Ordering::Greater => {
                    let (name, entry) = &disk[d];
                    let mut full = dir.path.clone();
                    full.extend_from_slice(name.as_bytes());
                    untracked_entry(
                        ctx,
                        full,
                        entry.file_type().is_ok_and(|t| t.is_dir()),
                        lazy,
                        &mut part.untracked,
                    );
                    d += 1;
                }
                Ordering::Equal => {
                    let i = dir.direct[k];
                    let e = idx.entry(i);
                    // (A directory where a file is tracked is a deletion; git does not list its content.)
                    let entry = &disk[d].1;
                    let code = if e.stage() != 0 || e.assume_unchanged() || e.skip_worktree() {
                        None
                    } else if e.intent_to_add() {
                        // Added with `git add -N`: new in the work tree, whatever its content.
                        Some(if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            b'D'
                        } else {
                            b'A'
                        })
                    } else {
                        check_entry(ctx, &e, idx.name(i), entry, lazy)
                    };
                    if let Some(code) = code {
                        part.changes.push(Change {
                            path: idx.name(i).to_vec(),
                            orig: None,
                            code,
                            unmerged: None,
                        });
                    }
                    k = next_name(idx, &dir.direct, k);
                    d += 1;
                }
            }
        }
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

    /// A name on disk that has no index entry of its own.
    fn untracked_entry(
        ctx: &NativeCtx,
        mut full: Vec<u8>,
        is_dir: bool,
        lazy: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if is_dir {
            full.push(b'/');
            if ctx.index.has_dir(&full) {
                return; // a tracked directory, checked on its own
            }
            if ctx.settings.untracked != Untracked::No {
                untracked_dir(ctx, full, lazy, out);
            }
        } else if ctx.settings.untracked != Untracked::No && !lazy.ignored(&full) {
            out.push(full);
        }
    }

    /// What `git status` says about one tracked file present on disk: `None` when unchanged.
    fn check_entry(
        ctx: &NativeCtx,
        e: &IndexEntry,
        name: &[u8],
        entry: &fs::DirEntry,
        lazy: &mut WalkState<'_>,
    ) -> Option<u8> {
        let Ok(md) = entry.metadata() else {
            return recheck(lazy, name);
        };
        let itype = e.mode & S_IFMT;
        let wtype = md.mode() & S_IFMT;
        if itype == S_IFGITLINK {
            return if md.is_dir() {
                lazy.get().and_then(|r| submodule_code(r, name))
            } else {
                recheck(lazy, name)
            };
        }
        if md.is_dir() {
            return Some(b'D'); // git: a directory where a file was is a removal
        }
        if itype != wtype {
            return Some(b'T');
        }
        if itype == S_IFREG
            && ctx.settings.filemode
            && (e.mode & 0o100 != 0) != (md.mode() & 0o100 != 0)
        {
            return Some(b'M');
        }
        let size = md.size() as u32;
        if size != e.size && e.size != 0 {
            return Some(b'M');
        }
        // Nanoseconds count only when the index has them (git built without USE_NSEC writes zeros).
        let same_time = |(sec, nsec): (i64, i64), (isec, insec): (u32, u32)| {
            sec as u32 == isec && (insec == 0 || nsec as u32 == insec)
        };
        let stat_same = size == e.size
            && same_time((md.mtime(), md.mtime_nsec()), e.mtime)
            && (!ctx.settings.trust_ctime || same_time((md.ctime(), md.ctime_nsec()), e.ctime))
            && entry.ino() as u32 == e.ino
            && md.uid() == e.uid
            && md.gid() == e.gid;
        if stat_same && e.mtime.0 < ctx.racy_from {
            return None;
        }
        // The stat data moved (or is too recent to trust): compare the content.
        let abs = abs_of(ctx, name);
        let oid = if itype == S_IFLNK {
            fs::read_link(&abs)
                .ok()
                .and_then(|t| Oid::hash_object(ObjectType::Blob, t.as_os_str().as_bytes()).ok())
        } else {
            Oid::hash_file(ObjectType::Blob, &abs).ok()
        };
        match oid {
            Some(oid) if oid.as_bytes() == e.oid.as_slice() => None,
            _ if ctx.filters && itype == S_IFREG => recheck(lazy, name),
            _ => Some(b'M'),
        }
    }

    /// Asks libgit2 about one path (content filters, odd file types).
    fn recheck(lazy: &mut WalkState<'_>, name: &[u8]) -> Option<u8> {
        let st = lazy
            .get()
            .and_then(|r| r.status_file(&bytes_to_path(name)).ok())?;
        if st.contains(Status::WT_DELETED) {
            Some(b'D')
        } else if st.contains(Status::WT_TYPECHANGE) {
            Some(b'T')
        } else if st.contains(Status::WT_MODIFIED) {
            Some(b'M')
        } else {
            None
        }
    }

    fn read_dir_names(abs: &Path) -> Vec<(Vec<u8>, bool)> {
        let Ok(rd) = fs::read_dir(abs) else {
            return Vec::new();
        };
        rd.flatten()
            .filter(|e| e.file_name().as_bytes() != b".git")
            .map(|e| {
                (
                    e.file_name().as_bytes().to_vec(),
                    e.file_type().is_ok_and(|t| t.is_dir()),
                )
            })
            .collect()
    }

    fn abs_of(ctx: &NativeCtx, rel: &[u8]) -> PathBuf {
        let mut p = ctx.work_tree.as_os_str().as_bytes().to_vec();
        p.push(b'/');
        p.extend_from_slice(rel);
        PathBuf::from(OsStr::from_bytes(&p))
    }

    fn is_nested_repo(ctx: &NativeCtx, dir: &[u8]) -> bool {
        let mut p = dir.to_vec();
        p.extend_from_slice(b".git");
        fs::symlink_metadata(abs_of(ctx, &p)).is_ok()
    }

    /// An untracked directory: shown as `dir/` when it holds something untracked that is not ignored (git's
    /// default), or file by file with `status.showUntrackedFiles=all`.
    fn untracked_dir(
        ctx: &NativeCtx,
        dir: Vec<u8>,
        lazy: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if lazy.ignored(&dir) {
            return;
        }
        if ctx.settings.untracked == Untracked::All && !is_nested_repo(ctx, &dir) {
            for (name, is_dir) in read_dir_names(&abs_of(ctx, &dir)) {
                let mut full = dir.clone();
                full.extend_from_slice(&name);
                if is_dir {
                    full.push(b'/');
                    untracked_dir(ctx, full, lazy, out);
                } else if !lazy.ignored(&full) {
                    out.push(full);
                }
            }
        } else if has_untracked(ctx, &dir, lazy) {
            out.push(dir);
        }
    }

    fn has_untracked(ctx: &NativeCtx, dir: &[u8], lazy: &mut WalkState<'_>) -> bool {
        if is_nested_repo(ctx, dir) {
            return true;
        }
        read_dir_names(&abs_of(ctx, dir))
            .into_iter()
            .any(|(name, is_dir)| {
                let mut full = dir.to_vec();
                full.extend_from_slice(&name);
                if is_dir {
                    full.push(b'/');
                    !lazy.ignored(&full) && has_untracked(ctx, &full, lazy)
                } else {
                    !lazy.ignored(&full)
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::git::test_support::{Fixture, NATIVE_ONLY, lines};
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
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&[" D d/a.txt", "?? d"])
        );
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
        // (libgit2 shows `AM` here; only the native engine matches git.)
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&[" A intent.txt", " M plain.txt"])
        );
        fs::remove_file(f.root.join("intent.txt")).expect("rm");
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
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
    fn nested_repository_and_submodule() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        // An untracked nested repository shows as a directory, even when empty (libgit2 hides an empty one).
        f.git(&f.root, &["init", "-q", "nested"]);
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&["?? nested/"])
        );
        f.write("nested/n.txt", "n\n");
        assert_eq!(f.assert_status(&f.root), lines(&["?? nested/"]));
        fs::remove_dir_all(f.root.join("nested")).expect("rm");
        // A submodule: modified content, untracked content, new commits.
        let src = f.base.join("subsrc");
        fs::create_dir_all(&src).expect("mkdir");
        f.git(&src, &["init", "-q", "-b", "main"]);
        fs::write(src.join("s.txt"), "s\n").expect("write");
        f.git(&src, &["add", "."]);
        f.git(&src, &["commit", "-q", "-m", "s"]);
        f.git(
            &f.root,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                src.to_str().expect("utf-8"),
                "sub",
            ],
        );
        f.commit("add sub");
        assert!(f.assert_status(&f.root).is_empty());
        fs::write(f.root.join("sub/new.txt"), "n\n").expect("write");
        assert_eq!(f.assert_status(&f.root), lines(&[" ? sub"]));
        fs::write(f.root.join("sub/s.txt"), "changed\n").expect("write");
        assert_eq!(f.assert_status(&f.root), lines(&[" m sub"]));
        f.git(&f.root.join("sub"), &["commit", "-q", "-am", "inner"]);
        assert_eq!(f.assert_status(&f.root), lines(&[" M sub"]));
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
        let status = f.assert_status_with(&f.root, &NATIVE_ONLY);
        assert_eq!(status, lines(&[" M b.txt"]));
    }
}
