//! One line of a transcript, ours or the reference CLI's: one flat record type with the
//! reference's field names, every field optional but `type`, unknown fields ignored.
//!
//! Ours writes `user`, `assistant` and `system` records (subtypes `compact_boundary`,
//! `microcompact` and `hook_context`); the reference CLI writes those and more (`summary`, `attachment`,
//! `file-history-snapshot`, `queue-operation`, `progress`, …), which are read and kept aside.

use serde::{Deserialize, Serialize};

use crate::conversation::Message;

/// A transcript line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The record this one follows. `null` starts a chain: the first message, or the boundary of
    /// a compaction (whose `logicalParentUuid` says what it follows).
    #[serde(default)]
    pub parent_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_parent_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
    /// The writing program's version (`claude-context 0.1.0`, or the reference's `2.1.12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A subagent's record (reference CLI); not part of the main conversation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_sidechain: bool,
    /// A subagent's record: its agent id (ours, as the reference CLI writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// A message the program injected (reference CLI).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_meta: bool,
    /// The continuation message of a compaction (reference CLI; ours also marks the text's origin).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_compact_summary: bool,
    /// A conversation message. Another role's (the reference CLI's `api-request-blob` records
    /// hold `system` ones) is not part of the conversation: read as none, not as an error.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "conversation_message"
    )]
    pub message: Option<Message>,
    /// An assistant answer whose stream did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_metadata: Option<CompactMetadata>,
    /// `microcompact`: the tool calls whose results were cleared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_use_ids: Vec<String>,
    /// `microcompact`: estimated tokens freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_freed: Option<u64>,
    /// A system record's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
    /// `summary` records (reference CLI): a title for the conversation ending at `leafUuid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_uuid: Option<String>,
    /// `attachment` records (reference CLI): what was attached (`type`, `path`, `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<serde_json::Value>,
}

/// Why an answer is partial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Partial {
    pub reason: PartialReason,
    /// What happened, for a person.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cause: String,
}

/// Why an answer stopped before its end, which decides whether it stays in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartialReason {
    /// The stream was cut and the request retried: a newer answer replaces it. Kept in the
    /// transcript, never in the history.
    Retried,
    /// The user cancelled. Its sendable part (text, signed thinking) stays in the history.
    Cancelled,
    /// Every try failed. Its sendable part stays in the history.
    Failed,
}

/// `compact_boundary`: what was compacted.
///
/// `trigger` and `preTokens` are the reference CLI's fields. Ours add `records`, the number of
/// message records of the compacted history that follow the boundary: a boundary followed by
/// fewer (a crash while the compaction was being written) is an interrupted compaction, and the
/// history is the one before it. And `userMessages`: every user message the summary preserves,
/// verbatim, so the next compaction guarantees them too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactMetadata {
    /// `auto` or `manual`.
    pub trigger: String,
    /// The session's token count before.
    #[serde(default)]
    pub pre_tokens: u64,
    /// The estimated count after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_tokens: Option<u64>,
    /// How many message records of the new history follow this boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<usize>,
    /// The user messages the summary preserves, verbatim, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_messages: Vec<String>,
}

/// Record kinds and subtypes.
pub const USER: &str = "user";
pub const ASSISTANT: &str = "assistant";
pub const SYSTEM: &str = "system";
pub const SUMMARY: &str = "summary";
pub const COMPACT_BOUNDARY: &str = "compact_boundary";
pub const MICROCOMPACT: &str = "microcompact";
/// Ours: what hooks put into the environment section of the system prompt (`content`: the
/// parts), so a resumed session sends it again. The newest one since the last compaction counts.
pub const HOOK_CONTEXT: &str = "hook_context";

impl Record {
    pub fn is_message(&self) -> bool {
        (self.kind == USER || self.kind == ASSISTANT) && self.message.is_some()
    }

    pub fn is_subtype(&self, subtype: &str) -> bool {
        self.kind == SYSTEM && self.subtype.as_deref() == Some(subtype)
    }

    /// Part of the main conversation: a message, a boundary or a clearing, not a subagent's.
    pub fn is_conversation(&self) -> bool {
        !self.is_sidechain
            && (self.is_message()
                || self.is_subtype(COMPACT_BOUNDARY)
                || self.is_subtype(MICROCOMPACT)
                || self.is_subtype(HOOK_CONTEXT))
    }

    /// A partial answer a retry replaced.
    pub fn is_superseded(&self) -> bool {
        matches!(&self.partial, Some(p) if p.reason == PartialReason::Retried)
    }
}

/// `message` when its role is `user` or `assistant` (or absent); `None` for any other role.
fn conversation_message<'de, D>(d: D) -> Result<Option<Message>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => match v.get("role").and_then(|r| r.as_str()) {
            Some("user" | "assistant") | None => serde_json::from_value(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
            Some(_) => Ok(None),
        },
    }
}
