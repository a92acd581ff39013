//! `claude-context compact TRANSCRIPT [--dry-run] [--focus TEXT] [--json]`: a full compaction of
//! a transcript, offline.
//!
//! Reads a transcript (ours or the reference CLI's), rebuilds its history as a resume would, and
//! compacts it with the extractive summary (no model is called): every user message verbatim in
//! section 6, files, errors, pending todos, the last answer. The files re-injected are read
//! from disk, only below the transcript's working directory. The work is the session core's
//! ([`crate::session::offline`]); this file parses the arguments and renders the result.
//!
//! - `--dry-run` shows what would be summarised and the token change, and writes nothing.
//! - Otherwise a transcript of ours gets the compaction appended (a resumed session continues
//!   from it); the reference CLI's transcripts are read-only, so the result is only shown.
//!
//! Token figures are estimates of the messages alone: a transcript does not hold the system
//! prompt and tools that a session adds. Exit status: 0 done (or shown), 1 the compaction failed
//! (for instance it would not shrink the conversation), 2 bad arguments or an unreadable file.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::output::{note, out, thousands};
use crate::host::Host;
use crate::session::offline::{self, Outcome, Ran, Report};

/// The command line of `compact`.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub transcript: PathBuf,
    pub dry_run: bool,
    pub focus: Option<String>,
    pub json: bool,
}

/// Parses the arguments after `compact` and runs it.
pub fn main(host: &Host, parser: &mut lexopt::Parser) -> Result<i32, String> {
    use lexopt::prelude::*;
    let mut args = Args::default();
    let mut transcript = None;
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("dry-run") => args.dry_run = true,
            Long("json") => args.json = true,
            Long("focus") => {
                args.focus = Some(
                    parser
                        .value()
                        .map_err(|e| e.to_string())?
                        .into_string()
                        .map_err(|v| format!("--focus: not UTF-8: {v:?}"))?,
                )
            }
            Long("help") | Short('h') => {
                out(USAGE);
                return Ok(0);
            }
            Value(v) if transcript.is_none() => transcript = Some(PathBuf::from(v)),
            other => return Err(format!("compact: {}", other.unexpected())),
        }
    }
    args.transcript = transcript.ok_or("compact: which transcript? (a .jsonl file)")?;
    run(host, &args)
}

pub const USAGE: &str = "claude-context compact TRANSCRIPT [--dry-run] [--focus TEXT] [--json]
      Compact a session's transcript offline (extractive summary, every user message kept
      verbatim). Ours is appended to; the reference CLI's are read-only (shown only).
";

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let path = host.abs(&args.transcript);
    let request = offline::Request {
        path: &path,
        focus: args.focus.as_deref(),
        dry_run: args.dry_run,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let noted = |m: &str| note(&format!("claude-context: {m}\n"));
    let (report, ours, written) =
        match runtime.block_on(offline::compact_transcript(host, &request, &noted))? {
            Outcome::Done {
                report,
                ours,
                written,
            } => (report, ours, written),
            Outcome::Failed(failure) => {
                note(&format!(
                    "claude-context: {}: compaction failed: {failure}\n",
                    path.display()
                ));
                return Ok(1);
            }
        };

    if args.json {
        let mut v = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        v["transcript"] = json!(path.display().to_string());
        v["written"] = json!(written);
        v["readOnly"] = json!(!ours);
        let mut text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        text.push('\n');
        out(&text);
    } else {
        out(&render(&report, &path, ours, written));
    }
    Ok(0)
}

fn render(report: &Report, path: &Path, ours: bool, written: bool) -> String {
    let mut s = String::new();
    let verb = if report.dry_run {
        "Would compact"
    } else {
        "Compacted"
    };
    s.push_str(&format!(
        "{verb} {}\n",
        printable(&path.display().to_string())
    ));
    if let Some(note) = &report.note {
        s.push_str(&format!("  {note}\n"));
    }
    if report.mode != Ran::Full {
        s.push_str("  nothing to do\n");
        return s;
    }
    let pct = (report.tokens_before.saturating_sub(report.tokens_after) * 100)
        .checked_div(report.tokens_before)
        .unwrap_or(0);
    s.push_str(&format!(
        "  tokens ≈ {} → {} ({pct}% less; estimates of the messages alone)\n",
        thousands(report.tokens_before),
        thousands(report.tokens_after)
    ));
    s.push_str(&format!(
        "  {} message{} summarised (extractive summary, no model); {} user message{} kept verbatim\n",
        report.summarised_messages,
        if report.summarised_messages == 1 { "" } else { "s" },
        report.preserved_user_messages,
        if report.preserved_user_messages == 1 {
            ""
        } else {
            "s"
        },
    ));
    if !report.cleared.is_empty() {
        s.push_str(&format!(
            "  {} old tool result{} cleared first\n",
            report.cleared.len(),
            if report.cleared.len() == 1 { "" } else { "s" }
        ));
    }
    if !report.reinjected_files.is_empty() {
        s.push_str(&format!(
            "  re-injected: {}\n",
            printable(&report.reinjected_files.join(", "))
        ));
    }
    s.push_str(if report.dry_run {
        "  dry run: nothing written\n"
    } else if written {
        "  appended to the transcript: resuming the session continues from the summary\n"
    } else if !ours {
        "  not written: the reference CLI's transcripts are read-only\n"
    } else {
        "  not written\n"
    });
    if let Some(summary) = &report.summary {
        s.push_str("\nSummary:\n");
        s.push_str(&printable(summary));
        s.push('\n');
    }
    s
}

/// Control characters from a transcript (a tool's output, a pasted escape sequence) shown as
/// `�` rather than sent to the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}
