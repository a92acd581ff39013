//! The `Fs` seam: the only way the context core touches the file system.
//!
//! Three implementations: [`RealFs`] (the disk, with read caps that make hostile files harmless),
//! [`MemFs`] (an in-memory tree for tests, which keeps insertion order as its "readdir" order),
//! and [`OverlayFs`] (unsaved editor buffers over another `Fs`). [`json_path`] writes paths into
//! JSON without losing the ones that are not UTF-8.
//!
//! Invariant: a read never blocks. `RealFs` opens without blocking and judges the opened handle
//! (`fstat`), so a path swapped for a FIFO or a device between a check and the open is refused.

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
    /// The name; for a name that is not valid UTF-8, its lossy form (see `raw`).
    pub name: String,
    /// The exact name when it is not valid UTF-8 (`None` otherwise): only it opens the file.
    /// Claude Code lists names as UTF-8 text, so it cannot open such a file; the walk reports it.
    pub raw: Option<std::ffi::OsString>,
    /// Kind after following symlinks; `None` when the target cannot be stat'ed (dangling link, loop).
    pub kind: Option<Kind>,
    /// The entry itself is a symbolic link (what the listing says, no extra system call).
    pub link: bool,
}

/// Why a file could not be read as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    NotFound,
    /// A directory, FIFO, socket or device.
    NotAFile(Kind),
    /// Larger than [`MAX_READ_BYTES`].
    TooLarge(u64),
    /// Permission denied, symlink loop, I/O error: the OS's own words.
    Unreadable(String),
}

impl ReadError {
    pub fn from_io(e: &io::Error) -> ReadError {
        if let Some(NotRegularFile(kind)) = e.get_ref().and_then(|i| i.downcast_ref()) {
            return ReadError::NotAFile(*kind);
        }
        match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Unreadable(e.to_string()),
        }
    }
}

/// The error [`RealFs::read_bytes`] returns when the handle it opened is not a regular file
/// ([`ReadError::from_io`] turns it back into [`ReadError::NotAFile`]).
#[derive(Debug)]
struct NotRegularFile(Kind);

impl std::fmt::Display for NotRegularFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&ReadError::NotAFile(self.0), f)
    }
}

impl std::error::Error for NotRegularFile {}

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

    /// Is `path` itself a symbolic link (not followed)? `Err(NotFound)` when nothing is there.
    /// File systems without symlinks answer from [`Fs::metadata`].
    fn is_symlink(&self, path: &Path) -> io::Result<bool> {
        self.metadata(path).map(|_| false)
    }

    /// A regular file's text, decoded as UTF-8 with replacement (an invalid sequence becomes
    /// U+FFFD, NUL bytes stay: what Claude Code sends for a file that is not text). Never blocks
    /// on FIFOs, never reads more than [`MAX_READ_BYTES`].
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
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
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

/// The small write side of the file system: what memory extraction needs to save a topic file
/// and the MEMORY.md index. Kept apart from [`Fs`] so the readers of the context core cannot
/// write.
pub trait WriteFs: Send + Sync {
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Replaces `path` with `bytes` in one step: a reader sees the old or the new file, never a
    /// half-written one (a temporary file beside it, synced, then renamed over it).
    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Takes the lock file `path` (made if missing) for this process alone until the guard is
    /// dropped, waiting for another process that holds it: a read-modify-write of a file several
    /// processes share (MEMORY.md) done under it loses no other process's change. The default
    /// (an in-memory file system) locks nothing.
    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let _ = path;
        Ok(FileLock(None))
    }
}

