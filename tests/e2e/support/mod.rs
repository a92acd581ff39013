//! Fixtures shared by the modules of `tests/e2e` (the LSP client itself is `tests/harness`,
//! shared with the benches).

pub mod chat;
