//! Diagnostics of one instruction file: every finding `check` reports for it, with "this glob
//! matches no file" as a hint (the editor shows it faded rather than as a warning).

use std::path::Path;

use crate::context::globs::{RuleMatcher, relative_to};
/// What a diagnostic is made of: the core's findings, which front ends render (the editor's
/// diagnostics, `check`'s lines and JSON).
pub use crate::context::{Finding, Severity};
use crate::context::{LintOptions, frontmatter, lint_file};
use crate::features::check::{is_rule_path, matchable_globs, rules_base};
use crate::features::files::FileList;
use crate::fs::Fs;

/// All findings for `path`, sorted by position. `workspace_files` (absolute paths) enables the
/// unmatched-glob hint for conditional rules; `None` skips it (e.g. while the scan runs).
pub fn diagnostics(
    fs: &dyn Fs,
    path: &Path,
    lint: &LintOptions,
    workspace_files: Option<&FileList>,
) -> Vec<Finding> {
    let mut out = lint_file(fs, path, lint);
    if let Some(files) = workspace_files
        && is_rule_path(path)
        && let Some(hint) = unmatched_glob_hint(fs, path, files)
    {
        out.push(hint);
    }
    out.sort_by_key(|f| (f.line, f.start_col));
    out.dedup();
    out
}

/// "This rule's globs match no file", on its first glob: a hint in the editor (shown faded), a
/// warning in `check` (which prints it).
pub fn unmatched_glob_finding(
    rule: &Path,
    globs: &[frontmatter::PathGlob],
    severity: Severity,
) -> Finding {
    let written: Vec<&str> = globs.iter().map(|g| g.glob.as_str()).collect();
    let list = crate::context::message::quote_list(&written);
    let (line, col, len) = globs
        .first()
        .map_or((0, 0, 0), |g| (g.line, g.col, g.glob.len()));
    Finding {
        path: rule.to_path_buf(),
        line: Some(line),
        start_col: col,
        end_col: col + len,
        severity,
        code: "glob-matches-nothing".into(),
        message: format!("paths {list} matches no file in this repository; the rule never applies"),
    }
}

