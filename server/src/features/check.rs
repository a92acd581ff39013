//! `check`: every finding about every instruction file of a project.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::context::globs::RuleMatcher;
pub use crate::context::globs::rules_base;
use crate::context::{self, Finding, LintOptions, Severity, frontmatter};
use crate::fs::Fs;

/// Instruction files of a project and the workspace's file list, from one pass over the tree.
#[derive(Clone, Debug, Default)]
pub struct ProjectScan {
    /// Instruction files (CLAUDE.md, CLAUDE.local.md, AGENTS.md, .claude/CLAUDE.md, rules).
    pub instruction_files: Vec<PathBuf>,
    /// Every other file, absolute, for "this glob matches nothing" hints.
    pub files: Vec<PathBuf>,
    /// Directories or files the scan could not read.
    pub errors: Vec<Finding>,
}

/// Is `path` an instruction file by name and place?
pub fn is_instruction_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    if matches!(name, "CLAUDE.md" | "CLAUDE.local.md" | "AGENTS.md") {
        return true;
    }
    name.ends_with(".md") && is_rule_path(path)
}

/// Under some `.claude/rules/`.
pub fn is_rule_path(path: &Path) -> bool {
    let comps: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
    comps
        .windows(2)
        .any(|w| w[0] == ".claude" && w[1] == "rules")
}

/// Walks `root` honouring `.gitignore` (and always skipping `.git`), collecting instruction files
/// and the file list. Hidden directories are walked only when named `.claude`.
pub fn scan(root: &Path) -> ProjectScan {
    let mut out = ProjectScan::default();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .parents(false)
        .require_git(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir())
                && name.starts_with('.')
                && name != ".claude"
                && e.depth() > 0)
        })
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                out.errors.push(scan_error(root, &err));
                continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        // A link is listed (not followed): an instruction file that is a link is still linted,
        // since Claude Code loads it wherever it leads.
        let linked_instruction =
            ft.is_symlink() && is_instruction_file(entry.path()) && entry.path().is_file();
        if !ft.is_file() && !linked_instruction {
            continue;
        }
        let path = entry.into_path();
        if is_instruction_file(&path) {
            out.instruction_files.push(path.clone());
        }
        out.files.push(path);
    }
    out
}

fn scan_error(root: &Path, err: &ignore::Error) -> Finding {
    fn path_of(err: &ignore::Error) -> Option<&Path> {
        match err {
            ignore::Error::WithPath { path, .. } => Some(path),
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                path_of(err)
            }
            ignore::Error::Loop { child, .. } => Some(child),
            _ => None,
        }
    }
    let path = path_of(err).unwrap_or(root).to_path_buf();
    let message = match err {
        ignore::Error::WithPath { err, .. } => err.to_string(),
        other => other.to_string(),
    };
    Finding::whole_file(
        path,
        Severity::Warning,
        "unreadable-dir",
        format!("not scanned for instruction files: {message}"),
    )
}

/// The findings a git snapshot's result deserves (a block without status, or no block for a repository git refuses):
/// warnings, so that `check` reports them without failing a build.
pub fn git_findings(
    result: &Result<Option<crate::git::GitSnapshot>, crate::git::GitError>,
) -> Vec<Finding> {
    crate::git::findings(result)
        .into_iter()
        .map(|g| Finding::whole_file(g.path, Severity::Warning, g.code, g.message))
        .collect()
}

/// One file's findings, grouped for display.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub by_file: BTreeMap<PathBuf, Vec<Finding>>,
}

impl Report {
    pub fn count(&self, sev: Severity) -> usize {
        self.by_file
            .values()
            .flatten()
            .filter(|f| f.severity == sev)
            .count()
    }
}

