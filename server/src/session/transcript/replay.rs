//! Reading a transcript back: lines to records (a torn or invalid line is skipped with a
//! warning, every other record kept), then the history the model last saw.
//!
//! The history is the chain of `parentUuid` links from the newest conversation record back to
//! the start or to the last compaction boundary, as the reference CLI rebuilds it (so a
//! rewound branch or a subagent's records stay out). Along the chain, in order: messages are
//! appended (a partial answer by its sendable part, one replaced by a retry not at all, the
//! reference's one-record-per-block answers merged back by message id), and `microcompact`
//! records mask the results they name. A parent that is missing (a damaged line) is bridged
//! by file order, with a warning, rather than losing everything before it. A compaction whose
//! boundary announces more records than follow it was interrupted (a crash while it was being
//! written): the history is the one before it, as if it had not started.

use std::collections::{HashMap, HashSet};

use super::record::{self, CompactMetadata, PartialReason, Record};
use crate::conversation::{self, Block, Message, Origin, Role, Usage};

/// Something skipped or bridged while reading, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub line: usize,
    pub message: String,
}

/// A transcript's records in file order.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    pub records: Vec<Record>,
    /// The 1-based line of each record.
    pub lines: Vec<usize>,
    pub warnings: Vec<Warning>,
    /// The file does not end with a line break (a crash while writing): the writer ends the
    /// line before appending, so the fragment stays a line of its own.
    pub torn_tail: bool,
}

/// The history rebuilt from a transcript.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// The messages the next request continues from.
    pub history: Vec<Message>,
    /// The uuid of the newest record of the chain: the parent of the next one written.
    pub leaf: Option<String>,
    /// The usage of the newest complete answer in the history (the session's token count).
    pub last_usage: Option<Usage>,
    /// When the newest assistant message of the history was written (for time-based masking).
    pub last_assistant_at: Option<String>,
    /// The compaction the history starts from, if any (its metadata: trigger, counts, the user
    /// messages its summary preserves).
    pub compaction: Option<CompactMetadata>,
    /// Estimated tokens masking freed after the response that gave `last_usage` (so the count
    /// of a resumed session is the running one's).
    pub tokens_freed_since_usage: u64,
    /// What hooks put into the environment section, as last recorded since the history's start
    /// (its last compaction).
    pub hook_parts: Option<crate::assembly::HookParts>,
    /// Problems met while rebuilding (missing parents, cycles).
    pub warnings: Vec<Warning>,
}

impl Transcript {
    /// Parses a transcript's bytes. Never fails: what cannot be read is a warning.
    ///
    /// A large transcript is cut at line breaks into one piece per core, parsed in parallel
    /// (resume of 50 MB is mostly JSON parsing), and put back together in order.
    pub fn parse(bytes: &[u8]) -> Transcript {
        let ends_clean = bytes.last().is_none_or(|&b| b == b'\n');
        let pieces = pieces(bytes);
        let mut t = if pieces.len() == 1 {
            parse_piece(bytes, 0, true, ends_clean)
        } else {
            let last = pieces.len() - 1;
            std::thread::scope(|scope| {
                let handles: Vec<_> = pieces
                    .iter()
                    .enumerate()
                    .map(|(i, &(first_line, piece))| {
                        scope.spawn(move || parse_piece(piece, first_line, i == last, ends_clean))
                    })
                    .collect();
                let mut t = Transcript::default();
                for h in handles {
                    // A piece's parse cannot panic on any input; should it, the join says so.
                    let part = h.join().unwrap_or_default();
                    t.records.extend(part.records);
                    t.lines.extend(part.lines);
                    t.warnings.extend(part.warnings);
                }
                t
            })
        };
        t.torn_tail = !ends_clean;
        t
    }

    /// Reads and parses a file.
    pub fn read(path: &std::path::Path) -> std::io::Result<Transcript> {
        Ok(Transcript::parse(&std::fs::read(path)?))
    }

    /// Whether this program wrote the transcript (every conversation record carries its
    /// version): only such a transcript is continued in place; the reference CLI's are read-only.
    pub fn is_ours(&self) -> bool {
        let mut records = self
            .records
            .iter()
            .filter(|r| r.is_conversation())
            .peekable();
        records.peek().is_some() && records.all(written_by_us)
    }

