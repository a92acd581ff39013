//! The conversation: messages and content blocks as the session, the transcript and compaction
//! see them, independent of any model API.
//!
//! This is the lowest layer of the chat stack (`session → compact, llm → conversation`): plain
//! data and pure functions, no IO, no wire types. `llm` converts these types to and from each
//! provider's wire format; `session::transcript` stores them.
//!
//! The serde form of these types *is* the transcript's content format, chosen to be the reference
//! CLI's (`{"type":"text","text":…}`, `tool_use`, `tool_result` with `tool_use_id`, `thinking` with
//! `signature`), so its transcripts read into the same types. It is not the API's wire format:
//! cache breakpoints, placeholders for images whose bytes are not kept and the like are decided
//! in `llm`. A user's image is kept whole ([`image`]), as the reference CLI's transcripts keep it.
//!
//! What compaction and tools need is explicit in the data:
//! - every text block says where it came from ([`Origin`]): typed by a person or the model
//!   (`authored`), or injected by us (instructions, git, attachments, reminders, a summary, …), so
//!   "every user-authored message" is a question the data answers;
//! - a tool result can be masked ([`mask_tool_results`]): its content becomes
//!   [`CLEARED_TEXT`] while its `tool_use_id`, `is_error` and place in the history stay;
//! - an assistant message carries its id, model, stop reason and usage.

pub mod image;
mod serde_impl;

pub use image::Image;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a masked tool result's content becomes (compaction tier 1).
pub const CLEARED_TEXT: &str = "[Old tool result content cleared]";

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation.
///
/// Assistant messages carry the API's metadata (`id`, `model`, `stop_reason`, `usage`); a message
/// whose stream did not finish has no `stop_reason`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// Content blocks in order. The transcript form also accepts a bare string (one authored text
    /// block), as the reference CLI writes typed prompts.
    #[serde(deserialize_with = "serde_impl::content")]
    pub content: Vec<Block>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// A content block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text(Text),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
    Thinking(Thinking),
    /// Thinking the API returned encrypted; sent back as it came.
    RedactedThinking {
        data: String,
    },
    Image(Image),
    /// A block of a kind this version does not model (read from a newer transcript). Kept in
    /// place so indices stay true; never sent to a model.
    #[serde(other)]
    Unsupported,
}

/// Text, with where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub text: String,
    #[serde(default, skip_serializing_if = "Origin::is_authored")]
    pub origin: Origin,
    /// For an attachment: the touched file that made it apply, as shown to the user (kept in
    /// our transcripts so a resumed history can say "because of …"; never sent to the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}

/// Where a text block came from. Everything but [`Origin::Authored`] was injected by the
/// program, not typed by a person; compaction's guarantee covers authored user text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// Written by the message's author: the user's own words, or the model's answer.
    #[default]
    Authored,
    /// The instructions block (CLAUDE.md files, rules, memory) of the first user message.
    Instructions,
    /// The git snapshot block.
    Git,
    /// A file attached because it was touched (a conditional rule, a nested CLAUDE.md).
    Attachment,
    /// A file the user mentioned or had open when sending, passed like an @-mention.
    Mention,
    /// A `<system-reminder>` or other note the program adds for the model.
    Reminder,
    /// The continuation message of a full compaction (the summary).
    Summary,
    /// Content re-injected after a compaction (recent files, todos, plan).
    Reinjected,
    /// A marker such as "request interrupted by the user".
    Interruption,
    /// Output of a local command (the reference CLI's slash commands), or another meta message.
    Meta,
}

impl Origin {
    pub fn is_authored(&self) -> bool {
        *self == Origin::Authored
    }
}

/// A tool call by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    /// The arguments. A JSON object when the model produced valid JSON; when it did not (a
    /// stream cut in the middle, `max_tokens`), the raw text as a JSON string, so nothing the
    /// model wrote is lost and the tool layer can answer with an error.
    pub input: Value,
}

