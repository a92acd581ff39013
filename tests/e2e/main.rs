//! The integration tests, one binary (`cargo test --test e2e`): one module per subject, as
//! ruff's and rust-analyzer's are. A test binary links the whole crate and its dependencies, so
//! one binary is one link per edit instead of one per file; the shared parts (the LSP client
//! [`harness`], the fake Anthropic API [`fake_anthropic`], git repositories [`git_support`], MCP
//! servers over HTTP [`mcp_http`], the chat fixture [`support::chat`]) are compiled once.
//!
//! Run one module or one test by its path: `cargo test --test e2e chat_tools::`,
//! `cargo test --test e2e tools::write_never_replaces_a_binary_file_unseen -- --exact`.
//! A new test file: `tests/e2e/NAME.rs` (a `//!` doc first), one `mod NAME;` line below; it
//! reaches the shared parts as `crate::harness`, `crate::fake_anthropic`, `crate::support::chat`.
//!
//! Two other targets: `isolated` (tests that measure their own process: its threads, its peak
//! memory) and `schemas` (`UPDATE_SCHEMAS=1 cargo test --test schemas` regenerates `schemas/`).
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary and git, with their own environment.

#[path = "../fake_anthropic/mod.rs"]
mod fake_anthropic;
#[path = "../git_support/mod.rs"]
mod git_support;
#[path = "../harness/mod.rs"]
mod harness;
#[path = "../harness/inproc.rs"]
mod inproc;
#[path = "../mcp_http/mod.rs"]
mod mcp_http;
mod support;

mod acp_e2e;
mod chat_agents;
mod chat_e2e;
mod chat_hooks;
mod chat_mcp;
mod chat_permissions;
mod chat_skills;
mod chat_styles_plugins;
mod chat_tools;
mod cli;
mod compact;
mod compact_e2e;
mod compact_props;
mod conformance;
mod editor_sync;
mod git_differential;
mod git_states;
mod hostile;
mod layers;
mod llm_client;
mod lsp_e2e;
mod memory_e2e;
mod tidy;
mod tools;
mod transcripts;
mod warm;
