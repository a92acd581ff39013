//! `Bash`: one command line run by a fresh shell (`bash -c`, or `sh -c` without bash) in the
//! first workspace folder, once the session's permission rules, its mode or the user allowed it
//! (`crate::permissions::bash` judges the command part by part; see `permission.rs`).
//!
//! The child gets its own process group and one pipe for both standard output and standard
//! error (so they interleave as in a terminal); standard input is `/dev/null`, pagers and git's
//! editor are turned off (`PAGER=cat`, `GIT_PAGER=cat`, `GIT_EDITOR=true`), and the variables of
//! [`BashConfig::env_remove`] (the API key's) are removed. The whole group is killed with
//! `SIGKILL` when the time limit passes, when the call is cancelled or its future dropped, and when
//! the command ends (background jobs do not outlive the call). Output keeps its first
//! [`HEAD_BYTES`] and last bytes up to [`BashConfig::max_output_bytes`], and says how much was
//! left out in between.
//!
//! This is the second place in the crate that starts a process (after `git::command`), allowed
//! by `clippy.toml`'s rule at the one call below.

use std::path::PathBuf;
use std::time::Duration;

use super::input::BashInput;
use super::{CancellationToken, Ctx, ToolOutcome};

/// Bytes kept from the start of the output; the rest of the budget keeps its end.
pub(crate) const HEAD_BYTES: usize = 10_000;

/// How Bash runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashConfig {
    /// The shell, run as `<shell> -c <command>`.
    pub shell: PathBuf,
    /// Variables removed from the child's environment (the API key's variable).
    pub env_remove: Vec<String>,
    pub default_timeout: Duration,
    /// The most a model may ask for.
    pub max_timeout: Duration,
    /// Output bytes kept (beginning and end).
    pub max_output_bytes: usize,
    /// This program, when it can run as the command's reaper (`<program> __reap <shell> -c
    /// <command>`, Linux): see [`reap_main`]. `None` runs the shell directly (its process group
    /// is killed; a `setsid` job escapes that).
    pub reaper: Option<PathBuf>,
}

/// Set by the binary's `main` (`use_reaper`): the program that can run `__reap`.
static REAPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes every Bash command from now on run under `program __reap` (the binary itself): called
/// by `main`, never by tests of the library (whose executable is a test harness).
pub fn use_reaper(program: PathBuf) {
    let _ = REAPER.set(program);
}

impl Default for BashConfig {
    fn default() -> BashConfig {
        let bash = PathBuf::from("/bin/bash");
        BashConfig {
            shell: if bash.exists() {
                bash
            } else {
                PathBuf::from("/bin/sh")
            },
            env_remove: Vec::new(),
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 30_000,
            reaper: if cfg!(target_os = "linux") {
                REAPER.get().cloned()
            } else {
                None
            },
        }
    }
}

pub(crate) async fn run(ctx: &Ctx<'_>, i: BashInput, _cancel: &CancellationToken) -> ToolOutcome {
    let command = i.command.trim().to_string();
    if command.is_empty() {
        return ToolOutcome::error("The command is empty; nothing was run.", "empty command");
    }
    let Some(cwd) = ctx.workspace().primary().map(PathBuf::from) else {
        return ToolOutcome::error(
            "This session has no workspace folder to run commands in.",
            "no folder",
        );
    };
    // The session's rules and mode judge the command part by part (`permissions::bash`); what
    // they leave to the user is asked, and allow-for-session covers this exact text only.
    if let Err(out) = ctx.check_bash(&command, &cwd).await {
        return out;
    }
    let cfg = ctx.bash_config();
    let timeout = i
        .timeout
        .map_or(cfg.default_timeout, Duration::from_millis)
        .min(cfg.max_timeout)
        .max(Duration::from_millis(1));
    #[cfg(unix)]
    {
        unix::run(cfg, &cwd, &command, timeout).await
    }
    #[cfg(not(unix))]
    {
        let _ = (cwd, timeout);
        ToolOutcome::error(
            "Bash is only available on Unix systems for now.",
            "unsupported",
        )
    }
}

/// The hidden subcommand that runs a command under the reaper: `<binary> __reap <shell> -c <cmd>`.
pub const REAP_ARG: &str = "__reap";

/// `claude-context __reap <shell> -c <command>`: a tiny process between the server and the
/// shell, so that everything a command starts is ended with it (Linux). It makes itself a child
/// subreaper (`PR_SET_CHILD_SUBREAPER`): a process that leaves the command's process group
/// (`setsid`, a daemonising double fork) and loses its parent is re-parented to the reaper
/// instead of to init, so it stays findable. It runs the shell (standard input `/dev/null`,
/// output where the reaper's goes), reaps whatever ends, and kills every child it has (SIGKILL,
/// again for each generation re-parented to it) 100 ms after the shell ended, or as soon as its
/// own standard input (the server's control pipe) closes: the call ended, timed out or was
/// cancelled, or the server is gone. It exits when it has no child left, with the shell's
/// status (128 + the signal for a shell killed by one).
pub fn reap_main(args: &[std::ffi::OsString]) -> i32 {
    #[cfg(target_os = "linux")]
    {
        reaper::main(args)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = args;
        eprintln!("claude-context: __reap is for Linux");
        127
    }
}

