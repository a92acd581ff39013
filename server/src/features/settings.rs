//! The editor settings (`claudeContext` section): their defaults, their schema, and parsing that
//! names the offending field.
//!
//! Settings reach the server through `initializationOptions` and `workspace/configuration`
//! (section `claudeContext`) and apply without a restart. Unknown keys are ignored so that newer
//! clients can talk to older servers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Every setting of the `claudeContext` section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// How open editor files take part in the context.
    pub rules: RulesSettings,
    /// The git snapshot block of previews.
    pub git: GitSettings,
    /// Diagnostics on instruction files.
    pub diagnostics: DiagnosticsSettings,
    /// The code lens at the top of instruction files.
    pub code_lens: CodeLensSettings,
    /// Hovers.
    pub hover: HoverSettings,
    /// Model id used for the environment block of previews and for chats (default
    /// `claude-opus-5-5`, the reference CLI's).
    pub model: String,
    /// Context window of the model, in tokens; previews show totals against it and against the
    /// auto-compaction threshold derived from it. Unset: the model's own (1,000,000 for
    /// `claude-opus-5-5`, 200,000 for `claude-sonnet-4-5` and unknown models).
    pub window: Option<u64>,
    /// Overrides the auto-memory directory (default `~/.claude/projects/<slug>/memory`). Must be
    /// an absolute path; `/`, drive roots, UNC paths and paths with NUL are rejected.
    pub memory_dir: Option<String>,
    /// Additional directories whose instruction files load (like `--add-dir`); they load only when
    /// `CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD=1` is set in the server's environment, as in
    /// the reference CLI.
    pub additional_directories: Vec<String>,
    /// The chat's model connection (the model id is `model`).
    pub chat: ChatSettings,
    /// How chat sessions stay inside the window (`window`): masking old tool results, the API's
    /// own context editing, and summaries.
    pub compaction: CompactionSettings,
}

/// `compaction.*`. The server's environment wins over these (`DISABLE_AUTO_COMPACT`,
/// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, `CLAUDE_CODE_AUTO_COMPACT_WINDOW`), as in the reference CLI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Summarise the conversation automatically when it passes the threshold (`window` minus
    /// the answer's reserve minus 13,000). Masking old tool results happens either way.
    /// Default `true`.
    pub auto_compact: bool,
    /// Compact at this percentage (1 to 100) of the effective window when that is lower than
    /// the default threshold. Default: none.
    pub auto_compact_percent: Option<u8>,
    /// The newest results of compactable tools (Read, Bash, Grep, Glob, Edit, Write, …) that
    /// masking keeps whole; at least 1. Default `5`.
    pub keep_recent: usize,
    /// When the last answer is older than this many minutes (the prompt cache is cold), old
    /// tool results are masked before the next request. Default `60`.
    pub gap_minutes: u64,
    /// Ask the Anthropic API to clear old tool results itself (context editing, beta
    /// `context-management-2025-06-27`). Default `false`.
    pub api_context_editing: bool,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            auto_compact: true,
            auto_compact_percent: None,
            keep_recent: 5,
            gap_minutes: 60,
            api_context_editing: false,
        }
    }
}

/// How chat sessions reach the model. The key is never a setting: `keyVariable` names the
/// environment variable that holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ChatSettings {
    /// `anthropic` (the Messages API) or `openai` (an OpenAI-compatible `/chat/completions`
    /// server, e.g. a local model).
    pub provider: String,
    /// The API's base URL; overrides `ANTHROPIC_BASE_URL` (anthropic) or `OPENAI_BASE_URL`.
    pub base_url: Option<String>,
    /// The environment variable holding the key (default `ANTHROPIC_API_KEY`, or
    /// `OPENAI_API_KEY` for `openai`).
    pub key_variable: Option<String>,
    /// The output budget of one answer.
    pub max_tokens: u32,
    /// Tries per request, the first included (429, 529, 5xx, cut or stalled streams retried).
    pub max_tries: u32,
    /// A stream silent this long is stalled (and retried).
    pub idle_timeout_seconds: u64,
    /// After each turn, a background request saves what is worth keeping across sessions in
    /// the memory directory (topic files and MEMORY.md). Off as well when auto-memory is off
    /// (`CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`) or `CLAUDE_CONTEXT_AUTO_MEMORY=0`.
    pub auto_memory: bool,
    /// The shortest time, in milliseconds, between two `chat/event`s of text (or thinking) of
    /// one block: the pieces the API streams meanwhile are joined into one event. `0`
    /// (default): each piece goes out as it arrives. An editor that redraws once a frame may
    /// ask for 16 (Neovim's plugin does): it then parses a handful of events, not thousands,
    /// when the API streams fast. At most 100.
    pub delta_interval_ms: u64,
}

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            provider: "anthropic".into(),
            base_url: None,
            key_variable: None,
            max_tokens: 32_000,
            max_tries: 5,
            idle_timeout_seconds: 90,
            auto_memory: true,
            delta_interval_ms: 0,
        }
    }
}

