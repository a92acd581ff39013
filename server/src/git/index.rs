//! The index file (`.git/index`), read directly.
//!
//! libgit2 checks the SHA-1 of the whole index on every load and validates every path, which costs more than git's
//! whole status on a large tree. The native engine reads the file itself (git does not verify the checksum either):
//! entry paths, stat data and object names, and the cache-tree, which tells which directories are unchanged since the
//! last `git write-tree` (git's own way of skipping most of the HEAD-against-index diff). Versions 2, 3 and 4.

use std::fs;
use std::path::Path;
use std::thread;

pub(super) const HASH_LEN: usize = 20;

/// One index entry: the stat data git compares, the object name, the flags (decoded on demand).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct IndexEntry {
    pub(super) ctime: (u32, u32),
    pub(super) mtime: (u32, u32),
    pub(super) ino: u32,
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) size: u32,
    pub(super) oid: [u8; HASH_LEN],
    flags: u16,
    ext_flags: u16,
}

impl IndexEntry {
    pub(super) fn stage(&self) -> u16 {
        (self.flags >> 12) & 3
    }
    pub(super) fn assume_unchanged(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    pub(super) fn skip_worktree(&self) -> bool {
        self.ext_flags & 0x4000 != 0
    }
    pub(super) fn intent_to_add(&self) -> bool {
        self.ext_flags & 0x2000 != 0
    }
}

/// Where an entry sits in the index file, and its path (in the file, or in `names` for version 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EntryAt {
    at: u32,
    name_at: u32,
    name_len: u32,
}

/// A cache-tree node: a directory and, when still valid, the tree object its index entries make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CacheNode {
    pub(super) name: Vec<u8>,
    pub(super) oid: Option<[u8; HASH_LEN]>,
    pub(super) children: Vec<usize>,
}

/// An index file, parsed without copying: the entries are offsets into the file's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ParsedIndex {
    buf: Vec<u8>,
    pub(super) entries: Vec<EntryAt>,
    /// Version 4 only: the paths, expanded from their prefix compression.
    names: Vec<u8>,
    v4: bool,
    /// Pre-order; `[0]` is the root when the `TREE` extension is present.
    pub(super) cache_tree: Vec<CacheNode>,
    /// A split index (`link`), a sparse index (`sdir`) or another required extension the native engine does not
    /// read: what it is, in words.
    pub(super) unsupported: Option<&'static str>,
    /// Some entry is a `.gitattributes` file.
    pub(super) has_attributes: bool,
    /// Where the untracked cache (`UNTR`) lies in the file: its data, without signature and size.
    untracked: Option<(usize, usize)>,
}

impl ParsedIndex {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    fn name_of(&self, e: &EntryAt) -> &[u8] {
        let src = if self.v4 { &self.names } else { &self.buf };
        &src[e.name_at as usize..(e.name_at + e.name_len) as usize]
    }

    pub(super) fn name(&self, i: usize) -> &[u8] {
        self.name_of(&self.entries[i])
    }

    pub(super) fn entry(&self, i: usize) -> IndexEntry {
        let at = self.entries[i].at as usize;
        let b = &self.buf[at..at + 62];
        let flags = u16::from_be_bytes([b[60], b[61]]);
        let mut e = IndexEntry {
            ctime: (be32(b, 0), be32(b, 4)),
            mtime: (be32(b, 8), be32(b, 12)),
            ino: be32(b, 20),
            mode: be32(b, 24),
            uid: be32(b, 28),
            gid: be32(b, 32),
            size: be32(b, 36),
            flags,
            ext_flags: 0,
            ..IndexEntry::default()
        };
        e.oid.copy_from_slice(&b[40..40 + HASH_LEN]);
        if flags & 0x4000 != 0 {
            e.ext_flags = u16::from_be_bytes([self.buf[at + 62], self.buf[at + 63]]);
        }
        e
    }

