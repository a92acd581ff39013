//! Files attached lazily when the session touches a file (opens, reads, writes, @-mentions).
//!
//! Only a file under cwd (by its written path and by its real path) attaches anything, and a
//! touched file is never attached itself. For one touch, in order: the matching conditional
//! rules of the managed and user rules (matched relative to cwd); then, for each directory
//! strictly below cwd down to the file's directory (outer first), the first time it is reached,
//! its `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md` and rules in listing order (an
//! unconditional rule, or a conditional rule's includes), then its conditional rules that match;
//! last, the matching conditional rules of the walk's rules directories, root to cwd.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::globs::{RuleMatcher, relative_to};
use super::load::{Budget, Loader, excluded_record, real_path};
use super::walk::{
    CondRule, Follow, MAX_DIR_DEPTH, RuleGroup, RulesLinkOut, conditional_patterns, rule_files,
    rules_link_finding,
};
use super::{Context, FileKind, FileRecord, Finding, GlobMatch, Scope, Severity, Status};
use crate::fs::Fs;

/// One attachment: a file's record (status `attached`) and the touched file that caused it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub record: FileRecord,
    pub trigger: PathBuf,
}

impl Attachment {
    /// `<system-reminder>\nContents of <path>:\n\n<content>\n</system-reminder>`; not trimmed.
    pub fn text(&self) -> String {
        super::render::attachment(&self.record.path, &self.record.content)
    }
}

/// What a directory below cwd contributes, in order.
#[derive(Clone, Debug)]
enum NestedItem {
    /// An instruction file or an unconditional rule.
    File {
        path: PathBuf,
        real: PathBuf,
        kind: FileKind,
        scope: Scope,
    },
    /// The includes of conditional rule `i`, in the rule's place.
    Includes(usize),
    /// A file a `claudeMdExcludes` pattern leaves out (its record, status `excluded`).
    Excluded(Box<FileRecord>),
}

/// The instruction files of a directory below cwd. Scanned once per [`Context`] and shared by
/// every session built on it (see [`Context::forget`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct NestedDir {
    /// The directory with every link resolved.
    real: PathBuf,
    /// Its real path is not under cwd: nothing below it attaches anything.
    outside: bool,
    items: Vec<NestedItem>,
    conditional: Vec<CondRule>,
    matcher: RuleMatcher,
    /// What the scan reported (an unreadable rules directory, say), handed to each session once.
    findings: Vec<Finding>,
}

/// Session state for lazy attachments: each file is attached at most once per session.
#[derive(Clone, Debug, Default)]
pub struct Attacher {
    /// Real paths of what the session has: loaded, attached, or touched.
    seen: HashSet<PathBuf>,
    /// Nested directories this session has reached.
    visited: HashSet<PathBuf>,
    pub attachments: Vec<Attachment>,
    pub findings: Vec<Finding>,
    /// Every record produced while attaching, skipped includes too.
    pub records: Vec<FileRecord>,
    /// What this session's attachments may still read.
    budget: Budget,
}

impl Attacher {
    /// A session that starts from `ctx`: what the walk loaded counts as seen.
    pub fn new(ctx: &Context) -> Attacher {
        Attacher {
            seen: ctx
                .files
                .iter()
                .filter(|f| matches!(f.status, Status::Loaded))
                .map(|f| f.real.clone())
                .collect(),
            ..Attacher::default()
        }
    }

