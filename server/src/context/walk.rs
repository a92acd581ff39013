//! The walk at session start: managed, user, root-to-cwd, additional directories, memory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::globs::RuleMatcher;
use super::load::{Loader, ParseCache, Project, Top, memory_finding};
use super::{Context, FileKind, FileRecord, Finding, Scope, Severity, Status};
use crate::fs::{Fs, Kind};
use crate::memory;

/// Rules directories deeper than this are treated as a symlink loop.
const MAX_RULES_DEPTH: usize = 16;

/// Everything a walk depends on besides the files themselves. Built from the environment at
/// the edge (CLI, LSP); the core never reads environment variables.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Absolute, normalised.
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// `/etc/claude-code`, or `CLAUDE_CONTEXT_MANAGED_DIR`.
    pub managed_dir: PathBuf,
    /// `--add-dir` directories.
    pub additional_dirs: Vec<PathBuf>,
    /// `CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1`.
    pub load_additional_dirs: bool,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1`.
    pub disabled: bool,
    /// A validated memory directory from a setting; `None` for the default.
    pub memory_dir: Option<PathBuf>,
    /// `false` turns auto-memory off.
    pub auto_memory: bool,
    /// `GIT_CEILING_DIRECTORIES`.
    pub git_ceilings: Vec<PathBuf>,
}

/// Conditional rules of one rules directory, matched together.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuleGroup {
    /// Globs are relative to this directory.
    pub base: PathBuf,
    pub rules: Vec<CondRule>,
    pub matcher: RuleMatcher,
}

#[derive(Clone, Debug)]
pub(crate) struct CondRule {
    pub record: FileRecord,
    pub includes: Vec<super::includes::IncludeRef>,
}

/// The rule files of a rules directory, in readdir order (recursive, a subdirectory at its
/// position in its parent's listing). Symlinks are followed, but each directory (by its
/// canonical path) is read at most once, so a symlink loop or a fan of links cannot blow up.
pub(crate) fn rule_files(fs: &dyn Fs, dir: &Path, findings: &mut Vec<Finding>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut visited = HashSet::new();
    visited.insert(fs.canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    collect_rules(fs, dir, 0, &mut out, &mut visited, findings);
    out
}

fn collect_rules(
    fs: &dyn Fs,
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    visited: &mut HashSet<PathBuf>,
    findings: &mut Vec<Finding>,
) {
    let entries = match fs.read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) if depth == 0 && e.raw_os_error() == Some(20) => return, // ENOTDIR
        Err(e) => {
            findings.push(Finding::whole_file(
                dir.to_path_buf(),
                Severity::Warning,
                "unreadable-dir",
                format!("rules directory not read: {e}"),
            ));
            return;
        }
    };
    for entry in entries {
        let path = dir.join(&entry.name);
        match entry.kind {
            Some(Kind::Dir) => {
                if depth + 1 >= MAX_RULES_DEPTH {
                    findings.push(Finding::whole_file(path.clone(), Severity::Warning, "rules-too-deep", format!(
                            "rules directory nested more than {MAX_RULES_DEPTH} levels (a symlink loop?); not read further"
                        )));
                    continue;
                }
                let canonical = fs.canonicalize(&path).unwrap_or_else(|_| path.clone());
                if !visited.insert(canonical.clone()) {
                    findings.push(Finding::whole_file(path.clone(), Severity::Warning, "rules-symlink-loop", format!(
                            "rules directory not read again: it is {} (a symlink loop or a second link to it)",
                            canonical.display()
                        )));
                    continue;
                }
                collect_rules(fs, &path, depth + 1, out, visited, findings);
            }
            Some(Kind::File) | Some(Kind::Special) if entry.name.ends_with(".md") => out.push(path),
            None if entry.name.ends_with(".md") => findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "unreadable",
                "rule not loaded: broken symlink or symlink loop",
            )),
            _ => {}
        }
    }
}

struct Walk<'a> {
    fs: &'a dyn Fs,
    project: Project,
    seen: HashSet<PathBuf>,
    files: Vec<FileRecord>,
    findings: Vec<Finding>,
    groups: Vec<RuleGroup>,
}

impl Walk<'_> {
    fn loader(&mut self) -> (Loader<'_>, &mut Vec<RuleGroup>) {
        (
            Loader {
                fs: self.fs,
                project: &self.project,
                seen: &mut self.seen,
                out: &mut self.files,
                findings: &mut self.findings,
            },
            &mut self.groups,
        )
    }

    /// Loads a top file with its includes. Returns whether the file exists (even if empty).
    fn file(&mut self, path: &Path, scope: Scope, kind: FileKind, follow: bool) -> bool {
        let (mut loader, _) = self.loader();
        let Some(top) = loader.read_top(path, scope, kind) else {
            return false;
        };
        loader.place(top, scope, kind, Status::Loaded, follow, None, |_| {});
        true
    }

    /// A rules directory: unconditional rules load now; conditional ones wait in a group whose
    /// globs are relative to `base`. Returns whether any rule file exists.
    fn rules(&mut self, dir: &Path, scope: Scope, base: &Path) -> bool {
        let files = rule_files(self.fs, dir, &mut self.findings);
        let mut group = RuleGroup {
            base: base.to_path_buf(),
            ..RuleGroup::default()
        };
        let any = !files.is_empty();
        for path in files {
            let (mut loader, groups) = self.loader();
            let Some(top) = loader.read_top(&path, scope, FileKind::Rule) else {
                continue;
            };
            match conditional_globs(&top) {
                Some(globs) => {
                    // The same rules directory can be met twice (HOME's `.claude/rules` as user
                    // rules, then again in the walk when HOME is an ancestor of cwd).
                    let known = groups
                        .iter()
                        .any(|g| g.rules.iter().any(|r| r.record.path == path));
                    if loader.seen.contains(&path) || known {
                        continue;
                    }
                    let mut record = FileRecord::new(path, scope, FileKind::Rule, Status::Inactive);
                    record.reason = Some(format!(
                        "paths {}: no touched file matches",
                        quote_list(&globs)
                    ));
                    record.globs = globs;
                    record.tokens = super::estimate_tokens(&top.processed.content);
                    record.content = top.processed.content.clone();
                    if record.content.trim().is_empty() {
                        record.status = Status::Empty;
                        record.reason =
                            Some("empty after frontmatter and comments are stripped".into());
                        self.files.push(record);
                        continue;
                    }
                    self.files.push(record.clone());
                    group.rules.push(CondRule {
                        record,
                        includes: top.processed.includes.clone(),
                    });
                }
                None => {
                    loader.place(
                        top,
                        scope,
                        FileKind::Rule,
                        Status::Loaded,
                        true,
                        None,
                        |_| {},
                    );
                }
            }
        }
        if !group.rules.is_empty() {
            group.matcher = RuleMatcher::new(group.rules.iter().map(|r| &r.record.globs[..]));
            self.groups.push(group);
        }
        any
    }

    /// CLAUDE.md, .claude/CLAUDE.md, rules, CLAUDE.local.md of one directory.
    fn directory(&mut self, dir: &Path) -> bool {
        let mut any = self.file(
            &dir.join("CLAUDE.md"),
            Scope::Project,
            FileKind::ClaudeMd,
            true,
        );
        any |= self.file(
            &dir.join(".claude").join("CLAUDE.md"),
            Scope::Project,
            FileKind::ClaudeMd,
            true,
        );
        any |= self.rules(&dir.join(".claude").join("rules"), Scope::Project, dir);
        any |= self.file(
            &dir.join("CLAUDE.local.md"),
            Scope::Local,
            FileKind::LocalMd,
            true,
        );
        any
    }
}

/// A rule's globs when it is conditional.
pub(crate) fn conditional_globs(top: &Top) -> Option<Vec<String>> {
    let globs = top.processed.frontmatter.as_ref()?.paths.as_ref()?;
    Some(globs.iter().map(|g| g.glob.clone()).collect())
}

pub(crate) fn quote_list(globs: &[String]) -> String {
    globs
        .iter()
        .map(|g| format!("{g:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The walk at session start.
pub fn build(fs: &dyn Fs, opts: &Options) -> Context {
    build_with(fs, opts, Arc::default())
}

/// The walk, reusing the parses of files whose text did not change since `parses` saw them
/// (a long-running server keeps one [`ParseCache`] and rebuilds walks through it).
pub fn build_with(fs: &dyn Fs, opts: &Options, parses: Arc<ParseCache>) -> Context {
    let cwd = opts.cwd.clone();
    let roots = memory::find_git_roots(fs, &cwd, &opts.git_ceilings);
    let git_root = roots.as_ref().map(|r| r.work_tree.clone());
    let project_root = git_root.clone().unwrap_or_else(|| cwd.clone());
    let mut inside = vec![cwd.clone()];
    inside.extend(git_root.clone());
    if opts.load_additional_dirs {
        inside.extend(opts.additional_dirs.iter().cloned());
    }
    let mut keys = vec![project_root.clone()];
    if cwd != project_root {
        keys.push(cwd.clone());
    }
    let mut walk = Walk {
        fs,
        project: Project::new(inside, keys, opts.home.clone(), parses),
        seen: HashSet::new(),
        files: Vec::new(),
        findings: Vec::new(),
        groups: Vec::new(),
    };
    let memory_dir = if opts.auto_memory {
        opts.memory_dir.clone().or_else(|| {
            let canonical = roots.as_ref().map_or(&cwd, |r| &r.canonical);
            opts.home
                .as_ref()
                .map(|h| memory::default_dir(h, canonical))
        })
    } else {
        None
    };

    if !opts.disabled {
        // 1. Managed.
        let managed = &opts.managed_dir;
        walk.file(
            &managed.join("CLAUDE.md"),
            Scope::Managed,
            FileKind::ClaudeMd,
            true,
        );
        walk.rules(
            &managed.join(".claude").join("rules"),
            Scope::Managed,
            &project_root,
        );

        // 2. User.
        if let Some(home) = &opts.home {
            let user = home.join(".claude");
            walk.file(
                &user.join("CLAUDE.md"),
                Scope::User,
                FileKind::ClaudeMd,
                true,
            );
            walk.rules(&user.join("rules"), Scope::User, &project_root);
        }

        // 3. Root to cwd.
        let dirs: Vec<&Path> = {
            let mut d: Vec<&Path> = cwd.ancestors().collect();
            d.reverse();
            d
        };
        let mut found = false;
        for dir in &dirs {
            found |= walk.directory(dir);
        }
        // AGENTS.md stands in for the whole project walk only when it found nothing.
        for dir in &dirs {
            let path = dir.join("AGENTS.md");
            if found {
                if fs.is_file(&path) {
                    let mut rec =
                        FileRecord::new(path, Scope::Project, FileKind::AgentsMd, Status::Inactive);
                    rec.reason = Some(
                        "AGENTS.md is read only when no CLAUDE.md, CLAUDE.local.md or rule exists"
                            .into(),
                    );
                    walk.files.push(rec);
                }
            } else {
                walk.file(&path, Scope::Project, FileKind::AgentsMd, false);
            }
        }

        // 4. Additional directories.
        if opts.load_additional_dirs {
            for dir in &opts.additional_dirs {
                walk.directory(dir);
            }
        }

        // 5. Auto-memory, last.
        if let Some(dir) = &memory_dir {
            let path = dir.join(memory::INDEX_FILE);
            let (mut loader, _) = walk.loader();
            if let Some(top) = loader.read_top(&path, Scope::Memory, FileKind::Memory) {
                let (text, cut) = memory::cap(&top.processed.content);
                if let Some(cut) = &cut {
                    loader.findings.push(memory_finding(&path, cut));
                }
                let reason = cut.map(|c| {
                    format!(
                        "cut to {} of {} lines (warning included)",
                        c.kept_lines, c.total_lines
                    )
                });
                loader.place(
                    top,
                    Scope::Memory,
                    FileKind::Memory,
                    Status::Loaded,
                    false,
                    reason,
                    |r| {
                        r.content = text;
                    },
                );
            }
        }
    }

    Context {
        cwd,
        git_root,
        project_root,
        memory_dir,
        files: walk.files,
        findings: walk.findings,
        rule_groups: walk.groups,
        project: walk.project,
        nested: Default::default(),
    }
}
