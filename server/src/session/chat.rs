//! A session: its frozen start, its history, its transcript, and its turns.
//!
//! A message goes through two steps:
//! 1. [`Session::prepare`] (synchronous; the language server calls it from `chat/send` on a
//!    blocking thread, the command line before it streams): it checks the session is idle,
//!    touches the mentioned and open files (their conditional rules and nested instruction files
//!    attach), composes the user message, **writes it to the transcript (fsync)** and only then
//!    appends it to the history. When it returns, the message cannot be lost.
//! 2. [`Session::run`]: the turn, run as a task of the server (never a request's future): the
//!    request loop with retries reported as events, the answer streamed, written when complete
//!    (a cut stream's partial answer too), tool calls run and answered, until the model stops,
//!    fails, or the turn's [`CancellationToken`] fires.
//!
//! One turn at a time: `prepare` refuses while a turn is running. State shared with readers (a
//! preview asks for the token count while a turn streams) sits behind one short-held lock; the
//! history only ever changes by whole messages, and only after they are on disk.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FusedStream;
use tokio::time::Instant;

use super::compose::{self, Attached, Mentioned};
use super::config::Model;
use super::events::{
    AfterTurn, ChatEvent, ErrorReport, Events, HookContext, HookOutcome, Outcome, RequestHook,
    RetryInfo, TokenCount, ToolContext, ToolRunner, TurnEnd, UsageReport,
};
use super::hooks::SessionHooks;
use super::journal::Journal;
use super::snapshot::Snapshot;
use super::transcript::PartialReason;
use crate::context::Attacher;
use crate::conversation::{Block, Message, Origin, Role, StopReason, Usage};
use crate::fs::Fs;
use crate::hooks::outcome::{Permission, Stop};
use crate::llm::{self, CancellationToken, ErrorKind, Event};

/// Tool rounds in one turn before the turn stops (a model calling tools in a loop).
pub const MAX_TOOL_ROUNDS: usize = 50;
/// Tool calls run from one answer; later ones get an error result saying they did not run.
pub const MAX_TOOL_CALLS: usize = 100;
/// What the tool results of one answer may add up to (one transcript line, one request): past
/// it a result is replaced by a note and the remaining calls do not run.
pub const MAX_RESULTS_BYTES: usize = 8 << 20;

/// What the model is told after a cancel.
pub const INTERRUPTED: &str = "[Request interrupted by user]";

/// One chat session.
pub struct Session {
    id: String,
    snapshot: Arc<Snapshot>,
    journal: Journal,
    window: u64,
    live: Mutex<Live>,
    /// Runs when a turn ends (memory extraction); set once by the driver.
    after: OnceLock<Arc<dyn AfterTurn>>,
    /// Compaction before every request (unless the driver passes its own hook); set once by
    /// the driver.
    compaction: OnceLock<Arc<super::compaction::AutoCompact>>,
    /// The hooks of the session's settings (`session::hooks`); set once by `equip`.
    hooks: OnceLock<Arc<SessionHooks>>,
    /// The output style chosen during the session ([`Session::set_style`]); `None`: the one it
    /// started with (the snapshot's).
    style: Mutex<Option<StyleSwitch>>,
}

/// An output style chosen during a session.
#[derive(Clone, Debug)]
struct StyleSwitch {
    /// `None`: the default style.
    current: Option<crate::styles::Style>,
    /// The text the next user message carries to tell the model (the system prompt stays as
    /// it was: the prompt cache holds).
    announce: Option<String>,
}

/// The text a style chosen during a session is announced with (Claude Code 2.1.337's words):
/// the style's part, or the reset to the default.
pub fn style_announcement(style: Option<&crate::styles::Style>) -> String {
    match style {
        Some(s) => s.part(),
        None => "The output style was reset to the default. Respond in your usual style.".into(),
    }
}

struct Live {
    history: Vec<Message>,
    /// Lazy attachments: each file at most once per session.
    attacher: Attacher,
    /// Paths attached so far (also those a resumed history carries).
    attached: HashSet<PathBuf>,
    /// Every attachment the session sent, in order.
    attachments: Vec<Attached>,
    usage: Option<UsageMark>,
    turn: Option<Running>,
}

/// The newest usage and what it measured.
#[derive(Clone, Copy, Debug)]
struct UsageMark {
    usage: Usage,
    /// Our estimate of the request it answered.
    estimate: u64,
    /// History length once the answer was added.
    len: usize,
}

#[derive(Clone)]
struct Running {
    id: String,
    cancel: CancellationToken,
}

/// A message to send.
#[derive(Clone, Debug, Default)]
pub struct Outgoing {
    pub text: String,
    /// Files the user mentioned: touched, and their contents sent.
    pub mentions: Vec<PathBuf>,
    /// Files open in the editor: touched (passed like mentions, without their contents).
    pub open: Vec<PathBuf>,
    /// Images the user pasted or attached, in order, each checked by
    /// `Image::from_base64` (the front end names the field of one that fails); sent before the
    /// text, as the reference CLI sends a pasted image. At most
    /// [`crate::conversation::image::MAX_IMAGES_PER_MESSAGE`].
    pub images: Vec<crate::conversation::Image>,
}

/// Why a message was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError {
    /// A turn is running.
    Busy { turn_id: String },
    /// The input is wrong; the message names the field.
    Invalid(String),
    /// The transcript could not be written: nothing was sent.
    Transcript(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Busy { turn_id } => write!(
                f,
                "a turn is running ({turn_id}); wait for its `done` or cancel it first"
            ),
            SendError::Invalid(m) => f.write_str(m),
            SendError::Transcript(m) => write!(
                f,
                "the message was not sent: the transcript cannot be written ({m})"
            ),
        }
    }
}

/// An accepted message: the turn to run.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub turn_id: String,
    pub cancel: CancellationToken,
    /// Files the message attached (announced as the turn starts).
    pub attachments: Vec<Attached>,
    /// The message, when hooks decide first whether it is sent (then it is written when the
    /// turn starts, after them: a prompt they block is not kept).
    pending: Option<Box<Pending>>,
}

/// A message composed but not yet written: UserPromptSubmit hooks run first.
#[derive(Clone, Debug)]
struct Pending {
    message: Message,
    prompt: String,
    first: bool,
    attacher: Attacher,
}

/// What a turn runs with.
pub struct Deps<'a> {
    pub model: &'a Model,
    /// `None`: no tools are offered (the model cannot call any).
    pub tools: Option<&'a dyn ToolRunner>,
    pub hook: Option<&'a dyn RequestHook>,
    /// Files a tool touched are attached through this (the editor's buffers included).
    pub fs: &'a dyn Fs,
}