    /// Touches `file` (absolute, or relative to cwd; a path under the cwd as given counts as
    /// under the real cwd). Returns how many attachments it added.
    pub fn touch(&mut self, fs: &dyn Fs, ctx: &Context, file: &Path) -> usize {
        let file = ctx.session_path(file);
        let before = self.attachments.len();
        if ctx.disabled {
            return 0;
        }
        let Some(rel) = relative_to(&file, &ctx.cwd) else {
            // Outside cwd: attaches nothing, but is never attached later either.
            self.seen
                .insert(fs.canonicalize(&file).unwrap_or_else(|_| file.clone()));
            return 0;
        };

        // The directories strictly below cwd down to the file's, and the file's real path.
        let depth = rel.components().count() - 1;
        if depth > MAX_DIR_DEPTH {
            self.seen.insert(file.clone());
            self.findings.push(Finding::whole_file(
                file.clone(),
                Severity::Warning,
                "cap-depth",
                format!(
                    "this file is {} directories below the working directory: claude-context looks at most {} below it (a cap against runaway trees; Claude Code has none), so touching it attaches nothing here",
                    super::message::thousands(depth as u64),
                    super::message::thousands(MAX_DIR_DEPTH as u64)
                ),
            ));
            return 0;
        }
        let mut dirs: Vec<(PathBuf, std::sync::Arc<NestedDir>)> = Vec::new();
        let mut dir = ctx.cwd.clone();
        if let Some(rel_dir) = rel.parent() {
            for comp in rel_dir.components() {
                dir.push(comp);
                let parent_real = dirs.last().map_or(&ctx.cwd, |(_, n)| &n.real);
                let nested = ctx.nested_dir(&dir, || scan_nested(fs, ctx, &dir, parent_real));
                dirs.push((dir.clone(), nested));
            }
        }
        let parent_real = dirs.last().map_or(&ctx.cwd, |(_, n)| &n.real);
        let name = file.file_name().unwrap_or_default();
        let real = match fs.is_symlink(&file) {
            Ok(true) => fs
                .canonicalize(&file)
                .unwrap_or_else(|_| parent_real.join(name)),
            _ => parent_real.join(name),
        };
        self.seen.insert(real.clone());
        if !real.starts_with(&ctx.cwd) {
            return 0;
        }

        let mut records = Vec::new();
        let early = |g: &&RuleGroup| matches!(g.scope, Scope::Managed | Scope::User);
        // 1-2. Managed and user conditional rules, relative to cwd.
        self.match_groups(
            ctx,
            ctx.rule_groups.iter().filter(early),
            &file,
            &mut records,
        );
        // 3. Directories below cwd, outer first.
        for (dir, nested) in &dirs {
            let first = (!nested.items.is_empty() || !nested.findings.is_empty())
                && !self.visited.contains(dir);
            if first {
                self.visited.insert(dir.clone());
                self.findings.extend(nested.findings.iter().cloned());
                let reason = format!(
                    "nested: {} is below {}",
                    display_rel(&file, &ctx.cwd),
                    display_rel(dir, &ctx.cwd)
                );
                for item in &nested.items {
                    match item {
                        NestedItem::File {
                            path,
                            real,
                            kind,
                            scope,
                        } => {
                            if self.seen.contains(real) {
                                continue;
                            }
                            let mut out = Vec::new();
                            let mut loader = self.loader(fs, ctx, &mut out);
                            if let Some(top) =
                                loader.read_top(path, Some(real.clone()), *scope, *kind)
                            {
                                loader.place(
                                    &top,
                                    *scope,
                                    *kind,
                                    Status::Attached,
                                    true,
                                    Some(reason.clone()),
                                    |_| {},
                                );
                            }
                            self.collect(out, &file, &mut records);
                        }
                        NestedItem::Excluded(rec) => {
                            if !self.seen.contains(&rec.real) {
                                records.push((**rec).clone());
                            }
                        }
                        NestedItem::Includes(i) => {
                            let rule = &nested.conditional[*i];
                            let mut out = Vec::new();
                            let mut loader = self.loader(fs, ctx, &mut out);
                            let mut chain = vec![rule.record.real.clone()];
                            loader.follow(
                                &rule.record.path,
                                &rule.record.real,
                                &rule.includes,
                                Scope::Project,
                                Status::Attached,
                                1,
                                &mut chain,
                            );
                            self.collect(out, &file, &mut records);
                        }
                    }
                }
            }
            if let Some(rel) = relative_to(&file, dir) {
                for (ri, pi) in nested.matcher.matches(rel) {
                    self.attach_rule(ctx, &nested.conditional[ri], pi, &file, &mut records);
                }
            }
        }
        // 4. The walk's rules directories, root to cwd (then additional directories).
        let late = ctx.rule_groups.iter().filter(|g| !early(g));
        self.match_groups(ctx, late, &file, &mut records);
        self.records.extend(records);
        self.attachments.len() - before
    }

