//! Which MCP servers a session has, and whether each may start (`../shared/spec/skills-mcp.md`
//! section 6).
//!
//! **Sources**: `.mcp.json` in cwd (project scope), `mcpServers` in `~/.claude.json` (user
//! scope) and `projects["<project>"].mcpServers` there (local scope; the project key is the git
//! root, or cwd outside git). A name in several scopes takes the local entry, then the
//! project's, then the user's (Claude Code's documented precedence). `${VAR}` and
//! `${VAR:-default}` in a command, its arguments, `env` values, a URL and headers are expanded
//! from the environment the caller passes.
//!
//! **Approval** (we take the reference CLI's *interactive* behaviour; its `-p` mode starts every
//! `.mcp.json` server unasked): a project's servers start only in a trusted folder (workspace
//! trust, the `trust` module: before it, [`Approval::Untrusted`], whatever any file says), and only
//! once approved. `disabledMcpjsonServers` (in any settings file, or `~/.claude.json`'s project
//! entry) rejects one; `enabledMcpjsonServers` or `enableAllProjectMcpServers: true` approves it,
//! from the user's files (user, an untracked local, the project entry of `~/.claude.json`) and,
//! as in the reference (`permissions-trust.md` section 9), from the repository's own files (the
//! project's `.claude/settings.json`, a tracked `settings.local.json`) once the folder is
//! trusted. The user's and local servers are the user's own configuration and need no approval.
//! An answer is remembered as Claude Code's dialog remembers it, in
//! `.claude/settings.local.json` ([`super::approval`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::context::claude_json::ClaudeJson;
use crate::context::settings::Settings;
use crate::context::{Finding, Severity};
use crate::fs::{Fs, ReadError};

/// The project's MCP file, in cwd.
pub const MCP_FILE: &str = ".mcp.json";
/// Servers read from one source at most.
pub const MAX_SERVERS: usize = 100;

/// Where a server is configured.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// `.mcp.json` in cwd: needs the user's approval.
    Project,
    /// `~/.claude.json` `mcpServers`.
    User,
    /// `~/.claude.json` `projects["<project>"].mcpServers`.
    Local,
    /// An enabled plugin's `.mcp.json` (named `plugin:<plugin>:<server>`).
    Plugin,
    /// Offered by the editor for the session (ACP `session/new`): needs the approval a project
    /// server needs ([`super::offered`]).
    Client,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Local => "local",
            Scope::Plugin => "plugin",
            Scope::Client => "editor",
        }
    }
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdio.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the inherited environment (after the keys are removed).
        env: BTreeMap<String, String>,
    },
    /// A remote server over streamable HTTP (`"type": "http"`), or over the older HTTP+SSE
    /// transport when `sse` (`"type": "sse"`): its URL (checked: `http` or `https` with a host)
    /// and the headers sent with every request.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        sse: bool,
    },
    /// A remote server claude-context does not speak (`ws`): configured, never started.
    Remote { kind: String, url: String },
    /// An entry claude-context cannot use; the text says why.
    Invalid(String),
}

/// Whether a server may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// It may start: the user's own configuration, or an approved project server (the reason).
    Approved(String),
    /// A project server nobody answered for yet: the session asks before starting it.
    Pending,
    /// Rejected by `disabledMcpjsonServers` in this file.
    Disabled(PathBuf),
    /// A project server of a folder that is not trusted (nobody was asked yet, or its user said
    /// no): never started, whatever any file says; once trusted, it stands as the inner
    /// approval says.
    Untrusted(Box<Approval>),
}

impl Approval {
    pub fn may_start(&self) -> bool {
        matches!(self, Approval::Approved(_))
    }

    /// What it is once the folder is trusted.
    pub fn once_trusted(&self) -> &Approval {
        match self {
            Approval::Untrusted(inner) => inner,
            other => other,
        }
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// As configured (the instructions section shows it so; tool names normalise it).
    pub name: String,
    pub scope: Scope,
    /// The file it is configured in.
    pub source: PathBuf,
    pub transport: Transport,
    pub approval: Approval,
    /// `${VAR}`s that are not set (left as written).
    pub missing_vars: Vec<String>,
    /// The entry as written (compact JSON): tells a cached tool list whether it still applies.
    pub entry: String,
}

/// The servers of a session, and what is wrong in their files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// In name order (UTF-16).
    pub servers: Vec<Server>,
    /// `.mcp.json` and `~/.claude.json`, existing or not (an editor watches them).
    pub files: Vec<PathBuf>,
    pub findings: Vec<Finding>,
}