/// A lock taken with [`WriteFs::lock`]; released when dropped (the descriptor closes).
pub struct FileLock(#[allow(dead_code)] Option<std::fs::File>);

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
            let (name, raw) = match entry.file_name().into_string() {
                Ok(name) => (name, None),
                Err(raw) => (raw.to_string_lossy().into_owned(), Some(raw)),
            };
            let (kind, link) = match entry.file_type() {
                Ok(ft) if ft.is_symlink() => (
                    std::fs::metadata(entry.path())
                        .ok()
                        .map(|m| kind_of(m.file_type())),
                    true,
                ),
                Ok(ft) => (Some(kind_of(ft)), false),
                Err(_) => (None, false),
            };
            out.push(DirEntry {
                name,
                raw,
                kind,
                link,
            });
        }
        Ok(out)
    }

    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let file = open_regular(path)?;
        let mut buf = Vec::new();
        file.take(limit).read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn is_symlink(&self, path: &Path) -> io::Result<bool> {
        std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink())
    }
}

impl WriteFs for RealFs {
    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let file = o.open(path)?;
        #[cfg(unix)]
        loop {
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(FileLock(Some(file)))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        // Folders made here are private to the user (0700), as the transcripts' are.
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir)
    }

    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let dir = path
            .parent()
            .ok_or_else(|| io::Error::other("no parent directory"))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let result = (|| {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            // Private to the user, as the transcripts are (memories hold what the user said).
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
            let mut f = o.open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

/// Opens `path` for reading without ever blocking, and keeps it only if the opened handle is a
/// regular file. The type is asked of the handle (`fstat`), not of the path: a `stat` followed
/// by an `open` leaves a window in which the path can be swapped for a FIFO, and opening a FIFO
/// for reading waits for a writer forever. `O_NONBLOCK` makes that open return at once; the
/// handle's type then refuses the FIFO (or device, or socket) before a single byte is read.
/// `O_NOCTTY`: a terminal opened this way never becomes the process's controlling terminal.
/// On a regular file `O_NONBLOCK` changes nothing.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    keep_regular(options.open(path)?)
}

/// `file` when the handle is a regular file (`fstat`), else the error [`open_regular`] gives.
pub fn keep_regular(file: std::fs::File) -> io::Result<std::fs::File> {
    match kind_of(file.metadata()?.file_type()) {
        Kind::File => Ok(file),
        kind => Err(io::Error::other(NotRegularFile(kind))),
    }
}

/// The whole of a regular file, read through [`open_regular`]: a FIFO, socket or device at
/// `path` is an error at once, never a wait. A directory is an error that
/// [`is_directory_error`] recognises.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = open_regular(path)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

/// Watches the names on a path for a change, so that a question about the path answered by
/// someone else (an ACP client reading or writing by path) can be checked afterwards: was every
/// folder on the way, and the file, the same name all along? (Linux: inotify on each folder
/// above the file, counting only events about the next name of the path; a queue that overflowed
/// counts as a change.) Made before the path is checked, asked after the answer: a link swapped
/// in (or out again) in between is always seen.
pub struct PathGuard {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// Each watch, and the name below it that belongs to the path.
    #[cfg(target_os = "linux")]
    names: Vec<(i32, std::ffi::OsString)>,
}

impl PathGuard {
    /// Starts watching the folders of the absolute `path`. `Err` where it cannot (not Linux, no
    /// inotify, a folder that cannot be watched).
    pub fn watch(path: &Path) -> io::Result<PathGuard> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
            let mut names = Vec::new();
            let mut child = path.file_name();
            let mut dir = path.parent();
            while let (Some(d), Some(c)) = (dir, child) {
                let wd = inotify::add_watch(
                    &fd,
                    d,
                    WatchFlags::CREATE
                        | WatchFlags::DELETE
                        | WatchFlags::MOVED_FROM
                        | WatchFlags::MOVED_TO
                        | WatchFlags::DELETE_SELF
                        | WatchFlags::MOVE_SELF
                        | WatchFlags::DONT_FOLLOW
                        | WatchFlags::ONLYDIR,
                )?;
                names.push((wd, c.to_os_string()));
                child = d.file_name();
                dir = d.parent();
            }
            Ok(PathGuard { fd, names })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = path;
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }

    /// Did a name on the path change since [`PathGuard::watch`] (or can that not be known)?
    pub fn changed(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::inotify::{ReadFlags, Reader};
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
            let mut events = Reader::new(&self.fd, &mut buf);
            loop {
                match events.next() {
                    Ok(e) => {
                        if e.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                            return true;
                        }
                        let Some((_, name)) = self.names.iter().find(|(wd, _)| *wd == e.wd())
                        else {
                            continue;
                        };
                        match e.file_name() {
                            // DELETE_SELF, MOVE_SELF: the folder itself.
                            None => return true,
                            Some(n) => {
                                use std::os::unix::ffi::OsStrExt;
                                if n.to_bytes() == name.as_bytes() {
                                    return true;
                                }
                            }
                        }
                    }
                    Err(rustix::io::Errno::AGAIN) => return false,
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return true,
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }
}

/// The longest path the system opens, in bytes (`PATH_MAX`, the terminating NUL included).
#[cfg(unix)]
pub const PATH_LIMIT: usize = libc::PATH_MAX as usize;
#[cfg(not(unix))]
pub const PATH_LIMIT: usize = 32_767;

/// Takes away the group's and others' access to `dir` (a private folder: trust records, approvals),
/// when it has any. Best effort: a folder that cannot be changed is left as it is.
#[cfg(unix)]
pub fn keep_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(dir)
        && m.permissions().mode() & 0o077 != 0
    {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
}

/// [`keep_private`] where folders have no Unix mode: nothing to take away.
#[cfg(not(unix))]
pub fn keep_private(_: &Path) {}

/// Why `path` cannot be a session's folder, in words that end a sentence starting with its
/// name ("is not a directory", "does not exist"), or `None` when it is a folder. A path too
/// long for the system to open says so, with its length and the limit: the system's own answer
/// (`ENAMETOOLONG`) would read as "not a directory".
pub fn folder_problem(path: &Path) -> Option<String> {
    let len = path.as_os_str().len();
    let too_long = || {
        format!(
            "is {} bytes long, longer than the {} bytes a path may have on this system: no \
             program can open it by its path; work in a folder with a shorter path (a link to \
             it, or a shallower copy)",
            crate::context::message::thousands(len as u64),
            crate::context::message::thousands((PATH_LIMIT - 1) as u64)
        )
    };
    if len >= PATH_LIMIT {
        return Some(too_long());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some("is not a directory".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some("does not exist".into()),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => Some(too_long()),
        Err(e) => Some(format!("cannot be read ({e})")),
    }
}

/// Is `e` the error of opening a directory as a file ([`open_regular`], or the OS's own)?
pub fn is_directory_error(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::IsADirectory
        || e.get_ref()
            .and_then(|i| i.downcast_ref::<NotRegularFile>())
            .is_some_and(|n| n.0 == Kind::Dir)
}

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    Dir,
    Special,
    /// A symbolic link; the target as written (relative to the link's folder, or absolute).
    Link(PathBuf),
}

/// Links followed before a path is declared a loop (`ELOOP`), as the kernel does.
const MAX_LINK_HOPS: usize = 40;

/// An in-memory tree for tests. Directories list their entries in insertion order, so tests can
/// pin the "readdir order" that the rules walk must follow.
#[derive(Debug, Default)]
pub struct MemFs {
    nodes: RwLock<BTreeMap<PathBuf, Node>>,
    /// Children in insertion order.
    order: RwLock<BTreeMap<PathBuf, Vec<String>>>,
    /// Some symbolic link was made: paths must be resolved component by component. Without any,
    /// a normalised path is its own real path (one lookup, as fast as before links existed).
    has_links: std::sync::atomic::AtomicBool,
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

impl WriteFs for MemFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut p = PathBuf::new();
        for c in dir.components() {
            p.push(c);
            if !self.nodes.read().expect("poisoned").contains_key(&p) {
                self.mkdir(&p);
            }
        }
        Ok(())
    }

    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        match path.parent() {
            Some(d) if self.is_dir(d) => {
                self.write(path, bytes);
                Ok(())
            }
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
}

impl MemFs {
    /// `path` with every symbolic link resolved (what `realpath` does): `NotFound` when a
    /// component is missing, an `ELOOP`-like error after [`MAX_LINK_HOPS`] links.
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        use std::path::Component;
        let nodes = self.nodes.read().expect("poisoned");
        if !self.has_links.load(std::sync::atomic::Ordering::Relaxed)
            && path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::RootDir))
        {
            return match nodes.get(path) {
                Some(_) => Ok(path.to_path_buf()),
                None => Err(io::Error::from(io::ErrorKind::NotFound)),
            };
        }
        let mut pending: Vec<std::ffi::OsString> = Vec::new();
        for c in path.components().rev() {
            match c {
                Component::Normal(n) => pending.push(n.to_os_string()),
                Component::ParentDir => pending.push("..".into()),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        let mut cur = PathBuf::from("/");
        let mut hops = 0;
        while let Some(name) = pending.pop() {
            if name == ".." {
                cur.pop();
                continue;
            }
            let next = cur.join(&name);
            match nodes.get(&next) {
                Some(Node::Link(target)) => {
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return Err(io::Error::other("too many levels of symbolic links"));
                    }
                    if target.is_absolute() {
                        cur = PathBuf::from("/");
                    }
                    for c in target.components().rev() {
                        match c {
                            Component::Normal(n) => pending.push(n.to_os_string()),
                            Component::ParentDir => pending.push("..".into()),
                            _ => {}
                        }
                    }
                }
                Some(_) => cur = next,
                None => return Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        }
        Ok(cur)
    }

    /// A symbolic link at `path` pointing at `target` (relative to the link's folder, or absolute).
    pub fn symlink(&self, path: impl AsRef<Path>, target: impl AsRef<Path>) {
        self.has_links
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.insert(path.as_ref(), Node::Link(target.as_ref().to_path_buf()));
    }
}