    /// Entry `i` as stored (stat data, object name, flags) and its path: equal across two reads of the index exactly
    /// when the entry did not change.
    pub(super) fn entry_raw(&self, i: usize) -> (&[u8], &[u8]) {
        let e = &self.entries[i];
        let at = e.at as usize;
        let fixed = if self.buf[at + 60] & 0x40 != 0 {
            64
        } else {
            62
        };
        (&self.buf[at..at + fixed], self.name_of(e))
    }

    /// The first entry whose path is not below `path` in byte order (the index is sorted that way).
    pub(super) fn lower_bound(&self, path: &[u8]) -> usize {
        self.entries.partition_point(|e| self.name_of(e) < path)
    }

    /// The data of the untracked cache extension (`UNTR`), if the index has one.
    pub(super) fn untracked_data(&self) -> Option<&[u8]> {
        self.untracked.map(|(at, len)| &self.buf[at..at + len])
    }

    /// The stage-0 entry of `path`, if there is one.
    pub(super) fn find(&self, path: &[u8]) -> Option<usize> {
        let mut i = self.lower_bound(path);
        while i < self.len() && self.name(i) == path {
            if self.entry(i).stage() == 0 {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// Whether `path` has an entry, at any stage.
    pub(super) fn has_name(&self, path: &[u8]) -> bool {
        let i = self.lower_bound(path);
        i < self.len() && self.name(i) == path
    }

    /// Whether some entry lies under `dir` (which ends with `/`).
    pub(super) fn has_dir(&self, dir: &[u8]) -> bool {
        let i = self.lower_bound(dir);
        i < self.len() && self.name(i).starts_with(dir)
    }
}

/// git's `decode_varint` (index v4 path prefix lengths).
fn decode_varint(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let mut c = *buf.get(*pos)?;
    *pos += 1;
    let mut val = usize::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1)?;
        c = *buf.get(*pos)?;
        *pos += 1;
        val = val.checked_mul(128)?.checked_add(usize::from(c & 127))?;
    }
    Some(val)
}

pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn is_attributes_file(name: &[u8]) -> bool {
    name == b".gitattributes" || name.ends_with(b"/.gitattributes")
}

/// Parses a version 2, 3 or 4 index with SHA-1 object names. `None` when the buffer is not such an index.
pub(super) fn parse_index(buf: Vec<u8>) -> Option<ParsedIndex> {
    if buf.len() < 12 + HASH_LEN || &buf[..4] != b"DIRC" || u32::try_from(buf.len()).is_err() {
        return None;
    }
    let version = be32(&buf, 4);
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(&buf, 8) as usize;
    let end = buf.len() - HASH_LEN;
    let mut entries = Vec::with_capacity(count.min(end / 62));
    let mut names = Vec::new();
    let mut has_attributes = false;
    let mut pos: usize = 12;
    for _ in 0..count {
        const FIXED: usize = 40 + HASH_LEN + 2; // stat data, object name, flags
        if pos.checked_add(FIXED)? > end {
            return None;
        }
        let flags = u16::from_be_bytes([buf[pos + 60], buf[pos + 61]]);
        let mut p = pos + FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 || p + 2 > end {
                return None;
            }
            p += 2;
        }
        let (name_at, name_len) = if version == 4 {
            let mut q = p;
            let strip = decode_varint(&buf[..end], &mut q)?;
            let nul = buf.get(q..end)?.iter().position(|&c| c == 0)?;
            let (prev_at, prev_len) = entries.last().map_or((0, 0), |l: &EntryAt| {
                (l.name_at as usize, l.name_len as usize)
            });
            let keep = prev_len.checked_sub(strip)?;
            let at = names.len();
            names.extend_from_within(prev_at..prev_at + keep);
            names.extend_from_slice(&buf[q..q + nul]);
            pos = q + nul + 1;
            (at, names.len() - at)
        } else {
            // The flags hold the path's length unless it is 0xfff or more; then the NUL ends it.
            let nul = match usize::from(flags & 0xfff) {
                0xfff => buf.get(p..end)?.iter().position(|&c| c == 0)?,
                n if buf.get(p + n) == Some(&0) => n,
                _ => return None,
            };
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
            pos += (p - pos + nul + 8) & !7;
            (p, nul)
        };
        if pos > end {
            return None;
        }
        let e = EntryAt {
            at: u32::try_from(p - FIXED - if flags & 0x4000 != 0 { 2 } else { 0 }).ok()?,
            name_at: u32::try_from(name_at).ok()?,
            name_len: u32::try_from(name_len).ok()?,
        };
        let name = if version == 4 {
            &names[name_at..name_at + name_len]
        } else {
            &buf[name_at..name_at + name_len]
        };
        has_attributes |= is_attributes_file(name);
        entries.push(e);
    }
    let mut cache_tree = Vec::new();
    let mut unsupported = None;
    let mut untracked = None;
    while pos + 8 <= end {
        let sig = &buf[pos..pos + 4];
        let size = be32(&buf, pos + 4) as usize;
        let data = buf.get(pos + 8..(pos + 8).checked_add(size)?)?;
        if sig == b"TREE" {
            cache_tree = parse_cache_tree(data).unwrap_or_default();
        } else if sig == b"UNTR" {
            untracked = Some((pos + 8, size));
        } else if !sig[0].is_ascii_uppercase() {
            // A required extension.
            unsupported = Some(match sig {
                b"link" => "a split index (core.splitIndex)",
                b"sdir" => "a sparse index (index.sparse)",
                _ => "an index extension it does not know",
            });
        }
        pos += 8 + size;
    }
    Some(ParsedIndex {
        buf,
        entries,
        names,
        v4: version == 4,
        cache_tree,
        unsupported,
        has_attributes,
        untracked,
    })
}