impl Server {
    /// How to start this server with `cwd` as its working folder, when it is a stdio or a
    /// remote (`http`, `sse`) server. `env_remove` (the variables that can hold a key) are left out of a stdio
    /// server's environment, and out of the entry's own `env`.
    pub fn launch(&self, cwd: &Path, env_remove: &[String]) -> Option<super::client::Launch> {
        if let Transport::Http { url, headers, sse } = &self.transport {
            return Some(super::client::Launch {
                name: self.name.clone(),
                command: url.clone(),
                cwd: cwd.to_path_buf(),
                remote: Some(super::http::Remote {
                    url: url.clone(),
                    headers: headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    sse: *sse,
                }),
                ..Default::default()
            });
        }
        let Transport::Stdio { command, args, env } = &self.transport else {
            return None;
        };
        Some(super::client::Launch {
            name: self.name.clone(),
            command: command.clone(),
            args: args.clone(),
            env: env
                .iter()
                .filter(|(k, _)| !env_remove.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            env_remove: env_remove.to_vec(),
            cwd: cwd.to_path_buf(),
            remote: None,
        })
    }
}

impl Transport {
    /// A remote server (`http`, `sse`, `ws`): its failures go under the remote servers' header
    /// of the failed note.
    pub fn is_remote(&self) -> bool {
        matches!(self, Transport::Http { .. } | Transport::Remote { .. })
    }
}

impl Config {
    pub fn get(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// What reading needs besides the files.
pub struct Options<'a> {
    /// The real working directory (`.mcp.json` is read there; stdio servers start there).
    pub cwd: PathBuf,
    /// The settings files' keys (`disabledMcpjsonServers`...).
    pub settings: &'a Settings,
    /// `~/.claude.json`, read for the project key.
    pub claude_json: Option<&'a ClaudeJson>,
    /// The environment, for `${VAR}` expansion.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// The enabled plugins whose `.mcp.json` servers join (found by the plugins module).
    pub plugins: &'a [PluginServers],
}

/// An enabled plugin, as the MCP configuration needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginServers {
    pub name: String,
    /// `CLAUDE_PLUGIN_ROOT`: `.mcp.json` is read there.
    pub root: PathBuf,
    /// `CLAUDE_PLUGIN_DATA`.
    pub data: Option<PathBuf>,
    /// Enabled by the user's own settings (or `--plugin-dir`): its servers are the user's
    /// choice and start unasked. Enabled by the repository's settings: each server needs the
    /// approval a project's `.mcp.json` server needs (docs/decisions.md).
    pub users_choice: bool,
}

/// Reads every source and decides each server's approval.
pub fn read(fs: &dyn Fs, opts: &Options<'_>) -> Config {
    let mut out = Config::default();
    let mut by_name: BTreeMap<String, Server> = BTreeMap::new();
    // Lowest precedence first: user, project, local.
    if let Some(cj) = opts.claude_json {
        out.files.push(cj.path.clone());
        for (name, entry) in cj.mcp_servers.iter().take(MAX_SERVERS) {
            let s = server(name, entry, Scope::User, &cj.path, opts);
            by_name.insert(name.clone(), s);
        }
    }
    let mcp_json = opts.cwd.join(MCP_FILE);
    out.files.push(mcp_json.clone());
    if let Some(servers) = read_mcp_json(fs, &mcp_json, &mut out.findings) {
        for (name, entry) in servers.iter().take(MAX_SERVERS) {
            let s = server(name, entry, Scope::Project, &mcp_json, opts);
            by_name.insert(name.clone(), s);
        }
    }
    if let Some(cj) = opts.claude_json {
        for (name, entry) in cj.project_mcp_servers.iter().take(MAX_SERVERS) {
            let s = server(name, entry, Scope::Local, &cj.path, opts);
            by_name.insert(name.clone(), s);
        }
    }
    for p in opts.plugins {
        plugin_servers(fs, p, opts, &mut out, &mut by_name);
    }
    out.servers = by_name.into_values().collect();
    out.servers
        .sort_by(|a, b| super::texts::utf16_cmp(&a.name, &b.name));
    out
}

/// A plugin's `.mcp.json` servers, named `plugin:<plugin>:<server>`, `${CLAUDE_PLUGIN_ROOT}`
/// and `${CLAUDE_PLUGIN_DATA}` expanded and set in a stdio server's environment. A file whose
/// real path leaves the plugin's folder is not read.
fn plugin_servers(
    fs: &dyn Fs,
    p: &PluginServers,
    opts: &Options<'_>,
    out: &mut Config,
    by_name: &mut BTreeMap<String, Server>,
) {
    let file = p.root.join(MCP_FILE);
    out.files.push(file.clone());
    let real_root = fs.canonicalize(&p.root).unwrap_or_else(|_| p.root.clone());
    if let Ok(real) = fs.canonicalize(&file)
        && !real.starts_with(&real_root)
    {
        out.findings.push(Finding::whole_file(
            &file,
            Severity::Warning,
            "plugin-linked-outside",
            format!(
                "plugin {}'s .mcp.json links to {}, outside its folder: not read",
                p.name,
                real.display()
            ),
        ));
        return;
    }
    let Some(servers) = read_mcp_json(fs, &file, &mut out.findings) else {
        return;
    };
    let root = p.root.display().to_string();
    let data = p.data.as_ref().map(|d| d.display().to_string());
    let var = |name: &str| match name {
        "CLAUDE_PLUGIN_ROOT" => Some(root.clone()),
        "CLAUDE_PLUGIN_DATA" => data.clone(),
        other => (opts.var)(other),
    };
    let plugin_opts = Options {
        cwd: opts.cwd.clone(),
        settings: opts.settings,
        claude_json: opts.claude_json,
        var: &var,
        plugins: &[],
    };
    for (server_name, entry) in servers.iter().take(MAX_SERVERS) {
        let name = format!("plugin:{}:{server_name}", p.name);
        let mut s = server(&name, entry, Scope::Plugin, &file, &plugin_opts);
        s.approval = if p.users_choice {
            Approval::Approved(format!("plugin {} that you enabled", p.name))
        } else {
            project_approval(&name, opts)
        };
        if let Transport::Stdio { env, .. } = &mut s.transport {
            env.insert("CLAUDE_PLUGIN_ROOT".into(), root.clone());
            if let Some(d) = &data {
                env.insert("CLAUDE_PLUGIN_DATA".into(), d.clone());
            }
        }
        by_name.insert(name, s);
    }
}

/// `.mcp.json`'s `mcpServers`, or `None` (a finding says why when the file exists).
pub fn read_mcp_json(
    fs: &dyn Fs,
    path: &Path,
    findings: &mut Vec<Finding>,
) -> Option<Map<String, Value>> {
    let text = match fs.read_text(path) {
        Ok(t) => t,
        Err(ReadError::NotFound) | Err(ReadError::NotAFile(crate::fs::Kind::Dir)) => return None,
        Err(e) => {
            findings.push(Finding::whole_file(
                path,
                Severity::Error,
                "mcp-json-unreadable",
                format!("not read: {e}; none of its servers is available"),
            ));
            return None;
        }
    };
    let json = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            findings.push(Finding::whole_file(
                path,
                Severity::Error,
                "mcp-json-invalid",
                "not a JSON object: none of its servers is available. Write {\"mcpServers\": {\"<name>\": {\"command\": \"...\"}}}",
            ));
            return None;
        }
        Err(e) => {
            findings.push(Finding {
                path: path.to_path_buf(),
                line: Some(e.line().saturating_sub(1)),
                start_col: e.column().saturating_sub(1),
                end_col: e.column(),
                severity: Severity::Error,
                code: "mcp-json-invalid".into(),
                message: format!("not valid JSON ({e}): none of its servers is available"),
            });
            return None;
        }
    };
    match json.get("mcpServers") {
        Some(Value::Object(servers)) => Some(servers.clone()),
        Some(_) => {
            findings.push(Finding::whole_file(
                path,
                Severity::Error,
                "mcp-json-invalid",
                "mcpServers must be an object of server names to their settings: none of its servers is available",
            ));
            None
        }
        None => {
            findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "mcp-json-empty",
                "no mcpServers key: this file configures no server",
            ));
            None
        }
    }
}

