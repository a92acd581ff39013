//! Compaction in a running session (`../shared/spec/compaction.md`): the session's side of
//! [`crate::compact`], which decides and summarises; this module records, applies and reports.
//!
//! [`AutoCompact`] is the session's [`RequestHook`]:
//! - before every request it asks [`Compactor::before_request`] and carries the decision out:
//!   masking (tier 1), a full compaction (tier 3, with the session's own system prompt, tools and
//!   model), or a refusal to send above the blocking level;
//! - every request to the Anthropic API carries `context_management` when tier 2 is on, and
//!   every answer (with the edits the API applied) feeds the count ([`Compactor::answered`]);
//! - [`AutoCompact::run`] is `compact/run`: any tier on demand, or a dry run, while the session
//!   is held busy ([`Session::exclusive`]).
//!
//! **Order of a change, always:** the transcript record first (`microcompact`, or the whole
//! compaction: `Writer::compaction`), then the history the session sends, then the compactor's
//! state. A crash in between leaves the old history resumable; a record that cannot be written
//! leaves the history as it was.
//!
//! A full compaction re-reads the instruction files and the git snapshot through the driver's
//! [`Reread`] (instruction edits made during the session apply from then on) and re-injects the
//! most recently used files, read through the driver's file system (the editor's buffers in the
//! language server), only below the session's directory. The driver hears about long work and
//! the circuit breaker through an [`Observer`] (`$/progress` and `window/showMessage` in the
//! editor, stderr on the command line).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;

use super::chat::Session;
use super::compose;
use super::config::{Model, ModelConfig};
use super::events::{HookContext, HookOutcome, RequestHook};
use super::hooks::SessionHooks;
use super::journal::Journal;
use super::transcript::CompactMetadata;
use crate::compact::{
    Change, Compacted, Compactor, Decision, Failure, MaskPlan, ModelInfo, ModelSpec, Overrides,
    Reinject, Report, Summariser, Trigger, Turn,
};
/// What a front end names to run compaction and set its policy.
pub use crate::compact::{Mode, Policy, RunRequest, Settings};
use crate::conversation::Message;
use crate::fs::Fs;
use crate::host::Host;
use crate::llm::{AppliedEdit, CancellationToken, ContextManagement, SystemBlock, ToolSpec};

/// The instructions and git blocks as a new session would have them now, for the history after
/// a full compaction. `None`: keep the history's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blocks {
    pub instructions: Option<String>,
    pub git: Option<String>,
}

/// Re-reads [`Blocks`]; called on a blocking thread (it walks and may take a git snapshot).
pub type Reread = Arc<dyn Fn() -> Blocks + Send + Sync>;

/// The clock (the driver's [`Host::now`]).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// What the driver is told about compaction work.
pub trait Observer: Send + Sync {
    /// Work that calls the model (a summary) starts: `title` says what.
    fn started<'a>(&'a self, title: &'a str) -> BoxFuture<'a, ()>;
    /// That work ended, done or not.
    fn finished(&self) -> BoxFuture<'_, ()>;
    /// Automatic compaction stopped for the session after repeated failures: tell the user
    /// `message` (why, and what to do).
    fn breaker_tripped<'a>(&'a self, message: &'a str) -> BoxFuture<'a, ()>;
}

/// An observer that tells nobody.
pub struct Silent;

impl Observer for Silent {
    fn started<'a>(&'a self, _title: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
    fn finished(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn breaker_tripped<'a>(&'a self, _message: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Where compaction stood in a transcript that was resumed (from `Replay`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Estimated tokens masking freed after the newest usage.
    pub tokens_freed_since_usage: u64,
    /// The user messages the newest summary preserves.
    pub preserved: Vec<String>,
    /// When the newest answer was written (time-based masking).
    pub last_assistant_at: Option<DateTime<Utc>>,
}

/// Resolves the compaction policy of a session: the environment's overrides
/// (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, `DISABLE_AUTO_COMPACT`,
/// read through the host) over `settings` over the model's defaults. The notes say what was not
/// understood.
pub fn policy(
    host: &Host,
    config: &ModelConfig,
    settings: &Settings,
) -> (Policy, Vec<crate::compact::Note>) {
    Policy::resolve(
        ModelInfo {
            id: &config.model,
            window: None,
            max_output_tokens: u64::from(config.max_tokens),
        },
        settings,
        &Overrides::from_env(|k| host.var(k).map(str::to_owned)),
    )
}

/// What a manual run could not do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// A turn (or another compaction) is running.
    Busy { turn_id: String },
    /// The compaction failed; the history is unchanged. The message says why.
    Failed(String),
    /// A PreCompact hook stopped it; the history is unchanged. The hook's text.
    Blocked(String),
    /// The change could not be written to the transcript; the history is unchanged.
    Transcript(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Busy { turn_id } => write!(
                f,
                "the session is busy ({turn_id}); wait for its `done` or cancel it first"
            ),
            RunError::Failed(m) => write!(f, "the compaction failed: {m}"),
            RunError::Blocked(m) => f.write_str(m),
            RunError::Transcript(m) => write!(
                f,
                "the compaction was not applied: the transcript cannot be written ({m})"
            ),
        }
    }
}

