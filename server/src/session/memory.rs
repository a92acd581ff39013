//! Auto-memory extraction after a turn (session.md section 5): [`Extractor`] is the session's
//! [`AfterTurn`] hook.
//!
//! When a turn completes without a pending tool call and the session has a memory directory, it
//! starts one background task (`memory:<session>`, [`TaskKind::MemoryExtraction`], single
//! flight) and returns at once: the next turn never waits for it. The task sends one request
//! made of the session's own system blocks, tools and whole history (so it starts with the
//! prefix the turn just wrote to the prompt cache), followed by one injected user message that
//! asks for the memories worth keeping from the messages since the last extraction, as JSON.
//! [`crate::memory::extract`] parses the answer and writes the topic files and MEMORY.md.
//!
//! - A turn in which the conversation itself wrote into the memory directory (a tool call whose
//!   input names it) is skipped, and counts as extracted.
//! - A failed request or a malformed answer is logged; the cursor stays, so the next turn's
//!   extraction covers these messages again. Nothing is shown to the user as an error.
//! - The session's own snapshot does not change (the prompt cache depends on it): the driver's
//!   `on_saved` callback makes previews show the new files as pending, and the next session
//!   loads MEMORY.md in its instructions.
//! - The API key is scrubbed from everything written.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::compose;
use super::config::Model;
use super::events::{AfterTurn, Outcome, TurnEnd};
use crate::conversation::{Block, Message, Origin, Role, StopReason};
use crate::fs::{Fs, RealFs, WriteFs};
use crate::llm::{CancellationToken, Event, SystemBlock, ToolSpec};
use crate::memory::extract::{self, Saved};
use crate::tasks::{OnConflict, TaskKind, Tasks};

/// Called with the files an extraction wrote (topic files, then MEMORY.md).
pub type OnSaved = Arc<dyn Fn(&[PathBuf]) + Send + Sync>;

/// The after-turn hook that keeps auto-memory. One per session.
pub struct Extractor {
    tasks: Tasks,
    fs: Arc<dyn Fs>,
    write: Arc<dyn WriteFs>,
    /// History length up to which the conversation was reviewed (or skipped).
    cursor: Arc<Mutex<usize>>,
    on_saved: OnSaved,
}

impl Extractor {
    /// An extractor on the real disk, starting its work in `tasks`.
    pub fn new(tasks: Tasks) -> Extractor {
        Extractor::with_fs(tasks, Arc::new(RealFs), Arc::new(RealFs))
    }

    pub fn with_fs(tasks: Tasks, fs: Arc<dyn Fs>, write: Arc<dyn WriteFs>) -> Extractor {
        Extractor {
            tasks,
            fs,
            write,
            cursor: Arc::default(),
            on_saved: Arc::new(|_| {}),
        }
    }

    /// What to do once files were written (the language server refreshes its previews).
    pub fn on_saved(mut self, f: OnSaved) -> Extractor {
        self.on_saved = f;
        self
    }

    /// The task key of a session's extraction.
    pub fn key(session_id: &str) -> String {
        format!("memory:{session_id}")
    }