fn server(name: &str, entry: &Value, scope: Scope, source: &Path, opts: &Options<'_>) -> Server {
    let mut missing = Vec::new();
    let mut expand = |s: &str| expand_vars(s, opts.var, &mut missing);
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
    let transport = match (entry.as_object(), kind) {
        (None, _) => Transport::Invalid("the entry is not an object".into()),
        (Some(e), "stdio") => match e.get("command").and_then(Value::as_str) {
            Some(cmd) if !cmd.trim().is_empty() => Transport::Stdio {
                command: expand(cmd),
                args: e
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .take(1_000)
                    .map(&mut expand)
                    .collect(),
                env: e
                    .get("env")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .take(1_000)
                    .filter_map(|(k, v)| Some((k.clone(), expand(v.as_str()?))))
                    .collect(),
            },
            _ => Transport::Invalid("a stdio server needs a \"command\"".into()),
        },
        (Some(e), "http" | "sse") => {
            let url = e
                .get("url")
                .and_then(Value::as_str)
                .map(&mut expand)
                .unwrap_or_default();
            match super::http::check_url(&url) {
                Err(why) => Transport::Invalid(why),
                Ok(()) => Transport::Http {
                    sse: kind == "sse",
                    url,
                    headers: e
                        .get("headers")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .take(100)
                        .filter_map(|(k, v)| Some((k.clone(), expand(v.as_str()?))))
                        .collect(),
                },
            }
        }
        (Some(e), "ws") => Transport::Remote {
            kind: kind.to_string(),
            url: e
                .get("url")
                .and_then(Value::as_str)
                .map(&mut expand)
                .unwrap_or_default(),
        },
        (Some(_), other) => Transport::Invalid(format!("unknown server type \"{other}\"")),
    };
    let approval = match scope {
        Scope::Project => project_approval(name, opts),
        Scope::User => Approval::Approved("your user configuration (~/.claude.json)".into()),
        Scope::Local => Approval::Approved("your local configuration (~/.claude.json)".into()),
        // Set by the caller (`plugin_servers`, `offered::servers`).
        Scope::Plugin | Scope::Client => Approval::Pending,
    };
    Server {
        name: name.to_string(),
        scope,
        source: source.to_path_buf(),
        transport,
        approval,
        missing_vars: missing,
        entry: serde_json::to_string(entry).unwrap_or_default(),
    }
}

