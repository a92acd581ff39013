//! Claude Code's own settings files, for the keys that change what is loaded (context.md
//! section 11): `claudeMdExcludes`, `autoMemoryEnabled`, `autoMemoryDirectory`, the `env` block,
//! and the managed `claudeMd`.
//!
//! **Workspace trust** (`../shared/spec/permissions-trust.md` section 9; decided by
//! `crate::trust`, applied here as plain data, [`Trust`]): the repository's own files (the
//! project's `.claude/settings.json`, and a `.claude/settings.local.json` that git tracks) are
//! read like the others, but what of them reaches outside the project ([`Reach`]:
//! `autoMemoryDirectory`, `env` for children, plugins and marketplaces, `apiKeyHelper`, hooks,
//! the status line, MCP approvals, `permissions.allow` and `additionalDirectories`) is listed, and
//! applied only when the folder is trusted (or, for a preview of a folder nobody was asked about,
//! read as once trusted). The three loading variables of `env` only change what is read: they
//! apply from every file.
//!
//! Files, lowest precedence first: user (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/
//! settings.json`), project (`<cwd>/.claude/settings.json`), local (`<cwd>/.claude/
//! settings.local.json`), managed (`<managed>/managed-settings.json`). A scalar key takes the
//! value of the last file that sets it; the exclude lists add up. A file that is not valid JSON
//! gives no key (a trailing comma is enough), and a `claudeMdExcludes` that is not a list excludes
//! nothing. Read through [`Fs`]; never fails: what is wrong is a [`Finding`] on the settings file.
//!
//! `claudeMdExcludes` patterns are picomatch globs with `dot: true`, matched against the absolute
//! path a file is shown under: globset with `literal_separator` is the same grammar for what
//! people write (`*` stops at `/` and matches dot names, `**` crosses folders, braces expand,
//! case-sensitive). An absolute pattern whose fixed folder goes through a symbolic link also
//! matches under the folder's real path. `!p` matches every path `p` does not, and a file is
//! excluded when any pattern matches it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::message::{quoted, thousands};
use super::{Finding, Severity};
use crate::fs::{Fs, ReadError};

/// The user settings file's name, in `~/.claude` (or `$CLAUDE_CONFIG_DIR`); the project's, in
/// `<cwd>/.claude`.
pub const SETTINGS_FILE: &str = "settings.json";
/// The local settings file's name, in `<cwd>/.claude`.
pub const LOCAL_SETTINGS_FILE: &str = "settings.local.json";
/// The managed settings file's name, in the managed directory.
pub const MANAGED_SETTINGS_FILE: &str = "managed-settings.json";
/// Exclude patterns one walk reads at most (a cap against runaway settings; a real file has a
/// handful). The others are not applied, and a finding says so.
pub const MAX_EXCLUDES: usize = 256;

/// The environment variables a settings `env` block can set that change what is loaded.
pub const CONTEXT_VARIABLES: [&str; 3] = [
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD",
];

/// Where a folder stands with workspace trust (`crate::trust` finds it).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum TrustState {
    /// Nobody was asked yet: a session runs restricted until its user answers.
    #[default]
    NeverAsked,
    /// Its user trusts it (our record, Claude Code's, or the editor's own workspace trust).
    Trusted,
    /// Its user said no (or the editor runs it in restricted mode).
    NotTrusted,
}

/// Workspace trust as the settings' readers apply it: plain data, decided by `crate::trust`.
/// The default is the safe one: not trusted, read restricted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    pub state: TrustState,
    /// A preview (nothing runs): a folder nobody was asked about is read as once trusted, each
    /// held-back key listed as waiting for trust.
    pub preview: bool,
    /// git tracks `.claude/settings.local.json`: it is the repository's file, read as the
    /// project's settings, not as the user's.
    pub local_tracked: bool,
}

impl Trust {
    /// The folder is trusted.
    pub fn trusted(&self) -> bool {
        self.state == TrustState::Trusted
    }

    /// The repository's keys that reach outside the project apply to what is read (trusted,
    /// or the preview of a folder nobody was asked about).
    pub fn reads_held(&self) -> bool {
        self.trusted() || (self.preview && self.state == TrustState::NeverAsked)
    }

    /// A trusted folder's reading.
    pub fn trusted_folder() -> Trust {
        Trust {
            state: TrustState::Trusted,
            ..Trust::default()
        }
    }
}

/// A key of a repository's settings file that reaches outside the project (see the module
/// doc): what workspace trust holds back until the folder is trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// `autoMemoryDirectory`, `env`, `enabledPlugins`, `extraKnownMarketplaces`, `apiKeyHelper`,
    /// `hooks`, `statusLine`, `enableAllProjectMcpServers`, `enabledMcpjsonServers`,
    /// `permissions.allow`, `permissions.additionalDirectories`.
    pub key: String,
    /// The file (the project's `.claude/settings.json`, or a tracked `settings.local.json`).
    pub source: PathBuf,
    /// What it says, shortly (the folder, the variables' names, the number of entries...).
    pub detail: String,
    /// Where the key is (0-based line, byte columns).
    pub line: Option<usize>,
    pub cols: (usize, usize),
}

/// Keys of a repository's settings file that reach outside the project, other than those read
/// for what they do ([`Reach`]).
const OUTSIDE_KEYS: [&str; 5] = [
    "enabledPlugins",
    "extraKnownMarketplaces",
    "apiKeyHelper",
    "hooks",
    "statusLine",
];

/// Which settings file.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum SettingsScope {
    User,
    Project,
    Local,
    Managed,
}

