//! Files attached lazily when the session touches a file (opens, reads, writes, @-mentions).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::globs::{RuleMatcher, relative_to};
use super::load::Loader;
use super::walk::{CondRule, conditional_globs, rule_files};
use super::{Context, FileKind, FileRecord, Finding, GlobMatch, Scope, Status};
use crate::fs::{Fs, normalize};

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

/// The instruction files of a directory below cwd. Scanned once per [`Context`] and shared by
/// every session built on it (see [`Context::forget`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct NestedDir {
    /// CLAUDE.md, CLAUDE.local.md (when they exist at scan time), then unconditional rules:
    /// (path, kind, scope).
    always: Vec<(PathBuf, FileKind, Scope)>,
    conditional: Vec<CondRule>,
    matcher: RuleMatcher,
    /// What the scan reported (an unreadable rules directory, say), handed to each session once.
    findings: Vec<Finding>,
}

/// Session state for lazy attachments: each file is attached at most once per session.
#[derive(Clone, Debug, Default)]
pub struct Attacher {
    seen: HashSet<PathBuf>,
    /// Nested directories this session has looked at (their scan findings are reported once).
    visited: HashSet<PathBuf>,
    pub attachments: Vec<Attachment>,
    pub findings: Vec<Finding>,
    /// Every record produced while attaching, skipped includes too.
    pub records: Vec<FileRecord>,
}

impl Attacher {
    /// A session that starts from `ctx`: what the walk loaded counts as seen.
    pub fn new(ctx: &Context) -> Attacher {
        Attacher {
            seen: ctx
                .files
                .iter()
                .filter(|f| matches!(f.status, Status::Loaded))
                .map(|f| f.path.clone())
                .collect(),
            ..Attacher::default()
        }
    }

    /// Touches `file` (absolute or relative to cwd). Returns how many attachments it added.
    pub fn touch(&mut self, fs: &dyn Fs, ctx: &Context, file: &Path) -> usize {
        let file = normalize(&ctx.cwd, file);
        let before = self.attachments.len();
        let mut records = Vec::new();

        // 1. Conditional rules of rules directories in the walk.
        for group in &ctx.rule_groups {
            let Some(rel) = relative_to(&file, &group.base) else {
                continue;
            };
            for (ri, pi) in group.matcher.matches(rel) {
                let rule = &group.rules[ri];
                self.attach_rule(fs, ctx, rule, pi, &file, &mut records);
            }
        }

        // 2. Directories strictly below cwd down to the file's directory, outer first.
        let Some(parent) = file.parent() else {
            return 0;
        };
        if let Some(rel_dir) = relative_to(parent, &ctx.cwd) {
            let mut dir = ctx.cwd.clone();
            for comp in rel_dir.components() {
                dir.push(comp);
                self.nested_dir(fs, ctx, &dir, &file, &mut records);
            }
        }
        self.records.extend(records);
        self.attachments.len() - before
    }