    /// Waits (at most `limit`) for a running extraction of the session to end: the command
    /// line calls this before it exits, so a one-shot chat still saves its memories.
    pub async fn settle(&self, session_id: &str, limit: Duration) {
        let key = Extractor::key(session_id);
        let end = Instant::now() + limit;
        while self.tasks.is_running(&key) && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Is extraction turned off by the environment (`CLAUDE_CONTEXT_AUTO_MEMORY=0`, `false`, `off`
/// or `no`)? `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1` turns all of auto-memory off, and with it the
/// memory directory extraction needs.
pub fn off_by_env(host: &crate::host::Host) -> bool {
    matches!(
        host.var("CLAUDE_CONTEXT_AUTO_MEMORY"),
        Some("0" | "false" | "off" | "no")
    )
}

/// Sets an [`Extractor`] on the session unless the environment turned extraction off; returns
/// it (the command line waits for it before exiting). Call it inside the runtime.
pub fn attach(host: &crate::host::Host, session: &super::Session) -> Option<Arc<Extractor>> {
    if off_by_env(host) {
        return None;
    }
    let e = Arc::new(Extractor::new(
        Tasks::new(tokio::runtime::Handle::current()),
    ));
    session.set_after_turn(e.clone());
    Some(e)
}

impl AfterTurn for Extractor {
    fn after_turn(&self, end: TurnEnd<'_>) {
        let Some(dir) = end.memory_dir else { return };
        // Whatever chose the directory (a setting, a repository's `autoMemoryDirectory`), no
        // memory is written where Claude Code reads files as instructions.
        if let Err(e) = crate::memory::refuse_instruction_dirs(dir, None) {
            crate::log_warn!("memory extraction skipped: {e}");
            return;
        }
        if end.outcome != Outcome::Completed || end.stop_reason == Some(&StopReason::ToolUse) {
            return;
        }
        let len = end.history.len();
        let since = {
            let mut c = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
            // A compaction shortened the history: review what is there now.
            if *c > len {
                *c = 0;
            }
            *c
        };
        let new = &end.history[since..];
        if !new
            .iter()
            .any(|m| m.role == Role::User && m.authored_text().is_some())
        {
            return;
        }
        if wrote_memory(new, dir) {
            crate::log_debug!(
                "memory extraction skipped for {}: the conversation wrote memory itself",
                end.session_id
            );
            *self.cursor.lock().unwrap_or_else(|p| p.into_inner()) = len;
            return;
        }
        let job = Job {
            model: end.model.clone(),
            system: end.system.to_vec(),
            tools: end.tools.to_vec(),
            history: end.history.to_vec(),
            since,
            dir: dir.to_path_buf(),
            fs: self.fs.clone(),
            write: self.write.clone(),
        };
        let cursor = self.cursor.clone();
        let on_saved = self.on_saved.clone();
        let session = end.session_id.to_string();
        self.tasks.spawn(
            TaskKind::MemoryExtraction,
            &Extractor::key(&session),
            OnConflict::Join,
            move |token| async move {
                match job.run(&token).await {
                    Ok(saved) => {
                        let mut c = cursor.lock().unwrap_or_else(|p| p.into_inner());
                        *c = (*c).max(len);
                        drop(c);
                        for f in &saved.failed {
                            crate::log_warn!("memory extraction ({session}): not saved: {f}");
                        }
                        if !saved.written.is_empty() {
                            crate::log_info!(
                                "memory extraction ({session}): saved {}",
                                saved
                                    .written
                                    .iter()
                                    .map(|p| p.display().to_string())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            );
                            on_saved(&saved.written);
                        }
                    }
                    Err(e) => crate::log_warn!(
                        "memory extraction ({session}) failed: {e}; tried again after the next turn"
                    ),
                }
            },
        );
    }
}

/// Did a tool call in `messages` name a path in the memory directory (the model saved memory
/// itself)?
pub fn wrote_memory(messages: &[Message], dir: &Path) -> bool {
    let dir = dir.to_string_lossy();
    let dir = dir.trim_end_matches('/');
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_uses())
        .any(|c| c.input.to_string().contains(dir))
}

/// One extraction's inputs, owned by its task.
struct Job {
    model: Model,
    system: Vec<SystemBlock>,
    tools: Vec<ToolSpec>,
    history: Vec<Message>,
    since: usize,
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    write: Arc<dyn WriteFs>,
}

impl Job {
    async fn run(self, cancel: &CancellationToken) -> Result<Saved, String> {
        let existing = extract::existing(&*self.fs, &self.dir);
        let mut messages = self.history;
        let recent = messages.len() - self.since;
        messages.push(Message::user_blocks(vec![Block::injected(
            Origin::Meta,
            prompt(recent, &self.dir, &existing),
        )]));
        let req = compose::request(self.system, &self.model.config, &messages, self.tools);
        let mut stream = self.model.provider.stream(&req, cancel.clone());
        let mut answer = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(Event::Done(m)) => {
                    answer = Some(m);
                    break;
                }
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        let answer = answer.ok_or("the stream ended without an answer")?;
        if answer.tool_uses().next().is_some() {
            return Err("the model called a tool instead of answering".into());
        }
        let parsed = extract::parse(&answer.text())?;
        for d in &parsed.dropped {
            crate::log_warn!("memory extraction: an entry was dropped: {d}");
        }
        // The one scrubber: the key in every form it knows.
        let scrubber = crate::scrub::Scrubber::new(self.model.secret.as_ref().map(|k| k.expose()));
        let scrub = move |s: &str| scrubber.scrub(s).into_owned();
        Ok(extract::save(
            &*self.fs,
            &*self.write,
            &self.dir,
            &parsed.memories,
            &scrub,
        ))
    }
}

/// The request's last message (our own words).
pub fn prompt(recent: usize, dir: &Path, existing: &str) -> String {
    let existing = if existing.trim().is_empty() {
        "(nothing yet)".to_string()
    } else {
        existing.trim_end().to_string()
    };
    format!(
        "This message comes from the session's memory keeper, not from the user. Do not call tools and do not answer the conversation.\n\n\
Review the last {recent} messages above (everything since the last memory review) and decide what is worth remembering in future conversations about this project. Worth keeping:\n\
- user: who the user is: their role, expertise, preferences.\n\
- feedback: corrections the user made and ways of working they asked for or confirmed.\n\
- project: facts about the project that the code, the git history and the instruction files do not tell (decisions, deadlines, who owns what).\n\
- reference: where to find things outside the project (dashboards, tickets, documents).\n\
Not worth keeping: what the code, the git history or the CLAUDE.md files already say, the details of the task at hand, and secrets (keys, passwords, tokens).\n\n\
Memory kept so far, in {dir}:\n{existing}\n\n\
To change a memory that exists, reuse its name and give its complete new content. Answer with JSON only: a list of objects {{\"type\": \"user|feedback|project|reference\", \"name\": \"short_file_name\", \"description\": \"one line, under 100 characters\", \"content\": \"the memory, in Markdown\"}}. Names use letters, digits, - and _ only. Answer [] when nothing is worth keeping.",
        dir = dir.display()
    )
}
