//! Compaction: keeping a conversation inside the model's window without ever losing a user
//! message (`../shared/spec/compaction.md`).
//!
//! Pure logic over [`conversation`](crate::conversation) messages, with the model behind
//! [`llm::Provider`](crate::llm::Provider). No IO, no clock reading for decisions, no
//! environment: the session passes the time, the environment's values and what to re-inject,
//! and it applies and records what this module decides. The tiers, gentlest first:
//!
//! 1. **Masking** ([`mask`]): the content of old results of compactable tools becomes
//!    `[Old tool result content cleared]`; the newest `keep_recent` are kept. A [`MaskPlan`]
//!    names the tool calls and the tokens freed; the session writes it to the transcript
//!    (`microcompact`) and applies it with [`MaskPlan::apply`], the function replay uses too.
//! 2. **API-native editing** ([`edits`]): `context_management` for the Anthropic API, and the
//!    `applied_edits` it reports folded into the count ([`Tally::observe`]).
//! 3. **Full compaction** ([`full`]): a summary in nine sections whose section 6 is checked to
//!    hold every user message verbatim (missing ones are appended), and a new history built
//!    from it; [`extractive`] writes the same nine sections without a model.
//!
//! [`Compactor`] holds what a session keeps between requests (count, circuit breaker, the user
//! messages the last summary preserves) and offers the decision before each request
//! ([`Compactor::before_request`]) and the manual entry ([`Compactor::run`], with dry runs).
//!
//! Budgets ([`budget`]) follow the spec's formulas from the model's window, the maximum output,
//! settings ([`Settings`]) and the environment's overrides ([`Overrides`]), taken as data.

pub mod breaker;
pub mod budget;
pub mod edits;
pub mod extractive;
pub mod full;
pub mod mask;
pub mod run;
pub mod summary;
pub mod tokens;

pub use breaker::Breaker;
pub use budget::{Budget, Level, ModelInfo, Note, Overrides, Policy, Settings};
pub use full::{Compacted, Failure, FailureKind, Inputs, ModelSpec, Reinject, Summariser, Trigger};
pub use mask::{Cleared, MaskPlan, MaskTrigger};
pub use run::{Change, Compactor, Decision, Mode, Ran, Report, Run, RunRequest, Turn};
pub use tokens::Tally;

#[cfg(test)]
mod tests;
