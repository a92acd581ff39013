//! What the last connection to each server learnt (its tools, instructions, capabilities, or
//! why it failed), kept so a preview can count a server's cost without starting it.
//!
//! `<state dir>/mcp/<key>.json` (the state dir is `$XDG_STATE_HOME/claude-context`), the key
//! being a hash of the project folder, the server's name and its entry as written: a changed
//! entry misses the cache. Written by whatever connected (a chat session, or
//! `claude-context preview --mcp-connect`); read by the preview, which never starts a server on
//! its own. Through [`Fs`] and [`WriteFs`]; a file that cannot be read or parsed is a miss.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::client::Listing;
use crate::fs::{Fs, WriteFs};

/// One server's last connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub server: String,
    /// The entry as written when it connected.
    pub entry: String,
    /// When (`YYYY-MM-DD`).
    pub date: String,
    /// What it listed, when it connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<Listing>,
    /// `(code, message)` when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<(String, String)>,
}

/// The file of `server` (with `entry`) in the project `cwd`.
pub fn path(state_dir: &Path, cwd: &Path, server: &str, entry: &str) -> PathBuf {
    let mut h = sha1_smol::Sha1::new();
    h.update(cwd.to_string_lossy().as_bytes());
    h.update(b"\0");
    h.update(server.as_bytes());
    h.update(b"\0");
    h.update(entry.as_bytes());
    state_dir.join("mcp").join(format!("{}.json", h.digest()))
}

/// The cached entry, when there is one for exactly this configuration.
pub fn read(fs: &dyn Fs, state_dir: &Path, cwd: &Path, server: &str, entry: &str) -> Option<Entry> {
    let text = fs.read_text(&path(state_dir, cwd, server, entry)).ok()?;
    let e: Entry = serde_json::from_str(&text).ok()?;
    (e.server == server && e.entry == entry).then_some(e)
}

/// Keeps `e` for the next preview.
pub fn write(fs: &dyn WriteFs, state_dir: &Path, cwd: &Path, e: &Entry) -> std::io::Result<()> {
    let p = path(state_dir, cwd, &e.server, &e.entry);
    if let Some(dir) = p.parent() {
        fs.create_dir_all(dir)?;
    }
    let text = serde_json::to_vec(e).map_err(std::io::Error::other)?;
    fs.replace(&p, &text)
}
