//! [`FileList`]: a workspace's file list, kept compact (issue 30).
//!
//! The language server keeps every file of each workspace folder for "this glob matches nothing"
//! hints, glob hovers and `check`. As a `Vec<PathBuf>` that cost about 160 bytes a file (an
//! absolute path in its own allocation, the allocator's overhead and the vector's slot): 16 MB on
//! a 100,000-file tree, a third of the server. Here each directory's path relative to the root is
//! written once and each file is its name and the directory it is in: about 25 bytes a file.
//! Files are visited in the order they were pushed, as absolute paths built in one reused buffer.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// A file: its directory (an index into `dirs`, or [`WHOLE`]) and its name's span in `text`
/// (or, for [`WHOLE`], its index in `whole`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    dir: u32,
    start: u32,
    end: u32,
}

/// An [`Entry::dir`] saying the file is kept whole in `whole` (a path that is not UTF-8, not
/// under the root, or past what the compact form can index).
const WHOLE: u32 = u32::MAX;

/// The files of one tree, in the order they were pushed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileList {
    root: PathBuf,
    /// Directory paths (relative to `root`) and file names, back to back.
    text: String,
    /// Each directory's relative path: its span in `text`.
    dirs: Vec<(u32, u32)>,
    entries: Vec<Entry>,
    whole: Vec<PathBuf>,
}

impl FileList {
    /// An empty list of files under `root`.
    pub fn new(root: &Path) -> Self {
        FileList {
            root: root.to_path_buf(),
            ..FileList::default()
        }
    }

    /// A list of `paths` (absolute), for tests and callers that have them at hand.
    pub fn from_paths<P: AsRef<Path>>(root: &Path, paths: impl IntoIterator<Item = P>) -> Self {
        let mut list = FileList::new(root);
        for p in paths {
            list.push(p.as_ref());
        }
        list
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No files.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `path` (absolute). Files of one directory pushed one after another share its path.
    pub fn push(&mut self, path: &Path) {
        if let Some(entry) = self.compact(path) {
            self.entries.push(entry);
            return;
        }
        let at = u32::try_from(self.whole.len()).unwrap_or(u32::MAX);
        self.whole.push(path.to_path_buf());
        self.entries.push(Entry {
            dir: WHOLE,
            start: at,
            end: at,
        });
    }

    /// `path` as a directory and a name in `text`, when it is UTF-8 under the root and fits.
    fn compact(&mut self, path: &Path) -> Option<Entry> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let name = rel.file_name()?.to_str()?;
        let dir = rel.parent().unwrap_or(Path::new("")).to_str()?;
        let same_dir = self
            .dirs
            .last()
            .is_some_and(|&(s, e)| &self.text[s as usize..e as usize] == dir);
        if !same_dir {
            let start = u32::try_from(self.text.len()).ok()?;
            let end = u32::try_from(self.text.len() + dir.len()).ok()?;
            u32::try_from(self.dirs.len()).ok().filter(|&n| n < WHOLE)?;
            self.text.push_str(dir);
            self.dirs.push((start, end));
        }
        let start = u32::try_from(self.text.len()).ok()?;
        let end = u32::try_from(self.text.len() + name.len()).ok()?;
        self.text.push_str(name);
        Some(Entry {
            dir: u32::try_from(self.dirs.len() - 1).ok()?,
            start,
            end,
        })
    }

