//! Which repository holds a directory: the one discovery routine of the crate (the git snapshot, the memory
//! directory's canonical root and the project root all use it). It reads through the [`Fs`] seam and follows git's
//! own rules (`setup.c`): climb from the starting directory, never into a ceiling directory; at each level a `.git`
//! directory counts only when it is a valid git directory (`HEAD`, `objects/`, `refs/`), a `.git` file must say
//! `gitdir: <path>` and point at one (else git stops with "not a git repository", and so do we, with the reason), and
//! a directory that is itself a git directory means we are inside `.git` or a bare repository: no work tree.

use std::path::{Path, PathBuf};

use crate::fs::{Fs, Kind, normalize};

/// A work tree and where its repository lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The work tree's root: the directory holding `.git` (a path on the way up from the start, not resolved).
    pub work_tree: PathBuf,
    /// The repository's own git directory (a linked worktree's is `<main>/.git/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// Where objects, refs and the shared config live: the git directory's `commondir`, else the git directory.
    pub common_dir: PathBuf,
    /// The main work tree, shared by every linked worktree of the repository (the parent of a common directory
    /// named `.git`); the work tree itself otherwise (submodules, a bare repository's worktrees).
    pub main_work_tree: PathBuf,
}

/// A `.git` that git itself refuses: a `.git` file that is not a gitfile or that points at no repository (a
/// worktree whose main repository is gone, a moved submodule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverError {
    /// The directory holding the broken `.git` (the project root as far as instruction files go).
    pub work_tree: PathBuf,
    /// The `.git` file.
    pub path: PathBuf,
    /// Why git cannot use it, in a sentence.
    pub message: String,
}

impl std::fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The largest `.git` file or `HEAD` read (git reads `HEAD` into a small buffer too).
const SMALL_FILE: u64 = 64 * 1024;

fn read_small(fs: &dyn Fs, path: &Path) -> Option<String> {
    match fs.metadata(path) {
        Ok(m) if m.kind == Kind::File && m.len <= SMALL_FILE => {}
        _ => return None,
    }
    let bytes = fs.read_bytes(path, SMALL_FILE).ok()?;
    String::from_utf8(bytes).ok()
}

