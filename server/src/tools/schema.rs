//! The tools as the model sees them: name, description and JSON Schema of the input, in our
//! own words, as data the request builder sends in the API's `tools` field
//! (`{"name", "description", "input_schema"}`). The input parser (`input.rs`) accepts exactly
//! these fields; a test checks each schema against the JSON Schema meta-schema and against the
//! parser.

use serde::Serialize;
use serde_json::{Value, json};

/// One tool's definition, serialised as the Messages API's `tools` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// The tool names, in the order they are offered.
pub(crate) const NAMES: [&str; 7] = ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"];

/// Every tool, in a stable order (a changed order would break the prompt cache).
pub fn definitions() -> Vec<ToolDefinition> {
    NAMES.iter().filter_map(|n| find(n)).collect()
}

pub(crate) fn find(name: &str) -> Option<ToolDefinition> {
    let (name, description, input_schema) = match name {
        "Read" => ("Read", READ, read_schema()),
        "Write" => ("Write", WRITE, write_schema()),
        "Edit" => ("Edit", EDIT, edit_schema()),
        "Glob" => ("Glob", GLOB, glob_schema()),
        "Grep" => ("Grep", GREP, grep_schema()),
        "Bash" => ("Bash", BASH, bash_schema()),
        "TodoWrite" => ("TodoWrite", TODO, todo_schema()),
        _ => return None,
    };
    Some(ToolDefinition {
        name,
        description,
        input_schema,
    })
}

/// "file_path (string, required), offset (integer)": the fields of a tool, for error messages.
pub(crate) fn fields(def: &ToolDefinition) -> String {
    let required: Vec<&str> = def.input_schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    def.input_schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| {
                    let ty = v["type"].as_str().unwrap_or("value");
                    if required.contains(&k.as_str()) {
                        format!("{k} ({ty}, required)")
                    } else {
                        format!("{k} ({ty})")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

const READ: &str = "Reads a text file and returns it with line numbers (the line number, a tab, then \
the line, as `cat -n` prints). Give an absolute path (a relative one is taken from the first \
workspace folder). By default up to 2000 lines from the start; for longer files pass `offset` (the \
first line to show, counting from 1) and `limit` (how many lines). Lines longer than 2000 characters \
are cut, and very large outputs are cut with a note saying where to continue. If the file is open in \
the editor, you get the editor's current text, including unsaved changes. Images, PDFs and other \
binary files are refused. To list a directory use Glob or Bash instead. Read files before you edit \
them.";

const WRITE: &str = "Writes a file, creating it (and its missing parent directories) or replacing all of \
its content. Prefer Edit for changing part of an existing file; Read an existing file before \
replacing it. If the file is open in the editor, the new text goes into the editor's buffer (the \
user saves it). Needs the user's permission. Paths must be inside the workspace folders.";

const EDIT: &str = "Replaces text in a file: `old_string` must occur exactly once in the file (copy it \
exactly from a Read, with its indentation, without the line-number prefix), and is replaced by \
`new_string`. Include enough surrounding lines to make `old_string` unique, or set `replace_all` to \
replace every occurrence (for renaming, say). Fails without changing anything if `old_string` is not \
found, occurs more than once without `replace_all`, or equals `new_string`. If the file is open in \
the editor, the change goes into the editor's buffer, with undo. Needs the user's permission.";

const GLOB: &str = "Finds files whose path matches a glob pattern, such as `**/*.rs` or \
`src/**/test_*.py`. The pattern is matched against paths relative to the search directory: `*` \
stays within one directory, `**` crosses directories, `{a,b}` gives alternatives, so `*.rs` only \
matches files directly in it. Searches `path` (a directory; the first workspace folder by default), \
skips what .gitignore ignores, and returns absolute paths, most recently modified first, at most \
100.";

const GREP: &str = "Searches file contents with a regular expression (Rust regex syntax, as ripgrep: \
escape literal braces and parentheses, e.g. `fn main\\(`). Searches `path` (a file or directory; the \
first workspace folder by default), skipping what .gitignore ignores and binary files. Narrow with \
`glob` (e.g. `*.ts`, `src/**/*.rs`) or `type` (ripgrep file types: `rust`, `py`, `js`, ...). \
`output_mode`: `files_with_matches` (default: the paths, most recently modified first), `content` \
(matching lines as `path:line:text`, with `-A`/`-B`/`-C` lines of context and `-n` for line \
numbers, on by default), or `count` (matches per file). `-i` ignores case; `multiline` lets a \
pattern span lines (`.` then matches newlines). Output is capped; `head_limit` caps it further.";

const BASH: &str = "Runs a shell command with bash in the first workspace folder and returns its output \
(standard output and standard error together, in order) and exit status. Each call starts a fresh \
shell: `cd` and variables do not carry over, and processes left running in the background are \
stopped when the command ends. The user is asked before every command. Default time limit 2 \
minutes, at most 10 (`timeout`, in milliseconds); the command and everything it started are killed \
when it passes. Long output keeps its beginning and its end. Prefer Read, Grep, Glob and Edit to \
cat, grep, find and sed. Give a short `description` of what the command does, for the user.";

const TODO: &str = "Replaces the session's todo list, a plan the user sees. Use it for work with \
several steps: write the steps as `pending`, mark one `in_progress` before starting it, and \
`completed` as soon as it is done. Send the whole list every time.";

fn read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to read."},
            "offset": {"type": "integer", "minimum": 1, "description": "The first line to return, counting from 1."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to return (default 2000)."}
        },
        "required": ["file_path"],
        "additionalProperties": false
    })
}

fn write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to write."},
            "content": {"type": "string", "description": "The file's whole new content."}
        },
        "required": ["file_path", "content"],
        "additionalProperties": false
    })
}

fn edit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute path of the file to change."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place (different from old_string)."},
            "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence instead of requiring exactly one."}
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": false
    })
}

fn glob_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The glob, relative to the search directory, e.g. `**/*.md`."},
            "path": {"type": "string", "description": "The directory to search (default: the first workspace folder)."}
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

fn grep_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The regular expression to search for."},
            "path": {"type": "string", "description": "A file or directory to search (default: the first workspace folder)."},
            "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. `*.js` or `src/**/*.{ts,tsx}`."},
            "type": {"type": "string", "description": "Only files of this ripgrep type, e.g. `rust`, `py`, `js`."},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to return (default `files_with_matches`)."},
            "-i": {"type": "boolean", "description": "Ignore case."},
            "-n": {"type": "boolean", "description": "Show line numbers in `content` mode (default true)."},
            "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (`content` mode)."},
            "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (`content` mode)."},
            "-C": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (`content` mode)."},
            "multiline": {"type": "boolean", "description": "Let the pattern match across lines."},
            "head_limit": {"type": "integer", "minimum": 1, "description": "Return at most this many lines or paths."}
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

fn bash_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run with bash."},
            "timeout": {"type": "integer", "minimum": 1, "maximum": 600_000, "description": "Time limit in milliseconds (default 120000, at most 600000)."},
            "description": {"type": "string", "description": "What the command does, in a few words, for the user."}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

fn todo_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole list, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1, "description": "The step, in the imperative (\"Run the tests\")."},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        "activeForm": {"type": "string", "description": "The step while it runs (\"Running the tests\")."}
                    },
                    "required": ["content", "status"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["todos"],
        "additionalProperties": false
    })
}