impl SettingsScope {
    pub fn label(self) -> &'static str {
        match self {
            SettingsScope::User => "user",
            SettingsScope::Project => "project",
            SettingsScope::Local => "local",
            SettingsScope::Managed => "managed",
        }
    }
}

/// Where the settings files of a session are.
#[derive(Clone, Debug, Default)]
pub struct Locations {
    /// `~/.claude/settings.json` or `$CLAUDE_CONFIG_DIR/settings.json`; `None` without a home.
    pub user: Option<PathBuf>,
    /// `<cwd>/.claude/settings.json` (cwd's real path).
    pub project: PathBuf,
    /// `<cwd>/.claude/settings.local.json`.
    pub local: PathBuf,
    /// `<managed>/managed-settings.json`.
    pub managed: PathBuf,
    /// How far the repository's own files are trusted.
    pub trust: Trust,
}

impl Locations {
    /// Every path, lowest precedence first.
    pub fn all(&self) -> Vec<(SettingsScope, PathBuf)> {
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((SettingsScope::User, u.clone()));
        }
        out.push((SettingsScope::Project, self.project.clone()));
        out.push((SettingsScope::Local, self.local.clone()));
        out.push((SettingsScope::Managed, self.managed.clone()));
        out
    }
}

/// A settings file that exists, and what of it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsFile {
    pub path: PathBuf,
    pub scope: SettingsScope,
    /// Valid JSON holding an object: its keys apply.
    pub valid: bool,
    /// The keys read from it that change what is loaded (`claudeMdExcludes`, `env.<NAME>`...),
    /// sorted.
    pub keys: Vec<String>,
    /// The repository's file (the project's `.claude/settings.json`, or a
    /// `.claude/settings.local.json` git tracks), not the user's: what of it reaches outside the
    /// project waits for trust.
    pub repository: bool,
}

/// What excluded a file: the pattern as written and the settings file that holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Exclusion {
    pub pattern: String,
    #[serde(flatten, with = "crate::fs::json_path::settings")]
    #[schemars(with = "crate::fs::json_path::settings::Schema")]
    pub settings: PathBuf,
}

/// One `claudeMdExcludes` pattern.
#[derive(Clone, Debug)]
pub struct ExcludePattern {
    /// As written (with its `!`).
    pub pattern: String,
    /// The settings file that holds it, and where in it (0-based line, byte columns).
    pub source: PathBuf,
    pub line: Option<usize>,
    pub cols: (usize, usize),
    /// `!p`: matches every path `p` does not.
    pub negated: bool,
    /// The pattern, and its variant under the real path of its fixed folder when that differs.
    /// Empty when the pattern is not a glob globset reads (it then matches nothing).
    matchers: Vec<GlobMatcher>,
}

impl ExcludePattern {
    /// Does the pattern (its `!` applied) match `path`?
    pub fn matches(&self, path: &Path) -> bool {
        let hit = self.matchers.iter().any(|m| m.is_match(path));
        hit != self.negated
    }

    /// Can the pattern match an absolute path at all? A pattern that starts with a plain
    /// character (`CLAUDE.md`, `sub/CLAUDE.md`, `~/x`) cannot.
    pub fn is_relative(&self) -> bool {
        let inner = self.inner();
        !inner.starts_with(['/', '*', '?', '[', '{'])
    }

    /// The pattern without its `!`.
    pub fn inner(&self) -> &str {
        if self.negated {
            &self.pattern[1..]
        } else {
            &self.pattern
        }
    }
}

/// A value and the settings file it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: PathBuf,
}

/// What the settings files of a session say about what is loaded.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Every settings path looked at, existing or not (an editor watches them).
    pub looked_at: Vec<PathBuf>,
    /// The files that exist, lowest precedence first.
    pub files: Vec<SettingsFile>,
    /// Every pattern, in file order (user, project, local, managed).
    pub excludes: Vec<ExcludePattern>,
    pub auto_memory_enabled: Option<Sourced<bool>>,
    /// As written (`~/` not yet expanded).
    pub auto_memory_directory: Option<Sourced<String>>,
    /// The `env` block's variables that change what is loaded ([`CONTEXT_VARIABLES`]).
    pub env: BTreeMap<String, Sourced<String>>,
    /// The managed `claudeMd` string.
    pub managed_claude_md: Option<String>,
    /// `skillOverrides`: skill name → `"on"`, `"name-only"`, `"user-invocable-only"`, `"off"`
    /// (a later file's value for a name wins).
    pub skill_overrides: BTreeMap<String, Sourced<String>>,
    /// `skillListingMaxDescChars`: the cut of each listed description (default 1,536).
    pub skill_listing_max_desc_chars: Option<Sourced<u64>>,
    /// `skillListingBudgetFraction`: the listing's share of the window (default 0.01).
    pub skill_listing_budget_fraction: Option<Sourced<f64>>,
    /// `disableBundledSkills` (claude-context has no bundled skills: read for the preview only).
    pub disable_bundled_skills: Option<Sourced<bool>>,
    /// `disabledMcpjsonServers` of every file: `.mcp.json` servers never started.
    pub disabled_mcpjson_servers: Vec<Sourced<String>>,
    /// `enabledMcpjsonServers` of the user's files (user, an untracked local, managed).
    pub enabled_mcpjson_servers: Vec<Sourced<String>>,
    /// `enableAllProjectMcpServers` of the user's files.
    pub enable_all_project_mcp_servers: Option<Sourced<bool>>,
    /// `enabledMcpjsonServers` of the repository's files: they approve only once the folder is
    /// trusted.
    pub repo_enabled_mcpjson_servers: Vec<Sourced<String>>,
    /// `enableAllProjectMcpServers` of the repository's files (once trusted).
    pub repo_enable_all_project_mcp_servers: Option<Sourced<bool>>,
    /// What the repository's files say that reaches outside the project, in file and key order.
    pub reach: Vec<Reach>,
    /// The trust they were read with.
    pub trust: Trust,
    /// What is wrong in the files.
    pub findings: Vec<Finding>,
}

