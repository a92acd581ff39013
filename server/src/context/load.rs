//! Loading one instruction file and the files it includes, with a finding for everything skipped.
//!
//! Paths: every file has the path it is *shown* under and its *real* path (every link
//! resolved). Duplicates are found by real path; includes resolve from the real file's folder and
//! are shown under the path as written; the include boundary (cwd, unless the project approved
//! external includes) applies to the written path and to the real path.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::frontmatter::{self, Frontmatter, Parse};
use super::globs::{MAX_GLOB_LEN, MAX_PATTERNS};
use super::includes::{self, IncludeRef};
use super::message::{quote_list, quoted, thousands};
use super::{FileKind, FileRecord, Finding, IncludeSite, Scope, Severity, Status, estimate_tokens};
use crate::fs::{Fs, ReadError, normalize};

/// Top file plus at most 4 nested levels.
pub const MAX_INCLUDE_DEPTH: usize = 4;

/// Rule files one walk (or one session's attachments, or one directory's scan) reads: a cap a
/// real project never meets (the standard benchmark tree has 300), so a tree of 100,000 rules
/// costs a finding instead of gigabytes. Claude Code has no such cap.
pub const MAX_RULES: usize = 10_000;
/// Include sites one walk (or one session's attachments) follows, across all its files.
pub const MAX_INCLUDES: usize = 10_000;
/// Text one walk (or one session's attachments) reads: 32 MB, eight million tokens, more than
/// any model's context window holds.
pub const MAX_BYTES: u64 = 32 << 20;

/// What a walk may still read (see [`MAX_RULES`], [`MAX_INCLUDES`], [`MAX_BYTES`]). Each cap that
/// is met becomes a finding saying what was cut.
#[derive(Clone, Debug)]
pub(crate) struct Budget {
    pub rules: usize,
    pub includes: usize,
    pub bytes: u64,
    /// The byte cap was met and said.
    bytes_said: bool,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            rules: MAX_RULES,
            includes: MAX_INCLUDES,
            bytes: MAX_BYTES,
            bytes_said: false,
        }
    }
}
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

/// What decides whether an include may leave the working directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct Project {
    /// The real working directory: the include boundary.
    pub cwd: PathBuf,
    /// The key under which `~/.claude.json` may approve external includes: the root of the git
    /// repository holding cwd, or cwd outside git.
    pub approval_key: PathBuf,
    pub home: Option<PathBuf>,
    /// `~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`: where the approval is read.
    pub global_config: Option<PathBuf>,
    /// `~/.claude`, or `$CLAUDE_CONFIG_DIR`: the user's folder (skills, settings).
    pub user_dir: Option<PathBuf>,
    /// Files below it are managed: never excluded.
    pub managed_dir: PathBuf,
    /// The settings files' keys (`claudeMdExcludes`).
    pub settings: Arc<super::settings::Settings>,
    approved: Arc<OnceLock<bool>>,
    pub parses: Arc<ParseCache>,
    /// `--plugin-dir` folders (`crate::plugins`).
    pub plugin_dirs: Vec<PathBuf>,
}

impl Project {
    pub fn new(
        cwd: PathBuf,
        approval_key: PathBuf,
        home: Option<PathBuf>,
        parses: Arc<ParseCache>,
    ) -> Project {
        Project {
            global_config: home.as_ref().map(|h| h.join(".claude.json")),
            user_dir: home.as_ref().map(|h| h.join(".claude")),
            cwd,
            approval_key,
            home,
            managed_dir: PathBuf::new(),
            settings: Arc::default(),
            approved: Arc::default(),
            parses,
            plugin_dirs: Vec::new(),
        }
    }

    /// The `claudeMdExcludes` pattern that leaves out a file of `scope` shown as `path`; managed
    /// files (and MEMORY.md, which is not looked up here) never are.
    pub fn exclusion(&self, path: &Path, scope: Scope) -> Option<super::settings::Exclusion> {
        if matches!(scope, Scope::Managed | Scope::Memory)
            || (!self.managed_dir.as_os_str().is_empty() && path.starts_with(&self.managed_dir))
            || self.settings.excludes.is_empty()
        {
            return None;
        }
        self.settings.excluded(path)
    }

    /// `~/.claude.json` → `projects["<key>"].hasClaudeMdExternalIncludesApproved`, read once, lazily.
    pub fn approved(&self, fs: &dyn Fs) -> bool {
        *self.approved.get_or_init(|| {
            let Some(config) = &self.global_config else {
                return false;
            };
            let Ok(text) = fs.read_text(config) else {
                return false;
            };
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
                return false;
            };
            json.get("projects")
                .and_then(|p| p.get(self.approval_key.to_string_lossy().as_ref()))
                .and_then(|p| p.get("hasClaudeMdExternalIncludesApproved"))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
        })
    }

    /// How to approve external includes, for messages.
    pub fn approval_hint(&self) -> String {
        format!(
            "set projects[\"{}\"].hasClaudeMdExternalIncludesApproved to true in ~/.claude.json",
            self.approval_key.display()
        )
    }
}

