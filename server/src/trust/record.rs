//! Our record of the user's answers: one small file per folder under
//! `<state dir>/trust/` (`$XDG_STATE_HOME/claude-context/trust`, else
//! `~/.local/state/claude-context/trust`), named by a hash of the folder's real path and holding
//! `{"folder": "<real path>", "trusted": true|false, "answeredAt": "YYYY-MM-DD"}`.
//!
//! Outside every repository (a clone cannot bring one), private (0700 folder, 0600 files),
//! replaced in one step (a reader sees the old answer or the new one, never half of one), one
//! file per folder (two processes answering for two folders never lose either answer). A read is
//! capped at [`MAX_RECORD_BYTES`]; a file that does not parse, or that names another folder, is
//! no record (the question is asked again).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fs::{Fs, WriteFs};

/// The records' folder, in the state directory.
pub const FOLDER: &str = "trust";
/// The most read of one record (a real one is under 4 KB: the folder's path and two keys).
pub const MAX_RECORD_BYTES: u64 = 64 << 10;

/// One folder's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The folder's real path.
    pub folder: PathBuf,
    pub trusted: bool,
    /// `YYYY-MM-DD`.
    #[serde(default)]
    pub answered_at: String,
}

/// The record file of `folder` in `dir`.
pub fn path(dir: &Path, folder: &Path) -> PathBuf {
    let mut h = sha1_smol::Sha1::new();
    h.update(folder.as_os_str().as_encoded_bytes());
    dir.join(format!("{}.json", h.digest()))
}

/// The answer recorded for `folder`, if any.
pub fn read(fs: &dyn Fs, dir: &Path, folder: &Path) -> Option<Record> {
    let file = path(dir, folder);
    let bytes = fs.read_bytes(&file, MAX_RECORD_BYTES + 1).ok()?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        crate::log_warn!(
            "{}: larger than {} KB, not a trust record of ours: ignored",
            file.display(),
            MAX_RECORD_BYTES >> 10
        );
        return None;
    }
    let r: Record = serde_json::from_slice(&bytes).ok()?;
    (r.folder == folder).then_some(r)
}

/// Records `trusted` for `folder`; the file written.
pub fn write(
    fs: &dyn Fs,
    wfs: &dyn WriteFs,
    dir: &Path,
    folder: &Path,
    trusted: bool,
    date: &str,
) -> Result<PathBuf, String> {
    let file = path(dir, folder);
    let r = Record {
        folder: folder.to_path_buf(),
        trusted,
        answered_at: date.to_string(),
    };
    let mut text = serde_json::to_vec_pretty(&r).map_err(|e| e.to_string())?;
    text.push(b'\n');
    wfs.create_dir_all(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    // A folder made before us (by another tool, or with a looser mode): ours are 0700.
    if fs.is_dir(dir) {
        crate::fs::keep_private(dir);
    }
    wfs.replace(&file, &text)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file)
}

/// Removes `folder`'s record (its user is asked again); `true` when there was one.
pub fn forget(dir: &Path, folder: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path(dir, folder)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
