//! The runner: the hooks of one event at the same time, their results in the order they finish
//! (`hooks-agents-styles.md` section 8: hooks sleeping 2 s, 1 s, 0 s and 0.5 s gave their texts
//! fastest first).
//!
//! Each hook is its command line run as the Bash tool runs its own
//! (`tools::shell_command`, with `/bin/sh` as Claude Code uses: the reaper, its own process
//! group, and the sandbox that confines Bash), in the session's folder, with:
//! - standard input: the event's JSON ([`super::input`]), whole, then closed;
//! - the server's environment without any variable that can hold a key (the session's
//!   [`crate::tools::BashConfig::env_remove`]: [`crate::host::KEY_VARIABLES`], the key's own
//!   variable) plus the variables of section 2 ([`Runner::env`], and per event);
//! - standard output and standard error read apart, each kept up to its cap ([`Limits`]) as it
//!   arrives (a hook that prints a gigabyte costs the cap, never more);
//! - its `timeout` (seconds; [`DEFAULT_TIMEOUT`] without one, [`MAX_TIMEOUT`] at most): past it
//!   the hook and everything it started are killed, and it counts as having said nothing;
//! - the turn's cancellation: a cancelled hook is killed the same way;
//! - the session's sandbox, as its Bash commands (`tools/sandbox/`): inside bubblewrap, a hook
//!   writes only the workspace, the `sandbox.filesystem.allowWrite` folders, its
//!   `CLAUDE_ENV_FILE`'s folder and the session's private `/tmp`, sees no other process and no
//!   network but the allowed hosts. Where the sandbox cannot run, a hook runs outside it only
//!   when Bash's commands would without a question (the user's or managed settings turned it
//!   off, an excluded command, or the user already answered "run commands without a sandbox
//!   for this session"); otherwise it is not run ([`End::Skipped`]) and the user reads why:
//!   a hook cannot stop to ask, and nothing runs outside the sandbox unasked. A skipped
//!   PreToolUse hook might have said no, so the call it guards is asked about instead of
//!   running unchecked (`outcome::pre_tool_use`);
//! - its output scrubbed of the session's secrets ([`Runner::scrubber`]) before anything reads
//!   it.
//!
//! When the command ends, what it left running is given a moment to finish its output, then
//! killed with its group (the reaper ends those that left it): no hook outlives its run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use super::config::{Hook, Source};
use crate::tools::BashConfig;

/// A hook's time limit when it sets none (the reference's default was not measured; its
/// documentation says 60 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a hook may set.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// How much of a hook's output is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    /// Standard output bytes kept (beyond the 10,000-character cap, the text is saved to a
    /// file and a preview sent: this bounds that file).
    pub stdout_bytes: usize,
    /// Standard error bytes kept (the reference sends exit-2 stderr whole: 100,000 characters
    /// were measured; past this, the rest is cut with a note).
    pub stderr_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            default_timeout: DEFAULT_TIMEOUT,
            max_timeout: MAX_TIMEOUT,
            stdout_bytes: 4 << 20,
            stderr_bytes: 1 << 20,
        }
    }
}

/// How a hook's run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// It exited with this code (a shell killed by a signal under the reaper: 128 + signal).
    Exit(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Killed at its time limit.
    TimedOut(Duration),
    /// Killed because its turn was cancelled.
    Cancelled,
    /// It could not be started (why).
    NotStarted(String),
    /// It was not started: the sandbox the session's commands run in cannot run here, and the
    /// user has not allowed commands without it (why, in the user's words).
    Skipped(String),
}

/// One hook's run.
#[derive(Clone, Debug)]
pub struct Ran {
    pub hook: Hook,
    pub end: End,
    /// Standard output as kept (lossy UTF-8).
    pub stdout: String,
    /// Bytes it wrote to standard output (kept or not).
    pub stdout_bytes: u64,
    pub stderr: String,
    pub stderr_bytes: u64,
    pub elapsed: Duration,
}

impl Ran {
    /// The exit code, when it exited on its own.
    pub fn code(&self) -> Option<i32> {
        match self.end {
            End::Exit(c) => Some(c),
            _ => None,
        }
    }

