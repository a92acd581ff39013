//! Token estimates and the session's count (context.md section 10).
//!
//! - An estimate is `ceil(bytes / 4)` for text; an image counts what the API documents for its
//!   dimensions (`Image::tokens`), 2,000 when they are unknown. Decisions pad it by 4/3
//!   ([`padded`]): no offline tokenizer matches current models, and code runs nearer 3 bytes
//!   per token than 4, so a decision assumes more rather than fewer.
//! - The count ([`Tally::count`]) is what the newest response said the window held (`usage`:
//!   input, cache writes, cache reads, output) plus the padded estimate of the messages added
//!   since, minus what masking freed since. Before any response, it is the padded estimate of
//!   everything (history, system prompt and tools).

use std::io;

use crate::conversation::{Block, Message, ResultPart, Role, ToolResult};
use crate::llm::AppliedEdit;

/// What an image of unknown dimensions or a document counts.
pub const IMAGE_TOKENS: u64 = crate::conversation::image::UNKNOWN_IMAGE_TOKENS;

/// `ceil(bytes / 4)`.
pub fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// An estimate padded by 4/3, for decisions.
pub fn padded(tokens: u64) -> u64 {
    tokens.saturating_mul(4).div_ceil(3)
}

/// The estimate of a tool result's content.
pub fn result_tokens(r: &ToolResult) -> u64 {
    r.content
        .iter()
        .map(|p| match p {
            ResultPart::Text { text } => text_tokens(text),
            ResultPart::Image(i) => i.tokens(),
            ResultPart::ToolReference { tool_name } => text_tokens(tool_name),
            ResultPart::Unsupported => 0,
        })
        .sum()
}

/// The estimate of one block.
pub fn block_tokens(b: &Block) -> u64 {
    match b {
        Block::Text(t) => text_tokens(&t.text),
        Block::ToolUse(t) => {
            let mut n = ByteCount(0);
            // Writing JSON into a counter cannot fail.
            let _ = serde_json::to_writer(&mut n, &t.input);
            text_tokens(&t.name) + (n.0 as u64).div_ceil(4)
        }
        Block::ToolResult(r) => result_tokens(r),
        Block::Thinking(t) => text_tokens(&t.thinking),
        Block::RedactedThinking { data } => text_tokens(data),
        Block::Image(i) => i.tokens(),
        Block::Unsupported => 0,
    }
}

/// The estimate of a message.
pub fn message_tokens(m: &Message) -> u64 {
    m.content.iter().map(block_tokens).sum()
}

/// The estimate of messages.
pub fn history_tokens(history: &[Message]) -> u64 {
    history.iter().map(message_tokens).sum()
}

/// Counts bytes written, keeping none.
struct ByteCount(usize);

impl io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The session's token count: the newest response's usage and what changed since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    observed: Option<Observed>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Observed {
    /// `usage.context_tokens()` of the response.
    tokens: u64,
    /// How many messages of the history the response covered (the answer included).
    messages: usize,
    /// Estimated tokens masking freed since.
    freed: u64,
    /// Input tokens the API's own context editing removed from that request.
    server_cleared: u64,
}

impl Tally {
    /// A response arrived: `answer` is the newest message of a history of `history_len`
    /// messages; `edits` are the API's applied edits for it (its usage already counts the
    /// edited prompt, which is what the window held).
    pub fn observe(&mut self, answer: &Message, history_len: usize, edits: &[AppliedEdit]) {
        if let Some(usage) = answer.usage {
            self.observed = Some(Observed {
                tokens: usage.context_tokens(),
                messages: history_len,
                freed: 0,
                server_cleared: edits.iter().map(|e| e.cleared_input_tokens).sum(),
            });
        }
    }

    /// The tally of a resumed history: the usage of its newest complete answer, and what
    /// masking freed after it (`Replay::tokens_freed_since_usage`).
    pub fn resumed(history: &[Message], freed_since_usage: u64) -> Tally {
        let newest = history.iter().rposition(|m| {
            m.role == Role::Assistant && m.usage.is_some() && m.stop_reason.is_some()
        });
        Tally {
            observed: newest.map(|i| Observed {
                tokens: history[i].usage.map_or(0, |u| u.context_tokens()),
                messages: i + 1,
                freed: freed_since_usage,
                server_cleared: 0,
            }),
        }
    }

    /// Masking freed this many (estimated) tokens.
    pub fn masked(&mut self, tokens: u64) {
        if let Some(o) = &mut self.observed {
            o.freed = o.freed.saturating_add(tokens);
        }
    }

    /// The history was replaced (a full compaction): only estimates until the next response.
    pub fn reset(&mut self) {
        self.observed = None;
    }

    /// Whether a response's usage is part of the count.
    pub fn is_observed(&self) -> bool {
        self.observed.is_some()
    }

    /// Input tokens the API's context editing removed from the newest request.
    pub fn server_cleared(&self) -> u64 {
        self.observed.map_or(0, |o| o.server_cleared)
    }

    /// The count as it is shown (`compact/run`'s figures): the newest usage and the plain
    /// estimate of what came since, or the plain estimate of everything before any response;
    /// the same basis as the request itself (system prompt, tools and messages), without the
    /// decisions' 4/3 margin.
    pub fn measure(&self, history: &[Message], overhead: u64) -> u64 {
        match self.observed {
            Some(o) if o.messages <= history.len() => o
                .tokens
                .saturating_sub(o.freed)
                .saturating_add(history_tokens(&history[o.messages..])),
            _ => history_tokens(history).saturating_add(overhead),
        }
    }

    /// The count for decisions. `overhead` is the estimate of the system prompt and the tools,
    /// used only before any response (a response's usage already holds them).
    pub fn count(&self, history: &[Message], overhead: u64) -> u64 {
        match self.observed {
            Some(o) if o.messages <= history.len() => o
                .tokens
                .saturating_sub(o.freed)
                .saturating_add(padded(history_tokens(&history[o.messages..]))),
            _ => padded(history_tokens(history).saturating_add(overhead)),
        }
    }
}
