//! The local socket between a one-shot command (`claude-context preview`, `check`) and a running
//! server (`lsp`, `acp`) for the same workspace: the transport only (where the socket lives, who
//! may connect, the framing); what is asked and answered is [`crate::features::warm`]'s.
//!
//! **Where.** One Unix socket per workspace folder, `ws-<hash>.sock`, in a folder only the user
//! can open: `$XDG_RUNTIME_DIR/claude-context/` (a per-user tmpfs on systemd machines), else
//! `<state dir>/run/` (`~/.local/state/claude-context/run/`). The folder is created 0700 and
//! checked every time it is used: a real directory (not a link), owned by the user, with no
//! permission for group or others; otherwise nothing is served or asked. The hash is of the
//! folder's real path, so a client finds the server of any folder holding its `--cwd` by hashing
//! each ancestor in turn. A path longer than a socket address can hold (108 bytes on Linux) is
//! not used.
//!
//! **Who.** Both ends check the peer's credentials (`SO_PEERCRED`): the server answers only
//! its own user, the client believes only a server of its own user. One server per folder: the
//! server holds an exclusive lock (`flock`) on `ws-<hash>.lock` for as long as it serves; a
//! second server for the same folder does not serve it, and a dead server's socket (its lock
//! released by the kernel) is replaced by the next server's.
//!
//! **Framing.** A request and its answer are each a 4-byte big-endian length and that many bytes
//! of JSON; one request per connection. A request is at most [`MAX_REQUEST`] bytes and must
//! arrive within [`READ_LIMIT`]; an answer is at most [`MAX_ANSWER`] bytes. Anything else closes
//! the connection: the client then computes the answer itself (cold), which is always right.

use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest request a server reads (the client's environment is most of it).
pub const MAX_REQUEST: usize = 1 << 20;
/// The largest answer a client reads.
pub const MAX_ANSWER: usize = 64 << 20;
/// How long a server waits for a connected client's request.
pub const READ_LIMIT: Duration = Duration::from_secs(2);
/// The longest socket path (`sun_path` holds 108 bytes with its NUL on Linux, 104 on macOS).
const MAX_SOCKET_PATH: usize = if cfg!(target_os = "linux") { 107 } else { 103 };

/// The folder of the sockets, from `XDG_RUNTIME_DIR` (when absolute) or the state folder.
pub fn socket_dir(runtime_dir: Option<&str>, state_dir: Option<&Path>) -> Option<PathBuf> {
    match runtime_dir.map(Path::new) {
        Some(d) if d.is_absolute() => Some(d.join("claude-context")),
        _ => state_dir.map(|s| s.join("run")),
    }
}

/// The user id of this process.
pub fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Makes sure `dir` exists and only its owner, this user, can open it; `create` makes it (0700)
/// when missing. `Err` says why it cannot be used.
pub fn private_dir(dir: &Path, create: bool) -> Result<(), String> {
    if create && fs::symlink_metadata(dir).is_err() {
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    let md = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !md.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if md.uid() != my_uid() {
        return Err(format!("{} belongs to another user", dir.display()));
    }
    if md.mode() & 0o077 != 0 {
        if !create {
            return Err(format!("{} is open to other users", dir.display()));
        }
        // Ours, with the wrong mode (made by hand, or an old umask): closed now.
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// The socket of the workspace folder whose real path is `folder`, and its lock file.
pub fn socket_paths(dir: &Path, folder: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut h = sha1_smol::Sha1::new();
    h.update(folder.as_os_str().as_encoded_bytes());
    let hex = h.digest().to_string();
    let sock = dir.join(format!("ws-{}.sock", &hex[..20]));
    let lock = dir.join(format!("ws-{}.lock", &hex[..20]));
    (sock.as_os_str().len() <= MAX_SOCKET_PATH).then_some((sock, lock))
}

/// The peer of `s` is this user.
fn same_user(s: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(s.as_fd()).is_ok_and(|c| c.uid.as_raw() == my_uid())
}

/// A bound socket for one folder: the lock that makes this process its only server, the
/// listener, and the path to remove at the end.
pub struct Bound {
    pub listener: UnixListener,
    pub path: PathBuf,
    _lock: OwnedFd,
}

impl Drop for Bound {
    fn drop(&mut self) {
        // The lock is still held here: no other server has bound this path.
        let _ = fs::remove_file(&self.path);
    }
}

/// Binds the socket of `folder` (a real path) in `dir`. `Ok(None)`: another live server holds
/// this folder. `Err`: why not (the folder of sockets unusable, a path too long, IO).
pub fn bind(dir: &Path, folder: &Path) -> Result<Option<Bound>, String> {
    private_dir(dir, true)?;
    let (sock, lock) = socket_paths(dir, folder)
        .ok_or_else(|| format!("the socket path under {} would be too long", dir.display()))?;
    let fd = rustix::fs::open(
        &lock,
        rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::RDWR
            | rustix::fs::OFlags::CLOEXEC
            | rustix::fs::OFlags::NOFOLLOW,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .map_err(|e| format!("{}: {}", lock.display(), io::Error::from(e)))?;
    match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        Err(e) => return Err(format!("{}: {}", lock.display(), io::Error::from(e))),
    }
    // Whatever is at the path belongs to a server that is gone (it held the lock).
    let _ = fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    let _ = fs::set_permissions(&sock, fs::Permissions::from_mode(0o600));
    Ok(Some(Bound {
        listener,
        path: sock,
        _lock: fd,
    }))
}

fn read_frame(s: &mut UnixStream, max: usize) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(io::Error::other(format!(
            "a frame of {len} bytes (at most {max})"
        )));
    }
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf)?;
    Ok(buf)
}

fn write_frame(s: &mut UnixStream, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| io::Error::other("frame too large"))?;
    s.write_all(&len.to_be_bytes())?;
    s.write_all(body)?;
    s.flush()
}

