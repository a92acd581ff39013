//! What a session froze at its start: a view of [`crate::assembly`], never a copy of its logic.
//!
//! A new session assembles once (system prompt, instructions, git) and keeps the blocks: its
//! instructions, memory and git snapshot do not change under it (the prompt cache depends on
//! it); edits made since show as *pending* in its preview and reach a new session (or the
//! session after a full compaction).
//!
//! A resumed session already sent its first message, which holds the instructions and git
//! blocks it started with: those are taken from that message, and only the system prompt is
//! assembled again (its environment section carries today's date, its skills listing).
//!
//! The environment section's MCP parts (deferred tool names, notes, instructions) depend on
//! the servers as they stand at the session's first request (new or resumed), not at its start:
//! [`Snapshot::freeze`] assembles the system prompt once more with them, through the same
//! assembly, and from then on the session sends that system prompt.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::assembly::{self, Assembly, BlockKind, GitPart, GitSummary, HookParts, StartInput};
use crate::context::{Attacher, Context};
use crate::conversation::{Block, Message, Origin, Role};
use crate::host::Host;
use crate::llm::SystemBlock;

/// The frozen start of a session.
#[derive(Debug)]
pub struct Snapshot {
    /// The walk at the start (resume: the walk when resumed), for attachments.
    pub ctx: Arc<Context>,
    /// In request order: system static, system dynamic, instructions, git.
    pub assembly: Assembly,
    /// The branch at the start; empty outside git.
    pub git_branch: String,
    /// The session's first message is already in its history (resumed).
    pub resumed: bool,
    /// The skills the system prompt lists (the `Skill` tool's), when the driver gathered them.
    pub skills: Option<crate::skills::Skills>,
    /// The skills and MCP servers the session started with (the environment section's parts).
    pub extensions: Option<crate::extensions::Extensions>,
    /// What assembling the system prompt again needs (at the first request).
    again: Again,
    /// The environment parts (MCP servers', permission settings') the first request fixed, once
    /// it did.
    frozen: OnceLock<super::events::Environment>,
    /// What hooks put into the environment section (sessions in that layout: `session::hooks`).
    hooks: Mutex<HookParts>,
    /// The system blocks as the session sends them, once frozen: assembled again when the
    /// hooks' parts change (a compaction).
    system: Mutex<Option<Arc<Vec<assembly::Block>>>>,
}

/// The assembly's inputs, kept to assemble the system prompt again with the MCP parts.
#[derive(Clone, Debug)]
struct Again {
    host: Host,
    git: Option<GitPart>,
    model: String,
}

impl Snapshot {
    /// A new session's start.
    pub fn start(host: &Host, ctx: Arc<Context>, git: Option<&GitPart>, model: &str) -> Snapshot {
        Snapshot::start_with(host, ctx, git, model, None)
    }

    /// A new session's start whose environment section carries `ext`'s parts (the skills
    /// listing; the MCP parts come at the first request, [`Snapshot::freeze`]).
    pub fn start_with(
        host: &Host,
        ctx: Arc<Context>,
        git: Option<&GitPart>,
        model: &str,
        ext: Option<&crate::extensions::Extensions>,
    ) -> Snapshot {
        let input = StartInput {
            git,
            model,
            extensions: ext,
            ..StartInput::default()
        };
        let assembly = assembly::assemble(host, &ctx, &Attacher::new(&ctx), &input);
        Snapshot {
            git_branch: git.map(|g| g.summary.branch.clone()).unwrap_or_default(),
            ctx,
            assembly,
            resumed: false,
            skills: ext.map(|e| e.skills.skills.clone()),
            extensions: ext.cloned(),
            again: Again {
                host: host.clone(),
                git: git.cloned(),
                model: model.to_string(),
            },
            frozen: OnceLock::new(),
            hooks: Mutex::default(),
            system: Mutex::default(),
        }
    }

