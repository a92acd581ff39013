//! The context core: which instruction files the model sees, in what order, with what text.
//!
//! Pure: all IO goes through [`crate::fs::Fs`], and nothing here fails. A build returns what it
//! assembled plus every file it considered, with a status and a reason; a missing include, a bad
//! glob or an include that leaves the working directory is data ([`Finding`]), never an error
//! or a panic.
//!
//! Paths: cwd is resolved to its real path before anything else. Each file has the path it is
//! shown under ([`FileRecord::path`]) and its real path ([`FileRecord::real`], every link
//! resolved), which is its identity: a file appears at most once per session, whatever path
//! reaches it.
//!
//! Entry points: [`build`] (the walk at session start), [`Attacher::touch`] (files attached
//! lazily when a file is touched), [`render`] (the exact block texts).

mod attach;
pub mod claude_json;
pub mod comments;
pub mod frontmatter;
pub mod globs;
pub mod includes;
mod load;
pub mod message;
pub mod prompt;
pub mod render;
pub mod settings;
mod walk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use attach::{Attacher, Attachment};
pub use load::{LintOptions, ParseCache, lint_as, lint_file};
pub use walk::{MAX_DIR_DEPTH, Options, build, build_with};

/// Where an instruction file sits in the hierarchy; decides its description.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Managed,
    User,
    Project,
    Local,
    Memory,
}

impl Scope {
    /// The description in `Contents of <path> (<description>):`.
    pub fn description(self) -> &'static str {
        match self {
            Scope::Managed => "organization-managed policy instructions",
            Scope::User => "user's private global instructions for all projects",
            Scope::Project => "project instructions, checked into the codebase",
            Scope::Local => "user's private project instructions, not checked in",
            Scope::Memory => "user's auto-memory, persists across conversations",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Scope::Managed => "managed",
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Memory => "memory",
        }
    }
}

/// What role a file plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileKind {
    /// `CLAUDE.md` or `.claude/CLAUDE.md`.
    ClaudeMd,
    /// `CLAUDE.local.md`.
    LocalMd,
    /// A file under a `.claude/rules` directory.
    Rule,
    /// `AGENTS.md`, read only when no CLAUDE-family file exists.
    AgentsMd,
    /// The auto-memory index.
    Memory,
    /// The target of an `@include`.
    Include,
    /// The `claudeMd` string of `managed-settings.json` (shown as `<managed-settings>`).
    Settings,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// In the instructions block at session start.
    Loaded,
    /// Attached lazily because a touched file made it apply.
    Attached,
    /// A conditional rule that no touched file matches (yet), or a fallback not in use.
    Inactive,
    /// Not loaded; `reason` says why.
    Skipped,
    /// Nothing left after frontmatter and comments are stripped.
    Empty,
    /// Left out by a `claudeMdExcludes` pattern of a settings file (`excluded` says which).
    Excluded,
}

/// Where an `@include` was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncludeSite {
    pub path: PathBuf,
    /// 0-based line of the `@`.
    pub line: usize,
    /// 0-based byte columns of `@path` on that line.
    pub start_col: usize,
    pub end_col: usize,
    /// The path as written (escapes resolved, fragment cut).
    pub written: String,
}

/// Why a conditional rule applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobMatch {
    pub glob: String,
    pub file: PathBuf,
}

/// One file the build considered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    /// The path the model sees: where an instruction file was looked up, an include as written
    /// (joined to its includer's real folder), a rule's real path.
    pub path: PathBuf,
    /// Every link resolved: the file's identity (duplicates are found by it).
    #[serde(skip)]
    pub real: PathBuf,
    pub scope: Scope,
    pub kind: FileKind,
    pub status: Status,
    /// For skipped, inactive and attached files: why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_from: Option<IncludeSite>,
    /// Include depth: 0 for a top file.
    pub depth: usize,
    /// A conditional rule's globs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<GlobMatch>,
    /// For an excluded file: the pattern and the settings file that excluded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<settings::Exclusion>,
    /// The text the model sees (frontmatter and block comments stripped; memory caps applied).
    #[serde(skip)]
    pub content: String,
    /// Estimated tokens of `content`.
    pub tokens: usize,
}

impl FileRecord {
    fn new(path: PathBuf, scope: Scope, kind: FileKind, status: Status) -> FileRecord {
        FileRecord {
            real: path.clone(),
            path,
            scope,
            kind,
            status,
            reason: None,
            included_from: None,
            depth: 0,
            globs: Vec::new(),
            matched: None,
            excluded: None,
            content: String::new(),
            tokens: 0,
        }
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// Something worth telling the user about an instruction file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// 0-based line; `None` for the file as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 0-based byte columns on `line`.
    pub start_col: usize,
    pub end_col: usize,
    pub severity: Severity,
    /// Stable identifier, e.g. `include-not-found`.
    pub code: String,
    pub message: String,
}

impl Finding {
    /// A finding about a file (or directory) as a whole, with no position.
    pub fn whole_file(
        path: impl Into<PathBuf>,
        severity: Severity,
        code: &str,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            path: path.into(),
            line: None,
            start_col: 0,
            end_col: 0,
            severity,
            code: code.into(),
            message: message.into(),
        }
    }
}

