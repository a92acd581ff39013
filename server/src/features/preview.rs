//! What the model will see: blocks, files with status and reason, attachments, totals.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::prompt::{self, PromptInput};
use crate::context::{self, Attacher, Context, FileRecord, Finding, Status, estimate_tokens};
use crate::fs::Fs;

/// Default context window of current Claude models.
pub const DEFAULT_WINDOW: u64 = 200_000;
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BlockKind {
    /// The system prompt's static prefix: the same for every user and session.
    SystemStatic,
    /// The system prompt's dynamic tail: session guidance, memory, environment and date.
    SystemDynamic,
    /// The CLAUDE.md / rules / MEMORY.md block of the first user message.
    Instructions,
    /// The git snapshot block of the first user message.
    GitStatus,
}

/// Which prompt-cache segment a block belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CacheSegment {
    /// Identical for every user and session.
    Static,
    /// Fixed for one session.
    Session,
    /// Changes every turn.
    Turn,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    pub kind: BlockKind,
    pub text: String,
    pub tokens: u64,
    pub segment: CacheSegment,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// The exact attachment text.
    pub text: String,
    /// The touched file that caused it.
    #[serde(flatten, with = "crate::fs::json_path::trigger")]
    #[schemars(with = "crate::fs::json_path::trigger::Schema")]
    pub trigger: PathBuf,
    pub tokens: u64,
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
    /// `loaded`, `attached`, `inactive`, `skipped`, `empty`.
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
    pub tokens: u64,
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
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Everything in `blocks` and `attachments`.
    pub tokens: u64,
    /// Both system prompt blocks.
    pub system: u64,
    pub instructions: u64,
    pub git: u64,
    pub attachments: u64,
    pub window: u64,
    pub auto_compact_threshold: u64,
    /// `tokens / window * 100`, one decimal.
    pub percent: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitSummary {
    pub branch: String,
    /// Lines of `git status --short`.
    pub changed: u64,
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
    pub attachments: Vec<AttachmentView>,
    pub totals: Totals,
    pub pending: Vec<PendingEdit>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSummary>,
}

/// The git part of a preview, made by whoever took the snapshot.
#[derive(Clone, Debug, Default)]
pub struct GitPart {
    pub block: String,
    pub summary: GitSummary,
}

/// Inputs of a preview besides the walk itself.
#[derive(Clone, Debug, Default)]
pub struct PreviewInput {
    /// Touched files, in order.
    pub touched: Vec<PathBuf>,
    pub git: Option<GitPart>,
    /// Inputs of the system prompt; `None` leaves the system blocks out.
    pub prompt: Option<PromptInput>,
    pub window: u64,
}

/// Touches the files in order and assembles the preview of a new session.
pub fn preview(fs: &dyn Fs, ctx: &Context, input: &PreviewInput) -> Preview {
    let mut attacher = Attacher::new(ctx);
    for f in &input.touched {
        attacher.touch(fs, ctx, f);
    }
    assemble(ctx, &attacher, input)
}

/// Builds the preview from a walk and a session's attachments.
pub fn assemble(ctx: &Context, attacher: &Attacher, input: &PreviewInput) -> Preview {
    let mut blocks = Vec::new();
    let mut system = 0;
    if let Some(input) = &input.prompt {
        let sp = prompt::system_prompt(input);
        for (kind, text, segment) in [
            (
                BlockKind::SystemStatic,
                sp.static_text(),
                CacheSegment::Static,
            ),
            (
                BlockKind::SystemDynamic,
                sp.dynamic_text(),
                CacheSegment::Session,
            ),
        ] {
            let tokens = estimate_tokens(&text) as u64;
            system += tokens;
            blocks.push(Block {
                kind,
                text,
                tokens,
                segment,
            });
        }
    }
    let mut instructions = 0;
    if let Some(text) = ctx.instructions_block() {
        instructions = estimate_tokens(&text) as u64;
        blocks.push(Block {
            kind: BlockKind::Instructions,
            tokens: instructions,
            text,
            segment: CacheSegment::Session,
        });
    }
    let mut git_tokens = 0;
    if let Some(git) = &input.git {
        git_tokens = estimate_tokens(&git.block) as u64;
        blocks.push(Block {
            kind: BlockKind::GitStatus,
            text: git.block.clone(),
            tokens: git_tokens,
            segment: CacheSegment::Session,
        });
    }
    let attachments: Vec<AttachmentView> = attacher
        .attachments
        .iter()
        .map(|a| {
            let text = a.text();
            AttachmentView {
                path: a.record.path.clone(),
                tokens: estimate_tokens(&text) as u64,
                text,
                trigger: a.trigger.clone(),
            }
        })
        .collect();
    let attachment_tokens: u64 = attachments.iter().map(|a| a.tokens).sum();

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
    let mut findings = ctx.findings.clone();
    findings.extend(attacher.findings.iter().cloned());

    let window = if input.window == 0 {
        DEFAULT_WINDOW
    } else {
        input.window
    };
    let tokens = system + instructions + git_tokens + attachment_tokens;
    Preview {
        cwd: ctx.cwd.clone(),
        blocks,
        files,
        attachments,
        totals: Totals {
            tokens,
            system,
            instructions,
            git: git_tokens,
            attachments: attachment_tokens,
            window,
            auto_compact_threshold: auto_compact_threshold(window),
            percent: (tokens as f64 * 1000.0 / window as f64).round() / 10.0,
        },
        pending: Vec::new(),
        findings,
        git: input.git.as_ref().map(|g| g.summary.clone()),
    }
}