#[cfg(target_os = "linux")]
mod reaper {
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use rustix::process::{Pid, Signal, WaitOptions};

    /// How long what the shell left running may go on writing output after it ended.
    const LINGER: Duration = Duration::from_millis(100);

    pub(super) fn main(args: &[std::ffi::OsString]) -> i32 {
        let Some((shell, rest)) = args.split_first() else {
            eprintln!("claude-context: __reap needs a program to run");
            return 127;
        };
        if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
            eprintln!("claude-context: cannot become a subreaper: {e}");
        }
        #[allow(clippy::disallowed_methods)]
        // reason: the Bash tool's shell, under its reaper (clippy.toml).
        let spawned = std::process::Command::new(shell)
            .args(rest)
            .stdin(std::process::Stdio::null())
            .spawn();
        let shell = match spawned {
            Ok(c) => Pid::from_child(&c),
            Err(e) => {
                eprintln!(
                    "claude-context: cannot run {}: {e}",
                    shell.to_string_lossy()
                );
                return 127;
            }
        };
        // The control pipe: its end (or any error) means "end everything now".
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let mut input = std::io::stdin().lock();
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

/// The output kept: the beginning, and a window on the end.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    head_max: usize,
    tail_max: usize,
}

impl Capture {
    pub(crate) fn new(max: usize) -> Capture {
        let head_max = max.min(HEAD_BYTES);
        Capture {
            head_max,
            tail_max: max - head_max,
            ..Capture::default()
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_max.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * self.tail_max.max(1) {
            let drop = self.tail.len() - self.tail_max;
            self.tail.drain(..drop);
        }
    }

    /// The text: all of it, or its beginning and end with the size of the gap.
    pub(crate) fn text(&self) -> String {
        let tail = &self.tail[self.tail.len().saturating_sub(self.tail_max)..];
        let omitted = self.total - self.head.len() as u64 - tail.len() as u64;
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if omitted > 0 {
            out.push_str(&format!(
                "\n[… {} of output left out …]\n",
                crate::fs::human_bytes(omitted)
            ));
        }
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

#[cfg(unix)]
mod unix {
    use std::os::fd::OwnedFd;
    use std::path::Path;
    use std::process::{ExitStatus, Stdio};
    use std::time::{Duration, Instant};

    use tokio::io::AsyncReadExt;

    use super::{BashConfig, Capture};
    use crate::tools::ToolOutcome;

    /// How long output is still read after the command ended (from what it left running, before
    /// the group is killed) and after the group was killed.
    const DRAIN: Duration = Duration::from_millis(100);
    const DRAIN_AFTER_KILL: Duration = Duration::from_secs(1);

    /// Ends the command and everything it started when asked, or when dropped (a cancelled
    /// call), unless disarmed. Under the reaper: closes its control pipe, and the reaper kills
    /// every descendant (those that left the group with `setsid` too) and exits. Without it:
    /// kills the child's process group.
    struct GroupKill(
        Option<rustix::process::Pid>,
        Option<std::process::ChildStdin>,
    );

    impl GroupKill {
        fn kill(&mut self) {
            if self.1.take().is_some() {
                return;
            }
            if let Some(pid) = self.0 {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }

    impl GroupKill {
        /// The group is gone: never signal that id again (it could be reused).
        fn disarm(mut self) {
            self.0 = None;
            self.1 = None;
        }
    }

    impl Drop for GroupKill {
        fn drop(&mut self) {
            self.kill();
        }
    }

    pub(super) async fn run(
        cfg: &BashConfig,
        cwd: &Path,
        command: &str,
        timeout: Duration,
    ) -> ToolOutcome {
        let started = Instant::now();
        let (reader, writer) = match std::io::pipe() {
            Ok(p) => p,
            Err(e) => return spawn_failed(&e),
        };
        let writer2 = match writer.try_clone() {
            Ok(w) => w,
            Err(e) => return spawn_failed(&e),
        };
        #[allow(clippy::disallowed_methods)]
        // reason: Bash is the tool that runs commands (clippy.toml).
        let mut std_cmd = match &cfg.reaper {
            Some(reaper) => {
                let mut c = std::process::Command::new(reaper);
                c.arg(super::REAP_ARG).arg(&cfg.shell);
                c
            }
            None => std::process::Command::new(&cfg.shell),
        };
        {
            use std::os::unix::process::CommandExt;
            std_cmd.process_group(0);
        }
        std_cmd
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            // The reaper's standard input is its control pipe (closed: end everything); the
            // shell's is `/dev/null` either way.
            .stdin(if cfg.reaper.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::from(OwnedFd::from(writer)))
            .stderr(Stdio::from(OwnedFd::from(writer2)))
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true");
        for v in &cfg.env_remove {
            std_cmd.env_remove(v);
        }
        let mut cmd = tokio::process::Command::from(std_cmd);
        // The reaper is never killed outright: it must live to end what the command started.
        cmd.kill_on_drop(cfg.reaper.is_none());
        let spawned = cmd.spawn();
        // The parent's copies of the pipe's write end go with the command: EOF comes when the
        // children's copies close.
        drop(cmd);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => return spawn_failed(&e),
        };
        let control = child
            .stdin
            .take()
            .and_then(|c| c.into_owned_fd().ok())
            .map(std::process::ChildStdin::from);
        let mut group = GroupKill(
            child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32)),
            control,
        );
        let mut rx = match tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
            Ok(rx) => Some(rx),
            Err(e) => {
                group.kill();
                return ToolOutcome::error(
                    format!("The command's output could not be read ({e}); it was stopped."),
                    "not run",
                );
            }
        };
        let mut capture = Capture::new(cfg.max_output_bytes);
        let mut buf = vec![0u8; 16 * 1024];
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut timed_out = false;
        let deadline = tokio::time::Instant::from_std(started + timeout);
        let mut drain_until: Option<tokio::time::Instant> = None;
        let mut killed_for_drain = false;
        loop {
            if status.is_some() && rx.is_none() {
                break;
            }
            let drain_at = drain_until.unwrap_or(deadline);
            tokio::select! {
                r = read(rx.as_mut(), &mut buf), if rx.is_some() => {
                    match r {
                        Ok(0) | Err(_) => rx = None,
                        Ok(n) => capture.push(&buf[..n]),
                    }
                }
                s = child.wait(), if status.is_none() => {
                    status = Some(s);
                    // Whatever is still running was started in the background; it does not
                    // outlive the call. Read what is already in the pipe first.
                    drain_until = Some(tokio::time::Instant::now() + DRAIN);
                }
                () = tokio::time::sleep_until(deadline), if status.is_none() && !timed_out => {
                    timed_out = true;
                    group.kill();
                }
                () = tokio::time::sleep_until(drain_at), if status.is_some() && drain_until.is_some() => {
                    if killed_for_drain {
                        // A process that left the group (setsid) holds the pipe: stop reading.
                        rx = None;
                    } else {
                        group.kill();
                        killed_for_drain = true;
                        drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_KILL);
                    }
                }
            }
        }
        if !killed_for_drain {
            group.kill();
        }
        group.disarm();
        let elapsed = started.elapsed();
        finish(capture, status, timed_out, timeout, elapsed)
    }

