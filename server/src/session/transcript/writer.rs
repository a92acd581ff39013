//! Appending to a transcript: one record per line, each written with one `write` on a file
//! opened for append, then `fsync`ed, so a crash loses at most the record being written (and
//! that one shows as a torn last line, which reading skips).
//!
//! Records chain by `parentUuid`: each names the newest record of the history before it. A
//! partial answer that a retry replaced does not move that point (it hangs off the chain, kept
//! but out of the history); a compaction boundary starts a new chain (`parentUuid: null`,
//! `logicalParentUuid` = what it follows).
//!
//! A compaction is written whole before its history is used ([`Writer::compaction`]): the
//! boundary says how many message records follow it, so a reader that finds fewer (a crash in
//! the middle) keeps the history from before the compaction. Masking is one record
//! ([`Writer::masking`]), written before the masked history is sent.
//!
//! Nothing but conversation content is written: no request, header or environment value. Secrets
//! given to [`Writer::scrub`] are replaced by `[redacted]` in any record before it reaches the
//! disk (a tool's output could print the environment).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::record::{self, CompactMetadata, Partial, PartialReason, Record};
use super::replay::Transcript;
use crate::compact::MaskPlan;
use crate::conversation::{Message, Origin, Role};
use crate::llm::Secret;

/// What every record of a session repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionMeta {
    pub session_id: String,
    /// The working directory (the workspace root).
    pub cwd: String,
    /// The branch at the session's start; empty outside git.
    pub git_branch: String,
}

/// An open transcript.
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
    meta: SessionMeta,
    leaf: Option<String>,
    secrets: Vec<Secret>,
    /// The file may end in the middle of a line (a torn record found at resume, or a write that
    /// failed and could not be undone): the next record starts on a new line.
    torn: bool,
    /// A subagent's transcript: its agent id (every record `isSidechain: true`, `agentId`).
    agent: Option<String>,
}

/// The `version` of our records.
pub const VERSION: &str = concat!("claude-context ", env!("CARGO_PKG_VERSION"));

