//! A session's history as a front end shows it, without what the program injected for the model
//! (instructions, git, reminders). Two views of the same messages: [`view`], one entry per message
//! (`chat/resume` over LSP: what the person wrote and the model answered, the tool calls with their
//! results cut to [`RESULT_VIEW_LIMIT`] characters, the files attached and what made them apply),
//! and [`entries`], everything in order (the ACP agent's `session/load` replays them as updates).
//! Pure but for the one scrubber of secrets (`crate::log::known_secrets`): no text, input or
//! result a front end shows holds the key, even where the model printed it (a reference CLI's
//! transcript, the answer in memory). Neither front end reads the message model itself.

use std::path::PathBuf;

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
    /// Images the user sent with this message, in order (their type and size; the bytes stay
    /// in the transcript).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageView>,
}

/// An image of a message in a rendered history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageView {
    pub media_type: String,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// The history as an editor renders it, one entry per message.
pub fn view(history: &[Message]) -> Vec<HistoryEntry> {
    let s = crate::log::known_secrets();
    history
        .iter()
        .map(entry)
        .map(|mut e| {
            if !s.is_empty() {
                e.text = s.scrub(&e.text).into_owned();
                for t in &mut e.tool_uses {
                    t.input = s.scrub_json(&t.input);
                }
                for r in &mut e.tool_results {
                    r.content = s.scrub(&r.content).into_owned();
                }
            }
            e
        })
        .collect()
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
        images: Vec::new(),
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
            Block::Image(i) => e.images.push(ImageView {
                media_type: i.media_type.clone(),
                size: i.size,
            }),
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

/// One thing that happened in a session, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// Words the user wrote.
    User(String),
    /// A file the user mentioned (its contents went with the message).
    Mention(PathBuf),
    /// An image the user sent: its media type and base64 data (`None` when the transcript kept
    /// only a placeholder).
    Image {
        media_type: String,
        data: Option<std::sync::Arc<str>>,
    },
    /// A file attached because a touched file made it apply (a conditional rule, a nested
    /// CLAUDE.md).
    Attachment(PathBuf),
    /// The model's answer text.
    Assistant(String),
    /// The model's extended thinking.
    Thinking(String),
    /// The model called a tool.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool's result, as the model got it (`cleared`: compaction masked it since).
    ToolResult {
        tool_use_id: String,
        text: String,
        is_error: bool,
        cleared: bool,
    },
    /// Earlier messages were summarised (a compaction); the summary's text.
    Summary(String),
    /// The user interrupted the turn here.
    Interrupted,
}

/// The path of an attachment block (`Contents of <path>:`), when it has one.
fn contents_path(text: &str) -> Option<PathBuf> {
    let rest = text.strip_prefix("<system-reminder>\nContents of ")?;
    let end = rest.find(":\n\n")?;
    Some(PathBuf::from(&rest[..end]))
}

/// The entries of `history`, in order (scrubbed: see the module doc).
pub fn entries(history: &[Message]) -> Vec<Entry> {
    let s = crate::log::known_secrets();
    let mut out = raw_entries(history);
    if !s.is_empty() {
        for e in &mut out {
            match e {
                Entry::User(t) | Entry::Assistant(t) | Entry::Thinking(t) | Entry::Summary(t) => {
                    *t = s.scrub(t).into_owned();
                }
                Entry::ToolUse { input, .. } => *input = s.scrub_json(input),
                Entry::ToolResult { text, .. } => *text = s.scrub(text).into_owned(),
                _ => {}
            }
        }
    }
    out
}

fn raw_entries(history: &[Message]) -> Vec<Entry> {
    let mut out = Vec::new();
    for m in history {
        for b in &m.content {
            match (m.role, b) {
                (Role::User, Block::Text(t)) => match t.origin {
                    Origin::Authored => out.push(Entry::User(t.text.clone())),
                    Origin::Attachment => {
                        if let Some(p) = contents_path(&t.text) {
                            out.push(Entry::Attachment(p));
                        }
                    }
                    Origin::Mention => {
                        if let Some(p) = mention_path(&t.text).or_else(|| contents_path(&t.text)) {
                            out.push(Entry::Mention(p));
                        }
                    }
                    Origin::Summary => out.push(Entry::Summary(t.text.clone())),
                    Origin::Interruption => out.push(Entry::Interrupted),
                    _ => {}
                },
                (Role::User, Block::Image(i)) => out.push(Entry::Image {
                    media_type: i.media_type.clone(),
                    data: i.data.clone(),
                }),
                (Role::Assistant, Block::Text(t)) => out.push(Entry::Assistant(t.text.clone())),
                (_, Block::Thinking(t)) => out.push(Entry::Thinking(t.thinking.clone())),
                (_, Block::ToolUse(t)) => out.push(Entry::ToolUse {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    input: t.input.clone(),
                }),
                (_, Block::ToolResult(r)) => out.push(Entry::ToolResult {
                    tool_use_id: r.tool_use_id.clone(),
                    text: r.text(),
                    is_error: r.is_error,
                    cleared: r.cleared,
                }),
                _ => {}
            }
        }
    }
    out
}

/// A mention block's path, as `compose::mention_block` writes it.
fn mention_path(text: &str) -> Option<PathBuf> {
    let rest = text.strip_prefix("<system-reminder>\nThe user mentioned the file ")?;
    let end = rest.find(". Its contents when the message was sent:")?;
    Some(PathBuf::from(&rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{Message, ToolUse};

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

    #[test]
    fn what_was_said_and_done_without_what_was_injected() {
        let user = Message::user_blocks(vec![
            Block::injected(
                Origin::Instructions,
                "<system-reminder>\nrules</system-reminder>",
            ),
            Block::injected(
                Origin::Attachment,
                "<system-reminder>\nContents of /w/.claude/rules/ts.md:\n\nUse tabs.\n</system-reminder>",
            ),
            Block::text("fix it"),
        ]);
        let mut answer = Message::assistant(vec![Block::text("Reading.")]);
        answer.content.push(Block::ToolUse(ToolUse {
            id: "t1".into(),
            name: "Read".into(),
            input: serde_json::json!({"file_path": "/w/a.ts"}),
        }));
        let mention = Message::user_blocks(vec![
            Block::injected(
                Origin::Mention,
                super::super::compose::mention_block(std::path::Path::new("/w/b.md"), "x"),
            ),
            Block::text("and this"),
        ]);
        let results = Message::user_blocks(vec![
            Block::tool_result("t1", "1→x", false),
            Block::injected(Origin::Interruption, "[Request interrupted by user]"),
        ]);
        let got = entries(&[user, answer, results, mention]);
        assert_eq!(
            got,
            [
                Entry::Attachment(PathBuf::from("/w/.claude/rules/ts.md")),
                Entry::User("fix it".into()),
                Entry::Assistant("Reading.".into()),
                Entry::ToolUse {
                    id: "t1".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "/w/a.ts"}),
                },
                Entry::ToolResult {
                    tool_use_id: "t1".into(),
                    text: "1→x".into(),
                    is_error: false,
                    cleared: false,
                },
                Entry::Interrupted,
                Entry::Mention(PathBuf::from("/w/b.md")),
                Entry::User("and this".into()),
            ]
        );
    }
}
