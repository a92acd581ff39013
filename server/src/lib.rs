//! claude-context: Claude Code's context engine as a library.
//!
//! Layers (arrows point at what a layer may use):
//! `cli, lsp → features → context, memory, git → fs`.
//! Only `lsp` knows LSP types; `context` does no IO except through [`fs::Fs`].

pub mod cli;
pub mod compact;
pub mod context;
pub mod conversation;
pub mod features;
pub mod fs;
pub mod git;
pub mod llm;
pub mod lsp;
pub mod memory;
pub mod session;
