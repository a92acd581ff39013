//! Subagents: the agent types of `.claude/agents`, found, validated, shadowed and listed as the
//! reference CLI does (`../shared/spec/hooks-agents-styles.md` sections 9 and 10).
//!
//! Pure but for [`Fs`]; nothing here fails: what is wrong is a [`Finding`] (for `check`).
//!
//! **Sources** ([`Source`], in the order [`sources`] gives them): the project's
//! `<cwd>/.claude/agents/**/*.md` (subfolders count) and the user's `<user dir>/agents/*.md`
//! (`~/.claude` or `$CLAUDE_CONFIG_DIR`). A plugin's `<root>/agents/*.md` is one more [`Source`]
//! with a name prefix (`<plugin>:<name>`): [`Source::plugin`] builds it, and the caller appends it
//! to the list [`discover`] takes. The built-in agent types ([`builtin`]) come first; a file
//! agent of the same name replaces one (a project `Explore` replaces the built-in). Between
//! files, the scope decides: project beats user beats plugin ([`Scope::rank`]); within one scope
//! the first file found wins.
//!
//! **Validation**: a file is an agent when it is a `.md` file whose frontmatter (read by
//! [`crate::context::frontmatter`], invalid YAML repaired the way Claude Code repairs it) has a
//! string `name` and a `description`. Others are skipped, with a finding.
//!
//! **Listing** ([`listing`]): `Available agent types for the Agent tool:\n- <name>: <description>
//! (Tools: <tools>)…\n\nWhen you launch multiple agents…`, sorted by name case-insensitively, the
//! description as written (no escaping, a YAML `\n` a real newline), the tools as written, joined
//! by `, `, `All tools` without `tools`.
//!
//! Project agents are text from the repository, like its instruction files and skills: they are
//! listed before the folder is trusted (nothing of them runs; a subagent's tool calls go through
//! the session's permission rules and prompts as the parent's do).

pub mod builtin;
pub mod run;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::frontmatter::{self, Parse};
use crate::context::{Context, Finding, Severity};
use crate::fs::{Fs, Kind};

/// The listing's first line.
pub const HEADER: &str = "Available agent types for the Agent tool:";
/// The listing's closing sentence.
pub const CLOSING: &str = "When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.";
/// An agent file is read up to this many bytes (a larger one is skipped, with a finding).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// At most this many agent files are read per source (a hostile tree of a million files costs a
/// finding, not the session).
pub const MAX_FILES: usize = 1_000;
/// Subfolders of a project's agents folder are read this deep.
pub const MAX_DEPTH: usize = 16;

/// Where an agent type comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// One of the reference CLI's own agent types.
    BuiltIn,
    /// A plugin's `agents/` folder.
    Plugin,
    /// `<user dir>/agents`.
    User,
    /// `<cwd>/.claude/agents`.
    Project,
}

impl Scope {
    /// Higher wins when two agents share a name.
    pub fn rank(self) -> u8 {
        match self {
            Scope::BuiltIn => 0,
            Scope::Plugin => 1,
            Scope::User => 2,
            Scope::Project => 3,
        }
    }
}

/// A folder agent files are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub folder: PathBuf,
    pub scope: Scope,
    /// `Some("demo-plugin")` names its agents `demo-plugin:<name>`.
    pub prefix: Option<String>,
    /// Subfolders count (the project's folder); the user's and a plugin's are read flat.
    pub recursive: bool,
}

impl Source {
    /// A plugin's agents: `<root>/agents/*.md`, named `<plugin>:<name>`.
    pub fn plugin(plugin: &str, root: &Path) -> Source {
        Source {
            folder: root.join("agents"),
            scope: Scope::Plugin,
            prefix: Some(plugin.to_string()),
            recursive: false,
        }
    }
}

/// The project's and the user's sources of a session in `ctx` (plugins' are appended by the
/// caller: [`Source::plugin`]).
pub fn sources(ctx: &Context) -> Vec<Source> {
    let mut out = vec![Source {
        folder: ctx.cwd.join(".claude").join("agents"),
        scope: Scope::Project,
        prefix: None,
        recursive: true,
    }];
    if let Some(user) = ctx.user_dir() {
        out.push(Source {
            folder: user.join("agents"),
            scope: Scope::User,
            prefix: None,
            recursive: false,
        });
    }
    out
}

