//! The binary as the reaper of the commands it runs (`claude-context __reap …`, Linux): a tiny
//! process between the server and a shell, so that nothing a Bash command or a hook starts
//! outlives it. A process-level concern of the host, like [`super::isolate_secrets`]: `main`
//! dispatches to [`reap_main`] before anything else runs and names the program with
//! [`use_reaper`]; the Bash tool's command builder (`tools/bash.rs`) puts [`program`] in front
//! of each command line.

use std::path::PathBuf;

/// Set by the binary's `main` (`use_reaper`): the program that can run `__reap`.
static REAPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes every Bash command from now on run under `program __reap` (the binary itself): called
/// by `main`, never by tests of the library (whose executable is a test harness).
pub fn use_reaper(program: PathBuf) {
    let _ = REAPER.set(program);
}

/// The program that runs `__reap`, when `main` named one ([`use_reaper`]).
pub fn program() -> Option<PathBuf> {
    REAPER.get().cloned()
}

/// The hidden subcommand that runs a command under the reaper: `<binary> __reap <shell> -c <cmd>`.
pub const REAP_ARG: &str = "__reap";

/// After [`REAP_ARG`]: the command reads a standard input, which comes first on the reaper's
/// control pipe as a frame (its length, 8 bytes little-endian, then the bytes).
pub const REAP_INPUT_ARG: &str = "--input";

/// The most bytes a command's standard input may have under the reaper (a hook's JSON input).
pub const MAX_INPUT_BYTES: usize = 32 << 20;

/// The reaper's option before the shell, inside the sandbox with a network: `__reap --proxy
/// <socket> <shell> -c <cmd>`.
pub const PROXY_ARG: &str = "--proxy";

