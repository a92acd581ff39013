//! Test helpers: real repositories made with the `git` CLI in temporary directories; every status is compared byte
//! for byte with `git --no-optional-locks status --short --ignore-submodules=dirty` run in the same directory, before
//! and after git refreshes the index, through each engine (the native one alone with 1, 3 or the default number of
//! walkers; the default with its fallback; the git CLI alone).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::status::Tuning;
use super::{Engine, GitEnv, GitOptions, GitSnapshot, snapshot_tuned};

/// An engine and its tuning.
#[derive(Debug, Clone, Copy)]
pub(super) struct Via(pub(super) Engine, pub(super) Option<usize>);

/// Every way of answering: the native engine alone (must not decline), the default, the git CLI alone.
pub(super) const ENGINES: [Via; 5] = [
    Via(Engine::Native, None),
    Via(Engine::Native, Some(1)),
    Via(Engine::Native, Some(3)),
    Via(Engine::Auto, None),
    Via(Engine::Cli, None),
];

/// For states the native engine declines: the default (which falls back) and the git CLI.
pub(super) const FALLBACK: [Via; 2] = [ENGINES[3], ENGINES[4]];

pub(super) struct Fixture {
    _tmp: tempfile::TempDir,
    pub(super) base: PathBuf,
    pub(super) home: PathBuf,
    pub(super) root: PathBuf,
}

impl Fixture {
    /// An empty work directory `base/work` (not a repository yet) and a `HOME` without a `.gitconfig`.
    pub(super) fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical tempdir");
        let home = base.join("home");
        let root = base.join("work");
        fs::create_dir_all(&home).expect("home");
        fs::create_dir_all(&root).expect("work");
        Self {
            _tmp: tmp,
            base,
            home,
            root,
        }
    }

    /// A repository on `branch` with `user.name` set (or not).
    pub(super) fn repo(branch: &str, user: Option<&str>) -> Self {
        let f = Self::new();
        f.git(&f.root, &["init", "-q", "-b", branch]);
        if let Some(user) = user {
            f.git(&f.root, &["config", "user.name", user]);
            f.git(&f.root, &["config", "user.email", "oracle@example.invalid"]);
        }
        f
    }

    #[allow(clippy::disallowed_methods)] // reason: tests compare with the real git CLI.
    pub(super) fn cmd(&self, cwd: &Path) -> Command {
        let mut c = super::command("git");
        c.current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("LANG", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", &self.base)
            .env("GIT_AUTHOR_NAME", "Oracle Tester")
            .env("GIT_AUTHOR_EMAIL", "oracle@example.invalid")
            .env("GIT_COMMITTER_NAME", "Oracle Tester")
            .env("GIT_COMMITTER_EMAIL", "oracle@example.invalid")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
        c
    }

    pub(super) fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.cmd(cwd).args(args).output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 git output")
    }

    pub(super) fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, content).expect("write");
    }

    pub(super) fn commit(&self, msg: &str) {
        self.git(&self.root, &["add", "-A"]);
        self.git(&self.root, &["commit", "-q", "--allow-empty", "-m", msg]);
    }

    #[allow(clippy::disallowed_methods)] // reason: the test's git child needs the process's PATH.
    pub(super) fn env(&self) -> GitEnv {
        GitEnv {
            ceiling_dirs: vec![self.base.clone()],
            home: Some(self.home.clone()),
            xdg_config_home: None,
            no_system_config: true,
            child_vars: vec![
                ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
                ("LANG".into(), "C".into()),
                ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
                ("GIT_CEILING_DIRECTORIES".into(), self.base.clone().into()),
            ],
        }
    }

    pub(super) fn opts(&self) -> GitOptions {
        GitOptions {
            status_timeout: Duration::from_secs(60),
            ..GitOptions::new(self.env())
        }
    }

    pub(super) fn snap_with(&self, cwd: &Path, via: Via) -> GitSnapshot {
        let opts = GitOptions {
            engine: via.0,
            ..self.opts()
        };
        match snapshot_tuned(cwd, &opts, Tuning { workers: via.1 }) {
            Ok(Some(s)) => s,
            other => panic!("no snapshot in {}: {other:?}", cwd.display()),
        }
    }

    pub(super) fn snap(&self) -> GitSnapshot {
        self.snap_with(&self.root, ENGINES[3])
    }

    /// What the reference CLI runs (it does not refresh the index).
    pub(super) fn git_status(&self, cwd: &Path) -> Vec<String> {
        let out = self.git(
            cwd,
            &[
                "--no-optional-locks",
                "status",
                "--short",
                "--ignore-submodules=dirty",
            ],
        );
        out.lines().map(str::to_owned).collect()
    }

    fn check(&self, cwd: &Path, engines: &[Via], git: &[String], when: &str) {
        for via in engines {
            let s = self.snap_with(cwd, *via);
            assert_eq!(
                s.status_problem, None,
                "engine {via:?}, {when}: no status (git says {git:?})"
            );
            assert_eq!(s.status_lines, git, "engine {via:?}, {when}");
        }
    }

    /// Our status equals git's, through every engine in `engines`, before and after git refreshes the index.
    pub(super) fn assert_status_with(&self, cwd: &Path, engines: &[Via]) -> Vec<String> {
        let git = self.git_status(cwd);
        self.check(cwd, engines, &git, "before git's refresh");
        self.git(cwd, &["status", "--short"]); // writes the refreshed index
        let git = self.git_status(cwd);
        self.check(cwd, engines, &git, "after git's refresh");
        git
    }

    pub(super) fn assert_status(&self, cwd: &Path) -> Vec<String> {
        self.assert_status_with(cwd, &ENGINES)
    }

    /// The native engine declines (saying why, with `why` in it) and the git CLI answers, equal to git.
    pub(super) fn assert_git_answers(&self, cwd: &Path, why: &str) -> Vec<String> {
        let s = self.snap_with(cwd, FALLBACK[0]);
        let declined = s.status_declined.unwrap_or_default();
        assert!(declined.contains(why), "declined for {why:?}: {declined:?}");
        self.assert_status_with(cwd, &FALLBACK)
    }
}

pub(super) fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The block with each commit hash replaced by `{HASH}`, as the conformance runner compares it.
pub(super) fn normalize_hashes(block: &str) -> String {
    let (head, tail) = block
        .split_once("Recent commits:\n")
        .expect("commits section");
    let (commits, rest) = tail.split_once("\n\n").expect("end of commits");
    let commits: Vec<String> = commits
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((h, s)) if h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                format!("{{HASH}} {s}")
            }
            _ => l.to_owned(),
        })
        .collect();
    format!("{head}Recent commits:\n{}\n\n{rest}", commits.join("\n"))
}

pub(super) const BLOCK_HEAD: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status at the start of the conversation. Note that this status is a snapshot in time, and will not update during the conversation.\n\n";

pub(super) const BLOCK_TAIL: &str = "\n\nClaude Code attached this context automatically; it isn't part of the user's message. It describes the user's own account and workspace, so they don't need it reported back.\n</system-reminder>";