/// Serves one accepted connection: checks the peer, reads its request (within [`READ_LIMIT`]),
/// writes what `answer` makes of it. A peer of another user, or a malformed or late request, is
/// dropped unanswered.
pub fn serve_one(mut s: UnixStream, answer: impl FnOnce(&[u8]) -> Vec<u8>) -> Result<(), String> {
    if !same_user(&s) {
        return Err("a peer of another user".into());
    }
    s.set_read_timeout(Some(READ_LIMIT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let req = read_frame(&mut s, MAX_REQUEST).map_err(|e| format!("request: {e}"))?;
    let out = answer(&req);
    write_frame(&mut s, &out).map_err(|e| format!("answer: {e}"))
}

/// The sockets a client in `cwd` (a real path) may ask, innermost folder first: one per ancestor
/// that has one.
pub fn candidates(dir: &Path, cwd: &Path) -> Vec<PathBuf> {
    if private_dir(dir, false).is_err() {
        return Vec::new();
    }
    cwd.ancestors()
        .filter_map(|a| socket_paths(dir, a))
        .map(|(sock, _)| sock)
        .filter(|sock| {
            fs::symlink_metadata(sock).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_socket() && m.uid() == my_uid()
            })
        })
        .collect()
}

/// Sends `request` to the server at `sock` and returns its answer, within `deadline`. `None` on
/// anything unexpected (no server, another user's, too slow, too large, cut short).
pub fn ask(sock: &Path, request: &[u8], deadline: Instant) -> Option<Vec<u8>> {
    let mut s = UnixStream::connect(sock).ok()?;
    if !same_user(&s) {
        return None;
    }
    let left = deadline.checked_duration_since(Instant::now())?;
    s.set_write_timeout(Some(left)).ok()?;
    write_frame(&mut s, request).ok()?;
    let left = deadline.checked_duration_since(Instant::now())?;
    s.set_read_timeout(Some(left)).ok()?;
    read_frame(&mut s, MAX_ANSWER).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_open_to_others_or_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        private_dir(&dir, true).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(private_dir(&dir, false).is_err(), "open to others");
        private_dir(&dir, true).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700,
            "closed again by its owner"
        );
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(private_dir(&link, false).is_err(), "a link");
        assert!(private_dir(&link, true).is_err(), "a link, even to create");
    }

    #[test]
    fn one_server_per_folder_and_a_dead_ones_socket_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let folder = tmp.path().join("ws");
        let first = bind(&dir, &folder).unwrap().expect("bound");
        assert!(bind(&dir, &folder).unwrap().is_none(), "the lock is held");
        assert_eq!(
            candidates(&dir, &folder.join("a/b")),
            vec![first.path.clone()]
        );
        let path = first.path.clone();
        let answered = std::thread::scope(|s| {
            let t = s.spawn(|| {
                let (conn, _) = first.listener.accept().unwrap();
                serve_one(conn, |req| [b"echo:", req].concat())
            });
            let a = ask(&path, b"hi", Instant::now() + Duration::from_secs(5));
            t.join().unwrap().unwrap();
            a
        });
        assert_eq!(answered.as_deref(), Some(&b"echo:hi"[..]));
        drop(first);
        assert!(candidates(&dir, &folder).is_empty(), "removed at the end");
        // A socket left behind by a process that died (no lock held): the next server takes it.
        let stale = UnixListener::bind(&path).unwrap();
        drop(stale);
        assert!(ask(&path, b"x", Instant::now() + Duration::from_secs(1)).is_none());
        assert!(bind(&dir, &folder).unwrap().is_some());
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // reason: the other user is a real process.
    fn a_peer_of_another_user_gets_no_answer() {
        use std::os::unix::process::CommandExt;
        if my_uid() != 0 {
            eprintln!("skipped: running a peer as another user needs root");
            return;
        }
        // A socket another user can reach (the folder is open here on purpose: the server's own
        // check is what is tested).
        let tmp = tempfile::tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let sock = tmp.path().join("s.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        fs::set_permissions(&sock, fs::Permissions::from_mode(0o777)).unwrap();
        // What it reads back, 0 bytes when the server hangs up first.
        let script = "import socket,sys\n\
            s=socket.socket(socket.AF_UNIX)\n\
            s.connect(sys.argv[1])\n\
            try:\n  s.sendall(b'\\0\\0\\0\\2hi'); print(len(s.recv(100)))\n\
            except OSError: print(0)";
        // The system's python (a user's shims are out of another user's reach).
        if !Path::new("/usr/bin/python3").exists() {
            eprintln!("skipped: no /usr/bin/python3 to play the other user");
            return;
        }
        let child = std::thread::scope(|s| {
            let served = s.spawn(|| {
                let (conn, _) = listener.accept().unwrap();
                serve_one(conn, |_| b"secret".to_vec())
            });
            let out = std::process::Command::new("/usr/bin/python3")
                .args(["-c", script])
                .arg(&sock)
                .uid(65534)
                .gid(65534)
                .output()
                .unwrap();
            let r = served.join().unwrap();
            assert!(r.is_err(), "served another user: {r:?}");
            out
        });
        assert_eq!(
            String::from_utf8_lossy(&child.stdout).trim(),
            "0",
            "{child:?}"
        );
    }

    #[test]
    fn a_socket_path_too_long_is_not_used() {
        let dir = PathBuf::from(format!("/tmp/{}", "x".repeat(120)));
        assert!(socket_paths(&dir, Path::new("/ws")).is_none());
        assert!(bind(&dir, Path::new("/ws")).is_err());
    }
}