    /// Standard error as the model gets it: whole up to the cap, then cut with a note.
    pub fn stderr_text(&self) -> String {
        let mut s = self.stderr.clone();
        let kept = s.len() as u64;
        if self.stderr_bytes > kept {
            s.push_str(&format!(
                "\n[… {} more of standard error left out]\n",
                crate::fs::human_bytes(self.stderr_bytes - kept)
            ));
        }
        s
    }
}

/// The shell hook commands run under: `/bin/sh -c <command>`, as Claude Code runs them on Linux
/// and macOS (the Bash tool's own shell is bash; a hook written with bash's syntax fails in both).
pub const SHELL: &str = "/bin/sh";

/// The Bash tool's configuration as hooks run with it: the same builder, reaper and removed
/// variables, with [`SHELL`].
pub fn hook_bash(bash: &BashConfig) -> BashConfig {
    BashConfig {
        shell: std::path::PathBuf::from(SHELL),
        ..bash.clone()
    }
}

/// The variables every hook of session `session_id` in `cwd` gets (section 2), as claude-context
/// sets them: `CLAUDE_PROJECT_DIR`, `CLAUDECODE=1`, `CLAUDE_CODE_SESSION_ID`, `CLAUDE_PID`,
/// `CLAUDE_CODE_CHILD_SESSION=1`, `COREPACK_ENABLE_AUTO_PIN=0`, and in our own words
/// `CLAUDE_CODE_ENTRYPOINT=claude-context` and `AI_AGENT=claude-context_<version>` (a script can
/// tell who runs it). The reference's messaging socket and token, its notes folder and
/// `CLAUDE_CODE_SESSION_ATTENDED` have no counterpart here and are not set.
pub fn session_env(cwd: &std::path::Path, session_id: &str) -> Vec<(String, String)> {
    vec![
        ("CLAUDE_PROJECT_DIR".into(), cwd.display().to_string()),
        ("CLAUDECODE".into(), "1".into()),
        ("CLAUDE_CODE_ENTRYPOINT".into(), "claude-context".into()),
        ("CLAUDE_CODE_SESSION_ID".into(), session_id.to_string()),
        ("CLAUDE_PID".into(), std::process::id().to_string()),
        (
            "AI_AGENT".into(),
            format!("claude-context_{}", env!("CARGO_PKG_VERSION")),
        ),
        ("CLAUDE_CODE_CHILD_SESSION".into(), "1".into()),
        ("COREPACK_ENABLE_AUTO_PIN".into(), "0".into()),
    ]
}

/// Runs hooks for one session.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The shell, the reaper, the variables removed and the sandbox's settings: the session's
    /// Bash configuration.
    pub bash: BashConfig,
    /// The session's folders: what a sandboxed hook may write (with its private `/tmp` and the
    /// sandbox's `allowWrite` folders).
    pub workspace: crate::tools::Workspace,
    /// The session's sandbox state, shared with its Bash tool: one private `/tmp`, and the
    /// user's one answer to "run commands without a sandbox" (see [`crate::tools::SandboxRuntime`]).
    pub sandbox: Arc<crate::tools::SandboxRuntime>,
    /// The session's secrets: a hook's output is scrubbed of them as it is read, before anything
    /// (a text for the model, an event, a preview) can carry it.
    pub scrubber: Arc<crate::scrub::Scrubber>,
    /// The session's folder: every hook's working folder.
    pub cwd: PathBuf,
    /// The variables every hook gets (`CLAUDE_PROJECT_DIR`, `CLAUDECODE`, …).
    pub env: Vec<(String, String)>,
    pub limits: Limits,
}

impl Runner {
    /// Runs `hooks` at the same time with `input` on each one's standard input and `env` added
    /// to its environment; returns their runs in the order they finished. Returns at once when
    /// `hooks` is empty.
    pub async fn run(
        &self,
        hooks: &[&Hook],
        input: &[u8],
        env: &[(String, String)],
        cancel: &CancellationToken,
    ) -> Vec<Ran> {
        if hooks.is_empty() {
            return Vec::new();
        }
        let input: Arc<[u8]> = Arc::from(input);
        let mut running: FuturesUnordered<_> = hooks
            .iter()
            .map(|h| self.run_one(h, input.clone(), env, cancel))
            .collect();
        let mut out = Vec::with_capacity(hooks.len());
        while let Some(r) = running.next().await {
            out.push(r);
        }
        out
    }

