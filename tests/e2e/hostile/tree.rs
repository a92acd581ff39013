//! The suite's harness: a project tree in a temp dir (`tmp/home`, `tmp/managed`, `tmp/p`), the
//! real binary run on it under a watchdog, and what each run cost (wall time, peak resident
//! memory) and printed.
//!
//! The binary is the one cargo built for this test target; `HOSTILE_BIN=/path/to/claude-context`
//! runs the suite against another build (to show that a test fails on the code before a fix).

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A run that takes longer than this is a hang: the child is killed and the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The binary under test.
pub fn bin() -> PathBuf {
    std::env::var_os("HOSTILE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-context")))
}

/// A time bound given for an optimised build on a loaded 2-core machine, stretched for a debug
/// build (which is 2 to 4 times slower on these trees: most of the time is system calls and
/// optimised dependencies). Bounds stay far below what quadratic code takes on the same tree.
pub fn time_budget(release: Duration) -> Duration {
    if cfg!(debug_assertions) {
        release * 4
    } else {
        release
    }
}

/// `tmp/home`, `tmp/managed` (empty), `tmp/p` (the project, cwd of every run).
pub struct Tree {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub managed: PathBuf,
    pub root: PathBuf,
    /// Run the binary as `nobody` (see [`Tree::drop_privileges`]).
    as_nobody: bool,
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().expect("temp dir");
        let home = tmp.path().join("home");
        let managed = tmp.path().join("managed");
        let root = tmp.path().join("p");
        for d in [&home, &managed, &root] {
            fs::create_dir_all(d).expect("mkdir");
        }
        Tree {
            tmp,
            home,
            managed,
            root,
            as_nobody: false,
        }
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(&p, bytes).expect("write");
        p
    }

    pub fn symlink(&self, target: &str, rel: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, &p).expect("symlink");
    }

    /// `mkfifo`; false (and a note) when the tool or the file system cannot make one.
    pub fn fifo(&self, rel: impl AsRef<Path>) -> bool {
        mkfifo(&self.path(rel))
    }

    /// `~/.claude.json` approving external includes for this project.
    pub fn approve_external_includes(&self) {
        let json = serde_json::json!({
            "projects": { self.root.to_string_lossy(): { "hasClaudeMdExternalIncludesApproved": true } }
        });
        fs::write(self.home.join(".claude.json"), json.to_string()).expect("write ~/.claude.json");
    }

    /// As root, `chmod 000` does not stop reads, so the unreadable-directory test would test
    /// nothing. When `setpriv` can run the binary as `nobody`, open the temp tree to others and
    /// do that; returns whether it did.
    pub fn drop_privileges(&mut self) -> bool {
        let probe = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin())
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !probe.is_ok_and(|s| s.success()) {
            return false;
        }
        for d in [self.tmp.path(), &self.home, &self.managed, &self.root] {
            chmod(d, 0o755);
        }
        self.as_nobody = true;
        true
    }

    /// The binary with `args`, a clean environment (HOME and the managed directory in the tree,
    /// no system git config, git discovery stopped at the temp dir), run in the project.
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(bin());
            c
        } else {
            Command::new(bin())
        };
        let ceiling = self.tmp.path().parent().expect("temp dir has a parent");
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("HOME", &self.home)
            .env("CLAUDE_CONTEXT_MANAGED_DIR", &self.managed)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", ceiling)
            .current_dir(&self.root);
        cmd
    }

    /// `preview --json --no-git --cwd ROOT [args]`: must exit 0 with one JSON object.
    pub fn preview(&self, args: &[&str]) -> Preview {
        self.preview_in(&self.root, args)
    }

    /// `preview --json --no-git --cwd CWD [args]`: must exit 0 with one JSON object.
    pub fn preview_in(&self, cwd: &Path, args: &[&str]) -> Preview {
        let mut all: Vec<&OsStr> = vec![
            "preview".as_ref(),
            "--json".as_ref(),
            "--no-git".as_ref(),
            "--cwd".as_ref(),
            cwd.as_os_str(),
        ];
        all.extend(args.iter().map(OsStr::new));
        let run = run(self.command(&all));
        assert_eq!(
            run.code,
            Some(0),
            "preview must exit 0 (no crash); stderr:\n{}",
            run.stderr
        );
        let json: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("preview --json printed no JSON ({e}):\n{}", run.stdout));
        Preview { json, run }
    }

    /// `preview --no-git --cwd ROOT` as a table; must exit 0.
    pub fn preview_table(&self) -> Run {
        let run = run(self.command(&[
            "preview".as_ref(),
            "--no-git".as_ref(),
            "--cwd".as_ref(),
            self.root.as_os_str(),
        ]));
        assert_eq!(run.code, Some(0), "preview: stderr:\n{}", run.stderr);
        run
    }

    /// `check --cwd ROOT`: exit 0 or 1, never 2 or a signal.
    pub fn check(&self) -> Run {
        self.check_in(&self.root, &[])
    }

    /// `check --cwd CWD [args]`: exit 0 or 1, never 2 or a signal.
    pub fn check_in(&self, cwd: &Path, args: &[&str]) -> Run {
        let mut all: Vec<&OsStr> = vec!["check".as_ref(), "--cwd".as_ref(), cwd.as_os_str()];
        all.extend(args.iter().map(OsStr::new));
        let run = run(self.command(&all));
        assert!(
            matches!(run.code, Some(0 | 1)),
            "check must exit 0 or 1 (exit {:?}); stdout:\n{}\nstderr:\n{}",
            run.code,
            run.stdout,
            run.stderr
        );
        run
    }
}

pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `mkfifo PATH`; false (and a note) when the tool or the file system cannot make one.
pub fn mkfifo(p: &Path) -> bool {
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    let ok = Command::new("mkfifo")
        .arg(p)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "mkfifo {} failed: FIFO part of this test skipped",
            p.display()
        );
    }
    ok
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Peak resident set (VmHWM) seen while polling the child every millisecond, in KB; `None`
    /// when it exited before the first sample (too soon to have grown).
    pub peak_rss_kb: Option<u64>,
    /// User plus system CPU time, from the last sample of `/proc/PID/stat` before the child
    /// exited (clock ticks of 10 ms); `None` when it exited before the first sample.
    pub cpu: Option<Duration>,
}

impl Run {
    /// Asserts the run took less than `budget` (see [`time_budget`]), by the smaller of its wall
    /// time and its CPU time: a loaded machine stretches the wall time and leaves the CPU time
    /// alone, a parallel walk does the opposite; the super-linear blow-ups these bounds guard
    /// against grow both.
    pub fn assert_faster_than(&self, budget: Duration, what: &str) {
        let took = self.cpu.map_or(self.elapsed, |cpu| cpu.min(self.elapsed));
        assert!(
            took < budget,
            "{what}: took {took:?} (wall {:?}, CPU {:?}), the bound is {budget:?}",
            self.elapsed,
            self.cpu
        );
    }

    /// Asserts the peak resident memory stayed below `mb` megabytes.
    pub fn assert_peak_below_mb(&self, mb: u64, what: &str) {
        if let Some(kb) = self.peak_rss_kb {
            assert!(
                kb < mb * 1024,
                "{what}: peak RSS {} MB, the bound is {mb} MB",
                kb / 1024
            );
        }
    }
}

/// Runs `cmd` under the watchdog: killed and failed after [`TIMEOUT`].
pub fn run(cmd: Command) -> Run {
    run_with(cmd, TIMEOUT)
}

/// Runs `cmd` under a watchdog of `timeout`: the child is killed and the test fails after it.
pub fn run_with(cmd: Command, timeout: Duration) -> Run {
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    try_run_with(cmd, timeout)
        .unwrap_or_else(|| panic!("no hang: {args:?} still running after {timeout:?}; killed"))
}

