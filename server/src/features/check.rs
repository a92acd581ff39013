//! `check`: every finding about every instruction file of a project.
//!
//! What is linted is what the preview reads, once per file by real path: the walk's files (under
//! the path and in the role the preview shows them: a rule reached through a link is linted as a
//! rule, under its real path), then the project's instruction files the walk does not reach
//! (below cwd, in other subdirectories). Every collection is indexed by a set or a map: linear in
//! the number of files.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use std::ops::ControlFlow;

use super::files::FileList;
use crate::context::globs::RuleMatcher;
pub use crate::context::globs::rules_base;
use crate::context::{self, Finding, LintOptions, Severity, frontmatter};
use crate::fs::Fs;

/// Instruction files of a project and the workspace's file list, from one pass over the tree.
#[derive(Clone, Debug, Default)]
pub struct ProjectScan {
    /// The directory scanned.
    pub root: PathBuf,
    /// Instruction files (CLAUDE.md, CLAUDE.local.md, AGENTS.md, .claude/CLAUDE.md, rules).
    pub instruction_files: Vec<PathBuf>,
    /// Skill files (`.claude/skills/<name>/SKILL.md`) anywhere in the project.
    pub skill_files: Vec<PathBuf>,
    /// Every other file, for "this glob matches nothing" hints.
    pub files: FileList,
    /// Directories or files the scan could not read.
    pub errors: Vec<Finding>,
    /// The instruction files that are symbolic links (the scan follows none: every other path
    /// is real once `root` is).
    pub linked: HashSet<PathBuf>,
}

impl ProjectScan {
    /// The real path of a scanned file, given `root_real`, the real path of [`ProjectScan::root`].
    fn real_path(&self, fs: &dyn Fs, root_real: &Path, path: &Path) -> PathBuf {
        if self.linked.contains(path) {
            return fs.canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        }
        match path.strip_prefix(&self.root) {
            Ok(rel) => root_real.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }
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

/// `.claude/skills/<name>/SKILL.md`.
pub fn is_skill_file(path: &Path) -> bool {
    let comps: Vec<_> = path
        .components()
        .rev()
        .map(|c| c.as_os_str())
        .take(4)
        .collect();
    comps.len() == 4 && comps[0] == "SKILL.md" && comps[2] == "skills" && comps[3] == ".claude"
}

/// Under some `.claude/agents/` (subfolders count): an agent file, or one that a rename makes
/// one.
pub fn is_agent_path(path: &Path) -> bool {
    let comps: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
    comps
        .windows(2)
        .any(|w| w[0] == ".claude" && w[1] == "agents")
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
    let mut out = ProjectScan {
        root: root.to_path_buf(),
        files: FileList::new(root),
        ..ProjectScan::default()
    };
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
        if is_skill_file(&path) {
            out.skill_files.push(path.clone());
        }
        if is_instruction_file(&path) {
            if linked_instruction {
                out.linked.insert(path.clone());
            }
            out.instruction_files.push(path.clone());
        }
        out.files.push(&path);
    }
    out.files.shrink_to_fit();
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
    /// How many instruction files were linted (each once, whatever links reach it).
    pub linted: usize,
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

/// What the repository says that waits for its users' trust (`crate::trust`), for a project's
/// CI: a committed `.claude/settings.local.json` (each user's own file, untracked; committed, a
/// clone brings it and it counts as the repository's); a repository file that approves its own
/// MCP servers (a warning: once a user trusts the folder they start unasked, and Claude Code's
/// `-p` mode starts them even in a folder never trusted); every other key that reaches outside
/// the project, with what trust would enable (information); and what would be refused even
/// then (a warning).
pub fn trust_findings(gate: &crate::trust::Gate, ctx: &context::Context) -> Vec<Finding> {
    use crate::trust::HeldStatus;
    use crate::trust::gate::Kind;
    let mut out = Vec::new();
    let local = ctx
        .cwd
        .join(".claude")
        .join(context::settings::LOCAL_SETTINGS_FILE);
    if gate.local_tracked {
        out.push(Finding::whole_file(
            local,
            Severity::Warning,
            "settings-local-tracked",
            "git tracks this file, so every clone brings it: Claude Code and claude-context read it as the repository's settings, not yours, and what of it reaches outside the project (MCP approvals, autoMemoryDirectory, hooks, env) waits for each user's trust. It is meant to be each user's own: untrack it (git rm --cached .claude/settings.local.json) and list it in .gitignore; shared settings go in .claude/settings.json",
        ));
    }
    let at = |h: &crate::trust::Held, severity, code: &str, message: String| Finding {
        path: h.file.clone(),
        line: h.line,
        start_col: h.cols.0,
        end_col: h.cols.1,
        severity,
        code: code.into(),
        message,
    };
    let servers: Vec<&str> = gate
        .held
        .iter()
        .filter(|h| h.kind == Kind::McpServer)
        .map(|h| h.key.as_str())
        .collect();
    for h in &gate.held {
        match (h.kind, h.status) {
            (Kind::McpServer, _) => {}
            (Kind::AutoMemoryDirectory, HeldStatus::Refused)
                if ctx
                    .findings
                    .iter()
                    .any(|f| f.code == "settings-memory-dir" && f.path == h.file) => {}
            (_, HeldStatus::Refused) => out.push(at(
                h,
                Severity::Warning,
                "trust-refused",
                format!("{} is refused even in a trusted folder: {}", h.key, h.reason),
            )),
            (Kind::McpApproval, _) => out.push(at(
                h,
                Severity::Warning,
                "mcp-self-approval",
                format!(
                    "{} in the repository's own settings approves its .mcp.json servers ({}): once a user trusts this folder, they start with no question. claude-context starts none before trust; Claude Code's -p mode starts them even in a folder never trusted. Let each user approve them (a chat asks), or approve them in .claude/settings.local.json (untracked) or your user settings",
                    h.key,
                    if servers.is_empty() {
                        "none configured now".to_string()
                    } else {
                        servers.join(", ")
                    }
                ),
            )),
            (kind, HeldStatus::NotSupported) => out.push(at(
                h,
                Severity::Information,
                "trust-held",
                format!(
                    "{} ({}) reaches outside the project: Claude Code applies it once a user trusts this folder (its -p mode even before); {}",
                    h.key,
                    h.detail,
                    kind_note(kind)
                ),
            )),
            (_, _) => out.push(at(
                h,
                Severity::Information,
                "trust-held",
                format!(
                    "{} ({}) reaches outside the project: it applies once a user trusts this folder, not before",
                    h.key, h.detail
                ),
            )),
        }
    }
    out
}

/// What claude-context does with a key it does not use.
fn kind_note(kind: crate::trust::gate::Kind) -> &'static str {
    use crate::trust::gate::Kind;
    match kind {
        Kind::Env => "claude-context passes no settings env to commands",
        Kind::Hooks => "claude-context runs no hooks (yet)",
        Kind::ApiKeyHelper => "claude-context never runs a key helper",
        Kind::StatusLine => "claude-context runs no status line command",
        _ => "claude-context does not use it",
    }
}

/// What a whole-project check reads from the environment besides its files.
pub struct Environment<'a> {
    /// The process environment (the skills' listing budget, the extensions' variables).
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// `PATH`'s directories: an MCP server's command is looked up there.
    pub path_dirs: &'a [PathBuf],
    pub git: &'a crate::git::GitOptions,
}

