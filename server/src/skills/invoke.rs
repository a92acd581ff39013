//! Invoking a skill (`../shared/spec/skills-mcp.md` section 5): the texts of the `Skill` tool's
//! answer and the body with its substitutions.
//!
//! - The `tool_result` is `Launching skill: <name as called>`; after it, in the same user
//!   message, one text block: `Base directory for this skill: <folder>\n\n<body>` (a legacy
//!   command: the body alone).
//! - The body is the file after its frontmatter (up to the closing `---` and all the whitespace
//!   after it; invalid frontmatter goes too), otherwise as written, with no size cap.
//! - `$ARGUMENTS[N]` and `$N` are the arguments split as a shell would, from 0; `$ARGUMENTS` the
//!   whole string; `${CLAUDE_SKILL_DIR}` the skill's folder; `${CLAUDE_SESSION_ID}` the session.
//!   `${ARGUMENTS}` and `$$` stay. Arguments given to a body without `$ARGUMENTS` are appended
//!   as `\n\nARGUMENTS: <args>`.
//!
//! Shell constructs (`` !`cmd` ``, ```` ```! ````) are left as written here: running them is
//! the session's business, through the Bash tool's permission prompt.

use std::path::Path;

use crate::context::frontmatter;

/// The `tool_result` of a successful invocation.
pub fn launching(called: &str) -> String {
    format!("Launching skill: {called}")
}

/// The `tool_result` of a skill invoked a second time (under either of its names).
pub fn already_loaded(called: &str) -> String {
    format!("Skill /{called} is already loaded above; instructions unchanged.")
}

/// The error result for a name no skill has.
pub fn unknown(called: &str) -> String {
    format!("<tool_use_error>Unknown skill: {called}</tool_use_error>")
}

/// The error result for a `disable-model-invocation` skill.
pub fn not_for_the_model(name: &str) -> String {
    format!(
        "<tool_use_error>Skill {name} cannot be used with Skill tool due to disable-model-invocation. Ask the user to run /{name} themselves — it cannot be invoked via the Skill tool. Do not replicate this skill's workflow by other means — it is reserved for explicit user invocation.</tool_use_error>"
    )
}

/// The block a skill typed by the user (`/name args`) adds to the first user message, before
/// the base-directory block.
pub fn typed(name: &str, args: &str) -> String {
    format!(
        "<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n<command-args>{args}</command-args>\n"
    )
}

/// The file's body: everything after its frontmatter.
pub fn body(file_text: &str) -> &str {
    frontmatter::split(file_text).1
}

/// The text block after the `tool_result`: the base directory (skills; `None` for a legacy
/// command) and the body with its substitutions.
pub fn text_block(dir: Option<&Path>, body: &str, args: Option<&str>, session_id: &str) -> String {
    let body = substitute(body, args, dir, session_id);
    match dir {
        Some(d) => format!("Base directory for this skill: {}\n\n{body}", d.display()),
        None => body,
    }
}

/// `args` split as a shell would (`alpha "beta gamma"` is two); unbalanced quotes fall back to
/// whitespace.
pub fn split_args(args: &str) -> Vec<String> {
    shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_string).collect())
}

