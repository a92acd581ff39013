//! `claude-context check`: lint every instruction file; exit 1 on errors (for a project's CI).
//! The check is [`crate::features::check::check_project`]; this file renders its report.

use std::path::{Path, PathBuf};

use super::display_path;
use super::output::out;
use super::{escape_text, quote_name};
use crate::features::check;
use crate::features::diagnostics::{Finding, Severity};
use crate::features::warm::{self, Answer};
use crate::fs::{Fs, RealFs};
use crate::host::Host;

#[derive(Clone, Debug, Default)]
pub struct Args {
    pub cwd: Option<PathBuf>,
    pub json: bool,
    /// Never ask a running server (`cli/warm.rs`): compute here.
    pub cold: bool,
}

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let cwd = host.abs(args.cwd.as_deref().unwrap_or(Path::new(".")));
    if let Some(why) = crate::fs::folder_problem(&cwd) {
        return Err(format!("--cwd {} {why}", quote_name(cwd.as_os_str())));
    }
    let opts = host.context_options(&cwd, &[], None)?;
    let warm = (!args.cold)
        .then(|| warm::check_request(host, &cwd))
        .flatten()
        .and_then(|req| {
            let real = RealFs.canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
            super::warm::ask(host, &real, &req)
        });
    let report = match warm {
        Some(Answer::Check { findings, linted }) => warm::report_of(findings, linted),
        _ => {
            let var = |k: &str| host.var(k).map(str::to_string);
            check::check_project(
                &RealFs,
                &cwd,
                &opts,
                &check::Environment {
                    var: &var,
                    path_dirs: &host.path_dirs(),
                    git: &host.git_options(),
                },
            )
        }
    };
    let errors = report.count(Severity::Error);
    if args.json {
        let all: Vec<&Finding> = report.by_file.values().flatten().collect();
        let mut text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
        text.push('\n');
        out(&text);
    } else {
        out(&render(&report, &cwd, host.home.as_deref(), report.linted));
    }
    Ok(if errors > 0 { 1 } else { 0 })
}

/// `path:line:col: severity: message` lines and a summary.
pub fn render(report: &check::Report, cwd: &Path, home: Option<&Path>, scanned: usize) -> String {
    let mut s = String::new();
    for (path, findings) in &report.by_file {
        let shown = display_path(path, cwd, home);
        // Only for findings with a line, and through the capped reader: a finding can be about a
        // 1 GB file or a FIFO.
        let text = if findings.iter().any(|f| f.line.is_some()) {
            crate::fs::Fs::read_text(&crate::fs::RealFs, path).unwrap_or_default()
        } else {
            String::new()
        };
        let lines: Vec<&str> = text.lines().collect();
        for f in findings {
            match f.line {
                Some(line) => {
                    let col = column(lines.get(line).copied().unwrap_or(""), f.start_col);
                    s.push_str(&format!(
                        "{shown}:{}:{col}: {}: {}\n",
                        line + 1,
                        f.severity.label(),
                        escape_text(&f.message)
                    ));
                }
                None => s.push_str(&format!(
                    "{shown}: {}: {}\n",
                    f.severity.label(),
                    escape_text(&f.message)
                )),
            }
        }
    }
    let files = report.by_file.len();
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    if files == 0 {
        s.push_str(&format!(
            "No problems in {scanned} instruction file{}.\n",
            if scanned == 1 { "" } else { "s" }
        ));
    } else {
        s.push_str(&format!(
            "{files} file{} with findings: {errors} error{}, {warnings} warning{}\n",
            if files == 1 { "" } else { "s" },
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" },
        ));
    }
    s
}

/// 1-based character column from a 0-based byte column on `l`.
fn column(l: &str, byte_col: usize) -> usize {
    let end = byte_col.min(l.len());
    let end = (0..=end)
        .rev()
        .find(|i| l.is_char_boundary(*i))
        .unwrap_or(0);
    l[..end].chars().count() + 1
}