    /// The session id the records carry (the first one that has one).
    pub fn session_id(&self) -> Option<&str> {
        self.records.iter().find_map(|r| r.session_id.as_deref())
    }

    /// Indices of the main chain, oldest first, starting at the root or at the last
    /// compaction boundary.
    pub fn chain(&self, warnings: &mut Vec<Warning>) -> Vec<usize> {
        let Some(leaf) = self
            .records
            .iter()
            .rposition(|r| r.is_conversation() && !r.is_superseded())
        else {
            return Vec::new();
        };
        let index: HashMap<&str, usize> = self
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((r.uuid.as_deref()?, i)))
            .collect();
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = leaf;
        loop {
            if !seen.insert(cur) {
                warnings.push(Warning {
                    line: self.lines[cur],
                    message: "the records' parent links form a loop; history starts here"
                        .to_string(),
                });
                break;
            }
            chain.push(cur);
            let r = &self.records[cur];
            if r.is_subtype(record::COMPACT_BOUNDARY) {
                let announced = r.compact_metadata.as_ref().and_then(|m| m.records);
                if announced.is_none_or(|n| chain.len() > n) {
                    break;
                }
                // Interrupted while being written: the history is the one it would have
                // replaced.
                warnings.push(Warning {
                    line: self.lines[cur],
                    message: "a compaction was interrupted while being written; the history before it is kept".to_string(),
                });
                chain.clear();
                match r.logical_parent_uuid.as_deref().and_then(|p| index.get(p)) {
                    Some(&p) => {
                        cur = p;
                        continue;
                    }
                    None => break,
                }
            }
            let Some(parent) = r.parent_uuid.as_deref() else {
                break;
            };
            match index.get(parent) {
                Some(&p) => cur = p,
                None => {
                    let previous = self.records[..cur]
                        .iter()
                        .rposition(|r| r.is_conversation() && !r.is_superseded());
                    warnings.push(Warning {
                        line: self.lines[cur],
                        message: format!(
                            "the record before this one ({parent}) is missing; {}",
                            if previous.is_some() {
                                "continuing in file order"
                            } else {
                                "history starts here"
                            }
                        ),
                    });
                    match previous {
                        Some(p) => cur = p,
                        None => break,
                    }
                }
            }
        }
        chain.reverse();
        chain
    }

    /// The files the reference CLI attached (its `attachment` records with a `path`: nested
    /// `CLAUDE.md` files, rules), in order, each once.
    pub fn attached_paths(&self) -> Vec<std::path::PathBuf> {
        let mut out: Vec<std::path::PathBuf> = Vec::new();
        for r in self
            .records
            .iter()
            .filter(|r| r.kind == "attachment" && !r.is_sidechain)
        {
            let Some(a) = &r.attachment else { continue };
            let path = a["path"].as_str().or_else(|| a["content"]["path"].as_str());
            if let Some(p) = path.map(std::path::PathBuf::from)
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }

    /// The history the model last saw, and what the next record continues from.
    pub fn replay(&self) -> Replay {
        let mut out = Replay::default();
        let chain = self.chain(&mut out.warnings);
        out.leaf = chain.last().and_then(|&i| self.records[i].uuid.clone());
        for &i in &chain {
            let r = &self.records[i];
            if r.is_subtype(record::COMPACT_BOUNDARY) {
                out.compaction = r.compact_metadata.clone();
                continue;
            }
            if r.is_subtype(record::HOOK_CONTEXT) {
                out.hook_parts = r
                    .content
                    .clone()
                    .and_then(|c| serde_json::from_value(c).ok());
                continue;
            }
            if r.is_subtype(record::MICROCOMPACT) {
                let ids: HashSet<&str> = r.tool_use_ids.iter().map(String::as_str).collect();
                conversation::mask_tool_results(&mut out.history, &ids);
                out.tokens_freed_since_usage += r.tokens_freed.unwrap_or(0);
                continue;
            }
            let Some(message) = &r.message else { continue };
            if r.is_sidechain || !r.is_message() || r.is_superseded() {
                continue;
            }
            let mut m = match &r.partial {
                Some(p) if p.reason != PartialReason::Retried => match message.sendable_partial() {
                    Some(m) => m,
                    None => continue,
                },
                _ => message.clone(),
            };
            if !written_by_us(r) {
                mark_injected(r, &mut m);
            }
            if m.role == Role::Assistant {
                if r.partial.is_none() && m.usage.is_some() {
                    out.last_usage = m.usage;
                    out.tokens_freed_since_usage = 0;
                }
                out.last_assistant_at = r.timestamp.clone();
                if let Some(prev) = out.history.last_mut()
                    && prev.role == Role::Assistant
                    && prev.id.is_some()
                    && prev.id == m.id
                {
                    prev.content.append(&mut m.content);
                    if m.stop_reason.is_some() {
                        prev.stop_reason = m.stop_reason;
                    }
                    if m.usage.is_some() {
                        prev.usage = m.usage;
                    }
                    continue;
                }
            }
            out.history.push(m);
        }
        out
    }
}