    /// A resumed session: the system prompt assembled now, the instructions and git blocks as
    /// the history's first user message carries them.
    pub fn resumed(host: &Host, ctx: Arc<Context>, history: &[Message], model: &str) -> Snapshot {
        Snapshot::resumed_with(host, ctx, history, model, None)
    }

    /// [`Snapshot::resumed`] whose environment section carries `ext`'s parts, as a new
    /// session's does.
    pub fn resumed_with(
        host: &Host,
        ctx: Arc<Context>,
        history: &[Message],
        model: &str,
        ext: Option<&crate::extensions::Extensions>,
    ) -> Snapshot {
        let frozen = FirstMessage::of(history);
        let git = frozen.git.as_ref().map(|text| GitPart {
            block: text.clone(),
            summary: GitSummary {
                branch: branch_of(text),
                changed: changed_of(text),
            },
        });
        let input = StartInput {
            git: git.as_ref(),
            model,
            extensions: ext,
            ..StartInput::default()
        };
        let mut assembly = assembly::assemble(host, &ctx, &Attacher::new(&ctx), &input);
        assembly
            .blocks
            .retain(|b| b.kind.placement() == assembly::Placement::System);
        for (kind, text) in [
            (BlockKind::Instructions, frozen.instructions),
            (BlockKind::GitStatus, frozen.git),
        ] {
            if let Some(text) = text {
                assembly.blocks.push(assembly::Block {
                    kind,
                    tokens: crate::context::estimate_tokens(&text) as u64,
                    text,
                    segment: assembly::CacheSegment::Session,
                });
            }
        }
        Snapshot {
            git_branch: git
                .as_ref()
                .map(|g| g.summary.branch.clone())
                .unwrap_or_default(),
            ctx,
            assembly,
            resumed: true,
            skills: ext.map(|e| e.skills.skills.clone()),
            extensions: ext.cloned(),
            again: Again {
                host: host.clone(),
                git,
                model: model.to_string(),
            },
            frozen: OnceLock::new(),
            hooks: Mutex::default(),
            system: Mutex::default(),
        }
    }

    /// Fixes the system prompt the session sends from its first request on: as assembled at the
    /// start, with `env`'s parts in its environment section (the MCP servers' and the permission
    /// settings': assembled again, the instructions and git blocks untouched), and the hooks'
    /// parts set so far. Only the first call counts.
    pub fn freeze(&self, env: super::events::Environment) {
        if self.frozen.set(env).is_err() {
            return;
        }
        self.reassemble();
    }

    /// What hooks put into the environment section from now on (and, once frozen, the system
    /// prompt assembled again with them).
    pub fn set_hook_parts(&self, parts: HookParts) {
        *lock(&self.hooks) = parts;
        if self.is_frozen() {
            self.reassemble();
        }
    }

    /// What hooks put into the environment section.
    pub fn hook_parts(&self) -> HookParts {
        lock(&self.hooks).clone()
    }

    fn reassemble(&self) {
        let env = self.frozen.get().cloned().unwrap_or_default();
        let hooks = lock(&self.hooks).clone();
        let mcp = env
            .mcp
            .filter(|p| *p != crate::mcp::Parts::default() && self.extensions.is_some());
        let perms = env
            .permissions
            .filter(|p| *p != crate::permissions::EnvironmentParts::default());
        let no_agents =
            env.no_agents && self.extensions.as_ref().is_some_and(|e| e.agents.is_some());
        let system: Vec<assembly::Block> =
            if mcp.is_some() || perms.is_some() || !hooks.is_empty() || no_agents {
                let mut ext = match (mcp, &self.extensions) {
                    (Some(parts), Some(ext)) => {
                        let mut ext = ext.clone();
                        ext.parts = parts;
                        Some(ext)
                    }
                    (_, ext) => ext.clone(),
                };
                if no_agents && let Some(e) = &mut ext {
                    e.agents = None;
                }
                let input = StartInput {
                    git: self.again.git.as_ref(),
                    model: &self.again.model,
                    extensions: ext.as_ref(),
                    hooks: Some(&hooks),
                    permissions: perms.as_ref(),
                    ..StartInput::default()
                };
                assembly::assemble(
                    &self.again.host,
                    &self.ctx,
                    &Attacher::new(&self.ctx),
                    &input,
                )
                .blocks
                .into_iter()
                .filter(|b| b.kind.placement() == assembly::Placement::System)
                .collect()
            } else {
                self.system_blocks().cloned().collect()
            };
        *lock(&self.system) = Some(Arc::new(system));
    }

