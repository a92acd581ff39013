//! `claude-context preview`: the context of a new session, as a table or as JSON.

use std::path::{Path, PathBuf};

use super::display_path;
use super::output::{out, thousands};
use super::{escape_text, quote_name};
use crate::assembly::{self, GitPart, StartInput};
use crate::context::Attacher;
use crate::features::preview::{self, Preview};
use crate::fs::RealFs;
use crate::host::Host;

#[derive(Clone, Debug, Default)]
pub struct Args {
    pub cwd: Option<PathBuf>,
    pub files: Vec<PathBuf>,
    pub add_dirs: Vec<PathBuf>,
    pub json: bool,
    pub model: Option<String>,
    pub window: Option<u64>,
    pub memory_dir: Option<String>,
    pub no_git: bool,
}

/// Builds the preview: the git snapshot runs on its own thread while the walk reads files and
/// the touched files attach (neither depends on git), so only assembling waits for git.
pub fn compute(host: &Host, args: &Args) -> Result<Preview, String> {
    let cwd = host.abs(args.cwd.as_deref().unwrap_or(Path::new(".")));
    if !cwd.is_dir() {
        return Err(format!(
            "--cwd {}: not a directory",
            quote_name(cwd.as_os_str())
        ));
    }
    // Touched paths through a link to cwd count as under it only when `PWD` names that link.
    let cwd = host.session_dir(&RealFs, &cwd);
    let add_dirs: Vec<PathBuf> = args.add_dirs.iter().map(|d| host.abs(d)).collect();
    let opts = host.context_options(&cwd, &add_dirs, args.memory_dir.as_deref())?;
    let git_opts = host.git_options();
    let fs = RealFs;
    let touched: Vec<PathBuf> = args.files.iter().map(|f| host.abs(f)).collect();
    let (ctx, attacher, git) = std::thread::scope(|s| {
        let git = (!args.no_git).then(|| s.spawn(|| crate::git::snapshot(&cwd, &git_opts)));
        let ctx = crate::context::build(&fs, &opts);
        let mut attacher = Attacher::new(&ctx);
        for f in &touched {
            attacher.touch(&fs, &ctx, f);
        }
        let git = git.and_then(|h| h.join().ok());
        (ctx, attacher, git)
    });
    let git_findings = git
        .as_ref()
        .map(crate::features::check::git_findings)
        .unwrap_or_default();
    let git = match git {
        Some(Ok(Some(snap))) => Some(GitPart::from_snapshot(&snap)),
        Some(Err(e)) => {
            crate::log_warn!("git snapshot skipped: {}", e.message);
            None
        }
        _ => None,
    };
    let model = args.model.as_deref().unwrap_or(assembly::DEFAULT_MODEL);
    let input = StartInput {
        git: git.as_ref(),
        model,
        ..StartInput::default()
    };
    let a = assembly::assemble(host, &ctx, &attacher, &input);
    let mut p = preview::from_assembly(
        &ctx,
        &attacher,
        a,
        args.window.unwrap_or_else(|| crate::models::window(model)),
    );
    // The whole first request: a chat sends the tool definitions with it.
    p.totals = p.totals.with_tools(crate::session::offered_tools_tokens());
    p.findings.extend(git_findings);
    Ok(p)
}

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let p = compute(host, args)?;
    if args.json {
        let mut text = serde_json::to_string_pretty(&p).map_err(|e| e.to_string())?;
        text.push('\n');
        out(&text);
    } else {
        out(&render_table(&p, host.home.as_deref()));
    }
    Ok(0)
}

