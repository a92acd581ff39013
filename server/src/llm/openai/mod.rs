//! OpenAI-compatible chat completions (`POST {base}/chat/completions`, `stream: true`), for
//! local models (llama.cpp, Ollama, vLLM, LM Studio) and gateways that speak it.
//!
//! The base URL includes the version path, as OpenAI's own clients take it
//! (`http://localhost:11434/v1`). A key is optional (local servers need none); when given it is
//! sent as `Authorization: Bearer`.
//!
//! The conversation maps onto the chat format: system blocks become one `system` message; a user
//! message's tool results become `tool` messages (first, right after the assistant's
//! `tool_calls`), its text one `user` message; an assistant message's text becomes `content`,
//! its tool calls `tool_calls` (arguments as a JSON string). A `ToolSearch` result's
//! `tool_reference` parts become the line `Loaded the tool <name>`, and the tools it loaded are
//! sent as plain function tools (the format has no deferred tools). Thinking is not sent (the format has
//! no place for it); cache breakpoints do not exist here. In the stream, `content` deltas are
//! text, `reasoning_content` (or `reasoning`) deltas are thinking, `tool_calls` deltas build tool
//! calls by their index; `finish_reason` maps to a stop reason; `usage` (asked for with
//! `stream_options.include_usage`) maps `prompt_tokens` (minus cached ones) to input tokens and
//! `prompt_tokens_details.cached_tokens` to cache reads; `[DONE]` ends the answer.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http::{Decoded, Dialect, Header, HttpProvider, StreamDecoder};
use super::sse::{SseDecoder, SseEvent};
use super::{BlockKind, Error, Event, Proxy, Request, RetryPolicy, Secret};
use crate::conversation::{Block, Message, ResultPart, Role, StopReason, Usage};

/// Where the server is and the key, if it needs one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Up to and including the version path, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub proxy: Proxy,
}

/// The chat completions dialect.
#[derive(Debug)]
pub struct OpenAi {
    url: String,
    key: Option<Secret>,
}

impl OpenAi {
    pub fn new(config: Config) -> Result<OpenAi, Error> {
        let url = reqwest::Url::parse(config.base_url.trim()).map_err(|e| {
            Error::config(format!("the OpenAI-compatible base URL is not a URL ({e})"))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::config(
                "the OpenAI-compatible base URL must start with http:// or https://",
            ));
        }
        Ok(OpenAi {
            url: format!("{}/chat/completions", url.as_str().trim_end_matches('/')),
            key: config.api_key.filter(|k| !k.is_empty()),
        })
    }
}

/// A provider for an OpenAI-compatible server.
pub fn provider(config: Config, policy: RetryPolicy) -> Result<HttpProvider, Error> {
    let proxy = config.proxy.clone();
    HttpProvider::new(OpenAi::new(config)?, policy, &proxy)
}

impl Dialect for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn headers(&self, _request: &Request<'_>) -> Vec<Header> {
        let mut out = vec![
            Header {
                name: "content-type",
                value: "application/json".to_string(),
                sensitive: false,
            },
            Header {
                name: "accept",
                value: "text/event-stream".to_string(),
                sensitive: false,
            },
        ];
        if let Some(key) = &self.key {
            out.push(Header {
                name: "authorization",
                value: format!("Bearer {}", key.expose()),
                sensitive: true,
            });
        }
        out
    }

    fn body(&self, request: &Request<'_>) -> Vec<u8> {
        encode(request)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(Decoder::default())
    }

    fn error_body(&self, body: &[u8]) -> (Option<String>, Option<String>) {
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(b) => (
                b.error.kind.or(b.error.code.map(|c| c.to_string())),
                b.error.message,
            ),
            Err(_) => (None, None),
        }
    }

    fn secret(&self) -> Option<&Secret> {
        self.key.as_ref()
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorInner,
}

