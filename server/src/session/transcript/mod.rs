//! Transcripts: one JSONL file per session, append-only, in the user's state directory.
//!
//! - Where: `$XDG_STATE_HOME/claude-context/projects/<slug>/<session id>.jsonl` (default
//!   `~/.local/state/claude-context/…`), the slug being the project root's path with every
//!   character that is not ASCII alphanumeric replaced by `-` (as for memory). The reference CLI's
//!   own sessions are under `~/.claude/projects/<slug>/` (`$CLAUDE_CONFIG_DIR` instead of
//!   `~/.claude` when set); they are listed and read, never written.
//! - What: records close to the reference CLI's ([`Record`]): `type`, `uuid`, `parentUuid`,
//!   `timestamp`, `sessionId`, `cwd`, `gitBranch`, `version`, `message {role, content, …}`, plus
//!   ours: `partial` on an unfinished answer, `system`/`microcompact` for masked tool results.
//! - Durability: [`Writer`] fsyncs every record (user message, assistant message, compaction);
//!   [`Transcript::parse`] skips a torn last line (and any invalid line) with a warning, keeping
//!   every other record; [`Transcript::replay`] rebuilds the history last sent.
//! - [`list_project`]: the sessions of a project, ours and the reference CLI's.
//!
//! Paths come in as data ([`state_dir`] takes `$XDG_STATE_HOME` and the home directory as
//! arguments): the caller's environment seam reads the environment.

mod list;
mod record;
mod replay;
mod writer;

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

pub use list::{SessionInfo, Source, list, list_project};
pub use record::{CompactMetadata, Partial, PartialReason, Record};
pub use replay::{Replay, Transcript, Warning};
pub use writer::{SessionMeta, VERSION, Writer};

/// Our state directory: `$XDG_STATE_HOME/claude-context`, or `~/.local/state/claude-context`
/// when the variable is unset, empty or relative (the XDG spec says to ignore a relative one).
pub fn state_dir(xdg_state_home: Option<&OsStr>, home: &Path) -> PathBuf {
    match xdg_state_home.map(Path::new) {
        Some(p) if p.is_absolute() => p.join("claude-context"),
        _ => home.join(".local/state/claude-context"),
    }
}

/// Where our transcripts of a project live.
pub fn project_dir(state_dir: &Path, project_root: &Path) -> PathBuf {
    state_dir
        .join("projects")
        .join(crate::memory::slug(project_root))
}

/// Where the reference CLI keeps a project's transcripts, given its configuration directory
/// (`~/.claude`). Recent versions shorten a slug longer than 200 characters and add a hash; such
/// a directory is found by its first 200 characters.
pub fn reference_project_dir(claude_dir: &Path, project_root: &Path) -> PathBuf {
    let projects = claude_dir.join("projects");
    let slug = crate::memory::slug(project_root);
    let exact = projects.join(&slug);
    if slug.len() <= 200 || exact.is_dir() {
        return exact;
    }
    let prefix = &slug[..200];
    std::fs::read_dir(&projects)
        .ok()
        .and_then(|entries| {
            entries.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(OsStr::to_str)
                    .is_some_and(|n| n.starts_with(prefix))
            })
        })
        .unwrap_or(exact)
}

/// A new session id (a UUID, like the reference CLI's).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The transcript file of a session in a directory. The id comes from a client: anything but
/// letters, digits, `-` and `_` is refused, so it cannot name a path elsewhere.
pub fn session_path(dir: &Path, session_id: &str) -> io::Result<PathBuf> {
    check_session_id(session_id)?;
    Ok(dir.join(format!("{session_id}.jsonl")))
}

pub(crate) fn check_session_id(id: &str) -> io::Result<()> {
    if !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is not a session id",
                id.chars().take(80).collect::<String>()
            ),
        ))
    }
}

#[cfg(test)]
mod tests;
