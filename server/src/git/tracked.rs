//! Whether git tracks a file: workspace trust asks it of `.claude/settings.local.json`, which is
//! the user's own file unless the repository commits it (then a clone brings it, and it is the
//! repository's word, not the user's).
//!
//! The file's repository is found from the file's own folder (so a `.claude` that is a submodule
//! answers from the submodule's index), and both the path as named and its real path are looked
//! up in that repository's index (a tracked link, or a `.claude` folder that is a tracked link to
//! another folder, counts). The index is read directly (no process), at most
//! [`MAX_INDEX_BYTES`]; an index the reader does not handle (a split or sparse index, another
//! hash) is [`Tracked::Unknown`], which a caller must treat as tracked.

use std::path::{Path, PathBuf};

use super::discover::discover;
use super::index::{parse_index, read_index_file};
use crate::fs::Fs;

/// The largest index read to answer (a bigger one is [`Tracked::Unknown`]).
pub const MAX_INDEX_BYTES: u64 = 256 << 20;

/// What git says of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tracked {
    /// In the index of the repository holding it.
    Yes,
    /// In a repository, and not in its index.
    No,
    /// No repository holds it.
    NotInRepository,
    /// Could not tell, and why.
    Unknown(String),
}

/// Does git track `file` (an absolute path)? `ceilings`: `GIT_CEILING_DIRECTORIES`.
pub fn tracks(fs: &dyn Fs, file: &Path, ceilings: &[PathBuf]) -> Tracked {
    let real = fs.canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let mut answer = Tracked::NotInRepository;
    for path in [file, real.as_path()] {
        match tracks_as(fs, path, ceilings) {
            Tracked::Yes => return Tracked::Yes,
            Tracked::Unknown(why) => answer = Tracked::Unknown(why),
            Tracked::No if answer == Tracked::NotInRepository => answer = Tracked::No,
            _ => {}
        }
        if real == file {
            break;
        }
    }
    answer
}

/// `path` looked up as named, in the repository that holds its folder.
fn tracks_as(fs: &dyn Fs, path: &Path, ceilings: &[PathBuf]) -> Tracked {
    let Some(dir) = path.parent() else {
        return Tracked::NotInRepository;
    };
    let repo = match discover(fs, dir, ceilings) {
        Ok(Some(r)) => r,
        Ok(None) => return Tracked::NotInRepository,
        Err(e) => return Tracked::Unknown(e.message),
    };
    let Ok(rel) = path.strip_prefix(&repo.work_tree) else {
        return Tracked::Unknown(format!(
            "{} is not below its work tree {}",
            path.display(),
            repo.work_tree.display()
        ));
    };
    let Some(rel) = rel.to_str() else {
        return Tracked::Unknown("the path is not valid UTF-8".into());
    };
    let index = repo.git_dir.join("index");
    match std::fs::metadata(&index) {
        Ok(m) if m.len() > MAX_INDEX_BYTES => {
            return Tracked::Unknown(format!(
                "{} is larger than {} MB",
                index.display(),
                MAX_INDEX_BYTES >> 20
            ));
        }
        _ => {}
    }
    let bytes = match read_index_file(&index) {
        Ok(Some((bytes, _))) => bytes,
        Ok(None) => return Tracked::No, // a new repository: nothing tracked yet
        Err(e) => return Tracked::Unknown(format!("{e:?}")),
    };
    let Some(parsed) = parse_index(bytes) else {
        return Tracked::Unknown(format!("{} is not an index git writes", index.display()));
    };
    let name = rel.replace(std::path::MAIN_SEPARATOR, "/");
    let i = parsed.lower_bound(name.as_bytes());
    if i < parsed.len() && parsed.name(i) == name.as_bytes() {
        return Tracked::Yes;
    }
    match parsed.unsupported {
        // The entry may sit in a part of the index this reader does not read.
        Some(what) => Tracked::Unknown(format!("the index is {what}")),
        None => Tracked::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::RealFs;
    use std::process::Command;

    #[allow(clippy::disallowed_methods)] // reason: the test makes real repositories with git.
    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn tracked_untracked_linked_and_outside() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        git(&repo, &["init", "-q"]);
        let local = repo.join(".claude/settings.local.json");
        std::fs::write(&local, "{}").unwrap();
        assert_eq!(tracks(&RealFs, &local, &[]), Tracked::No);
        git(&repo, &["add", "-f", ".claude/settings.local.json"]);
        assert_eq!(tracks(&RealFs, &local, &[]), Tracked::Yes);
        // A tracked folder that a link makes `.claude` of another checkout.
        let other = root.join("other");
        std::fs::create_dir_all(&other).unwrap();
        git(&other, &["init", "-q"]);
        std::fs::create_dir_all(other.join("cfg")).unwrap();
        std::fs::write(other.join("cfg/settings.local.json"), "{}").unwrap();
        std::os::unix::fs::symlink("cfg", other.join(".claude")).unwrap();
        git(&other, &["add", "cfg/settings.local.json", ".claude"]);
        assert_eq!(
            tracks(&RealFs, &other.join(".claude/settings.local.json"), &[]),
            Tracked::Yes
        );
        // Outside every repository.
        let plain = root.join("plain/.claude");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::write(plain.join("settings.local.json"), "{}").unwrap();
        assert_eq!(
            tracks(
                &RealFs,
                &plain.join("settings.local.json"),
                std::slice::from_ref(&root)
            ),
            Tracked::NotInRepository
        );
    }
}