/// The substitutions of section 5.
pub fn substitute(body: &str, args: Option<&str>, dir: Option<&Path>, session_id: &str) -> String {
    let args_text = args.unwrap_or("");
    let parts = split_args(args_text);
    let nth = |n: usize| parts.get(n).map_or("", String::as_str);
    let mut out = String::with_capacity(body.len() + args_text.len());
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$ARGUMENTS[")
            && let Some(close) = after.find(']')
            && close > 0
            && after[..close].bytes().all(|b| b.is_ascii_digit())
        {
            let n = after[..close].parse::<usize>().unwrap_or(usize::MAX);
            out.push_str(nth(n));
            rest = &after[close + 1..];
        } else if let Some(after) = tail.strip_prefix("$ARGUMENTS") {
            out.push_str(args_text);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${CLAUDE_SKILL_DIR}") {
            match dir {
                Some(d) => out.push_str(&d.display().to_string()),
                None => out.push_str("${CLAUDE_SKILL_DIR}"),
            }
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${CLAUDE_SESSION_ID}") {
            out.push_str(session_id);
            rest = after;
        } else {
            let digits = tail[1..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                let n = tail[1..1 + digits].parse::<usize>().unwrap_or(usize::MAX);
                out.push_str(nth(n));
                rest = &tail[1 + digits..];
            } else {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    if let Some(a) = args
        && !a.is_empty()
        && !body.contains("$ARGUMENTS")
    {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Section 11, check 4 (s2/calls): the text block after `Skill {"skill":"proj-skill",
    /// "args":"A1 B2"}`.
    #[test]
    fn the_measured_invocation() {
        let file = "---\nname: proj-skill\ndescription: Project skill\n---\n\n# Proj skill\n\nPROJ-BODY-MARKER line 1\nArguments were: $ARGUMENTS\nSkill dir: ${CLAUDE_SKILL_DIR}\n<!-- a comment in the body -->\nLast line.\n";
        let dir = Path::new("/repo/.claude/skills/proj-skill");
        assert_eq!(launching("proj-skill"), "Launching skill: proj-skill");
        assert_eq!(
            text_block(Some(dir), body(file), Some("A1 B2"), "sid"),
            "Base directory for this skill: /repo/.claude/skills/proj-skill\n\n# Proj skill\n\nPROJ-BODY-MARKER line 1\nArguments were: A1 B2\nSkill dir: /repo/.claude/skills/proj-skill\n<!-- a comment in the body -->\nLast line.\n"
        );
    }

    #[test]
    fn positional_arguments_session_and_what_stays() {
        let out = substitute(
            "0=$0 1=$1 2=$ARGUMENTS[2] 9=[$9] ${ARGUMENTS} $$ ${CLAUDE_SESSION_ID} $x",
            Some("alpha \"beta gamma\" delta"),
            None,
            "S-1",
        );
        assert_eq!(
            out, "0=alpha 1=beta gamma 2=delta 9=[] ${ARGUMENTS} $$ S-1 $x",
            "`$ARGUMENTS[2]` holds `$ARGUMENTS`: nothing is appended"
        );
        // Without `$ARGUMENTS`, the arguments are appended (USER-DUP-BODY-MARKER, s2/calls).
        assert_eq!(
            substitute("USER-DUP-BODY-MARKER\n", Some("A1 B2"), None, "s"),
            "USER-DUP-BODY-MARKER\n\n\nARGUMENTS: A1 B2"
        );
        assert_eq!(substitute("x $ARGUMENTS", Some(""), None, "s"), "x ");
        assert_eq!(substitute("x", None, None, "s"), "x");
        // A legacy command has no base directory line (cmd1).
        assert_eq!(
            text_block(
                None,
                body("CMD1-BODY-MARKER $ARGUMENTS\n"),
                Some("X Y"),
                "s"
            ),
            "CMD1-BODY-MARKER X Y\n"
        );
    }

    #[test]
    fn the_other_texts() {
        assert_eq!(
            already_loaded("other-name"),
            "Skill /other-name is already loaded above; instructions unchanged."
        );
        assert_eq!(
            unknown("sub:nested-skill"),
            "<tool_use_error>Unknown skill: sub:nested-skill</tool_use_error>"
        );
        assert!(not_for_the_model("hidden").starts_with(
            "<tool_use_error>Skill hidden cannot be used with Skill tool due to disable-model-invocation. Ask the user to run /hidden themselves"
        ));
        assert_eq!(
            typed("proj-skill", "A1 B2"),
            "<command-message>proj-skill</command-message>\n<command-name>/proj-skill</command-name>\n<command-args>A1 B2</command-args>\n"
        );
        // The frontmatter goes with the whitespace after it, indentation included (`spaced`).
        assert_eq!(
            body("---\na: 1\n---\n\n   indented first\nx"),
            "indented first\nx"
        );
    }
}