#[derive(Deserialize)]
struct ErrorInner {
    #[serde(default)]
    message: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatMessage {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
}

impl ChatMessage {
    fn text(role: &'static str, content: String) -> ChatMessage {
        ChatMessage {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// The JSON body of a streaming chat completion.
pub fn encode(request: &Request<'_>) -> Vec<u8> {
    let mut messages = Vec::new();
    let system: Vec<&str> = request
        .system
        .iter()
        .map(|b| b.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    if !system.is_empty() {
        messages.push(ChatMessage::text("system", system.join("\n\n")));
    }
    for m in request.messages {
        push_message(m, &mut messages);
    }
    let body = Body {
        model: &request.model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| {
                serde_json::json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect(),
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

fn push_message(m: &Message, out: &mut Vec<ChatMessage>) {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for b in &m.content {
        match b {
            Block::Text(t) if !t.text.is_empty() => text.push(t.text.clone()),
            Block::Image(i) => text.push(format!("[An image ({}) was here; its content is not available.]", i.media_type)),
            Block::ToolResult(r) => {
                let mut content: String = r
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ResultPart::Text { text } => Some(text.clone()),
                        // The format has no references: the loaded tool is named (its
                        // definition is among the request's tools from now on).
                        ResultPart::ToolReference { tool_name } => {
                            Some(format!("Loaded the tool {tool_name}"))
                        }
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                if r.is_error {
                    content = format!("Error: {content}");
                }
                out.push(ChatMessage {
                    role: "tool",
                    content: Some(content),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(r.tool_use_id.clone()),
                });
            }
            Block::ToolUse(t) => calls.push(serde_json::json!({
                "id": t.id, "type": "function",
                "function": {"name": t.name, "arguments": if t.input.is_object() { t.input.to_string() } else { "{}".to_string() }}
            })),
            _ => {}
        }
    }
    match m.role {
        Role::User if !text.is_empty() => out.push(ChatMessage::text("user", text.join("\n\n"))),
        Role::User => {}
        Role::Assistant if text.is_empty() && calls.is_empty() => {}
        Role::Assistant => out.push(ChatMessage {
            role: "assistant",
            content: (!text.is_empty()).then(|| text.join("\n\n")),
            tool_calls: calls,
            tool_call_id: None,
        }),
    }
}

/// Decodes one streamed chat completion.
#[derive(Debug, Default)]
pub struct Decoder {
    sse: SseDecoder,
    frames: Vec<SseEvent>,
    started: bool,
    /// Our block index of the text, of the thinking, of each tool call (by its stream index).
    text: Option<usize>,
    thinking: Option<usize>,
    tools: HashMap<u64, usize>,
    blocks: usize,
    /// Blocks below this index were stopped.
    closed: usize,
    finished: bool,
    done: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<ErrorInner>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl StreamDecoder for Decoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Decoded>) -> Result<(), String> {
        self.sse
            .push(bytes, &mut self.frames)
            .map_err(|e| e.to_string())?;
        let frames = std::mem::take(&mut self.frames);
        for frame in &frames {
            if self.done {
                break;
            }
            self.frame(frame, out)?;
        }
        self.frames = frames;
        self.frames.clear();
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Decoded>) -> Result<(), String> {
        self.sse.finish();
        // Some servers close after the last chunk without `[DONE]`: a finish reason is enough.
        if self.finished && !self.done {
            self.done = true;
            out.push(Decoded::Stop);
        }
        Ok(())
    }
}

impl Decoder {
    fn frame(&mut self, frame: &SseEvent, out: &mut Vec<Decoded>) -> Result<(), String> {
        let data = frame.data.trim();
        if data == "[DONE]" {
            self.close_blocks(out);
            self.done = true;
            out.push(Decoded::Stop);
            return Ok(());
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| format!("chunk is not valid: {e}"))?;
        if let Some(e) = chunk.error {
            out.push(Decoded::Error {
                api_type: e.kind.unwrap_or_else(|| "api_error".to_string()),
                message: e.message.unwrap_or_default(),
            });
            return Ok(());
        }
        if !self.started {
            self.started = true;
            out.push(Decoded::Event(Event::MessageStart {
                id: chunk.id.clone(),
                model: chunk.model.clone(),
                usage: Usage::default(),
            }));
        }
        for choice in chunk.choices {
            let d = choice.delta;
            if let Some(text) = d.reasoning_content.filter(|t| !t.is_empty()) {
                let index = self.open(true, out);
                out.push(Decoded::Event(Event::ThinkingDelta { index, text }));
            }
            if let Some(text) = d.content.filter(|t| !t.is_empty()) {
                let index = self.open(false, out);
                out.push(Decoded::Event(Event::TextDelta { index, text }));
            }
            for call in d.tool_calls {
                let index = match self.tools.get(&call.index) {
                    Some(&i) => i,
                    None => {
                        let i = self.blocks;
                        self.blocks += 1;
                        self.tools.insert(call.index, i);
                        let name = call
                            .function
                            .as_ref()
                            .and_then(|f| f.name.clone())
                            .unwrap_or_default();
                        out.push(Decoded::Event(Event::BlockStart {
                            index: i,
                            kind: BlockKind::ToolUse {
                                id: call
                                    .id
                                    .clone()
                                    .unwrap_or_else(|| format!("call_{}", call.index)),
                                name,
                            },
                        }));
                        i
                    }
                };
                if let Some(json) = call
                    .function
                    .and_then(|f| f.arguments)
                    .filter(|a| !a.is_empty())
                {
                    out.push(Decoded::Event(Event::ToolInputDelta { index, json }));
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finished = true;
                self.close_blocks(out);
                out.push(Decoded::Event(Event::MessageDelta {
                    stop_reason: Some(match reason.as_str() {
                        "stop" => StopReason::EndTurn,
                        "tool_calls" | "function_call" => StopReason::ToolUse,
                        "length" => StopReason::MaxTokens,
                        "content_filter" => StopReason::Refusal,
                        other => StopReason::Other(other.to_string()),
                    }),
                    usage: Usage::default(),
                }));
            }
        }
        if let Some(u) = chunk.usage {
            let cached = u.prompt_tokens_details.map_or(0, |d| d.cached_tokens);
            out.push(Decoded::Event(Event::MessageDelta {
                stop_reason: None,
                usage: Usage {
                    input_tokens: u.prompt_tokens.saturating_sub(cached),
                    output_tokens: u.completion_tokens,
                    cache_creation_input_tokens: 0,
                    cache_read_input_tokens: cached,
                },
            }));
        }
        Ok(())
    }

    /// The text or thinking block, started on first use.
    fn open(&mut self, thinking: bool, out: &mut Vec<Decoded>) -> usize {
        let slot = if thinking { self.thinking } else { self.text };
        if let Some(i) = slot {
            return i;
        }
        let i = self.blocks;
        self.blocks += 1;
        if thinking {
            self.thinking = Some(i);
        } else {
            self.text = Some(i);
        }
        let kind = if thinking {
            BlockKind::Thinking
        } else {
            BlockKind::Text
        };
        out.push(Decoded::Event(Event::BlockStart { index: i, kind }));
        i
    }

    /// Stops every block started since the last call.
    fn close_blocks(&mut self, out: &mut Vec<Decoded>) {
        for index in self.closed..self.blocks {
            out.push(Decoded::Event(Event::BlockStop { index }));
        }
        self.closed = self.blocks;
        self.text = None;
        self.thinking = None;
        self.tools.clear();
    }
}

#[cfg(test)]
mod tests;