/// Lints `files` (instruction files) plus the user, managed and memory files that apply to the
/// project, and checks that every conditional rule's globs match some workspace file.
pub fn check(fs: &dyn Fs, ctx_opts: &context::Options, scan: &ProjectScan) -> Report {
    let ctx = context::build(fs, ctx_opts);
    let lint = LintOptions {
        cwd: ctx.cwd.clone(),
        git_root: ctx.git_root.clone(),
        home: ctx_opts.home.clone(),
    };
    let mut files: Vec<PathBuf> = scan.instruction_files.clone();
    // Files outside the tree that the walk reads: user, managed, ancestors, memory.
    for rec in &ctx.files {
        if rec.kind != context::FileKind::Include && !files.contains(&rec.path) {
            files.push(rec.path.clone());
        }
    }
    let mut report = Report::default();
    for f in &files {
        // A finding names its own file: an include problem found while linting CLAUDE.md
        // belongs to the included file that holds the `@` line.
        for finding in context::lint_file(fs, f, &lint) {
            report
                .by_file
                .entry(finding.path.clone())
                .or_default()
                .push(finding);
        }
    }
    for f in &scan.errors {
        report
            .by_file
            .entry(f.path.clone())
            .or_default()
            .push(f.clone());
    }
    // Walk findings not tied to a linted file (unreadable rules directories, ...).
    for f in &ctx.findings {
        if !files.contains(&f.path) {
            report
                .by_file
                .entry(f.path.clone())
                .or_default()
                .push(f.clone());
        }
    }
    for f in unmatched_globs(fs, scan) {
        report.by_file.entry(f.path.clone()).or_default().push(f);
    }
    for v in report.by_file.values_mut() {
        v.sort_by_key(|f| (f.line, f.start_col));
        v.dedup();
    }
    report
}

/// A rule's globs for the "matches no file" check: the written globs and the normalised
/// patterns worth matching. `None` when the rule is unconditional, or when none of its patterns
/// can match anything (invalid, `./...`): those are reported on their own.
pub fn matchable_globs(text: &str) -> Option<(Vec<frontmatter::PathGlob>, Vec<String>)> {
    let written = frontmatter::split(text).0?.paths?;
    let patterns: Vec<String> =
        context::globs::normalize(&written.iter().map(|g| g.glob.as_str()).collect::<Vec<_>>())?
            .into_iter()
            .map(|p| p.text)
            .filter(|p| {
                context::globs::check(p).is_ok() && context::globs::never_matches(p).is_none()
            })
            .collect();
    if patterns.is_empty() {
        return None;
    }
    Some((written, patterns))
}

/// A warning for each conditional rule in the project whose globs match no workspace file.
/// Rules are grouped by base directory so each file is matched once per group.
pub fn unmatched_globs(fs: &dyn Fs, scan: &ProjectScan) -> Vec<Finding> {
    struct Rule {
        path: PathBuf,
        globs: Vec<frontmatter::PathGlob>,
        patterns: Vec<String>,
    }
    let mut groups: BTreeMap<PathBuf, Vec<Rule>> = BTreeMap::new();
    for path in scan.instruction_files.iter().filter(|p| is_rule_path(p)) {
        let Ok(text) = fs.read_text(path) else {
            continue;
        };
        let Some((globs, patterns)) = matchable_globs(&text) else {
            continue;
        };
        let Some(base) = rules_base(path) else {
            continue;
        };
        groups.entry(base).or_default().push(Rule {
            path: path.clone(),
            globs,
            patterns,
        });
    }
    let mut out = Vec::new();
    for (base, rules) in groups {
        let matcher = RuleMatcher::new(rules.iter().map(|r| &r.patterns[..]));
        let mut hit = vec![false; rules.len()];
        for f in &scan.files {
            if let Some(rel) = context::globs::relative_to(f, &base) {
                for (ri, _) in matcher.matches(rel) {
                    hit[ri] = true;
                }
            }
            if hit.iter().all(|h| *h) {
                break;
            }
        }
        for (rule, hit) in rules.iter().zip(hit) {
            if hit {
                continue;
            }
            out.push(super::diagnostics::unmatched_glob_finding(
                &rule.path,
                &rule.globs,
                Severity::Warning,
            ));
        }
    }
    out
}