fn project_approval(name: &str, opts: &Options<'_>) -> Approval {
    let once_trusted = trusted_approval(name, opts);
    match once_trusted {
        // A rejection stands whatever the trust.
        Approval::Disabled(_) => once_trusted,
        a if opts.settings.trust.trusted() => a,
        a => Approval::Untrusted(Box::new(a)),
    }
}

/// A project server's approval in a trusted folder.
fn trusted_approval(name: &str, opts: &Options<'_>) -> Approval {
    let s = opts.settings;
    if let Some(d) = s.disabled_mcpjson_servers.iter().find(|d| d.value == name) {
        return Approval::Disabled(d.source.clone());
    }
    if let Some(cj) = opts.claude_json
        && cj.disabled_mcpjson_servers.iter().any(|d| d == name)
    {
        return Approval::Disabled(cj.path.clone());
    }
    if let Some(e) = s.enabled_mcpjson_servers.iter().find(|e| e.value == name) {
        return Approval::Approved(format!("enabledMcpjsonServers in {}", e.source.display()));
    }
    if let Some(all) = &s.enable_all_project_mcp_servers
        && all.value
    {
        return Approval::Approved(format!(
            "enableAllProjectMcpServers in {}",
            all.source.display()
        ));
    }
    if let Some(cj) = opts.claude_json {
        if cj.enabled_mcpjson_servers.iter().any(|e| e == name) {
            return Approval::Approved(format!("enabledMcpjsonServers in {}", cj.path.display()));
        }
        if cj.enable_all_project_mcp_servers == Some(true) {
            return Approval::Approved(format!(
                "enableAllProjectMcpServers in {}",
                cj.path.display()
            ));
        }
    }
    // The repository's own files (measured: they approve once the folder is trusted).
    if let Some(e) = s
        .repo_enabled_mcpjson_servers
        .iter()
        .find(|e| e.value == name)
    {
        return Approval::Approved(format!(
            "enabledMcpjsonServers in {} (the repository's file)",
            e.source.display()
        ));
    }
    if let Some(all) = &s.repo_enable_all_project_mcp_servers
        && all.value
    {
        return Approval::Approved(format!(
            "enableAllProjectMcpServers in {} (the repository's file)",
            all.source.display()
        ));
    }
    Approval::Pending
}

