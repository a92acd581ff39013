//! Whether hooks may run in a folder: only once its user trusts it, user hooks included
//! (`hooks-agents-styles.md` section 7: an interactive session in a never-trusted folder runs no
//! hook at all).
//!
//! **For the lead, at the merge of the trust branch (issue 32):** replace [`trusted`] with the
//! trust module's gate. Until then the one record of trust is Claude Code's own:
//! `projects["<folder>"].hasTrustDialogAccepted: true` in `~/.claude.json` (or
//! `$CLAUDE_CONFIG_DIR/.claude.json`), keyed by the exact folder (a parent's or a child's entry
//! does not count). Without it, no hook runs.

use std::path::Path;

use serde_json::Value;

use crate::fs::Fs;

/// Has the user trusted `folder` (the session's real working folder)? `global_config` is
/// `~/.claude.json` (`Context::global_config`). A missing or unreadable file trusts nothing.
pub fn trusted(fs: &dyn Fs, global_config: Option<&Path>, folder: &Path) -> bool {
    let Some(path) = global_config else {
        return false;
    };
    let Ok(text) = fs.read_text(path) else {
        return false;
    };
    let Ok(json) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    json.get("projects")
        .and_then(|p| p.get(folder.to_string_lossy().as_ref()))
        .and_then(|p| p.get("hasTrustDialogAccepted"))
        == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn only_the_exact_folder_accepted_in_claude_codes_record_is_trusted() {
        let fs = MemFs::with_files([(
            "/h/.claude.json",
            r#"{"projects":{"/w/a":{"hasTrustDialogAccepted":true},"/w/b":{"hasTrustDialogAccepted":false},"/w":{"hasTrustDialogAccepted":true}}}"#,
        )]);
        let cfg = Some(Path::new("/h/.claude.json"));
        assert!(trusted(&fs, cfg, Path::new("/w/a")));
        assert!(!trusted(&fs, cfg, Path::new("/w/b")));
        assert!(
            !trusted(&fs, cfg, Path::new("/w/a/sub")),
            "a parent's entry does not count"
        );
        assert!(!trusted(&fs, cfg, Path::new("/w/c")));
        assert!(!trusted(&fs, None, Path::new("/w/a")));
        assert!(!trusted(&MemFs::new(), cfg, Path::new("/w/a")));
    }
}
