//! Hostile trees and abusive input (quality R7, issue 8): no hang, no blow-up, no escape.
//!
//! Every test builds a real tree in a temp dir and runs the real binary on it (the CLI, or the
//! language server over stdio) under a watchdog, asserting what a user would notice: it ends,
//! within a time and memory bound; nothing else is lost; what was refused or cut is said in
//! words a person can act on; and what reaches the terminal cannot drive it.
//!
//! - [`r7`]: the original R7 trees (symlink loops, 1 GB files, FIFOs, `/dev/zero`, unreadable
//!   directories, invalid UTF-8, cycles, broken frontmatter, a 5 MB line) and fuzz regressions.
//! - [`names`]: file names with escape sequences and newlines are quoted as `git status` quotes
//!   them in the table, in `check` and in hovers; a path that is not UTF-8 survives `--json`.
//! - [`memory_dir`]: the memory directory is judged on its normalised absolute form.
//! - [`fifo_race`]: a CLAUDE.md swapped between a file and a FIFO never blocks a read.
//! - [`scaling`]: tens of thousands of rules, deep working directories, half a million includes,
//!   huge globs: linear time, bounded memory, caps that become findings.
//! - [`messages`]: findings a user can act on (token costs, YAML errors, long lists).
//!
//! Bounds are generous for a loaded 2-core machine and a debug build ([`tree::time_budget`])
//! and still far below what the quadratic code took. `HOSTILE_BIN=path` runs the suite against
//! another build; `scripts/hostile-trees.py` measures the full-size trees for the figures.
//!
//! Run the suite against an older build with `HOSTILE_BIN=path` to see a test fail on the code
//! before its fix.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use crate::harness as lsp;

mod fifo_race;
mod memory_dir;
mod messages;
mod names;
mod r7;
mod scaling;
mod tree;
