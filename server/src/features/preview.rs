//! The preview: what the model will see ([`crate::assembly`]'s blocks and attachments), plus every
//! file considered with its status and reason, the totals against the window, and the findings.
//! `claude-context preview` prints it; `context/preview` returns it.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::assembly::Assembly;
pub use crate::assembly::{AttachmentView, Block, BlockKind, CacheSegment, GitPart, GitSummary};
use crate::context::settings::Exclusion;
use crate::context::{self, Attacher, Context, FileRecord, Finding, Status};

/// The context window of the default model ([`crate::models`]): 1,000,000 tokens.
pub const DEFAULT_WINDOW: u64 = crate::models::LARGE_WINDOW;
/// `min(max_output_tokens, 20_000)`.
pub const RESERVED_FOR_SUMMARY: u64 = 20_000;
/// Headroom below the effective window where auto-compaction starts.
pub const AUTO_COMPACT_MARGIN: u64 = 13_000;

/// `window - reserved - 13,000`: 167,000 for a 200k window.
pub fn auto_compact_threshold(window: u64) -> u64 {
    window
        .saturating_sub(RESERVED_FOR_SUMMARY)
        .saturating_sub(AUTO_COMPACT_MARGIN)
}

/// One file the build considered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// `managed`, `user`, `project`, `local`, `memory`.
    pub scope: String,
    pub description: String,
    /// `loaded`, `attached`, `inactive`, `skipped`, `empty`, `excluded`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where it was included from, as `path:line` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_from: Option<String>,
    pub depth: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_glob: Option<String>,
    /// For an `excluded` file: the `claudeMdExcludes` pattern and the settings file holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_by: Option<Exclusion>,
    pub tokens: u64,
}

/// A Claude Code settings file the walk read (it exists), and the keys of it that change what is
/// loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsFileView {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// `user`, `project`, `local`, `managed`.
    pub scope: String,
    /// `false` when the file is not valid JSON (or not an object): none of its keys apply.
    pub valid: bool,
    /// The keys read from it that change what is loaded (`claudeMdExcludes`,
    /// `autoMemoryEnabled`, `autoMemoryDirectory`, `claudeMd`, `env.<VARIABLE>`).
    pub keys: Vec<String>,
}

impl FileView {
    pub fn from_record(r: &FileRecord) -> FileView {
        FileView {
            path: r.path.clone(),
            scope: r.scope.label().to_string(),
            description: r.scope.description().to_string(),
            status: status_label(r.status).to_string(),
            reason: r.reason.clone(),
            included_from: r
                .included_from
                .as_ref()
                .map(|s| format!("{}:{}", s.path.display(), s.line + 1)),
            depth: r.depth as u64,
            globs: r.globs.clone(),
            matched_glob: r.matched.as_ref().map(|m| m.glob.clone()),
            excluded_by: r.excluded.clone(),
            tokens: r.tokens as u64,
        }
    }
}

pub fn status_label(s: Status) -> &'static str {
    match s {
        Status::Loaded => "loaded",
        Status::Attached => "attached",
        Status::Inactive => "inactive",
        Status::Skipped => "skipped",
        Status::Empty => "empty",
        Status::Excluded => "excluded",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// The whole request: the sum of the parts below.
    pub tokens: u64,
    /// Both system prompt blocks.
    pub system: u64,
    /// The tool definitions a chat request carries.
    #[serde(default)]
    pub tools: u64,
    pub instructions: u64,
    pub git: u64,
    pub attachments: u64,
    /// A session's messages so far, less the instructions and git blocks counted above (for
    /// a new session, 0).
    #[serde(default)]
    pub conversation: u64,
    pub window: u64,
    pub auto_compact_threshold: u64,
    /// `tokens / window * 100`, one decimal.
    pub percent: f64,
}

impl Totals {
    /// `tokens` and `percent` from the parts again.
    pub fn add_up(&mut self) {
        self.tokens = self.system
            + self.tools
            + self.instructions
            + self.git
            + self.attachments
            + self.conversation;
        self.percent = (self.tokens as f64 * 1000.0 / self.window.max(1) as f64).round() / 10.0;
    }

    /// The tool definitions a chat request carries count too.
    pub fn with_tools(mut self, tools: u64) -> Totals {
        self.tools = tools;
        self.add_up();
        self
    }
}

/// An instruction file whose text differs from what the running session has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingEdit {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    #[serde(flatten, with = "crate::fs::json_path::cwd")]
    #[schemars(with = "crate::fs::json_path::cwd::Schema")]
    pub cwd: PathBuf,
    pub blocks: Vec<Block>,
    pub files: Vec<FileView>,
    /// Claude Code's settings files that exist (user, project, local, managed), lowest
    /// precedence first.
    #[serde(default)]
    pub settings: Vec<SettingsFileView>,
    pub attachments: Vec<AttachmentView>,
    pub totals: Totals,
    pub pending: Vec<PendingEdit>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSummary>,
}

/// Builds the preview (a view of the session start's [`Assembly`]) from a walk and a session's
/// attachments.
pub fn from_assembly(ctx: &Context, attacher: &Attacher, a: Assembly, window: u64) -> Preview {
    // Files: the walk's records, with conditional rules that got attached shown as attached,
    // then what attaching added (nested files, their includes).
    let attached: std::collections::HashMap<&Path, &context::Attachment> = attacher
        .attachments
        .iter()
        .map(|a| (a.record.path.as_path(), a))
        .collect();
    let mut files: Vec<FileView> = Vec::new();
    let mut shown = std::collections::HashSet::new();
    for r in &ctx.files {
        match attached.get(r.path.as_path()) {
            Some(a) if r.status == Status::Inactive => {
                files.push(FileView::from_record(&a.record));
                shown.insert(a.record.path.clone());
            }
            _ => files.push(FileView::from_record(r)),
        }
    }
    for r in &attacher.records {
        if r.status == Status::Attached && shown.contains(&r.path) {
            continue;
        }
        files.push(FileView::from_record(r));
    }
    let window = if window == 0 { DEFAULT_WINDOW } else { window };
    let system = a.tokens(&[BlockKind::SystemStatic, BlockKind::SystemDynamic]);
    let instructions = a.tokens(&[BlockKind::Instructions]);
    let git_tokens = a.tokens(&[BlockKind::GitStatus]);
    let attachment_tokens = a.attachment_tokens();
    let tokens = system + instructions + git_tokens + attachment_tokens;
    let settings = ctx
        .settings()
        .files
        .iter()
        .map(|f| SettingsFileView {
            path: f.path.clone(),
            scope: f.scope.label().to_string(),
            valid: f.valid,
            keys: f.keys.clone(),
        })
        .collect();
    Preview {
        cwd: ctx.cwd.clone(),
        blocks: a.blocks,
        files,
        settings,
        attachments: a.attachments,
        totals: Totals {
            tokens,
            system,
            tools: 0,
            instructions,
            git: git_tokens,
            attachments: attachment_tokens,
            conversation: 0,
            window,
            auto_compact_threshold: auto_compact_threshold(window),
            percent: (tokens as f64 * 1000.0 / window as f64).round() / 10.0,
        },
        pending: Vec::new(),
        findings: a.findings,
        git: a.git,
    }
}
