//! What the model is told when a rule or a mode decides a call, in the reference CLI's words
//! (`../shared/spec/permissions-trust.md` sections 4, 6 and 7), and the mode texts of the
//! environment section. Every text quoted in the spec is here byte for byte; the few the spec
//! does not quote are marked *ours* and follow the measured ones' pattern.

use std::path::{Path, PathBuf};

/// A Read, Write or Edit on a path a deny rule covers.
pub const FILE_DENIED: &str = "<tool_use_error>File is in a directory that is denied by your permission settings.</tool_use_error>";

/// A Write on a path only a `Read` deny covers.
pub const WRITE_READ_DENIED: &str = "<tool_use_error>File is covered by a Read deny rule in your permission settings and cannot be written.</tool_use_error>";

/// An Edit on a path only a `Read` deny covers.
pub const EDIT_READ_DENIED: &str = "<tool_use_error>File is covered by a Read deny rule in your permission settings and cannot be edited.</tool_use_error>";

/// The rejection the user gave in a prompt (check 26).
pub const REJECTED: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";

/// What follows the results of an answer whose call the user rejected, in the same message.
pub const INTERRUPTED_FOR_TOOL_USE: &str = "[Request interrupted by user for tool use]\n";

/// The result of the calls of the same answer after the one the user rejected (*ours*: they do
/// not run either).
pub const NOT_RUN_AFTER_REJECTION: &str = "The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell you how to proceed.";

/// The model's `tool_result` for a Grep (or Glob) whose `path` a Read deny covers.
pub fn read_denied(path: &Path) -> String {
    format!("Permission to read {} has been denied.", path.display())
}

/// A Bash command a deny rule covers (a part matched a `Bash(…)` deny, or read a file a `Read`
/// deny covers).
pub fn bash_denied(command: &str) -> String {
    format!("Permission to use Bash with command {command} has been denied.")
}

/// A built-in tool denied as a whole.
pub fn tool_disabled(tool: &str) -> String {
    format!(
        "<tool_use_error>Error: No such tool available: {tool}. {tool} is disabled for this session, in subagents as well as here.</tool_use_error>"
    )
}

/// An MCP tool denied as a whole (the same text as a tool that does not exist).
pub fn no_such_tool(tool: &str) -> String {
    format!("<tool_use_error>Error: No such tool available: {tool}</tool_use_error>")
}

/// Nobody could answer a Read outside the working directories (or an ask rule on a read).
pub fn not_granted_read(path: &Path) -> String {
    format!(
        "Claude requested permissions to read from {}, but you haven't granted it yet.",
        path.display()
    )
}

/// Nobody could answer a Write or Edit.
pub fn not_granted_write(path: &Path) -> String {
    format!(
        "Claude requested permissions to write to {}, but you haven't granted it yet.",
        path.display()
    )
}

/// Nobody could answer a call of `tool` (Bash under an ask rule, WebFetch, an MCP tool).
pub fn not_granted_use(tool: &str) -> String {
    format!("Claude requested permissions to use {tool}, but you haven't granted it yet.")
}

/// Don't-ask mode refused what would have asked.
pub fn dont_ask(tool: &str) -> String {
    format!(
        "Permission to use {tool} has been denied because Claude Code is running in don't ask mode. IMPORTANT: You *may* attempt to accomplish this action using other tools that might naturally be used to accomplish this goal, e.g. using head instead of cat. But you *should not* attempt to work around this denial in malicious ways, e.g. do not use your ability to run tests to execute non-test actions. You should only try to work around this restriction in reasonable ways that do not attempt to bypass the intent behind this denial. If you believe this capability is essential to complete the user's request, STOP and explain to the user what you were trying to do and why you need this permission. Let the user decide how to proceed."
    )
}

/// Plan mode refused a Write or Edit.
pub fn plan_write(path: &Path) -> String {
    format!("Cannot write to {} while in plan mode.", path.display())
}

/// Plan mode refused a Bash command that is not read-only: the reference's text (its plan mode
/// asks its auto-mode classifier, which does not run here either).
pub fn plan_bash(tool: &str) -> String {
    format!(
        "Auto mode is unavailable: its safety check does not run for this session, so {tool} was not run. Other actions that need the check will be denied too, and retrying won't help. Finish what you can without them, then tell the user what is blocked and that they can switch to another permission mode."
    )
}

