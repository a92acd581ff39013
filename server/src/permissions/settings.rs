//! The permission keys of Claude Code's settings files, read with their own typed reader (serde),
//! apart from `context/settings.rs` (which reads what changes the instructions):
//! `permissions.allow`, `permissions.ask`, `permissions.deny`, `permissions.additionalDirectories`,
//! `permissions.defaultMode`, `permissions.disableBypassPermissionsMode` (also accepted at the top
//! level) and the managed file's `allowManagedPermissionRulesOnly` (also accepted under
//! `permissions`).
//!
//! What trust changes (`../shared/spec/permissions-trust.md` section 1): in a folder that is not
//! trusted the project file's `allow` and `additionalDirectories` entries are ignored, with the
//! reference's warning once per key; its `deny` and `ask` apply. The local file applies whole.
//! With `allowManagedPermissionRulesOnly: true` in the managed file only the managed file's rules
//! apply (the user's deny included: measured), and the command line's are ignored too (ours).
//!
//! Read through [`Fs`]; never fails: a file that is not valid JSON gives nothing (the instruction
//! reader already reports it), a value of the wrong type is a notice.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::mode::Declared;
use super::rule::{Bases, Kind, Notice, Origin, Rule, Source};
use crate::fs::Fs;

/// Entries read from one list at most (a cap against runaway files).
pub const MAX_ENTRIES: usize = 1_000;

/// One settings file to read.
#[derive(Clone, Debug)]
pub struct FileRef {
    pub origin: Origin,
    pub path: PathBuf,
    /// The repository's file, not the user's (the project's `.claude/settings.json`, a
    /// `.claude/settings.local.json` git tracks: workspace trust): what of it grants anything
    /// waits for the folder's trust.
    pub repository: bool,
}

/// What reading needs besides the files.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// Lowest precedence first: user, project, local, managed.
    pub files: &'a [FileRef],
    /// The session's working directory (real path).
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// Has the user trusted `cwd`? (The project file's `allow` and `additionalDirectories`.)
    pub trusted: bool,
    /// `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), named by the untrusted warning.
    pub global_config: Option<&'a Path>,
    /// `--allowed-tools` then `--disallowed-tools` rules.
    pub command_line: &'a [(Kind, String)],
}

