//! Files that make programs run code: the one list of them, and the judge of a path.
//!
//! A `Write` or `Edit` of one of these can run a command without the Bash prompt: git runs the
//! filters, hooks and aliases its config and attributes name (our own git snapshot runs
//! `git status`, which runs clean filters, seconds after the file changes); editors and shell
//! tools run what their per-folder files say. So a change to one of them is always asked for,
//! with a prompt that says what the file can do, and an "allow for the session" never covers it
//! (see `permission.rs`). Inside the Bash sandbox, those that exist at a workspace folder's top
//! are read-only ([`guarded_in`]).
//!
//! **The criterion.** A file is on the list when a program the user runs *for another purpose*
//! (opening the folder in an editor, entering it in a shell, running git or the editor's git
//! view, building with the project's usual command) reads it from the folder and, on what it
//! says, runs a command the file names, without asking the user first, where the user would not
//! look for a command. Code the user runs knowingly is not: a test, a build script, a
//! `package.json` script, a Makefile (the user asked for it to run, and reads it as code).
//!
//! The list ([`RUNS_CODE`] and the git directories):
//! - anything inside a git directory: a path with a `.git` component (the repository's own git
//!   directory, with its `config`, `hooks/`, and the git directories of worktrees and submodules
//!   under `worktrees/` and `modules/`; also a `.git` file, which points git elsewhere), the git
//!   directory a workspace folder's repository uses outside it (a linked worktree's, or one
//!   made with `--separate-git-dir`: the `gitdir:` of a `.git` file, and its `commondir`), and
//!   **any folder of git's shape, whatever its name** ([`git_dir_by_shape`]): a folder holding
//!   `HEAD` and one of `config`, `objects/`, `refs/` (git takes a folder with `HEAD`, `objects/`
//!   and `refs/` as a repository, and runs its config's `core.fsmonitor` on the next `git
//!   status` there, or in the shell prompt's). The file being written counts: writing `HEAD`
//!   beside a `config`, or a `config` beside a `HEAD`, is making one, and asks;
//! - `.gitattributes`, `.gitmodules`;
//! - `.claude/settings.json`, `.claude/settings.local.json` (any `.claude/settings*.json`), `.mcp.json`;
//! - `.vscode/settings.json`, `.vscode/tasks.json`, `.vscode/launch.json`; `.zed/settings.json`,
//!   `.zed/tasks.json`; `.helix/languages.toml`; anything under `.idea/` and `.devcontainer/`;
//! - `.envrc`; `mise.toml`, `.mise.toml`, `mise.local.toml`, `.mise.local.toml`;
//! - `.nvim.lua`, `.nvimrc`, `.exrc`, `.vimrc`;
//! - `.cargo/config.toml`, `.cargo/config`; `.npmrc`, `.yarnrc.yml`.
//!
//! Names are compared ignoring ASCII case: on a case-insensitive disk `.GIT/config` is the git
//! directory's config.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Why a change to a git directory is dangerous.
pub(crate) const GIT_DIR: &str = "it is inside a git directory: git runs the commands its \
config and hooks name (filters, hooks, aliases, fsmonitor) as you, the next time git runs (the \
editor's git snapshot runs `git status` within seconds)";

/// Why making a folder into a git directory is dangerous.
pub(crate) const GIT_DIR_SHAPE: &str = "it makes its folder a git directory (a `HEAD` with a \
`config`, `objects/` or `refs/`), whatever the folder's name: git runs the commands its config \
names (`core.fsmonitor`, hooks) as you, the next time git runs in it (a `git status`, or your \
shell prompt's)";