impl Settings {
    /// The first pattern that excludes `path` (the path the file is shown under).
    pub fn excluded(&self, path: &Path) -> Option<Exclusion> {
        let p = self.excludes.iter().find(|p| p.matches(path))?;
        Some(Exclusion {
            pattern: p.pattern.clone(),
            settings: p.source.clone(),
        })
    }

    /// An `env` variable of the settings as a flag (`1`, `true`, `yes`, `on`), with its file.
    pub fn env_flag(&self, name: &str) -> Option<(bool, &Path)> {
        self.env
            .get(name)
            .map(|v| (truthy(&v.value), v.source.as_path()))
    }
}

/// Claude Code's truthy values for a flag variable.
pub fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// Reads the settings files at `loc`.
pub fn read(fs: &dyn Fs, loc: &Locations) -> Settings {
    let mut out = Settings {
        trust: loc.trust,
        ..Settings::default()
    };
    let mut seen = Vec::new();
    for (scope, path) in loc.all() {
        if seen.contains(&path) {
            continue; // cwd is ~/.claude's parent: the user file is not read twice.
        }
        seen.push(path.clone());
        out.looked_at.push(path.clone());
        let text = match fs.read_text(&path) {
            Ok(t) => t,
            Err(ReadError::NotFound) | Err(ReadError::NotAFile(crate::fs::Kind::Dir)) => continue,
            Err(e) => {
                out.files.push(SettingsFile {
                    path: path.clone(),
                    scope,
                    valid: false,
                    keys: Vec::new(),
                    repository: is_repository(scope, loc.trust),
                });
                out.findings.push(Finding::whole_file(
                    path,
                    Severity::Warning,
                    "settings-unreadable",
                    format!("settings file not read: {e}"),
                ));
                continue;
            }
        };
        read_one(fs, &path, scope, &text, &mut out);
    }
    out
}

/// The project's file, or a local file git tracks: the repository's, not the user's.
fn is_repository(scope: SettingsScope, trust: Trust) -> bool {
    scope == SettingsScope::Project || (scope == SettingsScope::Local && trust.local_tracked)
}

fn read_one(fs: &dyn Fs, path: &Path, scope: SettingsScope, text: &str, out: &mut Settings) {
    let repository = is_repository(scope, out.trust);
    let mut file = SettingsFile {
        path: path.to_path_buf(),
        scope,
        valid: false,
        keys: Vec::new(),
        repository,
    };
    let json = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => map,
        Ok(_) => {
            out.findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "settings-invalid",
                "not a JSON object: Claude Code applies none of its keys",
            ));
            out.files.push(file);
            return;
        }
        Err(e) => {
            let line = e.line().saturating_sub(1);
            out.findings.push(Finding {
                path: path.to_path_buf(),
                line: Some(line),
                start_col: e.column().saturating_sub(1),
                end_col: e.column(),
                severity: Severity::Warning,
                code: "settings-invalid".into(),
                message: format!(
                    "not valid JSON ({e}): Claude Code applies none of its keys (claudeMdExcludes, autoMemoryEnabled, env, ...). Fix the JSON (a trailing comma is enough to break it)"
                ),
            });
            out.files.push(file);
            return;
        }
    };
    file.valid = true;
    let mut reader = Reader {
        fs,
        path,
        scope,
        text,
        lines: LineIndex::new(text),
        repository,
        applies_reach: !repository || out.trust.reads_held(),
        file,
        out,
        reached: Vec::new(),
    };
    // In key order, whatever order serde_json keeps (its `preserve_order` feature keeps the
    // file's): keys and findings come out the same on every build.
    let mut entries: Vec<_> = json.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        if let Some((_, read)) = KEYS.iter().find(|(name, _)| name == key) {
            read(&mut reader, key, value);
        } else if OUTSIDE_KEYS.contains(&key.as_str()) {
            read_outside(&mut reader, key, value);
        }
    }
    let Reader {
        file, out, reached, ..
    } = reader;
    out.reach.extend(reached);
    out.files.push(file);
}

/// One settings file as it is read: what each key's reader in [`KEYS`] needs.
struct Reader<'a> {
    fs: &'a dyn Fs,
    path: &'a Path,
    scope: SettingsScope,
    text: &'a str,
    lines: LineIndex,
    /// The repository's file (project, or a local file git tracks).
    repository: bool,
    /// A key that reaches outside the project applies: the user's file, or the repository's
    /// once the folder is trusted.
    applies_reach: bool,
    file: SettingsFile,
    out: &'a mut Settings,
    /// What of a repository's file reaches outside the project.
    reached: Vec<Reach>,
}

/// Where a key (or value) is: its line and columns.
type Place = (Option<usize>, usize, usize);

