//! The reference CLI's built-in agent types: `claude`, `Explore`, `general-purpose`, `Plan`,
//! `statusline-setup` (`../shared/spec/hooks-agents-styles.md` section 9).
//!
//! Where each text comes from (see `docs/decisions.md`, "Subagents: the built-in agent types"):
//! the descriptions (`whenToUse`) and tool lists are the agent definitions of
//! `@anthropic-ai/claude-code-linux-x64@2.1.337` (the npm registry's newest at the time; the
//! spec measured 2.1.328), and agree with every part the spec quotes. `Explore`'s description
//! depends on the model: the spec measured `Fast read-only search agent for locating code. …`
//! under sonnet; the package's other text (`whenToUseLean`) is used under the opus layout
//! (*inferred*: the spec does not quote it). The `Explore` and `Plan` tool texts are the spec's
//! measured `All tools except …` (both have the same `disallowedTools` in the package).
//!
//! Their system prompts: `general-purpose`'s is the package's text (its opening is the one the
//! spec quotes). The others' are ours, short and in the same spirit: the reference CLI's are long
//! and tied to tools and features claude-context does not have (worktrees, FleetView, the status
//! line's settings file).

use super::{Agent, Scope};

/// The `Tools:` text of `Explore` and `Plan`, as measured.
pub const READ_ONLY_TOOLS_TEXT: &str = "All tools except Agent, Artifact, ArtifactComments, ArtifactData, ArtifactCheck, ExitPlanMode, Edit, Write, NotebookEdit";

/// The tools `Explore` and `Plan` may not use.
pub const READ_ONLY_DISALLOWED: [&str; 9] = [
    "Agent",
    "Artifact",
    "ArtifactComments",
    "ArtifactData",
    "ArtifactCheck",
    "ExitPlanMode",
    "Edit",
    "Write",
    "NotebookEdit",
];

const CLAUDE_DESC: &str = "Catch-all for any task that doesn't fit a more specific agent. FleetView's default when no agent name is typed.";
const EXPLORE_DESC_SONNET: &str = "Fast read-only search agent for locating code. Use it to find files by pattern (eg. \"src/components/**/*.tsx\"), grep for symbols or keywords (eg. \"API endpoints\"), or answer \"where is X defined / which files reference Y.\" Do NOT use it for code review, design-doc auditing, cross-file consistency checks, or open-ended analysis \u{2014} it reads excerpts rather than whole files and will miss content past its read window. When calling, specify search breadth: \"quick\" for a single targeted lookup, \"medium\" for moderate exploration, or \"very thorough\" to search across multiple locations and naming conventions.";
const EXPLORE_DESC_LEAN: &str = "Read-only search agent for broad fan-out searches \u{2014} when answering means sweeping many files, directories, or naming conventions and you only need the conclusion, not the file dumps. It reads excerpts rather than whole files, so it locates code; it doesn't review or audit it. Specify search breadth: \"medium\" for moderate exploration, \"very thorough\" for multiple locations and naming conventions.";
const GENERAL_DESC: &str = "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks. When you are searching for a keyword or file and are not confident that you will find the right match in the first few tries use this agent to perform the search for you.";
const PLAN_DESC: &str = "Software architect agent for designing implementation plans. Use this when you need to plan the implementation strategy for a task. Returns step-by-step plans, identifies critical files, and considers architectural trade-offs.";
const STATUSLINE_DESC: &str =
    "Use this agent to configure the user's Claude Code status line setting.";

/// `general-purpose`'s system prompt (the package's).
pub const GENERAL_BODY: &str = "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's message, you should use the tools available to complete the task. Complete the task fully\u{2014}don't gold-plate, but don't leave it half-done. When you complete the task, respond with a concise report covering what was done and any key findings \u{2014} the caller will relay this to the user, so it only needs the essentials.
- Searching for code, configurations, and patterns across large codebases
- Analyzing multiple files to understand system architecture
- Investigating complex questions that require exploring many files
- Performing multi-step research tasks
- For file searches: search broadly when you don't know where something lives. Use Read when you know the specific file path.
- For analysis: Start broad and narrow down. Use multiple search strategies if the first doesn't yield results.
- Be thorough: Check multiple locations, consider different naming conventions, look for related files.
- NEVER create files unless they're absolutely necessary for achieving your goal. ALWAYS prefer editing an existing file to creating a new one.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested.
- You are already the dedicated agent for this task. Do the work directly \u{2014} do not re-delegate your entire assignment to another single subagent.";

const CLAUDE_BODY: &str = "You are an agent for claude-context, working on a task another agent delegated to you. Use the tools available to complete it fully, then answer with a concise report of what you did and what you found: the agent that launched you relays it to the user.";
const EXPLORE_BODY: &str = "You are a read-only search specialist. Find the files, symbols and passages the task asks about with Glob, Grep and Read, and answer with what you found: absolute paths, line numbers and short excerpts. You cannot and must not create, edit or delete any file.";
const PLAN_BODY: &str = "You are a software architect and planning specialist. Explore the codebase with the read-only tools available and design an implementation plan for the task: the steps in order, the critical files, and the trade-offs. You cannot and must not create, edit or delete any file.";
const STATUSLINE_BODY: &str = "You are a status line setup agent. The user's Claude Code status line is the `statusLine` setting of `~/.claude/settings.json`: read the settings and the user's shell configuration, then update that setting with Edit as the task asks, and report what you changed.";

/// Does `model` get the opus layout's texts?
fn lean(model: &str) -> bool {
    crate::models::environment_message(model)
}

/// The built-in agent types for a session on `model`.
pub fn agents(model: &str) -> Vec<Agent> {
    let all = |name: &str, description: &str, body: &str| Agent {
        name: name.to_string(),
        description: description.to_string(),
        tools: Some(vec!["*".to_string()]),
        tools_text: "*".to_string(),
        disallowed_tools: Vec::new(),
        model: None,
        body: body.to_string(),
        scope: Scope::BuiltIn,
        file: None,
    };
    let read_only = |name: &str, description: &str, body: &str| Agent {
        tools: None,
        tools_text: READ_ONLY_TOOLS_TEXT.to_string(),
        disallowed_tools: READ_ONLY_DISALLOWED.iter().map(|s| s.to_string()).collect(),
        model: Some("inherit".to_string()),
        ..all(name, description, body)
    };
    vec![
        all("claude", CLAUDE_DESC, CLAUDE_BODY),
        read_only(
            "Explore",
            if lean(model) {
                EXPLORE_DESC_LEAN
            } else {
                EXPLORE_DESC_SONNET
            },
            EXPLORE_BODY,
        ),
        all("general-purpose", GENERAL_DESC, GENERAL_BODY),
        read_only("Plan", PLAN_DESC, PLAN_BODY),
        Agent {
            tools: Some(vec!["Read".to_string(), "Edit".to_string()]),
            tools_text: "Read, Edit".to_string(),
            model: Some("sonnet".to_string()),
            ..all("statusline-setup", STATUSLINE_DESC, STATUSLINE_BODY)
        },
    ]
}
