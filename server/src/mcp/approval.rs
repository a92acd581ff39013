//! The user's answer about a project's MCP server, remembered as Claude Code's dialog remembers
//! it: in the project's `.claude/settings.local.json` (private, not checked in).
//!
//! The dialog reads `New MCP server found in this project: <name>` and offers `Use this MCP
//! server` (adds the name to `enabledMcpjsonServers`), `Use this and all future MCP servers in
//! this project` (adds it and sets `enableAllProjectMcpServers: true`) and `Continue without
//! using this MCP server` (adds it to `disabledMcpjsonServers`; the default). The other keys of
//! the file are kept (serde_json writes them sorted by name).

use std::path::Path;

use serde_json::{Map, Value};

use crate::context::settings::LOCAL_SETTINGS_FILE;
use crate::fs::{Fs, WriteFs};

/// The dialog's first line.
pub fn title(server: &str) -> String {
    format!("New MCP server found in this project: {server}")
}

/// The dialog's warning.
pub const WARNING: &str =
    "MCP servers may execute code or access system resources. All tool calls require approval.";

/// A remote server's header as its approval shows it: its name and the variables that fill it,
/// never its value (a token written in `.mcp.json`, or one a variable brings).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HeaderSource {
    pub name: String,
    /// The `${VAR}`s in the value as written (a `${VAR:-default}` too), in order.
    pub variables: Vec<String>,
}

/// The headers of a server's entry as written (`entry`: its compact JSON), by name.
pub fn headers(entry: &str) -> Vec<HeaderSource> {
    let Ok(Value::Object(e)) = serde_json::from_str::<Value>(entry) else {
        return Vec::new();
    };
    let Some(Value::Object(h)) = e.get("headers") else {
        return Vec::new();
    };
    h.iter()
        .map(|(name, v)| {
            let mut variables = Vec::new();
            let mut rest = v.as_str().unwrap_or_default();
            while let Some(i) = rest.find("${") {
                let after = &rest[i + 2..];
                let Some(close) = after.find('}') else { break };
                let inner = &after[..close];
                let var = inner.split_once(":-").map_or(inner, |(n, _)| n);
                if !var.is_empty() && !variables.iter().any(|x| x == var) {
                    variables.push(var.to_string());
                }
                rest = &after[close + 1..];
            }
            HeaderSource {
                name: name.clone(),
                variables,
            }
        })
        .collect()
}

/// What the approval says of the headers, or `None` without any: `It sends these headers with
/// every request: Authorization (filled from ${DEMO_TOKEN}), X-Team (written in the file).
/// Their values are not shown.`
pub fn headers_line(headers: &[HeaderSource]) -> Option<String> {
    if headers.is_empty() {
        return None;
    }
    let each: Vec<String> = headers
        .iter()
        .map(|h| {
            if h.variables.is_empty() {
                format!("{} (written in the file)", h.name)
            } else {
                let vars: Vec<String> = h.variables.iter().map(|v| format!("${{{v}}}")).collect();
                format!("{} (filled from {})", h.name, vars.join(", "))
            }
        })
        .collect();
    Some(format!(
        "It sends these headers with every request: {}. Their values are not shown.",
        each.join(", ")
    ))
}

/// The user's answer.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Choice {
    /// `Use this MCP server`.
    Use,
    /// `Use this and all future MCP servers in this project`.
    UseAll,
    /// `Continue without using this MCP server` (the default).
    Reject,
}

impl Choice {
    /// The dialog's words for it.
    pub fn label(self) -> &'static str {
        match self {
            Choice::Use => "Use this MCP server",
            Choice::UseAll => "Use this and all future MCP servers in this project",
            Choice::Reject => "Continue without using this MCP server",
        }
    }
}

/// The file answers are recorded in: `<cwd>/.claude/settings.local.json`.
pub fn file(cwd: &Path) -> std::path::PathBuf {
    cwd.join(".claude").join(LOCAL_SETTINGS_FILE)
}

/// Writes the answer into `<cwd>/.claude/settings.local.json`. A file that is not a JSON object
/// is not overwritten (the error says so).
pub fn record(
    fs: &dyn Fs,
    wfs: &dyn WriteFs,
    cwd: &Path,
    server: &str,
    choice: Choice,
) -> Result<(), String> {
    let dir = cwd.join(".claude");
    let file = dir.join(LOCAL_SETTINGS_FILE);
    let mut map: Map<String, Value> = match fs.read_text(&file) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(format!(
                    "{} is not a JSON object; not changed (fix it, then answer again)",
                    file.display()
                ));
            }
        },
        Err(crate::fs::ReadError::NotFound) => Map::new(),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let mut add = |key: &str| {
        let list = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(items) = list
            && !items.iter().any(|v| v.as_str() == Some(server))
        {
            items.push(Value::String(server.to_string()));
        }
    };
    match choice {
        Choice::Use => add("enabledMcpjsonServers"),
        Choice::UseAll => {
            add("enabledMcpjsonServers");
            map.insert("enableAllProjectMcpServers".into(), Value::Bool(true));
        }
        Choice::Reject => add("disabledMcpjsonServers"),
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).map_err(|e| e.to_string())?;
    text.push('\n');
    wfs.create_dir_all(&dir).map_err(|e| e.to_string())?;
    wfs.replace(&file, text.as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))
}
