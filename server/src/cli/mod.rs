//! The command line: `preview`, `check`, `lsp`. Reads the environment once, at the edge, and
//! renders core results for a terminal or as JSON.

pub mod check;
pub mod output;
pub mod preview;

use std::path::{Path, PathBuf};

use crate::context::{self, render::Environment};
pub use crate::features::format::display_path;
use crate::fs::normalize;

/// What the process environment says, read once.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub home: Option<PathBuf>,
    pub managed_dir: PathBuf,
    pub load_additional_dirs: bool,
    pub disabled: bool,
    pub auto_memory: bool,
    pub memory_dir: Option<String>,
    pub git_ceilings: Vec<PathBuf>,
    /// What the git snapshot takes from the environment.
    pub git: crate::git::GitEnv,
    pub shell: String,
    pub process_cwd: PathBuf,
}

fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes"))
}

impl Env {
    pub fn from_process() -> Env {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let managed_dir = std::env::var_os("CLAUDE_CONTEXT_MANAGED_DIR")
            .filter(|h| !h.is_empty())
            .map_or_else(|| PathBuf::from("/etc/claude-code"), PathBuf::from);
        let git_ceilings = std::env::var_os("GIT_CEILING_DIRECTORIES")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let shell = std::env::var("SHELL")
            .ok()
            .and_then(|s| {
                Path::new(&s)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "sh".into());
        Env {
            home,
            managed_dir,
            load_additional_dirs: flag("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD"),
            disabled: flag("CLAUDE_CODE_DISABLE_CLAUDE_MDS"),
            auto_memory: !flag("CLAUDE_CODE_DISABLE_AUTO_MEMORY"),
            memory_dir: std::env::var("CLAUDE_CONTEXT_MEMORY_DIR")
                .ok()
                .filter(|s| !s.is_empty()),
            git_ceilings,
            git: crate::git::GitEnv::from_vars(std::env::vars_os()),
            shell,
            process_cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }

    /// An absolute, normalised path from a command-line argument.
    pub fn abs(&self, p: &Path) -> PathBuf {
        normalize(&self.process_cwd, p)
    }

    /// The walk's options for a session in `cwd`.
    pub fn context_options(
        &self,
        cwd: &Path,
        add_dirs: &[PathBuf],
        memory_dir: Option<&str>,
    ) -> Result<context::Options, String> {
        let memory_dir = match memory_dir.or(self.memory_dir.as_deref()) {
            Some(raw) => Some(crate::memory::validate_dir(raw)?),
            None => None,
        };
        Ok(context::Options {
            cwd: cwd.to_path_buf(),
            home: self.home.clone(),
            managed_dir: self.managed_dir.clone(),
            additional_dirs: add_dirs.to_vec(),
            load_additional_dirs: self.load_additional_dirs,
            disabled: self.disabled,
            memory_dir,
            auto_memory: self.auto_memory,
            git_ceilings: self.git_ceilings.clone(),
        })
    }

    pub fn git_options(&self) -> crate::git::GitOptions {
        crate::git::GitOptions::new(self.git.clone())
    }

    /// The environment section for a session in `cwd`.
    pub fn environment(&self, cwd: &Path, is_git: bool, model: &str) -> Environment {
        let platform = match std::env::consts::OS {
            "macos" => "darwin",
            "windows" => "win32",
            other => other,
        };
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| r.trim().to_string())
            .unwrap_or_default();
        let os_version = if release.is_empty() {
            platform.to_string()
        } else {
            format!("Linux {release}")
        };
        Environment {
            cwd: cwd.display().to_string(),
            is_git,
            platform: platform.to_string(),
            shell: self.shell.clone(),
            os_version,
            model_name: model_name(model),
            model_id: model.to_string(),
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
        }
    }
}

/// The default model, until a session picks one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// `claude-sonnet-4-5` → `Sonnet 4.5`.
pub fn model_name(id: &str) -> String {
    let parts: Vec<&str> = id.trim_start_matches("claude-").split('-').collect();
    let mut family = String::new();
    let mut version = Vec::new();
    for p in parts {
        if p.chars().all(|c| c.is_ascii_digit()) {
            if p.len() < 8 {
                version.push(p);
            }
        } else if family.is_empty() {
            let mut c = p.chars();
            family = c
                .next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default();
        }
    }
    if version.is_empty() {
        family
    } else {
        format!("{family} {}", version.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names() {
        assert_eq!(model_name("claude-sonnet-4-5"), "Sonnet 4.5");
        assert_eq!(model_name("claude-opus-4-1-20250805"), "Opus 4.1");
        assert_eq!(model_name("claude-haiku-4-5"), "Haiku 4.5");
    }
}
