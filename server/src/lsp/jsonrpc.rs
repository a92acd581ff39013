//! The JSON-RPC 2.0 messages the server reads and writes: shared with the ACP front end, they
//! live in [`crate::rpc::jsonrpc`]; this name keeps the language server's paths.

pub use crate::rpc::jsonrpc::*;