/// The permission settings of a session.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// Every rule that applies, in file order (managed last), the command line's after.
    pub rules: Vec<Rule>,
    /// `additionalDirectories` that apply (absolute), with where each was written.
    pub additional_dirs: Vec<(PathBuf, Source)>,
    pub default_modes: Vec<Declared>,
    /// `disableBypassPermissionsMode: "disable"`.
    pub disable_bypass: Option<Source>,
    /// `allowManagedPermissionRulesOnly: true` in the managed file.
    pub managed_only: bool,
    /// The reference's warnings (stderr) and ours (`check`).
    pub notices: Vec<Notice>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileSettings {
    #[serde(default)]
    permissions: Option<Value>,
    #[serde(default)]
    disable_bypass_permissions_mode: Option<Value>,
    #[serde(default)]
    allow_managed_permission_rules_only: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Block {
    #[serde(default)]
    allow: Option<Value>,
    #[serde(default)]
    ask: Option<Value>,
    #[serde(default)]
    deny: Option<Value>,
    #[serde(default)]
    additional_directories: Option<Value>,
    #[serde(default)]
    default_mode: Option<Value>,
    #[serde(default)]
    disable_bypass_permissions_mode: Option<Value>,
    #[serde(default)]
    allow_managed_permission_rules_only: Option<Value>,
}

/// Reads the permission settings of a session.
pub fn read(fs: &dyn Fs, input: &Input<'_>) -> Loaded {
    let mut out = Loaded::default();
    let mut seen: Vec<&Path> = Vec::new();
    for f in input.files {
        if seen.contains(&f.path.as_path()) {
            continue;
        }
        seen.push(&f.path);
        let Ok(text) = fs.read_text(&f.path) else {
            continue;
        };
        read_one(&text, f, input, &mut out);
    }
    let cli_bases = Bases {
        cwd: input.cwd.to_path_buf(),
        home: input.home.map(Path::to_path_buf),
        root: input.cwd.to_path_buf(),
    };
    for (kind, text) in input.command_line.iter().take(MAX_ENTRIES) {
        out.rules.push(Rule::parse(
            text,
            *kind,
            Source::command_line(),
            &cli_bases,
            "command line",
            &mut out.notices,
        ));
    }
    if out.managed_only {
        out.rules.retain(|r| r.source.origin == Origin::Managed);
    }
    out
}

fn read_one(text: &str, f: &FileRef, input: &Input<'_>, out: &mut Loaded) {
    let Ok(file) = serde_json::from_str::<FileSettings>(text) else {
        return;
    };
    let block: Block = match file.permissions {
        Some(v @ Value::Object(_)) => serde_json::from_value(v).unwrap_or_default(),
        Some(_) => {
            out.notices.push(notice(
                f,
                None,
                "permissions-not-object",
                "\"permissions\" is not an object: none of its rules apply".into(),
            ));
            Block::default()
        }
        None => Block::default(),
    };
    let lines = Lines::new(text);
    let perm_at = text.find("\"permissions\"").unwrap_or(0);
    let source = |line: Option<usize>| Source {
        origin: f.origin,
        file: Some(f.path.clone()),
        line,
    };
    // The folder holding the settings file's `.claude` folder (`/x` rules are below it).
    let root = match f.origin {
        Origin::Managed => f.path.parent().map(Path::to_path_buf),
        _ => f
            .path
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf),
    }
    .unwrap_or_else(|| input.cwd.to_path_buf());
    let bases = Bases {
        cwd: input.cwd.to_path_buf(),
        home: input.home.map(Path::to_path_buf),
        root: root.clone(),
    };
    let shown = relative(input.cwd, &f.path);
    let untrusted_project = f.repository && !input.trusted;
    for (kind, key, value) in [
        (Kind::Allow, "allow", &block.allow),
        (Kind::Ask, "ask", &block.ask),
        (Kind::Deny, "deny", &block.deny),
    ] {
        let Some(value) = value else { continue };
        let from = lines.key(text, key, perm_at);
        let entries = strings(value, f, key, &lines, text, from, out);
        if kind == Kind::Allow && untrusted_project {
            if !entries.is_empty() {
                out.notices
                    .push(ignored(f, input, "allow", entries.len(), &shown));
            }
            continue;
        }
        for (entry, line) in entries {
            out.rules.push(Rule::parse(
                &entry,
                kind,
                source(line),
                &bases,
                &shown,
                &mut out.notices,
            ));
        }
    }
    if let Some(value) = &block.additional_directories {
        let from = lines.key(text, "additionalDirectories", perm_at);
        let entries = strings(value, f, "additionalDirectories", &lines, text, from, out);
        if untrusted_project {
            if !entries.is_empty() {
                out.notices.push(ignored(
                    f,
                    input,
                    "additionalDirectories",
                    entries.len(),
                    &shown,
                ));
            }
        } else {
            for (entry, line) in entries {
                let dir = if let Some(rest) = entry.strip_prefix("~/") {
                    match input.home {
                        Some(h) => h.join(rest),
                        None => continue,
                    }
                } else {
                    // Relative entries are below the folder the settings are about (a project's
                    // `../outside` is beside the project, measured); the user's below cwd.
                    let base = match f.origin {
                        Origin::User | Origin::CommandLine => input.cwd,
                        _ => root.as_path(),
                    };
                    crate::fs::normalize(base, Path::new(&entry))
                };
                out.additional_dirs.push((dir, source(line)));
            }
        }
    }
    if let Some(v) = &block.default_mode {
        let line = lines.key_line(text, "defaultMode", perm_at);
        match v.as_str() {
            Some(s) => out.default_modes.push(Declared {
                value: s.to_string(),
                source: source(line),
                repository: f.repository,
            }),
            None => out.notices.push(notice(
                f,
                line,
                "permissions-default-mode-not-string",
                format!("permissions.defaultMode is {v}, not a mode name: ignored"),
            )),
        }
    }
    for v in [
        &block.disable_bypass_permissions_mode,
        &file.disable_bypass_permissions_mode,
    ]
    .into_iter()
    .flatten()
    {
        if v.as_str() == Some("disable") {
            let line = lines.key_line(text, "disableBypassPermissionsMode", 0);
            out.disable_bypass = Some(source(line));
        }
    }
    if f.origin == Origin::Managed
        && [
            &block.allow_managed_permission_rules_only,
            &file.allow_managed_permission_rules_only,
        ]
        .into_iter()
        .flatten()
        .any(|v| v.as_bool() == Some(true))
    {
        out.managed_only = true;
    }
}

