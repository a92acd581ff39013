//! `TodoWrite`: the model's plan for the session, kept by [`super::Tools`] (the session persists
//! and shows it). The model sends the whole list each time; it replaces the previous one.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::ToolOutcome;
use super::input::TodoWriteInput;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One step of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(
        rename = "activeForm",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub active_form: Option<String>,
}

pub(crate) fn run(list: &Mutex<Vec<Todo>>, input: TodoWriteInput) -> ToolOutcome {
    if let Some(i) = input.todos.iter().position(|t| t.content.trim().is_empty()) {
        return ToolOutcome::error(
            format!(
                "Todo {} has an empty `content`; the list was not changed.",
                i + 1
            ),
            "invalid todo list",
        );
    }
    let count = |s| input.todos.iter().filter(|t| t.status == s).count();
    let (pending, running, done) = (
        count(TodoStatus::Pending),
        count(TodoStatus::InProgress),
        count(TodoStatus::Completed),
    );
    let n = input.todos.len();
    *super::lock(list) = input.todos;
    let summary = format!("{n} todos: {done} done, {running} in progress, {pending} pending");
    let mut text = format!(
        "The todo list is updated ({summary}). Keep it current as you work: one step in progress \
         at a time, marked completed as soon as it is done."
    );
    if running > 1 {
        text.push_str(&format!(
            " Note: {running} steps are in progress at once; finish one before starting the next."
        ));
    }
    ToolOutcome::ok(text, summary)
}
