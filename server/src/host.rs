//! The host seam: environment variables, the clock and OS facts, read once at start and passed
//! down as plain data (like taplo's `Environment`).
//!
//! [`Host::from_process`] is the only code that reads the process environment, the wall clock or
//! `/proc` (`clippy.toml` forbids `std::env::var*` and `chrono::Local::now` elsewhere). Everything
//! below the command line and the language server takes a [`Host`] (or a plain struct built from
//! it: [`context::Options`](crate::context::Options), [`GitOptions`](crate::git::GitOptions)), so
//! a test builds one with [`Host::for_tests`] and nothing leaks in from the machine running it.
//!
//! Values that must never be shown (API keys) come out as [`Secret`]; `Host`'s `Debug` lists
//! variable names only.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::log::Secret;

/// The variables that hold a model key or token in the environments we read (`session::config`).
/// No child process gets them (git, Bash, hooks and filters they start), and the server's own
/// environment block loses them at start (see [`isolate_secrets`]). The one list.
pub const KEY_VARIABLES: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];

/// Where the date of the environment section comes from.
#[derive(Clone)]
pub enum Clock {
    /// The machine's local date, read when asked.
    System,
    /// A fixed `YYYY-MM-DD` (tests, reproducible previews).
    Fixed(String),
}

/// What the host says, read once.
#[derive(Clone)]
pub struct Host {
    /// `HOME`, when set and not empty.
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONTEXT_MANAGED_DIR`, default `/etc/claude-code`.
    pub managed_dir: PathBuf,
    /// `CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1`.
    pub load_additional_dirs: bool,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1`.
    pub disabled: bool,
    /// Not `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`.
    pub auto_memory: bool,
    /// `CLAUDE_CONTEXT_MEMORY_DIR`, unvalidated.
    pub memory_dir: Option<String>,
    /// `CLAUDE_CONFIG_DIR`: replaces `~/.claude` (the user's files, settings, `.claude.json`
    /// and memory folders).
    pub config_dir: Option<PathBuf>,
    /// `GIT_CEILING_DIRECTORIES`.
    pub git_ceilings: Vec<PathBuf>,
    /// What the git snapshot takes from the environment (ceilings, config locations, the
    /// variables of a `git` child process).
    pub git: crate::git::GitEnv,
    /// The file name of `SHELL` (`bash`), default `sh`.
    pub shell: String,
    /// The process's working directory at start.
    pub process_cwd: PathBuf,
    /// `linux`, `darwin`, `win32`, as the reference CLI names platforms.
    pub platform: String,
    /// `Linux 6.1.0-…` (the kernel release), else the platform.
    pub os_version: String,
    pub clock: Clock,
    /// Every variable of the process environment (valid UTF-8 ones), for settings that name a
    /// variable (the API key's). Never printed.
    vars: Arc<BTreeMap<String, String>>,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("home", &self.home)
            .field("managed_dir", &self.managed_dir)
            .field("process_cwd", &self.process_cwd)
            .field("platform", &self.platform)
            .field(
                "vars",
                &format_args!("{} variables (values hidden)", self.vars.len()),
            )
            .finish_non_exhaustive()
    }
}

impl Default for Host {
    fn default() -> Host {
        Host::from_vars(
            BTreeMap::new(),
            PathBuf::from("/"),
            "linux".into(),
            "linux".into(),
            Clock::Fixed("2026-01-01".into()),
        )
    }
}

/// `1`, `true`, `yes` (the reference CLI's truthy values).
fn truthy(v: Option<&str>) -> bool {
    matches!(v, Some("1" | "true" | "yes"))
}

/// The platform name the reference CLI uses for an OS.
fn platform_name(os: &str) -> String {
    match os {
        "macos" => "darwin".into(),
        "windows" => "win32".into(),
        other => other.into(),
    }
}

