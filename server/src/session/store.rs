//! Where sessions live and how one is started or resumed.
//!
//! - Ours: `$XDG_STATE_HOME/claude-context/projects/<slug>/<id>.jsonl` (default
//!   `~/.local/state/claude-context/…`). The slug is the session's working directory's (its
//!   real path, every character that is not ASCII alphanumeric replaced by `-`), as the
//!   reference CLI names its project folders: a session started in `repo/sub` is listed under
//!   `repo/sub`, like the reference CLI's.
//! - The reference CLI's: `~/.claude/projects/<slug>/` (`$CLAUDE_CONFIG_DIR` instead of
//!   `~/.claude` when set), listed and read, never written. Continuing one starts a new
//!   transcript of ours that first records the inherited history.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::chat::Session;
use super::config::Model;
use super::journal::Journal;
use super::snapshot::Snapshot;
use super::transcript::{self, SessionInfo, SessionMeta, Source, Transcript, Writer};
use crate::assembly::GitPart;
use crate::context::Context;
use crate::host::Host;

/// The transcript directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// `…/claude-context`.
    pub state_dir: PathBuf,
    /// The reference CLI's configuration directory (`~/.claude`).
    pub claude_dir: Option<PathBuf>,
}

/// A session opened from a transcript.
pub struct Resumed {
    pub session: Session,
    /// Whose transcript was read.
    pub source: Source,
    /// The reference CLI session this one continues (its transcript is never written).
    pub continues: Option<String>,
    /// Lines skipped or bridged while reading.
    pub warnings: Vec<String>,
    /// Where compaction stands in the history read ([`super::compaction::AutoCompact::resumed`]).
    pub compaction: super::compaction::Resume,
}

