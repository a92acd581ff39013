//! The model's input, parsed: one typed struct per tool, and a clear message for anything else
//! (an unknown tool, an input that is not an object or not JSON at all, a missing field, a wrong
//! type, a field the tool does not have). The message names the field and lists what the tool
//! takes, from the same schema the model was sent.

use serde::Deserialize;
use serde_json::Value;

use super::paths::Workspace;
use super::schema;
use super::todo::Todo;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    pub file_path: String,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteInput {
    pub file_path: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditInput {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobInput {
    pub pattern: String,
    pub path: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    #[serde(default)]
    pub output_mode: OutputMode,
    #[serde(rename = "-i", default)]
    pub case_insensitive: bool,
    #[serde(rename = "-n")]
    pub line_numbers: Option<bool>,
    #[serde(rename = "-A")]
    pub after: Option<u32>,
    #[serde(rename = "-B")]
    pub before: Option<u32>,
    #[serde(rename = "-C")]
    pub context: Option<u32>,
    #[serde(default)]
    pub multiline: bool,
    pub head_limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashInput {
    pub command: String,
    /// Milliseconds.
    pub timeout: Option<u64>,
    #[allow(dead_code)] // reason: shown to the user through `describe`, not used to run.
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoWriteInput {
    pub todos: Vec<Todo>,
}

/// A parsed call.
#[derive(Debug)]
pub(crate) enum Call {
    Read(ReadInput),
    Write(WriteInput),
    Edit(EditInput),
    Glob(GlobInput),
    Grep(GrepInput),
    Bash(BashInput),
    TodoWrite(TodoWriteInput),
}

/// Parses a call, or says clearly what is wrong with it.
pub(crate) fn parse(name: &str, input: &Value) -> Result<Call, String> {
    let Some(def) = schema::find(name) else {
        let names: Vec<&str> = schema::NAMES.to_vec();
        return Err(format!(
            "There is no tool named `{name}`. The tools are: {}.",
            names.join(", ")
        ));
    };
    match input {
        Value::Object(_) => {}
        Value::String(_) => {
            return Err(format!(
                "The input for {name} was not valid JSON (the call may have been cut off). \
                 Nothing was run; send the call again with a complete JSON object."
            ));
        }
        other => {
            return Err(format!(
                "The input for {name} must be a JSON object, not {}. It takes: {}.",
                kind(other),
                schema::fields(&def)
            ));
        }
    }
    fn typed<T: for<'de> Deserialize<'de>>(name: &str, input: &Value) -> Result<T, String> {
        serde_path_to_error::deserialize(input).map_err(|e| {
            let at = e.path().to_string();
            let inner = e.into_inner().to_string();
            let fields = schema::find(name)
                .map(|d| schema::fields(&d))
                .unwrap_or_default();
            if at == "." || at.is_empty() {
                format!("Invalid input for {name}: {inner}. It takes: {fields}.")
            } else {
                format!("Invalid input for {name} at `{at}`: {inner}. It takes: {fields}.")
            }
        })
    }
    Ok(match name {
        "Read" => Call::Read(typed(name, input)?),
        "Write" => Call::Write(typed(name, input)?),
        "Edit" => Call::Edit(typed(name, input)?),
        "Glob" => Call::Glob(typed(name, input)?),
        "Grep" => Call::Grep(typed(name, input)?),
        "Bash" => Call::Bash(typed(name, input)?),
        "TodoWrite" => Call::TodoWrite(typed(name, input)?),
        _ => return Err(format!("There is no tool named `{name}`.")),
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short line for a call: the tool and its main argument (a path relative to the first folder
/// when inside it). Never fails.
pub(crate) fn describe(name: &str, input: &Value, ws: &Workspace) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let path = |k: &str| {
        s(k).map(|p| {
            let abs = ws.absolute(std::path::Path::new(p));
            match (abs, ws.primary()) {
                (Some(abs), Some(root)) => abs
                    .strip_prefix(root)
                    .ok()
                    .filter(|r| !r.as_os_str().is_empty())
                    .map_or_else(|| p.to_string(), |r| r.display().to_string()),
                _ => p.to_string(),
            }
        })
    };
    let one_line = |t: &str| {
        let first = t.lines().next().unwrap_or("");
        let mut out: String = first.chars().take(120).collect();
        if out.len() < t.len() {
            out.push('…');
        }
        out
    };
    match name {
        "Read" | "Write" | "Edit" => match path("file_path") {
            Some(p) => format!("{name} {p}"),
            None => name.to_string(),
        },
        "Glob" | "Grep" => match (s("pattern"), path("path")) {
            (Some(pat), Some(p)) => format!("{name} {pat} in {p}"),
            (Some(pat), None) => format!("{name} {pat}"),
            _ => name.to_string(),
        },
        "Bash" => match s("command") {
            Some(c) => format!("Bash: {}", one_line(c)),
            None => name.to_string(),
        },
        "TodoWrite" => match input.get("todos").and_then(Value::as_array) {
            Some(t) => format!("TodoWrite ({} items)", t.len()),
            None => name.to_string(),
        },
        _ => name.to_string(),
    }
}