/// A session's compaction: its [`Compactor`] and how to re-read and report.
pub struct AutoCompact {
    state: Mutex<State>,
    /// The session's directory (real path): only files below it are re-injected.
    root: PathBuf,
    fs: Arc<dyn Fs>,
    reread: Option<Reread>,
    observer: Arc<dyn Observer>,
    clock: Clock,
    /// The session's hooks (PreCompact, SessionStart `compact`, PostCompact).
    hooks: OnceLock<Arc<SessionHooks>>,
}

struct State {
    compactor: Compactor,
    /// When the newest answer arrived (time-based masking).
    last_answer_at: Option<DateTime<Utc>>,
}

/// Why a full compaction did not replace the history.
enum FullError {
    Failed(Failure),
    Transcript(String),
    /// A PreCompact hook said no.
    Blocked(String),
}

impl AutoCompact {
    /// The compaction of a new session in `root`.
    pub fn new(policy: Policy, root: PathBuf, fs: Arc<dyn Fs>, clock: Clock) -> AutoCompact {
        AutoCompact {
            state: Mutex::new(State {
                compactor: Compactor::new(policy),
                last_answer_at: None,
            }),
            root,
            fs,
            reread: None,
            observer: Arc::new(Silent),
            clock,
            hooks: OnceLock::new(),
        }
    }

    /// The session's hooks, run around every full compaction (set once).
    pub fn set_hooks(&self, hooks: Arc<SessionHooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// The compaction of a resumed session: its count and preserved messages as the running
    /// session had them.
    pub fn resumed(
        policy: Policy,
        history: &[Message],
        resume: &Resume,
        root: PathBuf,
        fs: Arc<dyn Fs>,
        clock: Clock,
    ) -> AutoCompact {
        let c = AutoCompact::new(policy, root, fs, clock);
        {
            let mut st = c.lock();
            st.compactor = Compactor::resumed(
                policy,
                history,
                resume.tokens_freed_since_usage,
                resume.preserved.clone(),
            );
            st.last_answer_at = resume.last_assistant_at;
        }
        c
    }

    /// How a full compaction re-reads the instructions and git blocks.
    pub fn with_reread(mut self, reread: Reread) -> AutoCompact {
        self.reread = Some(reread);
        self
    }

    /// Who hears about long work and the breaker.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> AutoCompact {
        self.observer = observer;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.lock().compactor.policy
    }

    /// The compactor's state now (count, breaker, preserved messages).
    pub fn compactor(&self) -> Compactor {
        self.lock().compactor.clone()
    }

