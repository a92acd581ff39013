//! Loading one instruction file and the files it includes, with a finding for everything skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::frontmatter::{self, Frontmatter};
use super::includes::{self, IncludeRef};
use super::{FileKind, FileRecord, Finding, IncludeSite, Scope, Severity, Status, estimate_tokens};
use crate::fs::{Fs, ReadError, normalize};

/// Top file plus at most 4 nested levels.
pub const MAX_INCLUDE_DEPTH: usize = 4;
/// Instruction files above this many characters get an information finding.
pub const LARGE_FILE_CHARS: usize = 40_000;

/// Parsed files by path, reused while a file's text is unchanged: a rebuilt walk re-reads every
/// file (cheap) but re-parses only those whose text changed (the markdown parse is the cost).
/// The text is compared in full, so the cache can never serve a stale parse.
#[derive(Debug, Default)]
pub struct ParseCache {
    entries: std::sync::Mutex<std::collections::HashMap<PathBuf, (String, Arc<Processed>)>>,
}

impl ParseCache {
    pub(crate) fn process(&self, path: &Path, text: String) -> Arc<Processed> {
        if let Ok(entries) = self.entries.lock()
            && let Some((cached, parsed)) = entries.get(path)
            && *cached == text
        {
            return parsed.clone();
        }
        let parsed = Arc::new(process(&text));
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(path.to_path_buf(), (text, parsed.clone()));
        }
        parsed
    }

    /// Number of files held (for tests and memory accounting).
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What decides whether an include may leave the project.
#[derive(Clone, Debug, Default)]
pub(crate) struct Project {
    /// cwd, the git root, additional directories: includes below them need no approval.
    pub roots: Vec<PathBuf>,
    /// The keys under which `~/.claude.json` may approve external includes.
    pub approval_keys: Vec<PathBuf>,
    pub home: Option<PathBuf>,
    approved: Arc<OnceLock<bool>>,
    pub parses: Arc<ParseCache>,
}

impl Project {
    pub fn new(
        roots: Vec<PathBuf>,
        approval_keys: Vec<PathBuf>,
        home: Option<PathBuf>,
        parses: Arc<ParseCache>,
    ) -> Project {
        Project {
            roots,
            approval_keys,
            home,
            approved: Arc::default(),
            parses,
        }
    }

    fn inside(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    /// `~/.claude.json` → `projects["<root>"].hasClaudeMdExternalIncludesApproved`, read once, lazily.
    fn approved(&self, fs: &dyn Fs) -> bool {
        *self.approved.get_or_init(|| {
            let Some(home) = &self.home else { return false };
            let Ok(text) = fs.read_text(&home.join(".claude.json")) else {
                return false;
            };
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
                return false;
            };
            self.approval_keys.iter().any(|k| {
                json.get("projects")
                    .and_then(|p| p.get(k.to_string_lossy().as_ref()))
                    .and_then(|p| p.get("hasClaudeMdExternalIncludesApproved"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true)
            })
        })
    }
}

/// A file after frontmatter and comment stripping.
#[derive(Clone, Debug)]
pub(crate) struct Processed {
    pub content: String,
    pub frontmatter: Option<Frontmatter>,
    /// Includes with file line numbers.
    pub includes: Vec<IncludeRef>,
    pub chars: usize,
}

pub(crate) fn process(text: &str) -> Processed {
    let (fm, body) = frontmatter::split(text);
    let offset = fm.as_ref().map_or(0, |f| f.lines);
    let content = super::comments::strip_html_comments(body).into_owned();
    let mut refs = includes::extract(body);
    for r in &mut refs {
        r.line += offset;
    }
    Processed {
        content,
        frontmatter: fm,
        includes: refs,
        chars: text.chars().count(),
    }
}

/// Loads files into `out`, marking each path in `seen` so a file appears at most once.
pub(crate) struct Loader<'a> {
    pub fs: &'a dyn Fs,
    pub project: &'a Project,
    pub seen: &'a mut HashSet<PathBuf>,
    pub out: &'a mut Vec<FileRecord>,
    pub findings: &'a mut Vec<Finding>,
}

/// A top file, read and processed, not yet placed.
pub(crate) struct Top {
    pub path: PathBuf,
    pub processed: Arc<Processed>,
}