    fn loader<'a>(
        &'a mut self,
        fs: &'a dyn Fs,
        ctx: &'a Context,
        out: &'a mut Vec<FileRecord>,
    ) -> Loader<'a> {
        Loader {
            fs,
            project: &ctx.project,
            seen: &mut self.seen,
            out,
            findings: &mut self.findings,
            budget: &mut self.budget,
            nested: true,
        }
    }

    fn match_groups<'g>(
        &mut self,
        ctx: &Context,
        groups: impl Iterator<Item = &'g RuleGroup>,
        file: &Path,
        records: &mut Vec<FileRecord>,
    ) {
        for group in groups {
            let Some(rel) = relative_to(file, &group.base) else {
                continue;
            };
            for (ri, pi) in group.matcher.matches(rel) {
                self.attach_rule(ctx, &group.rules[ri], pi, file, records);
            }
        }
    }

    /// A conditional rule that matched: the rule alone (its includes came at startup, or with
    /// its directory's first attachments).
    fn attach_rule(
        &mut self,
        ctx: &Context,
        rule: &CondRule,
        pattern: usize,
        trigger: &Path,
        records: &mut Vec<FileRecord>,
    ) {
        if !self.seen.insert(rule.record.real.clone()) {
            return;
        }
        let glob = rule
            .patterns
            .get(pattern)
            .and_then(|p| rule.record.globs.get(p.source))
            .cloned()
            .unwrap_or_default();
        let mut record = rule.record.clone();
        record.status = Status::Attached;
        record.reason = Some(format!(
            "paths {} matched {}",
            super::message::quoted(&glob),
            display_rel(trigger, &ctx.cwd)
        ));
        record.matched = Some(GlobMatch {
            glob,
            file: trigger.to_path_buf(),
        });
        self.collect(vec![record], trigger, records);
    }

    fn collect(&mut self, out: Vec<FileRecord>, trigger: &Path, records: &mut Vec<FileRecord>) {
        for mut rec in out {
            if rec.status == Status::Attached {
                cap(&mut rec, &mut self.findings);
                self.attachments.push(Attachment {
                    record: rec.clone(),
                    trigger: trigger.to_path_buf(),
                });
            }
            records.push(rec);
        }
    }
}

/// Cuts an attached file over [`super::render::MAX_ATTACHMENT_UNITS`] as Claude Code does, and
/// says so (in its reason, and as a finding on the file).
fn cap(rec: &mut FileRecord, findings: &mut Vec<Finding>) {
    let Some((text, lines)) = super::render::cap_attachment(&rec.path, &rec.content) else {
        return;
    };
    let shown = match lines {
        0 => "the first 150,000 UTF-16 units of its first line are".to_string(),
        1 => "its first line is".to_string(),
        n => format!(
            "its first {} lines are",
            super::message::thousands(n as u64)
        ),
    };
    let why = format!(
        "cut: attached files over 150,000 UTF-16 units are cut, and {shown} shown, with a note telling the model to Read the rest"
    );
    findings.push(Finding::whole_file(
        rec.path.clone(),
        Severity::Information,
        "attachment-cut",
        format!("{why}. Split the file, or move the detail elsewhere, so that it is sent whole"),
    ));
    rec.reason = Some(match rec.reason.take() {
        Some(r) => format!("{r}; {why}"),
        None => why,
    });
    rec.tokens = super::estimate_tokens(&text);
    rec.content = text;
}

