//! Configuration: the config values that shape the status, the config files loaded when [`GitOptions`] override
//! `$HOME` or the system config, and the repository handle each status thread opens with them.

use std::path::{Path, PathBuf};

use git2::{Config, ConfigLevel, Repository, RepositoryOpenFlags};

use super::GitOptions;

pub(super) fn parse_git_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Untracked {
    No,
    Normal,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Renames {
    Off,
    On,
    Copies,
}

/// The config values that shape the status.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub(super) quote_fully: bool,
    pub(super) relative: bool,
    pub(super) untracked: Untracked,
    pub(super) renames: Renames,
    pub(super) rename_limit: Option<usize>,
    pub(super) filemode: bool,
    pub(super) trust_ctime: bool,
    /// Settings the native engine does not reproduce (case-insensitive or Unicode-folding file systems, no
    /// symlinks, SHA-256 object names): the status then goes through libgit2.
    pub(super) native_ok: bool,
    /// Content filters (end-of-line conversion) may apply: a file whose raw content differs from the index is then
    /// checked again through libgit2, which applies them.
    pub(super) eol_filters: bool,
}

impl Settings {
    pub(super) fn read(cfg: &Config) -> Self {
        let bool_of = |key: &str| cfg.get_bool(key).ok();
        let string_of = |key: &str| cfg.get_string(key).ok().map(|v| v.to_ascii_lowercase());
        let untracked = match string_of("status.showUntrackedFiles").as_deref() {
            Some("no" | "false" | "off" | "0") => Untracked::No,
            Some("all") => Untracked::All,
            _ => Untracked::Normal,
        };
        let renames_of = |key: &str| -> Option<Renames> {
            match string_of(key)?.as_str() {
                "copies" | "copy" => Some(Renames::Copies),
                other => parse_git_bool(other).map(|b| if b { Renames::On } else { Renames::Off }),
            }
        };
        let limit_of = |key: &str| {
            cfg.get_i64(key)
                .ok()
                .map(|n| usize::try_from(n).ok().filter(|&n| n > 0))
        };
        let eol_filters = string_of("core.autocrlf").is_some_and(|v| v != "false")
            || string_of("core.eol").is_some()
            || string_of("core.attributesfile").is_some();
        let native_ok = !bool_of("core.ignorecase").unwrap_or(false)
            && !bool_of("core.precomposeunicode").unwrap_or(false)
            && bool_of("core.symlinks").unwrap_or(true)
            && string_of("extensions.objectformat").is_none_or(|f| f == "sha1")
            && cfg!(unix);
        Self {
            quote_fully: bool_of("core.quotePath").unwrap_or(true),
            relative: bool_of("status.relativePaths").unwrap_or(true),
            untracked,
            renames: renames_of("status.renames")
                .or_else(|| renames_of("diff.renames"))
                .unwrap_or(Renames::On),
            rename_limit: limit_of("status.renameLimit")
                .or_else(|| limit_of("diff.renameLimit"))
                .flatten(),
            filemode: bool_of("core.filemode").unwrap_or(true),
            trust_ctime: bool_of("core.trustctime").unwrap_or(true),
            native_ok,
            eol_filters,
        }
    }
}

/// Config files to load in place of libgit2's defaults (when the options override `$HOME` or the system config).
type ConfigPlan = Vec<(PathBuf, ConfigLevel)>;

pub(super) fn config_plan(repo: &Repository, opts: &GitOptions) -> Option<ConfigPlan> {
    if opts.home.is_none() && !opts.no_system_config {
        return None;
    }
    let mut plan = Vec::with_capacity(4);
    if !opts.no_system_config
        && let Ok(p) = Config::find_system()
    {
        plan.push((p, ConfigLevel::System));
    }
    match &opts.home {
        Some(home) => {
            plan.push((home.join(".config/git/config"), ConfigLevel::XDG));
            plan.push((home.join(".gitconfig"), ConfigLevel::Global));
        }
        None => {
            if let Ok(p) = Config::find_xdg() {
                plan.push((p, ConfigLevel::XDG));
            }
            if let Ok(p) = Config::find_global() {
                plan.push((p, ConfigLevel::Global));
            }
        }
    }
    plan.push((repo.commondir().join("config"), ConfigLevel::Local));
    Some(plan)
}

pub(super) fn apply_config(
    repo: &Repository,
    plan: Option<&ConfigPlan>,
) -> Result<(), git2::Error> {
    let Some(plan) = plan else { return Ok(()) };
    let mut cfg = Config::new()?;
    for (path, level) in plan {
        if path.is_file() {
            cfg.add_file(path, *level, false)?;
        }
    }
    repo.set_config(&cfg)
}

/// What a status thread needs to open its own handle on the repository (git2 handles are not `Sync`).
#[derive(Debug, Clone)]
pub(super) struct RepoHandle {
    pub(super) git_dir: PathBuf,
    pub(super) work_tree: PathBuf,
    pub(super) config: Option<ConfigPlan>,
}

impl RepoHandle {
    pub(super) fn open(&self) -> Result<Repository, git2::Error> {
        let repo = Repository::open_ext(
            &self.git_dir,
            RepositoryOpenFlags::NO_SEARCH,
            [] as [&Path; 0],
        )?;
        if repo.workdir().map(|w| w.canonicalize().ok()) != Some(Some(self.work_tree.clone())) {
            repo.set_workdir(&self.work_tree, false)?;
        }
        apply_config(&repo, self.config.as_ref())?;
        Ok(repo)
    }
}

/// `core.excludesFile`, or git's default `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
#[allow(clippy::disallowed_methods)] // reason: only without `GitOptions::home`; issue 7 takes these from the caller.
pub(super) fn excludes_file(cfg: &Config, opts: &GitOptions) -> Option<PathBuf> {
    if let Ok(p) = cfg.get_path("core.excludesFile") {
        return Some(p);
    }
    match &opts.home {
        Some(home) => Some(home.join(".config/git/ignore")),
        None => std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|d| d.join("git/ignore")),
    }
}