impl Host {
    /// Reads the process environment, the working directory and the OS release. Call once, in
    /// `main`.
    #[allow(clippy::disallowed_methods)] // reason: the one place that reads the process environment.
    pub fn from_process() -> Host {
        let vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v): (OsString, OsString)| {
                Some((k.into_string().ok()?, v.into_string().ok()?))
            })
            .collect();
        let platform = platform_name(std::env::consts::OS);
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| r.trim().to_string())
            .unwrap_or_default();
        let os_version = if release.is_empty() {
            platform.clone()
        } else {
            format!("Linux {release}")
        };
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Host::from_vars(vars, cwd, platform, os_version, Clock::System)
    }

    /// A host from explicit variables (tests; `from_process` after reading).
    pub fn from_vars(
        vars: BTreeMap<String, String>,
        process_cwd: PathBuf,
        platform: String,
        os_version: String,
        clock: Clock,
    ) -> Host {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let git_ceilings = get("GIT_CEILING_DIRECTORIES")
            .map(|v| {
                std::env::split_paths(v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let shell = get("SHELL")
            .and_then(|s| {
                Path::new(s)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "sh".into());
        Host {
            home: get("HOME").map(PathBuf::from),
            managed_dir: get("CLAUDE_CONTEXT_MANAGED_DIR")
                .map_or_else(|| PathBuf::from("/etc/claude-code"), PathBuf::from),
            load_additional_dirs: truthy(get("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD")),
            disabled: truthy(get("CLAUDE_CODE_DISABLE_CLAUDE_MDS")),
            auto_memory: !truthy(get("CLAUDE_CODE_DISABLE_AUTO_MEMORY")),
            memory_dir: get("CLAUDE_CONTEXT_MEMORY_DIR").map(str::to_string),
            config_dir: get("CLAUDE_CONFIG_DIR")
                .map(|d| crate::fs::normalize(&process_cwd, Path::new(d))),
            git_ceilings,
            // The git child (and the hooks and filters it runs) never gets a key.
            git: crate::git::GitEnv::from_vars(
                vars.iter()
                    .filter(|(k, _)| !KEY_VARIABLES.contains(&k.as_str()))
                    .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            ),
            shell,
            process_cwd,
            platform,
            os_version,
            clock,
            vars: Arc::new(vars),
        }
    }

    /// A host for tests: `home`, a managed directory below it, no other variable, a fixed date.
    pub fn for_tests(home: &Path) -> Host {
        let mut vars = BTreeMap::new();
        vars.insert("HOME".into(), home.display().to_string());
        vars.insert(
            "CLAUDE_CONTEXT_MANAGED_DIR".into(),
            home.join("managed").display().to_string(),
        );
        vars.insert("CLAUDE_CODE_DISABLE_AUTO_MEMORY".into(), "1".into());
        vars.insert("SHELL".into(), "/bin/sh".into());
        Host::from_vars(
            vars,
            home.to_path_buf(),
            "linux".into(),
            "Linux 6.1.0".into(),
            Clock::Fixed("2026-01-01".into()),
        )
    }

    /// A variable's value (empty counts as unset). Not for secrets: use [`Host::secret`].
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A variable holding a credential (an API key), wrapped so it cannot be logged.
    pub fn secret(&self, name: &str) -> Option<Secret> {
        self.var(name).map(|v| Secret::new(v.to_string()))
    }

    /// The current instant (timestamps of records and compactions). A fixed clock gives noon UTC
    /// of its date, so that records made under it stay on that date.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        match &self.clock {
            #[allow(clippy::disallowed_methods)] // reason: the clock seam.
            Clock::System => chrono::Utc::now(),
            Clock::Fixed(d) => chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(12, 0, 0))
                .map(|t| t.and_utc())
                .unwrap_or_default(),
        }
    }

    /// Today's local date, `YYYY-MM-DD`.
    pub fn today(&self) -> String {
        match &self.clock {
            #[allow(clippy::disallowed_methods)] // reason: the clock seam.
            Clock::System => chrono::Local::now().format("%Y-%m-%d").to_string(),
            Clock::Fixed(d) => d.clone(),
        }
    }

    /// An absolute, normalised path from a command-line argument.
    pub fn abs(&self, p: &Path) -> PathBuf {
        crate::fs::normalize(&self.process_cwd, p)
    }

    /// The working directory of a session in `cwd` as a shell would give it: `PWD` when it names
    /// the same directory (its real path is cwd's), else cwd's real path. Claude Code resolves
    /// cwd and counts a touched path through a link to it as under cwd only when `PWD` names that
    /// link (context.md section 1): the path given to `--cwd` alone does not.
    pub fn session_dir(&self, fs: &dyn crate::fs::Fs, cwd: &Path) -> PathBuf {
        let real = fs.canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        match self.var("PWD").map(Path::new) {
            Some(pwd) if pwd.is_absolute() && fs.canonicalize(pwd).is_ok_and(|r| r == real) => {
                crate::fs::normalize(Path::new("/"), pwd)
            }
            _ => real,
        }
    }

    /// How git finds the repository and its configuration, from this host (git reads no
    /// environment variable itself when given these).
    pub fn git_options(&self) -> crate::git::GitOptions {
        crate::git::GitOptions::new(self.git.clone())
    }

    /// The walk's options for a session in `cwd`; `memory_dir` (a setting or an argument)
    /// overrides `CLAUDE_CONTEXT_MEMORY_DIR`. The error names what is wrong with the directory.
    pub fn context_options(
        &self,
        cwd: &Path,
        add_dirs: &[PathBuf],
        memory_dir: Option<&str>,
    ) -> Result<crate::context::Options, String> {
        let memory_dir = match memory_dir.or(self.memory_dir.as_deref()) {
            Some(raw) => Some(crate::memory::validate_dir(raw)?),
            None => None,
        };
        Ok(crate::context::Options {
            cwd: cwd.to_path_buf(),
            home: self.home.clone(),
            managed_dir: self.managed_dir.clone(),
            additional_dirs: add_dirs.to_vec(),
            load_additional_dirs: self.load_additional_dirs,
            disabled: self.disabled,
            memory_dir,
            auto_memory: self.auto_memory,
            config_dir: self.config_dir.clone(),
            git_ceilings: self.git_ceilings.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(pairs: &[(&str, &str)]) -> Host {
        let vars = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Host::from_vars(
            vars,
            "/w".into(),
            "linux".into(),
            "Linux 6".into(),
            Clock::Fixed("2026-02-03".into()),
        )
    }

    #[test]
    fn variables_are_read_as_the_reference_cli_reads_them() {
        let h = host(&[
            ("HOME", "/home/me"),
            ("SHELL", "/usr/bin/zsh"),
            ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1"),
            ("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "0"),
            ("GIT_CEILING_DIRECTORIES", "/a::/b"),
            ("GIT_CONFIG_NOSYSTEM", "On"),
            ("CLAUDE_CONTEXT_MEMORY_DIR", ""),
        ]);
        assert_eq!(h.home.as_deref(), Some(Path::new("/home/me")));
        assert_eq!(h.shell, "zsh");
        assert!(!h.auto_memory && !h.disabled);
        assert_eq!(h.git_ceilings, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(h.git.no_system_config);
        assert_eq!(h.memory_dir, None, "empty is unset");
        assert_eq!(h.managed_dir, PathBuf::from("/etc/claude-code"));
        assert_eq!(h.today(), "2026-02-03");
        let g = h.git_options();
        assert_eq!(g.env.home.as_deref(), Some(Path::new("/home/me")));
        assert!(g.env.no_system_config);
        assert_eq!(
            g.env.ceiling_dirs,
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }

    /// `PWD` plays its role only when it names cwd; `--cwd` through a link alone does not.
    #[test]
    fn session_dir_follows_pwd_as_the_reference_cli_does() {
        let fs = crate::fs::MemFs::with_files([("/w/repo/x", "")]);
        fs.symlink("/w/alias", "repo");
        let h = host(&[("PWD", "/w/alias")]);
        assert_eq!(
            h.session_dir(&fs, Path::new("/w/alias")),
            Path::new("/w/alias")
        );
        assert_eq!(
            h.session_dir(&fs, Path::new("/w/repo")),
            Path::new("/w/alias")
        );
        let h = host(&[("PWD", "/w")]);
        assert_eq!(
            h.session_dir(&fs, Path::new("/w/alias")),
            Path::new("/w/repo")
        );
        let h = host(&[]);
        assert_eq!(
            h.session_dir(&fs, Path::new("/w/alias")),
            Path::new("/w/repo")
        );
    }

    #[test]
    fn debug_hides_values() {
        let h = host(&[("ANTHROPIC_API_KEY", "sk-ant-api03-secretvalue")]);
        let shown = format!("{h:?}");
        assert!(!shown.contains("secretvalue"), "{shown}");
        let key = h.secret("ANTHROPIC_API_KEY").unwrap();
        assert_eq!(key.expose(), "sk-ant-api03-secretvalue");
        assert!(!format!("{key:?} {key}").contains("secretvalue"));
    }
}
