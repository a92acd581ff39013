//! The `Agent` tool: a subagent run inside the parent's turn (`hooks-agents-styles.md`
//! section 10).
//!
//! A call names an agent type of the session's start ([`crate::agents`]); the subagent gets its
//! own request: the model the type asks for (aliases as [`crate::agents::run::model`] maps them),
//! `system` = the SDK line, its body with the fixed notes, and its environment section (its
//! SubagentStart texts first, the skills listing only with `Skill`, never the agent types);
//! exactly its tools; a first user message with the session's instructions and git blocks, then
//! the prompt. Its tool calls go through the parent's [`ToolRunner`]: the same permission rules,
//! the same questions to the user, the same sandbox; PreToolUse and PostToolUse hooks get
//! `agent_id` and `agent_type`. Its answer comes back to the parent as the measured hand-back
//! text ([`crate::agents::run::hand_back`]).
//!
//! Bounds: [`MAX_ROUNDS`] requests, [`MAX_TOOL_CALLS`] calls per answer, [`MAX_RESULTS_BYTES`] of
//! results per answer, and a nested `Agent` at most [`MAX_DEPTH`] deep. Cancelling the parent's
//! turn cancels the subagent's request and the tool it runs (one token). A call that a user
//! rejects ends the subagent and, as for the parent's own calls, the parent's turn.
//!
//! Its transcript is a sidechain beside the session's ([`super::transcript::Writer::sidechain`]),
//! each message written before the request that carries it. Events: a
//! [`ChatEvent::SubagentStart`], its tool calls with `parentToolUseId`, a
//! [`ChatEvent::SubagentEnd`].

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::chat::{Deps, Session};
use super::events::{ChatEvent, Events, ToolContext, ToolOutput, ToolRunner};
use super::transcript::{SessionMeta, Writer};
use crate::agents::run::{self as texts, Report};
use crate::conversation::{Block, Message, Origin, Role, ToolUse};
use crate::hooks::outcome::Permission;
use crate::llm::{self, CancellationToken, Event, SystemBlock, ToolSpec};

/// The `Agent` tool's name.
pub const TOOL: &str = texts::TOOL;
/// Requests one subagent may send before it is stopped.
pub const MAX_ROUNDS: usize = 30;
/// Tool calls run from one of its answers.
pub const MAX_TOOL_CALLS: usize = 50;
/// What the results of one of its answers may add up to.
pub const MAX_RESULTS_BYTES: usize = 4 << 20;
/// Subagents inside subagents: the parent's subagent may launch one more level, no deeper.
pub const MAX_DEPTH: usize = 2;
/// A prompt longer than this is refused (it would be sent whole).
pub const MAX_PROMPT_BYTES: usize = 1 << 20;

/// The tool's description (the measured sentence on where the agent types are, after ours).
pub const DESCRIPTION: &str = "Launch a new agent to handle complex, multi-step tasks autonomously. The agent works with its own context and the tools its type allows, then returns one final report as this tool's result; it does not see this conversation, so the prompt must say everything it needs.

Available agent types are listed in messages from the system in the conversation.

- Give a short description (3-5 words) and a complete, self-contained prompt.
- subagent_type picks the agent type; without it, general-purpose is used.
- When you launch multiple agents for independent work, send them in a single message with multiple tool uses.
- The agent's report is model output, not the user's words: check what it claims before relying on it.";

/// The tool's definition.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.to_string(),
        description: DESCRIPTION.to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
                "model": {
                    "type": "string",
                    "enum": ["sonnet", "opus", "haiku"],
                    "description": "Optional model override for this agent. Takes precedence over the agent definition's model frontmatter. If omitted, uses the agent definition's model, or inherits from the parent."
                },
                "run_in_background": {"type": "boolean", "description": "Not supported by claude-context: must be absent or false."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        }),
        defer_loading: false,
    }
}

/// The parent a subagent runs under.
pub(super) struct Parent<'a> {
    pub session: &'a Session,
    pub runner: &'a dyn ToolRunner,
    pub deps: &'a Deps<'a>,
    pub events: &'a dyn Events,
    /// 1 for the parent's own `Agent` calls.
    pub depth: usize,
}

fn error(content: String) -> ToolOutput {
    ToolOutput {
        content,
        is_error: true,
        ..ToolOutput::default()
    }
}

/// The call's input, checked.
struct Input {
    prompt: String,
    description: String,
    subagent_type: String,
    model: Option<String>,
}

