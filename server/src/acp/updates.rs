//! The session's events as ACP `session/update`s: pure functions from what the session reports
//! ([`ChatEvent`], the history's [`Entry`]s) to the protocol's types.
//!
//! - A tool call is a `tool_call` (its kind, a title, the files it names as `locations`, the
//!   model's input as `rawInput`, and for `Edit` and `Write` the change as a `diff`), then a
//!   `tool_call_update` with its status and result.
//! - `TodoWrite`'s list is also the agent's `plan`.
//! - A file attached because a touched file made it apply is a completed `read` tool call titled
//!   "rule X now applies (because of Y)", with X as its location.
//! - `session/load` replays a history with the same functions ([`replay`]), so a loaded session
//!   looks as it did live.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, Content, ContentBlock,
    ContentChunk, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    ResourceLink, SessionUpdate, ToolCall, ToolCallContent, ToolCallId, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput,
};
use serde_json::Value;

use crate::session::history::Entry;
use crate::session::skills::UserCommand;

/// The commands the agent offers (`available_commands_update`): `/compact` and `/context`, then
/// the session's skills and commands the user may type (`skills`; a name the agent's own
/// commands take is left out).
pub fn commands(skills: &[UserCommand]) -> SessionUpdate {
    let mut list = vec![
        AvailableCommand::new(
            "compact",
            "Summarise the conversation so far to free context (every message you wrote is kept)",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("what the summary should focus on (optional)"),
        )),
        AvailableCommand::new(
            "context",
            "Show what the model sees: instruction files and why they load, attachments, tokens against the window",
        ),
    ];
    for s in skills {
        if list.iter().any(|c| c.name == s.name) {
            continue;
        }
        let description = if s.description.is_empty() {
            format!("Run the skill {}", s.name)
        } else {
            s.description.clone()
        };
        list.push(
            AvailableCommand::new(s.name.clone(), description).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                    s.hint
                        .clone()
                        .unwrap_or_else(|| "arguments (optional)".into()),
                )),
            ),
        );
    }
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(list))
}

/// A piece of the answer.
pub fn message(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text.into())))
}

/// A piece of the model's thinking.
pub fn thought(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text.into())))
}

/// A piece of the user's message (replay).
pub fn user(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(text.into())))
}

/// An image the user sent (replay): the image as it was sent, or `[image]` when only its
/// placeholder was kept.
pub fn user_image(media_type: &str, data: Option<&str>) -> SessionUpdate {
    let block = match data {
        Some(d) => ContentBlock::Image(ImageContent::new(d, media_type)),
        None => ContentBlock::from(format!("[image: {media_type}]")),
    };
    SessionUpdate::UserMessageChunk(ContentChunk::new(block))
}

/// A file the user mentioned (replay).
pub fn user_mention(path: &Path) -> SessionUpdate {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::ResourceLink(
        ResourceLink::new(name, file_uri(path)),
    )))
}

/// `file://` and the path, percent-encoded where a URI needs it.
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(*b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The tool kind ACP clients show an icon for.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "Read" => ToolKind::Read,
        "Write" | "Edit" => ToolKind::Edit,
        "Glob" | "Grep" => ToolKind::Search,
        "Bash" => ToolKind::Execute,
        "TodoWrite" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A path the model wrote, absolute (relative paths start at the session's folder).
fn absolute(cwd: &Path, raw: &str) -> PathBuf {
    let p = Path::new(raw);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

fn str_field<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// The files a call names: `file_path` (with Read's `offset` as the line), a search's `path`.
fn locations(name: &str, input: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let key = match name {
        "Read" | "Write" | "Edit" => "file_path",
        "Glob" | "Grep" => "path",
        _ => return Vec::new(),
    };
    let Some(raw) = str_field(input, key) else {
        return Vec::new();
    };
    let mut loc = ToolCallLocation::new(absolute(cwd, raw));
    if name == "Read"
        && let Some(line) = input.get("offset").and_then(Value::as_u64)
    {
        loc = loc.line(u32::try_from(line).unwrap_or(u32::MAX));
    }
    vec![loc]
}

/// The change an `Edit` or `Write` asks for, as a diff (`Edit`: the replaced text and its
/// replacement; `Write`: the new file).
fn diff(name: &str, input: &Value, cwd: &Path) -> Option<ToolCallContent> {
    let path = absolute(cwd, str_field(input, "file_path")?);
    match name {
        "Edit" => {
            let old = str_field(input, "old_string")?;
            let new = str_field(input, "new_string")?;
            Some(ToolCallContent::Diff(Diff::new(path, new).old_text(old)))
        }
        "Write" => Some(ToolCallContent::Diff(Diff::new(
            path,
            str_field(input, "content")?,
        ))),
        _ => None,
    }
}

/// A new tool call, pending (its permission may still be asked).
pub fn tool_call(id: &str, name: &str, input: &Value, title: String, cwd: &Path) -> SessionUpdate {
    let mut call = ToolCall::new(ToolCallId::new(id), title)
        .kind(kind(name))
        .status(ToolCallStatus::Pending)
        .locations(locations(name, input, cwd))
        .raw_input(input.clone());
    if let Some(d) = diff(name, input, cwd) {
        call = call.content(vec![d]);
    }
    SessionUpdate::ToolCall(call)
}

/// The call runs (its permission was given).
pub fn running(id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        ToolCallId::new(id),
        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
    ))
}

/// Text in a fenced block that no backtick run inside it can close.
pub fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// A call's result: its status and the text the model got (`Edit`/`Write` keep their diff).
pub fn result(
    id: &str,
    name: Option<(&str, &Value)>,
    text: &str,
    is_error: bool,
    cwd: &Path,
) -> SessionUpdate {
    let mut content = Vec::new();
    if let Some((name, input)) = name
        && !is_error
        && let Some(d) = diff(name, input, cwd)
    {
        content.push(d);
    }
    if !text.is_empty() {
        let shown = match name.map(|(n, _)| n) {
            Some("Read" | "Bash" | "Grep" | "Glob") if !is_error => fenced(text),
            _ => text.to_string(),
        };
        content.push(ToolCallContent::Content(Content::new(ContentBlock::from(
            shown,
        ))));
    }
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        ToolCallId::new(id),
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(Value::String(text.to_string())),
    ))
}

