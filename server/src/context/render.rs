//! The exact texts the model sees.

use std::path::Path;

use super::FileRecord;

pub const PREAMBLE: &str = "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.";

/// `<system-reminder>\n<PREAMBLE>\n\n<entry>[\n\n<entry>...]\n</system-reminder>`, or `None`
/// without entries. Each entry's content is trimmed as JavaScript's `trim()` does.
pub fn instructions_block<'a>(entries: impl IntoIterator<Item = &'a FileRecord>) -> Option<String> {
    let mut out = String::new();
    let mut any = false;
    for e in entries {
        if !any {
            out.push_str("<system-reminder>\n");
            out.push_str(PREAMBLE);
            any = true;
        }
        out.push_str("\n\nContents of ");
        out.push_str(&e.path.to_string_lossy());
        out.push_str(" (");
        out.push_str(e.scope.description());
        out.push_str("):\n\n");
        out.push_str(super::js::trim(&e.content));
    }
    if !any {
        return None;
    }
    out.push_str("\n</system-reminder>");
    Some(out)
}

/// A lazily attached file: no description, content not trimmed.
pub fn attachment(path: &Path, content: &str) -> String {
    format!(
        "<system-reminder>\nContents of {}:\n\n{content}\n</system-reminder>",
        path.display()
    )
}

/// What the environment section needs to know.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    pub cwd: String,
    pub is_git: bool,
    /// `linux`, `darwin`, `win32`.
    pub platform: String,
    pub shell: String,
    pub os_version: String,
    pub model_name: String,
    pub model_id: String,
    /// `YYYY-MM-DD`, local.
    pub date: String,
}

/// The environment block of the system prompt's dynamic part, followed by the date line.
pub fn environment(env: &Environment) -> String {
    format!(
        "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: {}\n - Is a git repository: {}\n - Platform: {}\n - Shell: {}\n - OS Version: {}\n\nYou are powered by the model named {}. The exact model ID is {}.\n\nToday's date is {}.",
        env.cwd,
        env.is_git,
        env.platform,
        env.shell,
        env.os_version,
        env.model_name,
        env.model_id,
        env.date
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{FileKind, Scope, Status};

    #[test]
    fn block_format() {
        let mut a = FileRecord::new(
            "/r/CLAUDE.md".into(),
            Scope::Project,
            FileKind::ClaudeMd,
            Status::Loaded,
        );
        a.content = "\n\nA\n\n".into();
        let mut b = FileRecord::new(
            "/r/CLAUDE.local.md".into(),
            Scope::Local,
            FileKind::LocalMd,
            Status::Loaded,
        );
        b.content = "B".into();
        assert_eq!(
            instructions_block([&a, &b]).unwrap(),
            format!(
                "<system-reminder>\n{PREAMBLE}\n\nContents of /r/CLAUDE.md (project instructions, checked into the codebase):\n\nA\n\nContents of /r/CLAUDE.local.md (user's private project instructions, not checked in):\n\nB\n</system-reminder>"
            )
        );
        assert_eq!(instructions_block([]), None);
    }

    #[test]
    fn attachment_is_not_trimmed() {
        assert_eq!(
            attachment(Path::new("/r/sub/CLAUDE.md"), "X\n"),
            "<system-reminder>\nContents of /r/sub/CLAUDE.md:\n\nX\n\n</system-reminder>"
        );
    }
}
