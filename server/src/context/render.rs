//! The exact texts the model sees.

use std::path::Path;

use super::FileRecord;

/// What the `Contents of` line shows for the managed `claudeMd` string.
pub const MANAGED_SETTINGS_LABEL: &str = "<managed-settings>";

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
        if e.kind == super::FileKind::Settings {
            out.push_str(MANAGED_SETTINGS_LABEL);
        } else {
            out.push_str(&e.path.to_string_lossy());
        }
        out.push_str(" (");
        out.push_str(e.scope.description());
        out.push_str("):\n\n");
        out.push_str(crate::js::trim(&e.content));
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

/// Attached files longer than this many UTF-16 code units are cut (startup entries never are).
pub const MAX_ATTACHMENT_UNITS: usize = 150_000;

/// An attached file's content cut as Claude Code cuts it, when it is longer than
/// [`MAX_ATTACHMENT_UNITS`]: the first 150,000 units, back to the last `\n` among them (which
/// goes; a `\r` before it stays), or mid-line when they hold none, then the note telling the
/// model where to read on. Returns the text and the number of whole lines kept (0 for a cut
/// mid-line). `None` when the content fits.
pub fn cap_attachment(path: &Path, content: &str) -> Option<(String, usize)> {
    if content.len() <= MAX_ATTACHMENT_UNITS
        || crate::js::len_utf16(content) <= MAX_ATTACHMENT_UNITS
    {
        return None;
    }
    // A surrogate pair the cut would split is left out whole (not measured).
    let head = crate::js::prefix_utf16(content, MAX_ATTACHMENT_UNITS);
    let (kept, lines) = match head.rfind('\n') {
        Some(i) => (&head[..i], head[..i].matches('\n').count() + 1),
        None => (head, 0),
    };
    let text = format!(
        "{kept}\n\n> Only the start of this file is shown. For the rest, call Read on {} with offset={} and a limit.",
        path.display(),
        lines + 1
    );
    Some((text, lines))
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
    /// The additional working directories (`permissions.additionalDirectories`, `--add-dir`):
    /// listed after the git line (permissions-trust.md section 8).
    pub additional_dirs: Vec<String>,
}

/// The environment block of the system prompt's dynamic part, followed by the date line.
pub fn environment(env: &Environment) -> String {
    environment_with(env, &[])
}

/// The environment block with `parts` (the deferred-tools list, the MCP notes and instructions,
/// the skills listing: `../shared/spec/skills-mcp.md` section 1) between the model line and the
/// date, each after a blank line.
pub fn environment_with(env: &Environment, parts: &[String]) -> String {
    environment_full(
        env,
        &EnvironmentParts {
            parts,
            ..EnvironmentParts::default()
        },
    )
}

/// What goes into the environment section besides its facts, and in which order.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvironmentParts<'a> {
    /// Before `# Environment`: the SessionStart hooks' texts (`hooks-agents-styles.md` section 1).
    pub first: &'a [String],
    /// The extensions' parts (deferred tools, MCP notes and instructions, skills).
    pub parts: &'a [String],
    /// Right after the model line: the SessionStart hooks' texts after a compaction.
    pub after_model: &'a [String],
    /// Last before the date: the UserPromptSubmit hooks' texts of the conversation's first prompt.
    pub last: &'a [String],
    /// The section as rebuilt after a compaction (h12/after): the extensions' parts first, then
    /// `# Environment…` and the model line.
    pub compacted: bool,
}

/// The environment block with every part in its place, each after a blank line: normally
/// `first`, `# Environment…` up to the model line, `parts`, `last`, the date; after a compaction
/// `parts`, `# Environment…` up to the model line, `after_model`, `last`, the date.
pub fn environment_full(env: &Environment, p: &EnvironmentParts<'_>) -> String {
    let mut dirs = String::new();
    if !env.additional_dirs.is_empty() {
        dirs.push_str(" - Additional working directories:\n");
        for d in &env.additional_dirs {
            dirs.push_str(&format!("  - {d}\n"));
        }
    }
    let facts = format!(
        "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: {}\n - Is a git repository: {}\n{dirs} - Platform: {}\n - Shell: {}\n - OS Version: {}\n\nYou are powered by the model named {}. The exact model ID is {}.",
        env.cwd, env.is_git, env.platform, env.shell, env.os_version, env.model_name, env.model_id,
    );
    let date = format!("Today's date is {}.", env.date);
    let facts = [facts];
    let order: [&[String]; 4] = if p.compacted {
        [p.parts, p.first, &facts, p.after_model]
    } else {
        [p.first, &facts, p.after_model, p.parts]
    };
    let mut all: Vec<&str> = order
        .iter()
        .flat_map(|v| v.iter().map(String::as_str))
        .collect();
    all.extend(p.last.iter().map(String::as_str));
    all.push(&date);
    all.join("\n\n")
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
    fn attachments_are_cut_at_150000_utf16_units_on_a_line_boundary() {
        let p = Path::new("/r/a.md");
        let line = |c: char, n: usize| format!("{}\n", c.to_string().repeat(n - 1));
        // Exactly 150,000 units: whole. 150,001: cut.
        let exact = line('x', 50).repeat(3_000);
        assert_eq!(cap_attachment(p, &exact), None);
        let (text, lines) = cap_attachment(p, &format!("{exact}y")).unwrap();
        assert_eq!(
            lines, 3_000,
            "the last whole line among the first 150,000 units"
        );
        assert!(text.ends_with(&format!(
            "{}\n\n> Only the start of this file is shown. For the rest, call Read on /r/a.md with offset=3001 and a limit.",
            "x".repeat(49)
        )));
        // `é` is one unit (two bytes): lines of 50 units are cut after line 3,000.
        let (text, lines) = cap_attachment(p, &line('é', 50).repeat(3_100)).unwrap();
        assert_eq!((lines, text.contains("offset=3001")), (3_000, true));
        // An emoji is two: lines of 92 units (42 emoji, 7 more) are cut after line 1,630.
        let emoji = format!("{}1234567\n", "😀".repeat(42));
        let (text, lines) = cap_attachment(p, &emoji.repeat(2_000)).unwrap();
        assert_eq!((lines, text.contains("offset=1631")), (1_630, true));
        // CRLF: the `\r` of the last line kept stays.
        let crlf = format!("{}\r\n", "c".repeat(54)).repeat(3_000);
        let (text, lines) = cap_attachment(p, &crlf).unwrap();
        assert_eq!(lines, 2_678);
        assert!(
            text.contains("c\r\n\n> Only the start"),
            "{}",
            &text[text.len() - 200..]
        );
        // One long line: exactly 150,000 units, mid-line, offset 1.
        let (text, lines) = cap_attachment(p, &"z".repeat(200_000)).unwrap();
        assert_eq!(lines, 0);
        assert!(text.starts_with(&format!("{}\n\n> Only", "z".repeat(150_000))));
        assert!(text.contains("offset=1 and"));
    }

    #[test]
    fn attachment_is_not_trimmed() {
        assert_eq!(
            attachment(Path::new("/r/sub/CLAUDE.md"), "X\n"),
            "<system-reminder>\nContents of /r/sub/CLAUDE.md:\n\nX\n\n</system-reminder>"
        );
    }
}
