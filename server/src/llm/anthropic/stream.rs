//! The Messages API's event stream, decoded: SSE frames in, [`Decoded`] items out.
//!
//! Events: `message_start` (id, model, input usage), `content_block_start` (text, thinking,
//! redacted_thinking, tool_use; other kinds are announced as unsupported), `content_block_delta`
//! (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`; other deltas, such as
//! citations, are skipped), `content_block_stop`, `message_delta` (stop reason, cumulative usage),
//! `message_stop`, `ping`, `error`. Unknown event types are skipped, as the API's versioning
//! policy asks. Context editing's `context_management.applied_edits` (on `message_delta`, or on
//! `message_start`'s message) becomes [`Event::ContextEdited`]. The JSON's `type` decides, not the SSE `event:` line (they agree in practice).

use serde::Deserialize;

use crate::conversation::{StopReason, Usage};
use crate::llm::http::{Decoded, StreamDecoder};
use crate::llm::sse::{SseDecoder, SseEvent};
use crate::llm::{AppliedEdit, BlockKind, Event};

/// Decodes one response.
#[derive(Debug, Default)]
pub struct Decoder {
    sse: SseDecoder,
    frames: Vec<SseEvent>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default)]
        context_management: Option<ContextManagement>,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    context_management: Option<ContextManagement>,
}

/// `context_management` of a response: the edits the API applied.
#[derive(Deserialize)]
struct ContextManagement {
    #[serde(default)]
    applied_edits: Vec<WireAppliedEdit>,
}

#[derive(Deserialize)]
struct WireAppliedEdit {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    cleared_tool_uses: Option<u64>,
    #[serde(default)]
    cleared_thinking_turns: Option<u64>,
    #[serde(default)]
    cleared_input_tokens: Option<u64>,
}

impl ContextManagement {
    /// The event, when any edit was applied.
    fn event(self) -> Option<Event> {
        if self.applied_edits.is_empty() {
            return None;
        }
        Some(Event::ContextEdited {
            edits: self
                .applied_edits
                .into_iter()
                .map(|e| AppliedEdit {
                    kind: e.kind,
                    cleared_tool_uses: e.cleared_tool_uses.unwrap_or(0),
                    cleared_thinking_turns: e.cleared_thinking_turns.unwrap_or(0),
                    cleared_input_tokens: e.cleared_input_tokens.unwrap_or(0),
                })
                .collect(),
        })
    }
}

/// A block's start, read loosely so an unknown kind keeps its name.
#[derive(Deserialize)]
struct StartBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<StopReason>,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

impl StreamDecoder for Decoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Decoded>) -> Result<(), String> {
        self.sse
            .push(bytes, &mut self.frames)
            .map_err(|e| e.to_string())?;
        for frame in self.frames.drain(..) {
            decode(&frame, out)?;
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<Decoded>) -> Result<(), String> {
        // An unfinished event is dropped; the missing `message_stop` tells the caller the
        // stream was cut.
        self.sse.finish();
        Ok(())
    }
}

/// One SSE frame's items.
pub fn decode(frame: &SseEvent, out: &mut Vec<Decoded>) -> Result<(), String> {
    let wire: Wire = serde_json::from_str(&frame.data)
        .map_err(|e| format!("event `{}` is not valid: {e}", frame.event))?;
    match wire {
        Wire::MessageStart { message } => {
            out.push(Decoded::Event(Event::MessageStart {
                id: message.id,
                model: message.model,
                usage: message.usage,
            }));
            if let Some(e) = message
                .context_management
                .and_then(ContextManagement::event)
            {
                out.push(Decoded::Event(e));
            }
        }
        Wire::ContentBlockStart {
            index,
            content_block: b,
        } => {
            let (kind, initial) = match b.kind.as_str() {
                "text" => (BlockKind::Text, b.text.filter(|t| !t.is_empty())),
                "thinking" => (BlockKind::Thinking, b.thinking.filter(|t| !t.is_empty())),
                "redacted_thinking" => (
                    BlockKind::RedactedThinking {
                        data: b.data.unwrap_or_default(),
                    },
                    None,
                ),
                "tool_use" => (
                    BlockKind::ToolUse {
                        id: b.id.unwrap_or_default(),
                        name: b.name.unwrap_or_default(),
                    },
                    None,
                ),
                _ => (BlockKind::Unsupported { kind: b.kind }, None),
            };
            let thinking = kind == BlockKind::Thinking;
            out.push(Decoded::Event(Event::BlockStart { index, kind }));
            if let Some(text) = initial {
                out.push(Decoded::Event(if thinking {
                    Event::ThinkingDelta { index, text }
                } else {
                    Event::TextDelta { index, text }
                }));
            }
        }
        Wire::ContentBlockDelta { index, delta } => {
            let event = match delta {
                Delta::Text { text } => Event::TextDelta { index, text },
                Delta::InputJson { partial_json } => Event::ToolInputDelta {
                    index,
                    json: partial_json,
                },
                Delta::Thinking { thinking } => Event::ThinkingDelta {
                    index,
                    text: thinking,
                },
                Delta::Signature { signature } => Event::SignatureDelta { index, signature },
                Delta::Unknown => return Ok(()),
            };
            out.push(Decoded::Event(event));
        }
        Wire::ContentBlockStop { index } => out.push(Decoded::Event(Event::BlockStop { index })),
        Wire::MessageDelta {
            delta,
            usage,
            context_management,
        } => {
            out.push(Decoded::Event(Event::MessageDelta {
                stop_reason: delta.stop_reason,
                usage: usage.unwrap_or_default(),
            }));
            if let Some(e) = context_management.and_then(ContextManagement::event) {
                out.push(Decoded::Event(e));
            }
        }
        Wire::MessageStop => out.push(Decoded::Stop),
        Wire::Ping => out.push(Decoded::Event(Event::Ping)),
        Wire::Error { error } => out.push(Decoded::Error {
            api_type: error.kind,
            message: error.message,
        }),
        Wire::Unknown => {}
    }
    Ok(())
}