/// The human table of `ux.md`.
pub fn render_table(p: &Preview, home: Option<&Path>) -> String {
    let base = p.cwd.as_path();
    let mut s = String::new();
    let cwd_shown = match home.and_then(|h| p.cwd.strip_prefix(h).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => {
            let mut shown = std::ffi::OsString::from("~/");
            shown.push(rel.as_os_str());
            quote_name(&shown).into_owned()
        }
        _ => quote_name(p.cwd.as_os_str()).into_owned(),
    };
    let git = match &p.git {
        Some(g) => format!("  (git: {}, {} changed)", escape_text(&g.branch), g.changed),
        None => "  (not a git repository)".to_string(),
    };
    s.push_str(&format!(
        "Context for a new session in {cwd_shown}{git}\n\n"
    ));
    if p.files.is_empty() {
        s.push_str("  No instruction files found (CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md, MEMORY.md).\n");
    } else {
        let rows: Vec<(String, String, String, String, String)> = p
            .files
            .iter()
            .map(|f| {
                let tokens = match f.status.as_str() {
                    "skipped" | "empty" | "excluded" => "—".to_string(),
                    _ => thousands(f.tokens),
                };
                let indent = "  ".repeat(f.depth as usize);
                let mark = if f.depth > 0 { "└ " } else { "" };
                let file = format!("{indent}{mark}{}", display_path(&f.path, base, home));
                let site = f.included_from.as_deref().map(|site| {
                    let (path, line) = site.rsplit_once(':').unwrap_or((site, ""));
                    format!("{}:{line}", display_path(Path::new(path), base, home))
                });
                let note = match (f.status.as_str(), &f.reason, site) {
                    ("excluded", _, site) if f.excluded_by.is_some() => {
                        let ex = f.excluded_by.as_ref().expect("checked");
                        let site = site.map(|s| format!(" ({s})")).unwrap_or_default();
                        format!(
                            "excluded by {} ({}){site}",
                            crate::context::message::quoted(&ex.pattern),
                            display_path(&ex.settings, base, home)
                        )
                    }
                    ("loaded", None, Some(site)) => format!("(included from {site})"),
                    (_, Some(r), Some(site)) => format!("{} ({site})", escape_text(r)),
                    (_, Some(r), None) => escape_text(r).into_owned(),
                    _ => String::new(),
                };
                (f.scope.clone(), f.status.clone(), tokens, file, note)
            })
            .collect();
        let file_w = rows
            .iter()
            .map(|r| r.3.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        s.push_str(&format!(
            "  {:<9} {:<9} {:>6}  file\n",
            "scope", "status", "tokens"
        ));
        for (scope, status, tokens, file, note) in rows {
            if note.is_empty() {
                s.push_str(&format!("  {scope:<9} {status:<9} {tokens:>6}  {file}\n"));
            } else if file.chars().count() + note.chars().count() > 100 {
                s.push_str(&format!("  {scope:<9} {status:<9} {tokens:>6}  {file}\n"));
                s.push_str(&format!("  {:<9} {:<9} {:>6}     {note}\n", "", "", ""));
            } else {
                s.push_str(&format!(
                    "  {scope:<9} {status:<9} {tokens:>6}  {file:<file_w$}  {note}\n"
                ));
            }
        }
    }
    if !p.settings.is_empty() {
        s.push_str("\n  settings read\n");
        let rows: Vec<(String, String)> = p
            .settings
            .iter()
            .map(|f| {
                let note = if !f.valid {
                    "not valid JSON: none of its keys apply".to_string()
                } else if f.keys.is_empty() {
                    "nothing that changes what is loaded".to_string()
                } else {
                    f.keys.join(", ")
                };
                (
                    format!("{:<9} {}", f.scope, display_path(&f.path, base, home)),
                    note,
                )
            })
            .collect();
        let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        for (file, note) in rows {
            s.push_str(&format!("  {file:<w$}  {note}\n"));
        }
    }
    let t = &p.totals;
    s.push_str(&format!(
        "\n  system prompt {} tokens   tools {} tokens   instructions block {} tokens   git block {} tokens   attachments {} tokens\n",
        thousands(t.system),
        thousands(t.tools),
        thousands(t.instructions),
        thousands(t.git),
        thousands(t.attachments)
    ));
    s.push_str(&format!(
        "  total ≈ {} tokens of {} ({:.1}%); auto-compaction at {}\n",
        thousands(t.tokens),
        thousands(t.window),
        t.percent,
        thousands(t.auto_compact_threshold)
    ));
    let problems = p
        .findings
        .iter()
        .filter(|f| f.severity <= crate::context::Severity::Warning)
        .count();
    if problems > 0 {
        s.push_str(&format!(
            "\n  {problems} problem{} found; run `claude-context check` for details\n",
            if problems == 1 { "" } else { "s" }
        ));
    }
    s
}