impl Loader<'_> {
    /// Reads a candidate top file. `None` when it does not exist (the normal case for most
    /// candidates); an unreadable one is recorded as skipped.
    pub fn read_top(&mut self, path: &Path, scope: Scope, kind: FileKind) -> Option<Top> {
        match self.fs.read_text(path) {
            Ok(text) => {
                let processed = self.project.parses.process(path, text);
                self.file_findings(path, &processed, kind);
                Some(Top {
                    path: path.to_path_buf(),
                    processed,
                })
            }
            Err(ReadError::NotFound) | Err(ReadError::NotAFile(crate::fs::Kind::Dir)) => None,
            Err(e) => {
                let mut rec = FileRecord::new(path.to_path_buf(), scope, kind, Status::Skipped);
                rec.reason = Some(e.to_string());
                self.out.push(rec);
                self.findings.push(Finding::whole_file(
                    path.to_path_buf(),
                    Severity::Warning,
                    "unreadable",
                    format!("not loaded: {e}"),
                ));
                None
            }
        }
    }

    /// Findings about the file itself: frontmatter, globs, size.
    fn file_findings(&mut self, path: &Path, p: &Processed, kind: FileKind) {
        if let Some(fm) = &p.frontmatter {
            if let Some(err) = &fm.error {
                let extra = if kind == FileKind::Rule {
                    "; the rule loads as if it had no `paths`"
                } else {
                    ""
                };
                self.findings.push(Finding {
                    path: path.to_path_buf(),
                    line: Some(err.line),
                    start_col: err.col,
                    end_col: err.col + 1,
                    severity: Severity::Error,
                    code: "frontmatter".into(),
                    message: format!("frontmatter: {}{extra}", err.message),
                });
            }
            if kind == FileKind::Rule {
                for g in fm.paths.iter().flatten() {
                    if let Err(msg) = super::globs::check(&g.glob) {
                        self.findings.push(Finding {
                            path: path.to_path_buf(),
                            line: Some(g.line),
                            start_col: g.col,
                            end_col: g.col + g.glob.len(),
                            severity: Severity::Error,
                            code: "invalid-glob".into(),
                            message: format!("invalid glob {:?}: {msg}", g.glob),
                        });
                    }
                }
            }
        }
        if p.chars > LARGE_FILE_CHARS {
            self.findings.push(Finding::whole_file(
                path.to_path_buf(),
                Severity::Information,
                "large-file",
                format!(
                    "large instruction file: {} characters, ≈ {} tokens sent with every request",
                    p.chars,
                    estimate_tokens(&p.content)
                ),
            ));
        }
    }

    /// Places a top file with `status` (Loaded or Attached), then its includes when `follow`.
    /// Returns false when it was already seen or is empty.
    #[allow(clippy::too_many_arguments)] // reason: plain data for one record; a struct would only rename them.
    pub fn place(
        &mut self,
        top: Top,
        scope: Scope,
        kind: FileKind,
        status: Status,
        follow: bool,
        reason: Option<String>,
        configure: impl FnOnce(&mut FileRecord),
    ) -> bool {
        if !self.seen.insert(top.path.clone()) {
            let mut rec = FileRecord::new(top.path, scope, kind, Status::Skipped);
            rec.reason = Some("already loaded earlier in this session".into());
            self.out.push(rec);
            return false;
        }
        let mut rec = FileRecord::new(top.path.clone(), scope, kind, status);
        rec.reason = reason;
        configure(&mut rec);
        if rec.content.is_empty() {
            rec.content = top.processed.content.clone();
        }
        if rec.content.trim().is_empty() {
            rec.status = Status::Empty;
            rec.reason = Some("empty after frontmatter and comments are stripped".into());
            self.out.push(rec);
            return false;
        }
        rec.tokens = estimate_tokens(&rec.content);
        self.out.push(rec);
        if follow {
            let mut chain = vec![top.path.clone()];
            self.follow(
                &top.path,
                &top.processed.includes,
                scope,
                status,
                1,
                &mut chain,
            );
        }
        true
    }

    /// Includes of `from`, depth-first in pre-order, each its own record right after its includer.
    pub fn follow(
        &mut self,
        from: &Path,
        refs: &[IncludeRef],
        scope: Scope,
        status: Status,
        depth: usize,
        chain: &mut Vec<PathBuf>,
    ) {
        let dir = from.parent().unwrap_or(Path::new("/"));
        for r in refs {
            let site = IncludeSite {
                path: from.to_path_buf(),
                line: r.line,
                start_col: r.cols.start,
                end_col: r.cols.end,
                written: r.path.clone(),
            };
            let target = match r.path.strip_prefix("~/") {
                Some(rest) => match &self.project.home {
                    Some(home) => normalize(home, Path::new(rest)),
                    None => {
                        self.skip(site, r, PathBuf::from(&r.path), scope, depth, Skip::NoHome);
                        continue;
                    }
                },
                None => normalize(dir, Path::new(&r.path)),
            };
            if depth > MAX_INCLUDE_DEPTH {
                self.skip(
                    site,
                    r,
                    target,
                    scope,
                    depth,
                    Skip::TooDeep(chain[0].clone()),
                );
                continue;
            }
            if chain.contains(&target) {
                self.skip(site, r, target, scope, depth, Skip::Cycle);
                continue;
            }
            if self.seen.contains(&target) {
                self.skip(site, r, target, scope, depth, Skip::Duplicate);
                continue;
            }
            if matches!(scope, Scope::Project | Scope::Local)
                && !self.project.inside(&target)
                && !self.project.approved(self.fs)
            {
                self.skip(site, r, target, scope, depth, Skip::External);
                continue;
            }
            let text = match self.fs.read_text(&target) {
                Ok(t) => t,
                Err(e) => {
                    self.skip(site, r, target, scope, depth, Skip::Read(e));
                    continue;
                }
            };
            let processed = self.project.parses.process(&target, text);
            self.file_findings(&target, &processed, FileKind::Include);
            self.seen.insert(target.clone());
            let mut rec = FileRecord::new(target.clone(), scope, FileKind::Include, status);
            rec.depth = depth;
            rec.included_from = Some(site);
            if processed.content.trim().is_empty() {
                rec.status = Status::Empty;
                rec.reason = Some("empty after frontmatter and comments are stripped".into());
                self.out.push(rec);
            } else {
                rec.tokens = estimate_tokens(&processed.content);
                rec.content = processed.content.clone();
                self.out.push(rec);
            }
            chain.push(target.clone());
            self.follow(
                &target,
                &processed.includes,
                scope,
                status,
                depth + 1,
                chain,
            );
            chain.pop();
        }
    }

    fn skip(
        &mut self,
        site: IncludeSite,
        r: &IncludeRef,
        target: PathBuf,
        scope: Scope,
        depth: usize,
        why: Skip,
    ) {
        let (severity, code, message, reason) = match &why {
            Skip::NoHome => (
                Severity::Warning,
                "include-no-home",
                format!(
                    "not loaded: {} needs a home directory and HOME is not set",
                    r.path
                ),
                "HOME is not set".to_string(),
            ),
            Skip::TooDeep(top) => {
                let top_name = top
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (
                    Severity::Warning,
                    "include-too-deep",
                    format!(
                        "not loaded: includes go at most {MAX_INCLUDE_DEPTH} levels below {top_name}"
                    ),
                    format!(
                        "too deep: includes go at most {MAX_INCLUDE_DEPTH} levels below {top_name}"
                    ),
                )
            }
            Skip::Cycle => (
                Severity::Warning,
                "include-cycle",
                format!(
                    "not loaded again: {} is already in this include chain (cycle)",
                    r.path
                ),
                "include cycle".to_string(),
            ),
            Skip::Duplicate => (
                Severity::Hint,
                "include-duplicate",
                format!(
                    "already loaded earlier: {} appears once per session",
                    r.path
                ),
                "already loaded earlier".to_string(),
            ),
            Skip::External => (
                Severity::Warning,
                "include-external",
                format!(
                    "not loaded: outside the project; approve external includes to load it (set projects[\"{}\"].hasClaudeMdExternalIncludesApproved to true in ~/.claude.json)",
                    self.project
                        .approval_keys
                        .first()
                        .map(|k| k.display().to_string())
                        .unwrap_or_default()
                ),
                "outside the project and not approved".to_string(),
            ),
            Skip::Read(ReadError::NotFound) => (
                Severity::Error,
                "include-not-found",
                format!(
                    "include not found: {} (resolved to {})",
                    r.path,
                    target.display()
                ),
                "not found".to_string(),
            ),
            Skip::Read(e @ ReadError::Binary) => (
                Severity::Warning,
                "include-binary",
                format!("not loaded: {} is a {e}", r.path),
                e.to_string(),
            ),
            Skip::Read(e) => (
                Severity::Warning,
                "include-unreadable",
                format!("not loaded: {}: {e}", r.path),
                e.to_string(),
            ),
        };
        self.findings.push(Finding {
            path: site.path.clone(),
            line: Some(site.line),
            start_col: site.start_col,
            end_col: site.end_col,
            severity,
            code: code.into(),
            message,
        });
        let mut rec = FileRecord::new(target, scope, FileKind::Include, super::Status::Skipped);
        rec.depth = depth;
        rec.reason = Some(reason);
        rec.included_from = Some(site);
        self.out.push(rec);
    }
}