/// `claude-context __reap [--input] [--proxy <socket>] <shell> -c <command>`: a tiny process
/// between the server and the shell, so that everything a command starts is ended with it
/// (Linux). It makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process that leaves
/// the command's process group (`setsid`, a daemonising double fork) and loses its parent is
/// re-parented to the reaper instead of to init, so it stays findable. It runs the shell (standard input `/dev/null`,
/// output where the reaper's goes), reaps whatever ends, and kills every child it has (SIGKILL,
/// again for each generation re-parented to it) 100 ms after the shell ended, or as soon as its
/// own standard input (the server's control pipe) closes: the call ended, timed out or was
/// cancelled, or the server is gone. It exits when it has no child left, with the shell's
/// status (128 + the signal for a shell killed by one). With `--input`, the shell's standard
/// input is the frame that comes first on the control pipe (then closed), not `/dev/null`.
///
/// With `--proxy <socket>` (in the sandbox, when hosts are allowed) it also listens on the
/// sandbox's loopback and carries each connection to the proxy's Unix socket (`sandbox/proxy.rs`),
/// and points the shell's `HTTP_PROXY`, `HTTPS_PROXY` (and their lower-case forms, `ALL_PROXY`)
/// at it.
pub fn reap_main(args: &[std::ffi::OsString]) -> i32 {
    #[cfg(target_os = "linux")]
    {
        linux::main(args)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = args;
        eprintln!("claude-context: __reap is for Linux");
        127
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use rustix::process::{Pid, Signal, WaitOptions};

    /// How long what the shell left running may go on writing output after it ended.
    const LINGER: Duration = Duration::from_millis(100);

    pub(super) fn main(args: &[std::ffi::OsString]) -> i32 {
        let mut with_input = false;
        let mut proxy = None;
        let mut args = args;
        loop {
            match args {
                [flag, rest @ ..] if flag == super::REAP_INPUT_ARG => {
                    with_input = true;
                    args = rest;
                }
                [flag, socket, rest @ ..] if flag == super::PROXY_ARG => {
                    proxy = Some(std::path::PathBuf::from(socket));
                    args = rest;
                }
                _ => break,
            }
        }
        let Some((shell, rest)) = args.split_first() else {
            eprintln!("claude-context: __reap needs a program to run");
            return 127;
        };
        if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
            eprintln!("claude-context: cannot become a subreaper: {e}");
        }
        #[allow(clippy::disallowed_methods)]
        // reason: the Bash tool's shell, under its reaper (clippy.toml).
        let mut cmd = std::process::Command::new(shell);
        cmd.args(rest).stdin(if with_input {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
        if let Some(socket) = proxy {
            match bridge(socket) {
                Ok(port) => {
                    let url = format!("http://127.0.0.1:{port}");
                    for v in [
                        "HTTP_PROXY",
                        "HTTPS_PROXY",
                        "ALL_PROXY",
                        "http_proxy",
                        "https_proxy",
                        "all_proxy",
                    ] {
                        cmd.env(v, &url);
                    }
                    for v in ["NO_PROXY", "no_proxy"] {
                        cmd.env(v, "localhost,127.0.0.1,::1");
                    }
                }
                Err(e) => eprintln!("claude-context: the sandbox's network proxy is off: {e}"),
            }
        }
        let spawned = cmd.spawn();
        let (shell, child_input) = match spawned {
            Ok(mut c) => (Pid::from_child(&c), c.stdin.take()),
            Err(e) => {
                eprintln!(
                    "claude-context: cannot run {}: {e}",
                    shell.to_string_lossy()
                );
                return 127;
            }
        };
        // The control pipe: its end (or any error) means "end everything now". With an input,
        // its frame comes first; a thread of its own writes it to the shell (which may never
        // read it), so the pipe's end is always seen.
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let mut input = std::io::stdin().lock();
            if let Some(mut to_shell) = child_input {
                let mut len = [0u8; 8];
                if input.read_exact(&mut len).is_ok() {
                    let n = u64::from_le_bytes(len).min(super::MAX_INPUT_BYTES as u64) as usize;
                    let mut frame = vec![0u8; n];
                    if input.read_exact(&mut frame).is_ok() {
                        std::thread::spawn(move || {
                            use std::io::Write;
                            let _ = to_shell.write_all(&frame);
                        });
                    }
                }
            }
            let mut buf = [0u8; 64];
            while matches!(input.read(&mut buf), Ok(n) if n > 0) {}
            s.store(true, Ordering::Relaxed);
        });
        let mut status: Option<rustix::process::WaitStatus> = None;
        let mut ended_at: Option<Instant> = None;
        loop {
            // Reap everything that ended; only this thread reaps, so a pid read from the list
            // of children below stays that child's until it is reaped here.
            loop {
                match rustix::process::wait(WaitOptions::NOHANG) {
                    Ok(Some((pid, st))) => {
                        if pid == shell {
                            status = Some(st);
                            ended_at = Some(Instant::now());
                        }
                    }
                    Ok(None) => break,
                    Err(rustix::io::Errno::CHILD) => return code(status),
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => break,
                }
            }
            if stop.load(Ordering::Relaxed) || ended_at.is_some_and(|t| t.elapsed() >= LINGER) {
                kill_children();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Listens on the loopback (a free port) and carries each connection to `socket`, both ways,
    /// on threads of their own; the port.
    fn bridge(socket: std::path::PathBuf) -> std::io::Result<u16> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    let Ok(unix) = std::os::unix::net::UnixStream::connect(&socket) else {
                        return;
                    };
                    let (Ok(mut tcp_r), Ok(mut unix_w)) = (tcp.try_clone(), unix.try_clone())
                    else {
                        return;
                    };
                    let up = std::thread::spawn(move || {
                        let _ = std::io::copy(&mut tcp_r, &mut unix_w);
                        let _ = unix_w.shutdown(std::net::Shutdown::Write);
                    });
                    let (mut unix_r, mut tcp_w) = (unix, tcp);
                    let _ = std::io::copy(&mut unix_r, &mut tcp_w);
                    let _ = tcp_w.shutdown(std::net::Shutdown::Write);
                    let _ = up.join();
                });
            }
        });
        Ok(port)
    }

    /// SIGKILL to every child of this process (of any of its threads).
    fn kill_children() {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        for t in tasks.flatten() {
            let Ok(list) = std::fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for pid in list.split_whitespace() {
                if let Some(pid) = pid.parse().ok().and_then(Pid::from_raw) {
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                }
            }
        }
    }

    fn code(status: Option<rustix::process::WaitStatus>) -> i32 {
        match status {
            Some(st) => st
                .exit_status()
                .or_else(|| st.terminating_signal().map(|s| 128 + s))
                .unwrap_or(1),
            None => 1,
        }
    }
}
