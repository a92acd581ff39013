//! Workspace trust (`../shared/spec/permissions-trust.md` sections 1 and 9): whether the user
//! trusts a folder, where that answer is kept, and the gate that turns a folder's settings files
//! and its trust into what a session may use.
//!
//! **The state of a folder** ([`verdict`]), keyed by its real path (a session's working
//! directory; each editor workspace root on its own), first answer wins:
//!
//! 1. the editor's own workspace trust, when the editor has one and says so (VS Code: a trusted
//!    workspace is trusted, restricted mode is not; [`Where::editor`]);
//! 2. our record ([`record`]): the user's answer to our question, yes or no, kept under the
//!    state directory (`$XDG_STATE_HOME/claude-context/trust/`), where no repository writes;
//! 3. Claude Code's record ([`claude_code`]): `projects["<folder>"].hasTrustDialogAccepted: true`
//!    in `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), for exactly that folder (a
//!    parent's or a child's entry does not count, as measured);
//! 4. otherwise nobody was asked.
//!
//! We write only our own record, never `~/.claude.json` (docs/decisions.md says why).
//!
//! **The gate** ([`gate::Gate`]): what of a folder waits for trust, with the reason, from the
//! settings as read ([`crate::context::settings::Reach`]) and the MCP configuration. The readers
//! below apply the trust as plain data ([`Trust`], in `context::settings`): the walk (a
//! repository's `autoMemoryDirectory`), the MCP configuration (no project server before trust),
//! the permission rules (a repository's `allow` rules and `additionalDirectories`). A session
//! asks the question and holds its answer (`crate::session::trust`).
//!
//! **Which settings file is the repository's**: the project's `.claude/settings.json`, and a
//! `.claude/settings.local.json` that git tracks (a clone brought it: [`crate::git::tracks`];
//! when git cannot tell, it counts as the repository's).
//!
//! Core: IO through [`Fs`] and [`WriteFs`] (and the git index, read by `crate::git`).

pub mod claude_code;
pub mod gate;
pub mod question;
pub mod record;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::context::settings::{LOCAL_SETTINGS_FILE, SETTINGS_FILE};
pub use crate::context::settings::{Reach, Trust, TrustState};
use crate::fs::{Fs, WriteFs};
pub use gate::{Gate, Held, HeldStatus};

/// Where a folder's trust comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// The user's answer to claude-context's question ([`record`]).
    Ours,
    /// Claude Code's trust dialog (`~/.claude.json`).
    ClaudeCode,
    /// The editor's own workspace trust (VS Code).
    Editor,
}

/// A folder's trust, and where it comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub state: TrustState,
    /// `None` when nobody was asked.
    pub source: Option<Source>,
    /// The record that says so (our record's file, or `~/.claude.json`).
    pub record: Option<PathBuf>,
}

impl Verdict {
    pub fn trusted(&self) -> bool {
        self.state == TrustState::Trusted
    }
}

/// Where trust is looked up.
#[derive(Clone, Debug, Default)]
pub struct Where {
    /// Our records' folder (`<state dir>/trust`); `None` without a home or state directory
    /// (nothing is remembered then).
    pub records: Option<PathBuf>,
    /// Claude Code's global config (`~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`).
    pub claude_json: Option<PathBuf>,
    /// The editor's own workspace trust, when it has one: it is the answer, no question asked.
    pub editor: Option<bool>,
    /// `GIT_CEILING_DIRECTORIES` (which repository holds a settings file).
    pub ceilings: Vec<PathBuf>,
}

impl Where {
    /// This host's places.
    pub fn of(host: &crate::host::Host) -> Where {
        Where {
            records: host.state_dir().map(|d| d.join(record::FOLDER)),
            claude_json: match &host.config_dir {
                Some(dir) => Some(dir.join(".claude.json")),
                None => host.home.as_ref().map(|h| h.join(".claude.json")),
            },
            editor: None,
            ceilings: host.git_ceilings.clone(),
        }
    }

    /// With the editor's own workspace trust.
    pub fn with_editor(mut self, editor: Option<bool>) -> Where {
        self.editor = editor;
        self
    }
}

/// The trust of `folder` (a real path).
pub fn verdict(fs: &dyn Fs, at: &Where, folder: &Path) -> Verdict {
    if let Some(trusted) = at.editor {
        return Verdict {
            state: if trusted {
                TrustState::Trusted
            } else {
                TrustState::NotTrusted
            },
            source: Some(Source::Editor),
            record: None,
        };
    }
    if let Some(dir) = &at.records
        && let Some(r) = record::read(fs, dir, folder)
    {
        return Verdict {
            state: if r.trusted {
                TrustState::Trusted
            } else {
                TrustState::NotTrusted
            },
            source: Some(Source::Ours),
            record: Some(record::path(dir, folder)),
        };
    }
    if let Some(cj) = &at.claude_json
        && claude_code::trusted(fs, cj, folder)
    {
        return Verdict {
            state: TrustState::Trusted,
            source: Some(Source::ClaudeCode),
            record: Some(cj.clone()),
        };
    }
    Verdict::default()
}

/// A folder's trust as the readers apply it, and its verdict: `folder` as given (its real path
/// is looked up); `preview`: a preview, which reads a folder nobody was asked about as once
/// trusted (nothing runs from it).
pub fn of_folder(fs: &dyn Fs, at: &Where, folder: &Path, preview: bool) -> (Trust, Verdict) {
    let real = fs
        .canonicalize(folder)
        .unwrap_or_else(|_| folder.to_path_buf());
    let v = verdict(fs, at, &real);
    let trust = Trust {
        state: v.state,
        preview,
        local_tracked: local_is_repository(fs, at, &real),
    };
    (trust, v)
}

/// Is `<folder>/.claude/settings.local.json` the repository's file (git tracks it, or git
/// cannot tell)? `false` when there is no such file.
pub fn local_is_repository(fs: &dyn Fs, at: &Where, folder: &Path) -> bool {
    let local = folder.join(".claude").join(LOCAL_SETTINGS_FILE);
    if !fs.exists(&local) {
        return false;
    }
    match crate::git::tracks(fs, &local, &at.ceilings) {
        crate::git::Tracked::Yes => true,
        crate::git::Tracked::No | crate::git::Tracked::NotInRepository => false,
        crate::git::Tracked::Unknown(why) => {
            crate::log_debug!(
                "{}: whether git tracks it is unknown ({why}): read as the repository's",
                local.display()
            );
            true
        }
    }
}

/// Records the user's answer for `folder` (a real path) in our record. `date`: today.
pub fn answer(
    fs: &dyn Fs,
    wfs: &dyn WriteFs,
    at: &Where,
    folder: &Path,
    trusted: bool,
    date: &str,
) -> Result<PathBuf, String> {
    let Some(dir) = &at.records else {
        return Err("no state directory (HOME or XDG_STATE_HOME): the answer is not kept".into());
    };
    record::write(fs, wfs, dir, folder, trusted, date)
}

/// The project's settings file of `folder` (what the question names).
pub fn project_settings(folder: &Path) -> PathBuf {
    folder.join(".claude").join(SETTINGS_FILE)
}

#[cfg(test)]
mod tests;
