//! Auto-memory: where a project's memory directory is, and how MEMORY.md is capped.
//!
//! The directory is `~/.claude/projects/<slug>/memory/`, where the slug is the canonical git
//! root (the main work tree, shared by all worktrees) with every non-alphanumeric ASCII character
//! replaced by `-`. Only MEMORY.md enters the context, cut to 200 lines and then 25,000 bytes.

use std::path::{Path, PathBuf};

use crate::fs::Fs;

pub const MAX_LINES: usize = 200;
pub const MAX_BYTES: usize = 25_000;
pub const INDEX_FILE: &str = "MEMORY.md";

/// `/home/me/My Repo_v2.x` → `-home-me-My-Repo-v2-x`.
pub fn slug(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A work tree and the main work tree of its repository (they differ for linked worktrees).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitRoots {
    pub work_tree: PathBuf,
    pub canonical: PathBuf,
}

/// The git work tree holding `cwd` and its canonical root, from the crate's one discovery routine
/// ([`crate::git::discover`]: git's own rules, `GIT_CEILING_DIRECTORIES` semantics). A `.git` that git refuses (a
/// gitfile pointing nowhere) still marks the project root: the work tree is its own canonical root then.
pub fn find_git_roots(fs: &dyn Fs, cwd: &Path, ceilings: &[PathBuf]) -> Option<GitRoots> {
    match crate::git::discover(fs, cwd, ceilings) {
        Ok(Some(repo)) => Some(GitRoots {
            work_tree: repo.work_tree,
            canonical: repo.main_work_tree,
        }),
        Ok(None) => None,
        Err(broken) => Some(GitRoots {
            work_tree: broken.work_tree.clone(),
            canonical: broken.work_tree,
        }),
    }
}

/// The default memory directory of a project.
pub fn default_dir(home: &Path, project_root: &Path) -> PathBuf {
    home.join(".claude")
        .join("projects")
        .join(slug(project_root))
        .join("memory")
}

/// Validates a memory directory from a setting.
pub fn validate_dir(raw: &str) -> Result<PathBuf, String> {
    if raw.contains('\0') {
        return Err("memory directory: the path contains a NUL character".into());
    }
    if raw.starts_with("\\\\") || raw.starts_with("//") {
        return Err(format!(
            "memory directory: {raw:?} is a UNC network path; use a local directory"
        ));
    }
    let bytes = raw.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && raw.len() <= 3 {
        return Err(format!(
            "memory directory: {raw:?} is a drive root; use a directory below it"
        ));
    }
    let windows_absolute = bytes.len() >= 3 && bytes[1] == b':';
    if !raw.starts_with('/') && !windows_absolute {
        return Err(format!(
            "memory directory: {raw:?} is relative; use an absolute path"
        ));
    }
    if raw == "/" || raw.len() < 3 {
        return Err(format!(
            "memory directory: {raw:?} is too short; use a dedicated directory"
        ));
    }
    Ok(PathBuf::from(raw))
}

/// How MEMORY.md was cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub by_bytes: bool,
    pub total_lines: usize,
    pub kept_lines: usize,
    /// The size that counted for the byte cap.
    pub bytes: usize,
    /// 1-based number of the first line not loaded, and its text.
    pub first_cut: (usize, String),
}

/// Applies the caps: whole lines, 200 of them, then at most 25,000 bytes. Returns the text the
/// model sees (warning included) and what was cut.
pub fn cap(content: &str) -> (String, Option<Cut>) {
    let trimmed = content.trim();
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let total = lines.len();
    let mut kept = total.min(MAX_LINES);
    let line_cut = total > MAX_LINES;
    let mut text = lines[..kept].join("\n");
    let mut by_bytes = false;
    if text.len() > MAX_BYTES {
        by_bytes = true;
        let mut size = 0;
        let mut n = 0;
        for l in &lines[..kept] {
            let add = l.len() + usize::from(n > 0);
            if size + add > MAX_BYTES {
                break;
            }
            size += add;
            n += 1;
        }
        kept = n;
        text = lines[..kept].join("\n");
    }
    if !line_cut && !by_bytes {
        return (trimmed.to_string(), None);
    }
    let first_cut = (kept + 1, lines[kept].to_string());
    let quoted = quote(&first_cut.1);
    let cut_count = total - kept;
    let warning = if by_bytes {
        format!(
            "\n\n> WARNING: {INDEX_FILE} is {:.1}KB (limit: {:.1}KB) — index entries are too long. Only part of it was loaded: {cut_count} of {total} lines were cut off, starting at line {} (\"{quoted}\"). Keep index entries to one line under ~200 chars; move detail into topic files.",
            trimmed.len() as f64 / 1024.0,
            MAX_BYTES as f64 / 1024.0,
            kept + 1,
        )
    } else {
        format!(
            "\n\n> WARNING: {INDEX_FILE} is {total} lines (limit: {MAX_LINES}). Only part of it was loaded: {cut_count} of {total} lines were cut off, starting at line {} (\"{quoted}\"). Keep index entries to one line under ~200 chars; move detail into topic files.",
            kept + 1,
        )
    };
    text.push_str(&warning);
    let cut = Cut {
        by_bytes,
        total_lines: total,
        kept_lines: kept,
        bytes: trimmed.len(),
        first_cut,
    };
    (text, Some(cut))
}