impl Store {
    pub fn from_host(host: &Host) -> Store {
        let home = host
            .home
            .clone()
            .unwrap_or_else(|| host.process_cwd.clone());
        Store {
            state_dir: transcript::state_dir(host.var("XDG_STATE_HOME").map(OsStr::new), &home),
            claude_dir: Some(
                host.var("CLAUDE_CONFIG_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| home.join(".claude")),
            ),
        }
    }

    /// Our transcripts of sessions in `cwd`.
    pub fn ours(&self, cwd: &Path) -> PathBuf {
        transcript::project_dir(&self.state_dir, cwd)
    }

    /// The reference CLI's transcripts of sessions in `cwd`.
    pub fn reference(&self, cwd: &Path) -> Option<PathBuf> {
        self.claude_dir
            .as_deref()
            .map(|d| transcript::reference_project_dir(d, cwd))
    }

    /// Sessions of `cwd`, ours and the reference CLI's, newest first.
    pub fn list(&self, cwd: &Path) -> Vec<SessionInfo> {
        transcript::list_project(&self.ours(cwd), self.reference(cwd).as_deref())
    }

    /// The transcript of session `id` of `cwd`: ours first.
    pub fn find(&self, cwd: &Path, id: &str) -> Result<(PathBuf, Source), String> {
        let ours = transcript::session_path(&self.ours(cwd), id).map_err(|e| e.to_string())?;
        if ours.is_file() {
            return Ok((ours, Source::Ours));
        }
        if let Some(dir) = self.reference(cwd) {
            let theirs = dir.join(format!("{id}.jsonl"));
            if theirs.is_file() {
                return Ok((theirs, Source::Reference));
            }
        }
        Err(format!(
            "no session {id} for {} (looked in {})",
            cwd.display(),
            self.ours(cwd).display()
        ))
    }

    /// A new session in `ctx.cwd`.
    pub fn start(
        &self,
        host: &Host,
        ctx: Arc<Context>,
        git: Option<&GitPart>,
        model: &Model,
        window: u64,
    ) -> Session {
        self.start_with(host, ctx, git, model, window, None)
    }

    /// [`Store::start`] with the skills of `ext` in the system prompt (and its MCP servers' parts
    /// from the first request on).
    pub fn start_with(
        &self,
        host: &Host,
        ctx: Arc<Context>,
        git: Option<&GitPart>,
        model: &Model,
        window: u64,
        ext: Option<&crate::extensions::Extensions>,
    ) -> Session {
        let snapshot = Snapshot::start_with(host, ctx, git, &model.config.model, ext);
        let id = transcript::new_session_id();
        let journal = Journal::lazy(
            &self.ours(&snapshot.ctx.cwd),
            meta(&id, &snapshot),
            Vec::new(),
            model.secret.clone(),
        );
        Session::new(id, snapshot, journal, Vec::new(), window)
    }

    /// Session `id` of `ctx.cwd`, read from its transcript. Ours continues in its file; the
    /// reference CLI's continues in a new one of ours (new id).
    pub fn resume(
        &self,
        host: &Host,
        ctx: Arc<Context>,
        id: &str,
        model: &Model,
        window: u64,
    ) -> Result<Resumed, String> {
        self.resume_with_git(host, ctx, id, model, window, None)
    }

    /// [`Store::resume`]; a reference CLI session's first message gets the instructions block and
    /// `git`'s block (as its `--resume` sends them again), and what it attached stays attached.
    pub fn resume_with_git(
        &self,
        host: &Host,
        ctx: Arc<Context>,
        id: &str,
        model: &Model,
        window: u64,
        git: Option<&GitPart>,
    ) -> Result<Resumed, String> {
        self.resume_with(host, ctx, id, model, window, git, None)
    }

    /// [`Store::resume_with_git`] whose system prompt lists `ext`'s skills (and, from its first
    /// request, MCP servers), as a new session's does.
    #[allow(clippy::too_many_arguments)] // reason: the start's inputs, each of its own kind.
    pub fn resume_with(
        &self,
        host: &Host,
        ctx: Arc<Context>,
        id: &str,
        model: &Model,
        window: u64,
        git: Option<&GitPart>,
        ext: Option<&crate::extensions::Extensions>,
    ) -> Result<Resumed, String> {
        let (path, source) = self.find(&ctx.cwd, id)?;
        let t = Transcript::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut replay = t.replay();
        let mut attached = Vec::new();
        if source == Source::Reference {
            super::snapshot::complete_first_message(
                host,
                &ctx,
                git,
                &model.config.model,
                &mut replay.history,
            );
            attached = t.attached_paths();
        }
        let warnings: Vec<String> = t
            .warnings
            .iter()
            .chain(&replay.warnings)
            .map(|w| format!("{}:{}: {}", path.display(), w.line, w.message))
            .collect();
        let snapshot = Snapshot::resumed_with(host, ctx, &replay.history, &model.config.model, ext);
        // The environment section sends again what hooks put into it.
        if let Some(parts) = replay.hook_parts.take() {
            snapshot.set_hook_parts(parts);
        }
        let (new_id, journal, continues) = match source {
            Source::Ours => {
                let mut w = Writer::append(&path, &t, meta(id, &snapshot))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if let Some(s) = &model.secret {
                    w.scrub(s.clone());
                }
                (id.to_string(), Journal::open(w), None)
            }
            Source::Reference => {
                let new_id = transcript::new_session_id();
                let journal = Journal::lazy(
                    &self.ours(&snapshot.ctx.cwd),
                    meta(&new_id, &snapshot),
                    replay.history.clone(),
                    model.secret.clone(),
                );
                (new_id, journal, Some(id.to_string()))
            }
        };
        let compaction = super::compaction::Resume {
            tokens_freed_since_usage: replay.tokens_freed_since_usage,
            preserved: replay
                .compaction
                .as_ref()
                .map(|c| c.user_messages.clone())
                .unwrap_or_default(),
            last_assistant_at: replay
                .last_assistant_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Utc)),
        };
        let mut session = Session::new(new_id, snapshot, journal, replay.history, window);
        session.restore_usage(replay.last_usage);
        session.mark_attached(attached);
        Ok(Resumed {
            session,
            source,
            continues,
            warnings,
            compaction,
        })
    }
}

fn meta(id: &str, s: &Snapshot) -> SessionMeta {
    SessionMeta {
        session_id: id.to_string(),
        cwd: s.ctx.cwd.display().to_string(),
        git_branch: s.git_branch.clone(),
    }
}