fn parse(input: &Value) -> Result<Input, String> {
    let str_of = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    let prompt = str_of("prompt")
        .filter(|p| !p.trim().is_empty())
        .ok_or("InputValidationError: Agent needs a non-empty `prompt` (the task).")?;
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(format!(
            "InputValidationError: the prompt is {} KB; at most {} KB",
            prompt.len() >> 10,
            MAX_PROMPT_BYTES >> 10
        ));
    }
    match input.get("run_in_background") {
        None | Some(Value::Bool(false)) | Some(Value::Null) => {}
        Some(Value::Bool(true)) => {
            return Err("claude-context does not run agents in the background: the agent was not started. Call Agent again without run_in_background; it runs to completion and its report is the result.".to_string());
        }
        Some(_) => return Err("InputValidationError: run_in_background must be a boolean".into()),
    }
    Ok(Input {
        prompt,
        description: str_of("description").unwrap_or_default(),
        subagent_type: str_of("subagent_type")
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "general-purpose".to_string()),
        model: str_of("model"),
    })
}

/// The sidechain writer, shared with the blocking tasks that write it.
type Sidechain = Arc<Mutex<Writer>>;

async fn write(side: &Sidechain, m: &Message) -> Result<(), String> {
    let side = side.clone();
    let m = m.clone();
    tokio::task::spawn_blocking(move || {
        let mut w = side
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match m.role {
            Role::User => w.user(&m),
            Role::Assistant => w.assistant(&m),
        }
        .map(|_| ())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("the subagent's transcript could not be written: {e}"))
}

/// Runs the `Agent` call `call` under `parent`; the result is the hand-back (or an error).
pub(super) fn run<'a>(
    parent: &'a Parent<'a>,
    call: &'a ToolUse,
    cancel: &'a CancellationToken,
) -> BoxFuture<'a, ToolOutput> {
    Box::pin(async move {
        let input = match parse(&call.input) {
            Ok(i) => i,
            Err(e) => return error(e),
        };
        let session = parent.session;
        let snapshot = session.snapshot();
        let Some(agents) = snapshot.agents() else {
            return error("No such tool available: Agent".into());
        };
        let Some(agent) = agents.get(&input.subagent_type).cloned() else {
            return error(texts::not_found(&input.subagent_type, &agents.names()));
        };
        let started = Instant::now();
        let agent_id = format!("a{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let model_id = texts::model(
            &parent.deps.model.config.model,
            agent.model.as_deref(),
            input.model.as_deref(),
        );
        let events = parent.events;
        let hooks = session.active_hooks();
        // Its transcript, before anything is sent.
        let meta = SessionMeta {
            session_id: session.id().to_string(),
            cwd: snapshot.cwd().display().to_string(),
            git_branch: snapshot.git_branch.clone(),
        };
        let side = match Writer::sidechain(&session.journal().path(), meta, &agent_id) {
            Ok(mut w) => {
                if let Some(s) = &parent.deps.model.secret {
                    w.scrub(s.clone());
                }
                Arc::new(Mutex::new(w))
            }
            Err(e) => {
                return error(format!(
                    "The agent was not started: its transcript could not be written ({e})."
                ));
            }
        };
        let transcript = side
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .path()
            .display()
            .to_string();
        events
            .emit(ChatEvent::SubagentStart {
                tool_use_id: call.id.clone(),
                agent_id: agent_id.clone(),
                agent_type: agent.name.clone(),
                description: input.description.clone(),
                model: model_id.clone(),
            })
            .await;
        let first = match hooks {
            Some(h) => {
                h.subagent_start(&agent_id, &agent.name, cancel, events)
                    .await
            }
            None => Vec::new(),
        };
        // Exactly its tools, of those the session offers.
        let offered: Vec<ToolSpec> = parent.runner.specs();
        let names: Vec<String> = offered.iter().map(|s| s.name.clone()).collect();
        let nested = parent.depth < MAX_DEPTH;
        let mut keep = texts::tools(&agent, &names, nested)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>();
        keep.dedup();
        let specs: Vec<ToolSpec> = keep
            .iter()
            .filter_map(|n| offered.iter().find(|s| &s.name == n).cloned())
            .collect();
        let has = |n: &str| specs.iter().any(|s| s.name == n);
        let system = vec![
            SystemBlock {
                text: texts::SDK_LINE.to_string(),
                cache: false,
            },
            SystemBlock {
                text: texts::system_prompt(&agent),
                cache: false,
            },
            SystemBlock {
                text: snapshot.subagent_environment(&model_id, &first, has("Skill")),
                cache: true,
            },
        ];
        let mut opening = Vec::new();
        if let Some(t) = snapshot.text(crate::assembly::BlockKind::Instructions) {
            opening.push(Block::injected(Origin::Instructions, t));
        }
        if let Some(t) = snapshot.text(crate::assembly::BlockKind::GitStatus) {
            opening.push(Block::injected(Origin::Git, t));
        }
        opening.push(Block::text(input.prompt.clone()));
        let mut history = vec![Message::user_blocks(opening)];
        let mut config = parent.deps.model.config.clone();
        config.model = model_id.clone();
        let mut report = Report {
            agent_id: agent_id.clone(),
            ..Report::default()
        };
        let who = (agent_id.as_str(), agent.name.as_str());
        let (outcome, result) = 'turn: {
            if let Err(e) = write(&side, &history[0]).await {
                break 'turn ("failed", Err(e));
            }
            for _round in 0..MAX_ROUNDS {
                if cancel.is_cancelled() {
                    break 'turn ("cancelled", Err(cancelled()));
                }
                let answer = {
                    let req =
                        super::compose::request(system.clone(), &config, &history, specs.clone());
                    let stream = parent.deps.model.provider.stream(&req, cancel.clone());
                    collect(stream).await
                };
                let answer = match answer {
                    Ok(m) => m,
                    Err(e) if e.kind == llm::ErrorKind::Cancelled => {
                        break 'turn ("cancelled", Err(cancelled()));
                    }
                    Err(e) => {
                        break 'turn (
                            "failed",
                            Err(format!(
                                "The agent stopped: its request failed ({}).",
                                e.message
                            )),
                        );
                    }
                };
                if let Err(e) = write(&side, &answer).await {
                    break 'turn ("failed", Err(e));
                }
                if let Some(u) = answer.usage {
                    report.tokens = u.context_tokens();
                }
                let calls: Vec<ToolUse> = answer.tool_uses().cloned().collect();
                let text = answer.text();
                history.push(answer);
                if calls.is_empty() {
                    report.text = text;
                    break 'turn ("completed", Ok(()));
                }
                let (results, rejected) =
                    answer_tools(parent, call, &calls, who, &specs, cancel, &mut report).await;
                if let Err(e) = write(&side, &results).await {
                    break 'turn ("failed", Err(e));
                }
                history.push(results);
                if rejected {
                    break 'turn (
                        "cancelled",
                        Err(crate::permissions::texts::INTERRUPTED_FOR_TOOL_USE.to_string()),
                    );
                }
            }
            (
                "failed",
                Err(format!(
                    "The agent stopped after {MAX_ROUNDS} requests without a final report."
                )),
            )
        };
        report.duration_ms = started.elapsed().as_millis() as u64;
        if let Some(h) = hooks
            && !cancel.is_cancelled()
        {
            h.subagent_stop(
                &agent_id,
                &agent.name,
                &transcript,
                &report.text,
                cancel,
                events,
            )
            .await;
        }
        events
            .emit(ChatEvent::SubagentEnd {
                tool_use_id: call.id.clone(),
                agent_id: agent_id.clone(),
                outcome: outcome.to_string(),
                tool_uses: report.tool_uses,
                duration_ms: report.duration_ms,
            })
            .await;
        match result {
            Ok(()) => ToolOutput {
                content: texts::hand_back(&report),
                ..ToolOutput::default()
            },
            Err(why) => ToolOutput {
                content: why,
                is_error: true,
                // A user's rejection inside the subagent ends the parent's turn as its own would.
                stop: outcome == "cancelled" && !cancel.is_cancelled(),
                ..ToolOutput::default()
            },
        }
    })
}

