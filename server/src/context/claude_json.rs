//! `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), Claude Code's global config, for the
//! keys skills and MCP servers depend on (`../shared/spec/skills-mcp.md` sections 4 and 6):
//!
//! - `skillUsage`: how often each skill was used (a number, or an object with `usageCount`);
//!   the listing budget gives full entries back most used first;
//! - `mcpServers`: the user's MCP servers (user scope);
//! - `projects["<project>"]`: the local scope's `mcpServers`, and `disabledMcpjsonServers`,
//!   `enabledMcpjsonServers`, `enableAllProjectMcpServers` (older Claude Code versions kept the
//!   `.mcp.json` approvals here).
//!
//! Read through [`Fs`] (10 MB at most, like every file); never fails: a file that is not valid
//! JSON gives nothing and a finding.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Finding, Severity};
use crate::fs::{Fs, ReadError};

/// Names read from one list at most (a cap against runaway files).
const MAX_NAMES: usize = 1_000;

/// What the global config says about skills and MCP servers.
#[derive(Clone, Debug, Default)]
pub struct ClaudeJson {
    /// The file (it exists and was read).
    pub path: PathBuf,
    /// `skillUsage`, most used first (ties by name).
    pub skill_usage: Vec<(String, f64)>,
    /// `mcpServers` (the user's servers).
    pub mcp_servers: Map<String, Value>,
    /// `projects[<key>].mcpServers` (the local scope).
    pub project_mcp_servers: Map<String, Value>,
    /// `projects[<key>].disabledMcpjsonServers`.
    pub disabled_mcpjson_servers: Vec<String>,
    /// `projects[<key>].enabledMcpjsonServers`.
    pub enabled_mcpjson_servers: Vec<String>,
    /// `projects[<key>].enableAllProjectMcpServers`.
    pub enable_all_project_mcp_servers: Option<bool>,
    pub findings: Vec<Finding>,
}

/// Reads `path` for the project `key` (the git root, or cwd outside git). `None` when the file
/// does not exist.
pub fn read(fs: &dyn Fs, path: &Path, key: &Path) -> Option<ClaudeJson> {
    let mut out = ClaudeJson {
        path: path.to_path_buf(),
        ..ClaudeJson::default()
    };
    let text = match fs.read_text(path) {
        Ok(t) => t,
        Err(ReadError::NotFound) => return None,
        Err(e) => {
            out.findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "claude-json-unreadable",
                format!("not read: {e}; its MCP servers and skill usage are ignored"),
            ));
            return Some(out);
        }
    };
    let json = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        _ => {
            out.findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "claude-json-invalid",
                "not a JSON object: its MCP servers and skill usage are ignored",
            ));
            return Some(out);
        }
    };
    if let Some(usage) = json.get("skillUsage").and_then(Value::as_object) {
        out.skill_usage = usage
            .iter()
            .take(MAX_NAMES)
            .filter_map(|(name, v)| {
                let n = v.as_f64().or_else(|| {
                    ["usageCount", "count", "uses"]
                        .iter()
                        .find_map(|k| v.get(k).and_then(Value::as_f64))
                })?;
                Some((name.clone(), n))
            })
            .collect();
        out.skill_usage
            .sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    }
    if let Some(servers) = json.get("mcpServers").and_then(Value::as_object) {
        out.mcp_servers = servers.clone();
    }
    let project = json
        .get("projects")
        .and_then(|p| p.get(key.to_string_lossy().as_ref()));
    if let Some(project) = project {
        if let Some(servers) = project.get("mcpServers").and_then(Value::as_object) {
            out.project_mcp_servers = servers.clone();
        }
        let names = |k: &str| -> Vec<String> {
            project
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .take(MAX_NAMES)
                .map(str::to_string)
                .collect()
        };
        out.disabled_mcpjson_servers = names("disabledMcpjsonServers");
        out.enabled_mcpjson_servers = names("enabledMcpjsonServers");
        out.enable_all_project_mcp_servers = project
            .get("enableAllProjectMcpServers")
            .and_then(Value::as_bool);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn reads_usage_servers_and_the_project_entry() {
        let fs = MemFs::with_files([(
            "/h/.claude.json",
            r#"{"skillUsage": {"a": 2, "b": {"usageCount": 5, "lastUsedAt": 1}, "c": "x"},
                "mcpServers": {"u": {"command": "u"}},
                "projects": {"/r": {"mcpServers": {"l": {"command": "l"}},
                                    "disabledMcpjsonServers": ["demo", 3],
                                    "enableAllProjectMcpServers": true}}}"#,
        )]);
        let c = read(&fs, Path::new("/h/.claude.json"), Path::new("/r")).unwrap();
        assert_eq!(
            c.skill_usage,
            [("b".to_string(), 5.0), ("a".to_string(), 2.0)]
        );
        assert!(c.mcp_servers.contains_key("u"));
        assert!(c.project_mcp_servers.contains_key("l"));
        assert_eq!(c.disabled_mcpjson_servers, ["demo"]);
        assert_eq!(c.enable_all_project_mcp_servers, Some(true));
        let other = read(&fs, Path::new("/h/.claude.json"), Path::new("/other")).unwrap();
        assert!(other.project_mcp_servers.is_empty());
        assert!(read(&fs, Path::new("/h/none.json"), Path::new("/r")).is_none());
        let fs = MemFs::with_files([("/h/.claude.json", "{,}")]);
        let bad = read(&fs, Path::new("/h/.claude.json"), Path::new("/r")).unwrap();
        assert_eq!(bad.findings[0].code, "claude-json-invalid");
    }
}
