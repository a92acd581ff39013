//! Auto-memory: where a project's memory directory is, and how MEMORY.md is capped.
//!
//! The directory is `~/.claude/projects/<slug>/memory/`, where the slug is the canonical git
//! root (the main work tree, shared by all worktrees) with every non-alphanumeric ASCII character
//! replaced by `-`. Only MEMORY.md enters the context, cut to 200 lines and then 25,000 bytes.

use std::path::{Path, PathBuf};

use crate::fs::{Fs, normalize};

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

/// Finds the git work tree holding `cwd` by looking for `.git`, never climbing into a ceiling
/// directory (`GIT_CEILING_DIRECTORIES` semantics).
pub fn find_git_roots(fs: &dyn Fs, cwd: &Path, ceilings: &[PathBuf]) -> Option<GitRoots> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        if let Ok(meta) = fs.metadata(&dot_git) {
            match meta.kind {
                crate::fs::Kind::Dir => {
                    return Some(GitRoots {
                        work_tree: d.to_path_buf(),
                        canonical: d.to_path_buf(),
                    });
                }
                crate::fs::Kind::File => {
                    let canonical = worktree_main_root(fs, d, &dot_git).unwrap_or(d.to_path_buf());
                    return Some(GitRoots {
                        work_tree: d.to_path_buf(),
                        canonical,
                    });
                }
                crate::fs::Kind::Special => {}
            }
        }
        let parent = d.parent();
        if let Some(p) = parent
            && ceilings.iter().any(|c| c == p)
        {
            return None;
        }
        dir = parent;
    }
    None
}

/// For a `.git` file (`gitdir: <path>`), the main work tree: the parent of the common dir.
fn worktree_main_root(fs: &dyn Fs, work_tree: &Path, dot_git: &Path) -> Option<PathBuf> {
    let text = fs.read_text(dot_git).ok()?;
    let gitdir = text.trim().strip_prefix("gitdir:")?.trim();
    let gitdir = normalize(work_tree, Path::new(gitdir));
    let common = match fs.read_text(&gitdir.join("commondir")) {
        Ok(c) => normalize(&gitdir, Path::new(c.trim())),
        // A submodule's gitdir has no commondir: its work tree is its own root.
        Err(_) => return Some(work_tree.to_path_buf()),
    };
    if common.file_name().is_some_and(|n| n == ".git") {
        common.parent().map(Path::to_path_buf)
    } else {
        Some(work_tree.to_path_buf())
    }
}

/// The default memory directory of a project.
pub fn default_dir(home: &Path, project_root: &Path) -> PathBuf {
    home.join(".claude")
        .join("projects")
        .join(slug(project_root))
        .join("memory")
}

/// Validates a memory directory from a setting (`--memory-dir`, `CLAUDE_CONTEXT_MEMORY_DIR`,
/// `memory.memoryDir`) and returns it normalised. The checks run on the absolute, lexically
/// normalised form, so `/tmp/..`, `/./` and `/..` are the root they name and are refused as
/// the root. Refused, with a message that names the value: a NUL, a UNC network path, a path that
/// is relative on this system (`rel/dir`, `~/mem`, and on Unix `C:\x`, which is a relative
/// name there: accepting it would read a `MEMORY.md` from the process's working directory), a
/// drive-relative `C:x` or a drive root `C:\` on Windows, the root itself, and a normalised
/// path shorter than 3 characters.
pub fn validate_dir(raw: &str) -> Result<PathBuf, String> {
    if raw.contains('\0') {
        return Err(format!(
            "memory directory: {raw:?} contains a NUL character"
        ));
    }
    if raw.starts_with("\\\\") || raw.starts_with("//") {
        return Err(format!(
            "memory directory: {raw:?} is a UNC network path; use a local directory"
        ));
    }
    let bytes = raw.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    let path = Path::new(raw);
    if !path.is_absolute() {
        let why = if drive && cfg!(not(windows)) {
            "is a Windows drive path, which is relative on this system"
        } else if drive {
            "is relative to the drive's current directory"
        } else {
            "is relative"
        };
        return Err(format!(
            "memory directory: {raw:?} {why}; use an absolute path"
        ));
    }
    let normal = normalize(Path::new("/"), path);
    let shown = if normal.as_os_str() == raw {
        format!("{raw:?}")
    } else {
        format!("{raw:?} (that is {:?})", normal.to_string_lossy())
    };
    if normal.parent().is_none() {
        return Err(format!(
            "memory directory: {shown} is the root directory; use a dedicated directory"
        ));
    }
    if normal.as_os_str().len() < 3 {
        return Err(format!(
            "memory directory: {shown} is too short; use a dedicated directory"
        ));
    }
    Ok(normal)
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
        fs.mkdir("/src/main/.git/worktrees/feat");
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
        fs.mkdir("/t/.git");
        fs.mkdir("/t/ceil/x");
        assert!(find_git_roots(&fs, Path::new("/t/ceil/x"), &[]).is_some());
        assert!(find_git_roots(&fs, Path::new("/t/ceil/x"), &[PathBuf::from("/t")]).is_none());
    }

    #[test]
    fn validation() {
        for bad in [
            "rel/dir",
            "~/mem",
            "/",
            "C:\\",
            "\\\\server\\share",
            "/a\0b",
            "//server/share",
            "a",
            "/a",
        ] {
            let err = validate_dir(bad).expect_err(bad);
            assert!(
                err.contains(&format!("{bad:?}")),
                "the message names the value: {err}"
            );
        }
        assert_eq!(validate_dir("/var/mem").unwrap(), Path::new("/var/mem"));
        assert_eq!(
            validate_dir("/var/./mem/../mem2/").unwrap(),
            Path::new("/var/mem2")
        );
    }

    /// Every spelling of the root is the root: the check runs on the normalised path.
    #[test]
    fn the_root_in_disguise_is_refused() {
        for root in [
            "/..",
            "/./",
            "/tmp/..",
            "/tmp/../..",
            "/a/b/../../",
            "/.",
            "///",
        ] {
            let err = validate_dir(root).expect_err(root);
            assert!(
                err.contains("root directory") || err.contains("UNC"),
                "{root:?}: {err}"
            );
        }
        assert_eq!(
            validate_dir("/tmp/..").unwrap_err(),
            "memory directory: \"/tmp/..\" (that is \"/\") is the root directory; use a dedicated directory"
        );
        // Normalised to two characters.
        assert!(validate_dir("/a/b/..").unwrap_err().contains("too short"));
    }

    /// On Unix, `C:\x` is a relative name: accepting it loaded a MEMORY.md from the working
    /// directory.
    #[cfg(unix)]
    #[test]
    fn windows_drive_paths_are_relative_on_unix() {
        for raw in ["C:\\x", "C:\\Users\\me\\mem", "c:/mem", "C:mem"] {
            let err = validate_dir(raw).expect_err(raw);
            assert!(err.contains("relative on this system"), "{raw:?}: {err}");
        }
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
