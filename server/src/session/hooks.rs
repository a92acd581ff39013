//! The session's hooks ([`crate::hooks`]): when each event fires, what its command reads, and
//! where its texts land in the session's requests (`../shared/spec/hooks-agents-styles.md`).
//!
//! [`SessionHooks`] is attached by [`super::equip`] (every front end), once per session: the
//! hooks are those of the settings when the session started (a hook the model writes into a
//! settings file does not run in the session that wrote it). Nothing runs in a folder its user
//! has not trusted (the session's [`super::trust::SessionTrust`], the MCP servers' and the
//! permission rules' answer too). The session calls it:
//!
//! - at the start of a turn ([`super::Session::run`]): `SessionStart` (once: `startup`, or
//!   `resume` whose texts go nowhere), then `UserPromptSubmit`, which may block the prompt (it is
//!   then not kept: the user message is written only after these hooks said yes);
//! - around each tool call: `PreToolUse` (deny, ask, allow with `updatedInput`), the tool's own
//!   permission prompt through the [`HookedAsker`] (`PermissionRequest` decides it;
//!   `Notification` fires when a prompt waits), then `PostToolUse`;
//! - when the model ends its answer: `Stop`, which may make it continue;
//! - around a full compaction: `PreCompact` (may block), `SessionStart` (`compact`),
//!   `PostCompact` ([`CompactHooks`]);
//! - when the session ends: `SessionEnd`.
//!
//! **Where texts land** depends on the model's layout ([`Layout`], `models::environment_message`):
//! - [`Layout::Environment`] (the reference's `system` messages): the `SessionStart` and first
//!   `UserPromptSubmit` texts go into the environment section of the system prompt
//!   ([`crate::assembly::HookParts`], recorded in the transcript so a resume sends them again);
//!   a later `system` message (after a tool result, a later prompt) is one
//!   `<system-reminder>` block with its parts joined by a blank line (our session has no
//!   `role: "system"` messages: docs/decisions.md);
//! - [`Layout::Reminders`]: every text is its own `<system-reminder>\n…\n</system-reminder>` block:
//!   first in the first user message, right after the tool results, after a later prompt.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;

use super::events::{ChatEvent, Events, HookReport, ToolOutput};
use super::snapshot::Snapshot;
use crate::assembly::HookParts;
use crate::conversation::{Block, Message, Origin, Role, ToolUse};
use crate::fs::RealFs;
use crate::hooks::input::{self, Common, EFFORT, Fields, Input};
use crate::hooks::outcome::{self, Permission, Pre, Prompt};
use crate::hooks::persist::Persist;
use crate::hooks::{Config, Event, Hook, Ran, Runner};
use crate::llm::CancellationToken;
use crate::tools::{Asker, BashConfig, Decision, PermissionRequest};

/// How long a permission prompt waits before `Notification` hooks fire (measured: about 6 s
/// after the dialog opened, i1/trusted_default).
pub const NOTIFY_AFTER: Duration = Duration::from_secs(6);

/// The message and type of the permission prompt's notification.
pub const PERMISSION_MESSAGE: &str = "Claude needs your permission";

/// Where hooks' texts land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The environment section of the system prompt, and one block per later `system` message.
    Environment,
    /// One `<system-reminder>` block per text.
    Reminders,
}

impl Layout {
    pub fn of(model: &str) -> Layout {
        if crate::models::environment_message(model) {
            Layout::Environment
        } else {
            Layout::Reminders
        }
    }
}

/// `<system-reminder>\n<text>\n</system-reminder>`.
pub fn reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

/// The blocks that carry `texts` as one `system` message (after a tool result, after a later
/// prompt): one block with the texts joined by a blank line, or one block per text.
pub fn system_blocks(layout: Layout, texts: &[String]) -> Vec<Block> {
    if texts.is_empty() {
        return Vec::new();
    }
    match layout {
        Layout::Environment => vec![Block::injected(
            Origin::Reminder,
            reminder(&texts.join("\n\n")),
        )],
        Layout::Reminders => texts
            .iter()
            .map(|t| Block::injected(Origin::Reminder, reminder(t)))
            .collect(),
    }
}

