//! claude-context: Claude Code's context engine as a library.
//!
//! Layers (arrows point at what a layer may use):
//! `cli, lsp, acp → features → assembly → context, memory, git → fs, host, log, scrub, tasks`.
//! Only `lsp` knows LSP types, only `acp` ACP's; `context` does no IO except through [`fs::Fs`] and reads no
//! environment variable (the [`host`] seam does, once).

pub mod acp;
pub mod agents;
pub mod assembly;
pub mod cli;
pub mod compact;
pub mod context;
pub mod conversation;
pub mod extensions;
pub mod features;
pub mod fs;
pub mod git;
pub mod hooks;
pub mod host;
pub mod js;
pub mod llm;
pub mod log;
pub mod lsp;
pub mod mcp;
pub mod memory;
pub mod models;
pub mod permissions;
pub mod plugins;
pub mod rpc;
pub mod scrub;
pub mod session;
pub mod skills;
pub mod styles;
pub mod tasks;
pub mod tools;
pub mod trust;