/// The reference's warning for a key of an untrusted project's file.
fn ignored(f: &FileRef, input: &Input<'_>, key: &str, n: usize, shown: &str) -> Notice {
    let cwd = input.cwd.display();
    let config = input
        .global_config
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "~/.claude.json".into());
    let entries = if n == 1 { "entry" } else { "entries" };
    notice(
        f,
        None,
        "permissions-untrusted",
        format!(
            "Ignoring {n} permissions.{key} {entries} from {shown}: this workspace has not been trusted. Run Claude Code interactively here once and accept the trust dialog, or set projects[\"{cwd}\"].hasTrustDialogAccepted: true in {config}."
        ),
    )
}

fn notice(f: &FileRef, line: Option<usize>, code: &str, message: String) -> Notice {
    Notice {
        code: code.to_string(),
        message,
        source: Source {
            origin: f.origin,
            file: Some(f.path.clone()),
            line,
        },
        rule: None,
    }
}

/// The strings of a list, each with its line (searched from `from`), capped; what is not a
/// string is a notice.
fn strings(
    value: &Value,
    f: &FileRef,
    key: &str,
    lines: &Lines,
    text: &str,
    from: usize,
    out: &mut Loaded,
) -> Vec<(String, Option<usize>)> {
    let Some(list) = value.as_array() else {
        out.notices.push(notice(
            f,
            lines.key_line(text, key, 0),
            "permissions-not-list",
            format!("permissions.{key} is not a list of strings: none of it applies"),
        ));
        return Vec::new();
    };
    let mut at = from;
    let mut entries = Vec::new();
    for v in list.iter().take(MAX_ENTRIES) {
        match v.as_str() {
            Some(s) => {
                let needle = serde_json::to_string(s).unwrap_or_default();
                let line = text
                    .get(at..)
                    .and_then(|rest| rest.find(&needle))
                    .map(|off| {
                        at += off + needle.len();
                        lines.line(at - needle.len())
                    });
                entries.push((s.to_string(), line));
            }
            None => out.notices.push(notice(
                f,
                None,
                "permissions-entry-not-string",
                format!("permissions.{key} holds {v}, which is not a rule (a string): ignored"),
            )),
        }
    }
    if list.len() > MAX_ENTRIES {
        out.notices.push(notice(
            f,
            None,
            "permissions-cap",
            format!(
                "permissions.{key} has {} entries: only the first {MAX_ENTRIES} apply (a cap against runaway settings)",
                list.len()
            ),
        ));
    }
    entries
}

/// `to` relative to `from` (`../home/.claude/settings.json`), as the reference's warnings name
/// a settings file.
pub fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in &b[common..] {
        out.push(c.as_os_str());
    }
    out.display().to_string()
}