    async fn read(
        rx: Option<&mut tokio::net::unix::pipe::Receiver>,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        match rx {
            Some(rx) => rx.read(buf).await,
            None => Ok(0),
        }
    }

    fn spawn_failed(e: &std::io::Error) -> ToolOutcome {
        ToolOutcome::error(
            format!("The command could not be started: {e}."),
            "not started",
        )
    }

    fn finish(
        capture: Capture,
        status: Option<std::io::Result<ExitStatus>>,
        timed_out: bool,
        timeout: Duration,
        elapsed: Duration,
    ) -> ToolOutcome {
        use std::os::unix::process::ExitStatusExt;
        let mut text = capture.text();
        if text.is_empty() {
            text.push_str("(no output)");
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
        if timed_out {
            text.push_str(&format!(
                "[The command did not finish within its time limit of {} and was killed, with everything it started.]\n",
                secs(timeout)
            ));
            return ToolOutcome::error(text, format!("timed out after {}", secs(timeout)));
        }
        let (is_error, summary) = match status {
            Some(Ok(s)) if s.success() => (false, format!("exit 0 in {}", secs(elapsed))),
            Some(Ok(s)) => match (s.code(), s.signal()) {
                (Some(c), _) => {
                    text.push_str(&format!("[exit code {c}]\n"));
                    (true, format!("exit {c}"))
                }
                (None, Some(sig)) => {
                    text.push_str(&format!("[killed by signal {sig}]\n"));
                    (true, format!("killed by signal {sig}"))
                }
                _ => (true, "ended".to_string()),
            },
            Some(Err(e)) => {
                text.push_str(&format!("[could not wait for the command: {e}]\n"));
                (true, "unknown status".to_string())
            }
            None => (true, "unknown status".to_string()),
        };
        if is_error {
            ToolOutcome::error(text, summary)
        } else {
            ToolOutcome::ok(text, summary)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_the_beginning_and_the_end() {
        let mut c = Capture::new(HEAD_BYTES + 100);
        c.push(&vec![b'a'; HEAD_BYTES]);
        for _ in 0..1000 {
            c.push(&[b'b'; 100]);
        }
        c.push(b"THE END");
        let t = c.text();
        assert!(t.starts_with(&"a".repeat(HEAD_BYTES)));
        assert!(t.ends_with("THE END"));
        assert!(t.contains("of output left out"));
        assert!(t.len() < HEAD_BYTES + 200);
        let mut small = Capture::new(30_000);
        small.push(b"hello\n");
        assert_eq!(small.text(), "hello\n");
    }
}