/// `${VAR}` and `${VAR:-default}` expanded through `var`; an unset variable without a default is
/// left as written and recorded in `missing`.
pub fn expand_vars(
    s: &str,
    var: &dyn Fn(&str) -> Option<String>,
    missing: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[i..]);
            return out;
        };
        let inner = &after[..close];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (var(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_string());
                }
                out.push_str(&rest[i..i + 2 + close + 1]);
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Where `command` resolves, the way a shell looks it up: a path with a `/` relative to cwd,
/// else the first executable file named so in `path_dirs`.
pub fn resolve_command(
    fs: &dyn Fs,
    command: &str,
    cwd: &Path,
    path_dirs: &[PathBuf],
) -> Option<PathBuf> {
    if command.contains('/') {
        let p = crate::fs::normalize(cwd, Path::new(command));
        return fs.is_file(&p).then_some(p);
    }
    path_dirs
        .iter()
        .map(|d| d.join(command))
        .find(|p| fs.is_file(p))
}

/// `check`'s findings on the servers of one `.mcp.json`: a server claude-context cannot use, a
/// command that is not found, unset variables.
pub fn lint(
    fs: &dyn Fs,
    config: &Config,
    file: &Path,
    cwd: &Path,
    path_dirs: &[PathBuf],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let text = fs.read_text(file).unwrap_or_default();
    let locate = |name: &str| -> (Option<usize>, usize, usize) {
        let needle = serde_json::to_string(name).unwrap_or_default();
        match text
            .find(&format!("{needle}:"))
            .or_else(|| text.find(&needle))
        {
            Some(off) => {
                let line = text[..off].matches('\n').count();
                let col = off - text[..off].rfind('\n').map_or(0, |n| n + 1);
                (Some(line), col, col + needle.len())
            }
            None => (None, 0, 0),
        }
    };
    for s in config.servers.iter().filter(|s| s.source == file) {
        let (line, start_col, end_col) = locate(&s.name);
        let mut push = |severity, code: &str, message: String| {
            out.push(Finding {
                path: file.to_path_buf(),
                line,
                start_col,
                end_col,
                severity,
                code: code.into(),
                message,
            })
        };
        match &s.transport {
            Transport::Invalid(why) => push(
                Severity::Error,
                "mcp-server-invalid",
                format!("server \"{}\": {why}; it cannot start", s.name),
            ),
            Transport::Remote { kind, .. } => push(
                Severity::Information,
                "mcp-server-remote",
                format!(
                    "server \"{}\" is {}, so a session here does not have its tools (Claude Code does)",
                    s.name,
                    super::http::unsupported(kind)
                ),
            ),
            Transport::Http { url, headers, .. } => {
                if let Some(host) = super::http::plain_remote_host(url) {
                    push(
                        Severity::Warning,
                        "mcp-http-plain",
                        format!(
                            "server \"{}\" is reached over plain http at {host}, not this machine: its requests{} and the tools' results travel unencrypted; use https",
                            s.name,
                            if headers.is_empty() {
                                ""
                            } else {
                                " (their headers too)"
                            }
                        ),
                    );
                }
            }
            Transport::Stdio { command, .. } => {
                if resolve_command(fs, command, cwd, path_dirs).is_none() {
                    push(
                        Severity::Error,
                        "mcp-command-not-found",
                        format!(
                            "server \"{}\": command {} not found{}: it will fail to start (ENOENT)",
                            s.name,
                            crate::context::message::quoted(command),
                            if command.contains('/') {
                                String::new()
                            } else {
                                " on PATH".to_string()
                            }
                        ),
                    );
                }
            }
        }
        if !s.missing_vars.is_empty() {
            push(
                Severity::Warning,
                "mcp-missing-variable",
                format!(
                    "server \"{}\" uses {} but the environment does not set {}: it is passed as written",
                    s.name,
                    s.missing_vars
                        .iter()
                        .map(|v| format!("${{{v}}}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if s.missing_vars.len() == 1 {
                        "it"
                    } else {
                        "them"
                    }
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::settings::{Sourced, Trust};
    use crate::fs::MemFs;

    /// The settings of a trusted folder.
    fn trusted() -> Settings {
        Settings {
            trust: Trust::trusted_folder(),
            ..Settings::default()
        }
    }

    fn no_vars(_: &str) -> Option<String> {
        None
    }

    fn cj(json: &str) -> (MemFs, ClaudeJson) {
        let fs = MemFs::with_files([("/h/.claude.json", json)]);
        let c =
            crate::context::claude_json::read(&fs, Path::new("/h/.claude.json"), Path::new("/r"))
                .unwrap();
        (fs, c)
    }

    #[test]
    fn the_three_sources_and_their_precedence() {
        let (_, c) = cj(
            r#"{"mcpServers": {"usersrv": {"command": "u"}, "both": {"command": "from-user"}},
                           "projects": {"/r": {"mcpServers": {"localsrv": {"command": "l"}, "both": {"command": "from-local"}}}}}"#,
        );
        let fs = MemFs::with_files([(
            "/r/.mcp.json",
            r#"{"mcpServers": {"demo": {"command": "python3", "args": ["-m", "demo", "${HOME}", "${NOPE:-d}"], "env": {"X": "${NOPE}"}}, "both": {"command": "from-project"}}}"#,
        )]);
        let settings = trusted();
        let var = |k: &str| (k == "HOME").then(|| "/h".to_string());
        let config = read(
            &fs,
            &Options {
                cwd: "/r".into(),
                settings: &settings,
                claude_json: Some(&c),
                var: &var,
                plugins: &[],
            },
        );
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["both", "demo", "localsrv", "usersrv"]);
        let both = config.get("both").unwrap();
        assert_eq!(both.scope, Scope::Local);
        assert!(
            matches!(&both.transport, Transport::Stdio { command, .. } if command == "from-local")
        );
        let demo = config.get("demo").unwrap();
        assert_eq!(
            demo.approval,
            Approval::Pending,
            "a project server waits for the user"
        );
        assert_eq!(
            demo.transport,
            Transport::Stdio {
                command: "python3".into(),
                args: vec!["-m".into(), "demo".into(), "/h".into(), "d".into()],
                env: [("X".to_string(), "${NOPE}".to_string())].into(),
            }
        );
        assert_eq!(demo.missing_vars, ["NOPE"]);
        assert!(config.get("usersrv").unwrap().approval.may_start());
        assert!(config.get("localsrv").unwrap().approval.may_start());
    }

    #[test]
    fn approval_disabling_and_the_projects_own_settings() {
        let fs = MemFs::with_files([(
            "/r/.mcp.json",
            r#"{"mcpServers": {"demo": {"command": "x"}, "other": {"command": "y"}}}"#,
        )]);
        let src = |p: &str, v: &str| Sourced {
            value: v.to_string(),
            source: p.into(),
        };
        let mut settings = trusted();
        let read_with = |settings: &Settings, c: Option<&ClaudeJson>| {
            read(
                &fs,
                &Options {
                    cwd: "/r".into(),
                    settings,
                    claude_json: c,
                    var: &no_vars,
                    plugins: &[],
                },
            )
        };
        settings
            .enabled_mcpjson_servers
            .push(src("/r/.claude/settings.local.json", "demo"));
        let c = read_with(&settings, None);
        assert!(c.get("demo").unwrap().approval.may_start());
        assert_eq!(c.get("other").unwrap().approval, Approval::Pending);
        settings
            .disabled_mcpjson_servers
            .push(src("/r/.claude/settings.json", "demo"));
        let c = read_with(&settings, None);
        assert_eq!(
            c.get("demo").unwrap().approval,
            Approval::Disabled("/r/.claude/settings.json".into()),
            "a rejection wins"
        );
        let (_, cjson) = cj(
            r#"{"projects": {"/r": {"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["other"]}}}"#,
        );
        let c = read_with(&trusted(), Some(&cjson));
        assert!(c.get("demo").unwrap().approval.may_start());
        assert!(matches!(
            c.get("other").unwrap().approval,
            Approval::Disabled(_)
        ));
        // The repository's own settings file approves its servers only in a trusted folder;
        // before, no project server may start, whatever any file says.
        let fs2 = MemFs::with_files([(
            "/r/.claude/settings.json",
            r#"{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["demo"]}"#,
        )]);
        let locate = |trust| crate::context::settings::Locations {
            user: None,
            project: "/r/.claude/settings.json".into(),
            local: "/r/.claude/settings.local.json".into(),
            managed: "/m/managed-settings.json".into(),
            trust,
        };
        let s = crate::context::settings::read(&fs2, &locate(Default::default()));
        assert!(s.enabled_mcpjson_servers.is_empty() && s.enable_all_project_mcp_servers.is_none());
        assert!(s.findings.is_empty(), "{:?}", s.findings);
        let c = read_with(&s, None);
        let demo = &c.get("demo").unwrap().approval;
        assert!(matches!(demo, Approval::Untrusted(_)) && !demo.may_start());
        assert!(demo.once_trusted().may_start());
        assert!(matches!(
            c.get("other").unwrap().approval.once_trusted(),
            Approval::Approved(_)
        ));
        let s = crate::context::settings::read(&fs2, &locate(Trust::trusted_folder()));
        let c = read_with(&s, None);
        assert!(c.get("demo").unwrap().approval.may_start());
        // Even the user's own approval waits for trust.
        let mut mine = Settings::default();
        mine.enabled_mcpjson_servers
            .push(src("/r/.claude/settings.local.json", "demo"));
        assert!(matches!(
            read_with(&mine, None).get("demo").unwrap().approval,
            Approval::Untrusted(_)
        ));
    }

    #[test]
    fn invalid_files_and_entries_are_findings() {
        let mut f = Vec::new();
        let fs = MemFs::with_files([("/r/.mcp.json", "{\"mcpServers\": {,}}")]);
        assert!(read_mcp_json(&fs, Path::new("/r/.mcp.json"), &mut f).is_none());
        assert_eq!(f[0].code, "mcp-json-invalid");
        assert_eq!(f[0].line, Some(0));
        let fs = MemFs::with_files([
            (
                "/r/.mcp.json",
                "{\"mcpServers\": {\"nocmd\": {\"args\": []}, \"gone\": {\"command\": \"/nonexistent/bin/mcp-server\"}, \"ok\": {\"command\": \"tool\"}, \"web\": {\"type\": \"ws\", \"url\": \"ws://127.0.0.1:1/ws\"}, \"ev\": {\"type\": \"sse\", \"url\": \"http://127.0.0.1:1/sse\"}, \"figma\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:3845/mcp\"}, \"far\": {\"type\": \"http\", \"url\": \"http://10.1.2.3:8080/mcp\", \"headers\": {\"Authorization\": \"Bearer ${TOKEN:-none}\"}}, \"nourl\": {\"type\": \"http\", \"url\": \"ftp://x/mcp\"}}}",
            ),
            ("/usr/bin/tool", "#!/bin/sh\n"),
        ]);
        let settings = Settings::default();
        let config = read(
            &fs,
            &Options {
                cwd: "/r".into(),
                settings: &settings,
                claude_json: None,
                var: &no_vars,
                plugins: &[],
            },
        );
        let found = lint(
            &fs,
            &config,
            Path::new("/r/.mcp.json"),
            Path::new("/r"),
            &["/usr/bin".into()],
        );
        let codes: Vec<(&str, Option<usize>)> =
            found.iter().map(|f| (f.code.as_str(), f.line)).collect();
        assert_eq!(
            codes,
            [
                ("mcp-http-plain", Some(0)),
                ("mcp-command-not-found", Some(0)),
                ("mcp-server-invalid", Some(0)),
                ("mcp-server-invalid", Some(0)),
                ("mcp-server-remote", Some(0)),
            ]
        );
        assert!(found[0].message.contains("plain http at 10.1.2.3"));
        assert!(
            found[3]
                .message
                .contains("\"ftp://x/mcp\" is not an http or https URL")
        );
        assert_eq!(
            config.get("far").unwrap().transport,
            Transport::Http {
                url: "http://10.1.2.3:8080/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer none".to_string())].into(),
                sse: false,
            }
        );
        // An sse server is reached like an http one (no finding on loopback).
        assert_eq!(
            config.get("ev").unwrap().transport,
            Transport::Http {
                url: "http://127.0.0.1:1/sse".into(),
                headers: BTreeMap::new(),
                sse: true,
            }
        );
        assert!(
            found[1]
                .message
                .contains("\"/nonexistent/bin/mcp-server\" not found")
        );
    }

    #[test]
    fn variables_expand_as_claude_code_expands_them() {
        let mut missing = Vec::new();
        let var = |k: &str| (k == "A").then(|| "1".to_string());
        assert_eq!(
            expand_vars("${A}-${B:-x}-${C}-$D-${", &var, &mut missing),
            "1-x-${C}-$D-${"
        );
        assert_eq!(missing, ["C"]);
    }
}