impl Reader<'_> {
    /// `needle`'s place at or after the byte offset `from`.
    fn at(&self, needle: &str, from: usize) -> Place {
        locate(self.text, &self.lines, needle, from)
    }

    /// The place of `"<key>"`.
    fn key_place(&self, key: &str) -> Place {
        self.at(&format!("\"{key}\""), 0)
    }

    /// The byte offset of `"<key>"` (0 when not found).
    fn key_offset(&self, key: &str) -> usize {
        self.text.find(&format!("\"{key}\"")).unwrap_or(0)
    }

    /// The key counts as applied from this file.
    fn applied(&mut self, key: impl Into<String>) {
        self.file.keys.push(key.into());
    }

    fn sourced<T>(&self, value: T) -> Sourced<T> {
        Sourced {
            value,
            source: self.path.to_path_buf(),
        }
    }

    /// A warning at `place`.
    fn warn(&mut self, place: Place, code: &str, message: String) {
        self.out.findings.push(Finding {
            path: self.path.to_path_buf(),
            line: place.0,
            start_col: place.1,
            end_col: place.2,
            severity: Severity::Warning,
            code: code.into(),
            message,
        });
    }

    /// A numeric key whose value is not what it must be.
    fn number_finding(&mut self, key: &str, what: &str) {
        let place = self.key_place(key);
        self.warn(
            place,
            "settings-invalid-value",
            format!("{key} must be {what}; this value is ignored"),
        );
    }

    /// A repository's file reaches outside the project with `key` (its last segment is
    /// located).
    fn reach(&mut self, key: &str, detail: String) {
        if !self.repository {
            return;
        }
        let name = key.rsplit('.').next().unwrap_or(key);
        let (line, s, e) = self.key_place(name);
        self.reached.push(Reach {
            key: key.to_string(),
            source: self.path.to_path_buf(),
            detail,
            line,
            cols: (s, e),
        });
    }
}

