//! The hooks a session has: read from every settings file (`hooks-agents-styles.md` section 8),
//! with the switches applied, and what is wrong with them (`check`'s findings).
//!
//! Settings shape (Claude Code's): `"hooks": {"<Event>": [{"matcher": "<m>", "hooks":
//! [{"type": "command", "command": "<cmd>", "timeout": <seconds>}]}]}`. Every source runs:
//! managed (`<managed>/managed-settings.json`), user, project (`.claude/settings.json`) and local
//! (`.claude/settings.local.json`), and a plugin's `hooks/hooks.json` ([`Config::add`] with
//! [`Source::Plugin`]). Matcher groups and several hooks in one group all run.
//!
//! Switches, as measured (h9/*, h13/*):
//! - `disableAllHooks: true` in user, project or local settings stops every hook but the
//!   managed ones; the merged value counts (a later file's `false` undoes an earlier `true`:
//!   user, then project, then local);
//! - `disableAllHooks: true` in managed settings stops every hook, managed ones too;
//! - `allowManagedHooksOnly: true` in managed settings runs only the managed hooks.
//!
//! Identical command strings run once per event, whichever files hold them ([`Config::select`]).
//! Only `type: "command"` hooks run here; `prompt` and `agent` hooks are listed, not run.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::Event;
use super::matcher::Matcher;
use crate::context::settings::{SettingsFile, SettingsScope};
use crate::context::{Finding, Severity};
use crate::fs::{Fs, ReadError};

/// Hooks one session reads at most (a cap against runaway settings; a real file has a handful).
pub const MAX_HOOKS: usize = 1_000;

/// Where a hook is configured.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Managed,
    User,
    Project,
    Local,
    /// A plugin's `hooks/hooks.json`: its name, folder (`CLAUDE_PLUGIN_ROOT`) and data folder
    /// (`CLAUDE_PLUGIN_DATA`).
    Plugin {
        name: String,
        root: PathBuf,
        data: Option<PathBuf>,
    },
}

/// A source as the preview names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Managed,
    User,
    Project,
    Local,
    Plugin,
}

impl Source {
    pub fn scope(&self) -> Scope {
        match self {
            Source::Managed => Scope::Managed,
            Source::User => Scope::User,
            Source::Project => Scope::Project,
            Source::Local => Scope::Local,
            Source::Plugin { .. } => Scope::Plugin,
        }
    }

    pub fn label(&self) -> String {
        match self {
            Source::Managed => "managed".into(),
            Source::User => "user".into(),
            Source::Project => "project".into(),
            Source::Local => "local".into(),
            Source::Plugin { name, .. } => format!("plugin {name}"),
        }
    }

    fn of(scope: SettingsScope) -> Source {
        match scope {
            SettingsScope::Managed => Source::Managed,
            SettingsScope::User => Source::User,
            SettingsScope::Project => Source::Project,
            SettingsScope::Local => Source::Local,
        }
    }
}

/// One configured hook.
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub event: Event,
    pub source: Source,
    /// The settings file (or the plugin's `hooks.json`) that holds it.
    pub file: PathBuf,
    /// The 0-based line of its command in that file, when found.
    pub line: Option<usize>,
    pub matcher: Matcher,
    /// The command line, exactly as configured (a plugin's `${CLAUDE_PLUGIN_ROOT}` replaced).
    pub command: String,
    /// `timeout`, in seconds, as written.
    pub timeout: Option<f64>,
    /// `command`, `prompt` or `agent`.
    pub kind: String,
}

/// Whether a configured hook runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Runs,
    /// Configured, not run: why.
    Off(String),
}

/// A configured hook and whether it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub hook: Hook,
    pub status: Status,
}

/// The hooks of a session.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Every hook configured, source by source (managed, user, project, local, plugins), in file
    /// order.
    pub entries: Vec<Entry>,
    /// What is wrong in the hook settings.
    pub findings: Vec<Finding>,
    /// `disableAllHooks` that applies, and where it is set.
    pub disabled: Option<(Source, PathBuf)>,
    /// `allowManagedHooksOnly` of the managed settings, when set.
    pub managed_only: Option<PathBuf>,
}

/// What one settings file says about hooks.
#[derive(Default)]
struct FileHooks {
    disable_all: Option<bool>,
    managed_only: Option<bool>,
}