    fn turn<'a>(
        &self,
        history: &'a [Message],
        system: &[SystemBlock],
        tools: &[ToolSpec],
    ) -> Turn<'a> {
        Turn {
            history,
            overhead_tokens: compose::estimate_request(system, tools, &[]),
            now: (self.clock)(),
            last_assistant_at: self.lock().last_answer_at,
        }
    }

    /// Records and applies a masking plan.
    async fn mask(
        &self,
        journal: &Journal,
        history: &mut [Message],
        plan: &MaskPlan,
    ) -> Result<(), String> {
        let p = plan.clone();
        journal
            .run(move |w| w.masking(&p))
            .await
            .map_err(|e| e.to_string())?;
        plan.apply(history);
        self.lock().compactor.masked(plan);
        Ok(())
    }

    /// After the summary, before the record: SessionStart (`compact`) and PostCompact, which
    /// may add to the new history; then the record, then the hooks' context.
    #[allow(clippy::too_many_arguments)]
    async fn commit_hooked(
        &self,
        journal: &Journal,
        history: &mut Vec<Message>,
        c: &mut Compacted,
        pre: Option<super::hooks::CompactRun>,
        trigger: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let mut parts = None;
        if let (Some(h), Some(pre)) = (self.hooks.get(), pre) {
            parts = h
                .post_compact(trigger, &c.summary.clone(), pre, &mut c.history, cancel)
                .await;
        }
        self.commit(journal, history, c).await?;
        if let Some(p) = &parts {
            let p = p.clone();
            if let Err(e) = journal.run(move |w| w.hook_context(&p)).await {
                crate::log_warn!("the hooks' context could not be written: {e}");
            }
        }
        if let Some(h) = self.hooks.get() {
            h.compacted(parts);
        }
        Ok(())
    }

    /// PreCompact, when the session has hooks: `Ok(None)` without hooks; `Err`: it blocked.
    async fn pre_compact(
        &self,
        trigger: &str,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Option<super::hooks::CompactRun>, String> {
        match self.hooks.get() {
            Some(h) => h.pre_compact(trigger, focus, cancel).await.map(Some),
            None => Ok(None),
        }
    }

    /// Records a full compaction and makes its history the session's.
    async fn commit(
        &self,
        journal: &Journal,
        history: &mut Vec<Message>,
        c: &Compacted,
    ) -> Result<(), String> {
        let meta = CompactMetadata {
            trigger: c.trigger.as_str().to_string(),
            pre_tokens: c.tokens_before,
            post_tokens: Some(c.tokens_after),
            user_messages: c.user_messages.clone(),
            ..CompactMetadata::default()
        };
        let new = c.history.clone();
        journal
            .run(move |w| w.compaction(meta, &new))
            .await
            .map_err(|e| e.to_string())?;
        *history = c.history.clone();
        self.lock().compactor.committed(c);
        Ok(())
    }

    /// Counts a failed compaction; tells the user when it stops automatic compaction.
    async fn failed(&self, failure: &Failure, observer: &dyn Observer) {
        crate::log_warn!("compaction failed: {failure}");
        let tripped = self.lock().compactor.failed(failure);
        if let Some(message) = tripped {
            crate::log_warn!("{message}");
            observer.breaker_tripped(&message).await;
        }
    }

    /// What the driver re-reads for a full compaction.
    async fn reread(&self) -> Blocks {
        match &self.reread {
            Some(r) => {
                let r = r.clone();
                tokio::task::spawn_blocking(move || r())
                    .await
                    .unwrap_or_default()
            }
            None => Blocks::default(),
        }
    }

    /// A full compaction of `history` (already masked when the decision asked for it): the
    /// summary request, then the record, then the new history.
    #[allow(clippy::too_many_arguments)]
    async fn full(
        &self,
        history: &mut Vec<Message>,
        journal: &Journal,
        model: &Model,
        system: &[SystemBlock],
        tools: &[ToolSpec],
        cancel: &CancellationToken,
        trigger: Trigger,
    ) -> Result<Compacted, FullError> {
        let pre = self
            .pre_compact(trigger.as_str(), None, cancel)
            .await
            .map_err(FullError::Blocked)?;
        let observer = self.observer.clone();
        observer.started("Compacting the conversation").await;
        let blocks = self.reread().await;
        let read = |p: &str| read_for_reinjection(&*self.fs, &self.root, p);
        let reinject = reinject(blocks, journal, &read);
        let summariser = summariser(model, system, tools, cancel);
        let compactor = self.compactor();
        let result = {
            let turn = self.turn(history, system, tools);
            compactor
                .full(&turn, trigger, None, &reinject, &summariser)
                .await
        };
        let out = match result {
            Ok(mut c) => match self
                .commit_hooked(journal, history, &mut c, pre, trigger.as_str(), cancel)
                .await
            {
                Ok(()) => Ok(c),
                Err(e) => Err(FullError::Transcript(e)),
            },
            Err(f) => {
                self.failed(&f, &*observer).await;
                Err(FullError::Failed(f))
            }
        };
        observer.finished().await;
        out
    }

    /// `compact/run`: any tier on demand, or a dry run that changes nothing and calls no model.
    /// The session is busy meanwhile (a message sent then is refused); `chat/cancel` stops it.
    /// `observer` replaces the session's for this run (a progress token the request carries).
    pub async fn run(
        &self,
        session: &Session,
        model: &Model,
        tools: &[ToolSpec],
        request: RunRequest<'_>,
        observer: Option<Arc<dyn Observer>>,
    ) -> Result<Report, RunError> {
        let guard = session.exclusive("compact").map_err(|e| match e {
            super::SendError::Busy { turn_id } => RunError::Busy { turn_id },
            other => RunError::Failed(other.to_string()),
        })?;
        let observer = observer.unwrap_or_else(|| self.observer.clone());
        let system = session.snapshot().system();
        let mut history = guard.history();
        let journal = guard.journal();
        let calls_model = !request.dry_run && request.mode != crate::compact::Mode::Micro;
        let pre = if calls_model {
            self.pre_compact("manual", request.focus, &guard.cancel)
                .await
                .map_err(RunError::Blocked)?
        } else {
            None
        };
        if calls_model {
            observer.started("Compacting the conversation").await;
        }
        let blocks = if request.mode == crate::compact::Mode::Micro {
            Blocks::default()
        } else {
            self.reread().await
        };
        let read = |p: &str| read_for_reinjection(&*self.fs, &self.root, p);
        let reinject = reinject(blocks, journal, &read);
        let summariser = summariser(model, &system, tools, &guard.cancel);
        let compactor = self.compactor();
        let result = {
            let turn = self.turn(&history, &system, tools);
            compactor.run(&request, &turn, &reinject, &summariser).await
        };
        let out = match result {
            Ok(mut run) => {
                // Each step is on disk before the session's history takes it.
                let mut changed = false;
                let mut applied = Ok(());
                match &mut run.change {
                    Change::None => {}
                    Change::Mask(plan) => {
                        applied = self.mask(journal, &mut history, plan).await;
                        changed = applied.is_ok();
                    }
                    Change::Full { mask, compacted } => {
                        if let Some(plan) = mask {
                            applied = self.mask(journal, &mut history, plan).await;
                            changed = applied.is_ok();
                        }
                        if applied.is_ok() {
                            applied = self
                                .commit_hooked(
                                    journal,
                                    &mut history,
                                    compacted,
                                    pre,
                                    "manual",
                                    &guard.cancel,
                                )
                                .await;
                            changed |= applied.is_ok();
                        }
                    }
                }
                if changed {
                    guard.replace(history);
                }
                applied.map(|()| run.report).map_err(RunError::Transcript)
            }
            Err(f) => {
                self.failed(&f, &*observer).await;
                Err(RunError::Failed(f.message))
            }
        };
        if calls_model {
            observer.finished().await;
        }
        out
    }
}