/// A hint on the first glob of a conditional rule none of whose globs matches a workspace file.
pub fn unmatched_glob_hint(fs: &dyn Fs, rule: &Path, files: &FileList) -> Option<Finding> {
    let text = fs.read_text(rule).ok()?;
    let (globs, patterns) = matchable_globs(&text)?;
    let base = rules_base(rule)?;
    let matcher = RuleMatcher::new([&patterns[..]]);
    let hit =
        files.any(|f| relative_to(f, &base).is_some_and(|rel| !matcher.matches(rel).is_empty()));
    if hit {
        return None;
    }
    Some(unmatched_glob_finding(rule, &globs, Severity::Hint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn opts() -> LintOptions {
        LintOptions {
            cwd: "/p".into(),
            git_root: None,
            home: Some("/h".into()),
            config_dir: None,
        }
    }

    #[test]
    fn missing_include_is_an_error_on_its_line() {
        let fs = MemFs::with_files([("/p/CLAUDE.md", "# Hi\n\nsee @missing.md\n")]);
        let d = diagnostics(&fs, Path::new("/p/CLAUDE.md"), &opts(), None);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, Severity::Error);
        assert_eq!((d[0].line, d[0].start_col, d[0].end_col), (Some(2), 4, 15));
        assert!(
            d[0].message.contains("include not found: missing.md"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn unmatched_globs_are_hints() {
        let rule = "/p/.claude/rules/py.md";
        let fs = MemFs::with_files([(rule, "---\npaths: \"**/*.py\"\n---\nPython rules\n")]);
        let files = FileList::from_paths(Path::new("/p"), ["/p/src/a.ts"]);
        let d = diagnostics(&fs, Path::new(rule), &opts(), Some(&files));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Hint);
        assert_eq!(d[0].line, Some(1));
        let files = FileList::from_paths(Path::new("/p"), ["/p/src/a.py"]);
        assert!(diagnostics(&fs, Path::new(rule), &opts(), Some(&files)).is_empty());
        assert!(diagnostics(&fs, Path::new(rule), &opts(), None).is_empty());
    }

    fn codes(d: &[Finding]) -> Vec<&str> {
        d.iter().map(|f| f.code.as_str()).collect()
    }

    fn lint(cwd: &str, git_root: Option<&str>) -> LintOptions {
        LintOptions {
            cwd: cwd.into(),
            git_root: git_root.map(std::path::PathBuf::from),
            home: Some("/h".into()),
            config_dir: None,
        }
    }

    #[test]
    fn a_dot_slash_glob_never_matches_and_says_how_to_fix_it() {
        let rule = "/p/.claude/rules/r.md";
        let fs = MemFs::with_files([(rule, "---\npaths: ./src/*.ts\n---\nR\n")]);
        let d = diagnostics(&fs, Path::new(rule), &opts(), None);
        assert_eq!(codes(&d), ["glob-dot-slash"]);
        assert_eq!((d[0].line, d[0].start_col, d[0].end_col), (Some(1), 7, 17));
        assert!(
            d[0].message.contains("Write \"src/*.ts\""),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn a_comment_swallowed_by_the_yaml_retry_is_reported() {
        let rule = "/p/.claude/rules/r.md";
        let text = "---\ndescription: [draft\npaths: g/** # note\n---\nR\n";
        let fs = MemFs::with_files([(rule, text)]);
        let d = diagnostics(&fs, Path::new(rule), &opts(), None);
        assert_eq!(codes(&d), ["frontmatter", "glob-comment"], "{d:#?}");
        assert_eq!(d[0].severity, Severity::Warning);
        let c = &d[1];
        assert_eq!(c.line, Some(2));
        assert!(
            c.message
                .contains("the comment `# note` became part of the glob"),
            "{}",
            c.message
        );
        assert!(c.message.contains("Move the comment to its own line"));
    }

    #[test]
    fn an_include_whose_extension_is_not_read() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", "see @docs/api.mdx\n"),
            ("/p/docs/api.mdx", "text\n"),
        ]);
        let d = diagnostics(&fs, Path::new("/p/CLAUDE.md"), &opts(), None);
        assert_eq!(codes(&d), ["include-extension"]);
        assert_eq!((d[0].line, d[0].start_col), (Some(0), 4));
        assert!(
            d[0].message.contains(".mdx is not one; rename the file"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn an_include_above_cwd_is_dropped_in_a_subdirectory() {
        let fs = MemFs::with_files([
            ("/r/.git/HEAD", ""),
            ("/r/CLAUDE.md", "@docs/style.md\n@sub/in.md\n"),
            ("/r/docs/style.md", "style\n"),
            ("/r/sub/in.md", "in\n"),
        ]);
        // Working in /r/sub: the include above it is dropped, with the way to approve it.
        let d = diagnostics(
            &fs,
            Path::new("/r/CLAUDE.md"),
            &lint("/r/sub", Some("/r")),
            None,
        );
        assert_eq!(codes(&d), ["include-external"], "{d:#?}");
        assert_eq!(d[0].line, Some(0));
        assert!(
            d[0].message.contains("not loaded when Claude Code starts in /r/sub")
                && d[0].message.contains("Start it in /r, or set projects[\"/r\"].hasClaudeMdExternalIncludesApproved to true in ~/.claude.json"),
            "{}",
            d[0].message
        );
        // Working at the root: both load, and each says it is dropped in other subdirectories.
        let d = diagnostics(
            &fs,
            Path::new("/r/CLAUDE.md"),
            &lint("/r", Some("/r")),
            None,
        );
        assert_eq!(
            codes(&d),
            [
                "include-subdirectory-sessions",
                "include-subdirectory-sessions"
            ]
        );
        assert_eq!(d[0].severity, Severity::Hint);
        assert!(d[0].message.contains("(or in docs)"), "{}", d[0].message);
    }

    #[test]
    fn an_instruction_file_linked_to_outside_the_project() {
        let fs = MemFs::with_files([("/r/.git/HEAD", ""), ("/shared/team.md", "team\n")]);
        fs.symlink("/r/CLAUDE.md", "../shared/team.md");
        let d = diagnostics(
            &fs,
            Path::new("/r/CLAUDE.md"),
            &lint("/r", Some("/r")),
            None,
        );
        assert_eq!(codes(&d), ["instruction-link-outside"]);
        assert!(
            d[0].message.contains(
                "a symbolic link to /shared/team.md, outside /r: Claude Code loads it anyway"
            ),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn a_rules_link_that_leaves_the_project() {
        let fs = MemFs::with_files([("/r/.git/HEAD", ""), ("/shared/rules/k.md", "K\n")]);
        fs.symlink("/r/.claude/rules/k.md", "../../../shared/rules/k.md");
        let rule = Path::new("/r/.claude/rules/k.md");
        let d = diagnostics(&fs, rule, &lint("/r", Some("/r")), None);
        assert_eq!(codes(&d), ["rules-link-outside"]);
        assert!(d[0].message.starts_with("not loaded: this rule is reached through a symbolic link to /shared/rules/k.md, outside /r"), "{}", d[0].message);
        assert!(
            d[0].message
                .contains("Move the rule into .claude/rules, or set projects[\"/r\"]")
        );
        // Below cwd, approval does not help: the message says so.
        fs.symlink("/r/pkg/.claude/rules/k.md", "../../../../shared/rules/k.md");
        let d = diagnostics(
            &fs,
            Path::new("/r/pkg/.claude/rules/k.md"),
            &lint("/r", Some("/r")),
            None,
        );
        assert!(
            d[0].message.contains("never follow a link out of it"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn no_unmatched_hint_for_globs_already_reported_or_unconditional() {
        let rule = "/p/.claude/rules/r.md";
        let files = FileList::from_paths(Path::new("/p"), ["/p/src/a.ts"]);
        for text in [
            "---\npaths: ./x/*.py\n---\nR\n",
            "---\npaths: \"**\"\n---\nR\n",
            "---\npaths: \"[bad\"\n---\nR\n",
        ] {
            let fs = MemFs::with_files([(rule, text)]);
            let d = diagnostics(&fs, Path::new(rule), &opts(), Some(&files));
            assert!(
                !codes(&d).contains(&"glob-matches-nothing"),
                "{text:?}: {d:#?}"
            );
        }
    }
}
