//! What a hook reads on its standard input: one line of compact JSON, with the keys in the order
//! Claude Code writes them (`hooks-agents-styles.md` section 2). Structs serialise their fields
//! in declaration order, so the order here is the order on the wire whatever `serde_json`'s
//! map type.
//!
//! Common keys: `session_id`, `transcript_path`, `cwd`, then `prompt_id` (every event but
//! `SessionStart` with `startup` or `resume`), then the event's own keys ([`Fields`]).
//! `permission_mode` is the session's mode (`default` until modes exist) and `effort` is
//! `{"level":"medium"}` as the reference sends it; ours has no effort setting.

use serde::Serialize;
use serde_json::Value;

/// The common part of every hook's input.
#[derive(Clone, Debug, Serialize)]
pub struct Common<'a> {
    pub session_id: &'a str,
    /// The session's transcript (ours: the JSONL file this session writes).
    pub transcript_path: &'a str,
    pub cwd: &'a str,
    /// The user prompt this run belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<&'a str>,
}

/// The whole input: the common keys, then the event's.
#[derive(Clone, Debug, Serialize)]
pub struct Input<'a> {
    #[serde(flatten)]
    pub common: Common<'a>,
    #[serde(flatten)]
    pub fields: Fields<'a>,
}

impl Input<'_> {
    /// One line of compact JSON, without the newline (the hook reads to the end of input).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// `{"level":"medium"}`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Effort {
    pub level: &'static str,
}

pub const EFFORT: Effort = Effort { level: "medium" };

/// The keys of a subagent's tool call (`agent_id`, `agent_type`), after `permission_mode`.
#[derive(Clone, Debug, Serialize)]
pub struct Agent<'a> {
    pub agent_id: &'a str,
    pub agent_type: &'a str,
}

/// Each event's keys, in order.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Fields<'a> {
    SessionStart {
        hook_event_name: &'static str,
        /// `startup`, `resume`, `compact`.
        source: &'a str,
        /// With `source: "compact"` only.
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<&'a str>,
    },
    UserPromptSubmit {
        permission_mode: &'a str,
        hook_event_name: &'static str,
        prompt: &'a str,
    },
    PreToolUse {
        permission_mode: &'a str,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent<'a>>,
        effort: Effort,
        hook_event_name: &'static str,
        tool_name: &'a str,
        tool_input: &'a Value,
        tool_use_id: &'a str,
    },
    PostToolUse {
        permission_mode: &'a str,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent<'a>>,
        effort: Effort,
        hook_event_name: &'static str,
        tool_name: &'a str,
        tool_input: &'a Value,
        tool_response: &'a Value,
        tool_use_id: &'a str,
        duration_ms: u64,
    },
    PermissionRequest {
        permission_mode: &'a str,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent<'a>>,
        effort: Effort,
        hook_event_name: &'static str,
        tool_name: &'a str,
        tool_input: &'a Value,
        permission_suggestions: &'a Value,
    },
    Stop {
        permission_mode: &'a str,
        effort: Effort,
        hook_event_name: &'static str,
        stop_hook_active: bool,
        last_assistant_message: &'a str,
        background_tasks: &'a Value,
        session_crons: &'a Value,
    },
    SubagentStart {
        agent_id: &'a str,
        agent_type: &'a str,
        hook_event_name: &'static str,
    },
    SubagentStop {
        permission_mode: &'a str,
        agent_id: &'a str,
        agent_type: &'a str,
        effort: Effort,
        hook_event_name: &'static str,
        stop_hook_active: bool,
        agent_transcript_path: &'a str,
        last_assistant_message: &'a str,
        background_tasks: &'a Value,
        session_crons: &'a Value,
    },
    PreCompact {
        hook_event_name: &'static str,
        /// `manual` or `auto`.
        trigger: &'a str,
        /// The focus given to the compaction, or `null`.
        custom_instructions: Option<&'a str>,
    },
    PostCompact {
        hook_event_name: &'static str,
        trigger: &'a str,
        compact_summary: &'a str,
    },
    Notification {
        hook_event_name: &'static str,
        message: &'a str,
        notification_type: &'a str,
    },
    SessionEnd {
        hook_event_name: &'static str,
        reason: &'a str,
    },
}