enum Skip {
    NoHome,
    TooDeep(PathBuf),
    Cycle,
    Duplicate,
    External,
    Read(ReadError),
}

/// What a lint of one file needs to know about the project.
#[derive(Clone, Debug, Default)]
pub struct LintOptions {
    pub cwd: PathBuf,
    pub git_root: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

/// Every finding about one instruction file, as `check` and the editor's diagnostics show them.
pub fn lint_file(fs: &dyn Fs, path: &Path, opts: &LintOptions) -> Vec<Finding> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_rules = path.components().any(|c| c.as_os_str() == "rules")
        && path
            .ancestors()
            .any(|a| a.file_name().is_some_and(|n| n == ".claude"));
    let kind = if in_rules {
        FileKind::Rule
    } else if name == "CLAUDE.local.md" {
        FileKind::LocalMd
    } else if name == "AGENTS.md" {
        FileKind::AgentsMd
    } else if name == super::super::memory::INDEX_FILE {
        FileKind::Memory
    } else {
        FileKind::ClaudeMd
    };
    let home_claude = opts.home.as_ref().map(|h| h.join(".claude"));
    let scope = match (&home_claude, kind) {
        (_, FileKind::Memory) => Scope::Memory,
        (Some(hc), _) if path.starts_with(hc) => Scope::User,
        (_, FileKind::LocalMd) => Scope::Local,
        _ => Scope::Project,
    };
    let mut roots = vec![opts.cwd.clone()];
    roots.extend(opts.git_root.clone());
    let project = Project::new(roots.clone(), roots, opts.home.clone(), Arc::default());
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut findings = Vec::new();
    let mut loader = Loader {
        fs,
        project: &project,
        seen: &mut seen,
        out: &mut out,
        findings: &mut findings,
    };
    let Some(top) = loader.read_top(path, scope, kind) else {
        return findings;
    };
    if kind == FileKind::Memory {
        if let (_, Some(cut)) = crate::memory::cap(&top.processed.content) {
            findings.push(memory_finding(path, &cut));
        }
        return findings;
    }
    if kind != FileKind::AgentsMd {
        seen_insert_and_follow(&mut loader, &top, scope);
    }
    findings
}

