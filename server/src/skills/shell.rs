//! Shell commands a skill body runs when it is invoked (`../shared/spec/skills-mcp.md`
//! section 5): an inline `` !`cmd` `` and a fenced block opened with ```` ```! ````.
//!
//! The reference CLI runs them when the skill is invoked and puts their output in place.
//! claude-context never runs them to build a preview or a listing: this module only finds
//! them, so the preview and `check` can say that a skill runs commands, and the session can put
//! each one through the Bash tool's permission prompt.

/// Commands reported per skill at most.
pub const MAX_REPORTED: usize = 20;
/// Characters of one reported command at most.
const MAX_SHOWN: usize = 200;

/// One command of a body: where it is and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellSite {
    /// Byte range of the whole construct (`` !`cmd` `` or the fence with its closing line).
    pub start: usize,
    pub end: usize,
    /// The command as written (whitespace trimmed).
    pub command: String,
    /// A fenced ```` ```! ```` block rather than an inline `` !`cmd` ``.
    pub fenced: bool,
}

/// The shell constructs of `body`, in order.
pub fn find(body: &str) -> Vec<ShellSite> {
    let mut out = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // A fence opener at the start of a line: ```! then the command lines, then ```.
        let line_start = i == 0 || bytes[i - 1] == b'\n';
        if line_start && body[i..].starts_with("```!") {
            let open_end = body[i..].find('\n').map_or(body.len(), |n| i + n + 1);
            let close = body[open_end..]
                .match_indices("```")
                .map(|(n, _)| open_end + n)
                .find(|&p| p == open_end || bytes[p - 1] == b'\n');
            let (inner_end, end) = match close {
                Some(c) => (c, body[c..].find('\n').map_or(body.len(), |n| c + n + 1)),
                None => (body.len(), body.len()),
            };
            let inline = body[i + 4..open_end].trim();
            let mut command = body[open_end..inner_end].trim().to_string();
            if command.is_empty() {
                command = inline.to_string();
            }
            out.push(ShellSite {
                start: i,
                end,
                command,
                fenced: true,
            });
            i = end.max(i + 1);
            continue;
        }
        if body[i..].starts_with("!`") {
            let from = i + 2;
            if let Some(n) = body[from..].find(['`', '\n']) {
                let close = from + n;
                if bytes[close] == b'`' && close > from {
                    out.push(ShellSite {
                        start: i,
                        end: close + 1,
                        command: body[from..close].trim().to_string(),
                        fenced: false,
                    });
                    i = close + 1;
                    continue;
                }
            }
        }
        i += body[i..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// The commands to report (at most [`MAX_REPORTED`], each cut to 200 characters).
pub fn reported(sites: &[ShellSite]) -> Vec<String> {
    sites
        .iter()
        .take(MAX_REPORTED)
        .map(|s| {
            let cmd = s.command.replace('\n', " ⏎ ");
            if cmd.chars().count() > MAX_SHOWN {
                format!("{}…", cmd.chars().take(MAX_SHOWN - 1).collect::<String>())
            } else {
                cmd
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_fenced_commands_are_found() {
        let body = "Inline: !`echo SHELL-OUT-$((6*7))` and `plain code`.\n```!\nls -la\ndate\n```\nafter ! `not` !``\n```bash\nnot this\n```\n";
        let sites = find(body);
        assert_eq!(sites.len(), 2, "{sites:?}");
        assert_eq!(sites[0].command, "echo SHELL-OUT-$((6*7))");
        assert!(!sites[0].fenced);
        assert_eq!(
            &body[sites[0].start..sites[0].end],
            "!`echo SHELL-OUT-$((6*7))`"
        );
        assert_eq!(sites[1].command, "ls -la\ndate");
        assert!(sites[1].fenced);
        assert!(body[sites[1].end..].starts_with("after"));
        assert_eq!(reported(&sites)[1], "ls -la ⏎ date");
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end_and_nothing_else_is_a_command() {
        let sites = find("```!\nrm -rf /tmp/x\n");
        assert_eq!(sites.len(), 1);
        assert_eq!(sites[0].command, "rm -rf /tmp/x");
        assert!(find("no commands here: `x` ! `y`\n```\n!`z`\n").len() == 1);
        assert!(find("").is_empty());
    }
}