/// What a full compaction's new history takes from outside the history: the re-read blocks,
/// the recent files (through `read`), the transcript's path.
fn reinject<'a>(
    blocks: Blocks,
    journal: &Journal,
    read: crate::compact::full::ReadFile<'a>,
) -> Reinject<'a> {
    Reinject {
        read_file: Some(read),
        instructions: blocks.instructions,
        git: blocks.git,
        transcript_path: Some(journal.path().display().to_string()),
        ..Reinject::default()
    }
}

/// The model that writes a summary: the session's own, with its system prompt and tools (the
/// cached prefix is shared).
fn summariser<'a>(
    model: &'a Model,
    system: &[SystemBlock],
    tools: &[ToolSpec],
    cancel: &CancellationToken,
) -> Summariser<'a> {
    Summariser::Model(ModelSpec {
        provider: &*model.provider,
        model: model.config.model.clone(),
        system: system.to_vec(),
        tools: tools.to_vec(),
        max_tokens: model.config.max_tokens,
        thinking: None,
        betas: Vec::new(),
        cancel: cancel.clone(),
    })
}

impl RequestHook for AutoCompact {
    fn needed(&self, history: &[Message], system: &[SystemBlock], tools: &[ToolSpec]) -> bool {
        let turn = self.turn(history, system, tools);
        self.lock().compactor.before_request(&turn) != Decision::Send
    }