/// The real path of `base.join(rel)`, knowing that `base_real` is `base` with its links
/// resolved: each component of `rel` is looked at (one `lstat`), and the first link hands over
/// to `canonicalize`. A component that does not exist ends the walk (nothing below it can be a
/// link). An error for a dangling link (`NotFound`) or a loop.
pub(crate) fn real_path(fs: &dyn Fs, base_real: &Path, rel: &Path) -> std::io::Result<PathBuf> {
    let mut real = base_real.to_path_buf();
    let mut comps = rel.components();
    while let Some(c) = comps.next() {
        match c {
            Component::Normal(name) => real.push(name),
            Component::ParentDir => {
                real.pop();
                continue;
            }
            _ => continue,
        }
        match fs.is_symlink(&real) {
            Ok(false) => {}
            Ok(true) => {
                let rest = comps.as_path();
                let resolved = fs.canonicalize(&real)?;
                return if rest.as_os_str().is_empty() {
                    Ok(resolved)
                } else {
                    real_path(fs, &resolved, rest)
                };
            }
            Err(_) => {
                real.push(comps.as_path());
                return Ok(normalize(Path::new("/"), &real));
            }
        }
    }
    Ok(real)
}

/// A file after frontmatter and comment stripping.
#[derive(Clone, Debug)]
pub(crate) struct Processed {
    /// What the model sees, before trimming (attachments are not trimmed).
    pub content: String,
    pub frontmatter: Option<Frontmatter>,
    /// Includes with file line numbers (at most [`includes::MAX_PER_FILE`]).
    pub includes: Vec<IncludeRef>,
    /// The includes past [`includes::MAX_PER_FILE`], counted.
    pub includes_overflow: Option<includes::Overflow>,
    /// Characters of the whole file, and of its frontmatter block.
    pub chars: usize,
    pub frontmatter_chars: usize,
}

pub(crate) fn process(text: &str) -> Processed {
    let (fm, body) = frontmatter::split(text);
    let content = super::comments::strip_html_comments(body).into_owned();
    let (refs, overflow) = includes::extract_file_capped(text);
    let frontmatter_chars = fm
        .as_ref()
        .map_or(0, |f| text[..f.content_start].chars().count());
    Processed {
        content,
        frontmatter: fm,
        includes: refs,
        includes_overflow: overflow,
        chars: text.chars().count(),
        frontmatter_chars,
    }
}

/// Loads files into `out`, marking each real path in `seen` so a file appears at most once.
pub(crate) struct Loader<'a> {
    pub fs: &'a dyn Fs,
    pub project: &'a Project,
    pub seen: &'a mut HashSet<PathBuf>,
    pub out: &'a mut Vec<FileRecord>,
    pub findings: &'a mut Vec<Finding>,
    pub budget: &'a mut Budget,
    /// Loading the files of a folder below cwd (attached on a touch): their includes never
    /// leave cwd, approved or not.
    pub nested: bool,
}

/// Why the loader did not read a file.
enum Unread {
    Error(ReadError),
    /// Its text (this many bytes) would pass [`MAX_BYTES`].
    Budget(u64),
}

/// A top file, read and processed, not yet placed.
pub(crate) struct Top {
    /// The path it is shown under.
    pub path: PathBuf,
    /// Every link resolved: the identity for duplicates, and the folder includes resolve from.
    pub real: PathBuf,
    pub processed: Arc<Processed>,
}

