//! Diagnostics of one instruction file: every finding `check` reports for it, with "this glob
//! matches no file" as a hint (the editor shows it faded rather than as a warning).

use std::path::{Path, PathBuf};

use crate::context::globs::{RuleMatcher, relative_to};
use crate::context::{Finding, LintOptions, Severity, frontmatter, lint_file};
use crate::features::check::{is_rule_path, rules_base};
use crate::fs::Fs;

/// All findings for `path`, sorted by position. `workspace_files` (absolute paths) enables the
/// unmatched-glob hint for conditional rules; `None` skips it (e.g. while the scan runs).
pub fn diagnostics(
    fs: &dyn Fs,
    path: &Path,
    lint: &LintOptions,
    workspace_files: Option<&[PathBuf]>,
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
    let list = globs
        .iter()
        .map(|g| format!("{:?}", g.glob))
        .collect::<Vec<_>>()
        .join(", ");
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
pub fn unmatched_glob_hint(fs: &dyn Fs, rule: &Path, files: &[PathBuf]) -> Option<Finding> {
    let text = fs.read_text(rule).ok()?;
    let globs = frontmatter::split(&text).0?.paths?;
    let base = rules_base(rule)?;
    let patterns: Vec<String> = globs.iter().map(|g| g.glob.clone()).collect();
    let matcher = RuleMatcher::new([&patterns[..]]);
    let hit = files
        .iter()
        .any(|f| relative_to(f, &base).is_some_and(|rel| !matcher.matches(rel).is_empty()));
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
        let files = vec![PathBuf::from("/p/src/a.ts")];
        let d = diagnostics(&fs, Path::new(rule), &opts(), Some(&files));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Hint);
        assert_eq!(d[0].line, Some(1));
        let files = vec![PathBuf::from("/p/src/a.py")];
        assert!(diagnostics(&fs, Path::new(rule), &opts(), Some(&files)).is_empty());
        assert!(diagnostics(&fs, Path::new(rule), &opts(), None).is_empty());
    }
}