/// What a session's hooks start from.
pub struct Setup<'a> {
    pub session_id: &'a str,
    pub transcript: PathBuf,
    pub model: &'a str,
    pub snapshot: Arc<Snapshot>,
    /// The session's Bash configuration: the shell, the reaper, the variables removed, the
    /// sandbox's settings.
    pub bash: BashConfig,
    /// The session's folders (what a sandboxed hook may write).
    pub workspace: crate::tools::Workspace,
    /// The session's sandbox state, shared with its Bash tool (one answer to "run commands
    /// without a sandbox" for both).
    pub sandbox: Arc<crate::tools::SandboxRuntime>,
    /// The secrets a hook's output is scrubbed of (the key).
    pub secrets: Vec<String>,
    /// claude-context's state folder (`CLAUDE_ENV_FILE` lives below it).
    pub state_dir: Option<PathBuf>,
    /// The session's permission rules and mode (hooks are told the mode as it is now).
    pub policy: Arc<crate::permissions::Policy>,
    /// The session's workspace trust (no hook runs before the folder is trusted).
    pub trust: Option<Arc<super::trust::SessionTrust>>,
}

/// The hooks of one session.
pub struct SessionHooks {
    config: Config,
    runner: Runner,
    layout: Layout,
    session_id: String,
    transcript: String,
    cwd: String,
    model: String,
    persist: Persist,
    env_file: Option<PathBuf>,
    snapshot: Arc<Snapshot>,
    policy: Arc<crate::permissions::Policy>,
    trust: Option<Arc<super::trust::SessionTrust>>,
    /// The asker tool calls go through (the front end's, with PermissionRequest in front).
    asker: OnceLock<Arc<dyn Asker>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The folder is trusted (checked until it is).
    trusted: bool,
    /// SessionStart ran.
    started: bool,
    /// The `startup` texts, until a first prompt carries them.
    startup: Option<Vec<String>>,
    /// The prompt the running turn answers.
    prompt_id: Option<String>,
    /// `continue: false` texts, for the next prompt.
    stopped: Vec<String>,
    /// A full compaction happened: the next prompt's texts join the environment section.
    compacted: bool,
    /// A PermissionRequest hook's denial of a tool call: its result.
    denials: HashMap<String, String>,
}

/// The hooks' answer to a prompt, and the texts it goes with.
pub enum Opening {
    /// Send, with these texts: `(startup, prompt)` for a first prompt; `prompt` and the
    /// `continue: false` notes of the last turn for a later one.
    Go {
        startup: Vec<String>,
        prompt: Vec<String>,
        stopped: Vec<String>,
    },
    /// Not sent: the user reads this.
    Blocked(String),
}

