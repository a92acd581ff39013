//! The question a session asks before its first turn in a folder nobody was asked about, when
//! trusting it would change something: the reference dialog's words (`permissions-trust.md`
//! section 9), adapted where they would not be true of claude-context.
//!
//! The reference:
//!
//! ```text
//! Accessing workspace:
//! <repo>
//! Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source
//! project, or work from your team). If not, take a moment to review what's in this folder first.
//! Claude Code'll be able to read, edit, and execute files here.
//! Trusting this folder loads .claude/settings.json (runs commands and sets environment variables) and .mcp.json here or
//! above (MCP servers).
//! ❯ No, exit
//! Yes, I trust this folder
//! ```
//!
//! Ours keeps the title, the safety check and `Yes, I trust this folder`. The line on reading,
//! editing and executing says what is true here (reads inside the folder need no answer; every
//! edit and command asks, trusted or not). The `Trusting this folder loads …` line names what
//! trusting would make claude-context use, file by file (what it does not use at all, such as
//! a status line, is not named: trust changes nothing for it). "No" does not exit: the session goes on
//! without what waits, so the answer reads `No, don't trust this folder`.

use super::gate::{Gate, HeldStatus, Kind};

/// The question's title line.
pub const TITLE: &str = "Accessing workspace:";
/// The reference's safety check, word for word.
pub const SAFETY_CHECK: &str = "Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source project, or work from your team). If not, take a moment to review what's in this folder first.";
/// What is true of the agent here, trusted or not.
pub const AGENT: &str = "Claude reads files here without asking; it asks before it edits a file or runs a command, trusted or not.";
/// The answer that trusts.
pub const YES: &str = "Yes, I trust this folder";
/// The answer that does not (the default).
pub const NO: &str = "No, don't trust this folder";

/// The question, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// `Accessing workspace: <folder>`.
    pub summary: String,
    /// The safety check, the agent line and the `Trusting this folder loads …` line, one per
    /// line.
    pub text: String,
    /// The `Trusting this folder loads …` line alone (absent when nothing would load).
    pub loads: Option<String>,
}

/// The question for `gate`'s folder.
pub fn of(gate: &Gate) -> Question {
    let loads = loads_line(gate);
    let mut text = format!("{SAFETY_CHECK}\n{AGENT}");
    if let Some(l) = &loads {
        text.push('\n');
        text.push_str(l);
    }
    Question {
        summary: format!("{TITLE} {}", gate.folder.display()),
        text,
        loads,
    }
}

/// `Trusting this folder loads .mcp.json (MCP servers: demo) and .claude/settings.json
/// (approves the project's MCP servers).`
fn loads_line(gate: &Gate) -> Option<String> {
    // File by file, in the order first met, each with what it brings.
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    let mut offered: Vec<String> = Vec::new();
    for h in gate
        .held
        .iter()
        .filter(|h| h.status == HeldStatus::WaitingForTrust)
    {
        let shown = h
            .file
            .strip_prefix(&gate.folder)
            .unwrap_or(&h.file)
            .display()
            .to_string();
        if h.kind == Kind::McpServer && h.file == std::path::Path::new(crate::mcp::offered::SOURCE)
        {
            offered.push(h.key.clone());
            continue;
        }
        let what = match h.kind {
            Kind::McpServer => {
                servers.push(h.key.clone());
                None
            }
            Kind::McpApproval => Some("approves the project's MCP servers".to_string()),
            Kind::AutoMemoryDirectory => Some(format!("sets the memory folder {}", h.detail)),
            Kind::Permissions if h.key.ends_with("additionalDirectories") => {
                Some("adds working directories".to_string())
            }
            Kind::Permissions if h.key.ends_with("defaultMode") => {
                Some("accepts edits without asking".to_string())
            }
            Kind::Permissions => Some("allows tools without asking".to_string()),
            Kind::Hooks => Some("runs hooks".to_string()),
            Kind::Plugins if h.key == "enabledPlugins" => Some("enables plugins".to_string()),
            _ => None,
        };
        let entry = match files.iter_mut().find(|(f, _)| *f == shown) {
            Some(e) => e,
            None => {
                files.push((shown, Vec::new()));
                files.last_mut().expect("just pushed")
            }
        };
        if let Some(w) = what
            && !entry.1.contains(&w)
        {
            entry.1.push(w);
        }
    }
    if files.is_empty() && offered.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = files
        .into_iter()
        .map(|(file, whats)| {
            if file.ends_with(crate::mcp::config::MCP_FILE) && whats.is_empty() {
                format!("{file} (MCP servers: {})", servers.join(", "))
            } else if gate.local_tracked
                && file.ends_with(crate::context::settings::LOCAL_SETTINGS_FILE)
            {
                format!("{file} (committed by the repository: {})", whats.join("; "))
            } else {
                format!("{file} ({})", whats.join("; "))
            }
        })
        .collect();
    if !offered.is_empty() {
        parts.push(format!(
            "the MCP servers the editor offers ({})",
            offered.join(", ")
        ));
    }
    let joined = match parts.len() {
        1 => parts[0].clone(),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    };
    Some(format!("Trusting this folder loads {joined}."))
}
