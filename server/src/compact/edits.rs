//! Tier 2, API-native context editing: what to ask the Anthropic API to clear itself.
//!
//! When enabled (setting `apiContextEditing`, Anthropic provider only), every request carries
//! `clear_tool_uses_20250919` and, when thinking is on, `clear_thinking_20251015` with
//! `keep: "all"` (so the cached prefix survives). The numbers, where the spec leaves them open:
//! - `trigger`: the warning level (or the automatic threshold when lower), so the API clears
//!   before this module would have to summarise;
//! - `keep`: `keep_recent` tool uses, as masking keeps;
//! - `clear_at_least`: a tenth of the effective window: a clearing breaks the cached prefix, so
//!   it should free enough to be worth a cache write;
//! - `exclude_tools`: every tool of the request that is not compactable, as masking never
//!   clears those.
//!
//! The API reports what it applied (`applied_edits`, [`crate::llm::Event::ContextEdited`]); the
//! response's usage already counts the edited prompt, and [`super::Tally::observe`] keeps the
//! cleared amount for reports.

use super::budget::Policy;
use super::mask::is_compactable;
use crate::llm::{ClearToolUses, ContextManagement, KeepThinking, ToolSpec};

/// The edits for a request to `provider` (its [`crate::llm::Provider::name`]) with these tools,
/// or `None` when tier 2 is off or the provider is not Anthropic's.
pub fn context_management(
    policy: &Policy,
    provider: &str,
    tools: &[ToolSpec],
    thinking: bool,
) -> Option<ContextManagement> {
    if !policy.api_editing || provider != "anthropic" {
        return None;
    }
    let b = &policy.budget;
    let clear_at_least = b.effective / 10;
    Some(ContextManagement {
        thinking: thinking.then_some(KeepThinking::All),
        clear_tool_uses: Some(ClearToolUses {
            trigger_input_tokens: b.warning.min(b.auto_threshold).max(1),
            keep_tool_uses: u32::try_from(policy.keep_recent.max(1)).unwrap_or(u32::MAX),
            clear_at_least_input_tokens: (clear_at_least > 0).then_some(clear_at_least),
            exclude_tools: tools
                .iter()
                .filter(|t| !is_compactable(&t.name))
                .map(|t| t.name.clone())
                .collect(),
        }),
    })
}
