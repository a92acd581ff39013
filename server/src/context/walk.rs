//! The walk at session start: managed, user, root-to-cwd, additional directories, memory.
//!
//! cwd is resolved to its real path first, and everything is shown from it. Within one
//! directory of the root-to-cwd walk: `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/**`
//! (unconditional rules load; a conditional rule waits, but its includes load in its place),
//! `CLAUDE.local.md`, and `AGENTS.md` when the fallback is on (no directory of the walk has a
//! `CLAUDE.md`, `.claude/CLAUDE.md` or `CLAUDE.local.md` that gives an entry).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::globs::{Pattern, RuleMatcher};
use super::includes::IncludeRef;
use super::load::{
    Budget, Loader, ParseCache, Project, Top, excluded_record, instruction_link_finding,
    memory_finding, real_path,
};
use super::settings::{self as cc_settings, Settings};
use super::{Context, FileKind, FileRecord, Finding, Scope, Severity, Status};
use crate::fs::{Fs, Kind, ReadError};
use crate::memory;

/// Rules directories deeper than this are treated as a symlink loop.
const MAX_RULES_DEPTH: usize = 16;
/// Folders one rules listing reads at most (a cap against a link to a huge tree; a real
/// `.claude/rules` has a handful).
const MAX_RULES_DIRS: usize = 10_000;

/// Directories looked at from `/` down to the working directory, and below it down to a touched
/// file: deeper than Linux and macOS can open a path (4,096 bytes), so only other file systems
/// meet it. Each level costs a few system calls on a path as long as its depth, so the cap
/// bounds a walk's work where paths may be longer (Windows allows 32,767 characters).
pub const MAX_DIR_DEPTH: usize = 4_096;