/// The result of a walk.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The working directory as given (it plays the role of `PWD`): a touched path under it
    /// counts as the same path under `cwd`.
    pub pwd: PathBuf,
    /// The working directory's real path: the include boundary, the base of user and managed
    /// rules, and the directory touched files must lie under.
    pub cwd: PathBuf,
    /// The git work tree holding cwd, if any.
    pub git_root: Option<PathBuf>,
    /// Git root, or cwd outside git: the key of the external-includes approval.
    pub project_root: PathBuf,
    pub memory_dir: Option<PathBuf>,
    /// A repository's `autoMemoryDirectory` that waits for trust (its settings file), and the
    /// folder it gives once the folder is trusted, or why it would be refused even then.
    pub held_memory_dir: Option<(PathBuf, Result<PathBuf, String>)>,
    /// `CLAUDE_CODE_DISABLE_CLAUDE_MDS`, from the environment or a settings `env` block: nothing
    /// loads and nothing attaches.
    pub disabled: bool,
    /// Every file considered, in walk order.
    pub files: Vec<FileRecord>,
    pub findings: Vec<Finding>,
    rule_groups: Vec<walk::RuleGroup>,
    project: load::Project,
    /// Scans of directories below cwd, made on first touch and shared by every session.
    nested: NestedCache,
}

type NestedCache = Arc<Mutex<HashMap<PathBuf, Arc<attach::NestedDir>>>>;

impl Context {
    /// The entries of the instructions block, in order.
    pub fn entries(&self) -> impl Iterator<Item = &FileRecord> {
        self.files.iter().filter(|f| f.status == Status::Loaded)
    }

    /// The instructions block text, or `None` when there is nothing to show.
    pub fn instructions_block(&self) -> Option<String> {
        render::instructions_block(self.entries())
    }

    /// Forgets what was scanned in directories holding `changed` (a CLAUDE.md, a rule) or below
    /// it (a deleted or renamed directory), so the next touch reads them again. The walk itself
    /// is not redone: rebuild the context when a file of the walk changes.
    pub fn forget(&self, changed: &Path) {
        let changed = self.session_path(changed);
        if let Ok(mut cache) = self.nested.lock() {
            cache.retain(|dir, _| !changed.starts_with(dir) && !dir.starts_with(&changed));
        }
    }

    fn nested_dir(
        &self,
        dir: &Path,
        scan: impl FnOnce() -> attach::NestedDir,
    ) -> Arc<attach::NestedDir> {
        if let Some(hit) = self.nested.lock().ok().and_then(|c| c.get(dir).cloned()) {
            return hit;
        }
        // Scanned outside the lock: two sessions may race to scan the same directory, and the
        // second insert wins with an identical result.
        let scanned = Arc::new(scan());
        if let Ok(mut cache) = self.nested.lock() {
            cache.insert(dir.to_path_buf(), scanned.clone());
        }
        scanned
    }

    /// The directory a rule's `paths:` globs are relative to: the one holding the `.claude/`
    /// folder of the rules directory that lists it (even through a link), or cwd for user and
    /// managed rules.
    pub fn rule_base(&self, rule: &Path) -> PathBuf {
        if let Some((base, _)) = self
            .conditional_rules()
            .find(|(_, r)| r.path == rule || r.real == rule)
        {
            return base.to_path_buf();
        }
        let user_or_managed = self.files.iter().any(|f| {
            (f.path == rule || f.real == rule) && matches!(f.scope, Scope::User | Scope::Managed)
        });
        if user_or_managed {
            return self.cwd.clone();
        }
        globs::rules_base(rule).unwrap_or_else(|| self.cwd.clone())
    }

    /// `file` as the session sees it: absolute (relative paths are relative to cwd), and under
    /// the real cwd when it was written under the cwd as given.
    pub fn session_path(&self, file: &Path) -> PathBuf {
        let file = crate::fs::normalize(&self.cwd, file);
        if self.pwd != self.cwd
            && let Ok(rel) = file.strip_prefix(&self.pwd)
        {
            return self.cwd.join(rel);
        }
        file
    }

    /// `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`): Claude Code's global config
    /// (approvals, skill usage, the user's and local MCP servers). `None` without a home.
    pub fn global_config(&self) -> Option<&Path> {
        self.project.global_config.as_deref()
    }

    /// `~/.claude` (or `$CLAUDE_CONFIG_DIR`): the user's folder (skills, settings).
    pub fn user_dir(&self) -> Option<&Path> {
        self.project.user_dir.as_deref()
    }

    /// The home directory, when known.
    pub fn home(&self) -> Option<&Path> {
        self.project.home.as_deref()
    }

    /// `--plugin-dir` folders: plugins enabled for this session only (`crate::plugins`).
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.project.plugin_dirs
    }

    /// The settings files the walk read, and what they say about what is loaded.
    pub fn settings(&self) -> &settings::Settings {
        &self.project.settings
    }

    /// What excludes `path` (a file shown under that path) from this session, if anything: a
    /// `claudeMdExcludes` pattern. Managed files and MEMORY.md are never excluded.
    pub fn exclusion(&self, path: &Path) -> Option<settings::Exclusion> {
        if self
            .memory_dir
            .as_ref()
            .is_some_and(|m| path == m.join(crate::memory::INDEX_FILE))
        {
            return None;
        }
        self.project.exclusion(path, Scope::Project)
    }

    /// Conditional rules known at session start, with the directory their globs are relative to.
    pub fn conditional_rules(&self) -> impl Iterator<Item = (&std::path::Path, &FileRecord)> {
        self.rule_groups
            .iter()
            .flat_map(|g| g.rules.iter().map(move |r| (g.base.as_path(), &r.record)))
    }
}

/// `ceil(bytes / 4)`.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}
#[cfg(test)]
mod tests;
