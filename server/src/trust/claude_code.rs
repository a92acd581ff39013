//! Claude Code's record of trust (`permissions-trust.md` section 9, measured): accepting its
//! dialog writes `projects["<folder>"].hasTrustDialogAccepted: true` to `~/.claude.json` (or
//! `$CLAUDE_CONFIG_DIR/.claude.json`), keyed by the absolute folder. Only that exact key counts:
//! an entry for a parent or a child folder does not (r4/parent_trusted, r4/child_trusted). Read,
//! never written (Claude Code rewrites that file all the time; docs/decisions.md).
//!
//! Read through [`Fs`] (10 MB at most, like every file): a file that cannot be read or parsed
//! trusts nothing.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::fs::Fs;

/// The part of the file read: every other key (most of it: usage counters, tips, each
/// project's servers and tools) is skipped by the parser without being built.
#[derive(Deserialize)]
struct Global {
    #[serde(default)]
    projects: HashMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default, rename = "hasTrustDialogAccepted")]
    accepted: Option<serde_json::Value>,
}

/// Does `claude_json` say that Claude Code's user trusted exactly `folder`?
pub fn trusted(fs: &dyn Fs, claude_json: &Path, folder: &Path) -> bool {
    let Some(key) = folder.to_str() else {
        return false;
    };
    let Ok(text) = fs.read_text(claude_json) else {
        return false;
    };
    let Ok(g) = serde_json::from_str::<Global>(&text) else {
        return false;
    };
    g.projects
        .get(key)
        .and_then(|e| e.accepted.as_ref())
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}
