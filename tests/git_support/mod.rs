//! Shared by the git test targets: real repositories made with the git CLI in temp dirs, and the oracle, which is
//! exactly what the reference CLI runs (`git --no-optional-locks status --short --ignore-submodules=dirty`).
#![allow(dead_code)] // reason: each test target uses part of it.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use claude_context::git::{self, Engine, GitEnv, GitError, GitOptions, GitSnapshot, StatusEngine};

pub const BIN: &str = env!("CARGO_BIN_EXE_claude-context");

/// A temp dir with a `home/` (no `.gitconfig` unless a test writes one) and a work tree `work/`.
pub struct Repo {
    pub tmp: tempfile::TempDir,
    pub base: PathBuf,
    pub home: PathBuf,
    pub root: PathBuf,
}

impl Repo {
    pub fn bare_dirs() -> Repo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical tempdir");
        let home = base.join("home");
        let root = base.join("work");
        fs::create_dir_all(&home).expect("home");
        fs::create_dir_all(&root).expect("work");
        Repo {
            tmp,
            base,
            home,
            root,
        }
    }

    /// A repository on `main` with a user.
    pub fn new() -> Repo {
        let r = Repo::bare_dirs();
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["config", "user.name", "Tester"]);
        r.git(&["config", "user.email", "t@example.invalid"]);
        r
    }

    /// The variables every git child gets (a fixed, private environment).
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("LANG".into(), "C".into()),
            ("HOME".into(), self.home.clone().into()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CEILING_DIRECTORIES".into(), self.base.clone().into()),
            ("GIT_AUTHOR_NAME".into(), "Tester".into()),
            ("GIT_AUTHOR_EMAIL".into(), "t@example.invalid".into()),
            ("GIT_COMMITTER_NAME".into(), "Tester".into()),
            ("GIT_COMMITTER_EMAIL".into(), "t@example.invalid".into()),
            ("GIT_AUTHOR_DATE".into(), "2026-01-01T00:00:00Z".into()),
            ("GIT_COMMITTER_DATE".into(), "2026-01-01T00:00:00Z".into()),
        ]
    }

    pub fn cmd(&self, cwd: &Path) -> Command {
        let mut c = git::command("git");
        c.current_dir(cwd).env_clear().envs(self.vars());
        c
    }

    /// Runs git in `cwd`; panics with its stderr when it fails.
    pub fn git_in(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.cmd(cwd).args(args).output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.root, args)
    }

    /// Runs git; returns whether it succeeded.
    pub fn try_git(&self, args: &[&str]) -> bool {
        self.cmd(&self.root)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, content).expect("write");
    }

    pub fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
    }

    pub fn opts(&self, engine: Engine) -> GitOptions {
        GitOptions {
            status_timeout: Duration::from_secs(60),
            engine,
            ..GitOptions::new(GitEnv::from_vars(self.vars()))
        }
    }

    pub fn snapshot_in(&self, cwd: &Path, engine: Engine) -> Result<Option<GitSnapshot>, GitError> {
        git::snapshot(cwd, &self.opts(engine))
    }

    pub fn snap_in(&self, cwd: &Path, engine: Engine) -> GitSnapshot {
        match self.snapshot_in(cwd, engine) {
            Ok(Some(s)) => s,
            other => panic!("no snapshot in {}: {other:?}", cwd.display()),
        }
    }

    /// The reference: what the reference CLI runs, which does not refresh the index.
    pub fn oracle(&self, cwd: &Path) -> Vec<String> {
        self.git_in(
            cwd,
            &[
                "--no-optional-locks",
                "status",
                "--short",
                "--ignore-submodules=dirty",
            ],
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Our status (default engine) equals git's in `cwd`, before and after git refreshes the index; returns git's
    /// lines and which engine answered before the refresh. After it, the engine may differ: an entry git just
    /// refreshed can be racily clean or not depending on the second the index was written in, and a racily clean
    /// entry that needs end-of-line conversion sends the status to git.
    pub fn check_in(&self, cwd: &Path) -> (Vec<String>, StatusEngine) {
        let mut engines = Vec::new();
        let mut lines = Vec::new();
        for when in [
            "before git refreshes the index",
            "after git refreshes the index",
        ] {
            let want = self.oracle(cwd);
            let s = self.snap_in(cwd, Engine::Auto);
            assert_eq!(
                s.status_problem, None,
                "{when}: no status; git says {want:?}"
            );
            assert_eq!(s.status_lines, want, "{when}");
            engines.push(s.status_engine.expect("an engine answered"));
            lines = want;
            self.git_in(cwd, &["status", "--short"]); // writes the refreshed index
        }
        (lines, engines[0])
    }

    pub fn check(&self) -> (Vec<String>, StatusEngine) {
        self.check_in(&self.root)
    }
}

pub fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The names of this process's threads that start with `prefix` (Linux: `/proc/self/task/*/comm`).
pub fn threads_named(prefix: &str) -> usize {
    fs::read_dir("/proc/self/task")
        .map(|rd| {
            rd.flatten()
                .filter(|t| {
                    fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim_end().starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}
