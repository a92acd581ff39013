//! The one place that starts processes: [`command`] (any program) and [`git`] (the git CLI with the snapshot's
//! environment), and [`run`], which bounds a child by a deadline and a stop flag and kills its whole process group
//! when either passes.
//!
//! Keeping every spawn here lets a `clippy.toml` `disallowed-methods` rule on `std::process::Command::new` allow
//! exactly this module.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use super::env::GitEnv;

/// How much of a child's stderr is kept for an error message.
const STDERR_KEPT: usize = 4096;

/// A command for `program`. Every process the crate starts is made here.
#[allow(clippy::disallowed_methods)] // reason: the one place that starts processes (clippy.toml).
pub fn command(program: impl AsRef<OsStr>) -> Command {
    Command::new(program)
}

/// The git CLI, run in `cwd` with only the variables of `env` (plus its `HOME` and `XDG_CONFIG_HOME`), and the
/// options every snapshot command shares: `--no-optional-locks` (never write the index), no fsmonitor hook (it
/// changes nothing in the output and runs a command from the repository's config), no pager, no prompt.
pub(super) fn git(env: &GitEnv, cwd: &Path) -> Command {
    let mut c = command("git");
    c.current_dir(cwd).env_clear();
    for (k, v) in &env.child_vars {
        // A variable holding a model key (whatever its name: `chat.keyVariable` names any)
        // never reaches git, nor the hooks and filters it runs.
        if crate::log::holds_secret(&v.to_string_lossy()) {
            continue;
        }
        c.env(k, v);
    }
    if let Some(home) = &env.home {
        c.env("HOME", home);
    }
    if let Some(xdg) = &env.xdg_config_home {
        c.env("XDG_CONFIG_HOME", xdg);
    }
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .args([
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "color.ui=false",
            "-c",
            "color.status=false",
        ]);
    c
}

/// Why [`run`] has no output.
#[derive(Debug)]
pub(super) enum RunError {
    /// The program could not start (not installed, not executable).
    Spawn(std::io::Error),
    /// The deadline passed; the child was killed.
    TimedOut,
    /// The stop flag was raised; the child was killed.
    Stopped,
    /// It exited with a failure; `stderr` is its first lines.
    Failed { status: ExitStatus, stderr: String },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "could not run git: {e}"),
            RunError::TimedOut => f.write_str("git did not finish in time and was stopped"),
            RunError::Stopped => f.write_str("git was stopped"),
            RunError::Failed { status, stderr } => {
                let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                match (status.code(), first.is_empty()) {
                    (Some(code), true) => write!(f, "git exited with status {code}"),
                    (Some(code), false) => write!(f, "git exited with status {code}: {first}"),
                    (None, true) => f.write_str("git was killed by a signal"),
                    (None, false) => write!(f, "git was killed by a signal: {first}"),
                }
            }
        }
    }
}