/// Line starts of a text.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut v = vec![0];
        v.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(v)
    }

    fn line(&self, off: usize) -> usize {
        self.0.partition_point(|&s| s <= off) - 1
    }

    /// The offset just after `"key"` at or after `from` (or `from`).
    fn key(&self, text: &str, key: &str, from: usize) -> usize {
        let needle = format!("\"{key}\"");
        text.get(from..)
            .and_then(|r| r.find(&needle))
            .map_or(from, |o| from + o + needle.len())
    }

    fn key_line(&self, text: &str, key: &str, from: usize) -> Option<usize> {
        let needle = format!("\"{key}\"");
        text.get(from..)
            .and_then(|r| r.find(&needle))
            .map(|o| self.line(from + o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn files() -> Vec<FileRef> {
        vec![
            FileRef {
                origin: Origin::User,
                repository: false,
                path: "/r/home/.claude/settings.json".into(),
            },
            FileRef {
                origin: Origin::Project,
                repository: true,
                path: "/r/repo/.claude/settings.json".into(),
            },
            FileRef {
                origin: Origin::Local,
                repository: false,
                path: "/r/repo/.claude/settings.local.json".into(),
            },
            FileRef {
                origin: Origin::Managed,
                repository: false,
                path: "/etc/claude-code/managed-settings.json".into(),
            },
        ]
    }

    fn load(fs: &MemFs, trusted: bool, cli: &[(Kind, String)]) -> Loaded {
        let files = files();
        read(
            fs,
            &Input {
                files: &files,
                cwd: Path::new("/r/repo"),
                home: Some(Path::new("/r/home")),
                trusted,
                global_config: Some(Path::new("/r/home/.claude.json")),
                command_line: cli,
            },
        )
    }

    fn texts(l: &Loaded) -> Vec<(Kind, &str, Origin)> {
        l.rules
            .iter()
            .map(|r| (r.kind, r.text.as_str(), r.source.origin))
            .collect()
    }

    /// r4/untrusted: the project's allow entries are ignored with the reference's warning; its
    /// deny and ask apply; the local file applies whole.
    #[test]
    fn an_untrusted_project_keeps_its_deny_and_ask_but_not_its_allow() {
        let fs = MemFs::with_files([
            (
                "/r/repo/.claude/settings.json",
                "{\n  \"permissions\": {\n    \"allow\": [\"Bash(mv:*)\", \"Edit(v/**)\", \"Bash(ln:*)\"],\n    \"deny\": [\"Bash(touch:*)\"],\n    \"ask\": [\"Bash(cp:*)\"],\n    \"additionalDirectories\": [\"../outside\"]\n  }\n}\n",
            ),
            (
                "/r/repo/.claude/settings.local.json",
                "{\"permissions\": {\"allow\": [\"Bash(chmod:*)\"], \"additionalDirectories\": [\"../other\"]}}",
            ),
        ]);
        let l = load(&fs, false, &[]);
        assert_eq!(
            texts(&l),
            [
                (Kind::Ask, "Bash(cp:*)", Origin::Project),
                (Kind::Deny, "Bash(touch:*)", Origin::Project),
                (Kind::Allow, "Bash(chmod:*)", Origin::Local),
            ]
        );
        let warnings: Vec<&str> = l
            .notices
            .iter()
            .filter(|n| n.code == "permissions-untrusted")
            .map(|n| n.message.as_str())
            .collect();
        assert_eq!(
            warnings,
            [
                "Ignoring 3 permissions.allow entries from .claude/settings.json: this workspace has not been trusted. Run Claude Code interactively here once and accept the trust dialog, or set projects[\"/r/repo\"].hasTrustDialogAccepted: true in /r/home/.claude.json.",
                "Ignoring 1 permissions.additionalDirectories entry from .claude/settings.json: this workspace has not been trusted. Run Claude Code interactively here once and accept the trust dialog, or set projects[\"/r/repo\"].hasTrustDialogAccepted: true in /r/home/.claude.json.",
            ]
        );
        assert_eq!(
            l.additional_dirs
                .iter()
                .map(|d| d.0.clone())
                .collect::<Vec<_>>(),
            [PathBuf::from("/r/other")]
        );
        // Trusted: everything applies, each rule with its line.
        let l = load(&fs, true, &[]);
        assert_eq!(l.rules.len(), 6);
        assert_eq!(l.rules[0].text, "Bash(mv:*)");
        assert_eq!(l.rules[0].source.line, Some(2));
        assert_eq!(
            (l.rules[3].text.as_str(), l.rules[3].source.line),
            ("Bash(cp:*)", Some(4))
        );
        assert_eq!(l.additional_dirs[0].0, PathBuf::from("/r/outside"));
    }

    /// x/managed_only: only the managed file's rules, the user's deny included.
    #[test]
    fn managed_only_drops_every_other_rule() {
        let fs = MemFs::with_files([
            (
                "/r/home/.claude/settings.json",
                "{\"permissions\": {\"deny\": [\"Bash(ln:*)\"], \"allow\": [\"Bash(cp:*)\"], \"defaultMode\": \"plan\"}}",
            ),
            (
                "/etc/claude-code/managed-settings.json",
                "{\"allowManagedPermissionRulesOnly\": true, \"permissions\": {\"allow\": [\"Bash(ln:*)\"]}}",
            ),
        ]);
        let cli = [(Kind::Allow, "Bash(rm:*)".to_string())];
        let l = load(&fs, true, &cli);
        assert!(l.managed_only);
        assert_eq!(texts(&l), [(Kind::Allow, "Bash(ln:*)", Origin::Managed)]);
        assert_eq!(l.default_modes[0].value, "plan");
        let fs = MemFs::with_files([(
            "/r/home/.claude/settings.json",
            "{\"permissions\": {\"disableBypassPermissionsMode\": \"disable\", \"allow\": 3}}",
        )]);
        let l = load(&fs, true, &cli);
        assert!(l.disable_bypass.is_some());
        assert_eq!(
            texts(&l),
            [(Kind::Allow, "Bash(rm:*)", Origin::CommandLine)]
        );
        assert!(l.notices.iter().any(|n| n.code == "permissions-not-list"));
    }

    #[test]
    fn settings_files_are_named_relative_to_cwd() {
        assert_eq!(
            relative(
                Path::new("/r/repo"),
                Path::new("/r/home/.claude/settings.json")
            ),
            "../home/.claude/settings.json"
        );
        assert_eq!(
            relative(
                Path::new("/r/repo"),
                Path::new("/r/repo/.claude/settings.json")
            ),
            ".claude/settings.json"
        );
    }
}