    /// The time limit of `hook`.
    pub fn timeout(&self, hook: &Hook) -> Duration {
        hook.timeout
            .map(|s| Duration::from_secs_f64(s.min(self.limits.max_timeout.as_secs_f64())))
            .unwrap_or(self.limits.default_timeout)
            .clamp(Duration::from_millis(1), self.limits.max_timeout)
    }

    async fn run_one(
        &self,
        hook: &Hook,
        input: Arc<[u8]>,
        env: &[(String, String)],
        cancel: &CancellationToken,
    ) -> Ran {
        let started = Instant::now();
        let timeout = self.timeout(hook);
        let mut extra: Vec<(String, String)> = env.to_vec();
        if let Source::Plugin { root, data, .. } = &hook.source {
            extra.push((
                "CLAUDE_PLUGIN_ROOT".into(),
                root.to_string_lossy().into_owned(),
            ));
            if let Some(d) = data {
                extra.push((
                    "CLAUDE_PLUGIN_DATA".into(),
                    d.to_string_lossy().into_owned(),
                ));
            }
        }
        #[cfg(unix)]
        let (end, out, err) = unix::run(self, &hook.command, input, &extra, timeout, cancel).await;
        #[cfg(not(unix))]
        let (end, out, err) = {
            let _ = (input, extra, timeout, cancel);
            (
                End::NotStarted("hooks run on Unix systems only for now".into()),
                Capture::new(0),
                Capture::new(0),
            )
        };
        Ran {
            hook: hook.clone(),
            end,
            stdout: self.scrubber.scrub(&out.text()).into_owned(),
            stdout_bytes: out.total,
            stderr: self.scrubber.scrub(&err.text()).into_owned(),
            stderr_bytes: err.total,
            elapsed: started.elapsed(),
        }
    }
}

/// The first bytes of a stream, and how many there were.
#[derive(Debug, Default)]
struct Capture {
    kept: Vec<u8>,
    max: usize,
    total: u64,
}

impl Capture {
    fn new(max: usize) -> Capture {
        Capture {
            max,
            ..Capture::default()
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }
}

#[cfg(unix)]
mod unix {
    use std::process::{ExitStatus, Stdio};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::sync::CancellationToken;

    use super::{Capture, End, Runner};

    /// How long output is still read after the command ended (from what it left running),
    /// and after the group was killed.
    const DRAIN: Duration = Duration::from_millis(100);
    const DRAIN_AFTER_KILL: Duration = Duration::from_secs(1);

    /// Ends the hook and everything it started when asked or dropped: under the reaper, by
    /// closing its control pipe; without it, by killing the process group.
    struct Group {
        pid: Option<rustix::process::Pid>,
        control: Option<tokio::process::ChildStdin>,
        writer: Option<tokio::task::JoinHandle<()>>,
    }

    impl Group {
        fn kill(&mut self) {
            if let Some(w) = self.writer.take() {
                w.abort();
            }
            if self.control.take().is_some() {
                return;
            }
            if let Some(pid) = self.pid {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }

        /// The group is gone: never signal that id again.
        fn disarm(mut self) {
            self.pid = None;
            self.control = None;
            self.writer = None;
        }
    }

    impl Drop for Group {
        fn drop(&mut self) {
            self.kill();
        }
    }

