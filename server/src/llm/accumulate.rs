//! Folds a turn's events into the assistant [`Message`]: the whole one at the end, or what had
//! arrived when a stream is cut or cancelled.

use serde_json::Value;

use super::{BlockKind, Event};
use crate::conversation::{Block, Message, Role, StopReason, Thinking, ToolUse, Usage};

/// The answer being received.
#[derive(Debug, Default)]
pub struct Accumulator {
    id: Option<String>,
    model: Option<String>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    blocks: Vec<Slot>,
    /// What the answer holds so far, in bytes (content, and a block's own weight): what the
    /// stream's cap is checked against.
    bytes: usize,
}

/// What a block counts for in [`Accumulator::bytes`] besides its content.
const BLOCK_WEIGHT: usize = 16;

#[derive(Debug)]
enum Slot {
    /// An index no event named (blocks arrive in order; this only fills a gap).
    Empty,
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Unsupported,
}

impl Accumulator {
    pub fn new() -> Accumulator {
        Accumulator::default()
    }

    /// Takes one event into account. Events that carry no content (pings, retries) change nothing.
    pub fn apply(&mut self, event: &Event) {
        self.bytes += match event {
            Event::TextDelta { text, .. } | Event::ThinkingDelta { text, .. } => text.len(),
            Event::SignatureDelta { signature, .. } => signature.len(),
            Event::ToolInputDelta { json, .. } => json.len(),
            Event::BlockStart { kind, .. } => match kind {
                BlockKind::RedactedThinking { data } => data.len(),
                BlockKind::ToolUse { id, name } => id.len() + name.len(),
                _ => 0,
            },
            _ => 0,
        };
        match event {
            Event::MessageStart { id, model, usage } => {
                self.id = Some(id.clone());
                self.model = Some(model.clone());
                self.usage = *usage;
            }
            Event::BlockStart { index, kind } => {
                *self.slot(*index) = match kind {
                    BlockKind::Text => Slot::Text(String::new()),
                    BlockKind::Thinking => Slot::Thinking {
                        text: String::new(),
                        signature: String::new(),
                    },
                    BlockKind::RedactedThinking { data } => Slot::Redacted(data.clone()),
                    BlockKind::ToolUse { id, name } => Slot::Tool {
                        id: id.clone(),
                        name: name.clone(),
                        json: String::new(),
                    },
                    BlockKind::Unsupported { .. } => Slot::Unsupported,
                };
            }
            Event::TextDelta { index, text } => match self.slot(*index) {
                Slot::Text(t) => t.push_str(text),
                s @ Slot::Empty => *s = Slot::Text(text.clone()),
                _ => {}
            },
            Event::ThinkingDelta { index, text } => {
                if let Slot::Thinking { text: t, .. } = self.slot(*index) {
                    t.push_str(text);
                }
            }
            Event::SignatureDelta { index, signature } => {
                if let Slot::Thinking { signature: s, .. } = self.slot(*index) {
                    s.push_str(signature);
                }
            }
            Event::ToolInputDelta { index, json } => {
                if let Slot::Tool { json: j, .. } = self.slot(*index) {
                    j.push_str(json);
                }
            }
            Event::MessageDelta { stop_reason, usage } => {
                if stop_reason.is_some() {
                    self.stop_reason = stop_reason.clone();
                }
                merge_usage(&mut self.usage, usage);
            }
            Event::BlockStop { .. }
            | Event::ContextEdited { .. }
            | Event::Ping
            | Event::Retrying { .. }
            | Event::Restarted { .. }
            | Event::Done(_) => {}
        }
    }

    /// Whether any content arrived (a message start alone is not content).
    pub fn has_content(&self) -> bool {
        self.blocks.iter().any(|s| match s {
            Slot::Empty | Slot::Unsupported => false,
            Slot::Text(t) => !t.is_empty(),
            Slot::Thinking { text, .. } => !text.is_empty(),
            Slot::Redacted(_) | Slot::Tool { .. } => true,
        })
    }

    /// The message as it stands: complete after the stream's end, partial before it (then
    /// `stop_reason` is `None` unless the API had sent it).
    pub fn message(&self) -> Message {
        let content = self
            .blocks
            .iter()
            .filter_map(|s| match s {
                Slot::Empty => None,
                Slot::Text(t) => Some(Block::text(t.clone())),
                Slot::Thinking { text, signature } => Some(Block::Thinking(Thinking {
                    thinking: text.clone(),
                    signature: signature.clone(),
                })),
                Slot::Redacted(data) => Some(Block::RedactedThinking { data: data.clone() }),
                Slot::Tool { id, name, json } => Some(Block::ToolUse(ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: tool_input(json),
                })),
                Slot::Unsupported => Some(Block::Unsupported),
            })
            .collect();
        Message {
            role: Role::Assistant,
            content,
            id: self.id.clone(),
            model: self.model.clone(),
            stop_reason: self.stop_reason.clone(),
            usage: Some(self.usage),
        }
    }

    /// Forgets everything (a retry starts a new answer).
    /// The answer's size so far (see the field): a stream stops when it passes its cap.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn reset(&mut self) {
        *self = Accumulator::default();
    }

    fn slot(&mut self, index: usize) -> &mut Slot {
        // An index far beyond the blocks seen is a broken stream; cap the growth.
        let index = index.min(self.blocks.len() + 64);
        while self.blocks.len() <= index {
            self.blocks.push(Slot::Empty);
            self.bytes += BLOCK_WEIGHT;
        }
        &mut self.blocks[index]
    }
}

/// A tool call's input: `{}` when the model sent no JSON (a call without arguments), the parsed
/// value when it is valid, else the raw text as a JSON string (nothing is lost; the tool layer
/// answers with an error).
fn tool_input(json: &str) -> Value {
    if json.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_string()))
}

/// `message_delta` usage is cumulative and may omit fields: a non-zero value wins.
fn merge_usage(into: &mut Usage, from: &Usage) {
    if from.input_tokens != 0 {
        into.input_tokens = from.input_tokens;
    }
    if from.output_tokens != 0 {
        into.output_tokens = from.output_tokens;
    }
    if from.cache_creation_input_tokens != 0 {
        into.cache_creation_input_tokens = from.cache_creation_input_tokens;
    }
    if from.cache_read_input_tokens != 0 {
        into.cache_read_input_tokens = from.cache_read_input_tokens;
    }
}