/// Runs `cmd` under a watchdog of `timeout`; `None` when it had to be killed.
pub fn try_run_with(mut cmd: Command, timeout: Duration) -> Option<Run> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn claude-context");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let status_file = format!("/proc/{}/status", child.id());
    let stat_file = format!("/proc/{}/stat", child.id());
    let mut peak_rss_kb = None;
    let mut cpu = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if let Some(kb) = vm_hwm_kb(&status_file) {
            peak_rss_kb = Some(peak_rss_kb.map_or(kb, |p: u64| p.max(kb)));
        }
        if let Some(t) = cpu_time(&stat_file) {
            cpu = Some(t);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    Some(Run {
        code: status.code(),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        elapsed: start.elapsed(),
        peak_rss_kb,
        cpu,
    })
}

/// utime + stime of `/proc/PID/stat` (fields 14 and 15, after the command name in parentheses).
fn cpu_time(stat_file: &str) -> Option<Duration> {
    let text = fs::read_to_string(stat_file).ok()?;
    let mut fields = text.get(text.rfind(')')? + 2..)?.split_whitespace();
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

fn vm_hwm_kb(status_file: &str) -> Option<u64> {
    let text = fs::read_to_string(status_file).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub struct Preview {
    pub json: Value,
    pub run: Run,
}

impl Preview {
    pub fn files(&self) -> &[Value] {
        self.json["files"].as_array().expect("files[]")
    }

    pub fn findings(&self) -> &[Value] {
        self.json["findings"].as_array().expect("findings[]")
    }

    /// Records for `path`, in order.
    pub fn records(&self, path: &Path) -> Vec<&Value> {
        self.files()
            .iter()
            .filter(|f| f["path"].as_str() == Some(&*path.to_string_lossy()))
            .collect()
    }

    /// Asserts exactly one record for `path` with status `loaded`.
    pub fn assert_loaded(&self, path: &Path) {
        let loaded = self
            .records(path)
            .iter()
            .filter(|r| r["status"] == "loaded")
            .count();
        assert_eq!(
            loaded,
            1,
            "{} should be loaded once; files: {:#}",
            path.display(),
            self.json["files"]
        );
    }

    /// Asserts a skipped record for `path` whose reason contains `why`.
    pub fn assert_skipped(&self, path: &Path, why: &str) {
        let found = self.records(path).iter().any(|r| {
            r["status"] == "skipped" && r["reason"].as_str().is_some_and(|m| m.contains(why))
        });
        assert!(
            found,
            "no skipped record for {} saying {why:?}; files: {:#}",
            path.display(),
            self.json["files"]
        );
    }

    /// Asserts a finding on `path` with `code` whose message contains `why`; returns it.
    pub fn assert_finding(&self, path: &Path, code: &str, why: &str) -> &Value {
        self.findings()
            .iter()
            .find(|f| {
                f["path"].as_str() == Some(&*path.to_string_lossy())
                    && f["code"] == code
                    && f["message"].as_str().is_some_and(|m| m.contains(why))
            })
            .unwrap_or_else(|| {
                panic!(
                    "no {code} finding on {} saying {why:?}; findings: {:#}",
                    path.display(),
                    self.json["findings"]
                )
            })
    }

    /// The instructions block's text.
    pub fn instructions(&self) -> String {
        self.json["blocks"]
            .as_array()
            .expect("blocks[]")
            .iter()
            .find(|b| b["kind"] == "instructions")
            .and_then(|b| b["text"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// Asserts `check` printed a line naming `file` (as shown, relative to the project) and `why`.
pub fn assert_check_line(run: &Run, file: &str, why: &str) {
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with(file) && l.contains(why)),
        "check should print a line for {file} saying {why:?}; got:\n{}",
        run.stdout
    );
}