/// Reads one key's value into the settings.
type KeyReader = fn(&mut Reader<'_>, &str, &serde_json::Value);

/// The keys claude-context reads, each with its reader. A key of [`OUTSIDE_KEYS`] not here is
/// only shown as reaching outside the project ([`read_outside`]); any other key is ignored.
const KEYS: &[(&str, KeyReader)] = &[
    ("claudeMdExcludes", read_excludes),
    ("autoMemoryEnabled", read_auto_memory_enabled),
    ("autoMemoryDirectory", read_auto_memory_directory),
    ("env", read_env),
    ("claudeMd", read_claude_md),
    ("skillOverrides", read_skill_overrides),
    (
        "skillListingMaxDescChars",
        read_skill_listing_max_desc_chars,
    ),
    (
        "skillListingBudgetFraction",
        read_skill_listing_budget_fraction,
    ),
    ("disableBundledSkills", read_disable_bundled_skills),
    ("disabledMcpjsonServers", read_mcpjson_servers),
    ("enabledMcpjsonServers", read_mcpjson_servers),
    (
        "enableAllProjectMcpServers",
        read_enable_all_project_mcp_servers,
    ),
    ("permissions", read_permissions),
];

fn read_excludes(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    r.applied(key);
    let Some(list) = value.as_array() else {
        r.warn(
            r.key_place(key),
            "exclude-not-list",
            "claudeMdExcludes must be a list of glob patterns; this value excludes nothing. Write [\"**/path/CLAUDE.md\"]".into(),
        );
        return;
    };
    let non_strings: Vec<&serde_json::Value> = list.iter().filter(|v| !v.is_string()).collect();
    if let Some(first) = non_strings.first() {
        let more = match non_strings.len() {
            1 => String::new(),
            n => format!(
                " (and {} more values that are not strings)",
                thousands(n as u64 - 1)
            ),
        };
        r.warn(
            r.key_place(key),
            "exclude-not-string",
            format!(
                "claudeMdExcludes holds {}{more}, which is not a glob pattern (a string); it excludes nothing",
                super::message::cut(&first.to_string())
            ),
        );
    }
    let mut from = r.key_offset(key);
    for pattern in list.iter().filter_map(serde_json::Value::as_str) {
        let needle = serde_json::to_string(pattern).unwrap_or_default();
        let (line, s, e) = r.at(&needle, from);
        if let Some(l) = line {
            from = r.lines.offset(l) + e;
        }
        if r.out.excludes.len() >= MAX_EXCLUDES {
            r.warn(
                (line, s, e),
                "cap-excludes",
                format!(
                    "this claudeMdExcludes pattern and those after it are not applied: {} patterns were read, the most claude-context applies for one session (a cap against runaway settings; Claude Code applies them all, so the preview may show files Claude Code leaves out)",
                    thousands(MAX_EXCLUDES as u64)
                ),
            );
            break;
        }
        let compiled = compile(r.fs, pattern, r.path, line, (s, e), &mut r.out.findings);
        r.out.excludes.push(compiled);
    }
}

fn read_auto_memory_enabled(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    if let Some(enabled) = value.as_bool() {
        r.applied(key);
        r.out.auto_memory_enabled = Some(r.sourced(enabled));
    }
}

fn read_auto_memory_directory(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    if let Some(dir) = value.as_str() {
        r.reach(key, dir.to_string());
        if r.applies_reach {
            r.applied(key);
            r.out.auto_memory_directory = Some(r.sourced(dir.to_string()));
        }
    }
}

fn read_env(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let Some(env) = value.as_object() else {
        return;
    };
    // The variables for children (commands, MCP servers, hooks): not the three that only
    // change what is read.
    let children: Vec<&str> = env
        .keys()
        .map(String::as_str)
        .filter(|k| !CONTEXT_VARIABLES.contains(k))
        .collect();
    if !children.is_empty() {
        r.reach(key, names_detail(&children));
    }
    for name in CONTEXT_VARIABLES {
        let Some(v) = env.get(name) else { continue };
        match v.as_str() {
            Some(s) => {
                r.applied(format!("env.{name}"));
                let sourced = r.sourced(s.to_string());
                r.out.env.insert(name.to_string(), sourced);
            }
            None => {
                let place = r.at(&format!("\"{name}\""), r.key_offset(key));
                r.warn(
                    place,
                    "settings-env-not-string",
                    format!(
                        "{name} is set to {v}, not a string: claude-context does not apply it. Write \"{}\"",
                        match v {
                            serde_json::Value::Bool(true) => "1".to_string(),
                            serde_json::Value::Bool(false) => "0".to_string(),
                            other => other.to_string().trim_matches('"').to_string(),
                        }
                    ),
                );
            }
        }
    }
}

fn read_claude_md(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let Some(text) = value.as_str() else { return };
    if r.scope == SettingsScope::Managed {
        r.applied(key);
        r.out.managed_claude_md = Some(text.to_string());
    } else {
        r.warn(
            r.key_place(key),
            "settings-claude-md-ignored",
            format!(
                "claudeMd does nothing in {} settings: Claude Code reads it only from {MANAGED_SETTINGS_FILE}. Put the text in a CLAUDE.md instead",
                r.scope.label()
            ),
        );
    }
}

fn read_skill_overrides(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let Some(map) = value.as_object() else {
        r.warn(
            r.key_place(key),
            "settings-skill-overrides",
            "skillOverrides must be an object of skill names to \"on\", \"name-only\", \"user-invocable-only\" or \"off\"; this value changes nothing".into(),
        );
        return;
    };
    r.applied(key);
    for (name, v) in map.iter().take(MAX_EXCLUDES) {
        match v.as_str() {
            Some(mode @ ("on" | "name-only" | "user-invocable-only" | "off")) => {
                let sourced = r.sourced(mode.to_string());
                r.out.skill_overrides.insert(name.clone(), sourced);
            }
            _ => {
                let place = r.at(
                    &serde_json::to_string(name).unwrap_or_default(),
                    r.key_offset(key),
                );
                r.warn(
                    place,
                    "settings-skill-overrides",
                    format!(
                        "skillOverrides.{name} is {}, not one of \"on\", \"name-only\", \"user-invocable-only\", \"off\": ignored",
                        super::message::cut(&v.to_string())
                    ),
                );
            }
        }
    }
}

fn read_skill_listing_max_desc_chars(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    match value.as_u64().filter(|n| *n > 0) {
        Some(chars) => {
            r.applied(key);
            r.out.skill_listing_max_desc_chars = Some(r.sourced(chars));
        }
        None => r.number_finding(key, "a positive whole number of characters"),
    }
}

fn read_skill_listing_budget_fraction(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    match value.as_f64().filter(|f| *f > 0.0 && *f <= 1.0) {
        Some(fraction) => {
            r.applied(key);
            r.out.skill_listing_budget_fraction = Some(r.sourced(fraction));
        }
        None => r.number_finding(key, "a number above 0 and at most 1"),
    }
}

fn read_disable_bundled_skills(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    if let Some(disabled) = value.as_bool() {
        r.applied(key);
        r.out.disable_bundled_skills = Some(r.sourced(disabled));
    }
}

/// `disabledMcpjsonServers` and `enabledMcpjsonServers`.
fn read_mcpjson_servers(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let Some(list) = value.as_array() else {
        return;
    };
    r.applied(key);
    let names: Vec<Sourced<String>> = list
        .iter()
        .filter_map(serde_json::Value::as_str)
        .take(MAX_EXCLUDES)
        .map(|name| r.sourced(name.to_string()))
        .collect();
    if key == "disabledMcpjsonServers" {
        // A rejection only ever stops a server: it applies from every file.
        r.out.disabled_mcpjson_servers.extend(names);
    } else if r.repository {
        let shown: Vec<&str> = names.iter().map(|n| n.value.as_str()).collect();
        r.reach(key, names_detail(&shown));
        r.out.repo_enabled_mcpjson_servers.extend(names);
    } else {
        r.out.enabled_mcpjson_servers.extend(names);
    }
}

fn read_enable_all_project_mcp_servers(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let Some(enabled) = value.as_bool() else {
        return;
    };
    r.applied(key);
    let sourced = Some(r.sourced(enabled));
    if r.repository {
        if enabled {
            r.reach(key, "true".to_string());
        }
        r.out.repo_enable_all_project_mcp_servers = sourced;
    } else {
        r.out.enable_all_project_mcp_servers = sourced;
    }
}

/// `permissions`: read by `crate::permissions`; here only what of a repository's reaches
/// outside the project.
fn read_permissions(r: &mut Reader<'_>, _key: &str, value: &serde_json::Value) {
    let Some(permissions) = value.as_object() else {
        return;
    };
    for sub in ["allow", "additionalDirectories"] {
        let n = permissions
            .get(sub)
            .and_then(serde_json::Value::as_array)
            .map_or(0, Vec::len);
        if n > 0 {
            r.reach(
                &format!("permissions.{sub}"),
                format!(
                    "{} {}",
                    thousands(n as u64),
                    if n == 1 { "entry" } else { "entries" }
                ),
            );
        }
    }
    // A mode that runs edits without asking (bypass never applies from here).
    if permissions
        .get("defaultMode")
        .and_then(serde_json::Value::as_str)
        == Some("acceptEdits")
    {
        r.reach("permissions.defaultMode", "acceptEdits".to_string());
    }
}

/// A key of [`OUTSIDE_KEYS`]: shown as reaching outside the project, with a short detail.
fn read_outside(r: &mut Reader<'_>, key: &str, value: &serde_json::Value) {
    let detail = match value {
        serde_json::Value::Object(m) => {
            let names: Vec<&str> = m.keys().map(String::as_str).collect();
            names_detail(&names)
        }
        serde_json::Value::String(s) => super::message::cut(s).into_owned(),
        other => super::message::cut(&other.to_string()).into_owned(),
    };
    r.reach(key, detail);
}

/// Names, shortly: the first few, and how many more.
fn names_detail(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(|n| super::message::cut(n))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(
            " and {} more",
            thousands((names.len() - SHOWN) as u64)
        ));
    }
    s
}