/// Substitutions a command's paths get when `check` looks for missing scripts.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    /// The session's folder (`$CLAUDE_PROJECT_DIR`; relative paths start here).
    pub project_dir: PathBuf,
    /// The home folder (`~/`).
    pub home: Option<PathBuf>,
}

impl Config {
    /// Reads the hooks of the settings files `files` (a walk's: `Context::settings().files`),
    /// lowest precedence first as the walk lists them; the switches are applied.
    pub fn read(fs: &dyn Fs, files: &[SettingsFile], paths: &Paths) -> Config {
        let mut out = Config::default();
        // Managed first: the preview lists them first.
        let mut ordered: Vec<&SettingsFile> = files.iter().collect();
        ordered.sort_by_key(|f| f.scope != SettingsScope::Managed);
        let mut merged_disable: Option<(bool, Source, PathBuf)> = None;
        let mut managed_disable = None;
        for f in ordered {
            if !f.valid {
                continue;
            }
            let text = match fs.read_text(&f.path) {
                Ok(t) => t,
                Err(ReadError::NotFound) => continue,
                Err(_) => continue,
            };
            let Ok(Value::Object(json)) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let source = Source::of(f.scope);
            let said = out.add_json(fs, source.clone(), &f.path, &text, &json, paths);
            if let Some(d) = said.disable_all {
                if source == Source::Managed {
                    managed_disable = Some(d);
                } else {
                    merged_disable = Some((d, source.clone(), f.path.clone()));
                }
            }
            if source == Source::Managed && said.managed_only == Some(true) {
                out.managed_only = Some(f.path.clone());
            }
        }
        if managed_disable == Some(true) {
            let path = files
                .iter()
                .find(|f| f.scope == SettingsScope::Managed)
                .map(|f| f.path.clone())
                .unwrap_or_default();
            out.disabled = Some((Source::Managed, path));
        } else if let Some((true, source, path)) = merged_disable {
            out.disabled = Some((source, path));
        }
        out.apply_switches();
        out
    }

    /// Adds the hooks of one more source (a plugin's `hooks.json`: `{"hooks": {…}}` or the
    /// events at the top), with the switches applied again.
    pub fn add(&mut self, fs: &dyn Fs, source: Source, file: &Path, text: &str, paths: &Paths) {
        let Ok(Value::Object(json)) = serde_json::from_str::<Value>(text) else {
            self.findings.push(Finding::whole_file(
                file,
                Severity::Warning,
                "hooks-invalid",
                "not a JSON object: none of its hooks run",
            ));
            return;
        };
        let json = match json.get("hooks") {
            Some(Value::Object(_)) => json,
            _ => {
                let mut wrapped = Map::new();
                wrapped.insert("hooks".into(), Value::Object(json));
                wrapped
            }
        };
        self.add_json(fs, source, file, text, &json, paths);
        self.apply_switches();
    }

    fn apply_switches(&mut self) {
        let disabled = self.disabled.clone();
        let managed_only = self.managed_only.clone();
        for e in &mut self.entries {
            if e.hook.kind != "command" {
                continue;
            }
            let managed = e.hook.source == Source::Managed;
            e.status = match (&disabled, &managed_only) {
                (Some((Source::Managed, p)), _) => Status::Off(format!(
                    "disableAllHooks is true in the managed settings {}",
                    p.display()
                )),
                (Some((s, p)), _) if !managed => Status::Off(format!(
                    "disableAllHooks is true in the {} settings {}",
                    s.label(),
                    p.display()
                )),
                (_, Some(p)) if !managed => Status::Off(format!(
                    "allowManagedHooksOnly is true in the managed settings {}",
                    p.display()
                )),
                _ => Status::Runs,
            };
        }
    }