impl SessionHooks {
    /// The hooks of a session: `None` when its settings configure none that runs.
    pub fn new(setup: Setup<'_>) -> Option<SessionHooks> {
        let ctx = &setup.snapshot.ctx;
        let paths = crate::hooks::config::Paths {
            project_dir: ctx.cwd.clone(),
            home: ctx.home().map(PathBuf::from),
        };
        let mut config = Config::read(&RealFs, &ctx.settings().files, &paths);
        // The enabled plugins' hooks, as the session's extensions found them.
        let plugins = match &setup.snapshot.extensions {
            Some(e) => e.plugins.clone(),
            None => crate::plugins::enabled(&RealFs, ctx),
        };
        crate::plugins::add_hooks(&RealFs, &plugins, &mut config, &paths);
        config.running().next()?;
        let cwd = ctx.cwd.display().to_string();
        let env = crate::hooks::run::session_env(&ctx.cwd, setup.session_id);
        let tool_results = setup.transcript.with_extension("").join("tool-results");
        let env_file = setup.state_dir.map(|d| {
            d.join("session-env")
                .join(setup.session_id)
                .join("sessionstart-hook-0.sh")
        });
        let mut bash = crate::hooks::run::hook_bash(&setup.bash);
        // A sandboxed SessionStart hook writes its `CLAUDE_ENV_FILE` (made before it runs).
        if let Some(d) = env_file.as_deref().and_then(std::path::Path::parent) {
            bash.sandbox.allow_write.push(d.to_path_buf());
        }
        Some(SessionHooks {
            runner: Runner {
                bash,
                workspace: setup.workspace,
                sandbox: setup.sandbox,
                scrubber: Arc::new(crate::scrub::Scrubber::new(
                    setup.secrets.iter().map(String::as_str),
                )),
                cwd: ctx.cwd.clone(),
                env,
                limits: Default::default(),
            },
            layout: Layout::of(setup.model),
            session_id: setup.session_id.to_string(),
            transcript: setup.transcript.display().to_string(),
            cwd,
            model: setup.model.to_string(),
            persist: Persist {
                dir: Some(tool_results),
            },
            env_file,
            snapshot: setup.snapshot.clone(),
            policy: setup.policy,
            trust: setup.trust,
            asker: OnceLock::new(),
            state: Mutex::default(),
            config,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The `permission_mode` hooks are told: the session's mode now (`default`, `plan`, …).
    fn mode(&self) -> &'static str {
        self.policy.mode().id()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// May hooks run? The folder must be trusted; checked until it is (the user may trust it
    /// during the session).
    pub fn active(&self) -> bool {
        if self.lock().trusted {
            return true;
        }
        // The session's one trust answer (the MCP servers' and the permission rules' too): as
        // the user answers it during the session; without one, the folder's at its start.
        let trusted = match &self.trust {
            Some(t) => t.trusted(),
            None => self.snapshot.ctx.settings().trust.trusted(),
        };
        if trusted {
            self.lock().trusted = true;
        }
        trusted
    }

    fn trusted(&self) -> bool {
        self.lock().trusted
    }

    /// May a turn open with hooks? The folder is trusted, or its trust is yet to be settled
    /// (the opening settles it first: [`SessionHooks::open`]).
    pub fn may_open(&self) -> bool {
        self.active() || self.trust.as_ref().is_some_and(|t| !t.is_settled())
    }

    /// Does a hook of `event` run in this session?
    pub fn has(&self, event: Event) -> bool {
        self.trusted() && self.config.has(event)
    }

    /// The asker for the session's tools: `inner` (the front end's) with PermissionRequest and
    /// Notification hooks in front of every tool call's question. Set once.
    pub fn wrap(self: &Arc<Self>, inner: Arc<dyn Asker>) -> Arc<dyn Asker> {
        // Weak: the hooks keep this asker (for PreToolUse's `ask`), not the other way round.
        let a: Arc<dyn Asker> = Arc::new(HookedAsker {
            inner,
            hooks: Arc::downgrade(self),
        });
        let _ = self.asker.set(a.clone());
        a
    }

    fn common(&self, prompt: bool) -> (String, String, String, Option<String>) {
        let id = if prompt {
            self.lock().prompt_id.clone()
        } else {
            None
        };
        (
            self.session_id.clone(),
            self.transcript.clone(),
            self.cwd.clone(),
            id,
        )
    }

    /// Runs the hooks of `call`; reports what the user should see of them.
    async fn run(
        &self,
        call: Call<'_>,
        cancel: &CancellationToken,
        events: Option<&dyn Events>,
    ) -> Vec<Ran> {
        let Call {
            event,
            subject,
            fields,
            with_prompt,
            env,
        } = call;
        let env = &env[..];
        if !self.trusted() {
            return Vec::new();
        }
        let hooks: Vec<&Hook> = self.config.select(event, subject);
        if hooks.is_empty() {
            return Vec::new();
        }
        let (session_id, transcript, cwd, prompt_id) = self.common(with_prompt);
        let input = Input {
            common: Common {
                session_id: &session_id,
                transcript_path: &transcript,
                cwd: &cwd,
                prompt_id: prompt_id.as_deref(),
            },
            fields,
        };
        let runs = self
            .runner
            .run(&hooks, &input.to_bytes(), env, cancel)
            .await;
        if let Some(events) = events {
            for n in outcome::notices(&runs) {
                report(
                    events,
                    event,
                    n.kind,
                    n.text,
                    Some(n.hook.command.clone()),
                    None,
                )
                .await;
            }
        }
        runs
    }

    fn effort_env() -> Vec<(String, String)> {
        vec![("CLAUDE_EFFORT".into(), "medium".into())]
    }

    /// The start of a turn: SessionStart once, then UserPromptSubmit on `prompt`. `resumed`:
    /// the session continues a transcript (its SessionStart is `resume`, whose texts go
    /// nowhere). Nothing happens (and [`Opening::Go`] is empty) when the folder is not trusted.
    pub async fn open(
        &self,
        prompt: &str,
        resumed: bool,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> Opening {
        // The folder's trust is settled first (the question, when it must be asked, comes
        // before any hook of the turn: its answer decides whether they run).
        if let Some(t) = &self.trust {
            t.settle(cancel).await;
        }
        if !self.active() {
            return Opening::Go {
                startup: Vec::new(),
                prompt: Vec::new(),
                stopped: std::mem::take(&mut self.lock().stopped),
            };
        }
        let first_run = !std::mem::replace(&mut self.lock().started, true);
        if first_run {
            let source = if resumed { "resume" } else { "startup" };
            let env: Vec<(String, String)> = self
                .env_file
                .iter()
                .map(|f| {
                    if let Some(d) = f.parent() {
                        let _ = std::fs::create_dir_all(d);
                    }
                    ("CLAUDE_ENV_FILE".to_string(), f.display().to_string())
                })
                .collect();
            let runs = self
                .run(
                    Call {
                        event: Event::SessionStart,
                        subject: Some(source),
                        fields: Fields::SessionStart {
                            hook_event_name: "SessionStart",
                            source,
                            model: None,
                        },
                        with_prompt: false,
                        env,
                    },
                    cancel,
                    Some(events),
                )
                .await;
            // On resume the hooks run, and what they say reaches nothing (h12/resume).
            if !resumed {
                let texts = outcome::session_start(&runs, source, &self.persist);
                for t in &texts {
                    report(
                        events,
                        Event::SessionStart,
                        "context",
                        t.clone(),
                        None,
                        None,
                    )
                    .await;
                }
                self.lock().startup = Some(texts);
            }
        }
        self.lock().prompt_id = Some(uuid::Uuid::new_v4().to_string());
        let runs = self
            .run(
                Call {
                    event: Event::UserPromptSubmit,
                    subject: None,
                    fields: Fields::UserPromptSubmit {
                        permission_mode: self.mode(),
                        hook_event_name: "UserPromptSubmit",
                        prompt,
                    },
                    with_prompt: true,
                    env: Vec::new(),
                },
                cancel,
                Some(events),
            )
            .await;
        match outcome::user_prompt_submit(&runs, prompt, &self.persist) {
            Prompt::Blocked(t) | Prompt::Stopped(t) => {
                report(
                    events,
                    Event::UserPromptSubmit,
                    "blocked",
                    t.clone(),
                    None,
                    None,
                )
                .await;
                Opening::Blocked(t)
            }
            Prompt::Go(texts) => {
                for t in &texts {
                    report(
                        events,
                        Event::UserPromptSubmit,
                        "context",
                        t.clone(),
                        None,
                        None,
                    )
                    .await;
                }
                Opening::Go {
                    startup: Vec::new(),
                    prompt: texts,
                    stopped: Vec::new(),
                }
            }
        }
    }

    /// Places the opening's texts: into `message` (the prompt's user message) and, for a session
    /// in the environment layout, into the system prompt (returned: record them, then
    /// [`Snapshot::set_hook_parts`]). `first`: the conversation's first prompt.
    pub fn place(&self, opening: Opening, first: bool, message: &mut Message) -> Option<HookParts> {
        let Opening::Go {
            startup,
            prompt,
            stopped,
        } = opening
        else {
            return None;
        };
        let mut st = self.lock();
        let startup = if first {
            st.startup.take().unwrap_or_default()
        } else {
            startup
        };
        let mut later = std::mem::take(&mut st.stopped);
        later.extend(stopped);
        let compacted = std::mem::take(&mut st.compacted);
        drop(st);
        match self.layout {
            Layout::Environment if first => {
                message.content.extend(system_blocks(self.layout, &later));
                let parts = HookParts {
                    session_start: startup,
                    user_prompt_submit: prompt,
                    compacted: false,
                };
                (!parts.is_empty()).then_some(parts)
            }
            Layout::Environment if compacted => {
                // The first prompt after a compaction: its texts join the rebuilt section.
                message.content.extend(system_blocks(self.layout, &later));
                let mut parts = self.snapshot.hook_parts();
                parts.compacted = true;
                parts.user_prompt_submit = prompt;
                Some(parts)
            }
            Layout::Environment => {
                later.extend(prompt);
                message.content.extend(system_blocks(self.layout, &later));
                None
            }
            Layout::Reminders => {
                if first {
                    let mut head = system_blocks(self.layout, &startup);
                    head.extend(system_blocks(self.layout, &prompt));
                    message.content.splice(0..0, head);
                    message.content.extend(system_blocks(self.layout, &later));
                } else {
                    later.extend(prompt);
                    message.content.extend(system_blocks(self.layout, &later));
                }
                None
            }
        }
    }

    /// PreToolUse for `call` (`agent`: a subagent's call, its `agent_id` and `agent_type`).
    pub async fn pre_tool(
        &self,
        call: &ToolUse,
        agent: Option<(&str, &str)>,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> Pre {
        let runs = self
            .run(
                Call {
                    event: Event::PreToolUse,
                    subject: Some(&call.name),
                    fields: Fields::PreToolUse {
                        permission_mode: self.mode(),
                        agent: agent.map(|(agent_id, agent_type)| crate::hooks::input::Agent {
                            agent_id,
                            agent_type,
                        }),
                        effort: EFFORT,
                        hook_event_name: "PreToolUse",
                        tool_name: &call.name,
                        tool_input: &call.input,
                        tool_use_id: &call.id,
                    },
                    with_prompt: true,
                    env: Self::effort_env(),
                },
                cancel,
                Some(events),
            )
            .await;
        let pre = outcome::pre_tool_use(&runs, &call.name, &call.id, &self.persist);
        let id = Some(call.id.clone());
        match &pre.permission {
            Some(Permission::Deny(t)) => {
                report(
                    events,
                    Event::PreToolUse,
                    "denied",
                    t.clone(),
                    None,
                    id.clone(),
                )
                .await
            }
            Some(Permission::Ask(t)) => {
                report(
                    events,
                    Event::PreToolUse,
                    "asked",
                    t.clone(),
                    None,
                    id.clone(),
                )
                .await
            }
            Some(Permission::Allow) => {
                let text = match &pre.updated_input {
                    Some(u) => format!("allowed, with the input {u}"),
                    None => "allowed".to_string(),
                };
                report(events, Event::PreToolUse, "allowed", text, None, id.clone()).await
            }
            None => {}
        }
        for t in &pre.texts {
            report(
                events,
                Event::PreToolUse,
                "context",
                t.clone(),
                None,
                id.clone(),
            )
            .await;
        }
        if let Some(s) = &pre.stop {
            report(events, Event::PreToolUse, "stopped", s.clone(), None, id).await;
        }
        pre
    }

    /// A PermissionRequest hook's denial message for `tool_use_id`, when one denied it (the
    /// call's result), forgotten.
    pub fn settle(&self, tool_use_id: &str) -> Option<String> {
        self.lock().denials.remove(tool_use_id)
    }

    /// PostToolUse for `call` (run with `input`), which produced `out` in `took` (`agent`: a
    /// subagent's call).
    #[allow(clippy::too_many_arguments)]
    pub async fn post_tool(
        &self,
        call: &ToolUse,
        agent: Option<(&str, &str)>,
        input: &Value,
        out: &ToolOutput,
        took: Duration,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> outcome::Post {
        let response = tool_response(&call.name, input, out, cancel.is_cancelled());
        let runs = self
            .run(
                Call {
                    event: Event::PostToolUse,
                    subject: Some(&call.name),
                    fields: Fields::PostToolUse {
                        permission_mode: self.mode(),
                        agent: agent.map(|(agent_id, agent_type)| crate::hooks::input::Agent {
                            agent_id,
                            agent_type,
                        }),
                        effort: EFFORT,
                        hook_event_name: "PostToolUse",
                        tool_name: &call.name,
                        tool_input: input,
                        tool_response: &response,
                        tool_use_id: &call.id,
                        duration_ms: took.as_millis() as u64,
                    },
                    with_prompt: true,
                    env: Self::effort_env(),
                },
                cancel,
                Some(events),
            )
            .await;
        let post = outcome::post_tool_use(&runs, &call.name, &call.id, &self.persist);
        for t in &post.texts {
            let kind = if t.contains(" hook blocking error from command: ") {
                "feedback"
            } else {
                "context"
            };
            report(
                events,
                Event::PostToolUse,
                kind,
                t.clone(),
                None,
                Some(call.id.clone()),
            )
            .await;
        }
        if let Some(s) = &post.stop {
            report(
                events,
                Event::PostToolUse,
                "stopped",
                s.clone(),
                None,
                Some(call.id.clone()),
            )
            .await;
        }
        post
    }

    /// SubagentStart for a subagent about to run: the texts its environment section starts
    /// with (`SubagentStart hook additional context: …`, one per hook that gave some).
    pub async fn subagent_start(
        &self,
        agent_id: &str,
        agent_type: &str,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> Vec<String> {
        let runs = self
            .run(
                Call {
                    event: Event::SubagentStart,
                    subject: Some(agent_type),
                    fields: Fields::SubagentStart {
                        agent_id,
                        agent_type,
                        hook_event_name: "SubagentStart",
                    },
                    with_prompt: true,
                    env: Vec::new(),
                },
                cancel,
                Some(events),
            )
            .await;
        let texts = outcome::subagent_start(&runs, &self.persist);
        for t in &texts {
            report(
                events,
                Event::SubagentStart,
                "context",
                t.clone(),
                None,
                None,
            )
            .await;
        }
        texts
    }

    /// SubagentStop once a subagent answered `last`; what it says goes nowhere (measured).
    pub async fn subagent_stop(
        &self,
        agent_id: &str,
        agent_type: &str,
        transcript: &str,
        last: &str,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) {
        let empty = Value::Array(Vec::new());
        self.run(
            Call {
                event: Event::SubagentStop,
                subject: Some(agent_type),
                fields: Fields::SubagentStop {
                    permission_mode: self.mode(),
                    agent_id,
                    agent_type,
                    effort: EFFORT,
                    hook_event_name: "SubagentStop",
                    stop_hook_active: false,
                    agent_transcript_path: transcript,
                    last_assistant_message: last,
                    background_tasks: &empty,
                    session_crons: &empty,
                },
                with_prompt: true,
                env: Self::effort_env(),
            },
            cancel,
            Some(events),
        )
        .await;
    }

    /// A `continue: false` for the next prompt (the turn ends after this round).
    pub fn stopped(&self, text: String) {
        self.lock().stopped.push(text);
    }

    /// Stop, when the model ended its answer with `last` (its text). `active`: the model is
    /// already continuing because of a Stop hook in this turn.
    pub async fn stop(
        &self,
        active: bool,
        last: &str,
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> outcome::Stop {
        let runs = self
            .run(
                Call {
                    event: Event::Stop,
                    subject: None,
                    fields: Fields::Stop {
                        permission_mode: self.mode(),
                        effort: EFFORT,
                        hook_event_name: "Stop",
                        stop_hook_active: active,
                        last_assistant_message: last,
                        background_tasks: input::empty_list(),
                        session_crons: input::empty_list(),
                    },
                    with_prompt: true,
                    env: Self::effort_env(),
                },
                cancel,
                Some(events),
            )
            .await;
        let s = outcome::stop(&runs, Event::Stop);
        if let outcome::Stop::Continue { feedback, .. } = &s {
            for f in feedback {
                report(events, Event::Stop, "feedback", f.clone(), None, None).await;
            }
        }
        s
    }

    /// The user message that makes the model continue after a Stop block.
    pub fn continuation(&self, feedback: &[String], system: &[String]) -> Message {
        let mut content: Vec<Block> = feedback
            .iter()
            .map(|f| Block::injected(Origin::Meta, f.clone()))
            .collect();
        content.extend(system_blocks(self.layout, system));
        Message::user_blocks(content)
    }

    /// SessionEnd (`reason`: `other`), bounded by `limit` whatever the hooks' own timeouts.
    pub async fn end(&self, reason: &str, limit: Duration) {
        if !self.has(Event::SessionEnd) {
            return;
        }
        let cancel = CancellationToken::new();
        let run = self.run(
            Call {
                event: Event::SessionEnd,
                subject: Some(reason),
                fields: Fields::SessionEnd {
                    hook_event_name: "SessionEnd",
                    reason,
                },
                with_prompt: false,
                env: Vec::new(),
            },
            &cancel,
            None,
        );
        if tokio::time::timeout(limit, run).await.is_err() {
            cancel.cancel();
        }
    }

    /// Notification hooks (`message`, `notification_type`); what they say goes nowhere.
    pub async fn notify(&self, message: &str, kind: &str) {
        let cancel = CancellationToken::new();
        self.run(
            Call {
                event: Event::Notification,
                subject: Some(kind),
                fields: Fields::Notification {
                    hook_event_name: "Notification",
                    message,
                    notification_type: kind,
                },
                with_prompt: false,
                env: Vec::new(),
            },
            &cancel,
            None,
        )
        .await;
    }
}

/// One event's hooks to run.
struct Call<'a> {
    event: Event,
    /// What the matchers match (`None`: the event has none).
    subject: Option<&'a str>,
    fields: Fields<'a>,
    /// The input carries the prompt's id.
    with_prompt: bool,
    /// Variables for this event's hooks.
    env: Vec<(String, String)>,
}

async fn report(
    events: &dyn Events,
    event: Event,
    outcome: &str,
    text: String,
    command: Option<String>,
    tool_use_id: Option<String>,
) {
    events
        .emit(ChatEvent::Hook(HookReport {
            event: event.name().to_string(),
            outcome: outcome.to_string(),
            text,
            command,
            tool_use_id,
        }))
        .await;
}

/// What PostToolUse hooks read as the tool's response: Bash's measured shape
/// (`stdout`, `stderr`, `interrupted`, `isImage`, `noOutputExpected`; ours has one stream, so
/// everything is `stdout`); for the other tools the file they worked on and the result's text.
fn tool_response(name: &str, input: &Value, out: &ToolOutput, interrupted: bool) -> Value {
    if name == "Bash" {
        return serde_json::json!({
            "stdout": out.content,
            "stderr": "",
            "interrupted": interrupted,
            "isImage": false,
            "noOutputExpected": false,
        });
    }
    let mut m = serde_json::Map::new();
    if let Some(p) = input.get("file_path") {
        m.insert("filePath".into(), p.clone());
    }
    m.insert("content".into(), Value::String(out.content.clone()));
    m.insert("success".into(), Value::Bool(!out.is_error));
    Value::Object(m)
}

/// The front end's asker with hooks in front. A tool call's question (one its permission
/// decision asks: a PreToolUse `allow` already skipped those it may skip, `tools::Preset`) goes
/// to PermissionRequest hooks first: a deny answers it; an allow answers it unless the call
/// changes a file that makes programs run code (the user decides those); a question that waits
/// for the user fires Notification hooks after [`NOTIFY_AFTER`]. Nobody answering stays nobody
/// answering (the `-p` texts). Other questions (an MCP server's approval) go straight through.
pub struct HookedAsker {
    inner: Arc<dyn Asker>,
    hooks: std::sync::Weak<SessionHooks>,
}

impl Asker for HookedAsker {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move { self.answer(request).await.unwrap_or(Decision::Deny) })
    }

    fn answer(&self, request: PermissionRequest) -> BoxFuture<'_, Option<Decision>> {
        Box::pin(async move {
            let Some(hooks) = self.hooks.upgrade() else {
                return self.inner.answer(request).await;
            };
            if request.choices.is_some() || !hooks.trusted() {
                return self.inner.answer(request).await;
            }
            let id = request.tool_use_id.clone();
            let cancel = CancellationToken::new();
            let runs = hooks
                .run(
                    Call {
                        event: Event::PermissionRequest,
                        subject: Some(&request.tool),
                        fields: Fields::PermissionRequest {
                            permission_mode: hooks.mode(),
                            agent: None,
                            effort: EFFORT,
                            hook_event_name: "PermissionRequest",
                            tool_name: &request.tool,
                            tool_input: &request.input,
                            permission_suggestions: input::empty_list(),
                        },
                        with_prompt: true,
                        env: Vec::new(),
                    },
                    &cancel,
                    None,
                )
                .await;
            match outcome::permission_request(&runs) {
                Some(outcome::Decision::Allow { .. }) if request.warning.is_none() => {
                    return Some(Decision::Allow);
                }
                Some(outcome::Decision::Deny(message)) => {
                    if let Some(id) = id {
                        hooks.lock().denials.insert(id, message);
                    }
                    return Some(Decision::Deny);
                }
                _ => {}
            }
            if !hooks.has(Event::Notification) {
                return self.inner.answer(request).await;
            }
            let asked = self.inner.answer(request);
            tokio::pin!(asked);
            let started = Instant::now();
            tokio::select! {
                d = &mut asked => return d,
                () = tokio::time::sleep(NOTIFY_AFTER) => {}
            }
            crate::log_debug!(
                "a permission prompt waits ({:.0} s): Notification hooks",
                started.elapsed().as_secs_f64()
            );
            tokio::spawn(async move {
                hooks.notify(PERMISSION_MESSAGE, "permission_prompt").await;
            });
            asked.await
        })
    }
}

/// The last assistant message's text (Stop's `last_assistant_message`).
pub fn last_text(history: &[Message]) -> String {
    history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(Message::text)
        .unwrap_or_default()
}

/// Compaction's side of the hooks: PreCompact before the summary (may block), then SessionStart
/// (`compact`) and PostCompact once it is written, before the new history is recorded.
pub struct CompactRun {
    /// The lines for the compaction's output (`PreCompact [<cmd>] completed successfully: …`).
    pub lines: Vec<String>,
}

impl SessionHooks {
    /// PreCompact (`trigger`: `manual` or `auto`; `focus`: the compaction's instructions).
    /// `Err`: the compaction does not happen; the user reads the text.
    pub async fn pre_compact(
        &self,
        trigger: &str,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactRun, String> {
        if !self.active() {
            return Ok(CompactRun { lines: Vec::new() });
        }
        let runs = self
            .run(
                Call {
                    event: Event::PreCompact,
                    subject: Some(trigger),
                    fields: Fields::PreCompact {
                        hook_event_name: "PreCompact",
                        trigger,
                        custom_instructions: focus,
                    },
                    with_prompt: true,
                    env: Vec::new(),
                },
                cancel,
                None,
            )
            .await;
        let c = outcome::compact(&runs, Event::PreCompact);
        match c.blocked {
            Some(b) => Err(b),
            None => Ok(CompactRun { lines: c.lines }),
        }
    }

    /// After the summary: SessionStart (`compact`) and PostCompact. Changes `history` (the new
    /// one, not yet recorded): a `<local-command-stdout>` with the hooks' lines for a manual
    /// compaction, the SessionStart texts as blocks (reminders layout); returns the environment
    /// section's new hook parts (environment layout) for [`SessionHooks::compacted`].
    pub async fn post_compact(
        &self,
        trigger: &str,
        summary: &str,
        mut pre: CompactRun,
        history: &mut [Message],
        cancel: &CancellationToken,
    ) -> Option<HookParts> {
        if !self.active() {
            return None;
        }
        let runs = self
            .run(
                Call {
                    event: Event::SessionStart,
                    subject: Some("compact"),
                    fields: Fields::SessionStart {
                        hook_event_name: "SessionStart",
                        source: "compact",
                        model: Some(&self.model),
                    },
                    with_prompt: true,
                    env: Vec::new(),
                },
                cancel,
                None,
            )
            .await;
        let texts = outcome::session_start(&runs, "compact", &self.persist);
        let runs = self
            .run(
                Call {
                    event: Event::PostCompact,
                    subject: Some(trigger),
                    fields: Fields::PostCompact {
                        hook_event_name: "PostCompact",
                        trigger,
                        compact_summary: summary,
                    },
                    with_prompt: true,
                    env: Vec::new(),
                },
                cancel,
                None,
            )
            .await;
        pre.lines
            .extend(outcome::compact(&runs, Event::PostCompact).lines);
        let first = history.iter_mut().find(|m| m.role == Role::User);
        if let Some(first) = first {
            if trigger == "manual" && !pre.lines.is_empty() {
                first.content.push(Block::injected(
                    Origin::Meta,
                    format!(
                        "<local-command-stdout>Compacted (ctrl+o to see full summary)\n{}</local-command-stdout>\n",
                        pre.lines.join("\n")
                    ),
                ));
            }
            if self.layout == Layout::Reminders {
                let blocks = system_blocks(self.layout, &texts);
                first.content.splice(0..0, blocks);
            }
        }
        match self.layout {
            Layout::Environment => Some(HookParts {
                session_start: texts,
                user_prompt_submit: Vec::new(),
                compacted: true,
            }),
            Layout::Reminders => None,
        }
    }

    /// The compaction is recorded: the environment section takes `parts` from now on, and the
    /// next prompt's texts join it.
    pub fn compacted(&self, parts: Option<HookParts>) {
        if let Some(parts) = parts {
            self.snapshot.set_hook_parts(parts);
            self.lock().compacted = true;
        }
    }
}
