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

pub mod reaper;

/// The variables that hold a model key or token in the environments we read (`session::config`).
/// No child process gets them (git, Bash, hooks and filters they start), and the server's own
/// environment block loses them at start (see [`isolate_secrets`]). The one list.
pub const KEY_VARIABLES: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];

/// Set in the environment of the process [`isolate_secrets`] re-executes: the number of the
/// inherited descriptor the moved variables come on. Never passed to a child.
pub const SECRETS_FD_VARIABLE: &str = "CLAUDE_CONTEXT_SECRETS_FD";

/// The most bytes of moved variables passed over the pipe (it is written before the exec, so it
/// must fit in the pipe's buffer: 16 KB on macOS, 64 KB on Linux).
const MAX_MOVED_BYTES: usize = 8 * 1024;

/// Takes the model's key out of the process's environment block, where any same-user program
/// could read it (`/proc/<pid>/environ`, `ps eww`): when a [`KEY_VARIABLES`] variable is set
/// (or another holding the same value), the process executes itself again, same arguments, with
/// those variables removed from the environment, and their values written to a pipe whose read
/// end is the only descriptor passed on ([`SECRETS_FD_VARIABLE`] names it).
/// [`Host::from_process`] in the new process reads them back into memory. `unsafe_code` is
/// forbidden, so removing a variable in place (`std::env::remove_var`, unsafe in edition 2024)
/// is not an option; the re-exec gives the new image a new environment block.
///
/// Call first thing in `main`, before any thread starts. Returns (does nothing) in the
/// re-executed process, when no key is set, and when the exec fails (then with a warning: the key
/// stays in the environment block, and child processes still never get it).
#[allow(clippy::disallowed_methods)] // reason: the host seam reads the environment; the re-exec is the one place a process replaces itself.
pub fn isolate_secrets() {
    #[cfg(unix)]
    {
        if std::env::var_os(SECRETS_FD_VARIABLE).is_some() {
            return;
        }
        let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let values: Vec<&OsString> = vars
            .iter()
            .filter(|(k, v)| KEY_VARIABLES.iter().any(|n| k == n) && !v.is_empty())
            .map(|(_, v)| v)
            .collect();
        if values.is_empty() {
            return;
        }
        // The key variables, and copies of their values under other names.
        let moved: Vec<&(OsString, OsString)> = vars
            .iter()
            .filter(|(k, v)| {
                KEY_VARIABLES.iter().any(|n| k == n) || (v.len() >= 8 && values.contains(&v))
            })
            .collect();
        if let Err(e) = reexec_without(&moved) {
            crate::log_warn!(
                "the API key stays in this process's environment (re-executing without it failed: {e})"
            );
        }
    }
}

#[cfg(unix)]
#[allow(clippy::disallowed_methods)] // reason: the process replaces itself (exec), it starts no other (clippy.toml).
fn reexec_without(moved: &[&(OsString, OsString)]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let mut payload = Vec::new();
    for (k, v) in moved {
        payload.extend_from_slice(k.as_bytes());
        payload.push(b'=');
        payload.extend_from_slice(v.as_bytes());
        payload.push(0);
    }
    if payload.len() > MAX_MOVED_BYTES {
        return Err(std::io::Error::other("the key variables are too long"));
    }
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(&payload)?;
    drop(writer);
    // The read end survives the exec; every other descriptor std made is close-on-exec.
    rustix::io::fcntl_setfd(&reader, rustix::io::FdFlags::empty())?;
    // The running binary by its name (so `ps` still shows `claude-context`); when that file is
    // gone (replaced by an upgrade), the running image itself.
    let exe = match std::env::current_exe() {
        Ok(p) if p.is_file() => p,
        _ if cfg!(target_os = "linux") => PathBuf::from("/proc/self/exe"),
        other => other?,
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        cmd.arg0(arg0);
    }
    cmd.args(args)
        .env(SECRETS_FD_VARIABLE, reader.as_raw_fd().to_string());
    for (k, _) in moved {
        cmd.env_remove(k);
    }
    Err(cmd.exec())
}