    /// The hooks of one file's `hooks` key; returns its switches.
    fn add_json(
        &mut self,
        fs: &dyn Fs,
        source: Source,
        file: &Path,
        text: &str,
        json: &Map<String, Value>,
        paths: &Paths,
    ) -> FileHooks {
        let mut said = FileHooks::default();
        let lines = Lines::new(text);
        let finding = |needle: &str, from: usize, severity, code: &str, message: String| {
            let (line, start, end) = lines.locate(text, needle, from);
            Finding {
                path: file.to_path_buf(),
                line,
                start_col: start,
                end_col: end,
                severity,
                code: code.into(),
                message,
            }
        };
        for (key, slot) in [
            ("disableAllHooks", &mut said.disable_all),
            ("allowManagedHooksOnly", &mut said.managed_only),
        ] {
            match json.get(key) {
                None => {}
                Some(Value::Bool(b)) => *slot = Some(*b),
                Some(_) => self.findings.push(finding(
                    &format!("\"{key}\""),
                    0,
                    Severity::Warning,
                    "hooks-invalid",
                    format!("{key} must be true or false; this value is ignored"),
                )),
            }
        }
        if said.managed_only.is_some() && source != Source::Managed {
            self.findings.push(finding(
                "\"allowManagedHooksOnly\"",
                0,
                Severity::Information,
                "hooks-managed-only",
                "allowManagedHooksOnly counts only in the managed settings; here it changes nothing"
                    .into(),
            ));
        }
        let Some(hooks) = json.get("hooks") else {
            return said;
        };
        let Some(events) = hooks.as_object() else {
            self.findings.push(finding(
                "\"hooks\"",
                0,
                Severity::Warning,
                "hooks-invalid",
                "hooks must be an object of events (\"PreToolUse\": [...]); none of these run"
                    .into(),
            ));
            return said;
        };
        let hooks_at = text.find("\"hooks\"").unwrap_or(0);
        for (name, groups) in events {
            let event_at = text[hooks_at..]
                .find(&format!("\"{name}\""))
                .map_or(hooks_at, |o| o + hooks_at);
            let Some(event) = Event::parse(name) else {
                let close = Event::ALL
                    .into_iter()
                    .find(|e| e.name().eq_ignore_ascii_case(name));
                let hint = match close {
                    Some(e) => format!(" (event names are case-sensitive: {e})"),
                    None => format!(
                        "; the events are {}",
                        Event::ALL.map(Event::name).join(", ")
                    ),
                };
                self.findings.push(finding(
                    &format!("\"{name}\""),
                    hooks_at,
                    Severity::Warning,
                    "hook-unknown-event",
                    format!("unknown hook event {name:?}: its hooks never run{hint}"),
                ));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                self.findings.push(finding(
                    &format!("\"{name}\""),
                    hooks_at,
                    Severity::Warning,
                    "hooks-invalid",
                    format!(
                        "{name} must be a list of matcher groups ([{{\"matcher\": …, \"hooks\": [...]}}]); none of these run"
                    ),
                ));
                continue;
            };
            let mut from = event_at;
            for group in groups {
                let matcher_raw = match group.get("matcher") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.as_str()),
                    Some(_) => {
                        self.findings.push(finding(
                            "\"matcher\"",
                            from,
                            Severity::Warning,
                            "hook-bad-matcher",
                            "matcher must be a string; this group never runs".into(),
                        ));
                        continue;
                    }
                };
                let matcher = Matcher::parse(matcher_raw);
                if let Some(err) = matcher.error() {
                    let raw = matcher.raw().unwrap_or_default();
                    self.findings.push(finding(
                        &serde_json::to_string(raw).unwrap_or_default(),
                        from,
                        Severity::Warning,
                        "hook-bad-matcher",
                        format!(
                            "matcher {raw:?} is not a regular expression ({err}): it matches nothing, so this group never runs"
                        ),
                    ));
                }
                if matcher_raw.is_some() && event.matches_on().is_none() {
                    self.findings.push(finding(
                        "\"matcher\"",
                        from,
                        Severity::Information,
                        "hook-matcher-ignored",
                        format!("{name} hooks have no matcher: this one is ignored and the group runs for every {name}"),
                    ));
                }
                let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                    self.findings.push(finding(
                        &format!("\"{name}\""),
                        hooks_at,
                        Severity::Warning,
                        "hooks-invalid",
                        format!("a {name} group without a \"hooks\" list: it runs nothing"),
                    ));
                    continue;
                };
                for h in list {
                    if self.entries.len() >= MAX_HOOKS {
                        self.findings.push(Finding::whole_file(
                            file,
                            Severity::Warning,
                            "cap-hooks",
                            format!("more than {MAX_HOOKS} hooks: the rest are not read"),
                        ));
                        return said;
                    }
                    let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
                    let Some(command) = h.get("command").and_then(Value::as_str) else {
                        if kind == "command" {
                            self.findings.push(finding(
                                &format!("\"{name}\""),
                                hooks_at,
                                Severity::Warning,
                                "hook-no-command",
                                format!(
                                    "a {name} hook without a \"command\" string: it never runs"
                                ),
                            ));
                            continue;
                        }
                        // A prompt or agent hook: listed with its prompt.
                        let prompt = h.get("prompt").and_then(Value::as_str).unwrap_or_default();
                        self.entries.push(Entry {
                            hook: Hook {
                                event,
                                source: source.clone(),
                                file: file.to_path_buf(),
                                line: None,
                                matcher: matcher.clone(),
                                command: prompt.to_string(),
                                timeout: None,
                                kind: kind.to_string(),
                            },
                            status: Status::Off(format!(
                                "{kind} hooks are not run by claude-context"
                            )),
                        });
                        continue;
                    };
                    let needle = serde_json::to_string(command).unwrap_or_default();
                    let (line, s, e) = lines.locate(text, &needle, from);
                    if line.is_some() {
                        from = lines.offset(line.unwrap_or(0)) + e;
                    }
                    let timeout = match h.get("timeout") {
                        None | Some(Value::Null) => None,
                        Some(v) => match v.as_f64().filter(|t| *t > 0.0 && t.is_finite()) {
                            Some(t) => Some(t),
                            None => {
                                self.findings.push(Finding {
                                    path: file.to_path_buf(),
                                    line,
                                    start_col: s,
                                    end_col: e,
                                    severity: Severity::Warning,
                                    code: "hook-bad-timeout".into(),
                                    message: "timeout must be a positive number of seconds; the default applies".into(),
                                });
                                None
                            }
                        },
                    };
                    let status = if kind == "command" {
                        if h.get("type").is_none() {
                            self.findings.push(Finding {
                                path: file.to_path_buf(),
                                line,
                                start_col: s,
                                end_col: e,
                                severity: Severity::Information,
                                code: "hook-no-type".into(),
                                message: "this hook has no \"type\"; it runs as \"command\"".into(),
                            });
                        }
                        Status::Runs
                    } else {
                        if !matches!(kind, "prompt" | "agent") {
                            self.findings.push(Finding {
                                path: file.to_path_buf(),
                                line,
                                start_col: s,
                                end_col: e,
                                severity: Severity::Warning,
                                code: "hook-unsupported-type".into(),
                                message: format!(
                                    "unknown hook type {kind:?}: it never runs (use \"command\")"
                                ),
                            });
                        }
                        Status::Off(format!("{kind} hooks are not run by claude-context"))
                    };
                    let root = match &source {
                        Source::Plugin { root, .. } => Some(root.to_string_lossy().into_owned()),
                        _ => None,
                    };
                    let rooted = |t: &str| match &root {
                        Some(r) => t.replace("${CLAUDE_PLUGIN_ROOT}", r),
                        None => t.to_string(),
                    };
                    // Exec form (`args`): the program and its arguments exactly as written, no
                    // shell interpretation: each quoted for the shell, so the command line runs
                    // that program with those arguments.
                    let command = match h.get("args").and_then(Value::as_array) {
                        Some(args) => {
                            let words: Vec<String> = std::iter::once(rooted(command))
                                .chain(args.iter().filter_map(Value::as_str).map(rooted))
                                .collect();
                            shlex::try_join(words.iter().map(String::as_str))
                                .unwrap_or_else(|_| rooted(command))
                        }
                        None => rooted(command),
                    };
                    for key in ["async", "asyncRewake", "if", "shell"] {
                        if h.get(key)
                            .is_some_and(|v| !v.is_null() && *v != Value::Bool(false))
                        {
                            self.findings.push(Finding {
                                path: file.to_path_buf(),
                                line,
                                start_col: s,
                                end_col: e,
                                severity: Severity::Information,
                                code: "hook-key-ignored".into(),
                                message: format!(
                                    "{key:?} is not read by claude-context: this hook runs each time its matcher matches, waited for, under /bin/sh"
                                ),
                            });
                        }
                    }
                    if kind == "command"
                        && let Some(missing) = missing_script(fs, &command, paths)
                    {
                        self.findings.push(Finding {
                            path: file.to_path_buf(),
                            line,
                            start_col: s,
                            end_col: e,
                            severity: Severity::Warning,
                            code: "hook-missing-script".into(),
                            message: format!(
                                "{name} hook: {} does not exist, so the command fails each time it runs",
                                missing.display()
                            ),
                        });
                    }
                    if !event.runs_here() && kind == "command" {
                        self.findings.push(Finding {
                            path: file.to_path_buf(),
                            line,
                            start_col: s,
                            end_col: e,
                            severity: Severity::Information,
                            code: "hook-not-run".into(),
                            message: format!(
                                "{name} hooks run in Claude Code, not in claude-context"
                            ),
                        });
                    }
                    self.entries.push(Entry {
                        hook: Hook {
                            event,
                            source: source.clone(),
                            file: file.to_path_buf(),
                            line,
                            matcher: matcher.clone(),
                            command,
                            timeout,
                            kind: kind.to_string(),
                        },
                        status,
                    });
                }
            }
        }
        said
    }

    /// The hooks that run for `event` on `subject` (a tool's name, a source, a trigger; `None`
    /// for the events without a matcher): matched, each command once, in source order.
    pub fn select(&self, event: Event, subject: Option<&str>) -> Vec<&Hook> {
        if !event.runs_here() {
            return Vec::new();
        }
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter(|e| e.status == Status::Runs && e.hook.event == event)
            .map(|e| &e.hook)
            .filter(|h| match (event.matches_on(), subject) {
                (None, _) => true,
                (Some(_), Some(s)) => h.matcher.matches(s),
                (Some(_), None) => matches!(h.matcher, Matcher::All(_)),
            })
            .filter(|h| seen.insert(h.command.as_str()))
            .collect()
    }

    /// Does any hook of `event` run (whatever its matcher)?
    pub fn has(&self, event: Event) -> bool {
        event.runs_here()
            && self
                .entries
                .iter()
                .any(|e| e.status == Status::Runs && e.hook.event == event)
    }

    /// Every hook that runs.
    pub fn running(&self) -> impl Iterator<Item = &Hook> {
        self.entries
            .iter()
            .filter(|e| e.status == Status::Runs)
            .map(|e| &e.hook)
    }
}

