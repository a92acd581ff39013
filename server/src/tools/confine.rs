//! Opening and replacing files by the real path the tools judged, so that a race cannot change
//! which file that is.
//!
//! `paths::resolve` finds a path's real form (every link resolved) and judges it; between that
//! and the open, another process can swap a folder or file of the path for a symbolic link to
//! somewhere else. So nothing here opens a path by its name from `/`: a file is opened relative
//! to a directory handle of the workspace folder (or allowed directory) holding it, and no
//! symbolic link is followed on the way (the real path has none, so meeting one means the path
//! changed): `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it
//! (Linux 5.6), else a walk one component at a time with `O_NOFOLLOW`. A race gives an error,
//! never a file outside. A path outside every folder (one the user allowed) is opened from `/`
//! the same way: exactly the path that was approved, or nothing.
//!
//! Reads open with `O_NONBLOCK | O_NOCTTY` and keep the handle only when it is a regular file
//! (`fstat`), so a file swapped for a FIFO is refused instead of blocking in `open`, and only
//! when it has no other name: a hard link is the same file as another name that may be outside
//! the workspace (`~/.ssh/id_rsa` linked in), so it is refused as a write through it is.
//!
//! Writes ([`replace`]) create the missing folders one at a time under the folder's handle
//! (`mkdirat`, then opened without following links), write a temporary file in the target's
//! folder through that folder's handle, fsync it, and rename it over the name (`renameat`),
//! then fsync the folder. A file is always replaced, never written in place: an existing hard
//! link (whose other name may be outside the workspace) keeps its old content.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::paths::Workspace;

#[cfg(target_os = "linux")]
/// Set once `openat2` answered that the kernel (or a sandbox) does not have it.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The error for a path that changed while it was opened.
fn raced(e: rustix::io::Errno) -> io::Error {
    match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::XDEV | rustix::io::Errno::NOTDIR => {
            io::Error::other(
                "the path changed while it was being opened (a symbolic link appeared in it); \
                 it was not followed",
            )
        }
        e => io::Error::from(e),
    }
}

/// The folder holding `real` (the longest workspace folder or allowed directory that is a
/// prefix; `/` for an approved path outside them) and the names below it.
fn base_of<'a>(ws: &'a Workspace, real: &'a Path) -> io::Result<(&'a Path, Vec<&'a OsStr>)> {
    let base = ws
        .roots()
        .iter()
        .chain(ws.allowed())
        .filter(|b| real.starts_with(b))
        .max_by_key(|b| b.components().count())
        .map_or(Path::new("/"), |b| b.as_path());
    let below = real
        .strip_prefix(base)
        .map_err(|_| io::Error::other("the path is not absolute"))?;
    let mut rest = Vec::new();
    for c in below.components() {
        match c {
            Component::Normal(n) => rest.push(n),
            _ => {
                return Err(io::Error::other(
                    "the path is not in its real form (a `.` or `..` in it)",
                ));
            }
        }
    }
    Ok((base, rest))
}

/// Opens a workspace folder (or `/`) as a directory handle; the folder itself must not be a link.
fn open_base(base: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(raced)
}

/// Opens `rest` below the handle `dir` with `flags`, following no link.
fn open_below(dir: &OwnedFd, rest: &[&OsStr], flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    if rest.is_empty() {
        return rustix::fs::openat(dir, ".", flags, mode).map_err(raced);
    }
    #[cfg(target_os = "linux")]
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        use rustix::fs::ResolveFlags;
        let rel: std::path::PathBuf = rest.iter().collect();
        match rustix::fs::openat2(
            dir,
            &rel,
            flags,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            // A rename elsewhere on the system made the kernel unsure: try again by the walk.
            Err(rustix::io::Errno::AGAIN) => {}
            Err(rustix::io::Errno::NOSYS) | Err(rustix::io::Errno::PERM) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            other => return other.map_err(raced),
        }
    }
    let (last, folders) = rest.split_last().expect("not empty");
    let mut held: Option<OwnedFd> = None;
    for name in folders {
        let at = held.as_ref().unwrap_or(dir);
        let next = rustix::fs::openat(
            at,
            *name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(raced)?;
        held = Some(next);
    }
    rustix::fs::openat(held.as_ref().unwrap_or(dir), *last, flags, mode).map_err(raced)
}

/// Opens the real path `real` for reading: confined as the module says, without blocking, and
/// only a regular file (a FIFO, socket, device or directory is an error `fs::ReadError`
/// understands).
pub(crate) fn open_read(ws: &Workspace, real: &Path) -> io::Result<File> {
    let (base, rest) = base_of(ws, real)?;
    let dir = open_base(base)?;
    let fd = open_below(
        &dir,
        &rest,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let file = crate::fs::keep_regular(File::from(fd))?;
    // A file with other names (hard links) may be one outside the workspace under another
    // name (a planted link to `~/.ssh/id_rsa`): not read, as it is never written through.
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let links = file.metadata()?.nlink();
        if links > 1 {
            return Err(io::Error::other(format!(
                "it has {} other name{} (hard links), one of which may be outside the workspace; \
                 it was not read",
                links - 1,
                if links == 2 { "" } else { "s" }
            )));
        }
    }
    Ok(file)
}

/// The handle of the real folder `real`, creating what is missing of it (one folder at a time,
/// each opened without following links after it is made).
fn open_dir_creating(ws: &Workspace, real: &Path) -> io::Result<OwnedFd> {
    let (base, rest) = base_of(ws, real)?;
    let mut dir = open_base(base)?;
    for name in rest {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
            Ok(d) => d,
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(raced)?
            }
            Err(e) => return Err(raced(e)),
        };
    }
    Ok(dir)
}

/// Replaces the real path `real` with `bytes` (see the module doc): a reader sees the old file
/// or the new one; the old file's permissions are kept; missing folders are made.
pub(crate) fn replace(ws: &Workspace, real: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = real
        .parent()
        .ok_or_else(|| io::Error::other("the path has no parent folder"))?;
    let name = real
        .file_name()
        .ok_or_else(|| io::Error::other("the path has no file name"))?;
    let dir = open_dir_creating(ws, parent)?;
    let mode = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
            if kind == rustix::fs::FileType::Symlink {
                return Err(raced(rustix::io::Errno::LOOP));
            }
            if kind != rustix::fs::FileType::RegularFile {
                return Err(io::Error::other("not a regular file"));
            }
            Some(Mode::from_raw_mode(st.st_mode as _) & Mode::from_raw_mode(0o7777))
        }
        Err(rustix::io::Errno::NOENT) => None,
        Err(e) => return Err(e.into()),
    };
    let tmp = format!(".claude-context-{:016x}.tmp", fastrand::u64(..));
    // New files get 0666 less the umask, as any editor would create them.
    let fd = rustix::fs::openat(
        &dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    let result = (|| {
        let mut f = File::from(fd);
        f.write_all(bytes)?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&f, mode)?;
        }
        f.sync_all()?;
        drop(f);
        rustix::fs::renameat(&dir, tmp.as_str(), &dir, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
        return result;
    }
    // The new name must survive a crash too.
    let _ = rustix::fs::fsync(&dir);
    Ok(())
}
