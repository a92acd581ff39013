//! The Messages API request body, encoded from a [`Request`] without copying the history.
//!
//! Cache breakpoints (`cache_control: {"type": "ephemeral"}`), per context.md section 9: on each
//! system block flagged `cache` (the caller flags the last static and the last dynamic block),
//! and on the last block of the newest message that can carry one (not thinking), moved forward
//! with every request. The API allows 4: when more are asked for, the earliest system ones go.
//!
//! What the API would refuse is left out rather than sent: empty text blocks, thinking without
//! its signature (a cut stream's), blocks of kinds we do not model, messages left empty. An
//! image whose bytes we keep is sent as the API's `image` block (`source.type: "base64"`); one
//! kept as a placeholder is a sentence telling the model one was there. A request carries at
//! most [`MAX_REQUEST_IMAGES`] images and [`MAX_REQUEST_IMAGE_BYTES`] of their base64 (the API
//! takes 100 images and 32 MB a request): the newest go whole, older ones as the sentence, so a
//! long session with many screenshots never builds a request the API refuses. A tool call whose
//! input was not valid JSON is sent with `{}` (its result says what went wrong).
//!
//! Context editing (compaction tier 2) is `context_management.edits`: `clear_thinking_20251015`
//! first (the API wants it before the others), then `clear_tool_uses_20250919`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::conversation::{Block, Image, Message, ResultPart, Role};
use crate::llm::{ContextManagement, KeepThinking, Request};

/// The API's limit on cache breakpoints per request.
const MAX_BREAKPOINTS: usize = 4;

/// Images a request carries whole (the API's limit is 100).
pub const MAX_REQUEST_IMAGES: usize = 100;

/// Base64 bytes of images a request carries whole (the API's request limit is 32 MB; the rest
/// is left for the text).
pub const MAX_REQUEST_IMAGE_BYTES: usize = 20 * 1024 * 1024;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemText<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_management: Option<WireContextManagement<'a>>,
    stream: bool,
}

#[derive(Serialize)]
struct WireContextManagement<'a> {
    edits: Vec<Edit<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum Edit<'a> {
    #[serde(rename = "clear_thinking_20251015")]
    ClearThinking { keep: Value },
    #[serde(rename = "clear_tool_uses_20250919")]
    ClearToolUses {
        trigger: Amount,
        keep: Amount,
        #[serde(skip_serializing_if = "Option::is_none")]
        clear_at_least: Option<Amount>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        exclude_tools: &'a [String],
    },
}

/// `{"type": "input_tokens", "value": 100000}` and the like.
#[derive(Serialize)]
struct Amount {
    #[serde(rename = "type")]
    kind: &'static str,
    value: u64,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct SystemText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Schema<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
}

/// A tool's input schema; a deferred tool's is written with its `type` first, then its other
/// keys (skills-mcp.md section 6: `{"type":"object","properties":…,"required":…,"title":…}`).
struct Schema<'a> {
    value: &'a Value,
    type_first: bool,
}