/// The result of a tool call, sent back in a user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub tool_use_id: String,
    #[serde(
        default,
        serialize_with = "serde_impl::ser_result_content",
        deserialize_with = "serde_impl::result_content"
    )]
    pub content: Vec<ResultPart>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The content was masked by compaction ([`CLEARED_TEXT`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleared: bool,
}

/// A part of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultPart {
    Text {
        text: String,
    },
    Image(Image),
    /// A deferred tool's definition loaded by `ToolSearch` (`{"type":"tool_reference",
    /// "tool_name":…}`, as the API and the reference CLI write it): from the next request on the
    /// tool's definition is sent.
    ToolReference {
        tool_name: String,
    },
    #[serde(other)]
    Unsupported,
}

/// Extended thinking. `signature` is what lets it be sent back; thinking whose stream was cut
/// before its signature arrived is kept for the transcript but never sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thinking {
    pub thinking: String,
    #[serde(default)]
    pub signature: String,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    PauseTurn,
    Refusal,
    ModelContextWindowExceeded,
    /// A reason this version does not know, kept verbatim.
    Other(String),
}

impl StopReason {
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::ModelContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> StopReason {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ModelContextWindowExceeded,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// Token usage of one response, as the API reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "serde_impl::u64_or_null")]
    pub input_tokens: u64,
    #[serde(default, deserialize_with = "serde_impl::u64_or_null")]
    pub output_tokens: u64,
    #[serde(default, deserialize_with = "serde_impl::u64_or_null")]
    pub cache_creation_input_tokens: u64,
    #[serde(default, deserialize_with = "serde_impl::u64_or_null")]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Everything the request occupied in the window: input (fresh, written to cache, read
    /// from cache) plus output. This is the session's count after the response
    /// (context.md section 10).
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
    }
}

impl Message {
    /// A message the user typed.
    pub fn user(text: impl Into<String>) -> Message {
        Message::new(Role::User, vec![Block::text(text)])
    }

    /// A user message of blocks.
    pub fn user_blocks(content: Vec<Block>) -> Message {
        Message::new(Role::User, content)
    }

    /// An assistant message of blocks, without metadata.
    pub fn assistant(content: Vec<Block>) -> Message {
        Message::new(Role::Assistant, content)
    }

    pub fn new(role: Role, content: Vec<Block>) -> Message {
        Message {
            role,
            content,
            id: None,
            model: None,
            stop_reason: None,
            usage: None,
        }
    }

    /// The text the user typed in this message (authored text blocks joined by a blank line),
    /// or `None` when the message holds no authored text (tool results, injected notes only, or
    /// an assistant message).
    pub fn authored_text(&self) -> Option<String> {
        if self.role != Role::User {
            return None;
        }
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) if t.origin.is_authored() => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.join("\n\n"))
        }
    }

    /// All text of the message's text blocks, in order (for display and summaries).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let Block::Text(t) = b {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }

    /// The tool calls of an assistant message.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse(t) => Some(t),
            _ => None,
        })
    }

    /// What of an assistant message whose stream did not finish may be sent to a model: text
    /// blocks (without empty ones) and thinking that carries its signature. Tool calls are
    /// dropped (they never ran, and the API wants a result for each), as is anything after a
    /// thinking block that lost its signature. `None` when nothing is left.
    ///
    /// Resume and the session use this same function, so a resumed session sends what the
    /// running one would have.
    pub fn sendable_partial(&self) -> Option<Message> {
        let mut content = Vec::new();
        for b in &self.content {
            match b {
                Block::Text(t) if !t.text.is_empty() => content.push(b.clone()),
                Block::Thinking(t) if !t.signature.is_empty() => content.push(b.clone()),
                Block::Thinking(_) => break,
                Block::RedactedThinking { .. } => content.push(b.clone()),
                _ => {}
            }
        }
        // Thinking alone is not an answer.
        if !content.iter().any(|b| matches!(b, Block::Text(_))) {
            return None;
        }
        let mut m = self.clone();
        m.content = content;
        Some(m)
    }
}

