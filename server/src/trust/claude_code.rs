//! Claude Code's record of trust (`permissions-trust.md` section 9, measured): accepting its
//! dialog writes `projects["<folder>"].hasTrustDialogAccepted: true` to `~/.claude.json` (or
//! `$CLAUDE_CONFIG_DIR/.claude.json`), keyed by the absolute folder. Only that exact key counts:
//! an entry for a parent or a child folder does not (r4/parent_trusted, r4/child_trusted). Read,
//! never written (Claude Code rewrites that file all the time; docs/decisions.md).
//!
//! Read through [`Fs`] (10 MB at most, like every file): a file that cannot be read or parsed
//! trusts nothing.

use std::path::Path;

use serde_json::Value;

use crate::fs::Fs;

/// Does `claude_json` say that Claude Code's user trusted exactly `folder`?
pub fn trusted(fs: &dyn Fs, claude_json: &Path, folder: &Path) -> bool {
    let Ok(text) = fs.read_text(claude_json) else {
        return false;
    };
    let Some(key) = folder.to_str() else {
        return false;
    };
    // Most of the file is other keys: only `projects[key]` is looked at.
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    v.get("projects")
        .and_then(|p| p.get(key))
        .and_then(|e| e.get("hasTrustDialogAccepted"))
        .and_then(Value::as_bool)
        == Some(true)
}