/// Where a file of the list is.
pub(crate) enum Place {
    /// This name, in any folder.
    Name(&'static str),
    /// This name in a folder of this name; a trailing `*` in the name matches any rest ending
    /// in `.json` (`settings*.json`).
    In(&'static str, &'static str),
    /// Anything below a folder of this name.
    Under(&'static str),
}

/// A file (or folder) of the list, and what it can make run.
pub(crate) struct Entry {
    pub place: Place,
    pub what: &'static str,
}

/// The files that make programs run code, other than git directories.
pub(crate) const RUNS_CODE: &[Entry] = &[
    Entry {
        place: Place::Name(".gitattributes"),
        what: "it selects the filters and diff or merge drivers git runs as commands (a clean \
filter runs on the next `git status`)",
    },
    Entry {
        place: Place::Name(".gitmodules"),
        what: "it names the submodules git fetches and the commands it runs to update them",
    },
    Entry {
        place: Place::In(".claude", "settings*"),
        what: "Claude Code runs the hooks it defines and allows the commands it lists without asking",
    },
    Entry {
        place: Place::Name(".mcp.json"),
        what: "Claude Code starts the MCP servers it lists as programs",
    },
    Entry {
        place: Place::In(".vscode", "settings.json"),
        what: "VS Code runs the programs its settings name (terminal profiles, formatters, linters, tools)",
    },
    Entry {
        place: Place::In(".vscode", "tasks.json"),
        what: "VS Code runs its tasks, some as soon as the folder opens",
    },
    Entry {
        place: Place::In(".vscode", "launch.json"),
        what: "VS Code runs the programs its debug configurations name",
    },
    Entry {
        place: Place::In(".zed", "settings.json"),
        what: "Zed runs the language servers, formatters and terminal shell its settings name",
    },
    Entry {
        place: Place::In(".zed", "tasks.json"),
        what: "Zed runs its tasks",
    },
    Entry {
        place: Place::In(".helix", "languages.toml"),
        what: "Helix starts the language servers and formatters it names when it opens a file",
    },
    Entry {
        place: Place::Under(".idea"),
        what: "JetBrains IDEs run the run configurations, external tools and startup tasks it holds",
    },
    Entry {
        place: Place::Under(".devcontainer"),
        what: "VS Code and the devcontainer tools build the container it describes and run its \
commands (`initializeCommand` runs on your machine)",
    },
    Entry {
        place: Place::Name(".envrc"),
        what: "direnv runs it in your shell when you enter the folder",
    },
    Entry {
        place: Place::Name("mise.toml"),
        what: "mise runs its hooks and installs the tools it names when you enter the folder",
    },
    Entry {
        place: Place::Name(".mise.toml"),
        what: "mise runs its hooks and installs the tools it names when you enter the folder",
    },
    Entry {
        place: Place::Name("mise.local.toml"),
        what: "mise runs its hooks and installs the tools it names when you enter the folder",
    },
    Entry {
        place: Place::Name(".mise.local.toml"),
        what: "mise runs its hooks and installs the tools it names when you enter the folder",
    },
    Entry {
        place: Place::Name(".nvim.lua"),
        what: "Neovim runs it when it opens the folder (with 'exrc')",
    },
    Entry {
        place: Place::Name(".nvimrc"),
        what: "Neovim runs it when it opens the folder (with 'exrc')",
    },
    Entry {
        place: Place::Name(".exrc"),
        what: "Vim and Neovim run it when they open the folder (with 'exrc')",
    },
    Entry {
        place: Place::Name(".vimrc"),
        what: "Vim runs it when it opens the folder (with 'exrc')",
    },
    Entry {
        place: Place::In(".cargo", "config.toml"),
        what: "cargo runs the programs it names (runners, linkers, rustc wrappers) on the next build",
    },
    Entry {
        place: Place::In(".cargo", "config"),
        what: "cargo runs the programs it names (runners, linkers, rustc wrappers) on the next build",
    },
    Entry {
        place: Place::Name(".npmrc"),
        what: "npm runs every script through the shell it names (`script-shell`) and passes on its node options",
    },
    Entry {
        place: Place::Name(".yarnrc.yml"),
        what: "Yarn runs the program its `yarnPath` names for every yarn command",
    },
];

fn same(a: &OsStr, b: &str) -> bool {
    a.to_str().is_some_and(|a| a.eq_ignore_ascii_case(b))
}

fn matches(entry: &Entry, names: &[&OsStr]) -> bool {
    let Some((name, folders)) = names.split_last() else {
        return false;
    };
    match entry.place {
        Place::Name(n) => same(name, n),
        Place::Under(f) => folders.iter().any(|d| same(d, f)),
        Place::In(f, n) => {
            if !folders.last().is_some_and(|p| same(p, f)) {
                return false;
            }
            match n.strip_suffix('*') {
                Some(prefix) => name.to_str().is_some_and(|n| {
                    let n = n.to_ascii_lowercase();
                    n.starts_with(prefix) && n.ends_with(".json")
                }),
                None => same(name, n),
            }
        }
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
    if let Some(what) = RUNS_CODE
        .iter()
        .find(|e| matches(e, &names))
        .map(|e| e.what)
    {
        return Some(what);
    }
    git_dir_by_shape(real)
}

/// Is `real`, or would it make, a folder of git's shape (see the module doc)? Looks at the disk:
/// each folder above `real` that holds (or, with `real` written, would hold) a `HEAD` and one of
/// `config`, `objects/`, `refs/`.
pub(crate) fn git_dir_by_shape(real: &Path) -> Option<&'static str> {
    let mut child: Option<&OsStr> = real.file_name();
    let mut dir = real.parent();
    while let (Some(d), Some(c)) = (dir, child) {
        // What `d` holds, counting the entry on the way to `real` as there.
        let has = |name: &str| same(c, name) || d.join(name).symlink_metadata().is_ok();
        if has("HEAD") && (has("config") || has("objects") || has("refs")) {
            let made = !d.join("HEAD").exists()
                || !(d.join("config").exists()
                    || d.join("objects").exists()
                    || d.join("refs").exists());
            return Some(if made { GIT_DIR_SHAPE } else { GIT_DIR });
        }
        child = d.file_name();
        dir = d.parent();
    }
    None
}

/// What of the git directory `dir` makes programs run code, where it exists: its `config`,
/// `config.worktree`, `hooks/` and `info/` (the Bash sandbox binds them read-only when it binds
/// the directory writable).
pub(crate) fn guarded_in_git_dir(dir: &Path) -> Vec<PathBuf> {
    ["config", "config.worktree", "hooks", "info"]
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() || m.is_dir()))
        .collect()
}