impl Writer {
    /// Starts `<dir>/<session id>.jsonl`, creating the directory. Fails if the file exists.
    /// Directory and file are private to the user (0700, 0600).
    pub fn create(dir: &Path, meta: SessionMeta) -> io::Result<Writer> {
        super::check_session_id(&meta.session_id)?;
        create_private_dir(dir)?;
        let path = dir.join(format!("{}.jsonl", meta.session_id));
        let file = open(&path, true)?;
        lock(&file, &meta.session_id)?;
        // The new name must survive a crash too.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(Writer {
            file,
            path,
            meta,
            leaf: None,
            secrets: Vec::new(),
            torn: false,
            agent: None,
        })
    }

    /// Starts a subagent's transcript, as the reference CLI keeps them: beside the session's
    /// `<session id>.jsonl`, `<session id>/subagents/agent-<agent id>.jsonl`, every record
    /// `isSidechain: true` with its `agentId` and the parent session's `sessionId`. Resume reads
    /// the session's own file only: a sidechain is never part of the main history.
    pub fn sidechain(session_file: &Path, meta: SessionMeta, agent_id: &str) -> io::Result<Writer> {
        super::check_session_id(&meta.session_id)?;
        if agent_id.is_empty()
            || !agent_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not an agent id: {agent_id:?}"),
            ));
        }
        let dir = session_file.with_extension("").join("subagents");
        create_private_dir(&dir)?;
        let path = dir.join(format!("agent-{agent_id}.jsonl"));
        let file = open(&path, true)?;
        Ok(Writer {
            file,
            path,
            meta,
            leaf: None,
            secrets: Vec::new(),
            torn: false,
            agent: Some(agent_id.to_string()),
        })
    }

    /// Continues an existing transcript (resume): `transcript` is what was read from it, and the
    /// next record follows its history's newest record. A torn last line is ended by the next
    /// record (which starts with a newline), so the fragment stays a line of its own (skipped by
    /// readers) instead of swallowing the record, and opening writes nothing: a full disk does
    /// not stop a resume.
    ///
    /// One writer per session: the file is locked (`flock`, exclusive) for as long as this
    /// writer lives; a second process resuming the same session gets an error saying so,
    /// instead of two writers interleaving records that a resume would then drop.
    pub fn append(path: &Path, transcript: &Transcript, meta: SessionMeta) -> io::Result<Writer> {
        super::check_session_id(&meta.session_id)?;
        let file = open(path, false)?;
        lock(&file, &meta.session_id)?;
        let leaf = transcript.replay().leaf;
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            meta,
            leaf,
            secrets: Vec::new(),
            torn: transcript.torn_tail,
            agent: None,
        })
    }

    /// Replaces this secret's value in every record written from now on.
    pub fn scrub(&mut self, secret: Secret) {
        if !secret.is_empty() {
            self.secrets.push(secret);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn session_id(&self) -> &str {
        &self.meta.session_id
    }

    /// The uuid the next record will name as its parent.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// A user message (typed text, tool results, attachments). Returns its uuid.
    pub fn user(&mut self, message: &Message) -> io::Result<String> {
        expect_role(message, Role::User)?;
        self.message(record::USER, message, None, false)
    }

    /// A complete assistant message.
    pub fn assistant(&mut self, message: &Message) -> io::Result<String> {
        expect_role(message, Role::Assistant)?;
        self.message(record::ASSISTANT, message, None, false)
    }

    /// An answer whose stream did not finish. One a retry replaced stays off the history.
    pub fn partial(
        &mut self,
        message: &Message,
        reason: PartialReason,
        cause: &str,
    ) -> io::Result<String> {
        expect_role(message, Role::Assistant)?;
        let partial = Partial {
            reason,
            cause: cause.to_string(),
        };
        self.message(record::ASSISTANT, message, Some(partial), false)
    }

    /// The start of a compacted history, in the reference CLI's shape (no record count). The
    /// summary and what follows it come next, as [`Writer::compact_summary`] and ordinary
    /// messages. A session writes [`Writer::compaction`] instead.
    pub fn compact_boundary(&mut self, trigger: &str, pre_tokens: u64) -> io::Result<String> {
        self.boundary(CompactMetadata {
            trigger: trigger.to_string(),
            pre_tokens,
            ..CompactMetadata::default()
        })
    }

    fn boundary(&mut self, metadata: CompactMetadata) -> io::Result<String> {
        let mut r = self.base(record::SYSTEM);
        r.subtype = Some(record::COMPACT_BOUNDARY.to_string());
        r.logical_parent_uuid = r.parent_uuid.take();
        r.content = Some(serde_json::Value::String(
            "Conversation compacted".to_string(),
        ));
        r.compact_metadata = Some(metadata);
        self.write(r, true)
    }

    /// A whole compaction: the boundary (with `records` set to the number of messages), then
    /// every message of the new history in order, the continuation message (the one holding an
    /// [`Origin::Summary`] block) marked `isCompactSummary`. Each record is fsynced; the
    /// compaction counts only once its last record is on disk, so a crash in the middle leaves
    /// the history from before it (readers skip an incomplete compaction). On an error the
    /// writer goes on from the old history, as readers will.
    ///
    /// Use the new history only after this returns `Ok`.
    pub fn compaction(
        &mut self,
        mut metadata: CompactMetadata,
        history: &[Message],
    ) -> io::Result<()> {
        let before = self.leaf.clone();
        metadata.records = Some(history.len());
        let result = (|| {
            self.boundary(metadata)?;
            for m in history {
                let summary = m.role == Role::User
                    && m.content.iter().any(
                        |b| matches!(b, crate::conversation::Block::Text(t) if t.origin == Origin::Summary),
                    );
                let kind = match m.role {
                    Role::User => record::USER,
                    Role::Assistant => record::ASSISTANT,
                };
                self.message(kind, m, None, summary)?;
            }
            Ok(())
        })();
        if result.is_err() {
            self.leaf = before;
        }
        result
    }

    /// A masking plan (compaction tier 1), as a `microcompact` record: the tool calls whose
    /// results it clears and the tokens freed. Write it before sending the masked history, so a
    /// resumed session masks the same results.
    pub fn masking(&mut self, plan: &MaskPlan) -> io::Result<String> {
        self.microcompact(&plan.ids(), plan.tokens_freed)
    }

    /// The continuation message that holds a compaction's summary.
    pub fn compact_summary(&mut self, message: &Message) -> io::Result<String> {
        expect_role(message, Role::User)?;
        self.message(record::USER, message, None, true)
    }

    /// What hooks put into the environment section of the system prompt (a `hook_context`
    /// record): a resumed session sends it again.
    pub fn hook_context(&mut self, parts: &crate::assembly::HookParts) -> io::Result<String> {
        let mut r = self.base(record::SYSTEM);
        r.subtype = Some(record::HOOK_CONTEXT.to_string());
        r.content = Some(serde_json::to_value(parts).map_err(io::Error::other)?);
        self.write(r, true)
    }

    /// Tool results cleared by masking (compaction tier 1).
    pub fn microcompact(
        &mut self,
        tool_use_ids: &[String],
        tokens_freed: u64,
    ) -> io::Result<String> {
        let mut r = self.base(record::SYSTEM);
        r.subtype = Some(record::MICROCOMPACT.to_string());
        r.content = Some(serde_json::Value::String(format!(
            "Cleared {} old tool result{}",
            tool_use_ids.len(),
            if tool_use_ids.len() == 1 { "" } else { "s" }
        )));
        r.tool_use_ids = tool_use_ids.to_vec();
        r.tokens_freed = Some(tokens_freed);
        self.write(r, true)
    }

    fn message(
        &mut self,
        kind: &str,
        message: &Message,
        partial: Option<Partial>,
        summary: bool,
    ) -> io::Result<String> {
        let advance = !matches!(&partial, Some(p) if p.reason == PartialReason::Retried);
        let mut r = self.base(kind);
        r.message = Some(message.clone());
        r.partial = partial;
        r.is_compact_summary = summary;
        self.write(r, advance)
    }

    fn base(&self, kind: &str) -> Record {
        Record {
            kind: kind.to_string(),
            uuid: Some(uuid::Uuid::new_v4().to_string()),
            parent_uuid: self.leaf.clone(),
            timestamp: Some(now()),
            session_id: Some(self.meta.session_id.clone()),
            cwd: Some(self.meta.cwd.clone()),
            git_branch: Some(self.meta.git_branch.clone()),
            version: Some(VERSION.to_string()),
            is_sidechain: self.agent.is_some(),
            agent_id: self.agent.clone(),
            ..Record::default()
        }
    }

    /// One line, one write, then fsync.
    fn write(&mut self, record: Record, advance: bool) -> io::Result<String> {
        let uuid = record.uuid.clone().unwrap_or_default();
        let mut line = serde_json::to_string(&record).map_err(io::Error::other)?;
        for s in &self.secrets {
            if let std::borrow::Cow::Owned(scrubbed) = s.scrub(&line) {
                line = scrubbed;
            }
        }
        line.push('\n');
        if self.torn {
            line.insert(0, '\n');
        }
        // A failed write (a full disk) is undone, so the file still ends with a whole record and
        // the caller can report the failure (nothing it reports as written is missing).
        let before = self.file.metadata().map(|m| m.len()).ok();
        if let Err(e) = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
        {
            let undone = before.is_some_and(|len| self.file.set_len(len).is_ok());
            self.torn |= !undone;
            return Err(e);
        }
        self.torn = false;
        if advance {
            self.leaf = Some(uuid.clone());
        }
        Ok(uuid)
    }
}

fn expect_role(message: &Message, role: Role) -> io::Result<()> {
    if message.role == role {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a {:?} message written as a {:?} record",
                message.role, role
            ),
        ))
    }
}

/// `2025-07-01T12:00:00.000Z`, as the reference CLI writes timestamps.
#[allow(clippy::disallowed_methods)] // reason: a record's timestamp is the wall-clock instant it is written; the host's clock seam is for the date the model is told.
pub(super) fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn open(path: &Path, create_new: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.append(true);
    if create_new {
        o.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// How long a busy lock is retried before it counts as held by another process: a child forked
/// by another thread (git, Bash, an MCP server) shares every open file of the process between
/// its `fork` and its `exec`, so a writer just closed can look busy for that instant (seen in
/// `tests/e2e/compact.rs` on a loaded machine).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// Takes the session's one-writer lock on its transcript, or says who holds it.
fn lock(file: &File, id: &str) -> io::Result<()> {
    #[cfg(unix)]
    {
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        loop {
            match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    return Err(io::Error::new(
                        io::ErrorKind::ResourceBusy,
                        format!(
                            "session {id} is open in another claude-context (an editor or a \
                             terminal); close it there first: two writers would lose each other's \
                             messages"
                        ),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    let _ = (file, id);
    Ok(())
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}
