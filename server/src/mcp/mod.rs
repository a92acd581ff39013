//! MCP servers: where they are configured and whether they may start ([`config`]), the texts
//! they add to the model's context ([`texts`]), the client that runs them ([`client`], on the
//! official Rust SDK `rmcp`; remote ones over [`http`] or [`sse`]), the user's approval
//! ([`approval`]), the servers an editor offers for a session ([`offered`]) and what the last
//! connection learnt ([`cache`]). `../shared/spec/skills-mcp.md` sections 6 to 8.
//!
//! A server's **status** ([`Status`]) decides what it adds to the environment message
//! ([`parts`]): a connected server its tool names in the deferred-tools list (and the three
//! resource tools when it declares `resources`) and its instructions; a failed one a line of the
//! failed note; one still connecting a line of the connecting note; a server not approved,
//! disabled, or never connected nothing.
//!
//! Only [`client`] starts processes; nothing else here does IO but through [`crate::fs::Fs`].

pub mod approval;
pub mod cache;
pub mod client;
pub mod config;
pub mod http;
pub mod offered;
pub mod search;
pub mod sse;
pub mod texts;

use client::Listing;
pub use config::{Approval, Config, Scope, Server, Transport};

/// Where a server stands for one session (or preview).
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// A project server the user has not approved: not started.
    NotApproved,
    /// A project server of a folder nobody was asked to trust yet: not started before the
    /// answer, whatever any file says.
    WaitingForTrust,
    /// A project server of a folder its user does not trust: never started.
    NotTrusted,
    /// Rejected by `disabledMcpjsonServers` (in this file): never started.
    Disabled(std::path::PathBuf),
    /// Approved, but claude-context cannot start it (a `ws` server, an invalid entry).
    Unsupported(String),
    /// Approved and not connected yet (a preview: never connected, its tools unknown).
    Approved,
    /// Approved; the last connection's listing (a preview that did not start it), of this date.
    Cached { date: String },
    /// Starting.
    Connecting,
    /// Connected.
    Running,
    /// Failed to connect: the failed note's code and message.
    Failed { code: String, message: String },
}

impl Status {
    /// The word the preview shows.
    pub fn label(&self) -> &'static str {
        match self {
            Status::NotApproved => "not approved",
            Status::WaitingForTrust => "waiting for trust",
            Status::NotTrusted => "not trusted",
            Status::Disabled(_) => "disabled",
            Status::Unsupported(_) => "unsupported",
            Status::Approved => "approved",
            Status::Cached { .. } => "approved",
            Status::Connecting => "connecting",
            Status::Running => "running",
            Status::Failed { .. } => "failed",
        }
    }
}

/// One server, its status and what it listed (when known).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerState {
    pub server: Server,
    pub status: Status,
    pub listing: Option<Listing>,
}

impl ServerState {
    /// The tools this server offers the model, by their full names.
    pub fn tool_names(&self) -> Vec<String> {
        self.listing
            .iter()
            .flat_map(|l| l.tools.iter())
            .map(|t| texts::tool_name(&self.server.name, &t.name))
            .collect()
    }

    /// Connected, or assumed connected from the cache: its tools and instructions count.
    pub fn counts(&self) -> bool {
        matches!(self.status, Status::Running | Status::Cached { .. }) && self.listing.is_some()
    }

    /// Characters its names add to the deferred list (a newline each).
    pub fn names_chars(&self) -> usize {
        if !self.counts() {
            return 0;
        }
        self.tool_names().iter().map(|n| n.len() + 1).sum()
    }

    /// Characters of its `## <name>\n<instructions>` block (and the two newlines before it).
    pub fn instructions_chars(&self) -> usize {
        match self
            .listing
            .as_ref()
            .and_then(|l| l.instructions.as_deref())
        {
            Some(i) if self.counts() && !i.is_empty() => {
                self.server.name.len() + 4 + texts::cap(i).len() + 2
            }
            _ => 0,
        }
    }

    /// Bytes of its tools' definitions once loaded (compact JSON, with `defer_loading`).
    pub fn definitions_bytes(&self) -> usize {
        self.listing
            .iter()
            .flat_map(|l| l.tools.iter())
            .map(|t| {
                texts::definition_json(
                    &texts::tool_name(&self.server.name, &t.name),
                    &t.description,
                    &t.input_schema,
                )
                .len()
            })
            .sum()
    }
}

/// What the servers add to the environment message, each part or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// The deferred-tools list (MCP names and resource tools).
    pub deferred: Option<String>,
    /// The note on servers that failed to connect.
    pub failed: Option<String>,
    /// The note on servers still connecting.
    pub connecting: Option<String>,
    /// The `# MCP Server Instructions` section.
    pub instructions: Option<String>,
}

impl Parts {
    /// In the environment message's order: deferred list, failed, connecting (the instructions
    /// come later, after the agent types).
    pub fn before_instructions(&self) -> impl Iterator<Item = &str> {
        [&self.deferred, &self.failed, &self.connecting]
            .into_iter()
            .filter_map(|p| p.as_deref())
    }

    /// Every part's characters.
    pub fn chars(&self) -> usize {
        [
            &self.deferred,
            &self.failed,
            &self.connecting,
            &self.instructions,
        ]
        .into_iter()
        .filter_map(|p| p.as_ref())
        .map(String::len)
        .sum()
    }
}

/// The parts of the environment message for these servers. `extra_deferred` are other deferred
/// tool names (none in claude-context today).
pub fn parts(states: &[ServerState], extra_deferred: &[String]) -> Parts {
    parts_with(states, extra_deferred, true)
}

/// The parts a claude-context chat session sends: [`parts`] without the three resource tools,
/// which our sessions do not have (the model is never offered a tool it cannot call).
pub fn session_parts(states: &[ServerState]) -> Parts {
    parts_with(states, &[], false)
}

fn parts_with(states: &[ServerState], extra_deferred: &[String], resource_tools: bool) -> Parts {
    let mut names: Vec<String> = extra_deferred.to_vec();
    let mut resources = false;
    let mut failed = Vec::new();
    let mut connecting = Vec::new();
    let mut instructions = Vec::new();
    for s in states {
        match &s.status {
            Status::Failed { code, message } => failed.push(texts::Failure {
                server: s.server.name.clone(),
                code: code.clone(),
                message: message.clone(),
                remote: s.server.transport.is_remote(),
            }),
            Status::Connecting => connecting.push(s.server.name.clone()),
            _ if s.counts() => {
                names.extend(s.tool_names());
                let l = s.listing.as_ref().expect("counts() has a listing");
                resources |= l.resources;
                if let Some(i) = &l.instructions {
                    instructions.push((s.server.name.clone(), i.clone()));
                }
            }
            _ => {}
        }
    }
    if resources && resource_tools {
        names.extend(texts::RESOURCE_TOOLS.iter().map(|t| t.to_string()));
    }
    Parts {
        deferred: texts::deferred_list(&names),
        failed: texts::failed_note(&failed),
        connecting: texts::connecting_note(&connecting),
        instructions: texts::instructions_section(&instructions),
    }
}

#[cfg(test)]
mod tests;