/// A line quoted in a warning: at most 79 characters, then `…`.
fn quote(line: &str) -> String {
    if line.chars().count() > 79 {
        let mut s: String = line.chars().take(79).collect();
        s.push('…');
        s
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn slug_replaces_every_non_alphanumeric() {
        assert_eq!(
            slug(Path::new("/home/me/My Repo_v2.x")),
            "-home-me-My-Repo-v2-x"
        );
        assert_eq!(slug(Path::new("/a/ü")), "-a--");
    }

    #[test]
    fn worktrees_share_the_main_root() {
        let fs = MemFs::new();
        fs.mkdir("/src/main/.git/objects");
        fs.mkdir("/src/main/.git/refs");
        fs.write("/src/main/.git/HEAD", "ref: refs/heads/main\n");
        fs.write(
            "/src/main/.git/worktrees/feat/HEAD",
            "ref: refs/heads/feat\n",
        );
        fs.write("/src/main/.git/worktrees/feat/commondir", "../..\n");
        fs.write("/src/feat/.git", "gitdir: /src/main/.git/worktrees/feat\n");
        fs.mkdir("/src/feat/sub");
        let roots = find_git_roots(&fs, Path::new("/src/feat/sub"), &[]).unwrap();
        assert_eq!(roots.work_tree, Path::new("/src/feat"));
        assert_eq!(roots.canonical, Path::new("/src/main"));
        let main = find_git_roots(&fs, Path::new("/src/main"), &[]).unwrap();
        assert_eq!(main.canonical, Path::new("/src/main"));
    }

    #[test]
    fn ceilings_stop_the_search() {
        let fs = MemFs::new();
        fs.mkdir("/t/.git/objects");
        fs.mkdir("/t/.git/refs");
        fs.write("/t/.git/HEAD", "ref: refs/heads/main\n");
        fs.mkdir("/t/ceil/x");
        assert!(find_git_roots(&fs, Path::new("/t/ceil/x"), &[]).is_some());
        assert!(find_git_roots(&fs, Path::new("/t/ceil/x"), &[PathBuf::from("/t")]).is_none());
    }

    #[test]
    fn validation() {
        for bad in [
            "rel/dir",
            "/",
            "C:\\",
            "\\\\server\\share",
            "/a\0b",
            "//server/share",
            "a",
        ] {
            assert!(validate_dir(bad).is_err(), "{bad:?} should be rejected");
        }
        assert_eq!(validate_dir("/var/mem").unwrap(), Path::new("/var/mem"));
    }

    #[test]
    fn line_cap() {
        let text: String = (1..=260).map(|i| format!("- line {i}\n")).collect();
        let (out, cut) = cap(&text);
        let cut = cut.unwrap();
        assert!(!cut.by_bytes);
        assert_eq!((cut.total_lines, cut.kept_lines), (260, 200));
        assert!(out.starts_with("- line 1\n"));
        assert!(out.contains("- line 200\n\n> WARNING: MEMORY.md is 260 lines (limit: 200). Only part of it was loaded: 60 of 260 lines were cut off, starting at line 201 (\"- line 201\")."));
    }

    #[test]
    fn byte_cap_keeps_whole_lines() {
        let line = format!("- {}", "x".repeat(295));
        let text: String = (0..120).map(|_| format!("{line}\n")).collect();
        let (out, cut) = cap(&text);
        let cut = cut.unwrap();
        assert!(cut.by_bytes);
        assert_eq!(cut.kept_lines, 83);
        assert!(out.contains("MEMORY.md is 34.9KB (limit: 24.4KB) — index entries are too long. Only part of it was loaded: 37 of 120 lines were cut off, starting at line 84"));
        assert!(out.contains(&format!("(\"{}…\")", &line[..79])));
    }

    #[test]
    fn small_files_are_untouched() {
        assert_eq!(cap("\n- a\n- b\n\n"), ("- a\n- b".to_string(), None));
    }
}
