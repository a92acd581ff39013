//! Output styles (`../shared/spec/hooks-agents-styles.md` section 11): the built-in
//! `Explanatory` and `Learning`, the user's `<user dir>/output-styles/*.md`, the project's
//! `.claude/output-styles/*.md` and the enabled plugins' `output-styles/*.md` (named
//! `<plugin>:<name>`), the `outputStyle` setting, and the texts a style adds to what the model
//! sees.
//!
//! - A file's name is its frontmatter `name`, else the file name without `.md`; its body is the
//!   file after the frontmatter, trimmed; `description` is shown to people, never sent.
//! - Later sources win for one name: built-ins, plugins, the user's, the project's (the
//!   reference's order).
//! - The lookup is case-sensitive; `default`, an unknown name or none at all is the default
//!   style, which changes nothing and says nothing (measured: no message).
//! - A style changes the system prompt's identity line ([`STYLE_LINE`]), adds
//!   `# Output Style: <name>\n<body>` after the model line and [`active_sentence`] before the
//!   date; the sentence is sent again after every tool result and every later prompt. A custom
//!   style without `keep-coding-instructions: true` drops the coding-instructions section under
//!   the models whose prompt has one (the measured sonnet layout).
//!
//! Pure but for [`Fs`]; every file read is capped ([`MAX_STYLE_BYTES`], [`MAX_STYLES`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::context::frontmatter;
use crate::context::settings::{Settings, Sourced};
use crate::context::{Finding, Severity};
use crate::fs::{Fs, Kind};

/// Bytes of one style file read at most; a longer file is cut (a finding says so).
pub const MAX_STYLE_BYTES: u64 = 256 << 10;
/// Style files read at most from one folder.
pub const MAX_STYLES: usize = 200;

/// The system prompt's identity line while a style is active (measured on the reference's
/// `system[2]`, second line).
pub const STYLE_LINE: &str = "You are an interactive agent that helps users according to your \"Output Style\", which describes how you should respond to user queries.";

/// The built-in `Explanatory` style's prompt (Claude Code 2.1.337's `cli`, identical in
/// 2.1.197: docs/decisions.md).
pub const EXPLANATORY: &str = include_str!("explanatory.txt");
/// The built-in `Learning` style's prompt (same source).
pub const LEARNING: &str = include_str!("learning.txt");

/// The name of the default style (no change).
pub const DEFAULT: &str = "default";

/// Where a style comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    BuiltIn,
    /// An enabled plugin's `output-styles` folder.
    Plugin,
    /// `<user dir>/output-styles`.
    User,
    /// The project's `.claude/output-styles`.
    Project,
}

/// One style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    pub name: String,
    pub description: String,
    /// The text sent after `# Output Style: <name>\n`.
    pub body: String,
    pub source: Source,
    /// The file (`None` for a built-in).
    pub file: Option<PathBuf>,
    /// `keep-coding-instructions: true` (built-ins: true).
    pub keep_coding_instructions: bool,
}

impl Style {
    /// `# Output Style: <name>\n<body>`: the environment section's part.
    pub fn part(&self) -> String {
        format!("# Output Style: {}\n{}", self.name, self.body)
    }

    /// `<name> output style is active. Remember to follow …`.
    pub fn active_sentence(&self) -> String {
        active_sentence(&self.name)
    }
}

/// The sentence before the date and after every tool result and later prompt.
pub fn active_sentence(name: &str) -> String {
    format!(
        "{name} output style is active. Remember to follow the specific guidelines for this style."
    )
}

/// Every style a session can use, later sources winning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Styles {
    pub styles: Vec<Style>,
    /// Every folder looked at (an editor watches them).
    pub folders: Vec<PathBuf>,
    pub findings: Vec<Finding>,
}

impl Styles {
    /// The style called exactly `name`; `None` for the default, an unknown name or `None`.
    pub fn find(&self, name: Option<&str>) -> Option<&Style> {
        let name = name?;
        if name == DEFAULT {
            return None;
        }
        self.styles.iter().rev().find(|s| s.name == name)
    }

    /// The names a user can choose, `default` first, each once.
    pub fn names(&self) -> Vec<String> {
        let mut out = vec![DEFAULT.to_string()];
        for s in &self.styles {
            if !out.contains(&s.name) {
                out.push(s.name.clone());
            }
        }
        out
    }
}

/// Where styles are read from.
pub struct Folders<'a> {
    /// `~/.claude` (or `$CLAUDE_CONFIG_DIR`).
    pub user_dir: Option<&'a Path>,
    /// The project's folder (its `.claude/output-styles`).
    pub project: &'a Path,
    /// The enabled plugins: name and folder (`<root>/output-styles`), and the folder a file must
    /// really be in.
    pub plugins: &'a [(String, PathBuf)],
}

/// The built-in styles.
pub fn built_in() -> Vec<Style> {
    let style = |name: &str, description: &str, body: &str| Style {
        name: name.into(),
        description: description.into(),
        body: body.into(),
        source: Source::BuiltIn,
        file: None,
        keep_coding_instructions: true,
    };
    vec![
        style(
            "Explanatory",
            "Claude explains its implementation choices and codebase patterns",
            EXPLANATORY,
        ),
        style(
            "Learning",
            "Claude pauses and asks you to write small pieces of code for hands-on practice",
            LEARNING,
        ),
    ]
}

/// Every style: built-ins, plugins', the user's, the project's.
pub fn discover(fs: &dyn Fs, folders: &Folders<'_>) -> Styles {
    let mut out = Styles {
        styles: built_in(),
        ..Styles::default()
    };
    for (plugin, root) in folders.plugins {
        let dir = root.join("output-styles");
        read_folder(fs, &dir, Source::Plugin, Some((plugin, root)), &mut out);
    }
    if let Some(u) = folders.user_dir {
        read_folder(fs, &u.join("output-styles"), Source::User, None, &mut out);
    }
    let project = folders.project.join(".claude").join("output-styles");
    read_folder(fs, &project, Source::Project, None, &mut out);
    out
}

