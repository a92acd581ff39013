//! A session's history as an editor renders it (`chat/resume` over LSP, `session/load` for ACP):
//! what the person wrote and the model answered, the tool calls with their results (cut to
//! [`RESULT_VIEW_LIMIT`] characters), the files attached and what made them apply. Injected
//! context (instructions, git, mentions, reminders) is left out. Pure: a view of the messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::{Block, Message, Origin, ResultPart, Role};

/// How much of a tool result a rendered history carries (the model saw all of it).
pub const RESULT_VIEW_LIMIT: usize = 2_000;

/// A tool call in a rendered history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallView {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// A tool result in a rendered history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultView {
    pub tool_use_id: String,
    pub is_error: bool,
    /// The result's text, its first [`RESULT_VIEW_LIMIT`] characters (then a line saying how
    /// much was left out); `[Old tool result content cleared]` when compaction masked it.
    #[serde(default)]
    pub content: String,
}

/// A file attached to a message in a rendered history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    pub path: String,
    /// The touched file that made it apply (absent in sessions written before it was kept, and
    /// in the reference CLI's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Estimated tokens of the attached block.
    pub tokens: u64,
}

/// One message as the editor should render it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// `user` or `assistant`.
    pub role: String,
    /// What the person wrote (user) or the model answered (assistant); injected context
    /// (instructions, git, attachments) is left out.
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_uses: Vec<ToolCallView>,
    /// Tool results this message carries, with whether each was an error and its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultView>,
    /// Files attached to this message (conditional rules, nested instruction files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentView>,
    /// The program's note in the history (`[Request interrupted by user]`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interruption: bool,
}

/// The history as an editor renders it, one entry per message.
pub fn view(history: &[Message]) -> Vec<HistoryEntry> {
    history.iter().map(entry).collect()
}

fn entry(m: &Message) -> HistoryEntry {
    let mut e = HistoryEntry {
        role: match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
        .to_string(),
        text: String::new(),
        tool_uses: Vec::new(),
        tool_results: Vec::new(),
        attachments: Vec::new(),
        interruption: false,
    };
    for b in &m.content {
        match b {
            Block::Text(t) => match t.origin {
                Origin::Authored => e.text.push_str(&t.text),
                Origin::Interruption => e.interruption = true,
                Origin::Attachment => {
                    if let Some(rest) = t.text.strip_prefix("<system-reminder>\nContents of ")
                        && let Some(end) = rest.find(":\n\n")
                    {
                        e.attachments.push(AttachmentView {
                            path: rest[..end].to_string(),
                            trigger: t.trigger.clone(),
                            tokens: crate::context::estimate_tokens(&t.text) as u64,
                        });
                    }
                }
                _ => {}
            },
            Block::ToolUse(t) => e.tool_uses.push(ToolCallView {
                id: t.id.clone(),
                name: t.name.clone(),
                input: t.input.clone(),
            }),
            Block::ToolResult(r) => e.tool_results.push(ToolResultView {
                tool_use_id: r.tool_use_id.clone(),
                is_error: r.is_error,
                content: result_text(&r.content),
            }),
            _ => {}
        }
    }
    e
}

/// A result's text parts joined, cut to [`RESULT_VIEW_LIMIT`] characters on a character
/// boundary, with what was left out said.
fn result_text(parts: &[ResultPart]) -> String {
    let mut out = String::new();
    let mut total = 0usize;
    for p in parts {
        let piece: std::borrow::Cow<'_, str> = match p {
            ResultPart::Text { text } => text.as_str().into(),
            ResultPart::Image(_) => "[image]".into(),
            ResultPart::ToolReference { tool_name } => format!("[loaded {tool_name}]").into(),
            ResultPart::Unsupported => continue,
        };
        if !out.is_empty() && total < RESULT_VIEW_LIMIT {
            out.push('\n');
        }
        for c in piece.chars() {
            if total < RESULT_VIEW_LIMIT {
                out.push(c);
            }
            total += 1;
        }
    }
    if total > RESULT_VIEW_LIMIT {
        out.push_str(&format!(
            "\n[{} more characters not shown here; the model saw them]",
            total - RESULT_VIEW_LIMIT
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;

    #[test]
    fn results_are_cut_and_attachments_keep_their_trigger() {
        let long = "x".repeat(RESULT_VIEW_LIMIT + 10);
        let user = Message::user_blocks(vec![
            Block::tool_result("toolu_1", long, false),
            Block::attachment(
                "<system-reminder>\nContents of /w/.claude/rules/ts.md:\n\nTS.\n</system-reminder>",
                "/w/src/a.ts",
            ),
        ]);
        let v = view(&[user]);
        let r = &v[0].tool_results[0];
        assert_eq!(r.tool_use_id, "toolu_1");
        assert!(r.content.starts_with(&"x".repeat(RESULT_VIEW_LIMIT)));
        assert!(
            r.content
                .ends_with("[10 more characters not shown here; the model saw them]")
        );
        let a = &v[0].attachments[0];
        assert_eq!(a.path, "/w/.claude/rules/ts.md");
        assert_eq!(a.trigger.as_deref(), Some("/w/src/a.ts"));
        assert!(a.tokens > 0);
    }
}