impl Loader<'_> {
    /// Reads a candidate top file shown as `path`, whose real path is `real` (`None`: resolve
    /// it). `None` when it does not exist (the normal case for most candidates); an unreadable
    /// one is recorded as skipped.
    pub fn read_top(
        &mut self,
        path: &Path,
        real: Option<PathBuf>,
        scope: Scope,
        kind: FileKind,
    ) -> Option<Top> {
        match self.read(path) {
            Ok(text) => self.top_from(path, real, scope, kind, Ok(text)),
            Err(Unread::Error(e)) => self.top_from(path, real, scope, kind, Err(e)),
            Err(Unread::Budget(len)) => {
                self.over_budget(path, scope, kind, len);
                None
            }
        }
    }

    /// Reads `path` within the byte budget. Once the budget is nearly spent the file's size is
    /// asked first, so a tree of huge files is not read only to be dropped.
    fn read(&mut self, path: &Path) -> Result<String, Unread> {
        if self.budget.bytes < crate::fs::MAX_READ_BYTES
            && let Ok(meta) = self.fs.metadata(path)
            && meta.kind == crate::fs::Kind::File
            && meta.len > self.budget.bytes
        {
            return Err(Unread::Budget(meta.len));
        }
        let text = self.fs.read_text(path).map_err(Unread::Error)?;
        self.spend(&text)?;
        Ok(text)
    }

    /// Takes `text`'s bytes from the budget; `Err` when they do not fit.
    fn spend(&mut self, text: &str) -> Result<(), Unread> {
        let len = text.len() as u64;
        if len > self.budget.bytes {
            return Err(Unread::Budget(len));
        }
        self.budget.bytes -= len;
        Ok(())
    }

    /// A file left unread because the byte budget is spent: a record, and one finding for the
    /// first such file.
    fn over_budget(&mut self, path: &Path, scope: Scope, kind: FileKind, len: u64) {
        let mut rec = FileRecord::new(path.to_path_buf(), scope, kind, Status::Skipped);
        rec.reason = Some(format!(
            "not read: the instruction files read before it hold {} MB, the most claude-context reads for one session",
            MAX_BYTES >> 20
        ));
        self.out.push(rec);
        if !std::mem::replace(&mut self.budget.bytes_said, true) {
            self.findings.push(Finding::whole_file(
                path.to_path_buf(),
                Severity::Warning,
                "cap-bytes",
                format!(
                    "not loaded ({} bytes), nor any instruction file after it: the files read before it hold {} MB of text, the most claude-context reads for one session (a cap against runaway trees; Claude Code has none, though no model's context holds this much). The preview shows less than Claude Code would send",
                    super::message::thousands(len),
                    MAX_BYTES >> 20
                ),
            ));
        }
    }

    /// [`Loader::read_top`] with the file already read.
    pub fn read_top_from(
        &mut self,
        path: &Path,
        real: Option<PathBuf>,
        scope: Scope,
        kind: FileKind,
        read: Result<String, ReadError>,
    ) -> Option<Top> {
        if let Ok(text) = &read
            && self.spend(text).is_err()
        {
            self.over_budget(path, scope, kind, text.len() as u64);
            return None;
        }
        self.top_from(path, real, scope, kind, read)
    }

    /// [`Loader::read_top_from`] with the text already taken from the budget.
    fn top_from(
        &mut self,
        path: &Path,
        real: Option<PathBuf>,
        scope: Scope,
        kind: FileKind,
        read: Result<String, ReadError>,
    ) -> Option<Top> {
        match read {
            Ok(text) => {
                let real = real
                    .or_else(|| self.fs.canonicalize(path).ok())
                    .unwrap_or_else(|| path.to_path_buf());
                let processed = self.project.parses.process(&real, text);
                self.file_findings(path, &processed, kind);
                Some(Top {
                    path: path.to_path_buf(),
                    real,
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

    /// Findings about the file itself: frontmatter, globs, size, includes past the cap.
    fn file_findings(&mut self, path: &Path, p: &Processed, kind: FileKind) {
        if let Some(fm) = &p.frontmatter {
            self.findings
                .extend(frontmatter_findings(path, fm, kind == FileKind::Rule));
        }
        // MEMORY.md is capped (its own finding says what is cut), and its includes are not
        // followed.
        if kind == FileKind::Memory {
            return;
        }
        if let Some(f) = large_file_finding(path, p) {
            self.findings.push(f);
        }
        if let Some(o) = &p.includes_overflow {
            self.findings.push(includes_overflow_finding(path, o));
        }
    }

    /// Places a top file with `status` (Loaded or Attached), then its includes when `follow`.
    /// Returns false when it was already seen or is empty.
    #[allow(clippy::too_many_arguments)] // reason: plain data for one record; a struct would only rename them.
    pub fn place(
        &mut self,
        top: &Top,
        scope: Scope,
        kind: FileKind,
        status: Status,
        follow: bool,
        reason: Option<String>,
        configure: impl FnOnce(&mut FileRecord),
    ) -> bool {
        if !self.seen.insert(top.real.clone()) {
            let mut rec = FileRecord::new(top.path.clone(), scope, kind, Status::Skipped);
            rec.real = top.real.clone();
            rec.reason = Some(already_loaded(&top.path, &top.real));
            self.out.push(rec);
            return false;
        }
        let mut rec = FileRecord::new(top.path.clone(), scope, kind, status);
        rec.real = top.real.clone();
        rec.reason = reason;
        configure(&mut rec);
        if rec.content.is_empty() {
            rec.content = top.processed.content.clone();
        }
        let placed = if crate::js::is_blank(&rec.content) {
            rec.status = Status::Empty;
            rec.reason = Some("empty after frontmatter and comments are stripped".into());
            self.out.push(rec);
            false
        } else {
            rec.tokens = estimate_tokens(&rec.content);
            self.out.push(rec);
            true
        };
        if follow && placed {
            self.follow_top(top, scope, status);
        }
        placed
    }

    /// The includes of a top file, from its real folder.
    pub fn follow_top(&mut self, top: &Top, scope: Scope, status: Status) {
        let mut chain = vec![top.real.clone()];
        self.follow(
            &top.path,
            &top.real,
            &top.processed.includes,
            scope,
            status,
            1,
            &mut chain,
        );
    }

    /// Includes of `from` (shown as `from`, real path `from_real`), depth-first in pre-order,
    /// each its own record right after its includer.
    #[allow(clippy::too_many_arguments)] // reason: the recursion's state, spelled out.
    pub fn follow(
        &mut self,
        from: &Path,
        from_real: &Path,
        refs: &[IncludeRef],
        scope: Scope,
        status: Status,
        depth: usize,
        chain: &mut Vec<PathBuf>,
    ) {
        let dir = from_real.parent().unwrap_or(Path::new("/"));
        for (i, r) in refs.iter().enumerate() {
            if self.budget.includes == 0 {
                self.findings
                    .push(session_includes_finding(from, r, refs.len() - i));
                return;
            }
            self.budget.includes -= 1;
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
                let top = chain[0].clone();
                self.skip(site, r, target, scope, depth, Skip::TooDeep(top));
                continue;
            }
            if let Err(ext) = includes::extension_is_read(&r.path) {
                self.skip(site, r, target, scope, depth, Skip::Extension(ext));
                continue;
            }
            // Below the includer's real folder (the usual `@docs/x.md`), only the written
            // components are looked at; elsewhere the whole path is resolved.
            let resolved = match target.strip_prefix(dir) {
                Ok(rel) if !r.path.starts_with("~/") => real_path(self.fs, dir, rel),
                _ => self.fs.canonicalize(&target),
            };
            let real = match resolved {
                Ok(real) => real,
                Err(e) => {
                    let e = ReadError::from_io(&e);
                    self.skip(site, r, target, scope, depth, Skip::Read(e));
                    continue;
                }
            };
            if chain.contains(&real) {
                self.skip(site, r, target, scope, depth, Skip::Cycle);
                continue;
            }
            if self.seen.contains(&real) {
                self.skip(site, r, target, scope, depth, Skip::Duplicate(real));
                continue;
            }
            if scope != Scope::User {
                let cwd = &self.project.cwd;
                let outside = if !target.starts_with(cwd) {
                    Some(Outside::Written)
                } else if !real.starts_with(cwd) {
                    Some(Outside::Link(real.clone()))
                } else {
                    None
                };
                if let Some(how) = outside {
                    if self.nested {
                        self.skip(site, r, target, scope, depth, Skip::Nested(how));
                        continue;
                    }
                    if !self.project.approved(self.fs) {
                        self.skip(site, r, target, scope, depth, Skip::External(how));
                        continue;
                    }
                }
            }
            if let Some(ex) = self.project.exclusion(&target, scope) {
                let mut rec = excluded_record(&target, &real, scope, FileKind::Include, ex);
                rec.depth = depth;
                rec.included_from = Some(site);
                self.out.push(rec);
                continue;
            }
            let text = match self.read(&target) {
                Ok(t) => t,
                Err(Unread::Error(e)) => {
                    self.skip(site, r, target, scope, depth, Skip::Read(e));
                    continue;
                }
                Err(Unread::Budget(len)) => {
                    self.over_budget(&target, scope, FileKind::Include, len);
                    continue;
                }
            };
            let processed = self.project.parses.process(&real, text);
            self.file_findings(&target, &processed, FileKind::Include);
            self.seen.insert(real.clone());
            let mut rec = FileRecord::new(target.clone(), scope, FileKind::Include, status);
            rec.real = real.clone();
            rec.depth = depth;
            rec.included_from = Some(site);
            if crate::js::is_blank(&processed.content) {
                rec.status = Status::Empty;
                rec.reason = Some("empty after frontmatter and comments are stripped".into());
                self.out.push(rec);
            } else {
                rec.tokens = estimate_tokens(&processed.content);
                rec.content = processed.content.clone();
                self.out.push(rec);
            }
            chain.push(real.clone());
            self.follow(
                &target,
                &real,
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
        let written = &r.path;
        let (severity, code, message, reason) = match &why {
            Skip::NoHome => (
                Severity::Warning,
                "include-no-home",
                format!("not loaded: {written} needs a home directory and HOME is not set"),
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
                        "not loaded: includes go at most {MAX_INCLUDE_DEPTH} levels below {top_name}; include {written} from a file nearer the top"
                    ),
                    format!(
                        "too deep: includes go at most {MAX_INCLUDE_DEPTH} levels below {top_name}"
                    ),
                )
            }
            Skip::Extension(ext) => (
                Severity::Warning,
                "include-extension",
                format!(
                    "not loaded: Claude Code reads includes only with a text extension (.md, .txt, .json, ... or none), and .{ext} is not one; rename the file (e.g. to .md) or paste what matters into this file"
                ),
                format!(".{ext} is not a text extension Claude Code reads"),
            ),
            Skip::Cycle => (
                Severity::Warning,
                "include-cycle",
                format!("not loaded again: {written} is already in this include chain (cycle)"),
                "include cycle".to_string(),
            ),
            Skip::Duplicate(real) => {
                let via = if *real != target {
                    format!(" (it is {})", real.display())
                } else {
                    String::new()
                };
                (
                    Severity::Hint,
                    "include-duplicate",
                    format!("already loaded earlier: {written}{via} appears once per session"),
                    "already loaded earlier".to_string(),
                )
            }
            Skip::External(how) => {
                let cwd = self.project.cwd.display();
                let hint = self.project.approval_hint();
                let message = match how {
                    Outside::Link(real) => format!(
                        "not loaded: {written} is a link to {}, outside {cwd}; Claude Code drops includes that lead out of the directory it starts in. Point the include at a file inside it, or {hint}",
                        real.display()
                    ),
                    Outside::Written
                        if self.project.approval_key != self.project.cwd
                            && target.starts_with(&self.project.approval_key) =>
                    {
                        format!(
                            "not loaded when Claude Code starts in {cwd}: includes must lie below the directory it starts in, and {written} is above it. Start it in {}, or {hint}",
                            self.project.approval_key.display()
                        )
                    }
                    Outside::Written => format!(
                        "not loaded: {written} is outside {cwd}, the directory Claude Code starts in; {hint}"
                    ),
                };
                let reason = match how {
                    Outside::Link(_) => "a link out of the working directory, not approved",
                    Outside::Written => "outside the working directory and not approved",
                };
                (
                    Severity::Warning,
                    "include-external",
                    message,
                    reason.to_string(),
                )
            }
            Skip::Nested(how) => {
                let cwd = self.project.cwd.display();
                let lead = match how {
                    Outside::Link(real) => format!("{written} is a link to {}", real.display()),
                    Outside::Written => format!("{written} is"),
                };
                (
                    Severity::Warning,
                    "include-external-nested",
                    format!(
                        "not loaded: {lead} outside {cwd}, and the files of a folder below the directory Claude Code starts in never follow an include out of it, even with external includes approved. Move the included file below {cwd}, or paste what matters into this file"
                    ),
                    "outside the working directory: includes of a folder below it never leave it"
                        .to_string(),
                )
            }
            Skip::Read(ReadError::NotFound) if written == "import" => (
                Severity::Warning,
                "include-import-syntax",
                "`@import` is not Claude Code's include syntax: write `@` and the path (`@docs/file.md`), without `import`. Claude Code reads `@import` as an include of a file named import, which does not exist, and drops it".to_string(),
                "not found".to_string(),
            ),
            Skip::Read(ReadError::NotFound) if !looks_like_a_file(written) => (
                Severity::Warning,
                "include-looks-like-prose",
                format!(
                    "`@{written}` reads as an include of a file named {written}, which does not exist (Claude Code tries it and drops it). If it is prose, write it in backticks (`@{written}`), which Claude Code does not read as an include; if it is a file, give its path"
                ),
                "not found".to_string(),
            ),
            Skip::Read(ReadError::NotFound) => (
                Severity::Error,
                "include-not-found",
                format!(
                    "include not found: {written} (resolved to {})",
                    target.display()
                ),
                "not found".to_string(),
            ),
            Skip::Read(e) => (
                Severity::Warning,
                "include-unreadable",
                format!("not loaded: {written}: {e}"),
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

/// Does an include that was not found look like a file someone meant to include (a path with a
/// `/`, or a name with an extension), rather than a word of prose after an `@` (`@ts-ignore`,
/// `@design-review)`)? Only those are errors: `check` fails a build on errors.
fn looks_like_a_file(written: &str) -> bool {
    let name = written.rsplit('/').next().unwrap_or(written);
    written.contains('/') || name.get(1..).is_some_and(|rest| rest.contains('.'))
}

/// The record of a file a `claudeMdExcludes` pattern leaves out.
pub(crate) fn excluded_record(
    path: &Path,
    real: &Path,
    scope: Scope,
    kind: FileKind,
    ex: super::settings::Exclusion,
) -> FileRecord {
    let mut rec = FileRecord::new(path.to_path_buf(), scope, kind, Status::Excluded);
    rec.real = real.to_path_buf();
    rec.reason = Some(format!(
        "excluded by the claudeMdExcludes pattern {} of {}",
        quoted(&ex.pattern),
        ex.settings.display()
    ));
    rec.excluded = Some(ex);
    rec
}

fn already_loaded(path: &Path, real: &Path) -> String {
    if path == real {
        "already loaded earlier in this session".into()
    } else {
        format!(
            "already loaded earlier in this session (it is {})",
            real.display()
        )
    }
}

enum Outside {
    /// The path as written leaves cwd.
    Written,
    /// The path as written is inside, but a link leads out (to this real path).
    Link(PathBuf),
}

enum Skip {
    NoHome,
    TooDeep(PathBuf),
    Extension(String),
    Cycle,
    Duplicate(PathBuf),
    External(Outside),
    /// Outside cwd, from a file of a folder below cwd (approval does not apply).
    Nested(Outside),
    Read(ReadError),
}

/// Findings about a file's frontmatter: broken YAML (and what Claude Code made of it), globs
/// that are invalid or can never match, a `paths` that is not globs.
pub(crate) fn frontmatter_findings(path: &Path, fm: &Frontmatter, rule: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = |line: usize, col: usize, len: usize, severity, code: &str, message: String| Finding {
        path: path.to_path_buf(),
        line: Some(line),
        start_col: col,
        end_col: col + len.max(1),
        severity,
        code: code.into(),
        message,
    };
    if let Some(err) = &fm.error {
        let (severity, message) = match (fm.parse, rule) {
            (Parse::Retried, true) => {
                let globs: Vec<&str> = fm.paths.iter().flatten().map(|g| g.glob.as_str()).collect();
                let read = if globs.is_empty() {
                    "no paths: the rule always loads".to_string()
                } else {
                    format!("paths {}", quote_list(&globs))
                };
                (
                    Severity::Warning,
                    format!(
                        "frontmatter is not valid YAML ({}); Claude Code quotes the values and parses again, and reads {read}. Quote the value (paths: \"...\") so the file says what Claude Code does",
                        err.message
                    ),
                )
            }
            (Parse::Retried, false) => (
                Severity::Warning,
                format!(
                    "frontmatter is not valid YAML ({}); Claude Code quotes the values and parses again. Quote the value so the file is valid YAML",
                    err.message
                ),
            ),
            (_, true) => (
                Severity::Error,
                format!(
                    "frontmatter is not valid YAML ({}), even after Claude Code quotes the values: the rule has no paths and loads in every session. Fix the YAML (quote globs, e.g. paths: \"**/*.ts\"; list items as - \"**/*.ts\")",
                    err.message
                ),
            ),
            (_, false) => (
                Severity::Error,
                format!(
                    "frontmatter is not valid YAML ({}); Claude Code ignores its fields",
                    err.message
                ),
            ),
        };
        out.push(at(err.line, err.col, 1, severity, "frontmatter", message));
    }
    if let Some(e) = &fm.not_fields {
        out.push(at(
            e.line,
            e.col,
            3,
            Severity::Warning,
            "frontmatter",
            e.message.clone(),
        ));
    }
    if !rule {
        return out;
    }
    if let Some(p) = &fm.paths_problem {
        out.push(at(
            p.line,
            p.col,
            5,
            Severity::Warning,
            "paths-not-globs",
            p.message.clone(),
        ));
    }
    if let Some(o) = &fm.paths_overflow {
        out.push(at(
            o.line,
            o.col,
            1,
            Severity::Warning,
            "cap-globs",
            format!(
                "paths has {} globs; claude-context matches the first {} and not the {} from here on (a cap against runaway rules; Claude Code matches them all, so this rule may attach for files the preview does not show)",
                thousands(o.total as u64),
                thousands(MAX_PATTERNS as u64),
                thousands((o.total - MAX_PATTERNS) as u64)
            ),
        ));
    }
    // The patterns the globs expand to, at most MAX_PATTERNS for the whole rule (as matched).
    let mut left = MAX_PATTERNS;
    for g in fm.paths.iter().flatten() {
        let mut one = |severity, code: &str, message: String| {
            out.push(at(g.line, g.col, g.glob.len(), severity, code, message));
        };
        if left == 0 {
            break;
        }
        if g.glob.len() > MAX_GLOB_LEN {
            left -= 1;
            one(
                Severity::Warning,
                "cap-glob-length",
                format!(
                    "this glob is {} characters long; claude-context matches globs of up to {} (a cap against runaway rules; Claude Code would match it), so it never matches here: {}",
                    thousands(g.glob.chars().count() as u64),
                    thousands(MAX_GLOB_LEN as u64),
                    quoted(&g.glob)
                ),
            );
            continue;
        }
        if fm.parse == Parse::Retried
            && let Some(hash) = g.glob.find(" #")
        {
            one(
                Severity::Warning,
                "glob-comment",
                format!(
                    "the comment `{}` became part of the glob {}, which then matches nothing: the frontmatter is not valid YAML, so Claude Code quoted the whole value. Move the comment to its own line, or make the YAML valid",
                    super::message::cut(&g.glob[hash + 1..]),
                    quoted(&g.glob)
                ),
            );
            continue;
        }
        let (patterns, cut) = super::globs::expand_braces_capped(&g.glob, left);
        left -= patterns.len();
        if cut {
            one(
                Severity::Warning,
                "cap-globs",
                format!(
                    "the braces of {} expand to more patterns than claude-context matches for one rule ({}); the others are not matched (a cap against runaway rules; Claude Code matches them all)",
                    quoted(&g.glob),
                    thousands(MAX_PATTERNS as u64)
                ),
            );
        }
        for pattern in patterns {
            if pattern.starts_with("./") {
                one(
                    Severity::Warning,
                    "glob-dot-slash",
                    format!(
                        "{} never matches: Claude Code matches paths written without a leading `./`. Write {}",
                        quoted(&g.glob),
                        quoted(&g.glob.replacen("./", "", 1))
                    ),
                );
                break;
            }
            let normalised = pattern.strip_suffix("/**").unwrap_or(&pattern);
            if normalised.is_empty() {
                continue;
            }
            if let Err(msg) = super::globs::check(normalised) {
                one(
                    Severity::Error,
                    "invalid-glob",
                    format!(
                        "invalid glob {}: {msg}; it matches nothing",
                        quoted(&g.glob)
                    ),
                );
                break;
            }
            if let Some(why) = super::globs::never_matches(normalised) {
                one(
                    Severity::Warning,
                    "glob-never-matches",
                    format!("{} never matches: {why}", quoted(&g.glob)),
                );
                break;
            }
        }
    }
    out
}

/// What a lint of one file needs to know about the session it would be loaded in.
#[derive(Clone, Debug, Default)]
pub struct LintOptions {
    /// The working directory of the session (resolved to its real path when linting).
    pub cwd: PathBuf,
    /// The git work tree holding cwd: the key of the external-includes approval.
    pub git_root: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` (replaces `~/.claude`: user files, `.claude.json`).
    pub config_dir: Option<PathBuf>,
}

/// Every finding about one instruction file, as `check` and the editor's diagnostics show them.
/// Its role (rule, CLAUDE.local.md, memory...) is told by its name and place.
pub fn lint_file(fs: &dyn Fs, path: &Path, opts: &LintOptions) -> Vec<Finding> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_rules = (path.components().any(|c| c.as_os_str() == "rules")
        && path
            .ancestors()
            .any(|a| a.file_name().is_some_and(|n| n == ".claude")))
        || opts
            .config_dir
            .as_ref()
            .is_some_and(|d| path.starts_with(d.join("rules")));
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
    let home_claude = opts
        .config_dir
        .clone()
        .or_else(|| opts.home.as_ref().map(|h| h.join(".claude")));
    let scope = match (&home_claude, kind) {
        (_, FileKind::Memory) => Scope::Memory,
        (Some(hc), _) if path.starts_with(hc) => Scope::User,
        (_, FileKind::LocalMd) => Scope::Local,
        _ => Scope::Project,
    };
    lint_as(fs, path, kind, scope, opts)
}

/// [`lint_file`] for a file whose role is known (a walk's record): a rule reached through a link
/// is shown under its real path, outside any `rules` folder, and is still linted as a rule; a
/// user rule keeps the user scope (its includes may point anywhere).
pub fn lint_as(
    fs: &dyn Fs,
    path: &Path,
    kind: FileKind,
    scope: Scope,
    opts: &LintOptions,
) -> Vec<Finding> {
    let cwd = fs
        .canonicalize(&opts.cwd)
        .unwrap_or_else(|_| opts.cwd.clone());
    let key = opts.git_root.clone().unwrap_or_else(|| cwd.clone());
    let mut project = Project::new(cwd.clone(), key, opts.home.clone(), Arc::default());
    if let Some(dir) = &opts.config_dir {
        project.global_config = Some(dir.join(".claude.json"));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut findings = Vec::new();
    let mut budget = Budget::default();
    // A file of a folder below cwd is attached on a touch: its includes never leave cwd.
    let owner = match kind {
        FileKind::Rule => super::globs::rules_base(path),
        _ => path.parent().map(|d| {
            if d.ends_with(".claude") {
                d.parent().unwrap_or(d).to_path_buf()
            } else {
                d.to_path_buf()
            }
        }),
    };
    let nested = scope != Scope::User
        && kind != FileKind::AgentsMd
        && owner.is_some_and(|o| o != cwd && o.starts_with(&cwd));
    let mut loader = Loader {
        fs,
        project: &project,
        seen: &mut seen,
        out: &mut out,
        findings: &mut findings,
        budget: &mut budget,
        nested,
    };
    let Some(top) = loader.read_top(path, None, scope, kind) else {
        return findings;
    };
    if kind == FileKind::Memory {
        let content = crate::js::normalize_newlines(&top.processed.content);
        if let (_, Some(cut)) = crate::memory::cap(&content) {
            findings.push(memory_finding(path, &cut));
        }
        return findings;
    }
    let outside = scope != Scope::User && top.real != path && !top.real.starts_with(&cwd);
    if outside && kind == FileKind::Rule {
        // Claude Code skips it (see the walk): nothing of it loads.
        let entry = super::walk::RuleEntry {
            path: path.to_path_buf(),
            real: top.real.clone(),
            linked: true,
        };
        let nested = super::globs::rules_base(path)
            .is_some_and(|base| base != cwd && base.starts_with(&cwd));
        let conditional = super::walk::conditional_patterns(&top).is_some();
        let hint = project.approval_hint();
        let why = match (nested, conditional) {
            (true, _) => super::walk::RulesLinkOut::Nested,
            (false, true) => super::walk::RulesLinkOut::WalkConditional,
            (false, false) => super::walk::RulesLinkOut::Walk(&hint),
        };
        if nested || conditional || !project.approved(fs) {
            findings.push(super::walk::rules_link_finding(&entry, &cwd, why));
            return findings;
        }
    }
    // An instruction file linking out of the project (git work tree, or cwd): as the walk says.
    let project_root = opts.git_root.clone().unwrap_or_else(|| cwd.clone());
    let link_out = kind != FileKind::Rule
        && scope != Scope::User
        && top.real != path
        && path.starts_with(&project_root)
        && !top.real.starts_with(&project_root);
    loader.seen.insert(top.real.clone());
    loader.follow_top(&top, scope, Status::Loaded);
    if link_out {
        findings.push(instruction_link_finding(path, &top.real, &project_root));
    }
    if scope != Scope::User && !project.approved(fs) {
        findings.extend(subdirectory_hints(fs, path, &top, &project, opts));
    }
    findings
}

/// An instruction file that is a link to outside the working directory: Claude Code loads it
/// anyway (links to instruction files are not checked), which the person sharing it should know.
pub(crate) fn instruction_link_finding(path: &Path, real: &Path, cwd: &Path) -> Finding {
    Finding::whole_file(
        path,
        Severity::Warning,
        "instruction-link-outside",
        format!(
            "{} is a symbolic link to {}, outside {}: Claude Code loads it anyway and resolves its includes from {}. Copy the file into the project if it belongs to it, or make sure this is what you want to share",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            real.display(),
            cwd.display(),
            real.parent().unwrap_or(real).display()
        ),
    )
}

/// Includes of a file in the working directory itself (the root `CLAUDE.md` of a repository,
/// say) load now, but a session started in a subdirectory drops every include that is not below
/// that subdirectory. Said once per include, as a hint (shown faded in an editor).
fn subdirectory_hints(
    fs: &dyn Fs,
    path: &Path,
    top: &Top,
    project: &Project,
    opts: &LintOptions,
) -> Vec<Finding> {
    let cwd = &project.cwd;
    let dir = top.real.parent().unwrap_or(Path::new("/"));
    let owner = if dir.ends_with(".claude") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    if owner != cwd || opts.git_root.as_deref() != Some(cwd.as_path()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in &top.processed.includes {
        if r.path.starts_with("~/") || includes::extension_is_read(&r.path).is_err() {
            continue;
        }
        let target = normalize(dir, Path::new(&r.path));
        let Some(rel) = target
            .strip_prefix(cwd)
            .ok()
            .filter(|r| r.components().count() >= 1)
        else {
            continue;
        };
        if !fs.exists(&target) {
            continue;
        }
        let inside = rel
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| format!(" (or in {})", p.display()))
            .unwrap_or_default();
        out.push(Finding {
            path: path.to_path_buf(),
            line: Some(r.line),
            start_col: r.cols.start,
            end_col: r.cols.end,
            severity: Severity::Hint,
            code: "include-subdirectory-sessions".into(),
            message: format!(
                "loaded when Claude Code starts here{inside}, dropped when it starts in another subdirectory: includes must lie below the directory it starts in. To keep it everywhere, {}",
                project.approval_hint()
            ),
        });
    }
    out
}

/// The warning on the first line of MEMORY.md that the model will not see.
pub(crate) fn memory_finding(path: &Path, cut: &crate::memory::Cut) -> Finding {
    use crate::memory::{MAX_LINES, MAX_UNITS, kb};
    let over = match (cut.over_lines, cut.over_units) {
        (true, true) => format!(
            "{} lines and {} KB (limits {MAX_LINES} lines, {} KB)",
            cut.total_lines,
            kb(cut.units),
            kb(MAX_UNITS)
        ),
        (true, false) => format!("{} lines (limit {MAX_LINES})", cut.total_lines),
        _ => format!("{} KB (limit {} KB)", kb(cut.units), kb(MAX_UNITS)),
    };
    Finding {
        path: path.to_path_buf(),
        line: Some(cut.first_cut.0 - 1),
        start_col: 0,
        end_col: cut.first_cut.1.len(),
        severity: Severity::Warning,
        code: "memory-cap".into(),
        message: format!(
            "{over}: lines {}-{} are not loaded; keep index entries to one line and move detail into topic files",
            cut.first_cut.0, cut.total_lines
        ),
    }
}

/// A file over [`LARGE_FILE_CHARS`]: what it costs is what is sent (its content after the
/// frontmatter and the comments are removed), and when that is small, what made it large.
fn large_file_finding(path: &Path, p: &Processed) -> Option<Finding> {
    use super::message::thousands;
    if p.chars <= LARGE_FILE_CHARS {
        return None;
    }
    let sent = p.content.chars().count();
    let tokens = thousands(estimate_tokens(&p.content) as u64);
    let message = if sent > LARGE_FILE_CHARS {
        format!(
            "large instruction file: {} characters, ≈ {tokens} tokens sent with every request",
            thousands(sent as u64)
        )
    } else {
        let comments = p.chars.saturating_sub(sent + p.frontmatter_chars);
        let mut parts = Vec::new();
        if p.frontmatter_chars > 0 {
            parts.push(format!(
                "{} in its frontmatter",
                thousands(p.frontmatter_chars as u64)
            ));
        }
        if comments > 0 {
            parts.push(format!("{} in HTML comments", thousands(comments as u64)));
        }
        format!(
            "large file, little of it sent: {} characters, {} (not sent, but read and parsed in every session); ≈ {tokens} tokens sent with every request",
            thousands(p.chars as u64),
            parts.join(" and ")
        )
    };
    Some(Finding::whole_file(
        path.to_path_buf(),
        Severity::Information,
        "large-file",
        message,
    ))
}

/// The includes of a file past [`includes::MAX_PER_FILE`], on the first one not followed.
fn includes_overflow_finding(path: &Path, o: &includes::Overflow) -> Finding {
    use super::message::thousands;
    Finding {
        path: path.to_path_buf(),
        line: Some(o.first.line),
        start_col: o.first.cols.start,
        end_col: o.first.cols.end,
        severity: Severity::Warning,
        code: "cap-includes".into(),
        message: format!(
            "this file has {} @includes; claude-context follows the first {} and not the {} from here on (a cap against runaway files; Claude Code follows them all, so the preview may show less than it loads). Split the file, or include fewer files",
            thousands(o.total as u64),
            thousands(includes::MAX_PER_FILE as u64),
            thousands((o.total - includes::MAX_PER_FILE) as u64)
        ),
    }
}

/// The first include not followed because the walk has followed [`MAX_INCLUDES`] already.
fn session_includes_finding(from: &Path, r: &IncludeRef, left: usize) -> Finding {
    use super::message::thousands;
    let rest = match left {
        1 => String::new(),
        n => format!(" and the {} after it in this file", thousands(n as u64 - 1)),
    };
    Finding {
        path: from.to_path_buf(),
        line: Some(r.line),
        start_col: r.cols.start,
        end_col: r.cols.end,
        severity: Severity::Warning,
        code: "cap-session-includes".into(),
        message: format!(
            "not followed: the instruction files before it already pulled in {} includes, the most claude-context follows for one session (a cap against runaway trees; Claude Code has none): this include{rest} are not loaded",
            thousands(MAX_INCLUDES as u64)
        ),
    }
}