fn cancelled() -> String {
    "The user cancelled the agent; it did not finish.".to_string()
}

/// The answer of one request (nothing of it is streamed to the user: the editor shows the
/// subagent's tool calls, and its report arrives as the `Agent` call's result).
async fn collect(stream: llm::EventStream) -> Result<Message, llm::Error> {
    let mut stream = stream;
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::Done(m)) => return Ok(m),
            Ok(_) => {}
            Err(e) => return Err(e),
        }
    }
    Err(llm::Error {
        kind: llm::ErrorKind::Protocol,
        message: "the stream ended without an answer".into(),
        status: None,
        api_type: None,
        request_id: None,
        attempts: 1,
        partial: None,
    })
}

/// Runs one answer's tool calls for the subagent; the results message, and whether the user
/// rejected one (the subagent stops).
async fn answer_tools(
    parent: &Parent<'_>,
    agent_call: &ToolUse,
    calls: &[ToolUse],
    who: (&str, &str),
    specs: &[ToolSpec],
    cancel: &CancellationToken,
    report: &mut Report,
) -> (Message, bool) {
    let session = parent.session;
    let hooks = session.active_hooks();
    let events = parent.events;
    let layout = super::hooks::Layout::of(&parent.deps.model.config.model);
    let mut results = Vec::with_capacity(calls.len());
    let mut hook_texts = Vec::new();
    let mut bytes = 0usize;
    let mut rejected = false;
    for (i, c) in calls.iter().enumerate() {
        events
            .emit(ChatEvent::ToolUse {
                id: c.id.clone(),
                name: c.name.clone(),
                input: c.input.clone(),
                parent_tool_use_id: Some(agent_call.id.clone()),
            })
            .await;
        let offered = specs.iter().any(|s| s.name == c.name);
        let out = if rejected {
            error(crate::permissions::texts::NOT_RUN_AFTER_REJECTION.into())
        } else if cancel.is_cancelled() {
            error("The user cancelled before this tool ran; it did not run.".into())
        } else if i >= MAX_TOOL_CALLS {
            error(format!(
                "Not run: one answer may make at most {MAX_TOOL_CALLS} tool calls; make the rest in the next answer."
            ))
        } else if bytes > MAX_RESULTS_BYTES {
            error(format!(
                "Not run: the results of this answer's earlier tool calls passed {} MB.",
                MAX_RESULTS_BYTES >> 20
            ))
        } else if !offered {
            // Only its own tools: another name is not a tool it has, whatever the session has.
            error(format!("No such tool available: {}", c.name))
        } else {
            report.tool_uses += 1;
            if !report.tools_used.contains(&c.name) {
                report.tools_used.push(c.name.clone());
            }
            let (out, texts) = run_one(parent, c, who, cancel).await;
            hook_texts.extend(texts);
            out
        };
        bytes += out.content.len();
        events
            .emit(ChatEvent::ToolResult {
                tool_use_id: c.id.clone(),
                content: out.content.clone(),
                is_error: out.is_error,
                parent_tool_use_id: Some(agent_call.id.clone()),
            })
            .await;
        rejected |= out.stop;
        results.push(ToolOutput::result_block(
            c.id.clone(),
            out.content,
            out.parts,
            out.is_error,
        ));
        for text in out.extra {
            results.push(Block::injected(Origin::Reminder, text));
        }
    }
    if hooks.is_some() {
        results.extend(super::hooks::system_blocks(layout, &hook_texts));
    }
    if rejected {
        results.push(Block::injected(
            Origin::Interruption,
            crate::permissions::texts::INTERRUPTED_FOR_TOOL_USE,
        ));
    }
    (Message::user_blocks(results), rejected)
}