/// Runs `cmd` to completion and returns its standard output, unless `deadline` passes or `stop` is raised first:
/// then the child and everything it started are killed (Unix: its own process group) and reaped before this returns.
pub(super) fn run(
    mut cmd: Command,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<Vec<u8>, RunError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        kill(&mut child);
        return Err(RunError::Spawn(std::io::Error::other("no pipes to git")));
    };
    let child = Arc::new(Mutex::new(child));
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    let tx_err = tx.clone();
    let readers = [
        thread::Builder::new()
            .name("git-cli-stdout".into())
            .spawn(move || {
                let mut buf = Vec::new();
                let _ = out.read_to_end(&mut buf);
                let _ = tx.send((true, buf));
            }),
        thread::Builder::new()
            .name("git-cli-stderr".into())
            .spawn(move || {
                let mut buf = Vec::new();
                let _ = (&mut err).take(STDERR_KEPT as u64).read_to_end(&mut buf);
                let _ = std::io::copy(&mut err, &mut std::io::sink());
                let _ = tx_err.send((false, buf));
            }),
    ];
    let mut readers_ok = Vec::new();
    for r in readers {
        match r {
            Ok(h) => readers_ok.push(h),
            Err(e) => {
                kill(&mut lock(&child));
                return Err(RunError::Spawn(e));
            }
        }
    }
    let (mut stdout, mut stderr) = (None, None);
    let outcome = loop {
        if stdout.is_some() && stderr.is_some() {
            break None;
        }
        if stop.load(Ordering::Relaxed) {
            break Some(RunError::Stopped);
        }
        let now = Instant::now();
        if now >= deadline {
            break Some(RunError::TimedOut);
        }
        // Short waits so that a raised stop flag is seen quickly.
        let wait = (deadline - now).min(Duration::from_millis(20));
        match rx.recv_timeout(wait) {
            Ok((true, b)) => stdout = Some(b),
            Ok((false, b)) => stderr = Some(b),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
        }
    };
    let status = {
        let mut c = lock(&child);
        if outcome.is_some() {
            kill(&mut c);
        }
        c.wait()
    };
    for h in readers_ok {
        let _ = h.join();
    }
    if let Some(e) = outcome {
        return Err(e);
    }
    let status = status.map_err(RunError::Spawn)?;
    let stderr = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(RunError::Failed { status, stderr });
    }
    Ok(stdout.unwrap_or_default())
}

fn lock(child: &Mutex<Child>) -> std::sync::MutexGuard<'_, Child> {
    child
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills a child that has not been reaped (so its pid, and the group it leads, cannot have been reused).
fn kill(child: &mut Child) {
    if !matches!(child.try_wait(), Ok(None)) {
        return;
    }
    #[cfg(unix)]
    {
        let pid = rustix::process::Pid::from_child(child);
        if rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_ok() {
            return;
        }
    }
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_failures() {
        let never = AtomicBool::new(false);
        let far = Instant::now() + Duration::from_secs(30);
        let mut c = command("sh");
        c.args(["-c", "printf out; printf err >&2"]);
        assert_eq!(run(c, far, &never).expect("runs"), b"out");
        let mut c = command("sh");
        c.args(["-c", "echo 'fatal: broken' >&2; exit 3"]);
        let e = run(c, far, &never).expect_err("fails");
        assert_eq!(e.to_string(), "git exited with status 3: fatal: broken");
        let e = run(command("/nonexistent/program"), far, &never).expect_err("cannot spawn");
        assert!(matches!(e, RunError::Spawn(_)), "{e:?}");
    }

    #[test]
    fn git_never_gets_a_variable_holding_a_key() {
        let _ = crate::log::Secret::new("sk-test-git-child-0123456789".to_string());
        let env = GitEnv {
            child_vars: vec![
                ("MY_KEY".into(), "sk-test-git-child-0123456789".into()),
                ("PATH".into(), "/usr/bin:/bin".into()),
            ],
            ..GitEnv::default()
        };
        let c = git(&env, Path::new("/"));
        let names: Vec<_> = c.get_envs().map(|(k, _)| k.to_owned()).collect();
        assert!(names.iter().any(|k| k == "PATH"), "{names:?}");
        assert!(!names.iter().any(|k| k == "MY_KEY"), "{names:?}");
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_with_its_children() {
        let never = AtomicBool::new(false);
        let mut c = command("sh");
        // The grandchild keeps the pipe open: only killing the group ends it.
        c.args(["-c", "sleep 30 & sleep 30"]);
        let t = Instant::now();
        let e = run(c, Instant::now() + Duration::from_millis(200), &never).expect_err("times out");
        assert!(matches!(e, RunError::TimedOut), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn a_raised_stop_flag_kills_the_child() {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let raiser = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            s.store(true, Ordering::Relaxed);
        });
        let mut c = command("sleep");
        c.arg("30");
        let t = Instant::now();
        let e = run(c, Instant::now() + Duration::from_secs(60), &stop).expect_err("stopped");
        assert!(matches!(e, RunError::Stopped), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(5));
        raiser.join().expect("raiser");
    }
}
