//! Budgets (compaction.md section 1): the window and the levels derived from it, with the
//! settings and the environment's overrides resolved into one [`Policy`].
//!
//! - `window`: the model's context window, from the provider's metadata when it has one, else
//!   the known model's ([`crate::models`]), else 200,000 (1,000,000 for a `[1m]` model id). A setting or `CLAUDE_CODE_AUTO_COMPACT_WINDOW`
//!   overrides it; a window the provider reported is an upper bound the override cannot raise.
//! - `reserved = min(max_output_tokens, 20,000)`, `effective = window - reserved`.
//! - `auto_threshold = effective - 13,000`, lowered to `effective * P / 100` by
//!   `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P` (1–100) when that is smaller.
//! - `warning = effective - 20,000`, `blocking = effective - 3,000`.
//!
//! The environment wins over a setting (the environment is the more deliberate, per-launch
//! choice). A value that is not understood is ignored with a [`Note`]; nothing here fails.

use serde::{Deserialize, Serialize};

/// The window when nothing says otherwise.
pub const DEFAULT_WINDOW: u64 = 200_000;
/// The window of a 1M-context model.
pub const LARGE_WINDOW: u64 = 1_000_000;
/// The most kept back for the summary itself.
pub const MAX_RESERVED: u64 = 20_000;
/// `auto_threshold = effective - AUTO_MARGIN`.
pub const AUTO_MARGIN: u64 = 13_000;
/// `warning = effective - WARNING_MARGIN`.
pub const WARNING_MARGIN: u64 = 20_000;
/// `blocking = effective - BLOCKING_MARGIN`.
pub const BLOCKING_MARGIN: u64 = 3_000;

/// The environment's variables.
pub const WINDOW_VARIABLE: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
pub const PERCENT_VARIABLE: &str = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
pub const DISABLE_VARIABLE: &str = "DISABLE_AUTO_COMPACT";

/// Results of masking kept whole, by default.
pub const DEFAULT_KEEP_RECENT: usize = 5;
/// Minutes since the last answer after which old results are masked before sending.
pub const DEFAULT_GAP_MINUTES: u64 = 60;

/// The levels of a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub window: u64,
    pub reserved: u64,
    pub effective: u64,
    pub auto_threshold: u64,
    pub warning: u64,
    pub blocking: u64,
}

/// Where a count stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Level {
    Normal,
    /// Above `warning`: clients show a warning.
    Warning,
    /// Above `auto_threshold`: compaction is due.
    Compact,
    /// Above `blocking`: no request is sent; compact first.
    Blocked,
}

impl Budget {
    /// The levels of a window for a model answering with at most `max_output_tokens`, the
    /// automatic threshold lowered to `percent` of the effective window when given and smaller.
    pub fn new(window: u64, max_output_tokens: u64, percent: Option<u8>) -> Budget {
        let reserved = max_output_tokens.min(MAX_RESERVED);
        let effective = window.saturating_sub(reserved);
        let mut auto_threshold = effective.saturating_sub(AUTO_MARGIN);
        if let Some(p) = percent.filter(|p| (1..=100).contains(p)) {
            auto_threshold = auto_threshold.min(effective * u64::from(p) / 100);
        }
        Budget {
            window,
            reserved,
            effective,
            auto_threshold,
            warning: effective.saturating_sub(WARNING_MARGIN),
            blocking: effective.saturating_sub(BLOCKING_MARGIN),
        }
    }

    /// Where `count` stands ("passes" a level means strictly above it).
    pub fn level(&self, count: u64) -> Level {
        if count > self.blocking {
            Level::Blocked
        } else if count > self.auto_threshold {
            Level::Compact
        } else if count > self.warning {
            Level::Warning
        } else {
            Level::Normal
        }
    }
}

/// The window of a model by its id, when its provider says nothing: the reference CLI's figure
/// for a known model ([`crate::models`]: 1,000,000 for `claude-opus-5-5`), else 1,000,000 for a
/// `[1m]` id, else 200,000.
pub fn default_window(model_id: &str) -> u64 {
    if model_id.to_ascii_lowercase().contains("[1m]") {
        LARGE_WINDOW
    } else {
        crate::models::window(model_id)
    }
}

/// The `compaction` settings, as data.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// The context window to compact for (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`).
    pub window: Option<u64>,
    /// Compact automatically at this percentage of the effective window when that is lower
    /// than the default threshold (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`).
    pub auto_compact_percent: Option<u8>,
    /// `false` turns automatic full compaction off (`DISABLE_AUTO_COMPACT=1`).
    pub auto_compact: Option<bool>,
    /// Results of compactable tools kept whole by masking (at least 1; default 5).
    pub keep_recent: Option<usize>,
    /// Mask old results before sending when the last answer is older than this (default 60).
    pub gap_minutes: Option<u64>,
    /// Let the Anthropic API clear old tool results itself (context editing). Default off.
    pub api_context_editing: Option<bool>,
}