/// What a reader sees of a session.
#[derive(Clone, Debug)]
pub struct View {
    pub snapshot: Arc<Snapshot>,
    pub attacher: Attacher,
    pub attachments: Vec<Attached>,
    pub messages: usize,
    pub count: TokenCount,
    /// Real tokens per estimated token, once a usage is known.
    pub ratio: Option<f64>,
    pub turn: Option<String>,
    pub transcript: PathBuf,
}

impl Session {
    /// A session from its parts (see [`super::Store::start`] and [`super::Store::resume`]).
    pub fn new(
        id: String,
        snapshot: Snapshot,
        journal: Journal,
        history: Vec<Message>,
        window: u64,
    ) -> Session {
        let attacher = Attacher::new(&snapshot.ctx);
        let attached = attached_paths(&history);
        Session {
            id,
            snapshot: Arc::new(snapshot),
            journal,
            window,
            live: Mutex::new(Live {
                history,
                attacher,
                attached,
                attachments: Vec::new(),
                usage: None,
                turn: None,
            }),
            after: OnceLock::new(),
            compaction: OnceLock::new(),
            hooks: OnceLock::new(),
            style: Mutex::new(None),
        }
    }

    /// The output style now: the one chosen during the session, else the one it started with.
    pub fn style(&self) -> Option<crate::styles::Style> {
        if let Some(s) = self
            .style
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            return s.current.clone();
        }
        self.snapshot.extensions.as_ref()?.style.clone()
    }

    /// The output style's name now (`default` for none).
    pub fn style_name(&self) -> String {
        self.style()
            .map_or(crate::styles::DEFAULT.to_string(), |s| s.name)
    }

    /// The styles the session can switch to (`default` first).
    pub fn style_names(&self) -> Vec<String> {
        self.snapshot
            .extensions
            .as_ref()
            .map(|e| e.styles.names())
            .unwrap_or_else(|| vec![crate::styles::DEFAULT.to_string()])
    }

    /// Chooses the output style `name` (exact, case-sensitive; `default` for none). The system
    /// prompt stays as the session started it (the prompt cache holds); the next message tells
    /// the model (`# Output Style: <name>\n<body>`, or that the style was reset) and the
    /// reminders after tool results and prompts name the new style. Returns the previous name.
    /// An unknown name is an error here (a person chose it: the setting's silent fallback is
    /// Claude Code's, not a picker's).
    pub fn set_style(&self, name: &str) -> Result<String, String> {
        let next = match name {
            crate::styles::DEFAULT => None,
            _ => Some(
                self.snapshot
                    .extensions
                    .as_ref()
                    .and_then(|e| e.styles.find(Some(name)))
                    .cloned()
                    .ok_or_else(|| {
                        format!(
                            "no output style is named \"{name}\" (names are case-sensitive): choose one of {}",
                            self.style_names().join(", ")
                        )
                    })?,
            ),
        };
        let previous = self.style();
        let prev_name = previous
            .as_ref()
            .map_or(crate::styles::DEFAULT.to_string(), |s| s.name.clone());
        if previous.as_ref().map(|s| &s.name) == next.as_ref().map(|s| &s.name) {
            return Ok(prev_name);
        }
        *self.style.lock().unwrap_or_else(|p| p.into_inner()) = Some(StyleSwitch {
            announce: Some(style_announcement(next.as_ref())),
            current: next,
        });
        Ok(prev_name)
    }

    /// Sets the session's hooks (once; a second call is ignored).
    pub fn set_hooks(&self, hooks: Arc<SessionHooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// The session's hooks, when its settings have any.
    pub fn hooks(&self) -> Option<&Arc<SessionHooks>> {
        self.hooks.get()
    }

    /// The model the session was started for.
    pub fn model(&self) -> String {
        self.snapshot.model().to_string()
    }

    /// The hooks that may run now: configured, in a trusted folder.
    pub(super) fn active_hooks(&self) -> Option<&Arc<SessionHooks>> {
        self.hooks.get().filter(|h| h.active())
    }

    /// The session ends: its SessionEnd hooks run (`reason`: `other`), for at most `limit`.
    pub async fn end(&self, reason: &str, limit: Duration) {
        if let Some(h) = self.active_hooks() {
            h.end(reason, limit).await;
        }
    }

    /// Sets what runs after each turn (once; a second call is ignored).
    pub fn set_after_turn(&self, hook: Arc<dyn AfterTurn>) {
        let _ = self.after.set(hook);
    }

    /// Sets the session's compaction (once; a second call is ignored). Its hook runs before
    /// every request of every turn whose driver passes no hook of its own.
    pub fn set_compaction(&self, c: Arc<super::compaction::AutoCompact>) {
        let _ = self.compaction.set(c);
    }

    /// The session's compaction, for manual runs (`compact/run`) and previews.
    pub fn compaction(&self) -> Option<&Arc<super::compaction::AutoCompact>> {
        self.compaction.get()
    }

    /// Makes the session busy for work on its history outside a turn (a manual compaction):
    /// no message is accepted while the guard lives, `chat/cancel` fires its token, and the
    /// session is idle again when it is dropped. `kind` names the work in the busy error.
    pub fn exclusive(&self, kind: &str) -> Result<Exclusive<'_>, SendError> {
        let mut live = self.live();
        if let Some(t) = &live.turn {
            return Err(SendError::Busy {
                turn_id: t.id.clone(),
            });
        }
        let running = Running {
            id: format!("{kind}-{}", uuid::Uuid::new_v4().simple()),
            cancel: CancellationToken::new(),
        };
        live.turn = Some(running.clone());
        Ok(Exclusive {
            idle: IdleOnDrop(self, running.id),
            cancel: running.cancel,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Files a resumed history attached in records of its own (the reference CLI's `attachment`
    /// records): they are not attached again.
    pub(crate) fn mark_attached(&mut self, paths: Vec<PathBuf>) {
        let live = self.live.get_mut().unwrap_or_else(|p| p.into_inner());
        live.attached.extend(paths);
    }

    /// A resumed history's last usage (the count starts from it).
    pub(crate) fn restore_usage(&mut self, usage: Option<Usage>) {
        let live = self.live.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(u) = usage {
            let system = self.snapshot.system();
            let estimate = compose::estimate_request(&system, &[], &live.history);
            live.usage = Some(UsageMark {
                usage: u,
                estimate,
                len: live.history.len(),
            });
        }
    }

    /// The history as the next request sends it.
    pub fn history(&self) -> Vec<Message> {
        self.live().history.clone()
    }

    /// The running turn's id.
    pub fn running(&self) -> Option<String> {
        self.live().turn.as_ref().map(|t| t.id.clone())
    }

    /// Cancels the running turn; returns its id.
    pub fn cancel(&self) -> Option<String> {
        let live = self.live();
        let t = live.turn.as_ref()?;
        t.cancel.cancel();
        Some(t.id.clone())
    }

    /// A reader's view: what the next request would carry and its token count.
    pub fn view(&self) -> View {
        let live = self.live();
        let count = count(&self.snapshot, &live);
        View {
            snapshot: self.snapshot.clone(),
            attacher: live.attacher.clone(),
            attachments: live.attachments.clone(),
            messages: live.history.len(),
            count,
            ratio: live.usage.map(|m| ratio(&m)),
            turn: live.turn.as_ref().map(|t| t.id.clone()),
            transcript: self.journal.path(),
        }
    }

    /// Step 1 of a message: checks, attaches, writes it to the transcript, adds it to the
    /// history. See the module doc.
    pub fn prepare(&self, fs: &dyn Fs, out: Outgoing) -> Result<Prepared, SendError> {
        if out.text.trim().is_empty() && out.mentions.is_empty() && out.images.is_empty() {
            return Err(SendError::Invalid(
                "text: empty; write a message".to_string(),
            ));
        }
        use crate::conversation::image::MAX_IMAGES_PER_MESSAGE;
        if out.images.len() > MAX_IMAGES_PER_MESSAGE {
            return Err(SendError::Invalid(format!(
                "images: {} images; a message may hold at most {MAX_IMAGES_PER_MESSAGE}. Nothing was sent or kept.",
                out.images.len()
            )));
        }
        if let Some(i) = out.images.iter().position(|i| i.data.is_none()) {
            return Err(SendError::Invalid(format!(
                "images[{i}]: the image has no data. Nothing was sent or kept."
            )));
        }
        let ctx = &self.snapshot.ctx;
        // Mentioned files are read before anything changes: a bad one refuses the message.
        let mut mentions = Vec::new();
        for (i, p) in out.mentions.iter().enumerate() {
            let path = ctx.session_path(p);
            if !path.starts_with(&ctx.cwd) {
                return Err(SendError::Invalid(format!(
                    "mentions[{i}]: {} is outside the session's directory {}",
                    p.display(),
                    ctx.cwd.display()
                )));
            }
            let text = fs.read_text(&path).map_err(|e| {
                SendError::Invalid(format!("mentions[{i}]: cannot read {}: {e}", p.display()))
            })?;
            mentions.push(Mentioned {
                text: compose::mention_block(&path, &text),
                path,
            });
        }

        let mut live = self.live();
        if let Some(t) = &live.turn {
            return Err(SendError::Busy {
                turn_id: t.id.clone(),
            });
        }
        // A history that ends with tool calls nobody answered (the process stopped in between)
        // gets their results first, or the API would refuse it.
        if let Some(closing) = compose::close_open_tool_calls(
            &live.history,
            "The session stopped before this tool ran; it did not run.",
        ) {
            let m = closing.clone();
            self.journal
                .with(move |w| w.user(&m))
                .map_err(|e| SendError::Transcript(e.to_string()))?;
            live.history.push(closing);
        }

        // Touch: mentions first, then the other open files.
        let mut seen = HashSet::new();
        let before = live.attacher.attachments.len();
        let touched: Vec<&PathBuf> = mentions
            .iter()
            .map(|m| &m.path)
            .chain(&out.open)
            .filter(|p| seen.insert(ctx.session_path(p)))
            .collect();
        let mut attacher = live.attacher.clone();
        for f in touched {
            attacher.touch(fs, ctx, f);
        }
        let attachments: Vec<Attached> = attacher.attachments[before..]
            .iter()
            .filter(|a| !live.attached.contains(&a.record.path))
            .map(|a| {
                let text = a.text();
                Attached {
                    path: a.record.path.clone(),
                    trigger: a.trigger.clone(),
                    tokens: crate::context::estimate_tokens(&text) as u64,
                    text,
                }
            })
            .collect();

        let first = (!self.snapshot.resumed && !live.history.iter().any(|m| m.role == Role::User))
            .then_some(&*self.snapshot);
        let mut message =
            compose::user_message(first, &attachments, &mentions, &out.images, &out.text);
        // A style chosen since the last message: the model is told first.
        if let Some(text) = self
            .style
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(|s| s.announce.take())
        {
            message.content.push(Block::injected(
                Origin::Reminder,
                super::hooks::reminder(&text),
            ));
        }
        // A later prompt: the output style's sentence again (hooks-agents-styles.md section 11).
        if first.is_none() {
            message.content.extend(self.style_reminder());
        }
        // A message no request could ever carry (with the system prompt and the tools, more
        // than a request may hold; compaction shortens what came before, never this) is refused
        // before it is written: kept, it would fail every later prompt of the session, after a
        // resume or `session/load` too.
        let tokens =
            compose::estimate_request(&self.snapshot.system(), &[], std::slice::from_ref(&message))
                + super::offered_tools_tokens();
        // The compaction's own level when the session has one (its window and output budget),
        // else the window's with the largest output reserve.
        let limit = match self.compaction.get() {
            Some(c) => c.policy().budget.blocking,
            None => {
                crate::compact::budget::Budget::new(
                    self.window,
                    crate::compact::budget::MAX_RESERVED,
                    None,
                )
                .blocking
            }
        };
        if tokens > limit {
            return Err(SendError::Invalid(format!(
                "text: the message is about {} tokens with what goes with it (instructions, \
                 mentioned files, the tools); a request to this model holds at most {} \
                 ({}-token window). Shorten it, or mention fewer or smaller files. Nothing was \
                 sent or kept.",
                crate::context::message::thousands(tokens),
                crate::context::message::thousands(limit),
                crate::context::message::thousands(self.window)
            )));
        }
        let running = Running {
            id: format!("turn-{}", uuid::Uuid::new_v4().simple()),
            cancel: CancellationToken::new(),
        };
        // With hooks, they decide first: the message is written when the turn starts.
        if self.hooks.get().is_some_and(|h| h.may_open()) {
            live.turn = Some(running.clone());
            return Ok(Prepared {
                turn_id: running.id,
                cancel: running.cancel,
                attachments,
                pending: Some(Box::new(Pending {
                    message,
                    prompt: out.text,
                    first: first.is_some(),
                    attacher,
                })),
            });
        }
        // On disk before it counts (and before any request can carry it).
        let m = message.clone();
        self.journal
            .with(move |w| w.user(&m))
            .map_err(|e| SendError::Transcript(e.to_string()))?;
        live.history.push(message);
        live.attacher = attacher;
        for a in &attachments {
            live.attached.insert(a.path.clone());
        }
        live.attachments.extend(attachments.iter().cloned());
        live.turn = Some(running.clone());
        Ok(Prepared {
            turn_id: running.id,
            cancel: running.cancel,
            attachments,
            pending: None,
        })
    }

    /// The start of a turn whose message waits for hooks: SessionStart, UserPromptSubmit, then
    /// the message (with the hooks' texts in place) written and added to the history. `Err`:
    /// the turn ends here (blocked, cancelled, or the transcript failed; nothing was kept).
    async fn open(
        &self,
        p: Pending,
        attachments: &[Attached],
        cancel: &CancellationToken,
        events: &dyn Events,
    ) -> Result<(), Outcome> {
        let Pending {
            mut message,
            prompt,
            first,
            attacher,
        } = p;
        if let Some(h) = self.hooks.get() {
            let opening = h.open(&prompt, self.snapshot.resumed, cancel, events).await;
            if cancel.is_cancelled() {
                return Err(Outcome::Cancelled);
            }
            if let super::hooks::Opening::Blocked(_) = opening {
                return Err(Outcome::Completed);
            }
            if let Some(parts) = h.place(opening, first, &mut message) {
                let p = parts.clone();
                if let Err(e) = self.journal.run(move |w| w.hook_context(&p)).await {
                    crate::log_warn!("the hooks' context could not be written: {e}");
                }
                self.snapshot.set_hook_parts(parts);
            }
        }
        let m = message.clone();
        if let Err(e) = self.journal.run(move |w| w.user(&m)).await {
            events
                .emit(error_event(
                    "transcript",
                    SendError::Transcript(e.to_string()).to_string(),
                    None,
                ))
                .await;
            return Err(Outcome::Failed);
        }
        let mut live = self.live();
        live.history.push(message);
        live.attacher = attacher;
        for a in attachments {
            live.attached.insert(a.path.clone());
        }
        live.attachments.extend(attachments.iter().cloned());
        Ok(())
    }

    /// Step 2: the turn. Always ends with one [`ChatEvent::Done`]; the session is idle again
    /// when this returns (or if the future is dropped).
    pub async fn run(&self, prepared: Prepared, deps: Deps<'_>, events: &dyn Events) -> Outcome {
        // Every event goes out scrubbed of the key (the model can print it, or pass it to a
        // tool): one scrubber for every front end.
        let scrubbed = super::events::Scrubbed::new(
            events,
            deps.model
                .secret
                .as_ref()
                .map(|s| s.expose().to_string())
                .into_iter(),
        );
        let events: &dyn Events = &scrubbed;
        let idle = IdleOnDrop(self, prepared.turn_id.clone());
        if let Some(p) = prepared.pending
            && let Err(outcome) = self
                .open(*p, &prepared.attachments, &prepared.cancel, events)
                .await
        {
            drop(idle);
            events
                .emit(ChatEvent::Done {
                    outcome,
                    stop_reason: None,
                })
                .await;
            return outcome;
        }
        for a in &prepared.attachments {
            events.emit(attachment_event(a)).await;
        }
        if let Some(s) = &deps.model.secret {
            self.journal.scrub(s);
        }
        let (outcome, stop) = self.turn(&prepared.cancel, &deps, events).await;
        // The turn's history, taken before the session is idle (a new message may follow).
        let after = self.after.get().map(|h| (h, self.history()));
        // Idle before `done` goes out: a client that sends the moment it sees `done` is
        // accepted.
        drop(idle);
        if let Some((hook, history)) = after {
            hook.after_turn(TurnEnd {
                session_id: &self.id,
                outcome,
                stop_reason: stop.as_ref(),
                history: &history,
                system: &self.snapshot.system(),
                tools: &deps.tools.map(|t| t.specs()).unwrap_or_default(),
                model: deps.model,
                memory_dir: self.snapshot.ctx.memory_dir.as_deref(),
            });
        }
        events
            .emit(ChatEvent::Done {
                outcome,
                stop_reason: stop.map(|s| s.as_str().to_string()),
            })
            .await;
        outcome
    }

    async fn turn(
        &self,
        cancel: &CancellationToken,
        deps: &Deps<'_>,
        events: &dyn Events,
    ) -> (Outcome, Option<StopReason>) {
        // The first request fixes the system prompt: with the MCP servers as they stand once
        // they had their time to connect (skills-mcp.md section 6).
        if !self.snapshot.is_frozen() {
            let parts = match deps.tools {
                Some(t) => t.environment(cancel).await,
                None => Some(super::events::Environment {
                    no_agents: true,
                    ..super::events::Environment::default()
                }),
            };
            match parts {
                Some(parts) => self.snapshot.freeze(parts),
                None => return (self.interrupted(events).await, None),
            }
        } else if let Some(t) = deps.tools {
            // What changed since the model was last told (the permission mode), before the
            // request: a user message of reminders after the user's own.
            let notes = t.before_turn();
            if !notes.is_empty() {
                let message = Message::user_blocks(
                    notes
                        .into_iter()
                        .map(|n| {
                            Block::injected(
                                Origin::Reminder,
                                format!("<system-reminder>\n{n}\n</system-reminder>"),
                            )
                        })
                        .collect(),
                );
                let m = message.clone();
                if let Err(e) = self.journal.run(move |w| w.user(&m)).await {
                    events
                        .emit(error_event(
                            "transcript",
                            format!(
                                "the mode's reminder could not be written to the transcript: {e}"
                            ),
                            None,
                        ))
                        .await;
                    return (Outcome::Failed, None);
                }
                self.live().history.push(message);
            }
        }
        let hook: Option<&dyn RequestHook> = deps
            .hook
            .or_else(|| self.compaction.get().map(|c| &**c as &dyn RequestHook));
        let mut stop = None;
        // A Stop hook made the model continue in this turn (`stop_hook_active`).
        let mut stop_hook_active = false;
        for _round in 0..=MAX_TOOL_ROUNDS {
            if cancel.is_cancelled() {
                return (self.interrupted(events).await, stop);
            }
            // Per request: a compaction may have rebuilt the environment section (hooks).
            let system = self.snapshot.system();
            // Per request: a tool loaded by ToolSearch is offered from the next request on.
            let specs = deps.tools.map(|t| t.specs()).unwrap_or_default();
            // The history is copied for the hook only when it has something to do: most requests
            // need nothing, and a long history costs milliseconds to copy.
            let work = hook.and_then(|h| {
                let live = self.live();
                h.needed(&live.history, &system, &specs)
                    .then(|| (h, live.history.clone(), count(&self.snapshot, &live)))
            });
            if let Some((hook, mut copy, count)) = work {
                let outcome = hook
                    .before_request(HookContext {
                        history: &mut copy,
                        journal: &self.journal,
                        count,
                        model: deps.model,
                        system: &system,
                        tools: &specs,
                        cancel,
                    })
                    .await;
                match outcome {
                    HookOutcome::Send => {}
                    HookOutcome::Compacted {
                        tokens_before,
                        tokens_after,
                        mode,
                    } => {
                        {
                            let mut live = self.live();
                            live.history = copy;
                            live.usage = None;
                        }
                        events
                            .emit(ChatEvent::Compacted {
                                tokens_before,
                                tokens_after,
                                mode,
                            })
                            .await;
                    }
                    HookOutcome::Blocked { message } => {
                        events.emit(error_event("blocked", message, None)).await;
                        return (Outcome::Failed, stop);
                    }
                }
            }

            let (stream, estimate) = {
                let live = self.live();
                let mut req = compose::request(
                    system.clone(),
                    &deps.model.config,
                    &live.history,
                    specs.clone(),
                );
                req.context_management =
                    hook.and_then(|h| h.context_management(deps.model.provider.name(), &specs));
                let estimate = compose::estimate_request(&system, &specs, &live.history);
                (deps.model.provider.stream(&req, cancel.clone()), estimate)
            };
            let interval = deps.model.config.delta_interval;
            let (answer, edits) = match self.drain(stream, interval, events).await {
                Ok(m) => m,
                Err(e) => return (self.failed(e, events).await, stop),
            };
            let m = answer.clone();
            if let Err(e) = self.journal.run(move |w| w.assistant(&m)).await {
                // Not on disk, so not part of the conversation (a resume would not have it
                // either), and the turn is not reported completed.
                events
                    .emit(error_event(
                        "transcript",
                        format!(
                            "the answer could not be written to the transcript ({e}); it is not \
                             kept in the conversation: free some space and send again"
                        ),
                        None,
                    ))
                    .await;
                return (Outcome::Failed, answer.stop_reason.clone());
            }
            stop = answer.stop_reason.clone();
            let usage = answer.usage;
            let calls: Vec<_> = answer.tool_uses().cloned().collect();
            {
                let mut live = self.live();
                live.history.push(answer);
                if let Some(h) = hook
                    && let Some(a) = live.history.last()
                {
                    h.answered(a, live.history.len(), &edits);
                }
                if let Some(u) = usage {
                    live.usage = Some(UsageMark {
                        usage: u,
                        estimate,
                        len: live.history.len(),
                    });
                }
            }
            let cleared: u64 = edits.iter().map(|e| e.cleared_input_tokens).sum();
            if cleared > 0 {
                let after = usage.map_or(0, |u| u.context_tokens());
                events
                    .emit(ChatEvent::Compacted {
                        tokens_before: after + cleared,
                        tokens_after: after,
                        mode: "api".to_string(),
                    })
                    .await;
            }
            if let Some(u) = usage {
                events
                    .emit(ChatEvent::Usage(UsageReport::new(&u, self.window)))
                    .await;
            }
            for c in &calls {
                events
                    .emit(ChatEvent::ToolUse {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        input: c.input.clone(),
                        parent_tool_use_id: None,
                    })
                    .await;
            }
            if calls.is_empty() || stop != Some(StopReason::ToolUse) {
                // Stop hooks may make the model continue, with their feedback.
                if let Some(h) = self.active_hooks()
                    && h.has(crate::hooks::Event::Stop)
                    && !cancel.is_cancelled()
                {
                    let last = super::hooks::last_text(&self.history());
                    if let Stop::Continue { feedback, system } =
                        h.stop(stop_hook_active, &last, cancel, events).await
                    {
                        let message = h.continuation(&feedback, &system);
                        let m = message.clone();
                        if let Err(e) = self.journal.run(move |w| w.user(&m)).await {
                            events
                                .emit(error_event(
                                    "transcript",
                                    format!("the Stop hook's feedback could not be written to the transcript: {e}"),
                                    None,
                                ))
                                .await;
                            return (Outcome::Failed, stop);
                        }
                        self.live().history.push(message);
                        stop_hook_active = true;
                        continue;
                    }
                }
                return (Outcome::Completed, stop);
            }
            let Some(runner) = deps.tools else {
                // No tool was offered, yet the model called one: nothing runs and nothing is
                // made up; the calls are closed with an error result when the user sends again.
                events
                    .emit(error_event(
                        "protocol",
                        "the model called a tool, but this session offers no tools; nothing was run"
                            .to_string(),
                        None,
                    ))
                    .await;
                return (Outcome::Completed, stop);
            };
            if cancel.is_cancelled() {
                return (self.interrupted(events).await, stop);
            }
            match self
                .answer_tools(runner, &calls, cancel, deps, events)
                .await
            {
                // The user rejected a call, or a hook said `continue: false`: the turn stops
                // after this round; the results wait for their next message (the reference CLI
                // sends no request until the user writes).
                Ok(true) => return (Outcome::Completed, stop),
                Ok(false) => {}
                Err(e) => {
                    events.emit(error_event("transcript", e, None)).await;
                    return (Outcome::Failed, stop);
                }
            }
        }
        events
            .emit(error_event(
                "protocol",
                format!(
                    "the model called tools {MAX_TOOL_ROUNDS} times in a row; the turn stops here (send a message to continue)"
                ),
                None,
            ))
            .await;
        (Outcome::Failed, stop)
    }

    /// Runs the tool calls and sends their results (with the attachments of the files they
    /// touched after them) as the next user message. `Ok(true)`: the turn ends here (the user
    /// rejected a call, or a hook said `continue: false`).
    async fn answer_tools(
        &self,
        runner: &dyn ToolRunner,
        calls: &[crate::conversation::ToolUse],
        cancel: &CancellationToken,
        deps: &Deps<'_>,
        events: &dyn Events,
    ) -> Result<bool, String> {
        let root = self.snapshot.cwd();
        let mut results = Vec::with_capacity(calls.len());
        let mut touched = Vec::new();
        let mut bytes = 0usize;
        let not_run = |why: String| super::events::ToolOutput {
            content: why,
            is_error: true,
            ..Default::default()
        };
        let mut extra = Vec::new();
        let hooks = self.active_hooks();
        // What PreToolUse and PostToolUse hooks add after the results, and a `continue: false`.
        let mut hook_texts: Vec<String> = Vec::new();
        let mut halt = false;
        let mut rejected = false;
        for (i, c) in calls.iter().enumerate() {
            let out = if rejected {
                not_run(crate::permissions::texts::NOT_RUN_AFTER_REJECTION.into())
            } else if cancel.is_cancelled() {
                not_run("The user cancelled before this tool ran; it did not run.".into())
            } else if i >= MAX_TOOL_CALLS {
                not_run(format!(
                    "Not run: one answer may make at most {MAX_TOOL_CALLS} tool calls; make the \
                     rest in the next answer."
                ))
            } else if bytes > MAX_RESULTS_BYTES {
                not_run(format!(
                    "Not run: the results of this answer's earlier tool calls passed {} MB; make \
                     this call again in the next answer.",
                    MAX_RESULTS_BYTES >> 20
                ))
            } else {
                let cx = ToolContext {
                    session_id: &self.id,
                    root: &root,
                    cancel,
                    preset: None,
                };
                match hooks {
                    None => self.run_call(runner, c, cx, deps, events).await,
                    Some(h) => {
                        let (out, texts, stop) =
                            self.run_hooked(h, runner, c, cx, deps, events).await;
                        hook_texts.extend(texts);
                        if let Some(s) = stop {
                            h.stopped(s);
                            halt = true;
                        }
                        out
                    }
                }
            };
            bytes += out.content.len();
            // A short result (a write's confirmation) is always kept: it says what changed.
            let out = if bytes > MAX_RESULTS_BYTES && out.content.len() > 1024 {
                not_run(format!(
                    "The result ({} KB) was dropped: the results of this answer's tool calls \
                     passed {} MB. Ask for less at once (a smaller range, a narrower pattern).",
                    out.content.len() >> 10,
                    MAX_RESULTS_BYTES >> 20
                ))
            } else {
                out
            };
            events
                .emit(ChatEvent::ToolResult {
                    tool_use_id: c.id.clone(),
                    content: out.content.clone(),
                    is_error: out.is_error,
                    parent_tool_use_id: None,
                })
                .await;
            rejected |= out.stop;
            touched.extend(out.touched);
            extra.extend(out.extra);
            results.push(super::events::ToolOutput::result_block(
                c.id.clone(),
                out.content,
                out.parts,
                out.is_error,
            ));
        }
        // A skill's body, ToolSearch's `Tool loaded.`, follow the results they answer
        // (skills-mcp.md sections 5 and 6).
        for text in extra {
            results.push(Block::injected(Origin::Reminder, text));
        }
        // The hooks' texts: one block each right after the results, or (the environment
        // layout) one `system` message's block after everything.
        let layout = hooks.map(|h| h.layout());
        if layout == Some(super::hooks::Layout::Reminders) {
            results.extend(super::hooks::system_blocks(
                super::hooks::Layout::Reminders,
                &hook_texts,
            ));
        }
        let attachments = self.touch(deps.fs, &touched);
        let n = attachments.len();
        for (i, a) in attachments.iter().enumerate() {
            // Every block but the last of the message ends with a newline (context.md §4).
            let text = if i + 1 < n {
                format!("{}\n", a.text)
            } else {
                a.text.clone()
            };
            results.push(Block::attachment(text, a.trigger.to_string_lossy()));
        }
        // Skills below cwd the touched files discovered: the reference CLI's `system` message,
        // here a `<system-reminder>` block after the attachments.
        for note in runner.after_results(&touched) {
            results.push(Block::injected(
                Origin::Reminder,
                format!("<system-reminder>\n{note}\n</system-reminder>"),
            ));
        }
        if layout == Some(super::hooks::Layout::Environment) {
            results.extend(super::hooks::system_blocks(
                super::hooks::Layout::Environment,
                &hook_texts,
            ));
        }
        // The output style's sentence after every tool result: its own `system` message.
        results.extend(self.style_reminder());
        if rejected {
            results.push(Block::injected(
                Origin::Interruption,
                crate::permissions::texts::INTERRUPTED_FOR_TOOL_USE,
            ));
        }
        let message = Message::user_blocks(results);
        let m = message.clone();
        self.journal
            .run(move |w| w.user(&m))
            .await
            .map_err(|e| format!("the tool results could not be written to the transcript: {e}"))?;
        {
            let mut live = self.live();
            live.history.push(message);
            for a in &attachments {
                live.attached.insert(a.path.clone());
            }
            live.attachments.extend(attachments.iter().cloned());
        }
        for a in &attachments {
            events.emit(attachment_event(a)).await;
        }
        Ok(halt || rejected)
    }

    /// One tool call with the session's hooks around it: PreToolUse (deny; ask and allow meet
    /// the call's permission decision as a [`crate::tools::Preset`]; `updatedInput` is what the
    /// decision and the tool see), the call (a question it asks goes through the hooks' asker:
    /// PermissionRequest), PostToolUse. Returns the output, the hooks' texts for after the
    /// results, and a `continue: false`.
    async fn run_hooked(
        &self,
        h: &SessionHooks,
        runner: &dyn ToolRunner,
        c: &crate::conversation::ToolUse,
        cx: ToolContext<'_>,
        deps: &Deps<'_>,
        events: &dyn Events,
    ) -> (super::events::ToolOutput, Vec<String>, Option<String>) {
        use crate::tools::Preset;
        let cancel = cx.cancel;
        let error = |content: String| super::events::ToolOutput {
            content,
            is_error: true,
            ..Default::default()
        };
        let pre = h.pre_tool(c, None, cancel, events).await;
        let mut texts = pre.texts;
        let mut stop = pre.stop;
        let call = match pre.updated_input {
            Some(input) => crate::conversation::ToolUse {
                id: c.id.clone(),
                name: c.name.clone(),
                input,
            },
            None => c.clone(),
        };
        let preset = match pre.permission {
            Some(Permission::Deny(text)) => return (error(text), texts, stop),
            Some(Permission::Ask(reason)) => Some(Preset::Ask(reason)),
            Some(Permission::Allow) => Some(Preset::Allow),
            None => None,
        };
        if cancel.is_cancelled() {
            return (
                error("The user cancelled before this tool ran; it did not run.".into()),
                texts,
                stop,
            );
        }
        let started = std::time::Instant::now();
        let mut out = self
            .run_call(
                runner,
                &call,
                ToolContext {
                    preset: preset.as_ref(),
                    ..cx
                },
                deps,
                events,
            )
            .await;
        let took = started.elapsed();
        // A PermissionRequest hook denied it: its message is the result (not the user's
        // rejection: the turn goes on).
        if let Some(message) = h.settle(&call.id) {
            out = error(message);
        }
        // PostToolUse follows a call that succeeded (a failed one is Claude Code's
        // PostToolUseFailure, which claude-context does not run).
        if !out.is_error {
            let post = h
                .post_tool(&call, None, &call.input, &out, took, cancel, events)
                .await;
            texts.extend(post.texts);
            stop = stop.or(post.stop);
        }
        (out, texts, stop)
    }

    /// One tool call: an `Agent` call runs a subagent (when the session offers the tool: a
    /// deny rule removes it), any other goes to the runner.
    async fn run_call(
        &self,
        runner: &dyn ToolRunner,
        call: &crate::conversation::ToolUse,
        cx: ToolContext<'_>,
        deps: &Deps<'_>,
        events: &dyn Events,
    ) -> super::events::ToolOutput {
        if call.name == super::subagent::TOOL
            && self.snapshot.agents().is_some()
            && runner
                .specs()
                .iter()
                .any(|s| s.name == super::subagent::TOOL)
        {
            let parent = super::subagent::Parent {
                session: self,
                runner,
                deps,
                events,
                depth: 1,
            };
            return super::subagent::run(&parent, call, cx.cancel).await;
        }
        runner.run(call, cx).await
    }

    /// Touches files a tool read or wrote; returns what they newly attach.
    fn touch(&self, fs: &dyn Fs, files: &[PathBuf]) -> Vec<Attached> {
        if files.is_empty() {
            return Vec::new();
        }
        let ctx = &self.snapshot.ctx;
        let mut live = self.live();
        let before = live.attacher.attachments.len();
        for f in files {
            live.attacher.touch(fs, ctx, f);
        }
        let Live {
            attacher, attached, ..
        } = &*live;
        attacher.attachments[before..]
            .iter()
            .filter(|a| !attached.contains(&a.record.path))
            .map(|a| {
                let text = a.text();
                Attached {
                    path: a.record.path.clone(),
                    trigger: a.trigger.clone(),
                    tokens: crate::context::estimate_tokens(&text) as u64,
                    text,
                }
            })
            .collect()
    }

    /// Reads a stream to its answer, reporting deltas, retries and restarts; also returns the
    /// edits the API applied to the request (context editing).
    ///
    /// Deltas that have already arrived together (one network read, or a backlog while the
    /// editor was slow to take events) go out as one event: consecutive text or thinking deltas
    /// of one block are merged, up to [`MERGED_DELTA_LIMIT`] bytes, without waiting for more.
    /// With an `interval` (`chat.deltaIntervalMs`, asked for by an editor that redraws once a
    /// frame), delta events of a block go out at most once per interval: a delta after a quiet
    /// spell goes out at once, those that follow within the interval are joined at its end.
    /// Any other event ends the gathering first, so order is kept. Without one, nothing waits:
    /// the server adds no latency to a piece of the answer (the spec's P9).
    async fn drain(
        &self,
        stream: llm::EventStream,
        interval: Duration,
        events: &dyn Events,
    ) -> Result<(Message, Vec<llm::AppliedEdit>), llm::Error> {
        // Fused: looking ahead may meet the end, and the loop asks again.
        let mut stream = stream.fuse();
        let mut edits = Vec::new();
        let mut next = None;
        // When the last delta event went out: the next one gathers until a window after it.
        let mut last_delta: Option<Instant> = None;
        loop {
            let item = match next.take() {
                Some(item) => item,
                None => match stream.next().await {
                    Some(item) => item,
                    None => break,
                },
            };
            match item {
                // Text and thinking stream alike: deltas of one block gathered into one event.
                Ok(delta @ (Event::TextDelta { .. } | Event::ThinkingDelta { .. })) => {
                    let thinking = matches!(delta, Event::ThinkingDelta { .. });
                    let (Event::TextDelta { index, mut text }
                    | Event::ThinkingDelta { index, mut text }) = delta
                    else {
                        unreachable!("matched above")
                    };
                    next = gather(
                        &mut stream,
                        last_delta,
                        interval,
                        index,
                        &mut text,
                        |e| match e {
                            Event::TextDelta { index, text } if !thinking => {
                                Some((*index, text.as_str()))
                            }
                            Event::ThinkingDelta { index, text } if thinking => {
                                Some((*index, text.as_str()))
                            }
                            _ => None,
                        },
                    )
                    .await;
                    last_delta = Some(Instant::now());
                    let index = index as u32;
                    events
                        .emit(if thinking {
                            ChatEvent::Thinking { index, text }
                        } else {
                            ChatEvent::Text { index, text }
                        })
                        .await
                }
                Ok(Event::Retrying {
                    attempt,
                    of,
                    delay,
                    cause,
                }) => {
                    let mut e = error_event("retry", cause, None);
                    if let ChatEvent::Error(r) = &mut e {
                        r.error_kind = retry_kind(&r.message).to_string();
                        r.retry = Some(RetryInfo {
                            attempt,
                            of,
                            delay_ms: delay.as_millis() as u64,
                        });
                    }
                    events.emit(e).await;
                }
                Ok(Event::Restarted { partial, cause }) => {
                    let c = cause.clone();
                    if let Err(e) = self
                        .journal
                        .run(move |w| w.partial(&partial, PartialReason::Retried, &c))
                        .await
                    {
                        crate::log_warn!("a partial answer could not be written: {e}");
                    }
                    let mut e = error_event("connection", cause, None);
                    if let ChatEvent::Error(r) = &mut e {
                        r.restart = true;
                    }
                    events.emit(e).await;
                }
                Ok(Event::ContextEdited { edits: e }) => edits = e,
                Ok(Event::Done(m)) => return Ok((m, edits)),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Err(llm::Error {
            kind: ErrorKind::Protocol,
            message: "the stream ended without an answer".into(),
            status: None,
            api_type: None,
            request_id: None,
            attempts: 1,
            partial: None,
        })
    }

    /// A failed or cancelled request: keeps what had arrived (marked), says why.
    async fn failed(&self, e: llm::Error, events: &dyn Events) -> Outcome {
        let cancelled = e.kind == ErrorKind::Cancelled;
        if let Some(partial) = &e.partial {
            let (reason, cause) = if cancelled {
                (
                    PartialReason::Cancelled,
                    "cancelled by the user".to_string(),
                )
            } else {
                (PartialReason::Failed, e.to_string())
            };
            let m = (**partial).clone();
            match self
                .journal
                .run(move |w| w.partial(&m, reason, &cause))
                .await
            {
                Ok(_) => {
                    if let Some(kept) = partial.sendable_partial() {
                        self.live().history.push(kept);
                    }
                }
                Err(err) => crate::log_warn!("a partial answer could not be written: {err}"),
            }
        }
        if cancelled {
            return self.interrupted(events).await;
        }
        let kind = if e.is_auth() {
            "auth"
        } else {
            match e.kind {
                ErrorKind::Cancelled => "cancelled",
                ErrorKind::Config => "config",
                ErrorKind::Rejected => "rejected",
                ErrorKind::RateLimited => "rateLimited",
                ErrorKind::Overloaded => "overloaded",
                ErrorKind::Server => "server",
                ErrorKind::Connection => "connection",
                ErrorKind::Stalled => "stalled",
                ErrorKind::Protocol => "protocol",
            }
        };
        events
            .emit(error_event(kind, e.to_string(), e.status))
            .await;
        Outcome::Failed
    }

    /// The active output style's `<name> output style is active. …` as a `<system-reminder>`
    /// block (the reference's `system` message), or nothing for the default style.
    fn style_reminder(&self) -> Option<Block> {
        let style = self.style()?;
        Some(Block::injected(
            Origin::Reminder,
            super::hooks::reminder(&style.active_sentence()),
        ))
    }

    /// After a cancel: open tool calls get error results, and the model is told the user
    /// interrupted (as the reference CLI does).
    async fn interrupted(&self, _events: &dyn Events) -> Outcome {
        let history = self.history();
        let mut content = Vec::new();
        if let Some(closing) = compose::close_open_tool_calls(
            &history,
            "The user cancelled before this tool ran; it did not run.",
        ) {
            content = closing.content;
        }
        content.push(Block::injected(Origin::Interruption, INTERRUPTED));
        let message = Message::user_blocks(content);
        let m = message.clone();
        match self.journal.run(move |w| w.user(&m)).await {
            Ok(_) => self.live().history.push(message),
            Err(e) => crate::log_warn!("the interruption could not be written: {e}"),
        }
        Outcome::Cancelled
    }
}

/// Work on a session's history outside a turn ([`Session::exclusive`]): the session refuses
/// messages until this is dropped.
pub struct Exclusive<'a> {
    idle: IdleOnDrop<'a>,
    /// Fired by `chat/cancel` (and by the driver's shutdown).
    pub cancel: CancellationToken,
}

impl Exclusive<'_> {
    /// The history now.
    pub fn history(&self) -> Vec<Message> {
        self.idle.0.history()
    }

    pub fn journal(&self) -> &Journal {
        &self.idle.0.journal
    }

    /// Replaces the history the next request sends. Record the change in the journal first.
    pub fn replace(&self, history: Vec<Message>) {
        let mut live = self.idle.0.live();
        live.history = history;
        // The last usage measured the history before: estimates until the next answer.
        live.usage = None;
    }
}

/// Clears the running turn when the turn ends, however it ends.
struct IdleOnDrop<'a>(&'a Session, String);

impl Drop for IdleOnDrop<'_> {
    fn drop(&mut self) {
        let mut live = self.0.live();
        if live.turn.as_ref().is_some_and(|t| t.id == self.1) {
            live.turn = None;
        }
    }
}

fn count(snapshot: &Snapshot, live: &Live) -> TokenCount {
    let system = snapshot.system();
    let estimate = compose::estimate_request(&system, &[], &live.history);
    let tokens = match &live.usage {
        Some(mark) => {
            let added: u64 = live.history[mark.len.min(live.history.len())..]
                .iter()
                .map(compose::estimate_message)
                .sum();
            mark.usage.context_tokens() + (added as f64 * ratio(mark)).round() as u64
        }
        None => estimate,
    };
    TokenCount {
        tokens,
        estimate,
        last_usage: live.usage.map(|m| m.usage),
    }
}

/// Real input tokens per estimated token of the request a usage answered.
fn ratio(mark: &UsageMark) -> f64 {
    let real = mark.usage.input_tokens
        + mark.usage.cache_creation_input_tokens
        + mark.usage.cache_read_input_tokens;
    if mark.estimate == 0 || real == 0 {
        1.0
    } else {
        real as f64 / mark.estimate as f64
    }
}

fn error_event(kind: &str, message: String, status: Option<u16>) -> ChatEvent {
    ChatEvent::Error(ErrorReport {
        message,
        error_kind: kind.to_string(),
        status,
        retry: None,
        restart: false,
    })
}

/// The kind of a retried fault, from the client's cause text (`429 rate_limit_error: …`,
/// `the stream stalled: …`, `malformed event stream: …`, a transport error).
fn retry_kind(cause: &str) -> &'static str {
    let c = cause.to_ascii_lowercase();
    if c.starts_with("429") || c.contains("rate_limit") {
        "rateLimited"
    } else if c.starts_with("529") || c.contains("overloaded") {
        "overloaded"
    } else if c.starts_with('5') || c.contains("api_error") {
        "server"
    } else if c.contains("stalled") || c.starts_with("no response within") {
        "stalled"
    } else if c.starts_with("malformed") {
        "protocol"
    } else {
        "connection"
    }
}