    fn nested_dir(
        &mut self,
        fs: &dyn Fs,
        ctx: &Context,
        dir: &Path,
        file: &Path,
        records: &mut Vec<FileRecord>,
    ) {
        let nested = ctx.nested_dir(dir, || scan_nested(fs, ctx, dir));
        if self.visited.insert(dir.to_path_buf()) {
            self.findings.extend(nested.findings.iter().cloned());
        }
        for (path, kind, scope) in &nested.always {
            if self.seen.contains(path) {
                continue;
            }
            let reason = format!(
                "nested: {} is below {}",
                display_rel(file, &ctx.cwd),
                display_rel(dir, &ctx.cwd)
            );
            self.attach_file(fs, ctx, path, *kind, *scope, reason, file, records);
        }
        if let Some(rel) = relative_to(file, dir) {
            for (ri, pi) in nested.matcher.matches(rel) {
                self.attach_rule(fs, ctx, &nested.conditional[ri], pi, file, records);
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // reason: one call site shape; the arguments are the record's fields.
    fn attach_file(
        &mut self,
        fs: &dyn Fs,
        ctx: &Context,
        path: &Path,
        kind: FileKind,
        scope: Scope,
        reason: String,
        trigger: &Path,
        records: &mut Vec<FileRecord>,
    ) {
        let mut out = Vec::new();
        let mut loader = Loader {
            fs,
            project: &ctx.project,
            seen: &mut self.seen,
            out: &mut out,
            findings: &mut self.findings,
        };
        if let Some(top) = loader.read_top(path, scope, kind) {
            loader.place(
                top,
                scope,
                kind,
                Status::Attached,
                true,
                Some(reason),
                |_| {},
            );
        }
        self.collect(out, trigger, records);
    }

    fn attach_rule(
        &mut self,
        fs: &dyn Fs,
        ctx: &Context,
        rule: &CondRule,
        pattern: usize,
        trigger: &Path,
        records: &mut Vec<FileRecord>,
    ) {
        let path = &rule.record.path;
        if !self.seen.insert(path.clone()) {
            return;
        }
        let glob = rule.record.globs.get(pattern).cloned().unwrap_or_default();
        let mut record = rule.record.clone();
        record.status = Status::Attached;
        record.reason = Some(format!(
            "paths {glob:?} matched {}",
            display_rel(trigger, &ctx.cwd)
        ));
        record.matched = Some(GlobMatch {
            glob,
            file: trigger.to_path_buf(),
        });
        let mut out = vec![record];
        let mut loader = Loader {
            fs,
            project: &ctx.project,
            seen: &mut self.seen,
            out: &mut out,
            findings: &mut self.findings,
        };
        let mut chain = vec![path.clone()];
        loader.follow(
            path,
            &rule.includes,
            rule.record.scope,
            Status::Attached,
            1,
            &mut chain,
        );
        self.collect(out, trigger, records);
    }

    fn collect(&mut self, out: Vec<FileRecord>, trigger: &Path, records: &mut Vec<FileRecord>) {
        for rec in out {
            if rec.status == Status::Attached {
                self.attachments.push(Attachment {
                    record: rec.clone(),
                    trigger: trigger.to_path_buf(),
                });
            }
            records.push(rec);
        }
    }
}

fn scan_nested(fs: &dyn Fs, ctx: &Context, dir: &Path) -> NestedDir {
    let mut findings = Vec::new();
    // Looked up once per session and directory, like the rules listing below: most directories
    // have neither file, and every later touch would look again. Only a missing file is left
    // out; an unreadable one (a symlink loop, say) stays, so that reading it reports why.
    let always = [
        (dir.join("CLAUDE.md"), FileKind::ClaudeMd, Scope::Project),
        (dir.join("CLAUDE.local.md"), FileKind::LocalMd, Scope::Local),
    ]
    .into_iter()
    .filter(|(path, _, _)| {
        !matches!(fs.metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    })
    .collect();
    let mut nested = NestedDir {
        always,
        ..NestedDir::default()
    };
    let rules_dir = dir.join(".claude").join("rules");
    for path in rule_files(fs, &rules_dir, &mut findings) {
        let mut scratch_seen = HashSet::new();
        let mut scratch = Vec::new();
        let mut loader = Loader {
            fs,
            project: &ctx.project,
            seen: &mut scratch_seen,
            out: &mut scratch,
            findings: &mut findings,
        };
        let Some(top) = loader.read_top(&path, Scope::Project, FileKind::Rule) else {
            continue;
        };
        match conditional_globs(&top) {
            Some(globs) => {
                let mut record =
                    FileRecord::new(path, Scope::Project, FileKind::Rule, Status::Inactive);
                record.globs = globs;
                record.tokens = super::estimate_tokens(&top.processed.content);
                record.content = top.processed.content.clone();
                if record.content.trim().is_empty() {
                    continue;
                }
                nested.conditional.push(CondRule {
                    record,
                    includes: top.processed.includes.clone(),
                });
            }
            None => nested.always.push((path, FileKind::Rule, Scope::Project)),
        }
    }
    nested.matcher = RuleMatcher::new(nested.conditional.iter().map(|r| &r.record.globs[..]));
    nested.findings = findings;
    nested
}

fn display_rel(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}
