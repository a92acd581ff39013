//! One turn's [`ChatEvent`]s as `session/update`s, in order, through the client's outbox (a
//! client that reads slowly slows the turn down).
//!
//! | event | update |
//! |---|---|
//! | `text` | `agent_message_chunk` |
//! | `thinking` | `agent_thought_chunk` |
//! | `toolUse` | `tool_call` (pending; `in_progress` once its permission is given) |
//! | `toolResult` | `tool_call_update` (completed or failed, the result), and `plan` after a `TodoWrite` |
//! | `attachment` | a completed `read` call: "rule X now applies (because of Y)" |
//! | `usage` | `usage_update` (tokens in the window, the window) |
//! | `compacted` | a completed call of kind `other` saying what was freed |
//! | `hook` | a blocked prompt: `agent_message_chunk` (the text); else a call of kind `other`, `<Event> hook: <outcome>`, the text as its content (failed when something was stopped) |
//! | `error` with a retry | `agent_thought_chunk` (the retry, its delay) |
//! | `error` with a restart | `agent_message_chunk` saying the answer starts again |
//! | `error` | kept: the prompt's answer is a JSON-RPC error with its message |
//! | `done` | nothing: the prompt's answer follows (its stop reason) |

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{SessionUpdate, ToolCallStatus, UsageUpdate};
use futures::future::BoxFuture;
use serde_json::Value;

use super::client::Peer;
use super::updates;
use crate::rpc::jsonrpc::{ResponseError, code};
use crate::session::{ChatEvent, ErrorReport, Events, Session, SessionTools};

/// The updates of one turn.
pub struct AcpEvents {
    peer: Peer,
    tools: Arc<SessionTools>,
    root: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The calls of the turn, for their results.
    calls: HashMap<String, (String, Value)>,
    /// Notes numbered within the turn.
    notes: usize,
    turn: String,
    /// The error that ended the turn.
    failure: Option<ErrorReport>,
    stop_reason: Option<String>,
}

impl AcpEvents {
    pub fn new(peer: Peer, tools: Arc<SessionTools>, session: &Session) -> AcpEvents {
        AcpEvents {
            peer,
            tools,
            root: session.snapshot().cwd(),
            state: Mutex::new(State {
                turn: uuid::Uuid::new_v4().simple().to_string(),
                ..State::default()
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model's last stop reason, once the turn is done.
    pub fn stop_reason(&self) -> Option<String> {
        self.state().stop_reason.clone()
    }

    /// The error that ended a failed turn, as the prompt's JSON-RPC error: `-32000` when the
    /// API refused the key (the client may show its authentication), else `-32603`.
    pub fn failure(&self) -> ResponseError {
        match &self.state().failure {
            Some(e) if e.error_kind == "auth" => {
                ResponseError::new(code::AUTH_REQUIRED, &e.message)
            }
            Some(e) => ResponseError {
                code: code::INTERNAL_ERROR,
                message: e.message.clone(),
                data: Some(serde_json::json!({
                    "errorKind": e.error_kind,
                    "status": e.status,
                })),
            },
            None => ResponseError::internal("the turn failed"),
        }
    }

    fn note_id(&self, what: &str) -> String {
        let mut s = self.state();
        s.notes += 1;
        format!("{what}-{}-{}", s.turn, s.notes)
    }

    /// The updates one event makes.
    fn updates(&self, event: ChatEvent) -> Vec<SessionUpdate> {
        match event {
            ChatEvent::Text { text, .. } => vec![updates::message(text)],
            ChatEvent::Thinking { text, .. } => vec![updates::thought(text)],
            ChatEvent::ToolUse {
                id, name, input, ..
            } => {
                let title = self.tools.tools().describe(&name, &input);
                let u = updates::tool_call(&id, &name, &input, title, &self.root);
                self.state().calls.insert(id, (name, input));
                vec![u]
            }
            ChatEvent::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                let call = self.state().calls.get(&tool_use_id).cloned();
                let mut out = vec![updates::result(
                    &tool_use_id,
                    call.as_ref().map(|(n, i)| (n.as_str(), i)),
                    &content,
                    is_error,
                    &self.root,
                )];
                if let Some((name, input)) = &call
                    && name == "TodoWrite"
                    && !is_error
                    && let Some(p) = updates::plan(input)
                {
                    out.push(p);
                }
                out
            }
            // A subagent shows as its `Agent` tool call (whose result is its report) and its
            // own tool calls (updates of their own, by their ids).
            ChatEvent::SubagentStart { .. } | ChatEvent::SubagentEnd { .. } => Vec::new(),
            ChatEvent::Attachment { path, trigger, .. } => {
                let id = self.note_id("attach");
                vec![updates::attachment(
                    &id,
                    std::path::Path::new(&path),
                    Some(std::path::Path::new(&trigger)),
                    &self.root,
                )]
            }
            ChatEvent::Usage(u) => vec![SessionUpdate::UsageUpdate(UsageUpdate::new(
                u.context_tokens,
                u.window,
            ))],
            ChatEvent::Compacted {
                tokens_before,
                tokens_after,
                mode,
            } => {
                let what = match mode.as_str() {
                    "micro" => "Old tool results cleared",
                    "full" => "Conversation summarised (every message you wrote is kept)",
                    _ => "The API cleared old tool results",
                };
                let id = self.note_id("compacted");
                vec![updates::note(
                    &id,
                    format!("{what}: about {tokens_before} → {tokens_after} tokens"),
                    ToolCallStatus::Completed,
                )]
            }
            // A blocked prompt is the turn's answer; anything else a hook did is a note.
            ChatEvent::Hook(r) if r.event == "UserPromptSubmit" && r.outcome == "blocked" => {
                vec![updates::message(r.text)]
            }
            ChatEvent::Hook(r) => {
                let id = self.note_id("hook");
                vec![updates::hook(&id, &r)]
            }
            ChatEvent::Error(e) => match (&e.retry, e.restart) {
                (Some(r), _) => vec![updates::thought(format!(
                    "\n[{}; retrying in {:.1} s ({} of {})]\n",
                    e.message,
                    r.delay_ms as f64 / 1000.0,
                    r.attempt,
                    r.of
                ))],
                (None, true) => vec![updates::message(format!(
                    "\n\n[the stream was cut ({}); the answer starts again]\n\n",
                    e.message
                ))],
                (None, false) => {
                    self.state().failure = Some(e);
                    Vec::new()
                }
            },
            ChatEvent::Done { stop_reason, .. } => {
                self.state().stop_reason = stop_reason;
                Vec::new()
            }
        }
    }
}

impl Events for AcpEvents {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()> {
        let updates = self.updates(event);
        Box::pin(async move {
            for u in updates {
                self.peer.update(u).await;
            }
        })
    }
}
