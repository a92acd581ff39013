//! The model client: one turn of a model, streamed as typed events, behind a [`Provider`] trait.
//!
//! This is the only module that knows a model API's wire types. Above it, a turn is a
//! [`Request`] of [`conversation`](crate::conversation) messages in, and a stream of [`Event`]s
//! out, ending with [`Event::Done`] (the whole assistant [`Message`]) or an [`Error`].
//!
//! - [`HttpProvider`] is the one implementation over HTTP: it sends, retries (429, 529, 5xx,
//!   connection faults, cut or stalled streams; exponential backoff with jitter, `retry-after`
//!   honoured; [`RetryPolicy`]), detects a stalled stream with an idle timeout, and stops at once
//!   when the caller's [`CancellationToken`] fires or the stream is dropped. What differs between
//!   APIs (URL, headers, body, stream decoding, error bodies) is a [`Dialect`]: [`anthropic`]
//!   (the Messages API) and [`openai`] (`/v1/chat/completions`, for local models).
//! - A stream cut mid-way is retried from the same request; what had arrived is reported first
//!   as [`Event::Restarted`] with the partial message, so it can be kept (as partial) rather
//!   than lost.
//! - Credentials are [`Secret`]s: never printed, scrubbed from any error text.
//! - The client logs nothing: everything it has to say is an event or the error.
//!
//! [`sse`] is the pure server-sent-events decoder; [`Accumulator`] folds events into a message.

mod accumulate;
pub mod anthropic;
mod http;
pub mod openai;
mod proxy;
mod retry;
pub mod secret;
pub mod sse;

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use serde_json::Value;

pub use accumulate::Accumulator;
pub use http::{Decoded, Dialect, Header, HttpProvider, StreamDecoder, answer_cap};
pub use proxy::Proxy;
pub use retry::RetryPolicy;
pub use secret::Secret;
pub use tokio_util::sync::CancellationToken;

use crate::conversation::{Message, StopReason, Usage};

/// One request for a model turn, provider-neutral.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub model: String,
    pub max_tokens: u32,
    /// System prompt blocks in order.
    pub system: Vec<SystemBlock>,
    /// The conversation so far; the last message is the user's (or tool results).
    pub messages: &'a [Message],
    pub tools: Vec<ToolSpec>,
    /// Extended thinking with this token budget.
    pub thinking: Option<u32>,
    pub temperature: Option<f32>,
    /// Put a cache breakpoint on the last content block of the newest message (context.md
    /// section 9). Providers without prompt caching ignore it.
    pub cache_last_message: bool,
    /// Beta features in use (Anthropic's `anthropic-beta` header); empty when none.
    pub betas: Vec<String>,
    /// API-native context editing (compaction tier 2). Anthropic only: the dialect sends it as
    /// `context_management` under its beta; other providers ignore it.
    pub context_management: Option<ContextManagement>,
}

impl<'a> Request<'a> {
    /// A request with no system prompt, tools, thinking or betas, and the message breakpoint on.
    pub fn new(model: impl Into<String>, max_tokens: u32, messages: &'a [Message]) -> Request<'a> {
        Request {
            model: model.into(),
            max_tokens,
            system: Vec::new(),
            messages,
            tools: Vec::new(),
            thinking: None,
            temperature: None,
            cache_last_message: true,
            betas: Vec::new(),
            context_management: None,
        }
    }
}

/// Edits the API applies to the prompt before the model sees it, while the client keeps the
/// whole history (Anthropic's context editing). Built by `compact`; encoded by the dialect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextManagement {
    /// What to do with thinking blocks of earlier turns (when thinking is on).
    pub thinking: Option<KeepThinking>,
    /// Clear the oldest tool results once the prompt passes a size.
    pub clear_tool_uses: Option<ClearToolUses>,
}

/// Which thinking blocks of earlier turns the API keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepThinking {
    /// All of them: the cached prefix stays valid.
    All,
    /// Those of the newest `n` assistant turns.
    Turns(u32),
}

/// Server-side clearing of old tool results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClearToolUses {
    /// Clear once the prompt's input tokens pass this.
    pub trigger_input_tokens: u64,
    /// The newest tool uses kept whole.
    pub keep_tool_uses: u32,
    /// Clear only if at least this many tokens go (a clearing breaks the cached prefix).
    pub clear_at_least_input_tokens: Option<u64>,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
}

/// An edit the API reports having applied to a request (`applied_edits`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppliedEdit {
    /// The edit's type as the API names it (`clear_tool_uses_20250919`, …).
    pub kind: String,
    pub cleared_tool_uses: u64,
    pub cleared_thinking_turns: u64,
    /// Input tokens the edit removed: the prompt the model saw was this much smaller than the
    /// history sent.
    pub cleared_input_tokens: u64,
}

/// A block of the system prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemBlock {
    pub text: String,
    /// A cache breakpoint after this block (the last static block, the last dynamic block).
    pub cache: bool,
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// A deferred tool loaded by `ToolSearch` (an MCP server's): Anthropic's dialect sends it
    /// with `"defer_loading": true` and its schema's `type` first, as the reference CLI does;
    /// the OpenAI-compatible dialect sends it as a plain tool.
    pub defer_loading: bool,
}