/// `rules.*`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RulesSettings {
    /// Files open in the editor count as touched: they activate conditional rules and nested
    /// instruction files in previews, hovers and code lenses (and are passed to chat sessions
    /// like @-mentions). Default `true`.
    pub activate_from_open_files: bool,
}

/// `git.*`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct GitSettings {
    /// Take the git snapshot (branch, status, recent commits) for previews. Default `true`.
    pub enabled: bool,
    /// A snapshot older than this many seconds is retaken in the background on the next preview
    /// (the old one is shown meanwhile). `0` never retakes it. Default `30`.
    pub refresh_seconds: u64,
}

/// `diagnostics.*`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct DiagnosticsSettings {
    /// Publish diagnostics for open instruction files. Default `true`.
    pub enabled: bool,
    /// Hint on a conditional rule whose globs match no file of the workspace (needs one scan of
    /// the workspace's file list, done in the background). Default `true`.
    pub unmatched_globs: bool,
}

/// `codeLens.*`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CodeLensSettings {
    /// Show tokens and where the file applies at the top of instruction files. Default `true`.
    pub enabled: bool,
}

/// `hover.*`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct HoverSettings {
    /// Hover on any (non-instruction) file shows the instructions that apply to it. Turn off to
    /// keep hovers in source files to other language servers. Default `true`.
    pub source_files: bool,
    /// How many first lines of an `@include` target the hover shows. Default `8`.
    pub include_preview_lines: u32,
    /// How many example files a hover on a `paths:` glob lists. Default `5`.
    pub glob_examples: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            rules: RulesSettings::default(),
            git: GitSettings::default(),
            diagnostics: DiagnosticsSettings::default(),
            code_lens: CodeLensSettings::default(),
            hover: HoverSettings::default(),
            model: crate::assembly::DEFAULT_MODEL.to_string(),
            window: None,
            memory_dir: None,
            additional_directories: Vec::new(),
            chat: ChatSettings::default(),
            compaction: CompactionSettings::default(),
        }
    }
}

impl Default for RulesSettings {
    fn default() -> Self {
        RulesSettings {
            activate_from_open_files: true,
        }
    }
}

impl Default for GitSettings {
    fn default() -> Self {
        GitSettings {
            enabled: true,
            refresh_seconds: 30,
        }
    }
}

impl Default for DiagnosticsSettings {
    fn default() -> Self {
        DiagnosticsSettings {
            enabled: true,
            unmatched_globs: true,
        }
    }
}

impl Default for CodeLensSettings {
    fn default() -> Self {
        CodeLensSettings { enabled: true }
    }
}

impl Default for HoverSettings {
    fn default() -> Self {
        HoverSettings {
            source_files: true,
            include_preview_lines: 8,
            glob_examples: 5,
        }
    }
}

/// The section name in `workspace/configuration` and `initializationOptions`.
pub const SECTION: &str = "claudeContext";

impl Settings {
    /// The window previews and chats use: the setting, else the model's.
    pub fn window(&self) -> u64 {
        self.window
            .unwrap_or_else(|| crate::models::window(&self.model))
    }

