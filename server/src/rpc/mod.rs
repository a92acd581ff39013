//! JSON-RPC 2.0 as both editor front ends speak it (the language server, `lsp/`, and the Agent
//! Client Protocol agent, `acp/`): the messages ([`jsonrpc`]), the classification of one incoming
//! message ([`classify`]), and the one ordered, bounded outbound queue with requests to the client
//! ([`outbox`]). Each front end frames the stream its own way (LSP's `Content-Length` headers,
//! ACP's one message per line) and owns its main loop; what is here knows neither protocol's
//! methods. [`local`] is the user-only socket on which a one-shot command asks a running server
//! (either front end) for what it keeps current.

mod classify;
pub mod jsonrpc;
pub mod local;
pub mod outbox;

pub use classify::{Incoming, classify};