    fn before_request<'a>(&'a self, cx: HookContext<'a>) -> BoxFuture<'a, HookOutcome> {
        Box::pin(async move {
            let HookContext {
                history,
                journal,
                model,
                system,
                tools,
                cancel,
                ..
            } = cx;
            let (decision, before) = {
                let turn = self.turn(history, system, tools);
                let st = self.lock();
                (
                    st.compactor.before_request(&turn),
                    st.compactor.count(history, turn.overhead_tokens),
                )
            };
            let overhead = compose::estimate_request(system, tools, &[]);
            let count = |h: &[Message]| self.lock().compactor.count(h, overhead);
            match decision {
                Decision::Send => HookOutcome::Send,
                Decision::Blocked { message, .. } => HookOutcome::Blocked { message },
                Decision::Mask(plan) => match self.mask(journal, history, &plan).await {
                    Ok(()) => HookOutcome::Compacted {
                        tokens_before: before,
                        tokens_after: count(history),
                        mode: "micro".to_string(),
                    },
                    Err(e) => {
                        crate::log_warn!("masking skipped: the transcript cannot be written ({e})");
                        HookOutcome::Send
                    }
                },
                Decision::Full { mask } => {
                    let mut masked = false;
                    if let Some(plan) = &mask {
                        match self.mask(journal, history, plan).await {
                            Ok(()) => masked = true,
                            Err(e) => crate::log_warn!(
                                "masking skipped: the transcript cannot be written ({e})"
                            ),
                        }
                    }
                    let full = self
                        .full(
                            history,
                            journal,
                            model,
                            system,
                            tools,
                            cancel,
                            Trigger::Auto,
                        )
                        .await;
                    let why = match full {
                        Ok(_) => {
                            return HookOutcome::Compacted {
                                tokens_before: before,
                                tokens_after: count(history),
                                mode: "full".to_string(),
                            };
                        }
                        Err(FullError::Failed(f)) => f.message,
                        Err(FullError::Blocked(b)) => b,
                        Err(FullError::Transcript(e)) => {
                            crate::log_warn!(
                                "compaction not applied: the transcript cannot be written ({e})"
                            );
                            format!("the transcript cannot be written ({e})")
                        }
                    };
                    let now = count(history);
                    let blocking = self.policy().budget.blocking;
                    if now > blocking && !cancel.is_cancelled() {
                        return HookOutcome::Blocked {
                            message: format!(
                                "Not sent: the conversation holds about {now} tokens, more than the {blocking} a request may hold, and compacting it failed ({why}). Compact by hand with a focus hint, or start a new session."
                            ),
                        };
                    }
                    if masked {
                        HookOutcome::Compacted {
                            tokens_before: before,
                            tokens_after: now,
                            mode: "micro".to_string(),
                        }
                    } else {
                        HookOutcome::Send
                    }
                }
            }
        })
    }

    fn context_management(&self, provider: &str, tools: &[ToolSpec]) -> Option<ContextManagement> {
        self.lock()
            .compactor
            .context_management(provider, tools, false)
    }

    fn answered(&self, answer: &Message, history_len: usize, edits: &[AppliedEdit]) {
        let now = (self.clock)();
        let mut st = self.lock();
        st.compactor.answered(answer, history_len, edits);
        st.last_answer_at = Some(now);
    }
}

/// A file named by a tool call, as the `Read` tool shows it (`cat -n` style), when it is a
/// readable text file whose real path is below `root`; `None` otherwise (it is then not
/// re-injected).
pub fn read_for_reinjection(fs: &dyn Fs, root: &Path, file: &str) -> Option<String> {
    let path = crate::fs::normalize(root, Path::new(file));
    let real = fs.canonicalize(&path).ok()?;
    let root = fs.canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if !real.starts_with(&root) {
        return None;
    }
    let text = fs.read_text(&real).ok()?;
    Some(
        text.lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
            .collect(),
    )
}

/// The instructions and git blocks a new session in `ctx.cwd` would send now: what a full
/// compaction puts in its new history (a view of [`crate::assembly::assemble`], like a session's
/// start).
pub fn blocks(
    host: &Host,
    ctx: &crate::context::Context,
    git: Option<&crate::assembly::GitPart>,
) -> Blocks {
    use crate::assembly::{self, BlockKind, StartInput};
    let input = StartInput {
        git,
        without_system: true,
        ..StartInput::default()
    };
    let a = assembly::assemble(host, ctx, &crate::context::Attacher::new(ctx), &input);
    let text = |kind: BlockKind| {
        a.blocks
            .iter()
            .find(|b| b.kind == kind)
            .map(|b| b.text.clone())
    };
    Blocks {
        instructions: text(BlockKind::Instructions),
        git: text(BlockKind::GitStatus),
    }
}
