//! The tests that measure their own process, in a binary of their own: `git_threads` counts this
//! process's `git-` threads and `mcp_client` bounds its peak resident memory (`VmHWM`), which the
//! other integration tests (`tests/e2e`, run in parallel in one process) would disturb. Run with
//! `cargo test --test isolated`; a test that does not read its own process belongs in `tests/e2e`.
#![allow(clippy::disallowed_methods)] // reason: tests drive real processes.

#[path = "../git_support/mod.rs"]
mod git_support;
#[path = "../mcp_http/mod.rs"]
mod mcp_http;

mod git_threads;
mod mcp_client;
