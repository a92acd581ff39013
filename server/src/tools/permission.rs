//! Asking the user: the [`Asker`] seam (the editor's `chat/permission`, or the terminal) and the
//! session's remembered answers ([`Permissions`]).
//!
//! What is asked is the session's permission policy's to decide (`crate::permissions`: rules,
//! then the mode); this file is how the asking goes:
//! - an "allow for the session" answer remembers a [`Scope`]: the tool inside the workspace
//!   (`Write`, `Edit`: [`Scope::Tool`]), *exactly the same command text* for `Bash`
//!   ([`Scope::Command`], never a prefix: `git status; rm -rf ~` must not pass as `git status`),
//!   the tool on one real path outside the workspace ([`Scope::Outside`]), one MCP tool
//!   ([`Scope::Mcp`]);
//! - no session answer covers a call under an ask rule, nor a change to a file that makes
//!   programs run code (a git directory, `.gitattributes`, editor settings: `sensitive.rs`),
//!   which is asked every time with a warning saying what the file can do (the prompt offers no
//!   session answer; an `allowSession` answer counts as `allow`);
//! - a denial in a prompt is the user's rejection: the model gets the reference's text and the
//!   turn stops; no answer at all (no terminal, a client without `chat/permission`) gets the
//!   reference's `-p` text ("… but you haven't granted it yet.") and the turn goes on.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The user's answer; on the wire (`chat/permission`'s result) `"allow"`, `"allowSession"`,
/// `"deny"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// This call only.
    Allow,
    /// This call, and every later call of the same [`Scope`] in this session.
    AllowSession,
    Deny,
}

/// What the user is asked about (`chat/permission`'s `{tool, input, summary}`, plus
/// `sessionScope`; the session adds `sessionId`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub tool: String,
    /// The model's input, as it sent it.
    pub input: Value,
    /// A short human line: "Edit src/main.rs", "Bash: cargo test".
    pub summary: String,
    /// What "allow for the session" would cover, in words (for the button's label); `None` when
    /// the call can only be allowed once (a file that makes programs run code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_scope: Option<String>,
    /// What the file can make run, when it is one of those (`sensitive.rs`): shown with the
    /// prompt so the user knows what "allow" means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Why the user is asked, when a rule or the command checker says ("the ask rule
    /// Bash(npm publish:*) (~/.claude/settings.json:4)", "mkdir in '/p/d' needs approval. …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The words of each answer, when the question is not "may this call run" (an MCP server's
    /// approval): the prompt labels its choices with them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<Choices>,
    /// The `tool_use` the call answers, when the session gave it ([`super::Tools::run_call`]):
    /// a front end ties the prompt to the call it already shows (ACP's `toolCallId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// What each answer means, in the words the prompt shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Choices {
    pub allow: String,
    /// Absent: no such answer is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_session: Option<String>,
    pub deny: String,
}

/// Asks the user. An implementation that cannot ask (the client went away, the terminal is not
/// interactive) answers [`Decision::Deny`]. The call is dropped if the tool call is cancelled.
pub trait Asker: Send + Sync {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision>;

    /// The user's own answer, or `None` when nobody answered (no terminal, no client answer, an
    /// error, the time limit): a question whose answer is remembered beyond the session (an
    /// MCP server's approval) records only what a person chose.
    fn answer(&self, request: PermissionRequest) -> BoxFuture<'_, Option<Decision>> {
        Box::pin(async move { Some(self.ask(request).await) })
    }
}

/// What an "allow for the session" answer covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A tool (`Write`, `Edit`) on any path inside the workspace.
    Tool(String),
    /// Bash with exactly this command text.
    Command(String),
    /// A tool on one real path outside the workspace.
    Outside { tool: String, path: PathBuf },
    /// One MCP tool (`mcp__<server>__<tool>`), whatever its input.
    Mcp(String),
}

impl Scope {
    /// In words, for the prompt.
    pub fn describe(&self) -> String {
        match self {
            Scope::Tool(t) => format!("every {t} inside the workspace for this session"),
            Scope::Command(c) => format!("this exact command for this session: {c}"),
            Scope::Outside { tool, path } => {
                format!("{tool} on {} for this session", path.display())
            }
            Scope::Mcp(tool) => format!("every call of {tool} for this session"),
        }
    }
}

/// The answers given "for the session".
#[derive(Debug, Default)]
pub struct Permissions {
    allowed: Mutex<HashSet<Scope>>,
}

impl Permissions {
    pub fn allows(&self, scope: &Scope) -> bool {
        super::lock(&self.allowed).contains(scope)
    }

    pub fn remember(&self, scope: Scope) {
        super::lock(&self.allowed).insert(scope);
    }

    /// Forgets every session answer (the user revoked them).
    pub fn clear(&self) {
        super::lock(&self.allowed).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_and_requests_use_the_protocols_names() {
        for (wire, d) in [
            ("\"allow\"", Decision::Allow),
            ("\"allowSession\"", Decision::AllowSession),
            ("\"deny\"", Decision::Deny),
        ] {
            assert_eq!(serde_json::from_str::<Decision>(wire).unwrap(), d);
        }
        assert!(serde_json::from_str::<Decision>("\"yes\"").is_err());
        let r = PermissionRequest {
            tool: "Bash".into(),
            input: serde_json::json!({"command": "ls"}),
            summary: "Bash: ls".into(),
            session_scope: Some(Scope::Command("ls".into()).describe()),
            warning: None,
            reason: None,
            choices: None,
            tool_use_id: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["tool"], "Bash");
        assert_eq!(v["input"]["command"], "ls");
        assert_eq!(v["sessionScope"], "this exact command for this session: ls");
        assert!(v.get("warning").is_none(), "{v}");
    }
}