/// What a block is, announced when it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    Thinking,
    /// Encrypted thinking, complete at start.
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// A block kind this client does not model (server tools, citations, …).
    Unsupported {
        kind: String,
    },
}

/// What a model stream says, in order. Deltas carry the block `index` they extend.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The answer began (after any retries): its id, model and the input side of usage.
    MessageStart {
        id: String,
        model: String,
        usage: Usage,
    },
    BlockStart {
        index: usize,
        kind: BlockKind,
    },
    TextDelta {
        index: usize,
        text: String,
    },
    ThinkingDelta {
        index: usize,
        text: String,
    },
    SignatureDelta {
        index: usize,
        signature: String,
    },
    /// A piece of a tool call's JSON input.
    ToolInputDelta {
        index: usize,
        json: String,
    },
    BlockStop {
        index: usize,
    },
    /// Stop reason and usage, near the end.
    MessageDelta {
        stop_reason: Option<StopReason>,
        usage: Usage,
    },
    /// The API edited the prompt before the model saw it (context editing, compaction tier 2):
    /// `usage` counts the edited prompt, not the history sent.
    ContextEdited {
        edits: Vec<AppliedEdit>,
    },
    /// Keep-alive.
    Ping,
    /// An attempt failed and another follows after `delay`. `attempt` is the one about to start
    /// (2 for the first retry) of at most `of`.
    Retrying {
        attempt: u32,
        of: u32,
        delay: Duration,
        cause: String,
    },
    /// The stream was cut mid-answer and is being retried from the request: `partial` is what
    /// had arrived. Deltas seen so far belong to it; the retry's events start a new answer.
    /// Keep it (as a partial answer), don't send it to a model.
    Restarted {
        partial: Message,
        cause: String,
    },
    /// The answer is complete: the whole assistant message with id, model, stop reason and
    /// usage. Always the last item of a successful stream.
    Done(Message),
}

/// A stream of one model turn.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>>;

/// A model behind some API.
pub trait Provider: Send + Sync {
    /// A short name for messages (`anthropic`, `openai`).
    fn name(&self) -> &str;

    /// Starts a turn. The request is encoded before this returns (the stream borrows nothing).
    /// The stream ends after [`Event::Done`] or one `Err`. Cancelling `cancel`, or dropping the
    /// stream, aborts the connection at once; on cancel the stream's last item is an
    /// [`ErrorKind::Cancelled`] error carrying what had arrived.
    fn stream(&self, request: &Request<'_>, cancel: CancellationToken) -> EventStream;
}

/// Why a turn failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The caller cancelled.
    Cancelled,
    /// The client is not configured (no key, a bad URL).
    Config,
    /// The API refused the request (a 4xx other than 408, 409 and 429): bad key, bad request,
    /// unknown model, request too large. Not retried.
    Rejected,
    /// 429, still after every try (or asking for a longer wait than we allow).
    RateLimited,
    /// 529 or an `overloaded_error`, still after every try.
    Overloaded,
    /// A 5xx, still after every try.
    Server,
    /// The connection failed or was cut, still after every try.
    Connection,
    /// No byte arrived for the idle timeout, still after every try.
    Stalled,
    /// The response was not a stream we understand (malformed events, wrong content type).
    Protocol,
}

/// A failed turn, with the API's own words when it gave any.
#[derive(Clone, Debug)]
pub struct Error {
    pub kind: ErrorKind,
    /// What happened, for a person: the API's message when there is one. Never holds a
    /// credential (scrubbed).
    pub message: String,
    /// HTTP status of the last response, when there was one.
    pub status: Option<u16>,
    /// The API's error type (`invalid_request_error`, …) when it said.
    pub api_type: Option<String>,
    /// The `request-id` of the last response, for support.
    pub request_id: Option<String>,
    /// Attempts made.
    pub attempts: u32,
    /// What had arrived of the answer when it failed (the last attempt's), if anything.
    pub partial: Option<Box<Message>>,
}

impl Error {
    pub fn config(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Config,
            message: message.into(),
            status: None,
            api_type: None,
            request_id: None,
            attempts: 0,
            partial: None,
        }
    }

    /// The credential was refused (401, 403).
    pub fn is_auth(&self) -> bool {
        matches!(self.status, Some(401 | 403))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ErrorKind::Cancelled => return f.write_str("cancelled"),
            ErrorKind::Config => return f.write_str(&self.message),
            ErrorKind::Rejected => "the model API refused the request",
            ErrorKind::RateLimited => "the model API is rate limiting",
            ErrorKind::Overloaded => "the model API is overloaded",
            ErrorKind::Server => "the model API failed",
            ErrorKind::Connection => "cannot reach the model API",
            ErrorKind::Stalled => "the model API stopped responding",
            ErrorKind::Protocol => "the model API sent a response we cannot read",
        };
        f.write_str(what)?;
        match (self.status, &self.api_type) {
            (Some(s), Some(t)) => write!(f, " ({s} {t})")?,
            (Some(s), None) => write!(f, " ({s})")?,
            (None, Some(t)) => write!(f, " ({t})")?,
            (None, None) => {}
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if self.attempts > 1 {
            write!(f, " (after {} tries)", self.attempts)?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request {id}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests;