/// `TodoWrite`'s list as the agent's plan; `None` when the input is not a list of todos.
pub fn plan(input: &Value) -> Option<SessionUpdate> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .map(|t| {
            let status = match str_field(t, "status") {
                Some("completed") => PlanEntryStatus::Completed,
                Some("in_progress") => PlanEntryStatus::InProgress,
                _ => PlanEntryStatus::Pending,
            };
            PlanEntry::new(
                str_field(t, "content").unwrap_or_default(),
                PlanEntryPriority::Medium,
                status,
            )
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

/// "rule X now applies (because of Y)": a completed `read` call with X as its location.
pub fn attachment(id: &str, path: &Path, trigger: Option<&Path>, root: &Path) -> SessionUpdate {
    let shown = |p: &Path| {
        p.strip_prefix(root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let what = if path
        .file_name()
        .is_some_and(|n| n == "CLAUDE.md" || n == "AGENTS.md")
    {
        "instructions"
    } else {
        "rule"
    };
    let title = match trigger {
        Some(t) => format!(
            "{what} {} now applies (because of {})",
            shown(path),
            shown(t)
        ),
        None => format!("{what} {} applies", shown(path)),
    };
    SessionUpdate::ToolCall(
        ToolCall::new(ToolCallId::new(id), title)
            .kind(ToolKind::Read)
            .status(ToolCallStatus::Completed)
            .locations(vec![ToolCallLocation::new(path)]),
    )
}

/// A note from the agent that is not part of the answer (a compaction): a completed call.
pub fn note(id: &str, title: String, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCall(
        ToolCall::new(ToolCallId::new(id), title)
            .kind(ToolKind::Other)
            .status(status),
    )
}

/// What a hook did (`ChatEvent::Hook`): a call of kind `other` titled with the event and the
/// outcome, its text as content; failed when it stopped something (a denied call, a blocked
/// compaction) or the hook failed.
pub fn hook(id: &str, r: &crate::session::HookReport) -> SessionUpdate {
    let status = match r.outcome.as_str() {
        "denied" | "blocked" | "error" | "timeout" => ToolCallStatus::Failed,
        _ => ToolCallStatus::Completed,
    };
    let mut text = r.text.clone();
    if let Some(c) = &r.command {
        text = format!("{text}\n\n(hook: {c})");
    }
    SessionUpdate::ToolCall(
        ToolCall::new(
            ToolCallId::new(id),
            format!("{} hook: {}", r.event, r.outcome),
        )
        .kind(ToolKind::Other)
        .status(status)
        .content(vec![ToolCallContent::Content(Content::new(
            ContentBlock::from(text),
        ))]),
    )
}

/// The same note, finished.
pub fn note_done(id: &str, status: ToolCallStatus, title: Option<String>) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        ToolCallId::new(id),
        ToolCallUpdateFields::new().status(status).title(title),
    ))
}

/// A history as updates, in order: what `session/load` streams before it answers.
/// `describe` titles a tool call as it was titled live.
pub fn replay(
    entries: &[Entry],
    root: &Path,
    describe: &dyn Fn(&str, &Value) -> String,
) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    let mut attached = 0usize;
    let mut plan_input: Option<&Value> = None;
    for e in entries {
        match e {
            Entry::User(t) => out.push(user(t.clone())),
            Entry::Mention(p) => out.push(user_mention(p)),
            Entry::Image { media_type, data } => out.push(user_image(media_type, data.as_deref())),
            Entry::Attachment(p) => {
                attached += 1;
                out.push(attachment(&format!("attach-{attached}"), p, None, root));
            }
            Entry::Assistant(t) => out.push(message(t.clone())),
            Entry::Thinking(t) => out.push(thought(t.clone())),
            Entry::ToolUse { id, name, input } => {
                calls.insert(id, (name, input));
                out.push(tool_call(id, name, input, describe(name, input), root));
            }
            Entry::ToolResult {
                tool_use_id,
                text,
                is_error,
                cleared,
            } => {
                let call = calls.get(tool_use_id.as_str()).copied();
                if let Some(("TodoWrite", input)) = call
                    && !is_error
                {
                    plan_input = Some(input);
                }
                let text = if *cleared {
                    "(this result was cleared from the conversation to save context)"
                } else {
                    text
                };
                out.push(result(tool_use_id, call, text, *is_error, root));
            }
            Entry::Summary(_) => out.push(note(
                &format!("summary-{}", out.len()),
                "Earlier messages were summarised (every message you wrote is kept)".into(),
                ToolCallStatus::Completed,
            )),
            Entry::Interrupted => out.push(message("\n\n[interrupted]\n")),
        }
    }
    if let Some(p) = plan_input.and_then(plan) {
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(u: &SessionUpdate) -> Value {
        serde_json::to_value(u).unwrap()
    }

    #[test]
    fn an_edit_is_an_edit_call_with_its_diff_and_location() {
        let input = json!({"file_path": "src/a.ts", "old_string": "let", "new_string": "const"});
        let v = wire(&tool_call(
            "t1",
            "Edit",
            &input,
            "Edit src/a.ts".into(),
            Path::new("/w"),
        ));
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["toolCallId"], "t1");
        assert_eq!(v["kind"], "edit");
        // Pending is the protocol's default: left out on the wire.
        assert!(v.get("status").is_none_or(|s| s == "pending"), "{v}");
        assert_eq!(v["title"], "Edit src/a.ts");
        assert_eq!(v["locations"], json!([{"path": "/w/src/a.ts"}]));
        assert_eq!(
            v["content"],
            json!([{"type": "diff", "path": "/w/src/a.ts", "oldText": "let", "newText": "const"}])
        );
        assert_eq!(v["rawInput"], input);
        let done = wire(&result(
            "t1",
            Some(("Edit", &input)),
            "Edited.",
            false,
            Path::new("/w"),
        ));
        assert_eq!(done["sessionUpdate"], "tool_call_update");
        assert_eq!(done["status"], "completed");
        assert_eq!(done["content"][0]["type"], "diff");
        assert_eq!(done["content"][1]["content"]["text"], "Edited.");
    }

    #[test]
    fn kinds_plans_and_attachments() {
        for (name, k) in [
            ("Read", "read"),
            ("Glob", "search"),
            ("Grep", "search"),
            ("Bash", "execute"),
            ("TodoWrite", "think"),
            ("Skill", "other"),
        ] {
            assert_eq!(serde_json::to_value(kind(name)).unwrap(), k, "{name}");
        }
        let p = plan(&json!({"todos": [
            {"content": "a", "status": "completed", "activeForm": "A"},
            {"content": "b", "status": "in_progress", "activeForm": "B"},
            {"content": "c", "status": "pending", "activeForm": "C"}]}))
        .unwrap();
        let v = wire(&p);
        assert_eq!(v["sessionUpdate"], "plan");
        let statuses: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);
        assert!(plan(&json!({"todos": 3})).is_none());
        let a = wire(&attachment(
            "attach-1",
            Path::new("/w/.claude/rules/ts.md"),
            Some(Path::new("/w/src/a.ts")),
            Path::new("/w"),
        ));
        assert_eq!(
            a["title"],
            "rule .claude/rules/ts.md now applies (because of src/a.ts)"
        );
        assert_eq!(a["kind"], "read");
        assert_eq!(a["status"], "completed");
    }

    #[test]
    fn fences_outlast_the_text() {
        assert_eq!(fenced("a"), "```\na\n```");
        assert_eq!(fenced("x ```` y\n"), "`````\nx ```` y\n`````");
        assert_eq!(file_uri(Path::new("/w/a b#.md")), "file:///w/a%20b%23.md");
    }

    #[test]
    fn a_replay_shows_the_calls_with_their_results_and_the_last_plan() {
        let todo = json!({"todos": [{"content": "x", "status": "pending", "activeForm": "X"}]});
        let entries = [
            Entry::User("go".into()),
            Entry::ToolUse {
                id: "t1".into(),
                name: "TodoWrite".into(),
                input: todo.clone(),
            },
            Entry::ToolResult {
                tool_use_id: "t1".into(),
                text: "ok".into(),
                is_error: false,
                cleared: false,
            },
            Entry::Assistant("done".into()),
        ];
        let got: Vec<Value> = replay(&entries, Path::new("/w"), &|n, _| n.to_string())
            .iter()
            .map(wire)
            .collect();
        let kinds: Vec<&str> = got
            .iter()
            .map(|v| v["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk",
                "plan"
            ]
        );
        assert_eq!(got[0]["content"]["text"], "go");
        assert_eq!(got[2]["status"], "completed");
    }
}