    /// Parses settings from `initializationOptions`, a `workspace/configuration` answer or
    /// `didChangeConfiguration` params. Accepts the section itself or an object holding it under
    /// `claudeContext`; `null` gives the defaults. The error names the field, e.g.
    /// `claudeContext.window: invalid type: string "big", expected u64`.
    pub fn parse(value: &serde_json::Value) -> Result<Settings, String> {
        let section = match value {
            serde_json::Value::Null => return Ok(Settings::default()),
            serde_json::Value::Object(map) if map.contains_key(SECTION) => &map[SECTION],
            v => v,
        };
        if section.is_null() {
            return Ok(Settings::default());
        }
        let settings: Settings = serde_path_to_error::deserialize(section).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                format!("{SECTION}: {}", e.inner())
            } else {
                format!("{SECTION}.{path}: {}", e.inner())
            }
        })?;
        if let Some(dir) = &settings.memory_dir {
            let d = crate::memory::validate_dir(dir)
                .map_err(|e| format!("{SECTION}.memoryDir: {e}"))?;
            // `~/.claude` itself is judged where the home is known (`Host::context_options`).
            crate::memory::refuse_instruction_dirs(&d, None)
                .map_err(|e| format!("{SECTION}.memoryDir: {e}"))?;
        }
        if !matches!(
            settings.chat.provider.as_str(),
            "anthropic" | "openai" | "openai-compatible"
        ) {
            return Err(format!(
                "{SECTION}.chat.provider: {:?} is not a provider; use \"anthropic\" or \"openai\"",
                settings.chat.provider
            ));
        }
        if settings.window == Some(0) {
            return Err(format!(
                "{SECTION}.window: must be a positive number of tokens"
            ));
        }
        Ok(settings)
    }
}

/// The section in `value` (itself, or under `claudeContext`); `null` when absent.
pub fn section(value: &serde_json::Value) -> &serde_json::Value {
    match value {
        serde_json::Value::Object(map) if map.contains_key(SECTION) => &map[SECTION],
        v => v,
    }
}

/// `over` laid on `base`, object by object: what the client configures overrides
/// `initializationOptions`, which override the defaults.
pub fn merge(base: &serde_json::Value, over: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (section(base), section(over)) {
        (Value::Object(b), Value::Object(o)) => {
            let mut out = b.clone();
            for (k, v) in o {
                let merged = match out.get(k) {
                    Some(old @ Value::Object(_)) if v.is_object() => merge(old, v),
                    _ => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (b, Value::Null) => b.clone(),
        (_, o) => o.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_nesting() {
        assert_eq!(Settings::parse(&json!(null)).unwrap(), Settings::default());
        assert_eq!(Settings::parse(&json!({})).unwrap(), Settings::default());
        let s =
            Settings::parse(&json!({"claudeContext": {"rules": {"activateFromOpenFiles": false}}}))
                .unwrap();
        assert!(!s.rules.activate_from_open_files);
        assert!(s.git.enabled, "untouched groups keep their defaults");
        let s = Settings::parse(&json!({"window": 1000000, "unknownKey": 1})).unwrap();
        assert_eq!(s.window, Some(1_000_000));
    }

    #[test]
    fn configuration_overrides_initialization_options() {
        let init = json!({"window": 1000, "rules": {"activateFromOpenFiles": false}});
        let m = merge(
            &init,
            &json!({"claudeContext": {"git": {"enabled": false}}}),
        );
        let s = Settings::parse(&m).unwrap();
        assert_eq!(
            (s.window, s.rules.activate_from_open_files, s.git.enabled),
            (Some(1000), false, false)
        );
        assert_eq!(merge(&init, &json!(null)), init);
        let s = Settings::parse(&merge(
            &init,
            &json!({"rules": {"activateFromOpenFiles": true}}),
        ))
        .unwrap();
        assert!(s.rules.activate_from_open_files);
        assert_eq!(s.window, Some(1000));
    }

    #[test]
    fn errors_name_the_field() {
        let e = Settings::parse(&json!({"window": "big"})).unwrap_err();
        assert!(e.starts_with("claudeContext.window: invalid type"), "{e}");
        let e = Settings::parse(&json!({"git": {"enabled": "yes"}})).unwrap_err();
        assert!(e.starts_with("claudeContext.git.enabled:"), "{e}");
        let e = Settings::parse(&json!({"memoryDir": "relative/dir"})).unwrap_err();
        assert!(e.starts_with("claudeContext.memoryDir:"), "{e}");
        let e = Settings::parse(&json!(true)).unwrap_err();
        assert!(e.starts_with("claudeContext: invalid type"), "{e}");
    }
}
