//! The command line: `preview`, `check`, `chat`, `trust`, `lsp`. Takes the [`Host`](crate::host::Host) `main`
//! read once, and renders core results for a terminal or as JSON.

pub mod chat;
pub mod check;
pub mod compact;
pub mod output;
pub mod preview;
pub mod trust;
pub mod warm;

pub use crate::features::format::{display_path, escape_text, quote_name};
