//! The one assembly of what the model sees at the start of a session.
//!
//! [`assemble`] turns a walk ([`Context`]), the files touched so far ([`Attacher`]), the git
//! snapshot ([`GitPart`]) and the host ([`Host`]: environment, OS, date) into the ordered
//! [`Block`]s of the first request, each with its prompt-cache segment and where it goes in the
//! request ([`Placement`]). Every consumer is a view of it:
//!
//! * `claude-context preview` and `context/preview` ([`crate::features::preview`]) add the files
//!   considered, the totals and the findings;
//! * the chat's request builder maps the blocks onto `system[0]` (static, cached), `system[1]`
//!   (dynamic, cached), the first user message (instructions, git, then the user's text) and the
//!   attachments after tool results (`../shared/spec/session.md` §2).
//!
//! **Architecture Invariant:** this module is core: it imports nothing from `features`, `cli`,
//! `lsp` or `session`, does no IO but through [`Fs`] (touching a file reads rules below it), and
//! never fails. Two calls with equal inputs give equal blocks.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::prompt::{self, PromptInput};
use crate::context::render::Environment;
use crate::context::{Attacher, Context, Finding, estimate_tokens};
use crate::fs::Fs;
use crate::git::GitSnapshot;
use crate::host::Host;

/// The model of the environment section until a session picks one (the reference CLI's default;
/// see [`crate::models`]).
pub use crate::models::DEFAULT_MODEL;

/// What a block is.
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

/// Where a block goes in a Messages API request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A `system` text block.
    System,
    /// A text block of the first user message, before the user's own text.
    FirstUserMessage,
}

impl BlockKind {
    pub fn placement(self) -> Placement {
        match self {
            BlockKind::SystemStatic | BlockKind::SystemDynamic => Placement::System,
            BlockKind::Instructions | BlockKind::GitStatus => Placement::FirstUserMessage,
        }
    }
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

/// One block of the first request, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    pub kind: BlockKind,
    pub text: String,
    pub tokens: u64,
    pub segment: CacheSegment,
}

/// A file attached because a touched file made it apply; sent after the tool result that
/// touched it (at session start: after the first user message's blocks).
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

/// The branch and size of the git snapshot, for people.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitSummary {
    pub branch: String,
    /// Lines of `git status --short`.
    pub changed: u64,
}

/// The git snapshot as the assembly uses it: the exact block and a summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitPart {
    pub block: String,
    pub summary: GitSummary,
}

impl GitPart {
    /// The one conversion from a snapshot.
    pub fn from_snapshot(snap: &GitSnapshot) -> GitPart {
        GitPart {
            block: crate::git::render_block(snap),
            summary: GitSummary {
                branch: snap.branch.clone(),
                changed: crate::git::count_changed(snap) as u64,
            },
        }
    }
}

/// What a session start depends on besides the walk and the touched files.
#[derive(Clone, Debug, Default)]
pub struct StartInput<'a> {
    pub git: Option<&'a GitPart>,
    /// The model id of the environment section.
    pub model: &'a str,
    /// Leave the system prompt out (a caller that only wants the user-message blocks).
    pub without_system: bool,
    /// A language the user asked answers in (setting).
    pub language: Option<&'a str>,
    /// Skills, MCP servers, plugins and the output style: their parts of the system prompt.
    pub extensions: Option<&'a crate::extensions::Extensions>,
    /// What hooks put into the environment section (a session that ran them, or a preview that
    /// ran them on request).
    pub hooks: Option<&'a HookParts>,
    /// The permission settings' parts of the environment section: the additional working
    /// directories and the mode's text (permissions-trust.md sections 7 and 8).
    pub permissions: Option<&'a crate::permissions::EnvironmentParts>,
}

pub use crate::context::prompt::HookParts;

/// What the model sees at a session's start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembly {
    /// In request order: system static, system dynamic, instructions, git.
    pub blocks: Vec<Block>,
    /// Attachments of the touched files, in touch order.
    pub attachments: Vec<AttachmentView>,
    pub git: Option<GitSummary>,
    /// The walk's and the attachments' findings.
    pub findings: Vec<Finding>,
}

