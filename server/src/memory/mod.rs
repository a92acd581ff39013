//! Auto-memory: where a project's memory directory is, and how MEMORY.md is capped.
//!
//! The directory is `~/.claude/projects/<slug>/memory/`, where the slug is the canonical git
//! root (the main work tree, shared by all worktrees) with every non-alphanumeric ASCII character
//! replaced by `-`. Only MEMORY.md enters the context, cut to 200 lines and then 25,000 UTF-16
//! code units (what JavaScript's `length` counts: `ü` is 1, an emoji outside the BMP is 2).

pub mod extract;

use std::path::{Path, PathBuf};

use crate::fs::{Fs, normalize};

pub const MAX_LINES: usize = 200;
/// In UTF-16 code units.
pub const MAX_UNITS: usize = 25_000;
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

/// Folders of a `.claude` directory whose files Claude Code reads as instructions or behaviour.
const INSTRUCTION_FOLDERS: [&str; 5] = ["rules", "commands", "agents", "skills", "output-styles"];

/// Refuses a memory directory (already normalised by [`validate_dir`]) whose files would become
/// more than memory: inside `~/.claude` (settings, global rules, commands, agents; only the
/// default `~/.claude/projects/…` is allowed), or inside a rules, commands, agents, skills or
/// output-styles folder of any `.claude` directory. Memory extraction writes what a model
/// chose into it: there it would become instructions for every session. `claude_dir` is
/// `~/.claude` (or `$CLAUDE_CONFIG_DIR`).
pub fn refuse_instruction_dirs(dir: &Path, claude_dir: Option<&Path>) -> Result<(), String> {
    if let Some(claude) = claude_dir
        && dir.starts_with(claude)
        && !dir.starts_with(claude.join("projects"))
    {
        return Err(format!(
            "memory directory: {:?} lies inside {:?}, where Claude Code reads its settings, rules, \
             commands and agents: memories written there would act as instructions. Use a folder \
             of its own (the default is {:?}/projects/<project>/memory)",
            dir.to_string_lossy(),
            claude.to_string_lossy(),
            claude.to_string_lossy()
        ));
    }
    let names: Vec<&std::ffi::OsStr> = dir.iter().collect();
    for pair in names.windows(2) {
        if pair[0] == ".claude" && INSTRUCTION_FOLDERS.iter().any(|f| pair[1] == *f) {
            return Err(format!(
                "memory directory: {:?} lies inside a {:?} folder of a .claude directory, whose \
                 files Claude Code loads as instructions: memories written there would become \
                 instructions. Use a folder of its own",
                dir.to_string_lossy(),
                pair[1].to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// How MEMORY.md was cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The whole file is over the line cap.
    pub over_lines: bool,
    /// The whole file is over the size cap.
    pub over_units: bool,
    pub total_lines: usize,
    pub kept_lines: usize,
    /// The whole (trimmed) file's length in UTF-16 code units.
    pub units: usize,
    /// 1-based number of the first line not loaded, and its text.
    pub first_cut: (usize, String),
}

/// `units / 1024` rounded to one decimal as JavaScript's `toFixed(1)` does (a tie goes up),
/// with a trailing `.0` dropped: `30.1`, `35`, `24.4`.
pub fn kb(units: usize) -> String {
    let tenths = (units * 10 + 512) / 1024;
    match tenths % 10 {
        0 => format!("{}", tenths / 10),
        d => format!("{}.{d}", tenths / 10),
    }
}

/// Applies the caps to MEMORY.md's processed text (frontmatter and comments gone): trimmed,
/// lines 1-200, then whole lines while the text stays within 25,000 UTF-16 code units. Returns
/// the text the model sees (warning included) and what was cut. Which warning depends on the
/// whole file, not on which cap cut.
pub fn cap(content: &str) -> (String, Option<Cut>) {
    let trimmed = crate::js::trim(content);
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let total = lines.len();
    let units = crate::js::len_utf16(trimmed);
    let over_lines = total > MAX_LINES;
    let over_units = units > MAX_UNITS;
    if !over_lines && !over_units {
        return (trimmed.to_string(), None);
    }
    let mut kept = 0;
    let mut size = 0;
    for l in lines.iter().take(MAX_LINES) {
        let add = crate::js::len_utf16(l) + usize::from(kept > 0);
        if size + add > MAX_UNITS {
            break;
        }
        size += add;
        kept += 1;
    }
    let mut text = lines[..kept].join("\n");
    let first = kept + 1;
    let quoted = quote(lines.get(kept).copied().unwrap_or_default());
    let cut_count = total - kept;
    let what = match (over_lines, over_units) {
        (true, true) => format!("{INDEX_FILE} is {total} lines and {}KB.", kb(units)),
        (true, false) => format!("{INDEX_FILE} is {total} lines (limit: {MAX_LINES})."),
        _ => format!(
            "{INDEX_FILE} is {}KB (limit: {}KB) \u{2014} index entries are too long.",
            kb(units),
            kb(MAX_UNITS)
        ),
    };
    text.push_str(&format!(
        "\n\n> WARNING: {what} Only part of it was loaded: {cut_count} of {total} lines were cut off, starting at line {first} (\"{quoted}\"). Keep index entries to one line under ~200 chars; move detail into topic files."
    ));
    let cut = Cut {
        over_lines,
        over_units,
        total_lines: total,
        kept_lines: kept,
        units,
        first_cut: (
            first,
            lines.get(kept).copied().unwrap_or_default().to_string(),
        ),
    };
    (text, Some(cut))
}

/// A line quoted in a warning: at most 79 UTF-16 code units (a surrogate half at the cut is
/// dropped), then `…`.
fn quote(line: &str) -> String {
    if crate::js::len_utf16(line) > 79 {
        format!("{}\u{2026}", crate::js::prefix_utf16(line, 79))
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_directory_never_lies_where_files_become_instructions() {
        let claude = Path::new("/home/me/.claude");
        for bad in [
            "/home/me/.claude/rules",
            "/home/me/.claude",
            "/home/me/.claude/commands/mem",
            "/home/me/.claude/memories",
            "/work/app/.claude/rules/memory",
            "/work/app/.claude/agents",
            "/work/app/.claude/skills/x",
        ] {
            let e = refuse_instruction_dirs(Path::new(bad), Some(claude)).expect_err(bad);
            assert!(e.contains("instructions"), "{bad}: {e}");
        }
        for good in [
            "/home/me/.claude/projects/-work-app/memory",
            "/home/me/notes/memory",
            "/work/app/.claude/memory",
            "/work/app/rules",
        ] {
            assert!(
                refuse_instruction_dirs(Path::new(good), Some(claude)).is_ok(),
                "{good}"
            );
        }
    }
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
        assert!(cut.over_lines && !cut.over_units);
        assert_eq!((cut.total_lines, cut.kept_lines), (260, 200));
        assert!(out.starts_with("- line 1\n"));
        assert!(out.contains("- line 200\n\n> WARNING: MEMORY.md is 260 lines (limit: 200). Only part of it was loaded: 60 of 260 lines were cut off, starting at line 201 (\"- line 201\")."));
    }

    #[test]
    fn size_cap_keeps_whole_lines() {
        let line = format!("- {}", "x".repeat(295));
        let text: String = (0..120).map(|_| format!("{line}\n")).collect();
        let (out, cut) = cap(&text);
        let cut = cut.unwrap();
        assert!(cut.over_units && !cut.over_lines);
        assert_eq!(cut.kept_lines, 83);
        assert!(out.contains("MEMORY.md is 34.9KB (limit: 24.4KB) \u{2014} index entries are too long. Only part of it was loaded: 37 of 120 lines were cut off, starting at line 84"));
        assert!(out.contains(&format!("(\"{}\u{2026}\")", &line[..79])));
    }

    #[test]
    fn sizes_count_utf16_units() {
        // 100 emoji are 200 units (400 bytes); 150 such lines: 30.1 KB in units.
        let line = |i: usize| format!("- {i:03} {}", "\u{1F389}".repeat(100));
        let text: String = (1..=149).map(|i| line(i) + "\n").collect();
        let (out, cut) = cap(&text);
        let cut = cut.unwrap();
        assert_eq!(cut.kept_lines, 120);
        assert!(
            out.contains("MEMORY.md is 30.1KB (limit: 24.4KB)"),
            "{}",
            &out[out.len() - 400..]
        );
        // The quote stops at 79 units; the emoji cut in two is left out.
        let want = format!("(\"- 121 {}\u{2026}\")", "\u{1F389}".repeat(36));
        assert!(out.contains(&want));
        assert_eq!(cap("\u{FC}").0, "\u{FC}");
    }

    #[test]
    fn both_caps_wording_depends_on_the_whole_file() {
        // 300 lines of 99 units (29,999 with the newlines): over both caps, though only the
        // line cap cuts.
        let text: String = (1..=300)
            .map(|i| format!("L{i:03} {}\n", "y".repeat(94)))
            .collect();
        let (out, cut) = cap(&text);
        assert_eq!(cut.unwrap().kept_lines, 200);
        assert!(out.contains("> WARNING: MEMORY.md is 300 lines and 29.3KB. Only part of it was loaded: 100 of 300 lines were cut off, starting at line 201"));
    }

    #[test]
    fn kb_rounds_like_to_fixed() {
        assert_eq!(kb(25_000), "24.4");
        assert_eq!(kb(35 * 1024), "35");
        assert_eq!(kb(30_822), "30.1");
        // 256 units are 0.25 KB exactly: toFixed(1) rounds the tie up.
        assert_eq!(kb(256), "0.3");
    }

    #[test]
    fn small_files_are_untouched() {
        assert_eq!(cap("\n- a\n- b\n\n"), ("- a\n- b".to_string(), None));
    }
}