/// One agent type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub name: String,
    pub description: String,
    /// The `tools` field as written (`None`: every tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// What the listing says after `Tools: ` (a built-in's measured text, else the tools joined).
    pub tools_text: String,
    /// `disallowedTools`, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// `model` as written (`sonnet`, `opus`, `haiku`, `inherit`, a model id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt: the file after its frontmatter (a built-in's own text).
    pub body: String,
    pub scope: Scope,
    /// The file (none for a built-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

impl Agent {
    /// The listing's line for it.
    pub fn entry(&self) -> String {
        format!(
            "- {}: {} (Tools: {})",
            self.name, self.description, self.tools_text
        )
    }
}

/// An agent a higher scope replaced, for `check` and the preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Shadowed {
    pub name: String,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The scope of the one that is used.
    pub by: Scope,
}

/// The agent types of a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Agents {
    /// Sorted by name, case-insensitively.
    pub agents: Vec<Agent>,
    pub shadowed: Vec<Shadowed>,
    /// Files skipped and other problems.
    pub findings: Vec<Finding>,
    /// The folders read (an editor watches them).
    pub folders: Vec<PathBuf>,
}

impl Agents {
    /// The agent type `name` (exact, as the reference CLI looks it up).
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The names, in listing order (for the unknown-type error).
    pub fn names(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.name.as_str()).collect()
    }

    /// The environment section's part.
    pub fn listing(&self) -> String {
        listing(&self.agents)
    }
}

/// The listing of `agents` (already sorted).
pub fn listing(agents: &[Agent]) -> String {
    let mut out = String::from(HEADER);
    for a in agents {
        out.push('\n');
        out.push_str(&a.entry());
    }
    out.push_str("\n\n");
    out.push_str(CLOSING);
    out
}

/// The built-in agents for `model` and the agents of `sources`, shadowed and sorted.
pub fn discover(fs: &dyn Fs, sources: &[Source], model: &str) -> Agents {
    let mut out = Agents::default();
    let mut all: Vec<Agent> = builtin::agents(model);
    for s in sources {
        out.folders.push(s.folder.clone());
        let mut files = Vec::new();
        collect(fs, &s.folder, s.recursive, 0, &mut files, &mut out.findings);
        for f in files {
            if let Some(a) = read(fs, &f, s, &mut out.findings) {
                all.push(a);
            }
        }
    }
    // Highest scope first; within a scope, the order found. The first of a name wins.
    all.sort_by_key(|a| std::cmp::Reverse(a.scope.rank()));
    let mut seen: Vec<(String, Scope)> = Vec::new();
    for a in all {
        if let Some((_, by)) = seen.iter().find(|(n, _)| *n == a.name) {
            out.shadowed.push(Shadowed {
                name: a.name.clone(),
                scope: a.scope,
                file: a.file.clone(),
                by: *by,
            });
            if a.scope != Scope::BuiltIn && a.scope == *by {
                out.findings.push(Finding::whole_file(
                    a.file.clone().unwrap_or_default(),
                    Severity::Warning,
                    "agent-duplicate",
                    format!(
                        "another agent file of this scope is also named \"{}\"; only the first is used",
                        a.name
                    ),
                ));
            }
            continue;
        }
        seen.push((a.name.clone(), a.scope));
        out.agents.push(a);
    }
    out.agents.sort_by_cached_key(|a| a.name.to_lowercase());
    out
}

/// The `.md` files under `dir`, in name order (directory listings are sorted: the listing is
/// sorted by name anyway, and the first file of a duplicate name must not depend on the disk).
fn collect(
    fs: &dyn Fs,
    dir: &Path,
    recursive: bool,
    depth: usize,
    out: &mut Vec<PathBuf>,
    findings: &mut Vec<Finding>,
) {
    let Ok(mut entries) = fs.read_dir(dir) else {
        return;
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in entries {
        if out.len() >= MAX_FILES {
            findings.push(Finding::whole_file(
                dir,
                Severity::Warning,
                "agent-too-many",
                format!("more than {MAX_FILES} agent files: the others are not read"),
            ));
            return;
        }
        let path = dir.join(&e.name);
        match e.kind {
            Some(Kind::Dir) if recursive && depth < MAX_DEPTH => {
                collect(fs, &path, recursive, depth + 1, out, findings);
            }
            Some(Kind::File) if e.raw.is_none() => {
                if e.name.ends_with(".md") {
                    out.push(path);
                } else {
                    findings.push(Finding::whole_file(
                        &path,
                        Severity::Information,
                        "agent-not-md",
                        "not a `.md` file: Claude Code does not read it as an agent".to_string(),
                    ));
                }
            }
            _ => {}
        }
    }
}

/// A string field (a number or a boolean as YAML writes it).
fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A list field: a YAML list, or a comma-separated string.
fn list(v: Option<&Value>) -> Option<Vec<String>> {
    match v? {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|i| string(Some(i)))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        Value::String(s) => Some(frontmatter::split_commas(s)),
        Value::Null => None,
        other => Some(vec![other.to_string()]),
    }
}

