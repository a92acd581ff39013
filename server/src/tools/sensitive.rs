//! Files that make programs run code: the one list of them, and the judge of a path.
//!
//! A `Write` or `Edit` of one of these can run a command without the Bash prompt: git runs the
//! filters, hooks and aliases its config and attributes name (our own git snapshot runs
//! `git status`, which runs clean filters, seconds after the file changes); editors and shell
//! tools run what their per-folder files say. So a change to one of them is always asked for,
//! with a prompt that says what the file can do, and an "allow for the session" never covers it
//! (see `permission.rs`).
//!
//! The list ([`RUNS_CODE`] and the git directories):
//! - anything inside a git directory: a path with a `.git` component (the repository's own git
//!   directory, with its `config`, `hooks/`, and the git directories of worktrees and submodules
//!   under `worktrees/` and `modules/`; also a `.git` file, which points git elsewhere), and the
//!   git directory a workspace folder's repository uses outside it (a linked worktree's, or one
//!   made with `--separate-git-dir`: the `gitdir:` of a `.git` file, and its `commondir`);
//! - `.gitattributes`, `.gitmodules`;
//! - `.claude/settings.json`, `.claude/settings.local.json` (any `.claude/settings*.json`), `.mcp.json`;
//! - `.vscode/settings.json`, `.vscode/tasks.json`, `.vscode/launch.json`;
//! - `.envrc`; `.nvim.lua`, `.nvimrc`, `.exrc`.
//!
//! Names are compared ignoring ASCII case: on a case-insensitive disk `.GIT/config` is the git
//! directory's config.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Why a change to a git directory is dangerous.
pub(crate) const GIT_DIR: &str = "it is inside a git directory: git runs the commands its \
config and hooks name (filters, hooks, aliases, fsmonitor) as you, the next time git runs (the \
editor's git snapshot runs `git status` within seconds)";

/// A file by name (in any folder, or in the named folder), and what it can make run.
pub(crate) struct Entry {
    /// The folder it must be in (`.claude`), or `None` for any folder.
    pub folder: Option<&'static str>,
    /// The file's name; a trailing `*` matches any rest ending in `.json` (`settings*.json`).
    pub name: &'static str,
    pub what: &'static str,
}

/// The files that make programs run code, other than git directories.
pub(crate) const RUNS_CODE: &[Entry] = &[
    Entry {
        folder: None,
        name: ".gitattributes",
        what: "it selects the filters and diff or merge drivers git runs as commands (a clean \
filter runs on the next `git status`)",
    },
    Entry {
        folder: None,
        name: ".gitmodules",
        what: "it names the submodules git fetches and the commands it runs to update them",
    },
    Entry {
        folder: Some(".claude"),
        name: "settings*",
        what: "Claude Code runs the hooks it defines and allows the commands it lists without asking",
    },
    Entry {
        folder: None,
        name: ".mcp.json",
        what: "Claude Code starts the MCP servers it lists as programs",
    },
    Entry {
        folder: Some(".vscode"),
        name: "settings.json",
        what: "VS Code runs the programs its settings name (terminal profiles, formatters, linters, tools)",
    },
    Entry {
        folder: Some(".vscode"),
        name: "tasks.json",
        what: "VS Code runs its tasks, some as soon as the folder opens",
    },
    Entry {
        folder: Some(".vscode"),
        name: "launch.json",
        what: "VS Code runs the programs its debug configurations name",
    },
    Entry {
        folder: None,
        name: ".envrc",
        what: "direnv runs it in your shell when you enter the folder",
    },
    Entry {
        folder: None,
        name: ".nvim.lua",
        what: "Neovim runs it when it opens the folder (with 'exrc')",
    },
    Entry {
        folder: None,
        name: ".nvimrc",
        what: "Neovim runs it when it opens the folder (with 'exrc')",
    },
    Entry {
        folder: None,
        name: ".exrc",
        what: "Vim and Neovim run it when they open the folder (with 'exrc')",
    },
];

fn same(a: &OsStr, b: &str) -> bool {
    a.to_str().is_some_and(|a| a.eq_ignore_ascii_case(b))
}