impl Assembly {
    /// Tokens of the blocks of `kinds`.
    pub fn tokens(&self, kinds: &[BlockKind]) -> u64 {
        self.blocks
            .iter()
            .filter(|b| kinds.contains(&b.kind))
            .map(|b| b.tokens)
            .sum()
    }

    pub fn attachment_tokens(&self) -> u64 {
        self.attachments.iter().map(|a| a.tokens).sum()
    }
}

/// The environment section's facts for a session in `cwd`.
pub fn environment(host: &Host, cwd: &Path, is_git: bool, model: &str) -> Environment {
    Environment {
        cwd: cwd.display().to_string(),
        is_git,
        platform: host.platform.clone(),
        shell: host.shell.clone(),
        os_version: host.os_version.clone(),
        model_name: model_name(model),
        model_id: model.to_string(),
        date: host.today(),
        additional_dirs: Vec::new(),
    }
}

/// A subagent's environment section (`hooks-agents-styles.md` section 10): its SubagentStart
/// texts first, `# Environment…` up to the model line (its own model), `parts` (the skills
/// listing when it has the Skill tool; never the agent types), the date. The same rendering as
/// the session's own ([`crate::context::render::environment_full`]).
pub fn subagent_environment(
    host: &Host,
    cwd: &Path,
    is_git: bool,
    model: &str,
    first: &[String],
    parts: &[String],
) -> String {
    let env = environment(host, cwd, is_git, model);
    crate::context::render::environment_full(
        &env,
        &crate::context::render::EnvironmentParts {
            first,
            parts,
            after_model: &[],
            last: &[],
            compacted: false,
        },
    )
}

/// Touches `touched` in order, then assembles.
pub fn assemble_touching(
    fs: &dyn Fs,
    host: &Host,
    ctx: &Context,
    touched: &[PathBuf],
    input: &StartInput<'_>,
) -> (Attacher, Assembly) {
    let mut attacher = Attacher::new(ctx);
    for f in touched {
        attacher.touch(fs, ctx, f);
    }
    let a = assemble(host, ctx, &attacher, input);
    (attacher, a)
}

fn block(kind: BlockKind, text: String, segment: CacheSegment) -> Block {
    Block {
        kind,
        tokens: estimate_tokens(&text) as u64,
        text,
        segment,
    }
}

/// The blocks of a session's start from a walk and the attachments of its touched files.
pub fn assemble(
    host: &Host,
    ctx: &Context,
    attacher: &Attacher,
    input: &StartInput<'_>,
) -> Assembly {
    let mut blocks = Vec::with_capacity(4);
    if !input.without_system {
        let model = if input.model.is_empty() {
            DEFAULT_MODEL
        } else {
            input.model
        };
        let mut env = environment(host, &ctx.cwd, input.git.is_some(), model);
        let mut parts: Vec<String> = input
            .extensions
            .map(crate::extensions::Extensions::environment_parts)
            .unwrap_or_default();
        if let Some(p) = input.permissions {
            env.additional_dirs = p.additional_dirs.clone();
            // The mode's text comes after the skills listing, before the date (section 7).
            parts.extend(p.mode_text.clone());
        }
        let sp = prompt::system_prompt(&PromptInput {
            environment: env,
            memory_dir: ctx.memory_dir.clone(),
            language: input.language.map(str::to_string),
            output_style: input
                .extensions
                .and_then(|e| e.style.as_ref())
                .map(|s| style_prompt(s, model)),
            environment_parts: parts,
            hook_parts: input.hooks.cloned().unwrap_or_default(),
        });
        blocks.push(block(
            BlockKind::SystemStatic,
            sp.static_text(),
            CacheSegment::Static,
        ));
        blocks.push(block(
            BlockKind::SystemDynamic,
            sp.dynamic_text(),
            CacheSegment::Session,
        ));
    }
    if let Some(text) = ctx.instructions_block() {
        blocks.push(block(BlockKind::Instructions, text, CacheSegment::Session));
    }
    if let Some(git) = input.git {
        blocks.push(block(
            BlockKind::GitStatus,
            git.block.clone(),
            CacheSegment::Session,
        ));
    }
    let attachments = attacher
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
    let mut findings = ctx.findings.clone();
    findings.extend(attacher.findings.iter().cloned());
    Assembly {
        blocks,
        attachments,
        git: input.git.map(|g| g.summary.clone()),
        findings,
    }
}