/// The `TREE` extension: nodes in pre-order, each `name "\0" entry_count " " subtrees "\n"` and an object name when
/// `entry_count >= 0` (valid).
fn parse_cache_tree(data: &[u8]) -> Option<Vec<CacheNode>> {
    fn node(
        data: &[u8],
        pos: &mut usize,
        nodes: &mut Vec<CacheNode>,
        depth: usize,
    ) -> Option<usize> {
        if depth > 4096 {
            return None;
        }
        let rest = data.get(*pos..)?;
        let nul = rest.iter().position(|&b| b == 0)?;
        let nl = rest.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(rest.get(nul + 1..nl)?).ok()?;
        let (count, subtrees) = header.split_once(' ')?;
        let (count, subtrees) = (count.parse::<i64>().ok()?, subtrees.parse::<usize>().ok()?);
        let mut at = *pos + nl + 1;
        let oid = if count >= 0 {
            let o: [u8; HASH_LEN] = data.get(at..at + HASH_LEN)?.try_into().ok()?;
            at += HASH_LEN;
            Some(o)
        } else {
            None
        };
        let id = nodes.len();
        nodes.push(CacheNode {
            name: rest[..nul].to_vec(),
            oid,
            children: Vec::new(),
        });
        *pos = at;
        for _ in 0..subtrees {
            let child = node(data, pos, nodes, depth + 1)?;
            nodes[id].children.push(child);
        }
        Some(id)
    }
    let mut nodes = Vec::new();
    let mut pos = 0;
    node(data, &mut pos, &mut nodes, 0)?;
    Some(nodes)
}

/// Why the index file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IndexReadError {
    /// Not a regular file (a directory, a FIFO, a device): git cannot read it either, and running it on a FIFO
    /// would block.
    NotAFile(String),
    /// Any other failure (permissions, I/O): git's own message is the better answer.
    Io(String),
}