/// Below this size a transcript is parsed on one thread.
pub(super) const PARALLEL_FROM: usize = 4 << 20;

/// `bytes` cut at line breaks into up to one piece per core, each with the index of its first
/// line.
fn pieces(bytes: &[u8]) -> Vec<(usize, &[u8])> {
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if bytes.len() < PARALLEL_FROM || cores < 2 {
        return vec![(0, bytes)];
    }
    let mut out = Vec::with_capacity(cores);
    let (mut start, mut line) = (0, 0);
    for k in 1..=cores {
        let end = if k == cores {
            bytes.len()
        } else {
            let target = (bytes.len() * k / cores).max(start);
            match memchr::memchr(b'\n', &bytes[target..]) {
                Some(i) => target + i + 1,
                None => bytes.len(),
            }
        };
        if end > start {
            out.push((line, &bytes[start..end]));
            line += memchr::memchr_iter(b'\n', &bytes[start..end]).count();
            start = end;
        }
    }
    out
}

/// Parses lines; `first_line` is the 0-based index of the piece's first line, `is_end` whether
/// the piece ends the file (only there can a line be torn).
pub(super) fn parse_piece(
    bytes: &[u8],
    first_line: usize,
    is_end: bool,
    ends_clean: bool,
) -> Transcript {
    let mut t = Transcript::default();
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let i = first_line + i;
        let last = is_end
            && lines
                .peek()
                .is_none_or(|(_, rest)| rest.is_empty() && ends_clean);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => {
                t.records.push(r);
                t.lines.push(i + 1);
            }
            Err(e) => {
                let torn = last && (!ends_clean || e.is_eof());
                t.warnings.push(Warning {
                    line: i + 1,
                    message: if torn {
                        "incomplete last record skipped (the program stopped while writing it)"
                            .to_string()
                    } else {
                        format!("record skipped: not valid ({e})")
                    },
                });
            }
        }
    }
    t
}

/// Records this program wrote carry its name in `version`.
pub(super) fn written_by_us(r: &Record) -> bool {
    r.version
        .as_deref()
        .is_some_and(|v| v.starts_with("claude-context"))
}

/// The reference CLI marks injected messages with flags and wrappers, not per block: turn those
/// into origins so "user-authored" means the same for its transcripts as for ours.
pub(super) fn mark_injected(r: &Record, m: &mut Message) {
    if m.role != Role::User {
        return;
    }
    for b in &mut m.content {
        let Block::Text(t) = b else { continue };
        if !t.origin.is_authored() {
            continue;
        }
        let text = t.text.trim_start();
        t.origin = if r.is_compact_summary {
            Origin::Summary
        } else if r.is_meta
            || text.starts_with("<command-")
            || text.starts_with("<local-command-")
            || text.starts_with("Caveat: The messages below were generated by the user while running local commands")
        {
            Origin::Meta
        } else if text.starts_with("<system-reminder>") {
            Origin::Reminder
        } else if text.starts_with("[Request interrupted by user") {
            Origin::Interruption
        } else {
            Origin::Authored
        };
    }
}