    pub(super) async fn run(
        runner: &Runner,
        command: &str,
        input: Arc<[u8]>,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> (End, Capture, Capture) {
        let limits = runner.limits;
        let mut out = Capture::new(limits.stdout_bytes);
        let mut err = Capture::new(limits.stderr_bytes);
        // Confined as a Bash command of the session is (its sandbox), or not run at all.
        let shell = match crate::tools::unattended_command(
            &runner.bash,
            &runner.workspace,
            &runner.sandbox,
            &runner.cwd,
            command,
            true,
        )
        .await
        {
            Ok(s) => s,
            Err(why) => return (End::Skipped(why), out, err),
        };
        let framed = shell.reaped;
        let mut std_cmd = shell.command;
        std_cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in runner.env.iter().chain(env) {
            std_cmd.env(k, v);
        }
        let mut cmd = tokio::process::Command::from(std_cmd);
        // The reaper is never killed outright: it must live to end what the hook started.
        cmd.kill_on_drop(!framed);
        let spawned = cmd.spawn();
        drop(cmd);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => return (End::NotStarted(e.to_string()), out, err),
        };
        let mut group = Group {
            pid: child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32)),
            control: None,
            writer: None,
        };
        let stdin = child.stdin.take();
        let started = tokio::time::Instant::now();
        let deadline = started + timeout;
        if framed {
            // The reaper reads the frame whole before anything else (the shell never holds it
            // up): written here, then the pipe stays open as the reaper's control.
            let Some(mut control) = stdin else {
                return (End::NotStarted("no control pipe".into()), out, err);
            };
            let n = input.len().min(crate::host::reaper::MAX_INPUT_BYTES);
            let mut frame = Vec::with_capacity(8 + n);
            frame.extend_from_slice(&(n as u64).to_le_bytes());
            frame.extend_from_slice(&input[..n]);
            let wrote = tokio::select! {
                r = control.write_all(&frame) => r.is_ok(),
                () = tokio::time::sleep_until(deadline) => false,
                () = cancel.cancelled() => false,
            };
            if wrote {
                let _ = control.flush().await;
                group.control = Some(control);
            } else {
                // Closing the control ends the reaper and the shell.
                drop(control);
            }
        } else if let Some(mut s) = stdin {
            // The hook may never read its input: written by a task of its own, stopped with
            // the hook.
            group.writer = Some(tokio::spawn(async move {
                let _ = s.write_all(&input).await;
            }));
        }
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut obuf = vec![0u8; 16 * 1024];
        let mut ebuf = vec![0u8; 16 * 1024];
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut timed_out = false;
        let mut cancelled = false;
        let mut drain_until: Option<tokio::time::Instant> = None;
        let mut killed_for_drain = false;
        loop {
            if status.is_some() && stdout.is_none() && stderr.is_none() {
                break;
            }
            let drain_at = drain_until.unwrap_or(deadline);
            tokio::select! {
                r = read(stdout.as_mut(), &mut obuf), if stdout.is_some() => match r {
                    Ok(0) | Err(_) => stdout = None,
                    Ok(n) => out.push(&obuf[..n]),
                },
                r = read(stderr.as_mut(), &mut ebuf), if stderr.is_some() => match r {
                    Ok(0) | Err(_) => stderr = None,
                    Ok(n) => err.push(&ebuf[..n]),
                },
                s = child.wait(), if status.is_none() => {
                    status = Some(s);
                    drain_until = Some(tokio::time::Instant::now() + DRAIN);
                }
                () = tokio::time::sleep_until(deadline), if status.is_none() && !timed_out && !cancelled => {
                    timed_out = true;
                    group.kill();
                }
                () = cancel.cancelled(), if status.is_none() && !timed_out && !cancelled => {
                    cancelled = true;
                    group.kill();
                }
                () = tokio::time::sleep_until(drain_at), if status.is_some() && drain_until.is_some() => {
                    if killed_for_drain {
                        // Something that left the group holds the pipes: stop reading.
                        stdout = None;
                        stderr = None;
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
        let end = if timed_out {
            End::TimedOut(timeout)
        } else if cancelled {
            End::Cancelled
        } else {
            use std::os::unix::process::ExitStatusExt;
            match status {
                Some(Ok(s)) => match (s.code(), s.signal()) {
                    (Some(c), _) => End::Exit(c),
                    (None, Some(sig)) => End::Signal(sig),
                    _ => End::NotStarted("no exit status".into()),
                },
                Some(Err(e)) => End::NotStarted(e.to_string()),
                None => End::NotStarted("no exit status".into()),
            }
        };
        (end, out, err)
    }

    async fn read<R: tokio::io::AsyncRead + Unpin>(
        r: Option<&mut R>,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        match r {
            Some(r) => r.read(buf).await,
            None => Ok(0),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::hooks::Event;
    use crate::hooks::matcher::Matcher;

    fn hook(command: &str, timeout: Option<f64>) -> Hook {
        Hook {
            event: Event::PreToolUse,
            source: Source::Project,
            file: "/p/.claude/settings.json".into(),
            line: None,
            matcher: Matcher::parse(None),
            command: command.into(),
            timeout,
            kind: "command".into(),
        }
    }

    fn runner(dir: &std::path::Path) -> Runner {
        let bash = BashConfig {
            // A variable every test process inherits, standing for a key variable.
            env_remove: vec!["HOME".into()],
            ..BashConfig::default()
        };
        Runner {
            bash,
            workspace: crate::tools::Workspace::new(vec![dir.to_path_buf()], Vec::new()),
            sandbox: Arc::default(),
            scrubber: Arc::new(crate::scrub::Scrubber::new(["sk-hook-SECRET"])),
            cwd: dir.to_path_buf(),
            env: vec![("CLAUDE_PROJECT_DIR".into(), dir.display().to_string())],
            limits: Limits {
                stdout_bytes: 64,
                ..Limits::default()
            },
        }
    }

    #[tokio::test]
    async fn hooks_run_together_and_come_back_in_finishing_order() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let slow = hook("sleep 0.6; echo SLOW", None);
        let fast = hook(
            "cat; echo; pwd; echo $CLAUDE_PROJECT_DIR; echo oops >&2; exit 2",
            None,
        );
        let mid = hook("sleep 0.3; printf MID", None);
        let started = Instant::now();
        let runs = r
            .run(
                &[&slow, &fast, &mid],
                br#"{"a":1}"#,
                &[],
                &CancellationToken::new(),
            )
            .await;
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "in parallel"
        );
        let order: Vec<&str> = runs.iter().map(|r| r.hook.command.as_str()).collect();
        assert_eq!(order, [&fast.command, &mid.command, &slow.command]);
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            runs[0].stdout,
            format!(
                "{{\"a\":1}}\n{}\n{}\n",
                real.display(),
                dir.path().display()
            )
        );
        assert_eq!(runs[0].stderr, "oops\n");
        assert_eq!(runs[0].code(), Some(2));
        assert_eq!(runs[1].stdout, "MID");
    }

    #[tokio::test]
    async fn output_is_capped_as_it_arrives_and_the_timeout_kills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let loud = hook("head -c 1000000 /dev/zero | tr '\\0' x", None);
        let runs = r.run(&[&loud], b"", &[], &CancellationToken::new()).await;
        assert_eq!(runs[0].stdout.len(), 64);
        assert_eq!(runs[0].stdout_bytes, 1_000_000);
        // A hook that starts a background job and outlives its timeout: killed, with the job.
        let marker = dir.path().join("alive");
        let stuck = hook(
            &format!("(sleep 2; touch {}) & sleep 30", marker.display()),
            Some(0.3),
        );
        let started = Instant::now();
        let runs = r.run(&[&stuck], b"", &[], &CancellationToken::new()).await;
        assert_eq!(runs[0].end, End::TimedOut(Duration::from_millis(300)));
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(2500));
        assert!(
            !marker.exists(),
            "the background job was killed with the hook"
        );
    }

    #[tokio::test]
    async fn a_cancel_kills_the_hook_and_no_key_variable_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c.cancel();
        });
        let started = Instant::now();
        let runs = r.run(&[&hook("sleep 30", None)], b"", &[], &cancel).await;
        assert_eq!(runs[0].end, End::Cancelled);
        assert!(started.elapsed() < Duration::from_secs(5));
        // The hook's environment: what the runner adds, never what it removes.
        let env = hook("echo ${HOME:-none} $EXTRA", None);
        let runs = r
            .run(
                &[&env],
                b"",
                &[("EXTRA".into(), "yes".into())],
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(runs[0].stdout, "none yes\n");
    }
}