/// Plan mode refused an MCP tool call (*ours*: not measured).
pub fn plan_tool(tool: &str) -> String {
    format!("Cannot use {tool} while in plan mode.")
}

/// `('<repo>', '<R>/outside')`.
fn quoted_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| format!("'{}'", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Bash command that creates, changes or removes a file.
pub fn needs_approval(cmd: &str, path: &Path, inside: bool, dirs: &[PathBuf]) -> String {
    if inside {
        format!(
            "{cmd} in '{}' needs approval. The path is inside the working directories for this session ({}), and Claude Code asks before a shell command creates, changes or removes files there.",
            path.display(),
            quoted_dirs(dirs)
        )
    } else {
        format!(
            "{cmd} in '{}' needs approval. The path is outside the working directories for this session ({}). Allowing runs the command as written.",
            path.display(),
            quoted_dirs(dirs)
        )
    }
}

/// Output redirected to a file (outside the working directories: *ours*, on the pattern of
/// [`needs_approval`]).
pub fn redirect_needs_approval(path: &Path, inside: bool, dirs: &[PathBuf]) -> String {
    if inside {
        format!(
            "Output redirection to '{}' needs approval. The path is inside the working directories for this session ({}), and Claude Code asks before a shell command creates, changes or removes files there.",
            path.display(),
            quoted_dirs(dirs)
        )
    } else {
        format!(
            "Output redirection to '{}' needs approval. The path is outside the working directories for this session ({}). Allowing runs the command as written.",
            path.display(),
            quoted_dirs(dirs)
        )
    }
}

/// A read-only command on a path outside the working directories (`cat`: measured; the other
/// commands' verbs are *ours*).
pub fn read_outside(cmd: &str, path: &Path, dirs: &[PathBuf]) -> String {
    let verb = match cmd {
        "cat" => "concatenate files from",
        "ls" | "tree" => "list files in",
        _ => "read files from",
    };
    let dirs: Vec<String> = dirs.iter().map(|d| format!("'{}'", d.display())).collect();
    format!(
        "{cmd} in '{}' was blocked. For security, Claude Code may only {verb} the allowed working directories for this session: {}.",
        path.display(),
        dirs.join(", ")
    )
}

/// A command the checker does not know.
pub const REQUIRES_APPROVAL: &str = "This command requires approval";
/// `$(…)`, backquotes, `<(…)`.
pub const NESTED: &str = "A nested command in this command can't be checked before it runs";
/// `$VAR`, `${…}`, `$((…))`.
pub const VARIABLE: &str = "A variable in this command can't be checked before it runs";

/// The environment section's part for bypass permissions mode (measured, md/bypassPermissions).
pub const BYPASS_REMINDER: &str = "While bypass permissions mode is active:\n\nYou can do much of your work through the Bash tool when it is the simpler route: read files with cat, head, or sed -n, search with grep and find, and make small, mechanical file changes with sed, heredocs, or short scripts instead of the dedicated Read, Edit, or Write tools. The choice is yours: prefer Edit or Write when a shell edit would be fragile, such as exact or multi-line replacements, or sed/awk flags that differ between GNU and BSD/macOS.";

/// The environment section's part for plan mode: the measured opening and the section headings
/// of the reference's text, the rest *ours* (this session has no plan file, no subagents and no
/// `ExitPlanMode` tool: the plan is the answer, and the user leaves plan mode).
pub const PLAN_REMINDER: &str = "Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any edits, run any non-readonly tools (including changing configs or making commits), or otherwise make any changes to the system. This supercedes any other instructions you have received.

## Plan File Info:
This session keeps no plan file: your plan is your answer. Other than writing it, you are only allowed to take READ-ONLY actions: Read, Glob and Grep, and shell commands that only read.

## Plan Workflow

### Phase 1: Initial Understanding
Goal: understand the user's request and the code it concerns, by reading the code and asking the user questions.

1. Focus on the request and the code associated with it. Look for existing functions, utilities and patterns that can be reused; avoid proposing new code when suitable code already exists.
2. Read the project's instructions and the files the change would touch; search for their callers and tests.
3. If the request is ambiguous, ask the user the questions you need answered before designing anything.

### Phase 2: Design
Goal: design an implementation approach.

Weigh the options the code leaves open, against the project's conventions and constraints. Prefer the smallest change that solves the problem well.

### Phase 3: Review
Goal: check the design against the code and the user's intent.

1. Read the critical files again to confirm the design fits them.
2. Make sure the plan does what the user asked, nothing less and nothing more.
3. Ask the user about any remaining tradeoff.

### Phase 4: Final Plan
Goal: write the plan as your answer.
- Start with a short summary of the approach.
- List the files to change, and what changes in each, in the order you would make them.
- Say how the change will be verified (tests to run or write, what to check by hand).
- Keep it concise enough to scan, detailed enough to execute.

### Phase 5: Hand over
End your turn with the plan. Do not start implementing: the user reviews it and leaves plan mode (in the editor's mode picker, or the agent's session mode) when they want it carried out.

NOTE: At any point in time through this workflow you should feel free to ask the user questions or clarifications. Don't make large assumptions about user intent. The goal is to present a well researched plan to the user, and tie any loose ends before implementation begins.";

/// What the model is told when the user leaves plan mode mid-session (*ours*).
pub const PLAN_EXITED: &str = "## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run tools, and take actions, as the user's permission rules and prompts allow.";

/// What the model is told when the user leaves bypass permissions mode mid-session (*ours*).
pub const BYPASS_EXITED: &str = "Bypass permissions mode is no longer active: tools that change anything ask the user again, as the user's permission rules say.";

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts section 6 quotes in full, with their placeholders filled as in the captures.
    #[test]
    fn texts_are_the_references() {
        let repo = PathBuf::from("/R/repo");
        assert_eq!(
            not_granted_write(&repo.join("new.txt")),
            "Claude requested permissions to write to /R/repo/new.txt, but you haven't granted it yet."
        );
        assert_eq!(
            not_granted_read(Path::new("/R/outside/o.txt")),
            "Claude requested permissions to read from /R/outside/o.txt, but you haven't granted it yet."
        );
        assert_eq!(
            not_granted_use("WebFetch"),
            "Claude requested permissions to use WebFetch, but you haven't granted it yet."
        );
        assert_eq!(
            needs_approval("mkdir", &repo.join("d4"), true, std::slice::from_ref(&repo)),
            "mkdir in '/R/repo/d4' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there."
        );
        assert_eq!(
            needs_approval(
                "mkdir",
                Path::new("/R/outside/m1"),
                false,
                std::slice::from_ref(&repo)
            ),
            "mkdir in '/R/outside/m1' needs approval. The path is outside the working directories for this session ('/R/repo'). Allowing runs the command as written."
        );
        assert_eq!(
            redirect_needs_approval(&repo.join("out.txt"), true, std::slice::from_ref(&repo)),
            "Output redirection to '/R/repo/out.txt' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there."
        );
        assert_eq!(
            read_outside(
                "cat",
                Path::new("/R/outside/o.txt"),
                std::slice::from_ref(&repo)
            ),
            "cat in '/R/outside/o.txt' was blocked. For security, Claude Code may only concatenate files from the allowed working directories for this session: '/R/repo'."
        );
        assert_eq!(
            bash_denied("ls && rm -f t3"),
            "Permission to use Bash with command ls && rm -f t3 has been denied."
        );
        assert_eq!(
            tool_disabled("Read"),
            "<tool_use_error>Error: No such tool available: Read. Read is disabled for this session, in subagents as well as here.</tool_use_error>"
        );
        assert_eq!(
            plan_write(&repo.join("src/n.ts")),
            "Cannot write to /R/repo/src/n.ts while in plan mode."
        );
        assert!(dont_ask("Write").starts_with("Permission to use Write has been denied because Claude Code is running in don't ask mode. IMPORTANT: "));
        assert!(PLAN_REMINDER.starts_with("Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any edits"));
        for heading in [
            "## Plan File Info:\n",
            "## Plan Workflow\n\n### Phase 1: Initial Understanding\n",
            "### Phase 2: Design\n",
            "### Phase 3: Review\n",
            "### Phase 4: Final Plan\n",
            "\nNOTE: At any point in time",
        ] {
            assert!(PLAN_REMINDER.contains(heading), "{heading}");
        }
    }
}