fn matches(entry: &Entry, name: &OsStr, parent: Option<&OsStr>) -> bool {
    if let Some(folder) = entry.folder
        && !parent.is_some_and(|p| same(p, folder))
    {
        return false;
    }
    match entry.name.strip_suffix('*') {
        Some(prefix) => name.to_str().is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            n.starts_with(prefix) && n.ends_with(".json")
        }),
        None => same(name, entry.name),
    }
}

/// What a change to `real` (a real path: every link resolved) can make run, or `None` for an
/// ordinary file. `git_dirs` are the git directories found outside the workspace folders
/// ([`git_dirs`]).
pub(crate) fn judge(real: &Path, git_dirs: &[PathBuf]) -> Option<&'static str> {
    let names: Vec<&OsStr> = real
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    if names.iter().any(|n| same(n, ".git")) || git_dirs.iter().any(|d| real.starts_with(d)) {
        return Some(GIT_DIR);
    }
    let (name, parent) = match names.as_slice() {
        [.., parent, name] => (*name, Some(*parent)),
        [name] => (*name, None),
        [] => return None,
    };
    RUNS_CODE
        .iter()
        .find(|e| matches(e, name, parent))
        .map(|e| e.what)
}

/// The git directories the repositories holding `roots` use, when a `.git` *file* points
/// elsewhere (a linked worktree, `--separate-git-dir`): its `gitdir:` and that directory's
/// `commondir`. A `.git` directory needs no entry (its name is enough). Read once per session.
pub(crate) fn git_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots {
        for dir in root.ancestors() {
            let dot_git = dir.join(".git");
            let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
                continue;
            };
            if meta.is_file()
                && let Some(gitdir) = gitfile_target(&dot_git, dir)
            {
                if let Some(common) = read_first_line(&gitdir.join("commondir")) {
                    let common = gitdir.join(common);
                    if let Ok(c) = std::fs::canonicalize(&common)
                        && !out.contains(&c)
                    {
                        out.push(c);
                    }
                }
                if !out.contains(&gitdir) {
                    out.push(gitdir);
                }
            }
            break;
        }
    }
    out
}

/// The git directory a `.git` file names (`gitdir: <path>`, relative to its folder).
fn gitfile_target(file: &Path, dir: &Path) -> Option<PathBuf> {
    let line = read_first_line(file)?;
    let target = line.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(dir.join(target)).ok()
}

fn read_first_line(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    crate::fs::open_regular(path)
        .ok()?
        .take(4096)
        .read_to_end(&mut buf)
        .ok()?;
    let text = String::from_utf8(buf).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_catches_what_runs_code_and_nothing_else() {
        let none: &[PathBuf] = &[];
        for p in [
            "/w/.git/config",
            "/w/.git/hooks/pre-commit",
            "/w/.git/worktrees/x/config",
            "/w/sub/.git",
            "/w/.GIT/config",
            "/w/.gitattributes",
            "/w/a/b/.gitattributes",
            "/w/.gitmodules",
            "/w/.claude/settings.json",
            "/w/.claude/settings.local.json",
            "/w/.mcp.json",
            "/w/.vscode/settings.json",
            "/w/.vscode/tasks.json",
            "/w/.envrc",
            "/w/.nvim.lua",
        ] {
            assert!(judge(Path::new(p), none).is_some(), "{p}");
        }
        for p in [
            "/w/src/main.rs",
            "/w/settings.json",
            "/w/.claude/rules/x.md",
            "/w/.claude/settings.md",
            "/w/tasks.json",
            "/w/.gitignore",
            "/w/git/config",
            "/w/.github/workflows/ci.yml",
        ] {
            assert!(judge(Path::new(p), none).is_none(), "{p}");
        }
        let outside = [PathBuf::from("/repo/.bare")];
        assert_eq!(
            judge(Path::new("/repo/.bare/config"), &outside),
            Some(GIT_DIR)
        );
    }

    #[test]
    fn a_worktrees_git_directory_is_found_through_its_git_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let common = root.join("main.git");
        let gitdir = common.join("worktrees/wt");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(root.join("wt/src")).unwrap();
        std::fs::write(
            root.join("wt/.git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .unwrap();
        let found = git_dirs(&[root.join("wt/src")]);
        assert!(found.contains(&common), "{found:?}");
        assert!(found.contains(&gitdir), "{found:?}");
        assert_eq!(judge(&common.join("config"), &found), Some(GIT_DIR));
    }
}
