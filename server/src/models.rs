//! The models claude-context knows: the default model and, per model, the context window and the
//! characters per token the reference CLI budgets its skill listing with.
//!
//! Every figure follows the reference CLI (Claude Code 2.1.328), as measured in
//! `../shared/spec/skills-mcp.md`:
//!
//! * The default model is `claude-opus-5-5`: it is the model of every capture there ("default
//!   model `claude-opus-5-5`", the header of the spec), sent when no `--model` was given.
//! * `claude-opus-5-5` has a 1,000,000-token window and 3 characters per token: the listing
//!   budget (`window × characters per token × 0.01`) measured 30,000 characters (29,965 fit, 202
//!   more did not, s3/many200) and 15,000 with a fraction of 0.005 (s3/fraction005). Only
//!   1,000,000 × 3 gives 3,000,000; section 9 of the spec says the model "behaves as if it had
//!   1,000,000".
//! * `claude-sonnet-4-5` has 200,000 tokens and 4 characters per token: its budget measured 8,000
//!   (s3/sonnet), 200,000 × 4 × 0.01.
//!
//! Other ids get 200,000 tokens (1,000,000 with the `[1m]` suffix, as `compact::budget` always
//! did) and 4 characters per token; neither was measured for them.

/// The model of a session, a preview and the environment section when nothing names one.
pub const DEFAULT_MODEL: &str = "claude-opus-5-5";

/// The window of a model nothing is known about.
pub const FALLBACK_WINDOW: u64 = 200_000;
/// The window of a model id with the `[1m]` suffix.
pub const LARGE_WINDOW: u64 = 1_000_000;
/// Characters per token of a model nothing is known about.
pub const FALLBACK_CHARS_PER_TOKEN: u32 = 4;

/// What is known of one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The id as the API knows it; a dated id (`claude-sonnet-4-5-20250929`) is the same model.
    pub id: &'static str,
    /// The context window, in tokens.
    pub window: u64,
    /// Characters per token, for the skill listing's budget.
    pub chars_per_token: u32,
}

/// The models whose figures were measured on the reference CLI.
pub const KNOWN: [Facts; 2] = [
    Facts {
        id: "claude-opus-5-5",
        window: 1_000_000,
        chars_per_token: 3,
    },
    Facts {
        id: "claude-sonnet-4-5",
        window: 200_000,
        chars_per_token: 4,
    },
];

/// The measured facts of `id`, if it is a known model (or a dated form of one).
pub fn known(id: &str) -> Option<Facts> {
    let base = id.strip_suffix("[1m]").unwrap_or(id);
    KNOWN.iter().copied().find(|f| {
        base == f.id
            || base.strip_prefix(f.id).is_some_and(|rest| {
                rest.starts_with('-') && rest[1..].bytes().all(|b| b.is_ascii_digit())
            })
    })
}

/// The context window of `id`: the known model's, else 1,000,000 for a `[1m]` id, else 200,000.
pub fn window(id: &str) -> u64 {
    if id.to_ascii_lowercase().ends_with("[1m]") {
        return LARGE_WINDOW;
    }
    known(id).map_or(FALLBACK_WINDOW, |f| f.window)
}

/// Does the reference CLI send `id` its environment message as a `role: "system"` message (the
/// layout measured on `claude-opus-5-5`), rather than as `<system-reminder>` blocks of the user
/// messages (measured on `claude-sonnet-4-5`)? Hooks' texts follow the layout
/// (`hooks-agents-styles.md` section 1): ours puts the environment message's parts into the
/// system prompt's environment section and a later `system` message's into one
/// `<system-reminder>` block; the other models get one `<system-reminder>` block per text. Only
/// the measured model and its dated forms use the first; every other model (older ones, other
/// providers') the second, which any Messages API reads.
pub fn environment_message(id: &str) -> bool {
    known(id).is_some_and(|f| f.id == DEFAULT_MODEL)
}

/// Characters per token of `id` for the skill listing budget.
pub fn chars_per_token(id: &str) -> u32 {
    known(id).map_or(FALLBACK_CHARS_PER_TOKEN, |f| f.chars_per_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_and_the_measured_figures() {
        assert_eq!(DEFAULT_MODEL, "claude-opus-5-5");
        assert_eq!(window(DEFAULT_MODEL), 1_000_000);
        assert_eq!(chars_per_token(DEFAULT_MODEL), 3);
        assert_eq!(window("claude-sonnet-4-5"), 200_000);
        assert_eq!(chars_per_token("claude-sonnet-4-5"), 4);
        // The measured budgets: 30,000 and 8,000 characters at a fraction of 0.01.
        let budget = |m: &str| window(m) * u64::from(chars_per_token(m)) / 100;
        assert_eq!(budget(DEFAULT_MODEL), 30_000);
        assert_eq!(budget("claude-sonnet-4-5"), 8_000);
    }

    #[test]
    fn dated_suffixed_and_unknown_ids() {
        assert_eq!(window("claude-sonnet-4-5-20250929"), 200_000);
        assert_eq!(window("claude-sonnet-4-5[1m]"), 1_000_000);
        assert_eq!(window("claude-sonnet-4-5x"), FALLBACK_WINDOW);
        assert_eq!(window("local-llama"), FALLBACK_WINDOW);
        assert_eq!(chars_per_token("local-llama"), 4);
    }
}