    /// The model the session was started for (its environment section's).
    pub fn model(&self) -> &str {
        &self.again.model
    }

    /// Has the first request fixed the system prompt?
    pub fn is_frozen(&self) -> bool {
        self.frozen.get().is_some()
    }

    fn system_blocks(&self) -> impl Iterator<Item = &assembly::Block> {
        self.assembly
            .blocks
            .iter()
            .filter(|b| b.kind.placement() == assembly::Placement::System)
    }

    fn sent_system(&self) -> Option<Arc<Vec<assembly::Block>>> {
        lock(&self.system).clone()
    }

    /// The assembly as the session sends it: the system blocks of its first request once sent.
    pub fn current(&self) -> Assembly {
        let mut a = self.assembly.clone();
        if let Some(system) = self.sent_system() {
            a.blocks
                .retain(|b| b.kind.placement() != assembly::Placement::System);
            a.blocks.splice(0..0, system.iter().cloned());
        }
        a
    }

    /// The text of a block, if the session has it (the system blocks as the first request sent
    /// them, once it did).
    pub fn text(&self, kind: BlockKind) -> Option<String> {
        if kind.placement() == assembly::Placement::System
            && let Some(system) = self.sent_system()
        {
            return system
                .iter()
                .find(|b| b.kind == kind)
                .map(|b| b.text.clone());
        }
        self.assembly
            .blocks
            .iter()
            .find(|b| b.kind == kind)
            .map(|b| b.text.clone())
    }

    /// `system[0]` (static, cached) and `system[1]` (dynamic, cached).
    pub fn system(&self) -> Vec<SystemBlock> {
        [BlockKind::SystemStatic, BlockKind::SystemDynamic]
            .iter()
            .filter_map(|k| self.text(*k))
            .map(|text| SystemBlock { text, cache: true })
            .collect()
    }