/// Reads the index: `Ok(None)` when there is none (a new repository: git reads that as an empty index), the bytes
/// otherwise. Opened without blocking (a FIFO put in its place cannot hang the walk) and checked to be a regular
/// file; a large file is read in two halves on two threads (most of the cost is faulting in fresh pages).
/// Also returns the file's modification time (whole seconds): entries modified since may be racily clean.
pub(super) fn read_index_file(path: &Path) -> Result<Option<(Vec<u8>, u32)>, IndexReadError> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IndexReadError::Io(format!("{}: {e}", path.display()))),
    };
    let meta = file
        .metadata()
        .map_err(|e| IndexReadError::Io(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(IndexReadError::NotAFile(format!(
            "{} is {what}",
            path.display()
        )));
    }
    let len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    #[cfg(unix)]
    let mtime = std::os::unix::fs::MetadataExt::mtime(&meta) as u32;
    #[cfg(not(unix))]
    let mtime = 0;
    let io = |e: std::io::Error| IndexReadError::Io(format!("{}: {e}", path.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        if (1 << 20..1 << 31).contains(&len) {
            let mut buf = vec![0u8; len];
            let half = len / 2;
            let (a, b) = buf.split_at_mut(half);
            let (ra, rb) = thread::scope(|s| {
                let t = s.spawn(|| file.read_exact_at(b, half as u64));
                (file.read_exact_at(a, 0), t.join())
            });
            ra.map_err(io)?;
            rb.unwrap_or_else(|_| Err(std::io::Error::other("reader thread panicked")))
                .map_err(io)?;
            return Ok(Some((buf, mtime)));
        }
    }
    let mut buf = Vec::with_capacity(len);
    std::io::Read::read_to_end(&mut &file, &mut buf).map_err(io)?;
    Ok(Some((buf, mtime)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::native::tracked_dirs;
    use crate::git::test_support::{Fixture, lines};
    use git2::Oid;

    #[test]
    fn garbage_index_is_rejected() {
        assert_eq!(parse_index(Vec::new()), None);
        assert_eq!(
            parse_index(b"DIRC\0\0\0\x09\0\0\0\0xxxxxxxxxxxxxxxxxxxx".to_vec()),
            None
        );
        let mut short = b"DIRC\0\0\0\x02\0\0\0\x05".to_vec();
        short.extend_from_slice(&[0u8; 40]);
        assert_eq!(parse_index(short), None);
        assert_eq!(parse_cache_tree(b"\0-1 999999999\n"), None);
    }

    #[test]
    fn index_version_4() {
        let f = Fixture::repo("main", Some("U"));
        for i in 0..30 {
            f.write(&format!("dir{}/sub/file{i}.txt", i % 4), &format!("{i}\n"));
        }
        f.commit("init");
        f.git(&f.root, &["update-index", "--index-version", "4"]);
        f.write("dir1/sub/file1.txt", "changed\n");
        f.write("dir2/new.txt", "n\n");
        fs::remove_file(f.root.join("dir3/sub/file3.txt")).expect("rm");
        let buf = fs::read(f.root.join(".git/index")).expect("index");
        let idx = parse_index(buf).expect("v4 index parses");
        assert_eq!(idx.entries.len(), 30);
        assert_eq!(idx.name(0), b"dir0/sub/file0.txt");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[
                " M dir1/sub/file1.txt",
                " D dir3/sub/file3.txt",
                "?? dir2/new.txt"
            ])
        );
    }

    #[test]
    fn parsed_index_agrees_with_ls_files() {
        let f = Fixture::repo("main", Some("U"));
        for i in 0..50 {
            f.write(&format!("d{}/e{}/f{i}.txt", i % 5, i % 3), "x\n");
        }
        f.write("top.txt", "t\n");
        f.commit("init");
        let buf = fs::read(f.root.join(".git/index")).expect("index");
        let idx = parse_index(buf).expect("parses");
        let names: Vec<String> = (0..idx.entries.len())
            .map(|i| String::from_utf8_lossy(idx.name(i)).into_owned())
            .collect();
        let ls: Vec<String> = f
            .git(&f.root, &["ls-files"])
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(names, ls);
        let head = f.git(&f.root, &["rev-parse", "HEAD^{tree}"]);
        let root = idx
            .cache_tree
            .first()
            .and_then(|n| n.oid)
            .expect("valid cache-tree root");
        assert_eq!(
            Oid::from_bytes(&root).expect("oid").to_string(),
            head.trim()
        );
        let dirs = tracked_dirs(&idx);
        assert_eq!(dirs.len(), 1 + 5 + 15);
        assert_eq!(dirs.iter().map(|d| d.direct.len()).sum::<usize>(), 51);
        assert!(dirs[0].path.is_empty() && dirs[0].direct.len() == 1);
        assert!(!idx.has_attributes);
    }
}