/// The first path a command names that does not exist: the words that look like a script or a
/// path (`/abs`, `./x`, `../x`, `~/x`, `$CLAUDE_PROJECT_DIR/x`, `.claude/…`, or a name ending in a
/// script extension), with `$CLAUDE_PROJECT_DIR` and `~` expanded, relative ones from the
/// project's folder. Commands with shell constructs this cannot read (quotes that do not close)
/// are not judged.
fn missing_script(fs: &dyn Fs, command: &str, paths: &Paths) -> Option<PathBuf> {
    const SCRIPTS: [&str; 10] = [
        ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
    ];
    // Programs whose first argument is the script they run.
    const INTERPRETERS: [&str; 13] = [
        "sh", "bash", "zsh", "python", "python3", "node", "deno", "bun", "ruby", "perl", "php",
        "tsx", "ts-node",
    ];
    let words = shlex::split(command)?;
    let dir = paths.project_dir.to_string_lossy();
    let mut runs_next = true; // the first word is the program
    for w in words.iter().take(16) {
        let is_program = std::mem::replace(
            &mut runs_next,
            INTERPRETERS.contains(&w.rsplit('/').next().unwrap_or(w)),
        );
        if w.starts_with('-') || w.contains(['*', '?', '[', '`', '|', '>', '<', '&', ';']) {
            continue;
        }
        // Only what runs can make the command fail for being missing: the program, the
        // interpreter's script, a file named as a script. Any other path is an argument the
        // command may create (`touch`, `mkdir`, `tee`).
        if !is_program && !SCRIPTS.iter().any(|x| w.ends_with(x)) {
            continue;
        }
        let w = w
            .replace("${CLAUDE_PROJECT_DIR}", &dir)
            .replace("$CLAUDE_PROJECT_DIR", &dir);
        if w.contains('$') {
            continue;
        }
        let looks = w.starts_with('/')
            || w.starts_with("./")
            || w.starts_with("../")
            || w.starts_with("~/")
            || w.starts_with(".claude/")
            || SCRIPTS.iter().any(|x| w.ends_with(x));
        if !looks || w.contains("://") {
            continue;
        }
        let path = if let Some(rest) = w.strip_prefix("~/") {
            match &paths.home {
                Some(h) => h.join(rest),
                None => continue,
            }
        } else {
            crate::fs::normalize(&paths.project_dir, Path::new(&w))
        };
        // A bare name with a script extension may be a program on PATH: only judge it when it
        // has a folder in it.
        if !w.contains('/') {
            continue;
        }
        if fs.metadata(&path).is_err() {
            return Some(path);
        }
    }
    None
}