impl Serialize for Schema<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.value {
            Value::Object(map) if self.type_first => {
                let mut m = s.serialize_map(Some(map.len()))?;
                if let Some(t) = map.get("type") {
                    m.serialize_entry("type", t)?;
                }
                for (k, v) in map.iter().filter(|(k, _)| *k != "type") {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

#[derive(Serialize)]
struct ThinkingParam {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<ResultText<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// `{"type": "base64", "media_type": …, "data": …}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl WireBlock<'_> {
    fn set_cache(&mut self) -> bool {
        match self {
            WireBlock::Text { cache_control, .. }
            | WireBlock::ToolUse { cache_control, .. }
            | WireBlock::ToolResult { cache_control, .. }
            | WireBlock::Image { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
            WireBlock::Thinking { .. } | WireBlock::RedactedThinking { .. } => false,
        }
    }
}

/// A part of a tool result: text, or a deferred tool's reference (ToolSearch).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultText<'a> {
    Text { text: Cow<'a, str> },
    Image { source: ImageSource<'a> },
    ToolReference { tool_name: &'a str },
}

/// Which images a request sends whole: the newest, within [`MAX_REQUEST_IMAGES`] and
/// [`MAX_REQUEST_IMAGE_BYTES`]. Counts down the older images kept as placeholders.
struct ImageBudget {
    /// Kept images (in history order) still to be sent as placeholders.
    skip: usize,
}

impl ImageBudget {
    fn new(messages: &[Message]) -> ImageBudget {
        let kept: Vec<usize> = messages
            .iter()
            .flat_map(|m| m.content.iter())
            .flat_map(|b| -> Box<dyn Iterator<Item = &Image> + '_> {
                match b {
                    Block::Image(i) => Box::new(std::iter::once(i)),
                    Block::ToolResult(r) => Box::new(r.content.iter().filter_map(|p| match p {
                        ResultPart::Image(i) => Some(i),
                        _ => None,
                    })),
                    _ => Box::new(std::iter::empty()),
                }
            })
            .filter_map(|i| i.data.as_ref().map(|d| d.len()))
            .collect();
        let (mut count, mut bytes) = (0usize, 0usize);
        let mut whole = 0;
        for len in kept.iter().rev() {
            if count + 1 > MAX_REQUEST_IMAGES || bytes + len > MAX_REQUEST_IMAGE_BYTES {
                break;
            }
            count += 1;
            bytes += len;
            whole += 1;
        }
        ImageBudget {
            skip: kept.len() - whole,
        }
    }

    /// The image's data when it goes whole.
    fn take<'a>(&mut self, i: &'a Image) -> Option<&'a str> {
        let data = i.data.as_deref()?;
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        Some(data)
    }
}

/// The JSON body of a streaming request.
pub fn encode(request: &Request<'_>) -> Vec<u8> {
    let flagged = request
        .system
        .iter()
        .filter(|b| b.cache && !b.text.is_empty())
        .count();
    let allowed = MAX_BREAKPOINTS - usize::from(request.cache_last_message);
    let mut skip = flagged.saturating_sub(allowed);
    let system = request
        .system
        .iter()
        .filter(|b| !b.text.is_empty())
        .map(|b| {
            let cache = b.cache && {
                if skip > 0 {
                    skip -= 1;
                    false
                } else {
                    true
                }
            };
            SystemText {
                kind: "text",
                text: &b.text,
                cache_control: cache.then_some(EPHEMERAL),
            }
        })
        .collect();
    let mut images = ImageBudget::new(request.messages);
    let mut messages: Vec<WireMessage<'_>> = request
        .messages
        .iter()
        .filter_map(|m| message(m, &mut images))
        .collect();
    if request.cache_last_message
        && let Some(last) = messages.last_mut()
    {
        for b in last.content.iter_mut().rev() {
            if b.set_cache() {
                break;
            }
        }
    }
    let body = Body {
        model: &request.model,
        max_tokens: request.max_tokens,
        system,
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| Tool {
                name: &t.name,
                description: &t.description,
                input_schema: Schema {
                    value: &t.input_schema,
                    type_first: t.defer_loading,
                },
                defer_loading: t.defer_loading,
            })
            .collect(),
        thinking: request.thinking.map(|budget_tokens| ThinkingParam {
            kind: "enabled",
            budget_tokens,
        }),
        temperature: request.temperature,
        context_management: request.context_management.as_ref().map(context_management),
        stream: true,
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

fn context_management(c: &ContextManagement) -> WireContextManagement<'_> {
    let mut edits = Vec::new();
    if let Some(keep) = c.thinking {
        edits.push(Edit::ClearThinking {
            keep: match keep {
                KeepThinking::All => Value::String("all".into()),
                KeepThinking::Turns(n) => {
                    serde_json::json!({"type": "thinking_turns", "value": n})
                }
            },
        });
    }
    if let Some(t) = &c.clear_tool_uses {
        edits.push(Edit::ClearToolUses {
            trigger: Amount {
                kind: "input_tokens",
                value: t.trigger_input_tokens,
            },
            keep: Amount {
                kind: "tool_uses",
                value: u64::from(t.keep_tool_uses),
            },
            clear_at_least: t.clear_at_least_input_tokens.map(|value| Amount {
                kind: "input_tokens",
                value,
            }),
            exclude_tools: &t.exclude_tools,
        });
    }
    WireContextManagement { edits }
}

fn message<'a>(m: &'a Message, images: &mut ImageBudget) -> Option<WireMessage<'a>> {
    let content: Vec<WireBlock<'a>> = m.content.iter().filter_map(|b| block(b, images)).collect();
    if content.is_empty() {
        return None;
    }
    Some(WireMessage {
        role: match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        },
        content,
    })
}

fn block<'a>(b: &'a Block, images: &mut ImageBudget) -> Option<WireBlock<'a>> {
    Some(match b {
        Block::Text(t) if t.text.is_empty() => return None,
        Block::Text(t) => WireBlock::Text {
            text: Cow::Borrowed(&t.text),
            cache_control: None,
        },
        Block::ToolUse(t) => WireBlock::ToolUse {
            id: &t.id,
            name: &t.name,
            input: if t.input.is_object() {
                Cow::Borrowed(&t.input)
            } else {
                Cow::Owned(Value::Object(Default::default()))
            },
            cache_control: None,
        },
        Block::ToolResult(r) => WireBlock::ToolResult {
            tool_use_id: &r.tool_use_id,
            content: r
                .content
                .iter()
                .filter_map(|p| match p {
                    ResultPart::Text { text } if text.is_empty() => None,
                    ResultPart::Text { text } => Some(ResultText::Text {
                        text: Cow::Borrowed(text),
                    }),
                    ResultPart::Image(i) => Some(match images.take(i) {
                        Some(data) => ResultText::Image {
                            source: ImageSource {
                                kind: "base64",
                                media_type: &i.media_type,
                                data,
                            },
                        },
                        None => ResultText::Text {
                            text: Cow::Owned(image_placeholder(i)),
                        },
                    }),
                    ResultPart::ToolReference { tool_name } => {
                        Some(ResultText::ToolReference { tool_name })
                    }
                    ResultPart::Unsupported => None,
                })
                .collect(),
            is_error: r.is_error,
            cache_control: None,
        },
        Block::Thinking(t) if t.signature.is_empty() => return None,
        Block::Thinking(t) => WireBlock::Thinking {
            thinking: &t.thinking,
            signature: &t.signature,
        },
        Block::RedactedThinking { data } => WireBlock::RedactedThinking { data },
        Block::Image(i) => match images.take(i) {
            Some(data) => WireBlock::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type: &i.media_type,
                    data,
                },
                cache_control: None,
            },
            None => WireBlock::Text {
                text: Cow::Owned(image_placeholder(i)),
                cache_control: None,
            },
        },
        Block::Unsupported => return None,
    })
}

/// What the model is told in place of an image we did not keep, or one left out of this
/// request for room.
fn image_placeholder(i: &Image) -> String {
    if i.data.is_some() {
        return format!(
            "[An image ({}, {} KB) was here; it was left out of this request to make room for newer images.]",
            i.media_type,
            i.size.unwrap_or(0).div_ceil(1024)
        );
    }
    match i.size {
        Some(n) => format!(
            "[An image ({}, {} KB) was here; its content is not available.]",
            i.media_type,
            n.div_ceil(1024)
        ),
        None => format!(
            "[An image ({}) was here; its content is not available.]",
            i.media_type
        ),
    }
}