/// An empty JSON list (`background_tasks`, `session_crons`, `permission_suggestions`).
pub fn empty_list() -> &'static Value {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Value::Array(Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(prompt_id: Option<&'static str>) -> Common<'static> {
        Common {
            session_id: "s1",
            transcript_path: "/t/s1.jsonl",
            cwd: "/repo",
            prompt_id,
        }
    }

    fn keys(input: &Input<'_>) -> Vec<String> {
        let text = String::from_utf8(input.to_bytes()).unwrap();
        assert!(!text.contains('\n'), "one line: {text}");
        // The order as written (a parse into a map could reorder them).
        let mut out = Vec::new();
        let mut depth = 0;
        let mut in_str = false;
        let mut esc = false;
        let mut start = None;
        for (i, c) in text.char_indices() {
            if in_str {
                if esc {
                    esc = false;
                } else if c == '\\' {
                    esc = true;
                } else if c == '"' {
                    in_str = false;
                    if depth == 1
                        && let Some(s) = start.take()
                        && text[i + 1..].starts_with(':')
                    {
                        out.push(text[s..i].to_string());
                    }
                }
                continue;
            }
            match c {
                '{' | '[' => depth += 1,
                '}' | ']' => depth -= 1,
                '"' => {
                    in_str = true;
                    start = Some(i + 1);
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn the_keys_come_in_the_measured_order() {
        let input = serde_json::json!({"command": "ls"});
        let response = serde_json::json!({"stdout": "x"});
        let pre = Input {
            common: common(Some("p1")),
            fields: Fields::PreToolUse {
                permission_mode: "default",
                agent: None,
                effort: EFFORT,
                hook_event_name: "PreToolUse",
                tool_name: "Bash",
                tool_input: &input,
                tool_use_id: "toolu_1",
            },
        };
        assert_eq!(
            keys(&pre),
            [
                "session_id",
                "transcript_path",
                "cwd",
                "prompt_id",
                "permission_mode",
                "effort",
                "hook_event_name",
                "tool_name",
                "tool_input",
                "tool_use_id"
            ]
        );
        assert!(
            String::from_utf8(pre.to_bytes())
                .unwrap()
                .contains(r#""effort":{"level":"medium"}"#)
        );
        let post = Input {
            common: common(Some("p1")),
            fields: Fields::PostToolUse {
                permission_mode: "default",
                agent: Some(Agent {
                    agent_id: "a1",
                    agent_type: "reviewer",
                }),
                effort: EFFORT,
                hook_event_name: "PostToolUse",
                tool_name: "Bash",
                tool_input: &input,
                tool_response: &response,
                tool_use_id: "toolu_1",
                duration_ms: 12,
            },
        };
        assert_eq!(
            keys(&post)[4..],
            [
                "permission_mode",
                "agent_id",
                "agent_type",
                "effort",
                "hook_event_name",
                "tool_name",
                "tool_input",
                "tool_response",
                "tool_use_id",
                "duration_ms"
            ]
        );
        let start = Input {
            common: common(None),
            fields: Fields::SessionStart {
                hook_event_name: "SessionStart",
                source: "startup",
                model: None,
            },
        };
        assert_eq!(
            keys(&start),
            [
                "session_id",
                "transcript_path",
                "cwd",
                "hook_event_name",
                "source"
            ]
        );
        let compact = Input {
            common: common(None),
            fields: Fields::PreCompact {
                hook_event_name: "PreCompact",
                trigger: "manual",
                custom_instructions: None,
            },
        };
        assert!(
            String::from_utf8(compact.to_bytes())
                .unwrap()
                .ends_with(r#""trigger":"manual","custom_instructions":null}"#)
        );
    }
}