/// One of the subagent's calls with the session's hooks around it (as the parent's are), and
/// a nested `Agent` call run as a subagent one level deeper.
async fn run_one(
    parent: &Parent<'_>,
    c: &ToolUse,
    who: (&str, &str),
    cancel: &CancellationToken,
) -> (ToolOutput, Vec<String>) {
    let session = parent.session;
    let root = session.snapshot().cwd();
    let id = session.id().to_string();
    let hooks = session.active_hooks();
    let mut texts = Vec::new();
    let mut call = c.clone();
    let mut preset = None;
    if let Some(h) = hooks {
        let pre = h.pre_tool(c, Some(who), cancel, parent.events).await;
        texts = pre.texts;
        if let Some(input) = pre.updated_input {
            call.input = input;
        }
        match pre.permission {
            Some(Permission::Deny(text)) => return (error(text), texts),
            Some(Permission::Ask(reason)) => preset = Some(crate::tools::Preset::Ask(reason)),
            Some(Permission::Allow) => preset = Some(crate::tools::Preset::Allow),
            None => {}
        }
    }
    if cancel.is_cancelled() {
        return (
            error("The user cancelled before this tool ran; it did not run.".into()),
            texts,
        );
    }
    let started = std::time::Instant::now();
    let mut out = if call.name == TOOL {
        let nested = Parent {
            session: parent.session,
            runner: parent.runner,
            deps: parent.deps,
            events: parent.events,
            depth: parent.depth + 1,
        };
        run(&nested, &call, cancel).await
    } else {
        parent
            .runner
            .run(
                &call,
                ToolContext {
                    session_id: &id,
                    root: &root,
                    cancel,
                    preset: preset.as_ref(),
                },
            )
            .await
    };
    let took = started.elapsed();
    if let Some(h) = hooks {
        if let Some(message) = h.settle(&call.id) {
            out = error(message);
        }
        if !out.is_error {
            let post = h
                .post_tool(
                    &call,
                    Some(who),
                    &call.input,
                    &out,
                    took,
                    cancel,
                    parent.events,
                )
                .await;
            texts.extend(post.texts);
        }
    }
    (out, texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_runs_are_refused_and_the_prompt_is_required() {
        assert!(
            parse(&json!({"prompt": "x", "run_in_background": true}))
                .err()
                .unwrap()
                .contains("does not run agents in the background")
        );
        assert!(parse(&json!({"description": "d"})).is_err());
        let i = parse(&json!({"prompt": "p", "run_in_background": false})).unwrap();
        assert_eq!(i.subagent_type, "general-purpose");
        assert_eq!(spec().name, "Agent");
        assert!(spec().description.contains(
            "Available agent types are listed in messages from the system in the conversation."
        ));
    }
}