/// How far past `from` a value is looked for (a settings file may be 10 MB; a value written
/// with other escapes than serde's is not found, and must not cost a scan of the whole file per
/// pattern).
const LOCATE_WINDOW: usize = 64 << 10;

/// The byte offsets where the lines of a text start, to turn an offset into a line at once.
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex(starts)
    }

    /// The 0-based line holding byte `off`.
    fn line(&self, off: usize) -> usize {
        self.0.partition_point(|&s| s <= off) - 1
    }

    /// The byte offset where line `line` starts.
    fn offset(&self, line: usize) -> usize {
        self.0.get(line).copied().unwrap_or(0)
    }
}

/// The 0-based line and byte columns of the first `needle` at or after byte `from` of `text`
/// (within [`LOCATE_WINDOW`]).
fn locate(
    text: &str,
    lines: &LineIndex,
    needle: &str,
    from: usize,
) -> (Option<usize>, usize, usize) {
    let from = from.min(text.len());
    let mut end = (from + LOCATE_WINDOW).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let Some(off) = text[from..end].find(needle).map(|o| o + from) else {
        return (None, 0, 0);
    };
    let line = lines.line(off);
    let col = off - lines.offset(line);
    (Some(line), col, col + needle.len())
}

/// One glob, as picomatch reads it for what people write.
fn glob(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
}

