//! `claude-context trust [--cwd DIR] [--yes | --no | --forget] [--json]`: the workspace trust of
//! a folder (default: the working directory), what waits for it and why; or the user's answer,
//! given outside a chat (a chat asks before its first turn otherwise). The view is
//! [`crate::features::trust`]'s; this file parses and renders.

use std::path::{Path, PathBuf};

use super::output::{note, out};
use super::{display_path, escape_text, quote_name};
use crate::features::preview::TrustView;
use crate::features::trust::{self, Answer};
use crate::host::Host;

#[derive(Clone, Debug, Default)]
pub struct Args {
    pub cwd: Option<PathBuf>,
    pub answer: Option<Answer>,
    pub json: bool,
}

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let cwd = host.abs(args.cwd.as_deref().unwrap_or(Path::new(".")));
    if !cwd.is_dir() {
        return Err(format!(
            "--cwd {}: not a directory",
            quote_name(cwd.as_os_str())
        ));
    }
    if let Some(a) = args.answer {
        note(&format!(
            "{}\n",
            escape_text(&trust::answer(host, &cwd, a)?)
        ));
    }
    let v = trust::view(host, &cwd)?;
    if args.json {
        let mut text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        text.push('\n');
        out(&text);
    } else {
        let shown = match host
            .home
            .as_deref()
            .and_then(|h| v.folder.strip_prefix(h).ok())
        {
            Some(rel) => format!("~/{}", rel.display()),
            None => v.folder.display().to_string(),
        };
        out(&format!(
            "Workspace trust of {}\n{}",
            escape_text(&shown),
            render(&v, host.home.as_deref())
        ));
    }
    Ok(0)
}

/// The trust section: a line for the state, then what waits for trust (or is refused, or
/// unused), each with its file and why. Shared with `claude-context preview`'s table.
pub fn render(v: &TrustView, home: Option<&Path>) -> String {
    let base = v.folder.as_path();
    let mut s = format!("  workspace trust: {}\n", escape_text(&v.summary));
    if v.local_tracked {
        s.push_str(
            "  .claude/settings.local.json is tracked by git: it is read as the repository's file, not yours\n",
        );
    }
    for h in &v.held {
        let status = serde_json::to_value(h.status)
            .ok()
            .and_then(|x| x.as_str().map(str::to_string))
            .unwrap_or_default();
        let line = h.line.map(|l| format!(":{l}")).unwrap_or_default();
        s.push_str(&format!(
            "  {status:<16} {} ({})  {}{line}\n",
            escape_text(&h.key),
            escape_text(&h.detail),
            display_path(&h.path, base, home)
        ));
        s.push_str(&format!("  {:<16} {}\n", "", escape_text(&h.reason)));
    }
    s
}
