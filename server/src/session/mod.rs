//! The chat session: a conversation with a model, built on the context the rest of this crate
//! computes, persisted as it goes, driven by the language server or the command line.
//!
//! - [`Store`] knows where transcripts live and starts ([`Store::start`]) or resumes
//!   ([`Store::resume`]) a [`Session`]; [`transcript`] is the JSONL store itself.
//! - [`Snapshot`] is what a session froze at its start (a view of [`crate::assembly`]: system
//!   prompt, instructions, git).
//! - [`Session`] holds the history and runs turns: [`Session::prepare`] writes the user's message
//!   to disk before anything else, [`Session::run`] is the turn (a task of whoever drives it).
//! - [`compose`] is pure: the user messages and the request, block by block.
//! - [`events`] is the boundary: [`ChatEvent`]s out, and the seams for tools ([`ToolRunner`])
//!   and what runs before each request ([`RequestHook`]: compaction) and after each turn
//!   ([`AfterTurn`]: memory extraction, [`memory`]).
//! - [`compaction`] is the session's side of [`crate::compact`]: the hook before each request
//!   (masking, tier 2, full compaction, the breaker) and manual runs (`compact/run`).
//! - [`config`] builds the model provider from settings and the environment.
//! - [`history`] is the history as an editor renders it (resume over LSP, load over ACP).
//! - [`runner`] is the [`ToolRunner`] over [`crate::tools`] (its driver brings the editor and
//!   the way to ask the user).
//! - [`equip`] is what every front end calls around a start or a resume: the skills and MCP
//!   servers gathered for the system prompt, then the session's tools with them; [`mcp`] runs
//!   the session's MCP servers (approval, start, `ToolSearch`, calls, stop), [`skills`] its
//!   `Skill` tool.
//! - [`sandbox`] reads Bash's sandbox settings (a repository can tighten them, never loosen).
//! - [`offline`] compacts a transcript with no session running (the command line's `compact`).
//! - [`trust`] is the session's workspace trust: the question before its first turn in a folder
//!   nobody was asked about, and the answer the MCP servers and the rules read.
//!
//! No LSP type appears here; the session's messages are [`crate::conversation`] types.
//!
//! **Architecture Invariant:** a user message is on disk (fsynced) before it is in the history,
//! hence before any request carries it; an answer is on disk before it is in the history; a
//! turn is a task of the session's driver, never a request's future.

pub mod chat;
pub mod compaction;
pub mod compose;
pub mod config;
pub mod equip;
pub mod events;
pub mod history;
pub mod hooks;
pub mod journal;
pub mod mcp;
pub mod memory;
pub mod offline;
pub mod open;
pub mod runner;
pub mod sandbox;
pub mod skills;
pub mod snapshot;
pub mod store;
pub mod subagent;
pub mod transcript;
pub mod trust;
pub mod turn;

pub use chat::{Deps, Exclusive, Outgoing, Prepared, SendError, Session, View};
pub use compose::Attached;
pub use config::{Model, ModelConfig, ProviderKind};
pub use events::{
    AfterTurn, ChatEvent, ErrorReport, Events, HookContext, HookOutcome, HookReport, Outcome,
    RequestHook, RetryInfo, TokenCount, ToolContext, ToolOutput, ToolRunner, TurnEnd, UsageReport,
};
pub use journal::Journal;
pub use runner::{SessionTools, offered_tools_tokens, tools_config};
pub use snapshot::Snapshot;
pub use store::{Resumed, Store};
pub use turn::{run_turn, runtime, turn_key};

/// The model a session uses when nothing names one.
pub use crate::assembly::DEFAULT_MODEL;
/// A user's image as the front ends hand it over (checked by `Image::from_base64`).
pub use crate::conversation::Image;
pub use crate::conversation::image::MAX_IMAGES_PER_MESSAGE;

/// Permission rules and modes as a front end names them (its flags, its mode switch, its
/// preview).
pub mod permissions {
    pub use crate::permissions::mode::CHOICES;
    pub use crate::permissions::{
        Kind, Mode, ModeSource, Notice, Options, Origin, Policy, Rule, Source, split_list,
    };
}

/// The tools' seams a front end implements or answers through (its editor, its asker), so that
/// it names the session, not the tools below it.
pub mod seams {
    pub use crate::tools::{
        Asker, BufferEdit, Choices, Decision, DiskOnly, Editor, PermissionRequest, Positions,
        apply_edits,
    };
}

#[cfg(test)]
mod tests;
