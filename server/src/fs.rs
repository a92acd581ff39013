//! The `Fs` seam: the only way the context core touches the file system.
//!
//! Three implementations: [`RealFs`] (the disk, with read caps that make hostile files harmless),
//! [`MemFs`] (an in-memory tree for tests, which keeps insertion order as its "readdir" order),
//! and [`OverlayFs`] (unsaved editor buffers over another `Fs`).

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Files larger than this are never read (a 1 GB CLAUDE.md must not cost a gigabyte).
pub const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

/// What a path is, after following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// FIFOs, sockets, devices: never read (opening a FIFO blocks, `/dev/zero` never ends).
    Special,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub len: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    /// Kind after following symlinks; `None` when the target cannot be stat'ed (dangling link, loop).
    pub kind: Option<Kind>,
}

/// Why a file could not be read as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    NotFound,
    /// A directory, FIFO, socket or device.
    NotAFile(Kind),
    /// Larger than [`MAX_READ_BYTES`].
    TooLarge(u64),
    /// Contains NUL bytes or is not valid UTF-8.
    Binary,
    /// Permission denied, symlink loop, I/O error: the OS's own words.
    Unreadable(String),
}

impl ReadError {
    pub fn from_io(e: &io::Error) -> ReadError {
        match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Unreadable(e.to_string()),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("not found"),
            ReadError::NotAFile(Kind::Dir) => f.write_str("is a directory"),
            ReadError::NotAFile(_) => f.write_str("not a regular file (FIFO, socket or device)"),
            ReadError::TooLarge(n) => write!(
                f,
                "too large to read ({}, the cap is {})",
                human_bytes(*n),
                human_bytes(MAX_READ_BYTES)
            ),
            ReadError::Binary => f.write_str("binary file (not UTF-8 text)"),
            ReadError::Unreadable(e) => write!(f, "unreadable: {e}"),
        }
    }
}

/// `1536` → `1.5 KB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The file system as the context core sees it.
pub trait Fs: Send + Sync {
    /// Follows symlinks.
    fn metadata(&self, path: &Path) -> io::Result<Meta>;
    /// Entries in the order the file system returns them (not sorted).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// At most `limit` bytes of a regular file.
    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>>;

    /// The path with symlinks resolved: a directory's identity, so a walk that follows symlinks
    /// can tell a loop. File systems without symlinks return the path itself.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }

    /// A regular file's text: never blocks on FIFOs, never reads more than [`MAX_READ_BYTES`].
    fn read_text(&self, path: &Path) -> Result<String, ReadError> {
        let meta = self.metadata(path).map_err(|e| ReadError::from_io(&e))?;
        match meta.kind {
            Kind::File => {}
            k => return Err(ReadError::NotAFile(k)),
        }
        if meta.len > MAX_READ_BYTES {
            return Err(ReadError::TooLarge(meta.len));
        }
        let bytes = self
            .read_bytes(path, MAX_READ_BYTES + 1)
            .map_err(|e| ReadError::from_io(&e))?;
        if bytes.len() as u64 > MAX_READ_BYTES {
            // The file grew between stat and read.
            return Err(ReadError::TooLarge(bytes.len() as u64));
        }
        if bytes.contains(&0) {
            return Err(ReadError::Binary);
        }
        String::from_utf8(bytes).map_err(|_| ReadError::Binary)
    }

    fn is_file(&self, path: &Path) -> bool {
        matches!(
            self.metadata(path),
            Ok(Meta {
                kind: Kind::File,
                ..
            })
        )
    }

    fn is_dir(&self, path: &Path) -> bool {
        matches!(
            self.metadata(path),
            Ok(Meta {
                kind: Kind::Dir,
                ..
            })
        )
    }

    fn exists(&self, path: &Path) -> bool {
        self.metadata(path).is_ok()
    }
}

/// The real disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

fn kind_of(ft: std::fs::FileType) -> Kind {
    if ft.is_file() {
        Kind::File
    } else if ft.is_dir() {
        Kind::Dir
    } else {
        Kind::Special
    }
}

