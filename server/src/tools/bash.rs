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
    /// Where the command runs (`sandbox/`): on Linux, inside bubblewrap unless turned off.
    pub sandbox: super::sandbox::SandboxConfig,
    /// This program, when it can run as the command's reaper (`<program> __reap <shell> -c
    /// <command>`, Linux): see [`crate::host::reaper::reap_main`]. `None` runs the shell directly (its process group
    /// is killed; a `setsid` job escapes that).
    pub reaper: Option<PathBuf>,
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
            sandbox: super::sandbox::SandboxConfig::default(),
            reaper: if cfg!(target_os = "linux") {
                crate::host::reaper::program()
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
    // The session's rules and mode judge the command part by part (`permissions::bash`) first:
    // a command they refuse is refused before anything is asked (the sandbox's question too).
    let action = ctx.bash_action(&command, &cwd);
    if let crate::permissions::Action::Refuse(r) = action {
        return ToolOutcome::refused(r.text, r.summary);
    }
    // Then where it runs: when the sandbox cannot run here, the user says whether commands may
    // run without it before being asked about this one.
    let mode = match super::sandbox::decide(ctx, &command).await {
        Ok(m) => m,
        Err(out) => return out,
    };
    // What the rules leave to the user is asked; allow-for-session covers this exact text only.
    if let Err(out) = ctx.carry_bash(action, &command).await {
        return out;
    }
    let cfg = ctx.bash_config();
    let timeout = i
        .timeout
        .map_or(cfg.default_timeout, Duration::from_millis)
        .min(cfg.max_timeout)
        .max(Duration::from_millis(1));
    let plan = match mode {
        super::sandbox::Mode::Plain => None,
        super::sandbox::Mode::Sandboxed => {
            match super::sandbox::plan(
                &cfg.sandbox,
                ctx.workspace(),
                ctx.sandbox(),
                &cwd,
                cfg.reaper.as_deref(),
            )
            .await
            {
                Ok(p) => Some(p),
                Err(e) => {
                    return ToolOutcome::error(
                        format!("The sandbox could not be prepared ({e}); nothing was run."),
                        "not run",
                    );
                }
            }
        }
    };
    #[cfg(unix)]
    {
        unix::run(cfg, plan, &cwd, &command, timeout).await
    }
    #[cfg(not(unix))]
    {
        let _ = (cwd, timeout, plan);
        ToolOutcome::error(
            "Bash is only available on Unix systems for now.",
            "unsupported",
        )
    }
}

/// A shell command line as [`shell_command`] built it.
pub(crate) struct Shell {
    pub command: std::process::Command,
    /// It runs under the reaper: its standard input is the reaper's control pipe.
    pub reaped: bool,
}

/// The one way a shell command line starts: the Bash tool's commands, and hooks'
/// (`hooks/run.rs`). `<shell> -c <command>` in `cwd`, in a process group of its own, under the
/// reaper when there is one (Linux), inside the sandbox when `plan` is one (bubblewrap's
/// arguments, the proxy's socket, the reaper bound inside: `sandbox::plan`), without the
/// variables of [`BashConfig::env_remove`]. Whatever confines Bash's commands belongs here, so
/// that hooks get it too.
///
/// Standard input: with a reaper, it is the reaper's control pipe (the caller keeps it open
/// while the command runs; closing it ends everything); with `input`, the caller first writes
/// the command's input on it as a frame ([`crate::host::reaper::REAP_INPUT_ARG`]). Without a reaper:
/// piped with
/// `input` (the caller writes it and closes it), `/dev/null` otherwise. Output is the caller's.
pub(crate) fn shell_command(
    cfg: &BashConfig,
    plan: Option<super::sandbox::Plan>,
    cwd: &std::path::Path,
    command: &str,
    input: bool,
) -> Shell {
    use std::process::Stdio;
    // bwrap and its arguments (sandboxed), then the reaper (with its options), then the shell.
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    let sandboxed = plan.is_some();
    let proxy = plan.as_ref().and_then(|p| p.proxy.clone());
    let reaper = match &plan {
        Some(p) => p.reaper.clone(),
        None => cfg.reaper.clone(),
    };
    if let Some(p) = plan {
        argv.push(
            cfg.sandbox
                .bwrap
                .clone()
                .unwrap_or_else(|| "bwrap".into())
                .into(),
        );
        argv.extend(p.args);
    }
    if let Some(reaper) = &reaper {
        argv.push(reaper.clone().into());
        argv.push(crate::host::reaper::REAP_ARG.into());
        if input {
            argv.push(crate::host::reaper::REAP_INPUT_ARG.into());
        }
        if let Some(sock) = &proxy {
            argv.push(crate::host::reaper::PROXY_ARG.into());
            argv.push(sock.clone().into());
        }
    }
    argv.push(cfg.shell.clone().into());
    #[allow(clippy::disallowed_methods)]
    // reason: the one builder of shell commands (the Bash tool's, hooks'; clippy.toml).
    let mut c = std::process::Command::new(&argv[0]);
    c.args(&argv[1..]);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    if sandboxed {
        // The private `/tmp` is the only temporary folder a sandboxed command can write.
        c.env("TMPDIR", "/tmp");
    }
    c.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(if reaper.is_some() || input {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    for v in &cfg.env_remove {
        c.env_remove(v);
    }
    Shell {
        command: c,
        reaped: reaper.is_some(),
    }
}

/// A command line nobody is asked about (a hook's: `hooks/run.rs`), confined as a Bash command
/// is: inside the session's sandbox (`rt`, the workspace `ws`) when it can run there, outside
/// it only where Bash's would run outside it unasked (`sandbox::unattended`). `Err`: it must not
/// run, and why (in the user's words).
pub(crate) async fn unattended_command(
    cfg: &BashConfig,
    ws: &super::Workspace,
    rt: &super::sandbox::Runtime,
    cwd: &std::path::Path,
    command: &str,
    input: bool,
) -> Result<Shell, String> {
    let plan = match super::sandbox::unattended(&cfg.sandbox, rt, command).await? {
        super::sandbox::Mode::Plain => None,
        super::sandbox::Mode::Sandboxed => Some(
            super::sandbox::plan(&cfg.sandbox, ws, rt, cwd, cfg.reaper.as_deref())
                .await
                .map_err(|e| format!("the sandbox could not be prepared ({e})"))?,
        ),
    };
    Ok(shell_command(cfg, plan, cwd, command, input))
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
        plan: Option<super::super::sandbox::Plan>,
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
        let built = super::shell_command(cfg, plan, cwd, command, false);
        let reaped = built.reaped;
        let mut std_cmd = built.command;
        std_cmd
            .stdout(Stdio::from(OwnedFd::from(writer)))
            .stderr(Stdio::from(OwnedFd::from(writer2)))
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true");
        let mut cmd = tokio::process::Command::from(std_cmd);
        // The reaper is never killed outright: it must live to end what the command started.
        cmd.kill_on_drop(!reaped);
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
