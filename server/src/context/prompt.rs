//! The system prompt: an ordered list of sections, static ones first, then a boundary, then the
//! dynamic ones.
//!
//! Nothing that varies by user, session or setting sits before the boundary: each such bit would
//! double the number of distinct cached prefixes. Dynamic sections are computed once per session;
//! a section marked [`Caching::Uncached`] is recomputed every turn and says why.
//! The texts are ours, written for an assistant hosted in an editor; only the environment block's
//! format is fixed (see `render::environment`).

use std::path::Path;

use super::render::{self, Environment};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    /// Identical for every user and session: the cacheable prefix.
    Static,
    /// Computed once per session, cached with it.
    Session,
    /// Recomputed every turn; breaks the per-turn cache, so it must say why.
    Uncached { reason: &'static str },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: &'static str,
    pub text: String,
    pub caching: Caching,
}

/// Inputs of the dynamic sections.
#[derive(Clone, Debug, Default)]
pub struct PromptInput {
    pub environment: Environment,
    /// The auto-memory directory, when auto-memory is on.
    pub memory_dir: Option<std::path::PathBuf>,
    /// A language the user asked answers in (setting), e.g. `French`.
    pub language: Option<String>,
    /// The active output style (`crate::styles`); `None`: the default, which changes nothing.
    pub output_style: Option<StylePrompt>,
    /// What skills and MCP servers add to the environment section, in order (between the model
    /// line and the date).
    pub environment_parts: Vec<String>,
    /// What hooks add to the environment section (the SessionStart and first UserPromptSubmit
    /// texts), and whether it is the section as rebuilt after a compaction.
    pub hook_parts: HookParts,
}

/// What an output style changes in the system prompt (`hooks-agents-styles.md` section 11).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StylePrompt {
    /// `# Output Style: <name>\n<body>`: right after the model line.
    pub part: String,
    /// `<name> output style is active. …`: last before the date.
    pub active: String,
    /// Leave out the coding instructions ([`HOW_TO_WORK`]): a custom style without
    /// `keep-coding-instructions: true`, under a model whose reference prompt has that section.
    pub drop_coding_instructions: bool,
}

/// The identity's second line while a style is active (the reference's, measured).
pub const STYLE_LINE: &str = "You are an interactive agent that helps users according to your \"Output Style\", which describes how you should respond to user queries.";

/// What hooks put into the environment section (Claude Code's environment message,
/// `hooks-agents-styles.md` sections 1 and 6), kept by a session that uses that layout.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookParts {
    /// SessionStart texts: first in the section (`startup`), or right after the model line
    /// once `compacted` (`compact`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_start: Vec<String>,
    /// The UserPromptSubmit texts of the prompt the conversation starts with: last before the
    /// date.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_prompt_submit: Vec<String>,
    /// The section as rebuilt after a compaction: the extensions' parts first, then the facts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compacted: bool,
}