fn read_folder(
    fs: &dyn Fs,
    dir: &Path,
    source: Source,
    plugin: Option<(&str, &Path)>,
    out: &mut Styles,
) {
    out.folders.push(dir.to_path_buf());
    let mut entries = fs.read_dir(dir).unwrap_or_default();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in entries
        .into_iter()
        .filter(|e| e.raw.is_none() && e.kind == Some(Kind::File) && e.name.ends_with(".md"))
        .take(MAX_STYLES)
    {
        let file = dir.join(&e.name);
        if let Some((_, root)) = plugin
            && let Some(real) = crate::plugins::outside(fs, &file, root)
        {
            out.findings.push(Finding::whole_file(
                &file,
                Severity::Warning,
                "plugin-linked-outside",
                format!(
                    "output style links to {}, outside its plugin's folder: not read",
                    real.display()
                ),
            ));
            continue;
        }
        let stem = e.name.trim_end_matches(".md").to_string();
        if let Some(mut style) = read_file(fs, &file, &stem, source.clone(), &mut out.findings) {
            if let Some((p, _)) = plugin {
                style.name = format!("{p}:{}", style.name);
            }
            out.styles.push(style);
        }
    }
}

/// One style file: `None` when it cannot be read (a finding says why).
pub fn read_file(
    fs: &dyn Fs,
    file: &Path,
    stem: &str,
    source: Source,
    findings: &mut Vec<Finding>,
) -> Option<Style> {
    let bytes = match fs.read_bytes(file, MAX_STYLE_BYTES + 1) {
        Ok(b) => b,
        Err(e) => {
            findings.push(Finding::whole_file(
                file,
                Severity::Warning,
                "style-unreadable",
                format!("output style not read: {e}"),
            ));
            return None;
        }
    };
    let mut bytes = bytes;
    if bytes.len() as u64 > MAX_STYLE_BYTES {
        bytes.truncate(MAX_STYLE_BYTES as usize);
        findings.push(Finding::whole_file(
            file,
            Severity::Warning,
            "style-too-large",
            format!(
                "output style longer than {} bytes: only its start is used",
                crate::context::message::thousands(MAX_STYLE_BYTES)
            ),
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let (fm, body) = frontmatter::split(&text);
    let field = |k: &str| {
        fm.as_ref()
            .and_then(|f| f.fields.get(k))
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(e) = fm.as_ref().and_then(|f| f.error.as_ref()) {
        findings.push(Finding {
            path: file.to_path_buf(),
            line: Some(e.line),
            start_col: e.col,
            end_col: e.col + 1,
            severity: Severity::Warning,
            code: "style-frontmatter".into(),
            message: format!("output style frontmatter is not valid YAML: {}", e.message),
        });
    }
    let keep = fm
        .as_ref()
        .and_then(|f| f.fields.get("keep-coding-instructions"))
        .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"));
    let body = body.trim().to_string();
    if body.is_empty() {
        findings.push(Finding::whole_file(
            file,
            Severity::Warning,
            "style-empty",
            "output style has no text after its frontmatter: choosing it sends an empty style",
        ));
    }
    Some(Style {
        name: field("name").unwrap_or_else(|| stem.to_string()),
        description: field("description").unwrap_or_default(),
        body,
        source,
        file: Some(file.to_path_buf()),
        keep_coding_instructions: keep,
    })
}

/// The `outputStyle` setting: the last settings file that sets it, in precedence order (user,
/// project, local, managed). A style is text, not a command: the repository's files set it
/// before trust too (as measured).
pub fn setting(fs: &dyn Fs, settings: &Settings) -> Option<Sourced<String>> {
    let mut out = None;
    for f in settings.files.iter().filter(|f| f.valid) {
        let Ok(text) = fs.read_text(&f.path) else {
            continue;
        };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&text) else {
            continue;
        };
        if let Some(v) = map.get("outputStyle").and_then(|v| v.as_str()) {
            out = Some(Sourced {
                value: v.to_string(),
                source: f.path.clone(),
            });
        }
    }
    out
}

/// What `check` says of the styles beyond what reading them found: two files of one name in
/// one folder, and an `outputStyle` setting that names no style (Claude Code then uses the
/// default without a word).
pub fn lint(styles: &Styles, setting: Option<&Sourced<String>>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: std::collections::BTreeMap<&str, &Style> = Default::default();
    for s in &styles.styles {
        if let (Some(prev), Some(file)) = (seen.get(s.name.as_str()), &s.file)
            && prev.file.is_some()
            && prev.source == s.source
        {
            out.push(Finding::whole_file(
                file,
                Severity::Warning,
                "style-duplicate",
                format!(
                    "two output styles are named \"{}\": this one hides {}",
                    s.name,
                    prev.file.as_deref().unwrap_or(Path::new("")).display()
                ),
            ));
        }
        seen.insert(&s.name, s);
    }
    if let Some(set) = setting
        && set.value != DEFAULT
        && styles.find(Some(&set.value)).is_none()
    {
        let near = styles
            .names()
            .into_iter()
            .find(|n| n.eq_ignore_ascii_case(&set.value))
            .map(|n| format!(" (names are case-sensitive: did you mean \"{n}\"?)"))
            .unwrap_or_default();
        out.push(Finding::whole_file(
            &set.source,
            Severity::Warning,
            "style-unknown",
            format!(
                "outputStyle \"{}\" names no output style{near}: Claude Code uses the default style, silently",
                set.value
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