/// The environment's overrides, as the raw values the caller read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    pub window: Option<String>,
    pub percent: Option<String>,
    pub disable: Option<String>,
}

impl Overrides {
    /// Reads the three variables through `get` (the caller's environment seam).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Overrides {
        Overrides {
            window: get(WINDOW_VARIABLE),
            percent: get(PERCENT_VARIABLE),
            disable: get(DISABLE_VARIABLE),
        }
    }
}

/// What the session knows of its model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo<'a> {
    pub id: &'a str,
    /// The context window from the provider's model metadata, when it has one.
    pub window: Option<u64>,
    /// The `max_tokens` of the session's requests.
    pub max_output_tokens: u64,
}

/// A value that was not understood and what was done instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// The variable or setting.
    pub source: String,
    pub message: String,
}

/// Everything compaction decides with, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub budget: Budget,
    /// Automatic full compaction (tier 3) is on. Masking runs regardless.
    pub auto: bool,
    /// At least 1.
    pub keep_recent: usize,
    pub gap_minutes: u64,
    /// Tier 2 is wanted (applies to the Anthropic provider only).
    pub api_editing: bool,
}

impl Policy {
    /// Resolves the policy: environment over settings over the model's metadata over defaults.
    pub fn resolve(
        model: ModelInfo<'_>,
        settings: &Settings,
        env: &Overrides,
    ) -> (Policy, Vec<Note>) {
        let mut notes = Vec::new();
        let mut note = |source: &str, message: String| {
            notes.push(Note {
                source: source.to_string(),
                message,
            })
        };

        let env_window = env.window.as_deref().and_then(|v| {
            let parsed = v.trim().parse::<u64>().ok().filter(|&n| n > 0);
            if parsed.is_none() {
                note(
                    WINDOW_VARIABLE,
                    format!("`{v}` is not a positive number of tokens; ignored"),
                );
            }
            parsed
        });
        let setting_window = settings.window.filter(|&n| {
            if n == 0 {
                note("compaction.window", "0 is not a window; ignored".into());
            }
            n > 0
        });
        let base = model.window.unwrap_or_else(|| default_window(model.id));
        let window = match env_window.or(setting_window) {
            Some(w) => match model.window {
                Some(known) if w > known => {
                    note(
                        if env_window.is_some() {
                            WINDOW_VARIABLE
                        } else {
                            "compaction.window"
                        },
                        format!("{w} is larger than the model's window ({known}); using {known}"),
                    );
                    known
                }
                _ => w,
            },
            None => base,
        };

        let env_percent = env.percent.as_deref().and_then(|v| {
            let parsed = v
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| (1..=100).contains(p));
            if parsed.is_none() {
                note(
                    PERCENT_VARIABLE,
                    format!("`{v}` is not a percentage from 1 to 100; ignored"),
                );
            }
            parsed
        });
        let setting_percent = settings.auto_compact_percent.filter(|p| {
            let ok = (1..=100).contains(p);
            if !ok {
                note(
                    "compaction.autoCompactPercent",
                    format!("{p} is not a percentage from 1 to 100; ignored"),
                );
            }
            ok
        });
        let percent = env_percent.or(setting_percent);

        let env_disabled =
            env.disable
                .as_deref()
                .and_then(|v| match v.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => Some(true),
                    "" | "0" | "false" | "no" | "off" => Some(false),
                    _ => {
                        note(
                            DISABLE_VARIABLE,
                            format!("`{v}` is neither 1 nor 0; automatic compaction stays on"),
                        );
                        None
                    }
                });
        let auto = match env_disabled {
            Some(disabled) => !disabled,
            None => settings.auto_compact.unwrap_or(true),
        };

        let keep_recent = match settings.keep_recent {
            Some(0) => {
                note(
                    "compaction.keepRecent",
                    "0 would clear every result and leave no working context; keeping 1".into(),
                );
                1
            }
            Some(n) => n,
            None => DEFAULT_KEEP_RECENT,
        };

        let budget = Budget::new(window, model.max_output_tokens, percent);
        if budget.effective == 0 || budget.auto_threshold == 0 {
            note(
                "compaction.window",
                format!(
                    "a window of {window} leaves no room once {} tokens are kept for the answer; every request compacts first",
                    budget.reserved
                ),
            );
        }
        (
            Policy {
                budget,
                auto,
                keep_recent,
                gap_minutes: settings.gap_minutes.unwrap_or(DEFAULT_GAP_MINUTES),
                api_editing: settings.api_context_editing.unwrap_or(false),
            },
            notes,
        )
    }
}