impl HookParts {
    pub fn is_empty(&self) -> bool {
        *self == HookParts::default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPrompt {
    pub sections: Vec<Section>,
}

impl SystemPrompt {
    /// The static prefix: one block, the same for everyone.
    pub fn static_text(&self) -> String {
        join(
            self.sections
                .iter()
                .filter(|s| s.caching == Caching::Static),
        )
    }

    /// The dynamic tail: one block after the boundary.
    pub fn dynamic_text(&self) -> String {
        join(
            self.sections
                .iter()
                .filter(|s| s.caching != Caching::Static),
        )
    }

    /// True when every static section precedes every dynamic one.
    pub fn is_well_ordered(&self) -> bool {
        let first_dynamic = self
            .sections
            .iter()
            .position(|s| s.caching != Caching::Static)
            .unwrap_or(self.sections.len());
        self.sections[first_dynamic..]
            .iter()
            .all(|s| s.caching != Caching::Static)
    }
}

fn join<'a>(sections: impl Iterator<Item = &'a Section>) -> String {
    sections
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

const IDENTITY: &str = "You are Claude, an AI assistant working inside the user's code editor through claude-context. You help with software engineering: reading and changing code, explaining it, debugging, testing, and reviewing. The user sees your answers in a side panel next to their files.";

/// The coding instructions: the part a custom output style without
/// `keep-coding-instructions: true` removes (the reference's `# Doing tasks`).
pub const HOW_TO_WORK: &str = "# How to work\n- Understand before you change: read the relevant files and the project's instructions first.\n- Make the smallest change that solves the problem well, in the style of the surrounding code.\n- Verify your work: run the tests or the build when you can, and say what you could not check.\n- When a request is ambiguous or risky, ask one clear question instead of guessing.\n- Never invent file contents, APIs or results. If you do not know, look or say so.";

const TOOL_USE: &str = "# Using tools\n- Prefer the dedicated tools (Read, Edit, Write, Glob, Grep) over shell commands for files.\n- Read a file before you edit it; edits replace an exact, unique string.\n- Tools that change something ask the user for permission first; a denied call is an answer, not an error to work around.\n- Run independent read-only calls together; run dependent steps one after another.\n- Paths outside the workspace are refused unless the user allowed them.";

const TONE: &str = "# Tone\nBe direct and concise. Skip preamble and flattery. Explain the why when it is not obvious, and point at files as `path:line` so the editor can link them.";

const OUTPUT: &str = "# Output\nUse GitHub-flavoured Markdown. Put code in fenced blocks with a language tag. Keep answers short unless the user asks for depth; for changes, summarise what you did and what is left.";

/// The memory section: where the directory is and how to keep it.
fn memory_section(dir: &Path) -> String {
    format!(
        "# Memory\nYou have a persistent memory directory at `{dir}`. Its index, MEMORY.md, is loaded into every conversation; topic files beside it are read on demand with the Read tool.\n\
         Save only what will matter in later conversations and cannot be derived from the code, the git history or the instruction files. Each topic file has frontmatter `type:` with one of:\n\
         - `user`: who the user is, their role and preferences;\n\
         - `feedback`: corrections and confirmed ways of working;\n\
         - `project`: context about the project that the code does not show;\n\
         - `reference`: pointers to external resources.\n\
         Saving takes two steps: write or update the topic file, then add one line to MEMORY.md pointing at it (under ~150 characters). Keep MEMORY.md short: only its first 200 lines and 25,000 bytes are loaded.",
        dir = dir.display()
    )
}

const SESSION_GUIDANCE: &str = "# This session\nThe first user message carries the project's instructions (CLAUDE.md files, rules, memory) and a snapshot of the git status. Follow the instructions; they override your defaults. More instructions may be attached when you touch files they apply to.";

/// Builds the system prompt for a session.
pub fn system_prompt(input: &PromptInput) -> SystemPrompt {
    let fixed = |name, text: &str| Section {
        name,
        text: text.to_string(),
        caching: Caching::Static,
    };
    let style = input.output_style.as_ref();
    // With a style, the identity gains the reference's style line (two variants of the static
    // prefix: the default's and every style's).
    let identity = match style {
        Some(_) => format!("{IDENTITY}\n{STYLE_LINE}"),
        None => IDENTITY.to_string(),
    };
    let mut sections = vec![fixed("identity", &identity)];
    if !style.is_some_and(|s| s.drop_coding_instructions) {
        sections.push(fixed("howToWork", HOW_TO_WORK));
    }
    sections.extend([
        fixed("toolUse", TOOL_USE),
        fixed("tone", TONE),
        fixed("output", OUTPUT),
        Section {
            name: "sessionGuidance",
            text: SESSION_GUIDANCE.to_string(),
            caching: Caching::Session,
        },
    ]);
    if let Some(dir) = &input.memory_dir {
        sections.push(Section {
            name: "memory",
            text: memory_section(dir),
            caching: Caching::Session,
        });
    }
    // The style's part right after the model line; its sentence last before the date.
    let mut after_model: Vec<String> = style.map(|s| s.part.clone()).into_iter().collect();
    if input.hook_parts.compacted {
        after_model.extend(input.hook_parts.session_start.iter().cloned());
    }
    let mut last = input.hook_parts.user_prompt_submit.clone();
    last.extend(style.map(|s| s.active.clone()));
    sections.push(Section {
        name: "environment",
        text: render::environment_full(
            &input.environment,
            &render::EnvironmentParts {
                first: if input.hook_parts.compacted {
                    &[]
                } else {
                    &input.hook_parts.session_start
                },
                parts: &input.environment_parts,
                after_model: &after_model,
                last: &last,
                compacted: input.hook_parts.compacted,
            },
        ),
        caching: Caching::Session,
    });
    if let Some(lang) = &input.language {
        sections.push(Section {
            name: "language",
            text: format!("# Language\nAlways answer in {lang}, whatever language the code or the instructions are in."),
            caching: Caching::Session,
        });
    }
    SystemPrompt { sections }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(cwd: &str, memory: Option<&str>) -> PromptInput {
        PromptInput {
            environment: Environment {
                cwd: cwd.into(),
                is_git: true,
                platform: "linux".into(),
                shell: "bash".into(),
                os_version: "Linux 6.1.0".into(),
                model_name: "Sonnet 4.5".into(),
                model_id: "claude-sonnet-4-5".into(),
                date: "2026-11-22".into(),
                additional_dirs: Vec::new(),
            },
            memory_dir: memory.map(Into::into),
            language: Some("French".into()),
            output_style: None,
            environment_parts: Vec::new(),
            hook_parts: HookParts::default(),
        }
    }

    #[test]
    fn the_static_prefix_is_identical_across_users_and_sessions() {
        let a = system_prompt(&input(
            "/home/a/x",
            Some("/home/a/.claude/projects/-x/memory"),
        ));
        let b = system_prompt(&input("/srv/b", None));
        assert_eq!(a.static_text(), b.static_text());
        assert_ne!(a.dynamic_text(), b.dynamic_text());
        assert!(a.is_well_ordered() && b.is_well_ordered());
        assert!(!a.static_text().contains("/home/a"));
    }

    /// permissions-trust.md section 8 (ad/user): the additional directories follow the git line.
    #[test]
    fn additional_directories_follow_the_git_line() {
        let mut i = input("/w", None);
        i.environment.additional_dirs = vec!["/R/outside".into()];
        let tail = system_prompt(&i).dynamic_text();
        assert!(
            tail.contains(" - Is a git repository: true\n - Additional working directories:\n  - /R/outside\n - Platform: linux\n"),
            "{tail}"
        );
    }

    #[test]
    fn the_dynamic_tail_has_memory_environment_and_date() {
        let p = system_prompt(&input("/w", Some("/m")));
        let tail = p.dynamic_text();
        assert!(tail.contains("memory directory at `/m`"));
        assert!(tail.contains("# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /w\n - Is a git repository: true\n"));
        assert!(
            tail.contains(
                "The exact model ID is claude-sonnet-4-5.\n\nToday's date is 2026-11-22."
            )
        );
        assert!(tail.contains("Always answer in French"));
        assert!(
            p.sections
                .iter()
                .all(|s| !matches!(s.caching, Caching::Uncached { .. }))
        );
    }
}