/// Line starts of a text, to turn byte offsets into LSP positions.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn line(&self, off: usize) -> usize {
        self.0.partition_point(|&s| s <= off) - 1
    }

    fn offset(&self, line: usize) -> usize {
        self.0.get(line).copied().unwrap_or(0)
    }

    /// The 0-based line and byte columns of the first `needle` at or after byte `from`.
    fn locate(&self, text: &str, needle: &str, from: usize) -> (Option<usize>, usize, usize) {
        let mut from = from.min(text.len());
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        match text[from..].find(needle) {
            Some(o) => {
                let off = o + from;
                let line = self.line(off);
                let col = off - self.offset(line);
                (Some(line), col, col + needle.len())
            }
            None => (None, 0, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn file(path: &str, scope: SettingsScope) -> SettingsFile {
        SettingsFile {
            path: path.into(),
            scope,
            valid: true,
            keys: Vec::new(),
            repository: scope == SettingsScope::Project,
        }
    }

    fn hooks(event: &str, cmds: &[&str]) -> String {
        let list: Vec<String> = cmds
            .iter()
            .map(|c| {
                format!(
                    "{{\"type\":\"command\",\"command\":{}}}",
                    serde_json::json!(c)
                )
            })
            .collect();
        format!(
            "{{\"hooks\":{{\"{event}\":[{{\"hooks\":[{}]}}]}}}}",
            list.join(",")
        )
    }

    fn paths() -> Paths {
        Paths {
            project_dir: "/p".into(),
            home: Some("/h".into()),
        }
    }

    fn all_files() -> Vec<SettingsFile> {
        vec![
            file("/h/.claude/settings.json", SettingsScope::User),
            file("/p/.claude/settings.json", SettingsScope::Project),
            file("/p/.claude/settings.local.json", SettingsScope::Local),
            file("/m/managed-settings.json", SettingsScope::Managed),
        ]
    }

    fn commands(c: &Config, event: Event) -> Vec<String> {
        c.select(event, None)
            .into_iter()
            .map(|h| h.command.clone())
            .collect()
    }

    /// h8/scopes: every source runs; the same command in three files runs once.
    #[test]
    fn every_scope_runs_and_identical_commands_once() {
        let fs = MemFs::with_files([
            (
                "/h/.claude/settings.json",
                hooks("SessionStart", &["echo U", "echo DUP"]).as_str(),
            ),
            (
                "/p/.claude/settings.json",
                hooks("SessionStart", &["echo P", "echo DUP"]).as_str(),
            ),
            (
                "/p/.claude/settings.local.json",
                hooks("SessionStart", &["echo L", "echo DUP"]).as_str(),
            ),
            (
                "/m/managed-settings.json",
                hooks("SessionStart", &["echo M"]).as_str(),
            ),
        ]);
        let c = Config::read(&fs, &all_files(), &paths());
        assert_eq!(
            commands(&c, Event::SessionStart),
            ["echo M", "echo U", "echo DUP", "echo P", "echo L"]
        );
        assert!(c.findings.is_empty(), "{:?}", c.findings);
        assert_eq!(c.entries[0].hook.source, Source::Managed);
        assert_eq!(c.entries[0].hook.line, Some(0));
    }

    fn switched(user: &str, project: &str, local: &str, managed: &str) -> Vec<String> {
        let with = |extra: &str, cmd: &str| {
            let h = hooks("Stop", &[cmd]);
            if extra.is_empty() {
                h
            } else {
                format!("{{{extra},{}", &h[1..])
            }
        };
        let fs = MemFs::with_files([
            ("/h/.claude/settings.json", with(user, "U").as_str()),
            ("/p/.claude/settings.json", with(project, "P").as_str()),
            ("/p/.claude/settings.local.json", with(local, "L").as_str()),
            ("/m/managed-settings.json", with(managed, "M").as_str()),
        ]);
        commands(&Config::read(&fs, &all_files(), &paths()), Event::Stop)
    }

    /// h9/*, h13/*: the switches as measured.
    #[test]
    fn the_switches_as_measured() {
        let on = "\"disableAllHooks\":true";
        let off = "\"disableAllHooks\":false";
        assert_eq!(switched("", "", "", ""), ["M", "U", "P", "L"]);
        for (u, p, l) in [(on, "", ""), ("", on, ""), ("", "", on)] {
            assert_eq!(switched(u, p, l, ""), ["M"], "managed hooks survive");
        }
        assert_eq!(
            switched(off, on, "", ""),
            ["M"],
            "project true beats user false"
        );
        assert_eq!(
            switched("", on, off, ""),
            ["M", "U", "P", "L"],
            "local false undoes it"
        );
        assert!(switched("", "", "", on).is_empty(), "managed disables all");
        assert_eq!(
            switched("", "", "", "\"allowManagedHooksOnly\":true"),
            ["M"]
        );
        // In a user file it counts for nothing.
        assert_eq!(
            switched("\"allowManagedHooksOnly\":true", "", "", ""),
            ["M", "U", "P", "L"]
        );
    }

    #[test]
    fn check_finds_unknown_events_bad_matchers_and_missing_scripts() {
        let text = r#"{
  "hooks": {
    "preToolUse": [{"hooks": [{"type": "command", "command": "true"}]}],
    "PreToolUse": [
      {"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]},
      {"matcher": "Bash", "hooks": [
        {"type": "command", "command": "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py", "timeout": -1},
        {"type": "command", "command": "./present.sh"},
        {"type": "prompt", "prompt": "Is it safe?"}
      ]}
    ],
    "Stop": [{"matcher": "x", "hooks": [{"command": "sed s/a/b/ x"}, {"type": "command", "command": "touch /p/made-by-the-hook"}]}]
  }
}"#;
        let fs = MemFs::with_files([("/p/.claude/settings.json", text), ("/p/present.sh", "")]);
        let c = Config::read(
            &fs,
            &[file("/p/.claude/settings.json", SettingsScope::Project)],
            &paths(),
        );
        let codes: Vec<(&str, Option<usize>)> = c
            .findings
            .iter()
            .map(|f| (f.code.as_str(), f.line))
            .collect();
        assert_eq!(
            codes,
            [
                ("hook-unknown-event", Some(2)),
                ("hook-bad-matcher", Some(4)),
                ("hook-bad-timeout", Some(6)),
                ("hook-missing-script", Some(6)),
                ("hook-matcher-ignored", Some(11)),
                ("hook-no-type", Some(11)),
            ],
            "{:#?}",
            c.findings
        );
        let unknown = &c.findings[0].message;
        assert!(unknown.contains("case-sensitive: PreToolUse"), "{unknown}");
        assert!(c.findings[3].message.contains("/p/.claude/hooks/guard.py"));
        // A path the command may create (`touch`'s argument) is not a missing script: no finding
        // for line 11's second hook. The bad matcher's group matches nothing; the prompt hook is
        // listed, not run.
        let pre: Vec<&str> = c
            .select(Event::PreToolUse, Some("Bash"))
            .iter()
            .map(|h| h.command.as_str())
            .collect();
        assert_eq!(
            pre,
            [
                "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py",
                "./present.sh"
            ]
        );
        assert!(c.entries.iter().any(|e| e.hook.kind == "prompt"
            && matches!(&e.status, Status::Off(w) if w.contains("not run"))));
        assert_eq!(
            commands(&c, Event::Stop),
            ["sed s/a/b/ x", "touch /p/made-by-the-hook"],
            "no matcher for Stop"
        );
    }

    #[test]
    fn exec_form_runs_the_program_with_its_arguments_as_written() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/echo", "args": ["it's", "$HOME", "a b"], "async": true}]}]}}"#;
        let fs = MemFs::with_files([("/p/.claude/settings.json", text), ("/bin/echo", "")]);
        let c = Config::read(
            &fs,
            &[file("/p/.claude/settings.json", SettingsScope::Project)],
            &paths(),
        );
        assert_eq!(
            commands(&c, Event::Stop),
            [r#"/bin/echo "it's" '$HOME' 'a b'"#]
        );
        assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
        assert_eq!(c.findings[0].code, "hook-key-ignored");
    }

    #[test]
    fn a_plugins_hooks_get_its_folder() {
        let fs = MemFs::new();
        let mut c = Config::default();
        c.add(
            &fs,
            Source::Plugin {
                name: "demo".into(),
                root: "/plug".into(),
                data: None,
            },
            Path::new("/plug/hooks/hooks.json"),
            &hooks("SessionStart", &["${CLAUDE_PLUGIN_ROOT}/bin/ss"]),
            &paths(),
        );
        assert_eq!(commands(&c, Event::SessionStart), ["/plug/bin/ss"]);
        assert_eq!(c.entries[0].hook.source.label(), "plugin demo");
    }
}