/// `claude-context check` on the project holding `cwd`: its root is the git work tree (or
/// `cwd`), scanned for instruction files; the walk's files linted with `ctx_opts`; skills and MCP
/// servers checked as a session at the default model would gather them; and the git snapshot's
/// findings (taken beside the scan: a block without status, or none, is a finding too).
pub fn check_project(
    fs: &dyn Fs,
    cwd: &Path,
    ctx_opts: &context::Options,
    env: &Environment<'_>,
) -> Report {
    check_project_with(fs, cwd, ctx_opts, env, None)
}

/// The directory [`check_project`] scans for `cwd`: the git work tree holding it, else `cwd`.
pub fn project_root(fs: &dyn Fs, cwd: &Path, ctx_opts: &context::Options) -> PathBuf {
    crate::memory::find_git_roots(fs, cwd, &ctx_opts.git_ceilings)
        .map_or(cwd.to_path_buf(), |r| r.work_tree)
}

/// [`check_project`], with the scan of [`project_root`] and the git snapshot given (a running
/// server's, kept current) instead of made.
pub fn check_project_with(
    fs: &dyn Fs,
    cwd: &Path,
    ctx_opts: &context::Options,
    env: &Environment<'_>,
    given: Option<(
        std::sync::Arc<ProjectScan>,
        crate::features::start_preview::GitResult,
    )>,
) -> Report {
    let root = project_root(fs, cwd, ctx_opts);
    // The repository as any user's first session would meet it (whatever this machine's answer):
    // nobody asked yet, read as once trusted, and a tracked `settings.local.json` as the
    // repository's.
    let at = crate::trust::Where {
        ceilings: ctx_opts.git_ceilings.clone(),
        ..Default::default()
    };
    let mut ctx_opts = ctx_opts.clone();
    ctx_opts.trust = crate::trust::of_folder(fs, &at, cwd, true).0;
    ctx_opts.trust.state = crate::trust::TrustState::NeverAsked;
    let ctx_opts = &ctx_opts;
    let (scan, git) = match given {
        Some((scan, git)) => (scan, Some(git)),
        None => std::thread::scope(|s| {
            let git = s.spawn(|| crate::git::snapshot(cwd, env.git));
            (std::sync::Arc::new(scan(&root)), git.join().ok())
        }),
    };
    let budget = (env.var)(crate::skills::listing::BUDGET_VARIABLE);
    let mut report = check_with(fs, ctx_opts, &scan, |ctx| {
        let ext = crate::extensions::gather(
            fs,
            ctx,
            &crate::extensions::Input {
                add_dirs: &[],
                model: crate::models::DEFAULT_MODEL,
                window: crate::models::window(crate::models::DEFAULT_MODEL),
                budget_variable: budget.as_deref(),
                var: env.var,
                state_dir: None,
                live: None,
            },
        );
        let mut out = extension_findings(fs, ctx, &ext, &scan, env.path_dirs);
        let gate = crate::trust::Gate::of(
            &ctx.cwd,
            ctx.settings(),
            Some(&ext.mcp),
            ctx.held_memory_dir.as_ref(),
            &ctx.findings,
            crate::trust::Verdict::default(),
        );
        out.extend(trust_findings(&gate, ctx));
        // Hooks: unknown events, matchers that match nothing, missing scripts.
        out.extend(super::hooks::read(fs, ctx).findings);
        // The permission rules: what cannot match, an allow a deny undoes. Every rule is judged
        // (read as in a trusted folder); what of them waits for trust is the trust findings'.
        let policy = crate::permissions::for_context(
            fs,
            ctx,
            &crate::permissions::Options {
                trusted: Some(true),
                ..Default::default()
            },
            false,
        );
        out.extend(super::permissions::findings(&policy));
        out
    });
    for f in git.as_ref().map(git_findings).unwrap_or_default() {
        report.by_file.entry(f.path.clone()).or_default().push(f);
    }
    report
}