impl Fs for RealFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        let m = std::fs::metadata(path)?;
        Ok(Meta {
            kind: kind_of(m.file_type()),
            len: m.len(),
        })
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // Not UTF-8: cannot be named in a glob or an @include anyway.
            };
            let kind = match entry.file_type() {
                Ok(ft) if ft.is_symlink() => std::fs::metadata(entry.path())
                    .ok()
                    .map(|m| kind_of(m.file_type())),
                Ok(ft) => Some(kind_of(ft)),
                Err(_) => None,
            };
            out.push(DirEntry { name, kind });
        }
        Ok(out)
    }

    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(path)?;
        let mut buf = Vec::new();
        file.take(limit).read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
}

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    Dir,
    Special,
}

/// An in-memory tree for tests. Directories list their entries in insertion order, so tests can
/// pin the "readdir order" that the rules walk must follow.
#[derive(Debug, Default)]
pub struct MemFs {
    nodes: RwLock<BTreeMap<PathBuf, Node>>,
    /// Children in insertion order.
    order: RwLock<BTreeMap<PathBuf, Vec<String>>>,
}

impl MemFs {
    pub fn new() -> MemFs {
        let fs = MemFs::default();
        fs.nodes
            .write()
            .expect("poisoned")
            .insert(PathBuf::from("/"), Node::Dir);
        fs
    }

    /// Builds a tree from `(path, text)` pairs, in order.
    pub fn with_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> MemFs {
        let fs = MemFs::new();
        for (p, t) in files {
            fs.write(p, t);
        }
        fs
    }

    fn insert(&self, path: &Path, node: Node) {
        if let Some(parent) = path.parent() {
            if !matches!(
                self.nodes.read().expect("poisoned").get(parent),
                Some(Node::Dir)
            ) {
                self.insert(parent, Node::Dir);
            }
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut order = self.order.write().expect("poisoned");
            let children = order.entry(parent.to_path_buf()).or_default();
            if !children.contains(&name) {
                children.push(name);
            }
        }
        self.nodes
            .write()
            .expect("poisoned")
            .insert(path.to_path_buf(), node);
    }

    pub fn write(&self, path: impl AsRef<Path>, text: impl AsRef<[u8]>) {
        self.insert(path.as_ref(), Node::File(text.as_ref().to_vec()));
    }

    pub fn mkdir(&self, path: impl AsRef<Path>) {
        self.insert(path.as_ref(), Node::Dir);
    }

    /// A FIFO or device stand-in.
    pub fn special(&self, path: impl AsRef<Path>) {
        self.insert(path.as_ref(), Node::Special);
    }

    pub fn remove(&self, path: impl AsRef<Path>) {
        let path = path.as_ref();
        self.nodes.write().expect("poisoned").remove(path);
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
            let name = name.to_string_lossy();
            if let Some(children) = self.order.write().expect("poisoned").get_mut(parent) {
                children.retain(|c| *c != name);
            }
        }
    }
}

impl Fs for MemFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        match self.nodes.read().expect("poisoned").get(path) {
            Some(Node::File(b)) => Ok(Meta {
                kind: Kind::File,
                len: b.len() as u64,
            }),
            Some(Node::Dir) => Ok(Meta {
                kind: Kind::Dir,
                len: 0,
            }),
            Some(Node::Special) => Ok(Meta {
                kind: Kind::Special,
                len: 0,
            }),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        if !matches!(
            self.nodes.read().expect("poisoned").get(path),
            Some(Node::Dir)
        ) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let order = self.order.read().expect("poisoned");
        let names = order.get(path).cloned().unwrap_or_default();
        Ok(names
            .into_iter()
            .map(|name| {
                let kind = self.metadata(&path.join(&name)).ok().map(|m| m.kind);
                DirEntry { name, kind }
            })
            .collect())
    }

    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        match self.nodes.read().expect("poisoned").get(path) {
            Some(Node::File(b)) => Ok(b[..b.len().min(limit as usize)].to_vec()),
            Some(_) => Err(io::Error::other("not a regular file")),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
}

/// Unsaved editor buffers laid over another file system: what the core reads for an open
/// document is the editor's text, not the disk's.
#[derive(Clone)]
pub struct OverlayFs {
    base: Arc<dyn Fs>,
    buffers: Arc<dashmap::DashMap<PathBuf, Arc<str>>>,
}

impl OverlayFs {
    pub fn new(base: Arc<dyn Fs>) -> OverlayFs {
        OverlayFs {
            base,
            buffers: Arc::default(),
        }
    }