/// Everything a walk depends on besides the files themselves. Built from the environment at
/// the edge (CLI, LSP); the core never reads environment variables.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Absolute, normalised; may go through symlinks (it plays the role of `PWD`): the walk
    /// resolves it to its real path, and a touched path under it counts as under the real one.
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// `/etc/claude-code`, or `CLAUDE_CONTEXT_MANAGED_DIR`.
    pub managed_dir: PathBuf,
    /// `--add-dir` directories.
    pub additional_dirs: Vec<PathBuf>,
    /// `CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1`.
    pub load_additional_dirs: bool,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1` (a settings file's `env` block overrides it).
    pub disabled: bool,
    /// A validated memory directory from an argument or an editor setting; `None` for the
    /// `autoMemoryDirectory` of the settings files, else the default.
    pub memory_dir: Option<PathBuf>,
    /// `false` turns auto-memory off (`CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`; a settings file's
    /// `env` block overrides it, and its `autoMemoryEnabled: false` turns it off too).
    pub auto_memory: bool,
    /// `CLAUDE_CONFIG_DIR`: the folder that replaces `~/.claude` (the user's CLAUDE.md, rules,
    /// settings, `.claude.json` and memory folders). `None`: `~/.claude`.
    pub config_dir: Option<PathBuf>,
    /// `GIT_CEILING_DIRECTORIES`.
    pub git_ceilings: Vec<PathBuf>,
    /// Workspace trust (`crate::trust`): how far the repository's own settings files apply.
    /// The default reads a folder as not trusted.
    pub trust: cc_settings::Trust,
    /// `--plugin-dir` folders: plugins enabled for this session only (`crate::plugins`).
    pub plugin_dirs: Vec<PathBuf>,
}

/// Conditional rules of one rules directory, matched together.
#[derive(Clone, Debug)]
pub(crate) struct RuleGroup {
    /// Globs are relative to this directory.
    pub base: PathBuf,
    /// Managed and user groups attach before nested directories, the others after.
    pub scope: Scope,
    pub rules: Vec<CondRule>,
    pub matcher: RuleMatcher,
}

#[derive(Clone, Debug)]
pub(crate) struct CondRule {
    /// Shown under its real path; `globs` holds the globs as written.
    pub record: FileRecord,
    pub includes: Vec<IncludeRef>,
    /// The normalised patterns (matched), each pointing back at a written glob.
    pub patterns: Vec<Pattern>,
}

/// A `*.md` file found in a rules directory.
#[derive(Clone, Debug)]
pub(crate) struct RuleEntry {
    /// Where the listing met it.
    pub path: PathBuf,
    /// Every link resolved: the path it is loaded and shown under.
    pub real: PathBuf,
    /// Reached through a symbolic link (the entry, a folder above it, or the rules folder).
    pub linked: bool,
}

/// The rule files of `dir` (`<folder>/.claude/rules`), in readdir order (recursive, a
/// subdirectory at its position in its parent's listing). `folder_real` is the real path of the
/// folder holding `.claude`: the rules folder's real path is found from it with one `lstat` per
/// component (`.claude`, `rules`), never by resolving the whole path again, so a walk down a deep
/// working directory costs the same at every level. Links are followed, but each directory (by
/// its real path) is read at most once, so a link loop or a fan of links cannot blow up. The
/// `*.md` test looks at each entry's own name. At most `limit` entries are kept; the others are
/// counted (a cap-rules finding on `dir` says so). `follow` says which linked folders are not
/// walked at all (see [`Follow`]).
pub(crate) fn rule_files(
    fs: &dyn Fs,
    dir: &Path,
    folder_real: &Path,
    limit: usize,
    follow: &Follow<'_>,
    findings: &mut Vec<Finding>,
) -> Vec<RuleEntry> {
    rule_files_at(
        fs,
        dir,
        folder_real,
        &Path::new(".claude").join("rules"),
        limit,
        follow,
        findings,
    )
}

/// [`rule_files`] for a rules folder at `rules` below `folder_real` (`rules` directly in a
/// `CLAUDE_CONFIG_DIR`, `.claude/rules` everywhere else).
pub(crate) fn rule_files_at(
    fs: &dyn Fs,
    dir: &Path,
    folder_real: &Path,
    rules: &Path,
    limit: usize,
    follow: &Follow<'_>,
    findings: &mut Vec<Finding>,
) -> Vec<RuleEntry> {
    let Ok(root) = real_path(fs, folder_real, rules) else {
        return Vec::new(); // A dangling link or a loop: skipped silently, as Claude Code does.
    };
    let linked = root != folder_real.join(rules);
    if linked && let Some(f) = follow.refuse(dir, &root) {
        findings.push(f);
        return Vec::new();
    }
    let mut listing = Listing {
        limit,
        out: Vec::new(),
        more: 0,
        first_more: None,
        visited: HashSet::new(),
        dirs_capped: false,
    };
    listing.visited.insert(root.clone());
    collect_rules(fs, &root, dir, linked, 0, follow, &mut listing, findings);
    if let Some(first) = &listing.first_more {
        findings.push(rules_cap_finding(dir, first, listing.more, limit));
    }
    listing.out
}

/// Which folders reached through a link a rules listing walks.
///
/// Every rule below a linked folder that leaves `within` would be skipped one by one (project
/// and managed rules without approval, nested folders' rules always), so such a folder is not
/// walked: one finding at the link says why, instead of a walk of whatever it leads to and a
/// finding per file. And a link never walks the whole disk or the whole home directory: a
/// linked folder that is `/`, the home directory or one of its ancestors is refused (Claude Code
/// would read every `*.md` file below it; see docs/decisions.md).
#[derive(Clone, Copy, Default)]
pub(crate) struct Follow<'a> {
    /// Linked folders whose real path is not below this are not walked...
    pub within: Option<&'a Path>,
    /// ... unless this says the project approved external includes (asked only when such a
    /// link is met: it reads `~/.claude.json`). `None`: never.
    pub approved: Option<&'a dyn Fn() -> bool>,
    /// The home directory (it and its ancestors are never walked through a link).
    pub home: Option<&'a Path>,
}

impl Follow<'_> {
    /// The finding that refuses the linked folder `path` (real path `real`), if it is refused.
    fn refuse(&self, path: &Path, real: &Path) -> Option<Finding> {
        let wide = real.parent().is_none() || self.home.is_some_and(|h| h.starts_with(real));
        if wide {
            return Some(Finding::whole_file(
                path.to_path_buf(),
                Severity::Warning,
                "rules-link-too-wide",
                format!(
                    "rules folder not read: it is a link to {}, which would make every .md file below it a rule (Claude Code reads them all). Link the folder that holds the rules instead",
                    real.display()
                ),
            ));
        }
        let within = self.within?;
        if real.starts_with(within) || self.approved.is_some_and(|approved| approved()) {
            return None;
        }
        Some(Finding::whole_file(
            path.to_path_buf(),
            Severity::Warning,
            "rules-link-out",
            format!(
                "rules folder not read: it is a link to {}, outside the working directory {}, and Claude Code skips every rule reached through such a link. Move the rules into .claude/rules",
                real.display(),
                within.display()
            ),
        ))
    }
}

/// A rules folder's listing so far.
struct Listing {
    limit: usize,
    out: Vec<RuleEntry>,
    /// Rule files past `limit`, and the first of them.
    more: usize,
    first_more: Option<PathBuf>,
    /// Directories read, by real path.
    visited: HashSet<PathBuf>,
    /// [`MAX_RULES_DIRS`] was reached (said once).
    dirs_capped: bool,
}

/// Rule files of a folder left unread by the rules cap ([`super::load::MAX_RULES`]).
fn rules_cap_finding(dir: &Path, first: &Path, more: usize, limit: usize) -> Finding {
    use super::message::thousands;
    let first = first.strip_prefix(dir).unwrap_or(first);
    let why = if limit == 0 {
        format!(
            "the folders before it already hold {} rules",
            thousands(super::load::MAX_RULES as u64)
        )
    } else {
        format!("{} were read", thousands(limit as u64))
    };
    Finding::whole_file(
        dir.to_path_buf(),
        Severity::Warning,
        "cap-rules",
        format!(
            "{} rule files in this folder are not read, from {} on: {why}, the most claude-context reads for one session (a cap against runaway trees; Claude Code reads them all, so the preview shows fewer rules than it loads)",
            thousands(more as u64),
            first.display()
        ),
    )
}

#[allow(clippy::too_many_arguments)]
fn collect_rules(
    fs: &dyn Fs,
    real_dir: &Path,
    dir: &Path,
    linked: bool,
    depth: usize,
    follow: &Follow<'_>,
    listing: &mut Listing,
    findings: &mut Vec<Finding>,
) {
    let entries = match fs.read_dir(real_dir) {
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
        let md = entry.name.ends_with(".md");
        if let Some(raw) = &entry.raw {
            // Claude Code lists names as UTF-8 text (invalid bytes become U+FFFD), then cannot
            // open the name it got: the file or folder is skipped. Said, with its exact name.
            let what = match entry.kind {
                Some(Kind::Dir) => "rules folder not read",
                _ if md => "rule not loaded",
                _ => continue,
            };
            findings.push(Finding::whole_file(
                dir.join(raw),
                Severity::Warning,
                "name-not-utf8",
                format!(
                    "{what}: its name is not valid UTF-8, and Claude Code, which reads names as UTF-8 text, cannot open it. Rename it (shown here as {:?})",
                    entry.name
                ),
            ));
            continue;
        }
        let path = dir.join(&entry.name);
        let (real, linked) = if entry.link {
            match fs.canonicalize(&real_dir.join(&entry.name)) {
                Ok(real) => (real, true),
                Err(_) => {
                    if md {
                        findings.push(Finding::whole_file(
                            path,
                            Severity::Warning,
                            "unreadable",
                            "rule not loaded: broken symlink or symlink loop",
                        ));
                    }
                    continue;
                }
            }
        } else {
            (real_dir.join(&entry.name), linked)
        };
        match entry.kind {
            Some(Kind::Dir) => {
                if depth + 1 >= MAX_RULES_DEPTH {
                    findings.push(Finding::whole_file(path.clone(), Severity::Warning, "rules-too-deep", format!(
                            "rules directory nested more than {MAX_RULES_DEPTH} levels (a symlink loop?); not read further"
                        )));
                    continue;
                }
                if linked && let Some(f) = follow.refuse(&path, &real) {
                    findings.push(f);
                    continue;
                }
                if listing.visited.len() >= MAX_RULES_DIRS {
                    if !listing.dirs_capped {
                        listing.dirs_capped = true;
                        findings.push(Finding::whole_file(path.clone(), Severity::Warning, "cap-rules-dirs", format!(
                            "rules folder not read, nor any folder after it in this listing: {} folders were read, the most claude-context reads for one rules folder (a cap against a link to a huge tree; Claude Code reads them all)",
                            super::message::thousands(MAX_RULES_DIRS as u64)
                        )));
                    }
                    continue;
                }
                if !listing.visited.insert(real.clone()) {
                    findings.push(Finding::whole_file(path.clone(), Severity::Hint, "rules-symlink-loop", format!(
                            "rules directory not read again: it is {} (a symlink loop or a second link to it)",
                            real.display()
                        )));
                    continue;
                }
                collect_rules(
                    fs,
                    &real,
                    &path,
                    linked,
                    depth + 1,
                    follow,
                    listing,
                    findings,
                );
            }
            Some(Kind::File) | Some(Kind::Special) if md => {
                if listing.out.len() < listing.limit {
                    listing.out.push(RuleEntry { path, real, linked });
                } else {
                    listing.more += 1;
                    listing.first_more.get_or_insert(path);
                }
            }
            None if md => findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "unreadable",
                "rule not loaded: broken symlink or symlink loop",
            )),
            _ => {}
        }
    }
}

/// Where a rules directory of the walk sits, which decides what its links may reach (the rules
/// of directories below cwd never follow a link out of it: see `attach`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RulesPlace {
    /// Managed rules and the rules of the walk's directories: links out of cwd are skipped
    /// unless external includes are approved (and then only unconditional rules load).
    Walk,
    /// `~/.claude/rules`: links may go anywhere.
    User,
}

/// Why a rules entry reached through a link out of cwd is skipped, and what to do.
pub(crate) enum RulesLinkOut<'a> {
    /// In a rules folder of the walk (managed, ancestors, cwd); the approval hint.
    Walk(&'a str),
    /// The same, a conditional rule (approval does not help).
    WalkConditional,
    /// In a rules folder of a directory below cwd.
    Nested,
}

impl RulesLinkOut<'_> {
    fn why(&self) -> String {
        match self {
            RulesLinkOut::Walk(hint) => format!(
                "Claude Code skips rule links that leave the directory it starts in. Move the rule into .claude/rules, or {hint} (conditional rules still never attach)"
            ),
            RulesLinkOut::WalkConditional => "a conditional rule reached through such a link never attaches, even with external includes approved. Move the rule into .claude/rules".into(),
            RulesLinkOut::Nested => "the rules of a directory below the working directory never follow a link out of it. Move the rule into that directory's .claude/rules".into(),
        }
    }
}

/// The finding for a rules entry skipped because a link takes it out of cwd.
pub(crate) fn rules_link_finding(entry: &RuleEntry, cwd: &Path, why: RulesLinkOut<'_>) -> Finding {
    let why = why.why();
    Finding::whole_file(
        entry.path.clone(),
        Severity::Warning,
        "rules-link-outside",
        format!(
            "not loaded: this rule is reached through a symbolic link to {}, outside {}; {why}",
            entry.real.display(),
            cwd.display()
        ),
    )
}

/// The working directory is deeper than [`MAX_DIR_DEPTH`]: the directories below that depth are
/// not looked at.
fn depth_cap_finding(cwd: &Path, first: &Path, depth: usize) -> Finding {
    use super::message::thousands;
    Finding::whole_file(
        cwd.to_path_buf(),
        Severity::Warning,
        "cap-depth",
        format!(
            "the working directory is {} directories below /: claude-context looks for instruction files in the first {} only (a cap against runaway trees; Claude Code looks in all of them), so nothing is read from {} down to the working directory",
            thousands(depth as u64),
            thousands(MAX_DIR_DEPTH as u64),
            first.display()
        ),
    )
}

/// A rule's patterns when it is conditional (only files under a rules directory can be).
pub(crate) fn conditional_patterns(top: &Top) -> Option<(Vec<String>, Vec<Pattern>)> {
    let globs = top.processed.frontmatter.as_ref()?.paths.as_ref()?;
    let written: Vec<String> = globs.iter().map(|g| g.glob.clone()).collect();
    let patterns = super::globs::normalize(&written)?;
    Some((written, patterns))
}

pub(crate) use super::message::quote_list;

struct Walk<'a> {
    fs: &'a dyn Fs,
    project: Project,
    seen: HashSet<PathBuf>,
    files: Vec<FileRecord>,
    findings: Vec<Finding>,
    groups: Vec<RuleGroup>,
    /// The real paths of the conditional rules in `groups` (a set: 10,000 rules checked against
    /// each other one by one took seconds).
    conditional: HashSet<PathBuf>,
    /// Texts read ahead (to decide the AGENTS.md fallback), used once by the main pass.
    prefetched: HashMap<PathBuf, Result<String, ReadError>>,
    /// The git work tree or cwd: an instruction file linking out of it gets a finding.
    project_root: PathBuf,
    /// What the walk may still read.
    budget: Budget,
}

impl Walk<'_> {
    fn loader(&mut self) -> Loader<'_> {
        Loader {
            fs: self.fs,
            project: &self.project,
            seen: &mut self.seen,
            out: &mut self.files,
            findings: &mut self.findings,
            budget: &mut self.budget,
            nested: false,
        }
    }

    /// Reads an instruction file shown as `base.join(rel)`, whose base is `base_real` once
    /// resolved.
    fn top(
        &mut self,
        base: &Path,
        base_real: &Path,
        rel: &str,
        scope: Scope,
        kind: FileKind,
    ) -> Option<Top> {
        let path = base.join(rel);
        let read = match self.prefetched.remove(&path) {
            Some(read) => read,
            None => self.fs.read_text(&path),
        };
        if matches!(read, Err(ReadError::NotFound)) {
            return None;
        }
        let real = real_path(self.fs, base_real, Path::new(rel)).ok();
        if let Some(ex) = self.project.exclusion(&path, scope) {
            let real = real.unwrap_or_else(|| path.clone());
            self.files
                .push(excluded_record(&path, &real, scope, kind, ex));
            return None;
        }
        let top = self
            .loader()
            .read_top_from(&path, real, scope, kind, read)?;
        if top.real != path
            && scope != Scope::User
            && path.starts_with(&self.project_root)
            && !top.real.starts_with(&self.project_root)
        {
            let f = instruction_link_finding(&path, &top.real, &self.project_root);
            self.findings.push(f);
        }
        Some(top)
    }

    /// Loads an instruction file with its includes. Returns whether it gave an entry.
    fn file(&mut self, base: &Path, base_real: &Path, rel: &str, scope: Scope, kind: FileKind) {
        if let Some(top) = self.top(base, base_real, rel, scope, kind) {
            self.loader()
                .place(&top, scope, kind, Status::Loaded, true, None, |_| {});
        }
    }

    /// The managed `claudeMd` string: an entry of its own, shown as `<managed-settings>`.
    fn managed_settings_entry(&mut self, path: &Path, text: &str) {
        let mut rec = FileRecord::new(
            path.to_path_buf(),
            Scope::Managed,
            FileKind::Settings,
            Status::Loaded,
        );
        rec.reason = Some(format!(
            "the claudeMd string of {}, shown as {}",
            cc_settings::MANAGED_SETTINGS_FILE,
            super::render::MANAGED_SETTINGS_LABEL
        ));
        rec.content = text.to_string();
        if crate::js::is_blank(text) {
            rec.status = Status::Empty;
            rec.reason = Some("the claudeMd string of managed-settings.json is empty".into());
        } else {
            rec.tokens = super::estimate_tokens(text);
        }
        self.files.push(rec);
    }

    /// A rules directory (`dir`, in the folder whose real path is `folder_real`): unconditional
    /// rules load now; conditional ones wait in a group whose globs are relative to `base`, while
    /// their includes load now, in their place.
    fn rules(&mut self, dir: &Path, folder_real: &Path, rel: &Path, scope: Scope, base: &Path) {
        let place = if scope == Scope::User {
            RulesPlace::User
        } else {
            RulesPlace::Walk
        };
        // Without approval, no project or managed rule below a link out of cwd loads: such
        // folders are not walked.
        let cwd = self.project.cwd.clone();
        let home = self.project.home.clone();
        let project = self.project.clone();
        let fs = self.fs;
        let approved = move || project.approved(fs);
        let follow = Follow {
            within: (place == RulesPlace::Walk).then_some(&*cwd),
            approved: Some(&approved),
            home: home.as_deref(),
        };
        let entries = rule_files_at(
            self.fs,
            dir,
            folder_real,
            rel,
            self.budget.rules,
            &follow,
            &mut self.findings,
        );
        self.budget.rules -= entries.len();
        let mut group = RuleGroup {
            base: base.to_path_buf(),
            scope,
            rules: Vec::new(),
            matcher: RuleMatcher::default(),
        };
        let cwd = self.project.cwd.clone();
        for entry in entries {
            let outside =
                place != RulesPlace::User && entry.linked && !entry.real.starts_with(&cwd);
            if outside && !self.project.approved(self.fs) {
                let hint = self.project.approval_hint();
                self.findings
                    .push(rules_link_finding(&entry, &cwd, RulesLinkOut::Walk(&hint)));
                continue;
            }
            if let Some(ex) = self.project.exclusion(&entry.real, scope) {
                self.files.push(excluded_record(
                    &entry.real,
                    &entry.real,
                    scope,
                    FileKind::Rule,
                    ex,
                ));
                continue;
            }
            let real = Some(entry.real.clone());
            let mut loader = self.loader();
            let Some(top) = loader.read_top(&entry.real, real, scope, FileKind::Rule) else {
                continue;
            };
            match conditional_patterns(&top) {
                Some((globs, patterns)) => {
                    if outside {
                        self.findings.push(rules_link_finding(
                            &entry,
                            &cwd,
                            RulesLinkOut::WalkConditional,
                        ));
                        continue;
                    }
                    // The same rules directory can be met twice (HOME's `.claude/rules` as user
                    // rules, then again in the walk when HOME is an ancestor of cwd), and two
                    // links can lead to one file.
                    if self.seen.contains(&top.real) || self.conditional.contains(&top.real) {
                        continue;
                    }
                    let mut record =
                        FileRecord::new(top.real.clone(), scope, FileKind::Rule, Status::Inactive);
                    record.real = top.real.clone();
                    record.reason = Some(format!(
                        "paths {}: no touched file matches",
                        quote_list(&globs)
                    ));
                    record.globs = globs;
                    record.tokens = super::estimate_tokens(&top.processed.content);
                    record.content = top.processed.content.clone();
                    if crate::js::is_blank(&record.content) {
                        record.status = Status::Empty;
                        record.reason =
                            Some("empty after frontmatter and comments are stripped".into());
                        self.files.push(record);
                        continue;
                    }
                    self.files.push(record.clone());
                    // Its includes do not wait for the rule: they load now, in its place.
                    self.loader().follow_top(&top, scope, Status::Loaded);
                    self.conditional.insert(top.real.clone());
                    group.rules.push(CondRule {
                        record,
                        includes: top.processed.includes.clone(),
                        patterns,
                    });
                }
                None => {
                    self.loader().place(
                        &top,
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
            group.matcher = RuleMatcher::new(group.rules.iter().map(|r| &r.patterns[..]));
            self.groups.push(group);
        }
    }

    /// CLAUDE.md, .claude/CLAUDE.md, rules, then CLAUDE.local.md (or AGENTS.md) of one directory.
    fn directory(&mut self, dir: &Path, dir_real: &Path, agents: Agents) {
        self.file(
            dir,
            dir_real,
            "CLAUDE.md",
            Scope::Project,
            FileKind::ClaudeMd,
        );
        self.file(
            dir,
            dir_real,
            ".claude/CLAUDE.md",
            Scope::Project,
            FileKind::ClaudeMd,
        );
        self.rules(
            &dir.join(".claude").join("rules"),
            dir_real,
            &Path::new(".claude").join("rules"),
            Scope::Project,
            dir,
        );
        self.file(
            dir,
            dir_real,
            "CLAUDE.local.md",
            Scope::Local,
            FileKind::LocalMd,
        );
        match agents {
            Agents::Load => {
                self.file(
                    dir,
                    dir_real,
                    "AGENTS.md",
                    Scope::Project,
                    FileKind::AgentsMd,
                );
            }
            Agents::Inactive => {
                let path = dir.join("AGENTS.md");
                if self.fs.is_file(&path) {
                    let mut rec =
                        FileRecord::new(path, Scope::Project, FileKind::AgentsMd, Status::Inactive);
                    rec.reason = Some(
                        "AGENTS.md is read only when no CLAUDE.md, .claude/CLAUDE.md or CLAUDE.local.md with content exists from / down to the working directory"
                            .into(),
                    );
                    self.files.push(rec);
                }
            }
            Agents::Never => {}
        }
    }

    /// Does any directory of the walk have a CLAUDE-family file that gives an entry? Reads them
    /// ahead; the main pass uses what was read.
    fn claude_files_give_an_entry(&mut self, dirs: &[&Path], user_claude: Option<&Path>) -> bool {
        let mut found = false;
        for dir in dirs {
            for rel in ["CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"] {
                let path = dir.join(rel);
                let read = self.fs.read_text(&path);
                if let Ok(text) = &read
                    && Some(path.as_path()) != user_claude
                    && self.project.exclusion(&path, Scope::Project).is_none()
                {
                    let processed = self.project.parses.process(&path, text.clone());
                    found |= !crate::js::is_blank(&processed.content);
                }
                self.prefetched.insert(path, read);
            }
        }
        found
    }
}

/// The switches of a walk once the settings files' `env` blocks and keys are applied (a
/// variable set in a settings `env` block acts as if the environment had it).
struct Effective {
    disabled: bool,
    auto_memory: bool,
    load_additional_dirs: bool,
    findings: Vec<Finding>,
}

impl Effective {
    fn new(opts: &Options, settings: &Settings) -> Effective {
        let flag = |name: &str, from_env: bool| {
            settings
                .env_flag(name)
                .map_or((from_env, None), |(v, src)| (v, Some(src.to_path_buf())))
        };
        let (disabled, disabled_by) = flag("CLAUDE_CODE_DISABLE_CLAUDE_MDS", opts.disabled);
        let (no_memory, _) = flag("CLAUDE_CODE_DISABLE_AUTO_MEMORY", !opts.auto_memory);
        let (load_additional_dirs, _) = flag(
            "CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD",
            opts.load_additional_dirs,
        );
        let memory_off = settings
            .auto_memory_enabled
            .as_ref()
            .is_some_and(|v| !v.value);
        let mut findings = Vec::new();
        if let (true, Some(src)) = (disabled, disabled_by) {
            findings.push(Finding::whole_file(
                src,
                Severity::Information,
                "settings-disable-claude-mds",
                "CLAUDE_CODE_DISABLE_CLAUDE_MDS is set in this file's env block: no instruction file, no MEMORY.md and no attachment is loaded, as if the environment had it",
            ));
        }
        Effective {
            disabled,
            auto_memory: !no_memory && !memory_off,
            load_additional_dirs,
            findings,
        }
    }
}

/// The `autoMemoryDirectory` of the settings files (`~/` expanded), validated; a value that is
/// refused is a finding on its settings file, and the default folder is used.
fn settings_memory_dir(
    fs: &dyn Fs,
    opts: &Options,
    settings: &Settings,
    user_dir: Option<&Path>,
    project: &Path,
    findings: &mut Vec<Finding>,
) -> Option<PathBuf> {
    let raw = settings.auto_memory_directory.as_ref()?;
    let repository = settings
        .files
        .iter()
        .any(|f| f.repository && f.path == raw.source);
    match judge_memory_dir(fs, opts, user_dir, project, &raw.value, repository) {
        Ok(dir) => Some(dir),
        Err(why) => {
            findings.push(Finding::whole_file(
                raw.source.clone(),
                Severity::Warning,
                "settings-memory-dir",
                format!(
                    "autoMemoryDirectory not used, {why}; the default memory folder is read instead"
                ),
            ));
            None
        }
    }
}

/// The folder an `autoMemoryDirectory` value names (`~/` expanded), or why it is refused.
///
/// A repository's file (the project's, or a `settings.local.json` git tracks) is refused more:
/// a folder where memories would act as instructions (inside `~/.claude` but its `projects/`, a
/// `.claude` rules-like folder), and another project's memory folder
/// (`<user dir>/projects/<other>/…`, by real path): its memories would be read into this session
/// and this session's written into it. The reference honours both; we refuse them even in a
/// trusted folder (docs/decisions.md).
fn judge_memory_dir(
    fs: &dyn Fs,
    opts: &Options,
    user_dir: Option<&Path>,
    project: &Path,
    value: &str,
    repository: bool,
) -> Result<PathBuf, String> {
    let expanded = match (value.strip_prefix("~/"), &opts.home) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => value.to_string(),
    };
    let dir = memory::validate_dir(&expanded)?;
    if !repository {
        return Ok(dir);
    }
    memory::refuse_instruction_dirs(&dir, user_dir)?;
    match other_projects_memory(fs, &dir, user_dir, project) {
        Some(other) => Err(format!(
            "memory directory: {:?} is inside another project's memory folder ({}), and this is the repository's settings file: its memories would be read into this session and this session's written into it",
            dir.to_string_lossy(),
            other.display()
        )),
        None => Ok(dir),
    }
}

/// The other project's folder under `<user dir>/projects/` that `dir` lies in (by real path,
/// as far as it exists), if any; this project's own folder there does not count.
fn other_projects_memory(
    fs: &dyn Fs,
    dir: &Path,
    user_dir: Option<&Path>,
    project: &Path,
) -> Option<PathBuf> {
    let user_dir = user_dir?;
    let real = |p: &Path| -> PathBuf {
        // The longest part that exists, resolved; the rest as written.
        let mut head = p.to_path_buf();
        let mut tail = Vec::new();
        loop {
            if let Ok(r) = fs.canonicalize(&head) {
                return tail.iter().rev().fold(r, |acc: PathBuf, c| acc.join(c));
            }
            match (head.file_name().map(|n| n.to_os_string()), head.parent()) {
                (Some(name), Some(parent)) => {
                    tail.push(name);
                    head = parent.to_path_buf();
                }
                _ => return p.to_path_buf(),
            }
        }
    };
    let projects = real(&user_dir.join("projects"));
    let dir = real(dir);
    let rel = dir.strip_prefix(&projects).ok()?;
    let first = rel.components().next()?;
    let own = memory::slug(project);
    (first.as_os_str() != own.as_str()).then(|| projects.join(first))
}

#[derive(Clone, Copy)]
enum Agents {
    /// The fallback is on: AGENTS.md loads after the directory's rules.
    Load,
    /// A CLAUDE-family file gave an entry: AGENTS.md is shown as inactive.
    Inactive,
    /// Additional directories: not looked at.
    Never,
}

/// The walk at session start.
pub fn build(fs: &dyn Fs, opts: &Options) -> Context {
    build_with(fs, opts, Arc::default())
}

/// The walk, reusing the parses of files whose text did not change since `parses` saw them
/// (a long-running server keeps one [`ParseCache`] and rebuilds walks through it).
pub fn build_with(fs: &dyn Fs, opts: &Options, parses: Arc<ParseCache>) -> Context {
    let pwd = opts.cwd.clone();
    let cwd = fs.canonicalize(&pwd).unwrap_or_else(|_| pwd.clone());
    let roots = memory::find_git_roots(fs, &cwd, &opts.git_ceilings);
    let git_root = roots.as_ref().map(|r| r.work_tree.clone());
    let project_root = git_root.clone().unwrap_or_else(|| cwd.clone());
    // The user's folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    let user_dir = opts
        .config_dir
        .clone()
        .or_else(|| opts.home.as_ref().map(|h| h.join(".claude")));
    let global_config = match &opts.config_dir {
        Some(dir) => Some(dir.join(".claude.json")),
        None => opts.home.as_ref().map(|h| h.join(".claude.json")),
    };
    let settings = Arc::new(cc_settings::read(
        fs,
        &cc_settings::Locations {
            user: user_dir
                .as_ref()
                .map(|d| d.join(cc_settings::SETTINGS_FILE)),
            project: cwd.join(".claude").join(cc_settings::SETTINGS_FILE),
            local: cwd.join(".claude").join(cc_settings::LOCAL_SETTINGS_FILE),
            managed: opts.managed_dir.join(cc_settings::MANAGED_SETTINGS_FILE),
            trust: opts.trust,
        },
    ));
    let effective = Effective::new(opts, &settings);
    let mut project = Project::new(cwd.clone(), project_root.clone(), opts.home.clone(), parses);
    project.global_config = global_config;
    project.user_dir = user_dir.clone();
    project.managed_dir = opts.managed_dir.clone();
    project.settings = settings.clone();
    project.plugin_dirs = opts.plugin_dirs.clone();
    let mut walk = Walk {
        fs,
        project,
        seen: HashSet::new(),
        files: Vec::new(),
        findings: settings.findings.clone(),
        groups: Vec::new(),
        conditional: HashSet::new(),
        prefetched: HashMap::new(),
        project_root: project_root.clone(),
        budget: Budget::default(),
    };
    walk.findings.extend(effective.findings);
    let canonical = roots.as_ref().map_or(&cwd, |r| &r.canonical);
    // A repository's `autoMemoryDirectory` held back until the folder is trusted: the folder it
    // would give then, or why it would be refused.
    let held_memory_dir = if settings.trust.reads_held() {
        None
    } else {
        settings
            .reach
            .iter()
            .rev()
            .find(|r| r.key == "autoMemoryDirectory")
            .map(|r| {
                let judged =
                    judge_memory_dir(fs, opts, user_dir.as_deref(), canonical, &r.detail, true);
                (r.source.clone(), judged)
            })
    };
    let memory_dir = if effective.auto_memory {
        opts.memory_dir
            .clone()
            .or_else(|| {
                settings_memory_dir(
                    fs,
                    opts,
                    &settings,
                    user_dir.as_deref(),
                    canonical,
                    &mut walk.findings,
                )
            })
            .or_else(|| {
                user_dir.as_ref().map(|d| {
                    d.join("projects")
                        .join(memory::slug(canonical))
                        .join("memory")
                })
            })
    } else {
        None
    };

    if !effective.disabled {
        // 1. Managed: CLAUDE.md, the `claudeMd` of managed-settings.json, rules. Its includes
        // and rule links obey the cwd boundary; its conditional rules match relative to cwd.
        let managed = &opts.managed_dir;
        let managed_real = fs.canonicalize(managed).unwrap_or_else(|_| managed.clone());
        walk.file(
            managed,
            &managed_real,
            "CLAUDE.md",
            Scope::Managed,
            FileKind::ClaudeMd,
        );
        if let Some(text) = &settings.managed_claude_md {
            walk.managed_settings_entry(&managed.join(cc_settings::MANAGED_SETTINGS_FILE), text);
        }
        walk.rules(
            &managed.join(".claude").join("rules"),
            &managed_real,
            &Path::new(".claude").join("rules"),
            Scope::Managed,
            &cwd,
        );

        // 2. User: `~/.claude/CLAUDE.md` (or `$CLAUDE_CONFIG_DIR/CLAUDE.md`) keeps that path;
        // user rules show their real paths and match relative to cwd.
        let mut user_claude = None;
        if let Some(dir) = &user_dir {
            let dir_real = fs.canonicalize(dir).unwrap_or_else(|_| dir.clone());
            walk.file(dir, &dir_real, "CLAUDE.md", Scope::User, FileKind::ClaudeMd);
            walk.rules(
                &dir.join("rules"),
                &dir_real,
                Path::new("rules"),
                Scope::User,
                &cwd,
            );
            user_claude = Some(dir_real.join("CLAUDE.md"));
        }

        // 3. Root to cwd (the ancestors of a real path are real), at most MAX_DIR_DEPTH below
        // the root.
        let dirs: Vec<&Path> = {
            let mut d: Vec<&Path> = cwd.ancestors().collect();
            d.reverse();
            if d.len() > MAX_DIR_DEPTH + 1 {
                walk.findings
                    .push(depth_cap_finding(&cwd, d[MAX_DIR_DEPTH + 1], d.len() - 1));
                d.truncate(MAX_DIR_DEPTH + 1);
            }
            d
        };
        let found = walk.claude_files_give_an_entry(&dirs, user_claude.as_deref());
        let agents = if found {
            Agents::Inactive
        } else {
            Agents::Load
        };
        for dir in &dirs {
            walk.directory(dir, dir, agents);
        }
        walk.prefetched.clear();

        // 4. Additional directories.
        if effective.load_additional_dirs {
            for dir in &opts.additional_dirs {
                let real = fs.canonicalize(dir).unwrap_or_else(|_| dir.clone());
                walk.directory(dir, &real, Agents::Never);
            }
        }

        // 5. Auto-memory, last: LF line endings, caps, no includes.
        if let Some(dir) = &memory_dir {
            let path = dir.join(memory::INDEX_FILE);
            let mut loader = walk.loader();
            if let Some(top) = loader.read_top(&path, None, Scope::Memory, FileKind::Memory) {
                let content = crate::js::normalize_newlines(&top.processed.content);
                let (text, cut) = memory::cap(&content);
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
                    &top,
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
        pwd,
        cwd,
        git_root,
        project_root,
        memory_dir,
        held_memory_dir,
        disabled: effective.disabled,
        files: walk.files,
        findings: walk.findings,
        rule_groups: walk.groups,
        project: walk.project,
        nested: Default::default(),
    }
}