/// The most text one merged delta event carries.
const MERGED_DELTA_LIMIT: usize = 64 * 1024;

/// Appends to `text` the deltas of block `index` that are ready now and, with an `interval`
/// after a delta event (`last`), those that arrive until the interval has passed, as long as
/// `delta` recognises them and the text stays under [`MERGED_DELTA_LIMIT`]. Returns the first
/// item it took but could not merge (to be handled next), if any.
async fn gather(
    stream: &mut futures::stream::Fuse<llm::EventStream>,
    last: Option<Instant>,
    interval: Duration,
    index: usize,
    text: &mut String,
    delta: impl Fn(&Event) -> Option<(usize, &str)>,
) -> Option<Result<Event, llm::Error>> {
    let deadline = last.filter(|_| !interval.is_zero()).map(|t| t + interval);
    loop {
        if let Some(item) = merge_ready(stream, index, text, &delta) {
            return Some(item);
        }
        // No interval, or no delta event yet: only what is ready now.
        let deadline = deadline?;
        if text.len() >= MERGED_DELTA_LIMIT || stream.is_terminated() {
            return None;
        }
        let item = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(item)) => item,
            // The window closed, or the stream ended.
            Err(_) | Ok(None) => return None,
        };
        match &item {
            Ok(e) => match delta(e) {
                Some((i, more)) if i == index => text.push_str(more),
                _ => return Some(item),
            },
            Err(_) => return Some(item),
        }
    }
}

