//! The chat session.
//!
//! For now: its [`transcript`] store (JSONL, append-only, fsynced; resume; listing, ours and
//! the reference CLI's). The turn loop, request assembly from the context core and the LSP
//! methods build on it and on [`crate::llm`] in the next step.
//!
//! The session's messages are [`crate::conversation`] types, which sit below `llm` and
//! `compact` so both can work on them; this module adds what only a session has (a transcript,
//! an id, a project).

pub mod transcript;