impl Block {
    /// An authored text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(Text {
            text: text.into(),
            origin: Origin::Authored,
            trigger: None,
        })
    }

    /// A text block the program injects.
    pub fn injected(origin: Origin, text: impl Into<String>) -> Block {
        Block::Text(Text {
            text: text.into(),
            origin,
            trigger: None,
        })
    }

    /// An attached file's block, with the touched file that made it apply.
    pub fn attachment(text: impl Into<String>, trigger: impl Into<String>) -> Block {
        Block::Text(Text {
            text: text.into(),
            origin: Origin::Attachment,
            trigger: Some(trigger.into()),
        })
    }

    /// A tool result of plain text.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Block {
        Block::ToolResult(ToolResult {
            tool_use_id: tool_use_id.into(),
            content: vec![ResultPart::Text { text: text.into() }],
            is_error,
            cleared: false,
        })
    }
}

impl ToolResult {
    /// Replaces the content with [`CLEARED_TEXT`], keeping the id and the error flag. Returns
    /// the number of bytes of text removed (0 when already cleared); an image part counts as
    /// its size.
    pub fn mask(&mut self) -> usize {
        if self.cleared {
            return 0;
        }
        let removed = self.content_bytes();
        self.content = vec![ResultPart::Text {
            text: CLEARED_TEXT.to_string(),
        }];
        self.cleared = true;
        removed
    }

    /// Bytes of the content: text length, image size (or 0 when unknown).
    pub fn content_bytes(&self) -> usize {
        self.content
            .iter()
            .map(|p| match p {
                ResultPart::Text { text } => text.len(),
                ResultPart::Image(i) => i.size.unwrap_or(0) as usize,
                ResultPart::ToolReference { tool_name } => tool_name.len(),
                ResultPart::Unsupported => 0,
            })
            .sum()
    }

    /// The tools this result loaded (`tool_reference` parts), in order.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|p| match p {
            ResultPart::ToolReference { tool_name } => Some(tool_name.as_str()),
            _ => None,
        })
    }

    /// The result's text parts joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.content {
            if let ResultPart::Text { text } = p {
                out.push_str(text);
            }
        }
        out
    }
}

/// Masks the results of the given tool calls wherever they are in `messages`. Returns how many
/// results were cleared now (already cleared ones are not counted) and the bytes removed.
pub fn mask_tool_results(messages: &mut [Message], ids: &HashSet<&str>) -> (usize, usize) {
    let (mut count, mut bytes) = (0, 0);
    for m in messages.iter_mut().filter(|m| m.role == Role::User) {
        for b in &mut m.content {
            if let Block::ToolResult(r) = b
                && ids.contains(r.tool_use_id.as_str())
                && !r.cleared
            {
                bytes += r.mask();
                count += 1;
            }
        }
    }
    (count, bytes)
}

/// The deferred tools a history loaded (`tool_reference` parts of its tool results), each
/// once, in the order they were first loaded: what a resumed session sends again.
pub fn loaded_tools(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            if let Block::ToolResult(r) = b {
                for name in r.references() {
                    if !out.iter().any(|n| n == name) {
                        out.push(name.to_string());
                    }
                }
            }
        }
    }
    out
}

/// The name of the tool a `tool_use_id` called, found in the assistant messages.
pub fn tool_name<'a>(messages: &'a [Message], tool_use_id: &str) -> Option<&'a str> {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_uses())
        .find(|t| t.id == tool_use_id)
        .map(|t| t.name.as_str())
}

/// The texts the user authored, one per message that has any, in order.
pub fn user_authored_texts(messages: &[Message]) -> Vec<String> {
    messages.iter().filter_map(Message::authored_text).collect()
}

#[cfg(test)]
mod tests;