/// Appends to `text` the deltas of block `index` that `stream` has ready now (never waiting),
/// as long as `delta` recognises them and the text stays under [`MERGED_DELTA_LIMIT`]. Returns
/// the first item it took but could not merge (to be handled next), if any.
fn merge_ready(
    stream: &mut futures::stream::Fuse<llm::EventStream>,
    index: usize,
    text: &mut String,
    delta: &impl Fn(&Event) -> Option<(usize, &str)>,
) -> Option<Result<Event, llm::Error>> {
    use futures::FutureExt;
    while text.len() < MERGED_DELTA_LIMIT {
        let item = stream.next().now_or_never()??;
        match &item {
            Ok(e) => match delta(e) {
                Some((i, more)) if i == index => text.push_str(more),
                _ => return Some(item),
            },
            Err(_) => return Some(item),
        }
    }
    None
}

fn attachment_event(a: &Attached) -> ChatEvent {
    ChatEvent::Attachment {
        path: a.path.display().to_string(),
        trigger: a.trigger.display().to_string(),
        tokens: a.tokens,
    }
}

/// Paths a history already carries as attachments (`Contents of <path>:`), so a resumed
/// session does not attach them twice.
fn attached_paths(history: &[Message]) -> HashSet<PathBuf> {
    let mut out = HashSet::new();
    for m in history.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            let Block::Text(t) = b else { continue };
            if !matches!(t.origin, Origin::Attachment | Origin::Reminder) {
                continue;
            }
            if let Some(rest) = t.text.strip_prefix("<system-reminder>\nContents of ")
                && let Some(end) = rest.find(":\n\n")
            {
                out.insert(Path::new(&rest[..end]).to_path_buf());
            }
        }
    }
    out
}