/// git's `validate_headref`: a symbolic ref into `refs/`, or an object name.
fn valid_head(fs: &dyn Fs, git_dir: &Path) -> bool {
    let Some(text) = read_small(fs, &git_dir.join("HEAD")) else {
        return false;
    };
    let t = text.trim_end();
    if let Some(target) = t.strip_prefix("ref:") {
        return target.trim_start().starts_with("refs/");
    }
    matches!(t.len(), 40 | 64) && t.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The common directory of a git directory: its `commondir` file, else itself.
pub(super) fn common_dir_of(fs: &dyn Fs, git_dir: &Path) -> PathBuf {
    match read_small(fs, &git_dir.join("commondir")) {
        Some(c) if !c.trim().is_empty() => {
            normalize(git_dir, Path::new(c.trim_end_matches(['\n', '\r'])))
        }
        _ => git_dir.to_path_buf(),
    }
}

/// git's `is_git_directory`: `HEAD` is valid and the common directory has `objects/` and `refs/`.
pub(super) fn is_git_directory(fs: &dyn Fs, dir: &Path) -> bool {
    let common = common_dir_of(fs, dir);
    fs.is_dir(&common.join("objects")) && fs.is_dir(&common.join("refs")) && valid_head(fs, dir)
}

/// What a `.git` entry in `dir` makes of `dir`.
pub(super) enum DotGit {
    /// No `.git`, or one git ignores (an empty directory, a FIFO): look further up.
    Absent,
    /// A work tree whose repository is at this git directory.
    Repo(PathBuf),
    /// A `.git` git refuses, and why.
    Broken(PathBuf, String),
}

/// Looks at `dir/.git` the way git's discovery does at one level.
pub(super) fn dot_git(fs: &dyn Fs, dir: &Path) -> DotGit {
    let dot = dir.join(".git");
    let Ok(meta) = fs.metadata(&dot) else {
        return DotGit::Absent; // git: a `.git` that cannot be stat'ed is not there
    };
    match meta.kind {
        Kind::Dir if is_git_directory(fs, &dot) => DotGit::Repo(dot),
        Kind::Dir | Kind::Special => DotGit::Absent,
        Kind::File => {
            let Some(text) = read_small(fs, &dot) else {
                return DotGit::Broken(
                    dot.clone(),
                    format!("{} cannot be read as a gitfile", dot.display()),
                );
            };
            let Some(target) = text.strip_prefix("gitdir:") else {
                return DotGit::Broken(
                    dot.clone(),
                    format!(
                        "{} is not a gitfile (it should say `gitdir: <path>`)",
                        dot.display()
                    ),
                );
            };
            let target = target.trim();
            let git_dir = normalize(dir, Path::new(target));
            if is_git_directory(fs, &git_dir) {
                return DotGit::Repo(git_dir);
            }
            let message = if !fs.exists(&git_dir) {
                format!(
                    "{} points to {}, which does not exist (a worktree whose repository was moved or deleted?)",
                    dot.display(),
                    git_dir.display()
                )
            } else {
                let common = common_dir_of(fs, &git_dir);
                if common != git_dir && !fs.exists(&common) {
                    format!(
                        "{} points to {}, whose main repository {} is gone",
                        dot.display(),
                        git_dir.display(),
                        common.display()
                    )
                } else {
                    format!(
                        "{} points to {}, which is not a git repository",
                        dot.display(),
                        git_dir.display()
                    )
                }
            };
            DotGit::Broken(dot, message)
        }
    }
}

/// The repository whose work tree holds `start` (an absolute path), climbing no higher than the `ceilings`
/// (`GIT_CEILING_DIRECTORIES`: their own `.git` is never looked at).
///
/// `Ok(None)`: no repository, or `start` is inside a git directory or a bare repository (no work tree).
/// `Err`: the nearest `.git` is one git refuses; the caller reports it (and git would stop there too).
pub fn discover(
    fs: &dyn Fs,
    start: &Path,
    ceilings: &[PathBuf],
) -> Result<Option<Repository>, DiscoverError> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        match dot_git(fs, d) {
            DotGit::Repo(git_dir) => {
                let common_dir = common_dir_of(fs, &git_dir);
                let main_work_tree = if common_dir.file_name().is_some_and(|n| n == ".git")
                    && common_dir != git_dir
                {
                    common_dir
                        .parent()
                        .map_or_else(|| d.to_path_buf(), Path::to_path_buf)
                } else {
                    d.to_path_buf()
                };
                return Ok(Some(Repository {
                    work_tree: d.to_path_buf(),
                    git_dir,
                    common_dir,
                    main_work_tree,
                }));
            }
            DotGit::Broken(path, message) => {
                return Err(DiscoverError {
                    work_tree: d.to_path_buf(),
                    path,
                    message,
                });
            }
            DotGit::Absent => {}
        }
        if is_git_directory(fs, d) {
            return Ok(None); // inside `.git`, or a bare repository
        }
        let parent = d.parent();
        if parent.is_some_and(|p| ceilings.iter().any(|c| c == p)) {
            return Ok(None);
        }
        dir = parent;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn git_dir(fs: &MemFs, at: &str) {
        fs.mkdir(format!("{at}/objects"));
        fs.mkdir(format!("{at}/refs/heads"));
        fs.write(format!("{at}/HEAD"), "ref: refs/heads/main\n");
    }

    #[test]
    fn finds_the_work_tree_and_its_repository() {
        let fs = MemFs::new();
        git_dir(&fs, "/r/.git");
        fs.mkdir("/r/a/b");
        let repo = discover(&fs, Path::new("/r/a/b"), &[]).unwrap().unwrap();
        assert_eq!(repo.work_tree, Path::new("/r"));
        assert_eq!(repo.git_dir, Path::new("/r/.git"));
        assert_eq!(repo.common_dir, Path::new("/r/.git"));
        assert_eq!(repo.main_work_tree, Path::new("/r"));
    }

    #[test]
    fn linked_worktrees_share_the_main_work_tree() {
        let fs = MemFs::new();
        git_dir(&fs, "/src/main/.git");
        fs.write(
            "/src/main/.git/worktrees/feat/HEAD",
            "ref: refs/heads/feat\n",
        );
        fs.write("/src/main/.git/worktrees/feat/commondir", "../..\n");
        fs.write("/src/feat/.git", "gitdir: /src/main/.git/worktrees/feat\n");
        fs.mkdir("/src/feat/sub");
        let repo = discover(&fs, Path::new("/src/feat/sub"), &[])
            .unwrap()
            .unwrap();
        assert_eq!(repo.work_tree, Path::new("/src/feat"));
        assert_eq!(repo.git_dir, Path::new("/src/main/.git/worktrees/feat"));
        assert_eq!(repo.common_dir, Path::new("/src/main/.git"));
        assert_eq!(repo.main_work_tree, Path::new("/src/main"));
        // A submodule's gitdir has no commondir: its work tree is its own root.
        git_dir(&fs, "/src/main/.git/modules/sm");
        fs.write("/src/main/sm/.git", "gitdir: ../.git/modules/sm\n");
        let sm = discover(&fs, Path::new("/src/main/sm"), &[])
            .unwrap()
            .unwrap();
        assert_eq!(sm.git_dir, Path::new("/src/main/.git/modules/sm"));
        assert_eq!(sm.main_work_tree, Path::new("/src/main/sm"));
    }

    #[test]
    fn ceilings_inside_git_dir_and_invalid_dot_git() {
        let fs = MemFs::new();
        git_dir(&fs, "/t/.git");
        fs.mkdir("/t/ceil/x");
        assert!(
            discover(&fs, Path::new("/t/ceil/x"), &[])
                .unwrap()
                .is_some()
        );
        assert_eq!(
            discover(&fs, Path::new("/t/ceil/x"), &[PathBuf::from("/t")]),
            Ok(None)
        );
        assert_eq!(discover(&fs, Path::new("/t/.git/refs"), &[]), Ok(None));
        // An empty `.git` directory is not a repository: git looks further up.
        fs.mkdir("/t/inner/.git");
        let repo = discover(&fs, Path::new("/t/inner"), &[]).unwrap().unwrap();
        assert_eq!(repo.work_tree, Path::new("/t"));
        assert_eq!(discover(&fs, Path::new("/nowhere"), &[]), Ok(None));
    }

    #[test]
    fn broken_gitfiles_say_why() {
        let fs = MemFs::new();
        fs.write("/w/.git", "gitdir: /gone/.git/worktrees/w\n");
        let e = discover(&fs, Path::new("/w"), &[]).unwrap_err();
        assert_eq!(e.work_tree, Path::new("/w"));
        assert!(e.message.contains("does not exist"), "{}", e.message);
        fs.write("/v/.git", "nonsense\n");
        let e = discover(&fs, Path::new("/v"), &[]).unwrap_err();
        assert!(e.message.contains("is not a gitfile"), "{}", e.message);
        // The worktree's own git dir survives but its main repository is gone.
        fs.write("/keep/wt/HEAD", "ref: refs/heads/x\n");
        fs.write("/keep/wt/commondir", "/deleted/.git\n");
        fs.write("/u/.git", "gitdir: /keep/wt\n");
        let e = discover(&fs, Path::new("/u"), &[]).unwrap_err();
        assert!(
            e.message.contains("main repository /deleted/.git is gone"),
            "{}",
            e.message
        );
    }
}
