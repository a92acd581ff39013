//! The extractive summary: the same nine sections written from the records alone, without a
//! model. Used when no model is configured (and by `claude-context compact` offline); being
//! deterministic, it also makes tests exact.
//!
//! What it can take from the records: every user message verbatim (section 6), the files read
//! or changed by tool calls (3), the errors tool results reported (4), the pending items of the
//! latest todo list (7), the last answer as the current work (8), the latest request as the next
//! step (9). What needs understanding (concepts, problem solving) it says it cannot give.

use std::collections::BTreeMap;

use serde_json::Value;

use super::summary::SECTIONS;
use crate::conversation::{Block, Message, Role, ToolUse};

/// The longest excerpt of an error kept in section 4, in bytes.
const ERROR_EXCERPT: usize = 600;
/// The longest quote of a request in sections 1 and 9, in bytes (section 6 has them whole).
const REQUEST_EXCERPT: usize = 1_200;

/// One item of a todo list (the `TodoWrite` tool's input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// The latest todo list written with `TodoWrite` in the history, if any.
pub fn latest_todos(history: &[Message]) -> Option<Vec<Todo>> {
    let call = history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_uses().collect::<Vec<_>>().into_iter().rev())
        .find(|t| t.name == "TodoWrite")?;
    let items = call.input.get("todos")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|t| {
                Some(Todo {
                    content: t.get("content")?.as_str()?.to_string(),
                    status: t
                        .get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("pending")
                        .to_string(),
                })
            })
            .collect(),
    )
}

/// A todo list as text: one `- [status] item` line each.
pub fn render_todos(todos: &[Todo]) -> String {
    todos
        .iter()
        .map(|t| format!("- [{}] {}", t.status.replace('_', " "), t.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The path a file tool call names, if it is one.
pub fn file_of(call: &ToolUse) -> Option<&str> {
    let key = match call.name.as_str() {
        "Read" | "Edit" | "Write" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return None,
    };
    call.input.get(key)?.as_str().filter(|p| !p.is_empty())
}

/// The nine sections. `required` are the user messages section 6 must hold (earlier ones
/// first); `focus` is the user's focus hint, recorded at the top.
pub fn summarise(history: &[Message], required: &[String], focus: Option<&str>) -> String {
    let mut s = String::new();
    let mut section = |n: usize, body: &str| {
        if n > 1 {
            s.push('\n');
        }
        s.push_str(&format!("{n}. {}:\n", SECTIONS[n - 1]));
        let body = body.trim_end();
        if body.is_empty() {
            s.push_str("   (none)\n");
        } else {
            s.push_str(body);
            s.push('\n');
        }
    };

    let authored: Vec<String> = history.iter().filter_map(Message::authored_text).collect();
    let first = required.first().or(authored.first());
    let latest = authored.last().or(required.last());

    // 1.
    let mut intent = String::new();
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        intent.push_str(&format!("   Focus asked for when compacting: {f}\n"));
    }
    if let Some(first) = first {
        intent.push_str(&format!(
            "   First request: {}\n",
            excerpt(first, REQUEST_EXCERPT)
        ));
    }
    if let Some(latest) = latest.filter(|l| Some(*l) != first) {
        intent.push_str(&format!(
            "   Latest request: {}\n",
            excerpt(latest, REQUEST_EXCERPT)
        ));
    }
    section(1, &intent);

    // 2.
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    let calls: Vec<&ToolUse> = history
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(Message::tool_uses)
        .collect();
    for c in &calls {
        *tools.entry(c.name.as_str()).or_default() += 1;
    }
    let mut concepts = String::from(
        "   (Written from the records without a model: concepts and reasoning are in the transcript.)\n",
    );
    if !tools.is_empty() {
        let used: Vec<String> = tools.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
        concepts.push_str(&format!("   Tools used: {}\n", used.join(", ")));
    }
    section(2, &concepts);

    // 3. Files, in the order first touched, with what was done to each.
    let mut files: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in &calls {
        let Some(path) = file_of(c) else { continue };
        let what = match c.name.as_str() {
            "Read" => "read",
            "Write" => "written",
            _ => "edited",
        };
        match files.iter_mut().find(|(p, _)| *p == path) {
            Some((_, ops)) if !ops.contains(&what) => ops.push(what),
            Some(_) => {}
            None => files.push((path, vec![what])),
        }
    }
    let files_text: String = files
        .iter()
        .map(|(p, ops)| format!("   - {p} ({})\n", ops.join(", ")))
        .collect();
    section(3, &files_text);

    // 4. Errors reported by tool results.
    let mut errors = String::new();
    for m in history.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            let Block::ToolResult(r) = b else { continue };
            if !r.is_error {
                continue;
            }
            let call = calls.iter().find(|c| c.id == r.tool_use_id);
            let what = call.map_or_else(|| "a tool".to_string(), |c| describe(c));
            let text = if r.cleared {
                "(its output was cleared earlier)".to_string()
            } else {
                excerpt(r.text().trim(), ERROR_EXCERPT)
            };
            errors.push_str(&format!("   - {what}: {}\n", indent(&text)));
        }
    }
    section(4, &errors);

    // 5.
    section(
        5,
        "   (Not available without a model; the transcript has every step.)\n",
    );

    // 6. Every user message, verbatim.
    let all: String = required
        .iter()
        .filter(|m| !m.trim().is_empty())
        .map(|m| format!("   - {}\n", m.trim()))
        .collect();
    section(6, &all);

    // 7.
    let pending = latest_todos(history)
        .map(|todos| {
            todos
                .iter()
                .filter(|t| t.status != "completed")
                .map(|t| format!("   - [{}] {}\n", t.status.replace('_', " "), t.content))
                .collect::<String>()
        })
        .unwrap_or_default();
    section(7, &pending);

    // 8. The last answer.
    let current = history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(|m| {
            let mut t = m.text();
            let calls: Vec<String> = m.tool_uses().map(describe).collect();
            if !calls.is_empty() {
                if !t.is_empty() {
                    t.push('\n');
                }
                t.push_str(&format!("(then called: {})", calls.join("; ")));
            }
            t
        })
        .unwrap_or_default();
    section(
        8,
        &if current.trim().is_empty() {
            String::new()
        } else {
            format!("   {}\n", indent(current.trim()))
        },
    );

    // 9.
    section(
        9,
        &latest
            .map(|l| {
                format!(
                    "   Go on with the latest request: {}\n",
                    excerpt(l, REQUEST_EXCERPT)
                )
            })
            .unwrap_or_default(),
    );
    s
}

/// A call in a few words: the tool and its main argument.
fn describe(c: &ToolUse) -> String {
    let arg = file_of(c)
        .map(str::to_string)
        .or_else(|| {
            ["command", "pattern", "url", "query", "path"]
                .iter()
                .find_map(|k| c.input.get(*k).and_then(Value::as_str))
                .map(|s| excerpt(s, 120))
        })
        .unwrap_or_default();
    if arg.is_empty() {
        c.name.clone()
    } else {
        format!("{} {arg}", c.name)
    }
}

/// The first `max` bytes of `text` (at a character boundary), with `…` when cut.
fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Continuation lines indented under a list item.
fn indent(text: &str) -> String {
    text.replace('\n', "\n     ")
}