fn seen_insert_and_follow(loader: &mut Loader<'_>, top: &Top, scope: Scope) {
    loader.seen.insert(top.path.clone());
    let mut chain = vec![top.path.clone()];
    loader.follow(
        &top.path,
        &top.processed.includes,
        scope,
        Status::Loaded,
        1,
        &mut chain,
    );
}

/// The warning on the first line of MEMORY.md that the model will not see.
pub(crate) fn memory_finding(path: &Path, cut: &crate::memory::Cut) -> Finding {
    let message = if cut.by_bytes {
        format!(
            "{:.1} KB (limit {:.1} KB): lines {}-{} are not loaded",
            cut.bytes as f64 / 1024.0,
            crate::memory::MAX_BYTES as f64 / 1024.0,
            cut.first_cut.0,
            cut.total_lines
        )
    } else {
        format!(
            "{} lines (limit {}): lines {}-{} are not loaded",
            cut.total_lines,
            crate::memory::MAX_LINES,
            cut.first_cut.0,
            cut.total_lines
        )
    };
    Finding {
        path: path.to_path_buf(),
        line: Some(cut.first_cut.0 - 1),
        start_col: 0,
        end_col: cut.first_cut.1.len(),
        severity: Severity::Warning,
        code: "memory-cap".into(),
        message,
    }
}