fn scan_nested(fs: &dyn Fs, ctx: &Context, dir: &Path, parent_real: &Path) -> NestedDir {
    let name = dir.file_name().unwrap_or_default();
    let real = match fs.is_symlink(dir) {
        Ok(true) => fs.canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        _ => parent_real.join(name),
    };
    let mut nested = NestedDir {
        outside: !real.starts_with(&ctx.cwd),
        real,
        ..NestedDir::default()
    };
    if nested.outside {
        return nested;
    }
    let real = nested.real.clone();
    // Looked up once per session and directory, like the rules listing below: most directories
    // have none of these, and every later touch would look again. Only a missing file is left
    // out; an unreadable one (a symlink loop, say) stays, so that reading it reports why.
    for (rel, kind, scope) in [
        ("CLAUDE.md", FileKind::ClaudeMd, Scope::Project),
        (".claude/CLAUDE.md", FileKind::ClaudeMd, Scope::Project),
        ("CLAUDE.local.md", FileKind::LocalMd, Scope::Local),
    ] {
        let path = dir.join(rel);
        if matches!(fs.is_symlink(&path), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            continue;
        }
        let Ok(file_real) = real_path(fs, &real, Path::new(rel)) else {
            continue; // A dangling link: skipped silently, as Claude Code does.
        };
        if let Some(ex) = ctx.project.exclusion(&path, scope) {
            nested
                .items
                .push(NestedItem::Excluded(Box::new(excluded_record(
                    &path, &file_real, scope, kind, ex,
                ))));
            continue;
        }
        nested.items.push(NestedItem::File {
            path,
            real: file_real,
            kind,
            scope,
        });
    }
    let mut findings = Vec::new();
    // One directory's scan is cached and shared by every session: it has its own budget.
    let mut budget = Budget::default();
    let rules_dir = dir.join(".claude").join("rules");
    // A nested folder's rules never follow a link out of cwd: such folders are not walked.
    let follow = Follow {
        within: Some(&ctx.cwd),
        approved: None,
        home: None,
    };
    for entry in rule_files(fs, &rules_dir, &real, budget.rules, &follow, &mut findings) {
        if entry.linked && !entry.real.starts_with(&ctx.cwd) {
            findings.push(rules_link_finding(&entry, &ctx.cwd, RulesLinkOut::Nested));
            continue;
        }
        if let Some(ex) = ctx.project.exclusion(&entry.real, Scope::Project) {
            nested
                .items
                .push(NestedItem::Excluded(Box::new(excluded_record(
                    &entry.real,
                    &entry.real,
                    Scope::Project,
                    FileKind::Rule,
                    ex,
                ))));
            continue;
        }
        let mut scratch_seen = HashSet::new();
        let mut scratch = Vec::new();
        let mut loader = Loader {
            fs,
            project: &ctx.project,
            seen: &mut scratch_seen,
            out: &mut scratch,
            findings: &mut findings,
            budget: &mut budget,
            nested: true,
        };
        let Some(top) = loader.read_top(
            &entry.real,
            Some(entry.real.clone()),
            Scope::Project,
            FileKind::Rule,
        ) else {
            continue;
        };
        match conditional_patterns(&top) {
            Some((globs, patterns)) => {
                let mut record = FileRecord::new(
                    entry.real.clone(),
                    Scope::Project,
                    FileKind::Rule,
                    Status::Inactive,
                );
                record.real = entry.real.clone();
                record.globs = globs;
                record.tokens = super::estimate_tokens(&top.processed.content);
                record.content = top.processed.content.clone();
                if crate::js::is_blank(&record.content) {
                    continue;
                }
                nested
                    .items
                    .push(NestedItem::Includes(nested.conditional.len()));
                nested.conditional.push(CondRule {
                    record,
                    includes: top.processed.includes.clone(),
                    patterns,
                });
            }
            None => nested.items.push(NestedItem::File {
                path: entry.real.clone(),
                real: entry.real,
                kind: FileKind::Rule,
                scope: Scope::Project,
            }),
        }
    }
    nested.matcher = RuleMatcher::new(nested.conditional.iter().map(|r| &r.patterns[..]));
    nested.findings = findings;
    nested
}

fn display_rel(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}