/// In the re-executed process: the variables [`isolate_secrets`] moved, read from the inherited
/// pipe (then marked close-on-exec with every other inherited descriptor, so no child gets it).
#[cfg(unix)]
fn moved_secrets(fd: &str) -> Vec<(String, String)> {
    use std::io::Read;
    let Ok(n) = fd.parse::<i32>() else {
        return Vec::new();
    };
    if n < 3 {
        return Vec::new();
    }
    // Descriptors inherited from whoever started us (the editor's leaks, the pipe) stay ours.
    close_fds::set_fds_cloexec(3, &[]);
    let mut bytes = Vec::new();
    let read = std::fs::File::open(format!("/dev/fd/{n}"))
        .and_then(|f| f.take(MAX_MOVED_BYTES as u64).read_to_end(&mut bytes));
    if read.is_err() {
        return Vec::new();
    }
    bytes
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = std::str::from_utf8(kv).ok()?;
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// A process that holds a key is made non-dumpable, as ssh-agent is: other programs of the same
/// user (a command the model runs) cannot read its memory or environment through `/proc/<pid>/`
/// (`mem`, `environ`) nor attach a debugger. Root still can.
pub fn protect_memory() {
    #[cfg(target_os = "linux")]
    {
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    }
}

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
    /// This program (Linux: `/proc/self/exe`, the running image even if its file was replaced),
    /// for the Bash tool's reaper. `None` in tests.
    pub exe: Option<PathBuf>,
    /// The process runs as root (effective user id 0): bypass permissions mode is refused then,
    /// unless `IS_SANDBOX=1`, as the reference refuses it.
    pub root: bool,
    /// `--plugin-dir` folders (absolute): plugins enabled for this process's sessions only.
    pub plugin_dirs: Vec<PathBuf>,
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
        let mut vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v): (OsString, OsString)| {
                Some((k.into_string().ok()?, v.into_string().ok()?))
            })
            .collect();
        #[cfg(unix)]
        if let Some(fd) = vars.remove(SECRETS_FD_VARIABLE) {
            vars.extend(moved_secrets(&fd));
        }
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
        let mut host = Host::from_vars(vars, cwd, platform, os_version, Clock::System);
        host.exe = if cfg!(target_os = "linux") {
            Some(PathBuf::from("/proc/self/exe"))
        } else {
            std::env::current_exe().ok()
        };
        #[cfg(unix)]
        {
            host.root = rustix::process::geteuid().is_root();
        }
        host
    }

    /// Bypass permissions mode may not run here: root without `IS_SANDBOX=1` (the reference's
    /// `--dangerously-skip-permissions cannot be used with root/sudo privileges`).
    pub fn bypass_refused(&self) -> bool {
        self.root && self.var("IS_SANDBOX") != Some("1")
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
                    .filter(|(k, _)| {
                        !KEY_VARIABLES.contains(&k.as_str()) && k.as_str() != SECRETS_FD_VARIABLE
                    })
                    .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            ),
            shell,
            process_cwd,
            platform,
            os_version,
            clock,
            exe: None,
            root: false,
            plugin_dirs: Vec::new(),
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

    /// Every variable but the model's keys: what a running server needs to compute this process's
    /// preview or check exactly as this process would (`features::warm`). Values are never logged.
    pub fn vars_without_keys(&self) -> BTreeMap<String, String> {
        self.vars
            .iter()
            .filter(|(k, _)| {
                !KEY_VARIABLES.contains(&k.as_str()) && k.as_str() != SECRETS_FD_VARIABLE
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A variable holding a credential (an API key), wrapped so it cannot be logged.
    pub fn secret(&self, name: &str) -> Option<Secret> {
        self.var(name).map(|v| Secret::new(v.to_string()))
    }

    /// claude-context's state folder: `$XDG_STATE_HOME/claude-context` (absolute), else
    /// `~/.local/state/claude-context`; `None` without a home.
    pub fn state_dir(&self) -> Option<PathBuf> {
        match self.var("XDG_STATE_HOME").map(Path::new) {
            Some(p) if p.is_absolute() => Some(p.join("claude-context")),
            _ => self
                .home
                .as_ref()
                .map(|h| h.join(".local/state/claude-context")),
        }
    }

    /// The folders of `PATH`, in order (where a command is looked up).
    pub fn path_dirs(&self) -> Vec<PathBuf> {
        self.var("PATH")
            .map(|p| {
                std::env::split_paths(p)
                    .filter(|d| d.is_absolute())
                    .collect()
            })
            .unwrap_or_default()
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

    /// Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn claude_dir(&self) -> Option<PathBuf> {
        self.var("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
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
            Some(raw) => {
                let dir = crate::memory::validate_dir(raw)?;
                crate::memory::refuse_instruction_dirs(&dir, self.claude_dir().as_deref())?;
                Some(dir)
            }
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
            // Not trusted until `crate::trust` says otherwise.
            trust: Default::default(),
            plugin_dirs: self.plugin_dirs.clone(),
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
    fn no_git_child_gets_a_key_variable() {
        let h = host(&[
            ("ANTHROPIC_API_KEY", "sk-ant-api03-secretvalue"),
            ("ANTHROPIC_AUTH_TOKEN", "token-value-123"),
            ("OPENAI_API_KEY", "sk-openai-value-123"),
            (SECRETS_FD_VARIABLE, "3"),
            ("PATH", "/usr/bin"),
        ]);
        let names: Vec<String> = h
            .git
            .child_vars
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH"]);
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