impl Fs for MemFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        let real = self.resolve(path)?;
        match self.nodes.read().expect("poisoned").get(&real) {
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
            Some(Node::Link(_)) | None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let real = self.resolve(path)?;
        if !matches!(
            self.nodes.read().expect("poisoned").get(&real),
            Some(Node::Dir)
        ) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let names = {
            let order = self.order.read().expect("poisoned");
            order.get(&real).cloned().unwrap_or_default()
        };
        Ok(names
            .into_iter()
            .map(|name| {
                let child = real.join(&name);
                let link = matches!(
                    self.nodes.read().expect("poisoned").get(&child),
                    Some(Node::Link(_))
                );
                let kind = self.metadata(&child).ok().map(|m| m.kind);
                DirEntry {
                    name,
                    raw: None,
                    kind,
                    link,
                }
            })
            .collect())
    }

    fn read_bytes(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let real = self.resolve(path)?;
        match self.nodes.read().expect("poisoned").get(&real) {
            Some(Node::File(b)) => Ok(b[..b.len().min(limit as usize)].to_vec()),
            Some(_) => Err(io::Error::other("not a regular file")),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.resolve(path)
    }

    fn is_symlink(&self, path: &Path) -> io::Result<bool> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(false);
        };
        let node = self.resolve(parent)?.join(name);
        match self.nodes.read().expect("poisoned").get(&node) {
            Some(Node::Link(_)) => Ok(true),
            Some(_) => Ok(false),
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
                    raw: None,
                    kind: Some(Kind::File),
                    link: false,
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
        match self.buffers.get(path) {
            // A buffer for a file not on disk yet: its folder decides.
            Some(_) if !self.base.exists(path) => match (path.parent(), path.file_name()) {
                (Some(dir), Some(name)) => Ok(self.base.canonicalize(dir)?.join(name)),
                _ => Ok(path.to_path_buf()),
            },
            _ => self.base.canonicalize(path),
        }
    }

    fn is_symlink(&self, path: &Path) -> io::Result<bool> {
        match self.base.is_symlink(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.buffers.contains_key(path) => {
                Ok(false)
            }
            other => other,
        }
    }
}

