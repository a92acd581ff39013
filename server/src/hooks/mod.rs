//! Hooks: the commands Claude Code users configure in their settings to run at points of a
//! session, as Claude Code 2.1.328 runs them (`../shared/spec/hooks-agents-styles.md` sections
//! 1–8 and 13–15).
//!
//! - [`config`]: the hooks of every source (managed, user, project and local settings; a
//!   plugin's hooks come as [`Source::Plugin`]), the switches `disableAllHooks` and
//!   `allowManagedHooksOnly`, the selection of one event's hooks (matchers, identical commands
//!   once) and what `check` says about them.
//! - [`matcher`]: which hooks of an event apply: exact names, `|` lists, regexes, `*`.
//! - [`input`]: the JSON a hook reads on its standard input, key for key.
//! - [`run`]: the runner: the hooks of one event at the same time, each a shell command built as
//!   the Bash tool builds its own (`tools::shell_command`: `/bin/sh -c`, the reaper and the
//!   sandbox Bash runs in), without any key variable, bounded in time and output (scrubbed of
//!   the key), cancelled with its turn; results in the order the hooks finish.
//! - [`outcome`]: what the runs mean for each event: the texts the model gets and the decisions,
//!   byte for byte as measured; [`persist`] is the 10,000-character cap.
//!
//! Nothing here knows the session: settings become hooks, hooks runs, runs decisions and texts.
//! `session::hooks` decides when each event fires and where its texts land.
//!
//! **Architecture Invariant:** a hook runs only in a folder its user trusts, user hooks included
//! (the callers, `session::hooks` and `features::hooks`, ask the session's one trust answer:
//! the trust module's answer, asked by the session); the hooks of a session are read once, when it starts (a hook the model writes
//! into `.claude/settings.json` during a session does not run in it).

pub mod config;
pub mod input;
pub mod matcher;
pub mod outcome;
pub mod persist;
pub mod run;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use config::{Config, Entry, Hook, Source, Status};
pub use matcher::Matcher;
pub use run::{End, Ran, Runner};

/// A point of a session where hooks run (the settings' key under `hooks`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Event {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    Notification,
    Stop,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    SessionEnd,
}

impl Event {
    /// Every event Claude Code knows, in the order of a session.
    pub const ALL: [Event; 13] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PermissionRequest,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::Notification,
        Event::Stop,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::PreCompact,
        Event::PostCompact,
        Event::SessionEnd,
    ];

    /// The name settings use.
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::Notification => "Notification",
            Event::Stop => "Stop",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::PreCompact => "PreCompact",
            Event::PostCompact => "PostCompact",
            Event::SessionEnd => "SessionEnd",
        }
    }

    /// The event a settings key names (case-sensitive, as Claude Code reads it).
    pub fn parse(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == name)
    }

    /// What a matcher of this event is matched against: the tool's name, the session start's
    /// source, the compaction's trigger, the notification's type, the subagent's type, the
    /// session end's reason. `None`: the event has no matcher (every hook of it runs).
    pub fn matches_on(self) -> Option<&'static str> {
        match self {
            Event::PreToolUse
            | Event::PostToolUse
            | Event::PostToolUseFailure
            | Event::PermissionRequest => Some("tool name"),
            Event::SessionStart => Some("source"),
            Event::PreCompact | Event::PostCompact => Some("trigger"),
            Event::Notification => Some("notification type"),
            Event::SubagentStart | Event::SubagentStop => Some("agent type"),
            Event::SessionEnd => Some("reason"),
            Event::UserPromptSubmit | Event::Stop => None,
        }
    }

    /// Does claude-context run this event's hooks? `PostToolUseFailure` is known (so `check`
    /// does not call it unknown) but not run: its effects were never measured. `SubagentStart`
    /// and `SubagentStop` run around the `Agent` tool's subagents (`session::subagent`).
    pub fn runs_here(self) -> bool {
        !matches!(self, Event::PostToolUseFailure)
    }

    /// Where the text of this event's hooks lands, in words (the preview's column).
    pub fn lands(self) -> &'static str {
        match self {
            Event::SessionStart => {
                "the environment message, first (after a compaction: after the model line); nothing on resume"
            }
            Event::UserPromptSubmit => {
                "the environment message, last before the date (first prompt); after the prompt (later ones); exit 2 or a block stops the prompt"
            }
            Event::PreToolUse => {
                "after the tool result (additionalContext); deny, ask or exit 2 replace the result"
            }
            Event::PermissionRequest => "decides a permission prompt; a deny message is the result",
            Event::PostToolUse => {
                "after the tool result (additionalContext, a block, exit 2); plain output nowhere"
            }
            Event::PostToolUseFailure => "not run by claude-context",
            Event::Notification => "nowhere (runs when a permission prompt waits)",
            Event::Stop => "a block or exit 2 makes the model continue, with the feedback",
            Event::SubagentStart => "the subagent's environment message",
            Event::SubagentStop => {
                "nowhere: its output is not sent (a block does not make the subagent continue in claude-context)"
            }
            Event::PreCompact => "the compaction's output; exit 2 stops the compaction",
            Event::PostCompact => "the compaction's output",
            Event::SessionEnd => "nowhere",
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_round_trip_and_are_case_sensitive() {
        for e in Event::ALL {
            assert_eq!(Event::parse(e.name()), Some(e));
            assert_eq!(serde_json::to_value(e).unwrap(), e.name());
        }
        assert_eq!(Event::parse("pretooluse"), None);
        assert_eq!(Event::parse("PreToolUse "), None);
    }
}
