//! Configuration: the config files git would read (from [`GitEnv`], never from the process environment), the values
//! that shape the status, and the repository handle each thread opens with them.

use std::path::{Path, PathBuf};

use git2::{Config, ConfigLevel, Repository, RepositoryOpenFlags};

use super::env::{GitEnv, parse_git_bool};

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
    pub(super) filemode: bool,
    pub(super) trust_ctime: bool,
    /// `core.checkStat=minimal`: only whole-second mtime, size and mode count.
    pub(super) check_stat_minimal: bool,
    /// A sparse checkout where git clears `skip-worktree` from entries present on disk (`core.sparseCheckout` without
    /// `sparse.expectFilesOutsideOfPatterns`).
    pub(super) sparse_clear: bool,
    /// `core.ignorecase`: exclude patterns match ignoring case, and an untracked name that differs from a
    /// tracked one only by case is that tracked file (the native engine declines on such a pair).
    pub(super) ignore_case: bool,
    /// `core.precomposeUnicode`: names are compared in NFC (the native engine declines on any non-ASCII name).
    pub(super) precompose: bool,
    /// Why the native engine cannot answer for this repository (no symlinks, object formats and ref stores it does
    /// not read), if it cannot.
    pub(super) native_blocker: Option<&'static str>,
    /// End-of-line conversion is configured (`core.autocrlf`, `core.eol`).
    pub(super) eol_config: bool,
    /// `core.untrackedCache=false`: git drops the index's untracked cache before reading it.
    pub(super) untracked_cache_off: bool,
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
        let eol_config = string_of("core.autocrlf").is_some_and(|v| v != "false")
            || string_of("core.eol").is_some();
        let native_blocker = if !cfg!(unix) {
            Some("the native engine runs on Unix only")
        } else if !bool_of("core.symlinks").unwrap_or(true) {
            Some("core.symlinks=false")
        } else if string_of("extensions.objectformat").is_some_and(|f| f != "sha1") {
            Some("an object format other than SHA-1")
        } else if string_of("extensions.refstorage").is_some_and(|f| f != "files") {
            Some("a ref store other than files (reftable)")
        } else {
            None
        };
        Self {
            quote_fully: bool_of("core.quotePath").unwrap_or(true),
            relative: bool_of("status.relativePaths").unwrap_or(true),
            untracked,
            renames: renames_of("status.renames")
                .or_else(|| renames_of("diff.renames"))
                .unwrap_or(Renames::On),
            filemode: bool_of("core.filemode").unwrap_or(true),
            trust_ctime: bool_of("core.trustctime").unwrap_or(true),
            check_stat_minimal: string_of("core.checkstat").as_deref() == Some("minimal"),
            sparse_clear: bool_of("core.sparseCheckout").unwrap_or(false)
                && !bool_of("sparse.expectFilesOutsideOfPatterns").unwrap_or(false),
            ignore_case: bool_of("core.ignorecase").unwrap_or(false),
            precompose: bool_of("core.precomposeunicode").unwrap_or(false),
            native_blocker,
            eol_config,
            untracked_cache_off: string_of("core.untrackedcache")
                .is_some_and(|v| parse_git_bool(&v) == Some(false)),
        }
    }
}

/// Config files in the order git reads them: system, XDG, global, the repository's, its worktree's.
type ConfigPlan = Vec<(PathBuf, ConfigLevel)>;

/// The config files of a repository, from `env` (libgit2's own lookup would read `$HOME` from the process).
pub(super) fn config_plan(env: &GitEnv, git_dir: &Path, common_dir: &Path) -> ConfigPlan {
    let mut plan = Vec::with_capacity(5);
    if !env.no_system_config
        && let Ok(p) = Config::find_system()
    {
        plan.push((p, ConfigLevel::System));
    }
    if let Some(xdg) = env.xdg_git_dir() {
        plan.push((xdg.join("config"), ConfigLevel::XDG));
    }
    if let Some(home) = &env.home {
        plan.push((home.join(".gitconfig"), ConfigLevel::Global));
    }
    let local = common_dir.join("config");
    // `extensions.worktreeConfig`: the worktree's own `config.worktree` overrides the shared config.
    let worktree_config = Config::open(&local)
        .ok()
        .and_then(|c| c.get_bool("extensions.worktreeconfig").ok())
        .unwrap_or(false);
    plan.push((local, ConfigLevel::Local));
    if worktree_config {
        plan.push((git_dir.join("config.worktree"), ConfigLevel::Worktree));
    }
    plan
}

pub(super) fn apply_config(repo: &Repository, plan: &ConfigPlan) -> Result<(), git2::Error> {
    let mut cfg = Config::new()?;
    for (path, level) in plan {
        if path.is_file() {
            cfg.add_file(path, *level, false)?;
        }
    }
    repo.set_config(&cfg)
}

/// What a thread needs to open its own handle on the repository (git2 handles are not `Sync`).
#[derive(Debug, Clone)]
pub(super) struct RepoHandle {
    pub(super) git_dir: PathBuf,
    pub(super) work_tree: PathBuf,
    pub(super) config: ConfigPlan,
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
        apply_config(&repo, &self.config)?;
        Ok(repo)
    }
}

/// A path from the config, with git's `~/` expansion done against `env`'s home.
fn config_path(cfg: &Config, key: &str, env: &GitEnv) -> Option<PathBuf> {
    let raw = cfg.get_string(key).ok()?;
    match raw.strip_prefix("~/") {
        Some(rest) => env.home.as_ref().map(|h| h.join(rest)),
        None => Some(PathBuf::from(raw)),
    }
}

/// `core.excludesFile`, or git's default `$XDG_CONFIG_HOME/git/ignore`.
pub(super) fn excludes_file(cfg: &Config, env: &GitEnv) -> Option<PathBuf> {
    config_path(cfg, "core.excludesFile", env)
        .or_else(|| env.xdg_git_dir().map(|d| d.join("ignore")))
}

/// `core.attributesFile`, or git's default `$XDG_CONFIG_HOME/git/attributes`.
pub(super) fn attributes_file(cfg: &Config, env: &GitEnv) -> Option<PathBuf> {
    config_path(cfg, "core.attributesFile", env)
        .or_else(|| env.xdg_git_dir().map(|d| d.join("attributes")))
}