    /// Gives back what the pushes over-allocated (the list is kept for the server's life).
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.dirs.shrink_to_fit();
        self.entries.shrink_to_fit();
        self.whole.shrink_to_fit();
    }

    /// Calls `f` with each file's absolute path, in order, until it breaks.
    pub fn for_each(&self, mut f: impl FnMut(&Path) -> ControlFlow<()>) {
        let mut buf = PathBuf::new();
        let mut dir_in_buf = WHOLE;
        for e in &self.entries {
            if e.dir == WHOLE {
                if let Some(p) = self.whole.get(e.start as usize)
                    && f(p).is_break()
                {
                    return;
                }
                continue;
            }
            if e.dir != dir_in_buf {
                let (s, end) = self.dirs[e.dir as usize];
                buf.clear();
                buf.push(&self.root);
                let dir = &self.text[s as usize..end as usize];
                if !dir.is_empty() {
                    buf.push(dir);
                }
                dir_in_buf = e.dir;
            }
            buf.push(&self.text[e.start as usize..e.end as usize]);
            let flow = f(&buf);
            buf.pop();
            if flow.is_break() {
                return;
            }
        }
    }

    /// Whether some file satisfies `pred`.
    pub fn any(&self, mut pred: impl FnMut(&Path) -> bool) -> bool {
        let mut found = false;
        self.for_each(|p| {
            if pred(p) {
                found = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        found
    }

    /// Every file's absolute path, each in its own allocation (tests, small lists).
    pub fn to_vec(&self) -> Vec<PathBuf> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|p| {
            out.push(p.to_path_buf());
            ControlFlow::Continue(())
        });
        out
    }

    /// The bytes the list holds on the heap (its allocations' capacities).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.dirs.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self
                .whole
                .iter()
                .map(|p| p.capacity() + std::mem::size_of::<PathBuf>())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_back_in_order_whatever_their_directory() {
        let paths = [
            "/w/CLAUDE.md",
            "/w/src/a.ts",
            "/w/src/b.ts",
            "/w/src/deep/c.ts",
            // Back in a directory seen before, after another one.
            "/w/src/d.ts",
            "/w/x.py",
        ];
        let list = FileList::from_paths(Path::new("/w"), paths);
        assert_eq!(list.len(), 6);
        let back: Vec<PathBuf> = list.to_vec();
        assert_eq!(back, paths.map(PathBuf::from));
    }

    #[test]
    fn a_path_the_compact_form_cannot_hold_is_kept_whole_in_its_place() {
        let mut paths = vec![
            PathBuf::from("/w/a.ts"),
            PathBuf::from("/elsewhere/b.ts"),
            PathBuf::from("/w/c.ts"),
        ];
        #[cfg(unix)]
        {
            use std::ffi::OsStr;
            use std::os::unix::ffi::OsStrExt;
            paths.insert(
                2,
                Path::new("/w/sub").join(OsStr::from_bytes(b"bad\xff.ts")),
            );
        }
        let list = FileList::from_paths(Path::new("/w"), &paths);
        assert_eq!(list.to_vec(), paths);
    }

    #[test]
    fn a_visit_stops_when_asked_and_any_finds_a_file() {
        let list = FileList::from_paths(Path::new("/w"), ["/w/a", "/w/b", "/w/c"]);
        let mut seen = Vec::new();
        list.for_each(|p| {
            seen.push(p.to_path_buf());
            if p.ends_with("b") {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(seen, [PathBuf::from("/w/a"), PathBuf::from("/w/b")]);
        assert!(list.any(|p| p.ends_with("c")));
        assert!(!list.any(|p| p.ends_with("d")));
        assert!(FileList::new(Path::new("/w")).is_empty());
    }

    /// What the list is for: 10,000 files in 500 deep directories take a small part of what
    /// their paths take as `PathBuf`s.
    #[test]
    fn the_list_holds_a_fraction_of_its_paths() {
        let root = Path::new("/tmp/bench/large-tree");
        let paths: Vec<PathBuf> = (0..10_000)
            .map(|i| {
                root.join(format!(
                    "packages/pkg{:03}/src{}/components{}/m{i}.tsx",
                    i / 500,
                    i / 100,
                    i / 20
                ))
            })
            .collect();
        let mut list = FileList::from_paths(root, &paths);
        list.shrink_to_fit();
        let as_paths: usize = paths.iter().map(|p| p.as_os_str().len() + 24).sum();
        assert!(
            list.heap_bytes() * 3 < as_paths,
            "{} bytes against {as_paths}",
            list.heap_bytes()
        );
        assert_eq!(list.to_vec(), paths);
    }
}