    pub fn set(&self, path: PathBuf, text: Arc<str>) {
        self.buffers.insert(path, text);
    }

    pub fn clear(&self, path: &Path) {
        self.buffers.remove(path);
    }

    pub fn buffer(&self, path: &Path) -> Option<Arc<str>> {
        self.buffers.get(path).map(|t| t.value().clone())
    }
}

impl Fs for OverlayFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        match self.buffers.get(path) {
            Some(t) => Ok(Meta {
                kind: Kind::File,
                len: t.len() as u64,
            }),
            None => self.base.metadata(path),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        // A buffer for a file that does not exist on disk yet (a new rule being typed) is listed too.
        let mut entries = self.base.read_dir(path).unwrap_or_default();
        for b in self.buffers.iter() {
            if b.key().parent() == Some(path)
                && let Some(name) = b.key().file_name().and_then(|n| n.to_str())
                && !entries.iter().any(|e| e.name == name)
            {
                entries.push(DirEntry {
                    name: name.to_string(),
                    kind: Some(Kind::File),
                });
            }
        }
        if entries.is_empty() && !self.base.is_dir(path) {
            return self.base.read_dir(path);
        }
        Ok(entries)
    }

    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        match self.buffers.get(path) {
            Some(t) => Ok(t.as_bytes()[..t.len().min(limit as usize)].to_vec()),
            None => self.base.read_bytes(path, limit),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.base.canonicalize(path)
    }
}

/// Lexical normalisation: makes `path` absolute against `base` and folds `.` and `..`
/// without touching the disk (symlinks are kept as the user wrote them, like the reference CLI's paths).
pub fn normalize(base: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots() {
        let base = Path::new("/a/b");
        assert_eq!(normalize(base, Path::new("../c/./d")), Path::new("/a/c/d"));
        assert_eq!(normalize(base, Path::new("/x/../../y")), Path::new("/y"));
        assert_eq!(normalize(base, Path::new("")), Path::new("/a/b"));
    }

    #[test]
    fn memfs_keeps_insertion_order() {
        let fs = MemFs::with_files([("/r/b.md", "b"), ("/r/a.md", "a"), ("/r/c/x.md", "x")]);
        let names: Vec<_> = fs
            .read_dir(Path::new("/r"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["b.md", "a.md", "c"]);
    }

    #[test]
    fn read_text_rejects_binary_and_specials() {
        let fs = MemFs::new();
        fs.write("/bin", b"\x89PNG\r\n\x1a\n\0\0");
        fs.write("/latin1", b"caf\xe9");
        fs.special("/fifo");
        assert_eq!(fs.read_text(Path::new("/bin")), Err(ReadError::Binary));
        assert_eq!(fs.read_text(Path::new("/latin1")), Err(ReadError::Binary));
        assert_eq!(
            fs.read_text(Path::new("/fifo")),
            Err(ReadError::NotAFile(Kind::Special))
        );
        assert_eq!(fs.read_text(Path::new("/none")), Err(ReadError::NotFound));
    }

    #[allow(clippy::disallowed_methods)] // reason: the test makes a FIFO with mkfifo(1).
    #[test]
    fn real_fs_does_not_block_on_a_fifo_or_read_dev_zero() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if matches!(status, Ok(s) if s.success()) {
            assert_eq!(
                RealFs.read_text(&fifo),
                Err(ReadError::NotAFile(Kind::Special))
            );
        }
        assert_eq!(
            RealFs.read_text(Path::new("/dev/zero")),
            Err(ReadError::NotAFile(Kind::Special))
        );
    }

    #[test]
    fn overlay_prefers_buffers() {
        let base = Arc::new(MemFs::with_files([("/p/CLAUDE.md", "disk")]));
        let fs = OverlayFs::new(base);
        fs.set("/p/CLAUDE.md".into(), Arc::from("buffer"));
        fs.set("/p/new.md".into(), Arc::from("new"));
        assert_eq!(fs.read_text(Path::new("/p/CLAUDE.md")).unwrap(), "buffer");
        let names: Vec<_> = fs
            .read_dir(Path::new("/p"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["CLAUDE.md", "new.md"]);
        fs.clear(Path::new("/p/CLAUDE.md"));
        assert_eq!(fs.read_text(Path::new("/p/CLAUDE.md")).unwrap(), "disk");
    }
}