    /// A subagent's environment section on `model`: `first` (its SubagentStart texts), the
    /// facts, the skills listing when `with_skills`, the date ([`assembly::subagent_environment`]).
    pub fn subagent_environment(&self, model: &str, first: &[String], with_skills: bool) -> String {
        let parts: Vec<String> = if with_skills {
            self.extensions
                .as_ref()
                .and_then(|e| e.skills_text())
                .map(str::to_string)
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        assembly::subagent_environment(
            &self.again.host,
            &self.ctx.cwd,
            self.again.git.is_some(),
            model,
            first,
            &parts,
        )
    }

    /// The agent types of the session (its start's), when it lists them (not once its first
    /// request found the `Agent` tool removed).
    pub fn agents(&self) -> Option<&crate::agents::Agents> {
        if self.frozen.get().is_some_and(|e| e.no_agents) {
            return None;
        }
        self.extensions.as_ref().and_then(|e| e.agents.as_ref())
    }

    /// The session's working directory (real path).
    pub fn cwd(&self) -> PathBuf {
        self.ctx.cwd.clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A history written by the reference CLI does not carry the instructions and git blocks (it
/// adds them to every request, and `--resume` adds them again): put what a new session would
/// send now at the start of its first user message, where ours carry them, unless it has them.
/// Returns whether it changed anything.
pub fn complete_first_message(
    host: &Host,
    ctx: &Context,
    git: Option<&GitPart>,
    model: &str,
    history: &mut [Message],
) -> bool {
    let have = FirstMessage::of(history);
    let Some(first) = history.iter_mut().find(|m| m.role == Role::User) else {
        return false;
    };
    let input = StartInput {
        git,
        model,
        without_system: true,
        ..StartInput::default()
    };
    let a = assembly::assemble(host, ctx, &Attacher::new(ctx), &input);
    let text = |kind: BlockKind| {
        a.blocks
            .iter()
            .find(|b| b.kind == kind)
            .map(|b| b.text.clone())
    };
    let mut add = Vec::new();
    if have.instructions.is_none()
        && let Some(t) = text(BlockKind::Instructions)
    {
        add.push(Block::injected(Origin::Instructions, t));
    }
    if have.git.is_none()
        && let Some(t) = text(BlockKind::GitStatus)
    {
        add.push(Block::injected(Origin::Git, t));
    }
    let changed = !add.is_empty();
    first.content.splice(0..0, add);
    changed
}

/// The instructions and git blocks of a history's first user message.
#[derive(Debug, Default)]
struct FirstMessage {
    instructions: Option<String>,
    git: Option<String>,
}

impl FirstMessage {
    fn of(history: &[Message]) -> FirstMessage {
        let mut out = FirstMessage::default();
        let Some(first) = history.iter().find(|m| m.role == Role::User) else {
            return out;
        };
        for b in &first.content {
            let Block::Text(t) = b else { continue };
            // Ours say what a block is; the reference CLI's are recognised by their text.
            let is_instructions = t.origin == Origin::Instructions
                || (t.origin != Origin::Git
                    && t.text.starts_with("<system-reminder>\n")
                    && t.text[18..].starts_with(crate::context::render::PREAMBLE));
            let is_git = t.origin == Origin::Git
                || (t.origin != Origin::Instructions
                    && t.text.starts_with("<system-reminder>\n")
                    && t.text.contains("\n# gitStatus\n"));
            if is_instructions && out.instructions.is_none() {
                out.instructions = Some(t.text.clone());
            } else if is_git && out.git.is_none() {
                out.git = Some(t.text.clone());
            }
        }
        out
    }
}

fn branch_of(git_block: &str) -> String {
    git_block
        .lines()
        .find_map(|l| l.strip_prefix("Current branch: "))
        .unwrap_or_default()
        .to_string()
}

fn changed_of(git_block: &str) -> u64 {
    let Some(start) = git_block.find("\nStatus:\n") else {
        return 0;
    };
    git_block[start + 9..]
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| *l != "(clean)" && !l.starts_with("... (truncated"))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use std::path::Path;

    #[test]
    fn a_resumed_session_keeps_the_blocks_its_first_message_carries() {
        let fs = MemFs::with_files([("/p/CLAUDE.md", "Now.\n")]);
        let host = Host::for_tests(Path::new("/h"));
        let opts = host.context_options(Path::new("/p"), &[], None).unwrap();
        let ctx = Arc::new(crate::context::build(&fs, &opts));
        let git = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status at the start of the conversation.\n\nCurrent branch: feat\n\nMain branch (you will usually use this for PRs): main\n\nStatus:\n M a.rs\n?? b.rs\n\nRecent commits:\nabc1234 x\n</system-reminder>";
        let first = Message::user_blocks(vec![
            Block::injected(
                Origin::Instructions,
                format!(
                    "<system-reminder>\n{}\n\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nThen.\n</system-reminder>",
                    crate::context::render::PREAMBLE
                ),
            ),
            Block::injected(Origin::Git, git),
            Block::text("hello"),
        ]);
        let s = Snapshot::resumed(&host, ctx, &[first], "claude-sonnet-4-5");
        assert!(s.resumed);
        assert!(s.text(BlockKind::Instructions).unwrap().contains("Then."));
        assert_eq!(s.text(BlockKind::GitStatus).as_deref(), Some(git));
        assert_eq!(s.git_branch, "feat");
        assert_eq!(s.assembly.git.as_ref().unwrap().changed, 2);
        assert_eq!(s.system().len(), 2);
        assert!(s.system().iter().all(|b| b.cache));
        assert!(s.system()[1].text.contains("Is a git repository: true"));
    }
}
