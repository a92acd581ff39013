//! What the git snapshot takes from the process environment, as plain data.
//!
//! `git/` never reads the environment itself: the caller (`host::Host`) reads it once and hands a [`GitEnv`] in,
//! so tests and the language server can give each repository its own `HOME`, ceilings and `PATH`.

use std::ffi::OsString;
use std::path::PathBuf;

/// The environment of the git snapshot: discovery limits, where the global config lives, and the variables a `git`
/// child process gets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitEnv {
    /// Discovery does not climb into these directories (`GIT_CEILING_DIRECTORIES`).
    pub ceiling_dirs: Vec<PathBuf>,
    /// `$HOME`: the global config `~/.gitconfig`, `~/.config/git/{config,ignore,attributes}`.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` (else `$HOME/.config`).
    pub xdg_config_home: Option<PathBuf>,
    /// Skip the system config (`/etc/gitconfig`), like `GIT_CONFIG_NOSYSTEM`.
    pub no_system_config: bool,
    /// The variables of a `git` child process: the caller's environment without the `GIT_*` variables that would
    /// point git at another repository, index or config than the one the native engine reads (see
    /// [`GitEnv::from_vars`]).
    pub child_vars: Vec<(OsString, OsString)>,
}

/// `GIT_*` variables a child keeps: they mean the same to the native engine (which reads them from [`GitEnv`]).
const KEPT_GIT_VARS: [&str; 2] = ["GIT_CEILING_DIRECTORIES", "GIT_CONFIG_NOSYSTEM"];

/// git's boolean spelling (`true`, `yes`, `on`, `1`, ... and an empty value for true).
pub(super) fn parse_git_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

impl GitEnv {
    /// Builds the git environment from a process's variables (pass `std::env::vars_os()`).
    ///
    /// The child keeps everything except `GIT_*` variables (`GIT_DIR`, `GIT_INDEX_FILE`, `GIT_CONFIG_GLOBAL`,
    /// `GIT_CONFIG_PARAMETERS`, ...), which would make the git CLI answer about something else than the native
    /// engine, other than `GIT_CEILING_DIRECTORIES` and `GIT_CONFIG_NOSYSTEM`.
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> GitEnv {
        let mut env = GitEnv::default();
        for (k, v) in vars {
            let key = k.to_string_lossy();
            match key.as_ref() {
                "GIT_CEILING_DIRECTORIES" => {
                    env.ceiling_dirs = std::env::split_paths(&v)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect();
                }
                "GIT_CONFIG_NOSYSTEM" => {
                    env.no_system_config = parse_git_bool(&v.to_string_lossy()).unwrap_or(false);
                }
                "HOME" if !v.is_empty() => env.home = Some(PathBuf::from(&v)),
                "XDG_CONFIG_HOME" if !v.is_empty() => env.xdg_config_home = Some(PathBuf::from(&v)),
                _ => {}
            }
            if !key.starts_with("GIT_") || KEPT_GIT_VARS.contains(&key.as_ref()) {
                env.child_vars.push((k, v));
            }
        }
        env
    }

    /// Whether the native engine reads the same repository, config files and exclude files under `other` as
    /// under `self` (what a git child process would get besides does not matter to it).
    pub fn same_view(&self, other: &GitEnv) -> bool {
        self.ceiling_dirs == other.ceiling_dirs
            && self.home == other.home
            && self.xdg_config_home == other.xdg_config_home
            && self.no_system_config == other.no_system_config
    }

    /// `$XDG_CONFIG_HOME/git`, else `$HOME/.config/git`.
    pub(super) fn xdg_git_dir(&self) -> Option<PathBuf> {
        self.xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")))
            .map(|d| d.join("git"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    #[test]
    fn from_vars_reads_what_git_reads_and_filters_the_child() {
        let env = GitEnv::from_vars(vars(&[
            ("HOME", "/home/me"),
            ("PATH", "/usr/bin"),
            ("GIT_DIR", "/elsewhere/.git"),
            ("GIT_INDEX_FILE", "/tmp/other-index"),
            ("GIT_CEILING_DIRECTORIES", "/a::/b"),
            ("GIT_CONFIG_NOSYSTEM", "yes"),
            ("XDG_CONFIG_HOME", ""),
        ]));
        assert_eq!(env.home.as_deref(), Some(std::path::Path::new("/home/me")));
        assert_eq!(
            env.ceiling_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert!(env.no_system_config);
        assert_eq!(env.xdg_config_home, None);
        assert_eq!(
            env.xdg_git_dir(),
            Some(PathBuf::from("/home/me/.config/git"))
        );
        let names: Vec<_> = env.child_vars.iter().map(|(k, _)| k.clone()).collect();
        assert!(names.contains(&"PATH".into()));
        assert!(names.contains(&"GIT_CEILING_DIRECTORIES".into()));
        assert!(!names.contains(&"GIT_DIR".into()));
        assert!(!names.contains(&"GIT_INDEX_FILE".into()));
    }

    #[test]
    fn git_booleans() {
        assert_eq!(parse_git_bool("Yes"), Some(true));
        assert_eq!(parse_git_bool("off"), Some(false));
        assert_eq!(parse_git_bool("2"), Some(true));
        assert_eq!(parse_git_bool("maybe"), None);
    }
}