/// One agent file, or `None` (with a finding) when Claude Code would not list it.
fn read(fs: &dyn Fs, file: &Path, source: &Source, findings: &mut Vec<Finding>) -> Option<Agent> {
    let skip = |findings: &mut Vec<Finding>, code: &str, why: String| {
        findings.push(Finding::whole_file(file, Severity::Warning, code, why));
        None
    };
    let bytes = match fs.read_bytes(file, MAX_FILE_BYTES + 1) {
        Ok(b) if b.len() as u64 > MAX_FILE_BYTES => {
            return skip(
                findings,
                "agent-too-large",
                format!(
                    "larger than {} MB: not read, not listed",
                    MAX_FILE_BYTES >> 20
                ),
            );
        }
        Ok(b) => b,
        Err(e) => {
            return skip(
                findings,
                "agent-unreadable",
                format!("not read ({e}): not listed"),
            );
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let (fm, body) = frontmatter::split(&text);
    let Some(fm) = fm else {
        return skip(
            findings,
            "agent-no-frontmatter",
            "no frontmatter (`---` … `---` with `name` and `description`): Claude Code does not list this agent".to_string(),
        );
    };
    if let Some(err) = &fm.error {
        let (severity, what) = match fm.parse {
            Parse::Retried => (
                Severity::Warning,
                "Claude Code reads it only after quoting values; write valid YAML",
            ),
            _ => (
                Severity::Error,
                "every field is dropped: the agent is not listed",
            ),
        };
        findings.push(Finding {
            path: file.to_path_buf(),
            line: Some(err.line),
            start_col: err.col,
            end_col: err.col + 1,
            severity,
            code: "agent-frontmatter-invalid".into(),
            message: format!("invalid YAML frontmatter ({}): {what}", err.message),
        });
    }
    let fields = &fm.fields;
    let Some(name) = string(fields.get("name")).filter(|n| !n.trim().is_empty()) else {
        return skip(
            findings,
            "agent-no-name",
            "no `name` in the frontmatter: Claude Code does not list this agent".to_string(),
        );
    };
    let Some(description) = string(fields.get("description")) else {
        return skip(
            findings,
            "agent-no-description",
            format!(
                "no `description` in the frontmatter: Claude Code does not list agent \"{name}\"; the model picks agents by their description"
            ),
        );
    };
    let tools = list(fields.get("tools"));
    let name = match &source.prefix {
        Some(p) => format!("{p}:{name}"),
        None => name,
    };
    if let Some(ts) = &tools {
        let unknown: Vec<&String> = ts.iter().filter(|t| !run::known_tool(t)).collect();
        if !unknown.is_empty() {
            let line = text
                .lines()
                .take(fm.lines)
                .position(|l| l.starts_with("tools:"));
            findings.push(Finding {
                path: file.to_path_buf(),
                line,
                start_col: 0,
                end_col: if line.is_some() { "tools".len() } else { 0 },
                severity: Severity::Warning,
                code: "agent-unknown-tool".into(),
                message: format!(
                    "agent \"{name}\" names tools no session offers ({}): they are listed but the subagent does not get them",
                    crate::context::message::quote_list(&unknown)
                ),
            });
        }
    }
    let tools_text = match &tools {
        Some(t) => t.join(", "),
        None => "All tools".to_string(),
    };
    Some(Agent {
        name,
        description,
        tools,
        tools_text,
        disallowed_tools: list(fields.get("disallowedTools")).unwrap_or_default(),
        model: string(fields.get("model")).map(|m| m.trim().to_string()),
        body: body.trim_end().to_string(),
        scope: source.scope,
        file: Some(file.to_path_buf()),
    })
}

#[cfg(test)]
mod tests;
