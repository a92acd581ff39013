//! A full compaction of a transcript, offline (the command line's `compact`): the transcript's
//! history rebuilt as a resume would, compacted with the extractive summary (no model is
//! called), and, for a transcript of ours that is not a dry run, the compaction appended so a
//! resumed session continues from it. The reference CLI's transcripts are only read.
//!
//! The files re-injected are read from disk, only below the transcript's working directory.
//! Token figures are estimates of the messages alone: a transcript holds no system prompt.
//! Returns data ([`Outcome`]); the front end renders it.

use std::path::{Path, PathBuf};

use super::transcript::{CompactMetadata, SessionMeta, Transcript, Writer};
use crate::compact::{
    Change, Compactor, Mode, ModelInfo, Overrides, Policy, Reinject, RunRequest, Settings,
    Summariser, Turn,
};
pub use crate::compact::{Ran, Report};
use crate::fs::RealFs;
use crate::host::Host;

/// What to compact, and how.
pub struct Request<'a> {
    /// The transcript (absolute).
    pub path: &'a Path,
    pub focus: Option<&'a str>,
    pub dry_run: bool,
}

/// How a compaction ended.
pub enum Outcome {
    /// The compactor refused or failed (for instance it would not shrink the conversation).
    Failed(String),
    /// It ran (or would have, in a dry run).
    Done {
        report: Report,
        /// The transcript is ours (the reference CLI's are read-only).
        ours: bool,
        /// The compaction was appended to the transcript.
        written: bool,
    },
}

/// Compacts the transcript at `req.path`. `note` hears, in order, what a user should see beside
/// the result: the transcript's warnings (`path:line: message`) and the policy's notes
/// (`source: message`). `Err` is a file that cannot be read or written, or nothing to compact.
pub async fn compact_transcript(
    host: &Host,
    req: &Request<'_>,
    note: &dyn Fn(&str),
) -> Result<Outcome, String> {
    let path = req.path;
    let transcript = Transcript::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let replay = transcript.replay();
    for w in transcript.warnings.iter().chain(&replay.warnings) {
        note(&format!("{}:{}: {}", path.display(), w.line, w.message));
    }
    if replay.history.is_empty() {
        return Err(format!("{}: no conversation to compact", path.display()));
    }
    let model = replay
        .history
        .iter()
        .rev()
        .find_map(|m| m.model.clone())
        .unwrap_or_default();
    let (policy, notes) = Policy::resolve(
        ModelInfo {
            id: &model,
            window: None,
            max_output_tokens: 32_000,
        },
        &Settings::default(),
        &Overrides::from_env(|k| host.var(k).map(str::to_owned)),
    );
    for n in notes {
        note(&format!("{}: {}", n.source, n.message));
    }
    // Estimates of the messages only, before and after: a transcript holds no system prompt.
    let mut compactor = Compactor::new(policy);
    compactor.preserved = replay
        .compaction
        .as_ref()
        .map(|c| c.user_messages.clone())
        .unwrap_or_default();

    let cwd = transcript
        .records
        .iter()
        .find_map(|r| r.cwd.clone())
        .map(PathBuf::from);
    let read = |p: &str| {
        cwd.as_deref()
            .and_then(|c| super::compaction::read_for_reinjection(&RealFs, c, p))
    };
    let reinject = Reinject {
        read_file: Some(&read),
        transcript_path: Some(path.display().to_string()),
        ..Reinject::default()
    };
    let turn = Turn {
        history: &replay.history,
        overhead_tokens: 0,
        now: host.now(),
        last_assistant_at: None,
    };
    let request = RunRequest {
        mode: Mode::Full,
        focus: req.focus,
        dry_run: req.dry_run,
    };
    let run = match compactor
        .run(&request, &turn, &reinject, &Summariser::Extractive)
        .await
    {
        Ok(run) => run,
        Err(failure) => return Ok(Outcome::Failed(failure.to_string())),
    };

    let ours = transcript.is_ours();
    let mut written = false;
    if let Change::Full { mask, compacted } = &run.change
        && ours
    {
        let meta = SessionMeta {
            session_id: transcript
                .session_id()
                .map(str::to_string)
                .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_default(),
            cwd: cwd
                .as_deref()
                .map(|c| c.display().to_string())
                .unwrap_or_default(),
            git_branch: transcript
                .records
                .iter()
                .rev()
                .find_map(|r| r.git_branch.clone())
                .unwrap_or_default(),
        };
        let cannot = |e: std::io::Error| format!("{}: cannot write: {e}", path.display());
        let mut writer = Writer::append(path, &transcript, meta).map_err(cannot)?;
        if let Some(plan) = mask {
            writer.masking(plan).map_err(cannot)?;
        }
        writer
            .compaction(
                CompactMetadata {
                    trigger: compacted.trigger.as_str().to_string(),
                    pre_tokens: compacted.tokens_before,
                    post_tokens: Some(compacted.tokens_after),
                    user_messages: compacted.user_messages.clone(),
                    ..CompactMetadata::default()
                },
                &compacted.history,
            )
            .map_err(cannot)?;
        written = true;
    }
    Ok(Outcome::Done {
        report: run.report,
        ours,
        written,
    })
}