/// Paths in JSON, lossless. serde's own `Path` serialiser fails on a path that is not UTF-8,
/// and the whole document fails with it (`preview --json` printed nothing and exited 2). Here a
/// UTF-8 path is written as a plain string, exactly as before; any other path is written as its
/// lossy string (each invalid sequence as U+FFFD, for people and for tools that only read the
/// string) plus a sibling array of its exact bytes, so nothing is lost.
///
/// Each submodule is one key pair, for a field marked
/// `#[serde(flatten, with = "crate::fs::json_path::path")]` and
/// `#[schemars(with = "crate::fs::json_path::path::Schema")]`:
/// [`path`](json_path::path) writes `path` (+ `pathBytes`), [`trigger`](json_path::trigger)
/// `trigger` (+ `triggerBytes`), [`settings`](json_path::settings) `settings` (+ `settingsBytes`),
/// [`target`](json_path::target) `target` (+ `targetBytes`), [`cwd`](json_path::cwd) `cwd` (+
/// `cwdBytes`).
pub mod json_path {
    use std::path::{Path, PathBuf};

    /// The exact bytes of a path (on Unix, what the kernel sees).
    pub fn raw_bytes(path: &Path) -> Vec<u8> {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            path.as_os_str().as_bytes().to_vec()
        }
        #[cfg(not(unix))]
        {
            path.to_string_lossy().into_owned().into_bytes()
        }
    }

    /// The path whose exact bytes are `bytes` (the inverse of [`raw_bytes`]).
    pub fn from_raw_bytes(bytes: Vec<u8>) -> PathBuf {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            PathBuf::from(std::ffi::OsString::from_vec(bytes))
        }
        #[cfg(not(unix))]
        {
            PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
        }
    }

    macro_rules! key_pair {
        ($module:ident, $key:tt, $bytes_key:tt, $doc:tt) => {
            #[doc = concat!("`", $key, "`, plus `", $bytes_key, "` when the path is not UTF-8.")]
            pub mod $module {
                use std::path::{Path, PathBuf};

                use serde::ser::SerializeMap;
                use serde::{Deserialize, Deserializer, Serializer};

                pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
                    let mut map = s.serialize_map(None)?;
                    match path.to_str() {
                        Some(text) => map.serialize_entry($key, text)?,
                        None => {
                            map.serialize_entry($key, &path.to_string_lossy())?;
                            map.serialize_entry($bytes_key, &super::raw_bytes(path))?;
                        }
                    }
                    map.end()
                }

                pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
                    let Schema { text, bytes } = Schema::deserialize(d)?;
                    Ok(if bytes.is_empty() {
                        PathBuf::from(text)
                    } else {
                        super::from_raw_bytes(bytes)
                    })
                }

                // The JSON shape: the schema, and what `deserialize` reads back. (A plain
                // comment: a doc comment would become the description of every struct that
                // flattens it.)
                #[derive(Deserialize, schemars::JsonSchema)]
                pub struct Schema {
                    #[doc = $doc]
                    #[serde(rename = $key)]
                    pub text: String,
                    /// Only when the path is not valid UTF-8: its exact bytes (absent otherwise).
                    #[serde(rename = $bytes_key, default)]
                    pub bytes: Vec<u8>,
                }
            }
        };
    }

    key_pair!(
        path,
        "path",
        "pathBytes",
        "The absolute path; when it is not valid UTF-8, with U+FFFD for each invalid sequence \
         and the exact bytes in `pathBytes`."
    );
    key_pair!(
        trigger,
        "trigger",
        "triggerBytes",
        "The touched file that caused it; when its path is not valid UTF-8, with U+FFFD for \
         each invalid sequence and the exact bytes in `triggerBytes`."
    );
    key_pair!(
        settings,
        "settings",
        "settingsBytes",
        "The settings file that holds it; when its path is not valid UTF-8, with U+FFFD for \
         each invalid sequence and the exact bytes in `settingsBytes`."
    );
    key_pair!(
        by,
        "by",
        "byBytes",
        "The file of the skill that hides it; when its path is not valid UTF-8, with U+FFFD for \
         each invalid sequence and the exact bytes in `byBytes`."
    );
    key_pair!(
        target,
        "target",
        "targetBytes",
        "Where the link really leads; when its path is not valid UTF-8, with U+FFFD for each \
         invalid sequence and the exact bytes in `targetBytes`."
    );
    key_pair!(
        folder,
        "folder",
        "folderBytes",
        "The folder whose trust this is (its real path); when it is not valid UTF-8, with \
         U+FFFD for each invalid sequence and the exact bytes in `folderBytes`."
    );
    key_pair!(
        cwd,
        "cwd",
        "cwdBytes",
        "The session's working directory; when its path is not valid UTF-8, with U+FFFD for \
         each invalid sequence and the exact bytes in `cwdBytes`."
    );
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

    #[cfg(unix)]
    #[test]
    fn files_and_folders_written_for_memory_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mem = dir.path().join("a/memory");
        RealFs.create_dir_all(&mem).unwrap();
        RealFs
            .replace(&mem.join("MEMORY.md"), b"- [x](x.md)\n")
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&mem.join("MEMORY.md")), 0o600);
        assert_eq!(mode(&mem), 0o700);
    }

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
    fn read_text_decodes_lossily_and_rejects_specials() {
        let fs = MemFs::new();
        fs.write("/bin", b"\x89PNG\r\n\x1a\n\0\0");
        fs.write("/latin1", b"caf\xe9");
        fs.write("/utf16", b"\xff\xfeA\x00");
        fs.special("/fifo");
        // Claude Code reads every file as UTF-8 with replacement; NUL bytes stay.
        assert_eq!(
            fs.read_text(Path::new("/bin")).unwrap(),
            "\u{FFFD}PNG\r\n\x1a\n\0\0"
        );
        assert_eq!(fs.read_text(Path::new("/latin1")).unwrap(), "caf\u{FFFD}");
        assert_eq!(
            fs.read_text(Path::new("/utf16")).unwrap(),
            "\u{FFFD}\u{FFFD}A\0"
        );
        assert_eq!(
            fs.read_text(Path::new("/fifo")),
            Err(ReadError::NotAFile(Kind::Special))
        );
        assert_eq!(fs.read_text(Path::new("/none")), Err(ReadError::NotFound));
    }

    #[allow(clippy::disallowed_methods)] // reason: the test makes a FIFO with mkfifo(1).
    #[test]
    fn memfs_follows_symlinks_like_the_disk() {
        let fs = MemFs::with_files([("/r/docs/t.md", "T"), ("/r/CLAUDE.md", "C")]);
        fs.symlink("/r/docs/alias.md", "t.md");
        fs.symlink("/r/link", "docs");
        fs.symlink("/r/abs", "/r/docs/t.md");
        fs.symlink("/r/loop", "loop");
        fs.symlink("/r/gone.md", "missing.md");
        fs.symlink("/r/docs/up", "..");
        for (link, real) in [
            ("/r/docs/alias.md", "/r/docs/t.md"),
            ("/r/link/alias.md", "/r/docs/t.md"),
            ("/r/abs", "/r/docs/t.md"),
            ("/r/docs/up/link/t.md", "/r/docs/t.md"),
        ] {
            assert_eq!(fs.canonicalize(Path::new(link)).unwrap(), Path::new(real));
            assert_eq!(fs.read_text(Path::new(link)).unwrap(), "T");
        }
        assert!(fs.canonicalize(Path::new("/r/loop")).is_err());
        assert_eq!(
            fs.read_text(Path::new("/r/gone.md")),
            Err(ReadError::NotFound)
        );
        assert!(fs.is_symlink(Path::new("/r/link")).unwrap());
        assert!(!fs.is_symlink(Path::new("/r/link/t.md")).unwrap());
        assert!(fs.is_symlink(Path::new("/r/none")).is_err());
        let entries = fs.read_dir(Path::new("/r/link")).unwrap();
        let alias = entries.iter().find(|e| e.name == "alias.md").unwrap();
        assert!(alias.link && alias.kind == Some(Kind::File));
        let up = entries.iter().find(|e| e.name == "up").unwrap();
        assert!(up.link && up.kind == Some(Kind::Dir));
    }

    #[test]
    fn real_fs_does_not_block_on_a_fifo_or_read_dev_zero() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        #[allow(clippy::disallowed_methods)] // reason: a test makes a FIFO with mkfifo(1).
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

    /// The open itself refuses a FIFO, with no `stat` before it: a path swapped between
    /// `read_text`'s check and the open must not block (it blocked in `openat` before).
    #[cfg(unix)]
    #[test]
    fn real_fs_open_never_blocks_and_judges_the_handle() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        #[allow(clippy::disallowed_methods)] // reason: a test makes a FIFO with mkfifo(1).
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !matches!(status, Ok(s) if s.success()) {
            eprintln!("mkfifo failed: test skipped");
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(RealFs.read_bytes(&path, MAX_READ_BYTES));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("read_bytes blocked on a FIFO");
        let err = got.expect_err("a FIFO is not read");
        assert_eq!(ReadError::from_io(&err), ReadError::NotAFile(Kind::Special));
        let dev = RealFs
            .read_bytes(Path::new("/dev/zero"), 16)
            .expect_err("a device is not read");
        assert_eq!(ReadError::from_io(&dev), ReadError::NotAFile(Kind::Special));
        let d = RealFs.read_bytes(dir.path(), 16).expect_err("a directory");
        assert!(matches!(
            ReadError::from_io(&d),
            ReadError::NotAFile(Kind::Dir) | ReadError::Unreadable(_)
        ));
        std::fs::write(dir.path().join("f"), "text").unwrap();
        assert_eq!(
            RealFs.read_bytes(&dir.path().join("f"), 16).unwrap(),
            b"text"
        );
    }

    #[cfg(unix)]
    #[test]
    fn json_paths_keep_non_utf8_bytes() {
        use std::os::unix::ffi::OsStrExt;
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Rec {
            #[serde(flatten, with = "json_path::path")]
            path: PathBuf,
            n: u32,
        }
        let plain = Rec {
            path: PathBuf::from("/p/CLAUDE.md"),
            n: 1,
        };
        let text = serde_json::to_string(&plain).unwrap();
        assert_eq!(text, r#"{"path":"/p/CLAUDE.md","n":1}"#);
        assert_eq!(serde_json::from_str::<Rec>(&text).unwrap(), plain);

        let raw = PathBuf::from(std::ffi::OsStr::from_bytes(b"/p/caf\xe9.md"));
        let odd = Rec { path: raw, n: 2 };
        let text = serde_json::to_string(&odd).unwrap();
        assert_eq!(
            text,
            "{\"path\":\"/p/caf\u{fffd}.md\",\"pathBytes\":[47,112,47,99,97,102,233,46,109,100],\"n\":2}"
        );
        assert_eq!(serde_json::from_str::<Rec>(&text).unwrap(), odd);
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_path_guard_sees_a_name_of_the_path_change_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        let f = root.join("a/b/f.txt");
        let g = PathGuard::watch(&f).unwrap();
        // Other names in the same folders, and the file's content: not the path.
        std::fs::write(root.join("a/other.txt"), "y").unwrap();
        std::fs::write(root.join("a/b/g.txt"), "y").unwrap();
        std::fs::write(&f, "changed").unwrap();
        assert!(!g.changed());
        // A folder of the path swapped for a link and back: seen, though all looks the same.
        std::fs::rename(root.join("a/b"), root.join("a/b.real")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b.real"), root.join("a/b")).unwrap();
        std::fs::remove_file(root.join("a/b")).unwrap();
        std::fs::rename(root.join("a/b.real"), root.join("a/b")).unwrap();
        assert!(g.changed());
        // The file itself replaced.
        let g = PathGuard::watch(&f).unwrap();
        std::fs::write(root.join("a/b/new"), "z").unwrap();
        std::fs::rename(root.join("a/b/new"), &f).unwrap();
        assert!(g.changed());
    }
}