/// What the active output style changes in the system prompt under `model`: a custom style
/// without `keep-coding-instructions: true` drops the coding instructions where the reference's
/// prompt has them (every model but those of the environment-message layout, measured on
/// sonnet; the built-ins keep them).
pub fn style_prompt(style: &crate::styles::Style, model: &str) -> prompt::StylePrompt {
    prompt::StylePrompt {
        part: style.part(),
        active: style.active_sentence(),
        drop_coding_instructions: !style.keep_coding_instructions
            && !crate::models::environment_message(model),
    }
}

/// `claude-sonnet-4-5` → `Sonnet 4.5`.
pub fn model_name(id: &str) -> String {
    let parts: Vec<&str> = id.trim_start_matches("claude-").split('-').collect();
    let mut family = String::new();
    let mut version = Vec::new();
    for p in parts {
        if p.chars().all(|c| c.is_ascii_digit()) {
            if p.len() < 8 {
                version.push(p);
            }
        } else if family.is_empty() {
            let mut c = p.chars();
            family = c
                .next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default();
        }
    }
    if version.is_empty() {
        family
    } else {
        format!("{family} {}", version.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn model_names() {
        assert_eq!(model_name("claude-sonnet-4-5"), "Sonnet 4.5");
        assert_eq!(model_name("claude-opus-4-1-20250805"), "Opus 4.1");
        assert_eq!(model_name("claude-haiku-4-5"), "Haiku 4.5");
    }

    #[test]
    fn blocks_in_request_order_with_segments() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", "Project.\n"),
            (
                "/p/.claude/rules/ts.md",
                "---\npaths: \"**/*.ts\"\n---\nTS.\n",
            ),
            ("/p/a.ts", "x"),
        ]);
        let host = Host::for_tests(Path::new("/h"));
        let opts = host.context_options(Path::new("/p"), &[], None).unwrap();
        let ctx = crate::context::build(&fs, &opts);
        let git = GitPart {
            block: "<git/>".into(),
            summary: GitSummary {
                branch: "main".into(),
                changed: 0,
            },
        };
        let input = StartInput {
            git: Some(&git),
            ..StartInput::default()
        };
        let (_, a) = assemble_touching(&fs, &host, &ctx, &["/p/a.ts".into()], &input);
        let kinds: Vec<_> = a.blocks.iter().map(|b| (b.kind, b.segment)).collect();
        assert_eq!(
            kinds,
            [
                (BlockKind::SystemStatic, CacheSegment::Static),
                (BlockKind::SystemDynamic, CacheSegment::Session),
                (BlockKind::Instructions, CacheSegment::Session),
                (BlockKind::GitStatus, CacheSegment::Session),
            ]
        );
        let dynamic = &a.blocks[1].text;
        assert!(
            dynamic.contains("Primary working directory: /p"),
            "{dynamic}"
        );
        assert!(dynamic.contains("Is a git repository: true"), "{dynamic}");
        assert!(dynamic.contains("Today's date is 2026-01-01."), "{dynamic}");
        assert!(dynamic.contains("Opus 5.5"), "default model: {dynamic}");
        assert_eq!(a.attachments.len(), 1);
        assert!(a.attachments[0].text.contains("TS."));
        assert_eq!(a.git.as_ref().unwrap().branch, "main");
        assert_eq!(
            BlockKind::GitStatus.placement(),
            Placement::FirstUserMessage
        );
        // The same inputs give the same blocks.
        let (_, b) = assemble_touching(&fs, &host, &ctx, &["/p/a.ts".into()], &input);
        assert_eq!(a, b);
    }
}