/// Lints the files the walk reads plus the project's other instruction files (`scan`), each
/// once by real path, and checks that every conditional rule's globs match some workspace file.
pub fn check(fs: &dyn Fs, ctx_opts: &context::Options, scan: &ProjectScan) -> Report {
    check_with(fs, ctx_opts, scan, |_| Vec::new())
}

/// [`check`], with what `extra` finds given the walk (skills, MCP servers) added; each finding
/// names its own file.
pub fn check_with(
    fs: &dyn Fs,
    ctx_opts: &context::Options,
    scan: &ProjectScan,
    extra: impl FnOnce(&context::Context) -> Vec<Finding>,
) -> Report {
    let ctx = context::build(fs, ctx_opts);
    let lint = LintOptions {
        cwd: ctx.cwd.clone(),
        git_root: ctx.git_root.clone(),
        home: ctx_opts.home.clone(),
        config_dir: ctx_opts.config_dir.clone(),
    };
    // The walk's files first, as the preview shows them (user, managed, ancestors, memory, and
    // rules reached through links under their real paths), then the scan's.
    let mut reals: HashSet<PathBuf> = HashSet::new();
    let mut targets: Vec<(PathBuf, Option<(context::FileKind, context::Scope)>)> = Vec::new();
    for rec in &ctx.files {
        let linted = !matches!(
            rec.kind,
            context::FileKind::Include | context::FileKind::Settings
        );
        if linted && reals.insert(rec.real.clone()) {
            targets.push((rec.path.clone(), Some((rec.kind, rec.scope))));
        }
    }
    let root_real = fs
        .canonicalize(&scan.root)
        .unwrap_or_else(|_| scan.root.clone());
    for path in &scan.instruction_files {
        if reals.insert(scan.real_path(fs, &root_real, path)) {
            targets.push((path.clone(), None));
        }
    }
    let mut report = Report {
        linted: targets.len(),
        ..Report::default()
    };
    let linted: HashSet<&Path> = targets.iter().map(|(p, _)| p.as_path()).collect();
    for (path, kind) in &targets {
        // A finding names its own file: an include problem found while linting CLAUDE.md
        // belongs to the included file that holds the `@` line.
        let findings = match kind {
            Some((kind, scope)) => context::lint_as(fs, path, *kind, *scope, &lint),
            None => context::lint_file(fs, path, &lint),
        };
        for finding in findings {
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
    // Walk findings not tied to a linted file (unreadable rules directories, caps, ...).
    for f in &ctx.findings {
        if !linted.contains(f.path.as_path()) {
            report
                .by_file
                .entry(f.path.clone())
                .or_default()
                .push(f.clone());
        }
    }
    for f in unmatched_globs(fs, &ctx, scan, &root_real) {
        report.by_file.entry(f.path.clone()).or_default().push(f);
    }
    for f in unmatched_excludes(&ctx, scan, &root_real) {
        report.by_file.entry(f.path.clone()).or_default().push(f);
    }
    for f in extra(&ctx) {
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

/// A warning for each conditional rule of the project whose globs match no workspace file: the
/// walk's conditional rules (with the base of the rules folder that lists them, links included),
/// then the scan's other rules, each once by real path. Rules are grouped by base directory so
/// each file is matched once per group, and a group stops as soon as every rule in it matched.
pub fn unmatched_globs(
    fs: &dyn Fs,
    ctx: &context::Context,
    scan: &ProjectScan,
    root_real: &Path,
) -> Vec<Finding> {
    struct Rule {
        path: PathBuf,
        globs: Vec<frontmatter::PathGlob>,
        patterns: Vec<String>,
    }
    // (path shown, real path, base directory as a real path)
    let mut candidates: Vec<(PathBuf, PathBuf, PathBuf)> = ctx
        .conditional_rules()
        .map(|(base, r)| (r.path.clone(), r.real.clone(), base.to_path_buf()))
        .collect();
    for path in scan.instruction_files.iter().filter(|p| is_rule_path(p)) {
        let Some(base) = rules_base(path) else {
            continue;
        };
        let base = match base.strip_prefix(&scan.root) {
            Ok(rel) => root_real.join(rel),
            Err(_) => base,
        };
        let real = scan.real_path(fs, root_real, path);
        candidates.push((path.clone(), real, base));
    }
    let mut seen = HashSet::new();
    let mut groups: BTreeMap<PathBuf, Vec<Rule>> = BTreeMap::new();
    for (path, real, base) in candidates {
        if !seen.insert(real.clone()) {
            continue;
        }
        let Ok(text) = fs.read_text(&real) else {
            continue;
        };
        let Some((globs, patterns)) = matchable_globs(&text) else {
            continue;
        };
        groups.entry(base).or_default().push(Rule {
            path,
            globs,
            patterns,
        });
    }
    let mut out = Vec::new();
    for (base, rules) in groups {
        // The scan's files are under `scan.root`, the bases under its real path.
        let Ok(base_rel) = base.strip_prefix(root_real) else {
            continue;
        };
        let matcher = RuleMatcher::new(rules.iter().map(|r| &r.patterns[..]));
        let mut hit = vec![false; rules.len()];
        let mut left = rules.len();
        scan.files.for_each(|f| {
            let Some(rel) = f
                .strip_prefix(&scan.root)
                .ok()
                .and_then(|r| context::globs::relative_to(r, base_rel))
            else {
                return ControlFlow::Continue(());
            };
            for (ri, _) in matcher.matches(rel) {
                if !hit[ri] {
                    hit[ri] = true;
                    left -= 1;
                }
            }
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
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

/// A warning for each `claudeMdExcludes` pattern that excludes nothing: it matches no file the
/// walk considered (managed files and MEMORY.md aside, which are never excluded) and no file of
/// the project. Relative and invalid patterns have their own finding from the settings reader.
pub fn unmatched_excludes(
    ctx: &context::Context,
    scan: &ProjectScan,
    root_real: &Path,
) -> Vec<Finding> {
    let settings = ctx.settings();
    // A scanned file by real path (the patterns are matched against real paths).
    let real_of = |p: &Path| match p.strip_prefix(&scan.root) {
        Ok(rel) => root_real.join(rel),
        Err(_) => p.to_path_buf(),
    };
    let candidates: Vec<PathBuf> = ctx
        .files
        .iter()
        .filter(|r| {
            !matches!(r.scope, context::Scope::Managed | context::Scope::Memory)
                && r.kind != context::FileKind::Settings
        })
        .map(|r| r.path.clone())
        .chain(scan.instruction_files.iter().map(|p| real_of(p)))
        .collect();
    let mut out = Vec::new();
    for p in &settings.excludes {
        if p.is_relative()
            || candidates.iter().any(|c| p.matches(c))
            // The project's other files one at a time: the list is the whole tree.
            || scan.files.any(|f| p.matches(&real_of(f)))
        {
            continue;
        }
        let example = ctx.cwd.join("CLAUDE.md");
        out.push(Finding {
            path: p.source.clone(),
            line: p.line,
            start_col: p.cols.0,
            end_col: p.cols.1,
            severity: Severity::Warning,
            code: "exclude-matches-nothing".into(),
            message: format!(
                "claudeMdExcludes pattern {} matches no instruction file and no file of this project, so it excludes nothing. Patterns are matched against absolute paths, such as {}",
                crate::context::message::quoted(&p.pattern),
                example.display()
            ),
        });
    }
    out
}

/// What `check` says about skills and MCP servers: every skill of the session's start (user,
/// project, `--add-dir`, commands: invalid frontmatter, no description, over the cap, hidden by
/// another of the same name, shell commands), the project's other skill files (below cwd), the
/// `.mcp.json` of cwd (invalid JSON or entries, a command not found, unset variables) and
/// `~/.claude.json`.
pub fn extension_findings(
    fs: &dyn Fs,
    ctx: &context::Context,
    ext: &crate::extensions::Extensions,
    scan: &ProjectScan,
    path_dirs: &[PathBuf],
) -> Vec<Finding> {
    let mut out = ext.findings.clone();
    let known: HashSet<&Path> = ext
        .skills
        .skills
        .skills
        .iter()
        .map(|s| s.file.as_path())
        .chain(
            ext.skills
                .skills
                .shadowed
                .iter()
                .map(|s| s.skill.file.as_path()),
        )
        .collect();
    let max = crate::skills::max_desc_chars(ctx.settings());
    for f in &scan.skill_files {
        let real = fs.canonicalize(f).unwrap_or_else(|_| f.clone());
        if known.contains(f.as_path()) || known.contains(real.as_path()) {
            continue;
        }
        out.extend(crate::skills::lint_file(fs, f, max));
    }
    out.extend(crate::styles::lint(&ext.styles, ext.style_setting.as_ref()));
    let mcp_json = ctx.cwd.join(crate::mcp::config::MCP_FILE);
    out.extend(crate::mcp::config::lint(
        fs, &ext.mcp, &mcp_json, &ctx.cwd, path_dirs,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn options(cwd: &str) -> context::Options {
        context::Options {
            cwd: cwd.into(),
            home: Some("/h".into()),
            managed_dir: "/m".into(),
            ..context::Options::default()
        }
    }

    /// The preview loads CLAUDE.md, `docs/a.md` once (two rule links lead to it) and the three
    /// rules of a linked folder the scan does not enter: `check` lints those five, once each.
    #[test]
    fn check_lints_what_the_walk_reads_once_by_real_path() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", "TOP\n"),
            ("/p/docs/a.md", "---\npaths: nowhere/**\n---\nA\n"),
            ("/p/shared/one.md", "ONE\n"),
            ("/p/shared/two.md", "TWO @missing.md\n"),
            ("/p/shared/three.md", "THREE\n"),
        ]);
        fs.symlink("/p/.claude/rules/a.md", "../../docs/a.md");
        fs.symlink("/p/.claude/rules/again.md", "../../docs/a.md");
        fs.symlink("/p/.claude/rules/linked", "../../shared");
        let scan = ProjectScan {
            root: "/p".into(),
            instruction_files: ["CLAUDE.md", ".claude/rules/a.md", ".claude/rules/again.md"]
                .iter()
                .map(|p| Path::new("/p").join(p))
                .collect(),
            linked: [".claude/rules/a.md", ".claude/rules/again.md"]
                .iter()
                .map(|p| Path::new("/p").join(p))
                .collect(),
            files: FileList::from_paths(Path::new("/p"), ["/p/src/x.ts"]),
            skill_files: Vec::new(),
            errors: Vec::new(),
        };
        let report = check(&fs, &options("/p"), &scan);
        assert_eq!(report.linted, 5, "{report:#?}");
        let files: Vec<&Path> = report.by_file.keys().map(PathBuf::as_path).collect();
        // The rule reached through links is linted as a rule, under the path the preview
        // shows: its glob matches no file (said once), and the include in a linked rule too.
        assert_eq!(
            files,
            [Path::new("/p/docs/a.md"), Path::new("/p/shared/two.md")],
            "{report:#?}"
        );
        let codes: Vec<&str> = report.by_file[Path::new("/p/docs/a.md")]
            .iter()
            .map(|f| f.code.as_str())
            .collect();
        assert_eq!(codes, ["glob-matches-nothing"]);
    }
}