/// Compiles a pattern, with its variant under the real path of its fixed folder, and says what
/// is wrong with it (a relative pattern never matches; a glob globset refuses matches nothing).
fn compile(
    fs: &dyn Fs,
    pattern: &str,
    source: &Path,
    line: Option<usize>,
    cols: (usize, usize),
    findings: &mut Vec<Finding>,
) -> ExcludePattern {
    let negated = pattern.starts_with('!');
    let mut p = ExcludePattern {
        pattern: pattern.to_string(),
        source: source.to_path_buf(),
        line,
        cols,
        negated,
        matchers: Vec::new(),
    };
    let finding = |severity, code: &str, message: String| Finding {
        path: source.to_path_buf(),
        line,
        start_col: cols.0,
        end_col: cols.1,
        severity,
        code: code.into(),
        message,
    };
    let inner = p.inner().to_string();
    if inner.chars().count() > super::globs::MAX_GLOB_LEN {
        findings.push(finding(
            Severity::Warning,
            "cap-glob-length",
            format!(
                "this claudeMdExcludes pattern is {} characters long; claude-context matches patterns of up to {} (a cap against runaway settings; Claude Code would match it), so it excludes nothing here",
                thousands(inner.chars().count() as u64),
                thousands(super::globs::MAX_GLOB_LEN as u64)
            ),
        ));
        // A negated pattern that matches nothing would exclude everything: leave it out whole.
        p.negated = false;
        return p;
    }
    match glob(&inner) {
        Ok(m) => p.matchers.push(m),
        Err(e) => {
            findings.push(finding(
                Severity::Warning,
                "exclude-invalid",
                format!(
                    "{} is not a glob claude-context reads ({}); it excludes nothing here, and Claude Code may read it otherwise. Write it with `*`, `**`, `?`, `[...]` and `{{a,b}}` only",
                    quoted(pattern),
                    e.kind()
                ),
            ));
            p.negated = false;
            return p;
        }
    }
    if p.is_relative() {
        let why = if inner.starts_with('~') {
            "`~` is not expanded in claudeMdExcludes: write the absolute path, or start the pattern with `**/`".to_string()
        } else {
            format!(
                "patterns are matched against absolute paths, so a relative one never matches. Write {} or the absolute path",
                quoted(&format!("**/{inner}"))
            )
        };
        let message = if negated {
            format!(
                "{} excludes every instruction file that is not managed: its pattern never matches ({why}), and a `!` pattern matches every path its pattern does not",
                quoted(pattern)
            )
        } else {
            format!("{} never matches: {why}", quoted(pattern))
        };
        findings.push(finding(Severity::Warning, "exclude-relative", message));
        return p;
    }
    // `/abs/alias/**/CLAUDE.md` with `alias -> repo` also matches under `/abs/repo`. Negated
    // patterns are left as written (two negations would exclude nearly everything).
    if !negated && inner.starts_with('/') {
        let fixed_end = inner
            .find(['*', '?', '[', '{', '\\'])
            .unwrap_or(inner.len());
        let dir_end = inner[..fixed_end].rfind('/').unwrap_or(0);
        let dir = if dir_end == 0 { "/" } else { &inner[..dir_end] };
        if let Ok(real) = fs.canonicalize(Path::new(dir))
            && real != Path::new(dir)
        {
            let variant = format!("{}{}", real.display(), &inner[dir_end..]);
            if let Ok(m) = glob(&variant) {
                p.matchers.push(m);
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn settings(files: &[(&str, &str)]) -> (MemFs, Settings) {
        settings_with(files, Trust::trusted_folder())
    }

    fn settings_with(files: &[(&str, &str)], trust: Trust) -> (MemFs, Settings) {
        let fs = MemFs::with_files(files.iter().copied());
        let loc = Locations {
            user: Some("/h/.claude/settings.json".into()),
            project: "/r/.claude/settings.json".into(),
            local: "/r/.claude/settings.local.json".into(),
            managed: "/m/managed-settings.json".into(),
            trust,
        };
        let s = read(&fs, &loc);
        (fs, s)
    }

    /// What a repository's settings file says that reaches outside the project is listed, and
    /// applied only when the folder is trusted (or read as once trusted by a preview of a
    /// folder nobody was asked about); a tracked local file is the repository's too; the three
    /// loading variables of `env` apply either way.
    #[test]
    fn a_repositorys_reach_waits_for_trust() {
        let project = r#"{"autoMemoryDirectory": "/elsewhere/mem", "env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "FOO": "x"},
            "enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["demo"], "hooks": {"SessionStart": []},
            "apiKeyHelper": "/bin/k", "statusLine": {"type": "command"}, "enabledPlugins": {"p@m": true},
            "extraKnownMarketplaces": {"m": {}}, "permissions": {"allow": ["Bash(ls)", "Read"], "additionalDirectories": ["../o"], "deny": ["Read(.env)"], "defaultMode": "acceptEdits"}}"#;
        let files = [("/r/.claude/settings.json", project)];
        let (_, s) = settings_with(&files, Trust::default());
        let keys: Vec<&str> = s.reach.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "apiKeyHelper",
                "autoMemoryDirectory",
                "enableAllProjectMcpServers",
                "enabledMcpjsonServers",
                "enabledPlugins",
                "env",
                "extraKnownMarketplaces",
                "hooks",
                "permissions.allow",
                "permissions.additionalDirectories",
                "permissions.defaultMode",
                "statusLine",
            ]
        );
        let detail = |k: &str| s.reach.iter().find(|r| r.key == k).unwrap().detail.clone();
        assert_eq!(detail("env"), "FOO");
        assert_eq!(detail("permissions.allow"), "2 entries");
        assert_eq!(detail("permissions.additionalDirectories"), "1 entry");
        assert_eq!(detail("permissions.defaultMode"), "acceptEdits");
        assert_eq!(s.reach[1].line, Some(0));
        assert!(s.auto_memory_directory.is_none(), "held back");
        assert!(s.env.contains_key("CLAUDE_CODE_DISABLE_AUTO_MEMORY"));
        assert!(s.enable_all_project_mcp_servers.is_none());
        assert!(s.enabled_mcpjson_servers.is_empty());
        assert_eq!(s.repo_enabled_mcpjson_servers.len(), 1);
        assert!(s.files[0].repository);
        // A preview of a folder nobody was asked about reads it as once trusted.
        let preview = Trust {
            preview: true,
            ..Trust::default()
        };
        let (_, s) = settings_with(&files, preview);
        assert_eq!(s.auto_memory_directory.unwrap().value, "/elsewhere/mem");
        // A folder its user said no to: not even in a preview.
        let no = Trust {
            state: TrustState::NotTrusted,
            preview: true,
            local_tracked: false,
        };
        let (_, s) = settings_with(&files, no);
        assert!(s.auto_memory_directory.is_none());
        // The local file is the user's, unless git tracks it.
        let local = [(
            "/r/.claude/settings.local.json",
            r#"{"autoMemoryDirectory": "/l/mem", "enableAllProjectMcpServers": true}"#,
        )];
        let (_, s) = settings_with(&local, Trust::default());
        assert!(s.reach.is_empty());
        assert_eq!(s.auto_memory_directory.unwrap().value, "/l/mem");
        assert!(s.enable_all_project_mcp_servers.unwrap().value);
        let tracked = Trust {
            local_tracked: true,
            ..Trust::default()
        };
        let (_, s) = settings_with(&local, tracked);
        assert_eq!(s.reach.len(), 2);
        assert!(s.auto_memory_directory.is_none());
        assert!(s.enable_all_project_mcp_servers.is_none());
        assert!(s.repo_enable_all_project_mcp_servers.unwrap().value);
        // Trusted: applied, and still listed (the gate says it applies).
        let (_, s) = settings(&files);
        assert_eq!(s.auto_memory_directory.unwrap().value, "/elsewhere/mem");
        assert_eq!(s.reach.len(), 12);
    }

    fn excluded(s: &Settings, path: &str) -> bool {
        s.excluded(Path::new(path)).is_some()
    }

    /// picomatch with `dot: true`, case-sensitive, on absolute paths (k22a_excludes_glob_semantics).
    #[test]
    fn exclude_patterns_read_as_picomatch_reads_them() {
        let (_, s) = settings(&[(
            "/h/.claude/settings.json",
            r#"{"claudeMdExcludes": ["/r/a/*/CLAUDE.md", "**/{x,y}/CLAUDE.md", "**/Q/claude.md", "CLAUDE.local.md", "sub/CLAUDE.md"]}"#,
        )]);
        assert!(excluded(&s, "/r/a/.d/CLAUDE.md"));
        assert!(excluded(&s, "/r/a/b/CLAUDE.md"));
        assert!(!excluded(&s, "/r/a/b/c/CLAUDE.md"));
        assert!(excluded(&s, "/r/x/CLAUDE.md"));
        assert!(!excluded(&s, "/r/z/CLAUDE.md"));
        assert!(!excluded(&s, "/r/q/CLAUDE.md"));
        assert!(!excluded(&s, "/r/CLAUDE.local.md"), "relative: never");
        assert!(!excluded(&s, "/r/sub/CLAUDE.md"));
        let relative: Vec<_> = s
            .findings
            .iter()
            .filter(|f| f.code == "exclude-relative")
            .map(|f| (f.line, f.start_col))
            .collect();
        assert_eq!(relative, [(Some(0), 82), (Some(0), 101)]);
        let e = s.excluded(Path::new("/r/x/CLAUDE.md")).unwrap();
        assert_eq!(e.pattern, "**/{x,y}/CLAUDE.md");
        assert_eq!(e.settings, Path::new("/h/.claude/settings.json"));
    }

    /// `!p` matches what `p` does not; any match excludes (k22a_excludes_negated_pattern).
    #[test]
    fn a_negated_pattern_excludes_everything_else() {
        let (_, s) = settings(&[(
            "/h/.claude/settings.json",
            r#"{"claudeMdExcludes": ["!**/keep/CLAUDE.md"]}"#,
        )]);
        assert!(excluded(&s, "/r/CLAUDE.md"));
        assert!(!excluded(&s, "/r/keep/CLAUDE.md"));
        let (_, s) = settings(&[(
            "/h/.claude/settings.json",
            r#"{"claudeMdExcludes": ["**/CLAUDE.md", "!**/sub/CLAUDE.md"]}"#,
        )]);
        assert!(excluded(&s, "/r/sub/CLAUDE.md"));
        assert!(excluded(&s, "/r/x.md"));
    }

    /// The lists of the four files add up; scalars take the last file's value; invalid JSON and a
    /// string `claudeMdExcludes` apply nothing, and say so.
    #[test]
    fn four_files_add_up_and_broken_ones_apply_nothing() {
        let (_, s) = settings(&[
            (
                "/h/.claude/settings.json",
                r#"{"claudeMdExcludes": ["**/u/CLAUDE.md"], "autoMemoryEnabled": true, "claudeMd": "ignored"}"#,
            ),
            (
                "/r/.claude/settings.json",
                "{\"claudeMdExcludes\": [\"**/p/CLAUDE.md\"],\n \"autoMemoryEnabled\": false, \"env\": {\"CLAUDE_CODE_DISABLE_AUTO_MEMORY\": \"1\", \"OTHER\": \"x\"}}",
            ),
            (
                "/r/.claude/settings.local.json",
                r#"{"claudeMdExcludes": ["**/l/CLAUDE.md"],}"#,
            ),
            (
                "/m/managed-settings.json",
                r#"{"claudeMdExcludes": "**/m/CLAUDE.md", "claudeMd": "POLICY"}"#,
            ),
        ]);
        assert!(excluded(&s, "/r/u/CLAUDE.md") && excluded(&s, "/r/p/CLAUDE.md"));
        assert!(!excluded(&s, "/r/l/CLAUDE.md"), "invalid JSON");
        assert!(!excluded(&s, "/r/m/CLAUDE.md"), "a string excludes nothing");
        assert_eq!(s.auto_memory_enabled.as_ref().map(|v| v.value), Some(false));
        assert_eq!(
            s.env_flag("CLAUDE_CODE_DISABLE_AUTO_MEMORY"),
            Some((true, Path::new("/r/.claude/settings.json")))
        );
        assert!(!s.env.contains_key("OTHER"));
        assert_eq!(s.managed_claude_md.as_deref(), Some("POLICY"));
        let codes: Vec<_> = s.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(
            codes,
            [
                "settings-claude-md-ignored",
                "settings-invalid",
                "exclude-not-list"
            ]
        );
        assert_eq!(
            s.files.iter().map(|f| f.valid).collect::<Vec<_>>(),
            [true, true, false, true]
        );
        assert_eq!(
            s.files[1].keys,
            [
                "autoMemoryEnabled",
                "claudeMdExcludes",
                "env.CLAUDE_CODE_DISABLE_AUTO_MEMORY"
            ]
        );
    }

    /// An absolute pattern through a link also matches the real path (k22a_excludes_absolute_patterns).
    #[test]
    fn an_absolute_pattern_through_a_link_matches_the_real_path_too() {
        let (fs, _) = settings(&[("/w/repo/CLAUDE.md", "x")]);
        fs.symlink("/w/alias", "repo");
        fs.write(
            "/h/.claude/settings.json",
            r#"{"claudeMdExcludes": ["/w/alias/CLAUDE.md", "/w/alias/**/R.md"]}"#,
        );
        let loc = Locations {
            user: Some("/h/.claude/settings.json".into()),
            ..Locations::default()
        };
        let s = read(&fs, &loc);
        assert!(excluded(&s, "/w/repo/CLAUDE.md"));
        assert!(excluded(&s, "/w/alias/CLAUDE.md"));
        assert!(excluded(&s, "/w/repo/a/b/R.md"));
        assert!(!excluded(&s, "/w/other/CLAUDE.md"));
    }

    #[test]
    fn truthy_values() {
        for v in ["1", "true", "TRUE", " yes ", "on"] {
            assert!(truthy(v), "{v}");
        }
        for v in ["0", "false", "", "no", "2"] {
            assert!(!truthy(v), "{v}");
        }
    }
}
