//! Editor- and terminal-facing features as plain data in, plain data out.
//!
//! The CLI and the LSP layer both call these; neither LSP nor terminal types appear here.

pub mod check;
pub mod completion;
pub mod diagnostics;
pub mod files;
pub mod format;
pub mod hooks;
pub mod hover;
pub mod lens;
pub mod links;
pub mod permissions;
pub mod preview;
pub mod settings;
pub mod start_preview;
pub mod trust;
pub mod warm;
pub mod workspace;
