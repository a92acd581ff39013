//! Where the tools may look and write: the workspace folders plus the directories the user
//! allowed, and the resolution of a path the model wrote to the real file it names.
//!
//! A path is judged by its real path: the longest existing prefix is canonicalised (every
//! symbolic link followed), and what does not exist yet is appended as plain names. A `..` in
//! the part that does not exist, or a symbolic link whose target is missing, is refused, since
//! either could lead somewhere the check did not look. Tools then open and write the *real* path,
//! never the written one.

use std::io;
use std::path::{Component, Path, PathBuf};

/// What happens to a path outside the workspace and the allowed directories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutsidePolicy {
    /// Refused with an error result that says how to allow it (the default: the spec refuses
    /// paths outside the workspace unless the user allowed them).
    #[default]
    Refuse,
    /// The user is asked for each call (or once for the session, per tool and path).
    Ask,
}

/// The folders a session works in. All paths are kept in their real form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workspace {
    roots: Vec<PathBuf>,
    allowed: Vec<PathBuf>,
    /// Git directories the folders' repositories use outside them (`sensitive::git_dirs`).
    git_dirs: Vec<PathBuf>,
}

impl Workspace {
    /// `roots` are the workspace folders (the first is where relative paths and Bash start);
    /// `allowed` the extra directories the user allowed (`--add-dir`, a setting). Each is
    /// resolved to its real path now; one that does not exist is kept in its lexical form.
    pub fn new(
        roots: impl IntoIterator<Item = PathBuf>,
        allowed: impl IntoIterator<Item = PathBuf>,
    ) -> Workspace {
        let real = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or_else(|_| lexical(&p));
        let roots: Vec<PathBuf> = roots.into_iter().map(real).collect();
        let allowed: Vec<PathBuf> = allowed.into_iter().map(real).collect();
        let all: Vec<PathBuf> = roots.iter().chain(&allowed).cloned().collect();
        Workspace {
            git_dirs: super::sensitive::git_dirs(&all),
            roots,
            allowed,
        }
    }

    /// What a change to the real path `real` can make run (a git directory, `.gitattributes`,
    /// editor settings: `sensitive.rs`), or `None` for an ordinary file.
    pub(crate) fn runs_code(&self, real: &Path) -> Option<&'static str> {
        super::sensitive::judge(real, &self.git_dirs)
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn allowed(&self) -> &[PathBuf] {
        &self.allowed
    }

    /// The first workspace folder: the base of relative paths and Bash's working directory.
    pub fn primary(&self) -> Option<&Path> {
        self.roots.first().map(PathBuf::as_path)
    }

    /// Is a real path inside a workspace folder or an allowed directory?
    pub fn contains(&self, real: &Path) -> bool {
        self.roots
            .iter()
            .chain(&self.allowed)
            .any(|root| real.starts_with(root))
    }

    /// The path as written made absolute (joined to the first folder), without touching the disk.
    pub(crate) fn absolute(&self, raw: &Path) -> Option<PathBuf> {
        if raw.is_absolute() {
            Some(raw.to_path_buf())
        } else {
            self.primary().map(|p| p.join(raw))
        }
    }
}

/// A path the model wrote, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Absolute, as written (`.` and `..` kept): what the model and the editor call it.
    pub written: PathBuf,
    /// Every link followed: what is read, written and judged.
    pub real: PathBuf,
    pub exists: bool,
    pub inside: bool,
}

/// Resolves `raw` (absolute, or relative to the first workspace folder). `Err` is a message for
/// the model.
pub(crate) fn resolve(ws: &Workspace, raw: &str) -> Result<Resolved, String> {
    if raw.is_empty() {
        return Err("The path is empty.".into());
    }
    if raw.contains('\0') {
        return Err("The path contains a NUL character.".into());
    }
    let written = ws.absolute(Path::new(raw)).ok_or_else(|| {
        format!("`{raw}` is a relative path and this session has no workspace folder; give an absolute path.")
    })?;
    let (real, exists) =
        real_path(&written).map_err(|e| format!("Cannot resolve {}: {e}", written.display()))?;
    let inside = ws.contains(&real);
    Ok(Resolved {
        written,
        real,
        exists,
        inside,
    })
}

