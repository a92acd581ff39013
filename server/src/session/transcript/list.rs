//! The sessions of a project: ours (writable) and the reference CLI's (read-only), newest first.
//!
//! Listing reads little: each file's first records until the first prompt (at most 4 MB) and its
//! last 64 KB (for the latest time and a title), never whole transcripts.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::record::{self, Record};

/// Whose transcript it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Written by claude-context; resuming continues it.
    Ours,
    /// Written by the reference CLI; opened read-only (continuing writes a new transcript of ours).
    Reference,
}

/// One session, as a list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    pub path: PathBuf,
    pub source: Source,
    pub read_only: bool,
    /// The reference CLI's latest `summary` title, else the first prompt cut to 100 characters.
    pub title: Option<String>,
    /// The first thing the user typed (its first [`MAX_PROMPT`] characters).
    pub first_prompt: Option<String>,
    pub started_at: Option<String>,
    /// The newest record's time, else the file's modification time.
    pub updated_at: Option<String>,
    pub bytes: u64,
}

const HEAD_LIMIT: u64 = 4 << 20;
const TAIL_BYTES: u64 = 64 << 10;

/// The sessions in one directory (none when it does not exist), newest first.
pub fn list(dir: &Path, source: Source) -> Vec<SessionInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionInfo> = entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let stem = path.file_stem()?.to_str()?.to_string();
            // Subagents' transcripts (`agent-*.jsonl`) are parts of a session, not sessions.
            if path.extension()? != "jsonl"
                || stem.starts_with("agent-")
                || super::check_session_id(&stem).is_err()
            {
                return None;
            }
            info(&path, stem, source)
        })
        .collect();
    sort(&mut out);
    out
}

/// Ours and the reference CLI's, newest first.
pub fn list_project(ours: &Path, reference: Option<&Path>) -> Vec<SessionInfo> {
    let mut out = list(ours, Source::Ours);
    if let Some(r) = reference {
        out.extend(list(r, Source::Reference));
    }
    sort(&mut out);
    out
}

fn sort(list: &mut [SessionInfo]) {
    list.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.id.cmp(&b.id))
    });
}

fn info(path: &Path, id: String, source: Source) -> Option<SessionInfo> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut s = SessionInfo {
        id,
        path: path.to_path_buf(),
        source,
        read_only: source == Source::Reference,
        title: None,
        first_prompt: None,
        started_at: None,
        updated_at: None,
        bytes: meta.len(),
    };
    let mut summary = None;
    let mut file = File::open(path).ok()?;
    {
        let mut head = BufReader::new((&mut file).take(HEAD_LIMIT));
        let mut line = Vec::new();
        while s.first_prompt.is_none() {
            line.clear();
            match head.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let Ok(r) = serde_json::from_slice::<Record>(&line) else {
                continue;
            };
            if s.started_at.is_none() {
                s.started_at = r.timestamp.clone();
            }
            if r.kind == record::SUMMARY {
                summary = r.summary.clone();
            }
            if r.kind == record::USER && !r.is_sidechain && !r.is_meta && !r.is_compact_summary {
                s.first_prompt = prompt(&r);
            }
        }
    }
    // The tail: the newest time, a newer title.
    let start = meta.len().saturating_sub(TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_ok() {
        let mut tail = Vec::new();
        let _ = file.read_to_end(&mut tail);
        let mut lines = tail.split(|&b| b == b'\n');
        if start > 0 {
            lines.next(); // cut in the middle
        }
        for line in lines {
            let Ok(r) = serde_json::from_slice::<Record>(line) else {
                continue;
            };
            if r.kind == record::SUMMARY && r.summary.is_some() {
                summary = r.summary.clone();
            }
            if r.timestamp.is_some() {
                s.updated_at = r.timestamp.clone();
            }
        }
    }
    if s.updated_at.is_none() {
        s.updated_at = meta.modified().ok().map(|t| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string()
        });
    }
    // A list shows the beginning of each: a session that starts with a pasted file costs a line.
    s.title = summary
        .map(|t| cut(&t, MAX_TITLE))
        .or_else(|| s.first_prompt.as_deref().map(|p| cut(p, 100)));
    s.first_prompt = s.first_prompt.map(|p| cut_keep_lines(&p, MAX_PROMPT));
    Some(s)
}

/// The authored text of a user record, when it is one (not a tool result or an injected note).
fn prompt(r: &Record) -> Option<String> {
    let mut m = r.message.clone()?;
    if !super::replay::written_by_us(r) {
        super::replay::mark_injected(r, &mut m);
    }
    let text = m.authored_text()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Characters kept of a title and of a first prompt in a list.
pub const MAX_TITLE: usize = 200;
pub const MAX_PROMPT: usize = 1000;

/// `text` cut to `max` characters (lines kept), `…` added when cut.
fn cut_keep_lines(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

fn cut(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && line.len() == text.len() {
        return line.to_string();
    }
    let mut out: String = line.chars().take(max).collect();
    out.push('…');
    out
}