/// The paths of the list that exist at the top of the folder `root` (and its git directory's
/// `config`, `config.worktree`, `hooks/`, or its `.git` file), which the Bash sandbox binds
/// read-only over the writable folder.
pub(crate) fn guarded_in(root: &Path) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    let dot_git = root.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => {
            for n in ["config", "config.worktree", "hooks", "info"] {
                candidates.push(dot_git.join(n));
            }
        }
        Ok(_) => candidates.push(dot_git),
        Err(_) => {}
    }
    for e in RUNS_CODE {
        match e.place {
            Place::Name(n) => candidates.push(root.join(n)),
            Place::Under(f) => candidates.push(root.join(f)),
            Place::In(f, n) => match n.strip_suffix('*') {
                Some(prefix) => {
                    for name in [format!("{prefix}.json"), format!("{prefix}.local.json")] {
                        candidates.push(root.join(f).join(name));
                    }
                }
                None => candidates.push(root.join(f).join(n)),
            },
        }
    }
    candidates
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() || m.is_dir()))
        .collect()
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
            "/w/.zed/settings.json",
            "/w/.zed/tasks.json",
            "/w/.vimrc",
            "/w/.devcontainer/devcontainer.json",
            "/w/.devcontainer/scripts/post.sh",
            "/w/.helix/languages.toml",
            "/w/.idea/workspace.xml",
            "/w/.idea/runConfigurations/x.xml",
            "/w/mise.toml",
            "/w/.cargo/config.toml",
            "/w/sub/.cargo/config",
            "/w/.npmrc",
            "/w/.yarnrc.yml",
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
            "/w/.zed/notes.md",
            "/w/.cargo/registry.toml",
            "/w/idea/workspace.xml",
            "/w/mise.txt",
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
    fn a_folder_of_gits_shape_is_a_git_directory_whatever_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let none: &[PathBuf] = &[];
        let x = root.join("cache");
        std::fs::create_dir_all(x.join("objects")).unwrap();
        // `objects/` alone is nothing; a `HEAD` beside it makes a git directory.
        assert_eq!(judge(&x.join("objects/ab/cd"), none), None);
        assert_eq!(judge(&x.join("HEAD"), none), Some(GIT_DIR_SHAPE));
        std::fs::write(x.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        // Once it is one, anything inside it is the git directory's.
        assert_eq!(judge(&x.join("config"), none), Some(GIT_DIR));
        assert_eq!(judge(&x.join("hooks/pre-commit"), none), Some(GIT_DIR));
        // A `config` beside a lone `HEAD` makes one too.
        let y = root.join("y");
        std::fs::create_dir_all(&y).unwrap();
        std::fs::write(y.join("HEAD"), "x").unwrap();
        assert_eq!(judge(&y.join("notes.md"), none), None);
        assert_eq!(judge(&y.join("config"), none), Some(GIT_DIR_SHAPE));
        assert_eq!(judge(&y.join("refs/heads/main"), none), Some(GIT_DIR_SHAPE));
        // An ordinary project with a `config/` folder and no `HEAD` is not one.
        std::fs::create_dir_all(root.join("app/config")).unwrap();
        assert_eq!(judge(&root.join("app/config/routes.rb"), none), None);
    }

    #[test]
    fn the_guarded_files_are_those_that_exist_at_a_folders_top() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".vscode/tasks.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join(".idea")).unwrap();
        std::fs::write(root.join(".envrc"), "").unwrap();
        let mut got = guarded_in(&root);
        got.sort();
        let mut want = vec![
            root.join(".git/config"),
            root.join(".git/hooks"),
            root.join(".vscode/tasks.json"),
            root.join(".idea"),
            root.join(".envrc"),
        ];
        want.sort();
        assert_eq!(got, want);
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