/// The real path of `path` and whether it exists. The longest existing prefix is canonicalised;
/// the rest must be plain names (no `..`), and must not start with a dangling symbolic link.
fn real_path(path: &Path) -> io::Result<(PathBuf, bool)> {
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = path;
    loop {
        match std::fs::canonicalize(cur) {
            Ok(base) => {
                let exists = tail.is_empty();
                if let Some(first) = tail.last()
                    && std::fs::symlink_metadata(base.join(first)).is_ok()
                {
                    // Something is there that canonicalize could not follow: a dangling link.
                    return Err(io::Error::other(
                        "it is a symbolic link whose target does not exist",
                    ));
                }
                let mut real = base;
                for name in tail.iter().rev() {
                    real.push(name);
                }
                return Ok((real, exists));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut comps = cur.components();
                match comps.next_back() {
                    Some(Component::Normal(name)) => tail.push(name),
                    Some(Component::CurDir) => {}
                    Some(Component::ParentDir) => {
                        return Err(io::Error::other(
                            "a `..` follows a directory that does not exist",
                        ));
                    }
                    _ => return Err(e),
                }
                cur = comps.as_path();
            }
            Err(e) => return Err(e),
        }
    }
}

/// The real path of an absolute path (links followed as far as it exists), or the path with `.`
/// and `..` folded when it cannot be resolved.
pub(crate) fn real_of(path: &Path) -> PathBuf {
    real_path(path).map_or_else(|_| lexical(path), |(r, _)| r)
}

/// The real paths of the files an absolute glob pattern names now (`*`, `?`, `[…]` within one
/// name, `**` across folders), visiting at most `cap` entries; links are not followed into
/// folders. For judging a command's arguments, never for listing.
pub(crate) fn expand(pattern: &Path, cap: usize) -> Vec<PathBuf> {
    let mut base = PathBuf::new();
    let mut rest = Vec::new();
    for c in pattern.components() {
        let s = c.as_os_str().to_string_lossy();
        if rest.is_empty() && !s.contains(['*', '?', '[']) {
            base.push(c.as_os_str());
        } else {
            rest.push(s.into_owned());
        }
    }
    if rest.is_empty() {
        return vec![real_of(pattern)];
    }
    let Ok(glob) = globset::GlobBuilder::new(&rest.join("/"))
        .literal_separator(true)
        .build()
    else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    let deep = rest.iter().any(|r| r.contains("**"));
    let max_depth = if deep { usize::MAX } else { rest.len() };
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(base.clone(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > cap {
                return out;
            }
            let p = e.path();
            let Ok(rel) = p.strip_prefix(&base) else {
                continue;
            };
            if matcher.is_match(rel) {
                out.push(real_of(&p));
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && depth + 1 < max_depth {
                stack.push((p, depth + 1));
            }
        }
    }
    out
}

/// `.` and `..` folded without the disk (for a folder that does not exist).
pub(crate) fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// The message for a path refused by [`OutsidePolicy::Refuse`].
pub(crate) fn refusal(ws: &Workspace, r: &Resolved) -> String {
    let via = if r.real != lexical(&r.written) {
        format!(" (it resolves to {})", r.real.display())
    } else {
        String::new()
    };
    let folders: Vec<String> = ws
        .roots
        .iter()
        .chain(&ws.allowed)
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "Refused: {}{via} is outside the workspace folders ({}). Tools only read and write inside \
         them; the user can allow more directories in the settings.",
        r.written.display(),
        if folders.is_empty() {
            "none".to_string()
        } else {
            folders.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_first_folder_and_dotdot_is_resolved_by_the_os() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("ws/src")).unwrap();
        std::fs::write(root.join("secret"), "x").unwrap();
        let ws = Workspace::new([root.join("ws")], []);
        let r = resolve(&ws, "src/new.rs").unwrap();
        assert_eq!(r.real, root.join("ws/src/new.rs"));
        assert!(r.inside && !r.exists);
        let r = resolve(&ws, "src/../../secret").unwrap();
        assert_eq!(r.real, root.join("secret"));
        assert!(!r.inside && r.exists);
        assert!(resolve(&ws, "nope/../../secret").is_err());
        assert!(resolve(&ws, "").is_err());
        assert!(resolve(&Workspace::default(), "rel").is_err());
    }

    #[test]
    fn a_commands_glob_expands_to_the_files_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("config")).unwrap();
        for f in [".env", "a.md", "config/app.env"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let mut got = expand(&root.join(".e*"), 100);
        got.sort();
        assert_eq!(got, [root.join(".env")]);
        let mut got = expand(&root.join("**/*.env"), 100);
        got.sort();
        assert_eq!(got, [root.join(".env"), root.join("config/app.env")]);
        assert!(expand(&root.join("*"), 1).len() <= 1);
    }
}
