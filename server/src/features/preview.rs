//! The preview: what the model will see ([`crate::assembly`]'s blocks and attachments), plus every
//! file considered with its status and reason, the totals against the window, and the findings.
//! `claude-context preview` prints it; `context/preview` returns it. [`of_session`] is the same
//! view of a running session's next request (`context/preview` with a session, ACP's `/context`).

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::assembly::Assembly;
pub use crate::assembly::{AttachmentView, Block, BlockKind, CacheSegment, GitPart, GitSummary};
use crate::context::settings::Exclusion;
use crate::context::{self, Attacher, Context, FileRecord, Finding, Status};
pub use crate::trust::{HeldStatus, Source as TrustSource, TrustState};

/// The context window of the default model ([`crate::models`]): 1,000,000 tokens.
pub const DEFAULT_WINDOW: u64 = crate::models::LARGE_WINDOW;
/// `min(max_output_tokens, 20_000)`.
pub const RESERVED_FOR_SUMMARY: u64 = 20_000;
/// Headroom below the effective window where auto-compaction starts.
pub const AUTO_COMPACT_MARGIN: u64 = 13_000;

/// `window - reserved - 13,000`: 167,000 for a 200k window.
pub fn auto_compact_threshold(window: u64) -> u64 {
    window
        .saturating_sub(RESERVED_FOR_SUMMARY)
        .saturating_sub(AUTO_COMPACT_MARGIN)
}

/// One file the build considered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// `managed`, `user`, `project`, `local`, `memory`.
    pub scope: String,
    pub description: String,
    /// `loaded`, `attached`, `inactive`, `skipped`, `empty`, `excluded`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where it was included from, as `path:line` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_from: Option<String>,
    pub depth: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_glob: Option<String>,
    /// For an `excluded` file: the `claudeMdExcludes` pattern and the settings file holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_by: Option<Exclusion>,
    pub tokens: u64,
}

/// A Claude Code settings file the walk read (it exists), and the keys of it that change what is
/// loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsFileView {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// `user`, `project`, `local`, `managed`.
    pub scope: String,
    /// `false` when the file is not valid JSON (or not an object): none of its keys apply.
    pub valid: bool,
    /// The keys read from it that change what is loaded (`claudeMdExcludes`,
    /// `autoMemoryEnabled`, `autoMemoryDirectory`, `claudeMd`, `env.<VARIABLE>`).
    pub keys: Vec<String>,
    /// The repository's file (the project's `.claude/settings.json`, or a
    /// `.claude/settings.local.json` git tracks), not the user's: what of it reaches outside the
    /// project waits for trust (`trust`). Absent when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repository: bool,
}

impl FileView {
    pub fn from_record(r: &FileRecord) -> FileView {
        FileView {
            path: r.path.clone(),
            scope: r.scope.label().to_string(),
            description: r.scope.description().to_string(),
            status: status_label(r.status).to_string(),
            reason: r.reason.clone(),
            included_from: r
                .included_from
                .as_ref()
                .map(|s| format!("{}:{}", s.path.display(), s.line + 1)),
            depth: r.depth as u64,
            globs: r.globs.clone(),
            matched_glob: r.matched.as_ref().map(|m| m.glob.clone()),
            excluded_by: r.excluded.clone(),
            tokens: r.tokens as u64,
        }
    }
}

pub fn status_label(s: Status) -> &'static str {
    match s {
        Status::Loaded => "loaded",
        Status::Attached => "attached",
        Status::Inactive => "inactive",
        Status::Skipped => "skipped",
        Status::Empty => "empty",
        Status::Excluded => "excluded",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// The whole request: the sum of the parts below (the skills discovered by touched files
    /// counted with the attachments).
    pub tokens: u64,
    /// Both system prompt blocks.
    pub system: u64,
    /// The tool definitions a chat request carries.
    #[serde(default)]
    pub tools: u64,
    pub instructions: u64,
    pub git: u64,
    pub attachments: u64,
    /// A session's messages so far, less the instructions and git blocks counted above (for
    /// a new session, 0).
    #[serde(default)]
    pub conversation: u64,
    pub window: u64,
    /// Of `system`: the skills listing.
    #[serde(default)]
    pub skills: u64,
    /// Of `system`: the agent types listing.
    #[serde(default)]
    pub agents: u64,
    /// Of `system`: what MCP servers add (tool names, notes, instructions).
    #[serde(default)]
    pub mcp: u64,
    /// The hooks' texts of one run (`runHooks`) the first user message carries (a model of the
    /// reminders layout; in the environment layout they are in `system`).
    #[serde(default)]
    pub hooks: u64,
    pub auto_compact_threshold: u64,
    /// `tokens / window * 100`, one decimal.
    pub percent: f64,
}

impl Totals {
    /// `tokens` and `percent` from the parts again.
    pub fn add_up(&mut self) {
        self.tokens = self.system
            + self.tools
            + self.instructions
            + self.git
            + self.attachments
            + self.conversation
            + self.hooks;
        self.percent = (self.tokens as f64 * 1000.0 / self.window.max(1) as f64).round() / 10.0;
    }

    /// The tool definitions a chat request carries count too.
    pub fn with_tools(mut self, tools: u64) -> Totals {
        self.tools = tools;
        self.add_up();
        self
    }
}

/// An instruction file whose text differs from what the running session has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingEdit {
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    #[serde(flatten, with = "crate::fs::json_path::cwd")]
    #[schemars(with = "crate::fs::json_path::cwd::Schema")]
    pub cwd: PathBuf,
    pub blocks: Vec<Block>,
    pub files: Vec<FileView>,
    /// Claude Code's settings files that exist (user, project, local, managed), lowest
    /// precedence first.
    #[serde(default)]
    pub settings: Vec<SettingsFileView>,
    pub attachments: Vec<AttachmentView>,
    pub totals: Totals,
    pub pending: Vec<PendingEdit>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSummary>,
    /// The skills: found, listed (fully or by name) or not, and the listing's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsView>,
    /// The agent types the `Agent` tool runs: the listing and what each entry costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentsView>,
    /// The MCP servers: status, tools and what they cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpView>,
    /// The hooks: each with its event, scope, matcher, command and where its text lands; never
    /// run, unless asked for (one run's output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<super::hooks::HooksView>,
    /// Workspace trust: the folder's state, where it comes from, and what waits for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<TrustView>,
    /// The permission rules that apply (each with its file and line), the mode and where it
    /// came from, the additional working directories, and what was ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<super::permissions::PermissionsView>,
    /// The output style: the active one (with what it adds, in tokens) and the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<StyleView>,
    /// The enabled plugins: per plugin, what it adds (skills, commands, servers, hooks, styles)
    /// and what that costs; the enabled ones not loaded, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<PluginsView>,
}

/// The output style of a session (`hooks-agents-styles.md` section 11).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StyleView {
    /// The active style's name; `default` when none is (or the setting names no style).
    pub name: String,
    /// `builtIn`, `plugin`, `user`, `project`; `None` for the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The `outputStyle` setting as written, and its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting_path: Option<PathBuf>,
    /// The setting names no style (case matters): the default applies, as in Claude Code.
    pub unknown: bool,
    /// What the style adds to the system prompt (the identity line, its part, its sentence).
    pub tokens: u64,
    /// What it adds after every tool result and every later prompt.
    pub reminder_tokens: u64,
    /// The coding instructions are left out under this model (a custom style without
    /// `keep-coding-instructions: true`).
    pub drops_coding_instructions: bool,
    /// Every style that can be chosen, `default` first.
    pub available: Vec<String>,
}

/// The enabled plugins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginsView {
    pub plugins: Vec<PluginView>,
    pub not_loaded: Vec<crate::plugins::NotLoaded>,
    /// What the plugins add in all, in tokens.
    pub tokens: u64,
}

/// One plugin and what it adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    pub name: String,
    /// `<plugin>@<marketplace>`.
    pub id: String,
    /// The folder it is used from (`CLAUDE_PLUGIN_ROOT`).
    pub root: PathBuf,
    pub enabled_by: crate::plugins::EnabledBy,
    /// Skills and commands as listed (`<plugin>:<name>`), with their listing tokens.
    pub skills: Vec<NamedCost>,
    /// MCP servers (`plugin:<plugin>:<server>`), with their names' and instructions' tokens.
    pub servers: Vec<NamedCost>,
    /// Hooks (`<Event>: <command>`): their output is unknown until they run.
    pub hooks: Vec<String>,
    /// Output styles (`<plugin>:<name>`), with what each would add.
    pub styles: Vec<NamedCost>,
    /// `<root>/agents`: its agents are listed as `<plugin>:<name>`.
    pub agents_dir: PathBuf,
    /// Files of the plugin not read because they link outside its folder.
    pub skipped: Vec<PathBuf>,
    /// What it adds to every request now (skills listed, servers, the active style if it is
    /// this plugin's).
    pub tokens: u64,
}

/// A name and its tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedCost {
    pub name: String,
    pub tokens: u64,
}

/// A folder's workspace trust ([`crate::trust`]): whether its user trusts it, where that is
/// recorded, and what of the repository waits for it (or is refused, or unused), with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustView {
    #[serde(flatten, with = "crate::fs::json_path::folder")]
    #[schemars(with = "crate::fs::json_path::folder::Schema")]
    pub folder: PathBuf,
    /// `trusted`, `notTrusted` (its user said no, or the editor runs it restricted),
    /// `neverAsked`.
    pub state: crate::trust::TrustState,
    /// `ours` (the user's answer to claude-context), `claudeCode` (`~/.claude.json`), `editor`
    /// (VS Code's workspace trust); absent when nobody was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::trust::Source>,
    /// The record that says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// In words: `trusted (your answer, kept in …)`, `never asked: a chat asks first`.
    pub summary: String,
    /// git tracks `.claude/settings.local.json`: it is read as the repository's file, not the
    /// user's.
    #[serde(default)]
    pub local_tracked: bool,
    /// What waits for trust, is refused, or is not used, in order.
    pub held: Vec<HeldView>,
}

/// One thing of the repository that trust holds back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldView {
    /// `mcpServer`, `mcpApproval`, `autoMemoryDirectory`, `permissions`, `env`, `plugins`,
    /// `apiKeyHelper`, `hooks`, `statusLine`.
    pub kind: crate::trust::gate::Kind,
    /// The settings key (`autoMemoryDirectory`, `permissions.allow`...), or the server's name.
    pub key: String,
    /// The file that says it.
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// What it says, shortly.
    pub detail: String,
    /// `waitingForTrust`, `notTrusted`, `refused` (even in a trusted folder), `notSupported`
    /// (claude-context does not use it at all).
    pub status: crate::trust::HeldStatus,
    /// Why, and what trust would do.
    pub reason: String,
    /// 1-based line of the key, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl TrustView {
    /// The view of `gate`.
    pub fn of(gate: &crate::trust::Gate) -> TrustView {
        use crate::trust::TrustState;
        let summary = match (gate.verdict.state, gate.source_words()) {
            (TrustState::Trusted, Some(w)) => format!("trusted ({w})"),
            (TrustState::NotTrusted, Some(w)) => format!(
                "not trusted ({w}): nothing of the repository that reaches outside the project applies; `claude-context trust` changes the answer"
            ),
            (TrustState::NeverAsked, _) if gate.would_ask() => {
                "never asked: a chat asks before its first turn (`claude-context trust` answers now); until then what waits below stays off".to_string()
            }
            (TrustState::NeverAsked, _) => {
                "never asked (nothing here waits for trust, so a chat does not ask)".to_string()
            }
            (state, None) => format!("{state:?}"),
        };
        TrustView {
            folder: gate.folder.clone(),
            state: gate.verdict.state,
            source: gate.verdict.source,
            record: gate
                .verdict
                .record
                .as_ref()
                .map(|p| p.display().to_string()),
            summary,
            local_tracked: gate.local_tracked,
            held: gate
                .held
                .iter()
                .map(|h| HeldView {
                    kind: h.kind,
                    key: h.key.clone(),
                    path: h.file.clone(),
                    detail: h.detail.clone(),
                    status: h.status,
                    reason: h.reason.clone(),
                    line: h.line.map(|l| l as u64 + 1),
                })
                .collect(),
        }
    }
}

/// The skills of a session's start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsView {
    /// The exact listing the environment section carries (absent with no skill listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<String>,
    /// Tokens of the listing.
    pub tokens: u64,
    /// The listing's budget and what its entries take, in display width (CJK counts 2).
    pub budget: u64,
    pub width: u64,
    /// Every skill found, in listing order. claude-context has no bundled skills of its own.
    pub skills: Vec<SkillView>,
    /// Skills hidden by another of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadowed: Vec<ShadowedView>,
    /// A repository's skills not read because their file is a link out of the workspace and the
    /// user's Claude folder (a difference from the reference CLI, which follows it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedSkillView>,
    /// Skills below cwd that the touched files discovered: the `system` message each touch
    /// adds after its tool result (counted with the attachments in the totals).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub discovered: Vec<DiscoveredView>,
    /// Conditional skills (`paths:`) that the touched files activated: the `system` message
    /// each touch adds after its tool result, listing the skills it made available (counted
    /// with the attachments in the totals).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activated: Vec<DiscoveredView>,
}

/// The message a touched file's discovery (or activation) of skills adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredView {
    /// The exact text.
    pub text: String,
    #[serde(flatten, with = "crate::fs::json_path::trigger")]
    #[schemars(with = "crate::fs::json_path::trigger::Schema")]
    pub trigger: PathBuf,
    pub tokens: u64,
    /// The names of the skills it made available, as listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
}

/// One skill.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillView {
    pub name: String,
    /// The frontmatter `name`, when it differs from the folder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// `user`, `project`, `addDir`, `command`.
    pub source: String,
    pub description: String,
    /// `full`, `reduced` (to `- <name>` by the budget), `nameOnly` (skillOverrides), `hidden`
    /// (disable-model-invocation), `off` (skillOverrides), `conditional` (`paths:`: listed
    /// when a touched file first matches).
    pub listed: String,
    /// A conditional skill's `paths:` globs, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Tokens of its full entry.
    pub tokens: u64,
    /// Tokens its file's body adds when the skill is invoked (at most).
    pub invoked_tokens: u64,
    /// Shell commands its body runs when invoked (shown, never run by the preview).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shell: Vec<String>,
}

/// A skill hidden by an earlier one of the same name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShadowedView {
    pub name: String,
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    #[serde(flatten, with = "crate::fs::json_path::by")]
    #[schemars(with = "crate::fs::json_path::by::Schema")]
    pub by: PathBuf,
}

/// A skill source as the preview names it.
fn source_name(s: crate::skills::Source) -> String {
    match s {
        crate::skills::Source::AddDir => "addDir".into(),
        other => other.label().into(),
    }
}

/// A skill not read: its file links out of the workspace and the user's Claude folder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedSkillView {
    pub name: String,
    /// `project`, `addDir`, `command`.
    pub source: String,
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    #[serde(flatten, with = "crate::fs::json_path::target")]
    #[schemars(with = "crate::fs::json_path::target::Schema")]
    pub target: PathBuf,
}

/// The MCP servers of a session's start. The preview never starts a server: a server's tools
/// come from a running session, or from its last connection (`listedOn`), or are unknown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpView {
    pub servers: Vec<ServerView>,
    /// The exact parts of the environment section, each absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_tools: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connecting_note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Tokens of those parts.
    pub tokens: u64,
    /// Tokens of every tool definition, were they all loaded by a search.
    pub definition_tokens: u64,
}

/// One MCP server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub name: String,
    /// `project` (`.mcp.json`), `user` or `local` (`~/.claude.json`).
    pub scope: String,
    /// The file that configures it.
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// The command line (stdio) or the URL (remote).
    pub command: String,
    /// `not approved`, `disabled`, `unsupported`, `approved`, `connecting`, `running`, `failed`.
    pub status: String,
    /// Why, in words (who approved or disabled it, the failure, where the tools come from).
    pub reason: String,
    /// The date of the connection its tools come from, when not a running session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_on: Option<String>,
    /// Its tools' names as the model sees them; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tokens of its names in the deferred-tools list and of its instructions, now.
    pub name_tokens: u64,
    pub instructions_tokens: u64,
    /// Tokens of its definitions once a search loads them.
    pub definition_tokens: u64,
    /// Milliseconds from start to its tool list, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<u64>,
    /// What was left out of its lists, unset variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The agent types of a session's start ([`crate::agents`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsView {
    /// The environment section's part, exactly.
    pub listing: String,
    pub tokens: u64,
    /// In listing order.
    pub agents: Vec<AgentView>,
    /// Agents another of the same name replaced (a project's beats a user's; a file beats a
    /// built-in).
    pub shadowed: Vec<crate::agents::Shadowed>,
}

/// One agent type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    pub name: String,
    /// `builtIn`, `plugin`, `user`, `project`.
    pub scope: crate::agents::Scope,
    pub description: String,
    /// What the listing says after `Tools: `.
    pub tools: String,
    /// `model` as written (`sonnet`, `inherit`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The file (none for a built-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Its line of the listing.
    pub tokens: u64,
    /// Its system prompt, when it runs.
    pub body_tokens: u64,
}

fn tokens_of(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Adds the skills and MCP views of `ext` to `p`, and their share of the system prompt to the
/// totals (the texts are already in the system blocks: the assembly put them there).
pub fn with_extensions(
    p: &mut Preview,
    ext: &crate::extensions::Extensions,
    discovered: &[crate::extensions::Discovered],
    activated: &[crate::extensions::Activated],
) {
    use crate::mcp::Status;
    let sl = &ext.skills;
    let skills: Vec<SkillView> = sl
        .skills
        .skills
        .iter()
        .zip(&sl.listed)
        .zip(&sl.entries)
        .map(|((s, listed), entry)| SkillView {
            name: s.name.clone(),
            alias: s.alias.clone(),
            path: s.file.clone(),
            source: source_name(s.source),
            description: s.description.clone(),
            listed: serde_json::to_value(listed)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            paths: s.paths.clone().unwrap_or_default(),
            tokens: tokens_of(entry.len()),
            invoked_tokens: s.bytes.div_ceil(4),
            shell: s.shell.clone(),
        })
        .collect();
    let listing_tokens = sl.listing.text.as_deref().map_or(0, |t| tokens_of(t.len()));
    p.skills = Some(SkillsView {
        listing: sl.listing.text.clone(),
        tokens: listing_tokens,
        budget: sl.listing.budget,
        width: sl.listing.width,
        skills,
        shadowed: sl
            .skills
            .shadowed
            .iter()
            .map(|s| ShadowedView {
                name: s.skill.name.clone(),
                path: s.skill.file.clone(),
                by: s.by.clone(),
            })
            .collect(),
        skipped: sl
            .skills
            .linked_out
            .iter()
            .map(|s| SkippedSkillView {
                name: s.name.clone(),
                source: source_name(s.source),
                path: s.file.clone(),
                target: s.target.clone(),
            })
            .collect(),
        discovered: discovered
            .iter()
            .map(|d| DiscoveredView {
                tokens: tokens_of(d.discovery.text.len()),
                text: d.discovery.text.clone(),
                trigger: d.trigger.clone(),
                skills: d.discovery.skills.iter().map(|s| s.name.clone()).collect(),
            })
            .collect(),
        activated: activated
            .iter()
            .map(|a| DiscoveredView {
                tokens: tokens_of(a.activation.text.len()),
                text: a.activation.text.clone(),
                trigger: a.trigger.clone(),
                skills: a.activation.skills.iter().map(|s| s.name.clone()).collect(),
            })
            .collect(),
    });
    let discovered_tokens: u64 = discovered
        .iter()
        .map(|d| tokens_of(d.discovery.text.len()))
        .chain(activated.iter().map(|a| tokens_of(a.activation.text.len())))
        .sum();
    p.totals.attachments += discovered_tokens;
    p.totals.add_up();
    let servers: Vec<ServerView> = ext
        .servers
        .iter()
        .map(|st| {
            let s = &st.server;
            let command = match &s.transport {
                crate::mcp::Transport::Stdio { command, args, .. } => {
                    std::iter::once(command.as_str())
                        .chain(args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                crate::mcp::Transport::Http { url, .. }
                | crate::mcp::Transport::Remote { url, .. } => url.clone(),
                crate::mcp::Transport::Invalid(_) => String::new(),
            };
            let reason = match (&st.status, &s.approval) {
                (Status::NotApproved, _) if s.scope == crate::mcp::Scope::Client => "offered by the editor for this session: it starts only once you approve it (asked inside the first prompt; the answer is kept for this definition)".to_string(),
                (Status::WaitingForTrust | Status::NotTrusted, _) if s.scope == crate::mcp::Scope::Client => if st.status == Status::NotTrusted {
                    "offered by the editor: you do not trust this folder, so it does not start (`claude-context trust` changes the answer)".to_string()
                } else {
                    "offered by the editor: it starts only in a trusted folder, after your approval (a chat asks first)".to_string()
                },
                (Status::NotApproved, _) if s.scope == crate::mcp::Scope::Plugin => "a server of a plugin the repository's settings enabled: it starts only once you approve it, as a project's .mcp.json server (a chat asks first)".to_string(),
                (Status::NotApproved, _) => "a project server: it starts only once you approve it (a chat asks first; or list it in enabledMcpjsonServers of .claude/settings.local.json)".to_string(),
                (Status::WaitingForTrust | Status::NotTrusted, a) => {
                    let now = if st.status == Status::NotTrusted {
                        "you do not trust this folder: no server of its .mcp.json starts (`claude-context trust` changes the answer)"
                    } else {
                        "nothing of this folder's .mcp.json starts before you trust the folder (a chat asks first)"
                    };
                    let then = match a.once_trusted() {
                        crate::mcp::Approval::Approved(why) => format!("once trusted, it starts: {why}"),
                        crate::mcp::Approval::Disabled(by) => format!("disabledMcpjsonServers in {}", by.display()),
                        _ => "once trusted, a chat asks whether to use it".to_string(),
                    };
                    format!("{now}; {then}")
                }
                (Status::Disabled(by), _) => format!("disabledMcpjsonServers in {}", by.display()),
                (Status::Unsupported(why), _) => why.clone(),
                (Status::Failed { code, message }, _) if code.is_empty() => message.clone(),
                (Status::Failed { code, message }, _) => format!("{code}: {message}"),
                (Status::Connecting, _) => "starting".into(),
                // A chat session's server, or one `preview --mcp-connect` started for this answer.
                (Status::Running, crate::mcp::Approval::Approved(why)) => {
                    format!("{why}; connected: tools as it lists them now")
                }
                (Status::Running, _) => "connected: tools as it lists them now".into(),
                (Status::Cached { date }, crate::mcp::Approval::Approved(why)) => {
                    format!("{why}; tools as the last connection listed them ({date})")
                }
                (Status::Approved, crate::mcp::Approval::Approved(why)) => format!(
                    "{why}; never connected, so its tools are unknown: a chat connects it, or run `claude-context preview --mcp-connect`"
                ),
                _ => String::new(),
            };
            let mut notes = st
                .listing
                .as_ref()
                .map(|l| l.notes.clone())
                .unwrap_or_default();
            if !s.missing_vars.is_empty() {
                notes.push(format!(
                    "not set in the environment: {}",
                    s.missing_vars.join(", ")
                ));
            }
            ServerView {
                name: s.name.clone(),
                scope: s.scope.label().into(),
                path: s.source.clone(),
                command,
                status: st.status.label().into(),
                reason,
                listed_on: match &st.status {
                    Status::Cached { date } => Some(date.clone()),
                    _ => None,
                },
                tools: st.listing.as_ref().map(|_| st.tool_names()),
                name_tokens: tokens_of(st.names_chars()),
                instructions_tokens: tokens_of(st.instructions_chars()),
                definition_tokens: tokens_of(st.definitions_bytes()),
                start_ms: st.listing.as_ref().map(|l| l.start_ms).filter(|ms| *ms > 0),
                notes,
            }
        })
        .collect();
    let mcp_tokens = tokens_of(ext.parts.chars());
    let definition_tokens = ext
        .servers
        .iter()
        .filter(|s| s.counts())
        .map(|s| tokens_of(s.definitions_bytes()))
        .sum();
    p.mcp = Some(McpView {
        servers,
        deferred_tools: ext.parts.deferred.clone(),
        failed_note: ext.parts.failed.clone(),
        connecting_note: ext.parts.connecting.clone(),
        instructions: ext.parts.instructions.clone(),
        tokens: mcp_tokens,
        definition_tokens,
    });
    if let Some(a) = &ext.agents {
        let listing = a.listing();
        let tokens = tokens_of(listing.len());
        p.agents = Some(AgentsView {
            tokens,
            agents: a
                .agents
                .iter()
                .map(|x| AgentView {
                    name: x.name.clone(),
                    scope: x.scope,
                    description: x.description.clone(),
                    tools: x.tools_text.clone(),
                    model: x.model.clone(),
                    path: x.file.clone(),
                    tokens: tokens_of(x.entry().len() + 1),
                    body_tokens: tokens_of(x.body.len()),
                })
                .collect(),
            shadowed: a.shadowed.clone(),
            listing,
        });
        p.totals.agents = tokens;
    }
    p.totals.skills = listing_tokens;
    p.totals.mcp = mcp_tokens;
    p.findings.extend(ext.findings.iter().cloned());
    p.style = Some(style_view(ext, model_of(p)));
    p.plugins = (!ext.plugins.plugins.is_empty() || !ext.plugins.not_loaded.is_empty())
        .then(|| plugins_view(p, ext));
}

/// The model the preview's environment section names (its `The exact model ID is …`).
fn model_of(p: &Preview) -> String {
    p.blocks
        .iter()
        .find_map(|b| {
            let at = b.text.find("The exact model ID is ")? + "The exact model ID is ".len();
            let rest = &b.text[at..];
            Some(rest[..rest.find(".\n").unwrap_or(rest.len())].to_string())
        })
        .unwrap_or_else(|| crate::models::DEFAULT_MODEL.to_string())
}

fn style_view(ext: &crate::extensions::Extensions, model: String) -> StyleView {
    let setting = ext.style_setting.as_ref();
    let available = ext.styles.names();
    let Some(s) = &ext.style else {
        return StyleView {
            name: crate::styles::DEFAULT.into(),
            source: None,
            path: None,
            description: String::new(),
            setting: setting.map(|s| s.value.clone()),
            setting_path: setting.map(|s| s.source.clone()),
            unknown: setting.is_some_and(|s| s.value != crate::styles::DEFAULT),
            tokens: 0,
            reminder_tokens: 0,
            drops_coding_instructions: false,
            available,
        };
    };
    let sp = crate::assembly::style_prompt(s, &model);
    let mut chars =
        sp.part.len() + 2 + sp.active.len() + 2 + crate::context::prompt::STYLE_LINE.len() + 1;
    if sp.drop_coding_instructions {
        chars = chars.saturating_sub(crate::context::prompt::HOW_TO_WORK.len() + 2);
    }
    StyleView {
        name: s.name.clone(),
        source: serde_json::to_value(&s.source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        path: s.file.clone(),
        description: s.description.clone(),
        setting: setting.map(|s| s.value.clone()),
        setting_path: setting.map(|s| s.source.clone()),
        unknown: false,
        tokens: tokens_of(chars),
        reminder_tokens: tokens_of(
            "<system-reminder>\n\n</system-reminder>".len() + sp.active.len(),
        ),
        drops_coding_instructions: sp.drop_coding_instructions,
        available,
    }
}

fn plugins_view(p: &Preview, ext: &crate::extensions::Extensions) -> PluginsView {
    let skills = p.skills.as_ref();
    let mcp = p.mcp.as_ref();
    let plugins: Vec<PluginView> = ext
        .plugins
        .plugins
        .iter()
        .map(|pl| {
            let prefix = format!("{}:", pl.name);
            let skills: Vec<NamedCost> = skills
                .into_iter()
                .flat_map(|v| &v.skills)
                .filter(|k| k.source == "plugin" && k.name.starts_with(&prefix))
                .map(|k| NamedCost {
                    name: k.name.clone(),
                    tokens: if matches!(k.listed.as_str(), "hidden" | "off") {
                        0
                    } else {
                        k.tokens
                    },
                })
                .collect();
            let server_prefix = format!("plugin:{}:", pl.name);
            let servers: Vec<NamedCost> = mcp
                .into_iter()
                .flat_map(|v| &v.servers)
                .filter(|s| s.name.starts_with(&server_prefix))
                .map(|s| NamedCost {
                    name: s.name.clone(),
                    tokens: s.name_tokens + s.instructions_tokens,
                })
                .collect();
            let styles: Vec<NamedCost> = ext
                .styles
                .styles
                .iter()
                .filter(|s| {
                    s.source == crate::styles::Source::Plugin && s.name.starts_with(&prefix)
                })
                .map(|s| NamedCost {
                    name: s.name.clone(),
                    tokens: tokens_of(s.part().len() + s.active_sentence().len()),
                })
                .collect();
            let active_style = ext
                .style
                .as_ref()
                .filter(|s| {
                    s.source == crate::styles::Source::Plugin && s.name.starts_with(&prefix)
                })
                .map_or(0, |_| p.style.as_ref().map_or(0, |v| v.tokens));
            let skipped = skills_skipped(p, &prefix, &pl.root);
            let tokens = skills.iter().map(|s| s.tokens).sum::<u64>()
                + servers.iter().map(|s| s.tokens).sum::<u64>()
                + active_style;
            PluginView {
                name: pl.name.clone(),
                id: pl.id.clone(),
                root: pl.root.clone(),
                enabled_by: pl.enabled_by.clone(),
                skills,
                servers,
                hooks: pl.hooks.clone(),
                styles,
                agents_dir: pl.agents_dir(),
                skipped,
                tokens,
            }
        })
        .collect();
    PluginsView {
        tokens: plugins.iter().map(|p| p.tokens).sum(),
        plugins,
        not_loaded: ext.plugins.not_loaded.clone(),
    }
}

/// A plugin's files not read because they link out of it: its skills, and the findings that
/// say so for its other files.
fn skills_skipped(p: &Preview, prefix: &str, root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = p
        .skills
        .iter()
        .flat_map(|v| &v.skipped)
        .filter(|s| s.name.starts_with(prefix))
        .map(|s| s.path.clone())
        .collect();
    out.extend(
        p.findings
            .iter()
            .filter(|f| f.code == "plugin-linked-outside" && f.path.starts_with(root))
            .map(|f| f.path.clone()),
    );
    out
}

/// Builds the preview (a view of the session start's [`Assembly`]) from a walk and a session's
/// attachments.
pub fn from_assembly(ctx: &Context, attacher: &Attacher, a: Assembly, window: u64) -> Preview {
    // Files: the walk's records, with conditional rules that got attached shown as attached,
    // then what attaching added (nested files, their includes).
    let attached: std::collections::HashMap<&Path, &context::Attachment> = attacher
        .attachments
        .iter()
        .map(|a| (a.record.path.as_path(), a))
        .collect();
    let mut files: Vec<FileView> = Vec::new();
    let mut shown = std::collections::HashSet::new();
    for r in &ctx.files {
        match attached.get(r.path.as_path()) {
            Some(a) if r.status == Status::Inactive => {
                files.push(FileView::from_record(&a.record));
                shown.insert(a.record.path.clone());
            }
            _ => files.push(FileView::from_record(r)),
        }
    }
    for r in &attacher.records {
        if r.status == Status::Attached && shown.contains(&r.path) {
            continue;
        }
        files.push(FileView::from_record(r));
    }
    let window = if window == 0 { DEFAULT_WINDOW } else { window };
    let system = a.tokens(&[BlockKind::SystemStatic, BlockKind::SystemDynamic]);
    let instructions = a.tokens(&[BlockKind::Instructions]);
    let git_tokens = a.tokens(&[BlockKind::GitStatus]);
    let attachment_tokens = a.attachment_tokens();
    let tokens = system + instructions + git_tokens + attachment_tokens;
    let settings = ctx
        .settings()
        .files
        .iter()
        .map(|f| SettingsFileView {
            path: f.path.clone(),
            scope: f.scope.label().to_string(),
            valid: f.valid,
            keys: f.keys.clone(),
            repository: f.repository,
        })
        .collect();
    Preview {
        cwd: ctx.cwd.clone(),
        blocks: a.blocks,
        files,
        settings,
        attachments: a.attachments,
        totals: Totals {
            tokens,
            system,
            tools: 0,
            instructions,
            git: git_tokens,
            attachments: attachment_tokens,
            conversation: 0,
            window,
            skills: 0,
            agents: 0,
            mcp: 0,
            hooks: 0,
            auto_compact_threshold: auto_compact_threshold(window),
            percent: (tokens as f64 * 1000.0 / window as f64).round() / 10.0,
        },
        pending: Vec::new(),
        findings: a.findings,
        git: a.git,
        skills: None,
        style: None,
        plugins: None,
        agents: None,
        mcp: None,
        hooks: None,
        trust: None,
        permissions: None,
    }
}

/// Adds the hooks' view to `p`: the hooks of `ctx`'s settings, and what one run of them said
/// (`run`, with the texts' tokens counted: in `system` already for the environment layout, in
/// `hooks` for the reminders layout).
pub fn with_hooks(p: &mut Preview, mut view: Option<super::hooks::HooksView>) {
    if let Some(v) = &view
        && let Some(run) = &v.run
        && v.layout == "reminders"
    {
        p.totals.hooks = run.tokens;
        p.totals.add_up();
    }
    if let Some(v) = &mut view
        && v.hooks.is_empty()
        && v.run.is_none()
    {
        view = None;
    }
    p.hooks = view;
}

/// Adds the workspace-trust view of `gate` to `p`.
pub fn with_trust(p: &mut Preview, gate: &crate::trust::Gate) {
    p.trust = Some(TrustView::of(gate));
}

/// What `session`'s next request would contain: its frozen start (system prompt, instructions,
/// git), what the files in `touched` would attach to the next message, and the conversation so
/// far, all on one basis, the whole next request. Before the first answer every part is an
/// estimate and the parts add up; once an answer reported its usage, the real figure (plus
/// estimates since) is the total and the conversation is what it holds beyond the other parts.
/// `now` is the walk a new session would make now: instruction files that differ from the frozen
/// ones are `pending`.
pub fn of_session(
    session: &crate::session::Session,
    tools: Option<&crate::session::SessionTools>,
    fs: &dyn crate::fs::Fs,
    touched: &[PathBuf],
    now: &Context,
) -> Preview {
    let view = session.view();
    let snap = &view.snapshot;
    let ctx = &snap.ctx;
    let mut attacher = view.attacher.clone();
    let before = attacher.attachments.len();
    for f in touched {
        attacher.touch(fs, ctx, f);
    }
    let mut assembly = snap.current();
    assembly.attachments = attacher.attachments[before..]
        .iter()
        .map(|a| {
            let text = a.text();
            AttachmentView {
                path: a.record.path.clone(),
                tokens: context::estimate_tokens(&text) as u64,
                text,
                trigger: a.trigger.clone(),
            }
        })
        .collect();
    let window = session.window();
    let mut p = from_assembly(ctx, &attacher, assembly, window);
    p.permissions = tools.map(|t| super::permissions::view(t.policy()));
    // The skills it lists and its MCP servers as they stand in this session.
    if let Some(mut ext) = snap.extensions.clone() {
        if let Some(m) = tools.and_then(|t| t.mcp().cloned()) {
            ext.servers = m.states();
            ext.parts = crate::mcp::session_parts(&ext.servers);
        }
        with_extensions(&mut p, &ext, &[], &[]);
    }
    if let Some(t) = tools.and_then(|t| t.trust()) {
        with_trust(&mut p, &t.current_gate());
    }
    // One basis, the whole next request: the system prompt, the tools, the instructions and git
    // blocks (in the first message, sent or about to be), the conversation so far and what the
    // next message attaches. Before the first answer every part is an estimate and the parts
    // add up; once an answer reported its usage, the real figure (plus estimates since) is the
    // total and the conversation is what it holds beyond the other parts.
    let t = &mut p.totals;
    // The session's own tools (the Skill tool, ToolSearch and the MCP tools it loaded).
    t.tools = match tools {
        Some(tools) => {
            use crate::session::ToolRunner;
            crate::session::compose::estimate_request(&[], &tools.specs(), &[])
        }
        None => crate::session::offered_tools_tokens(),
    };
    let history = session.history();
    let history_tokens: u64 = history
        .iter()
        .map(crate::session::compose::estimate_message)
        .sum();
    let first_blocks = if history.is_empty() {
        0
    } else {
        t.instructions + t.git
    };
    t.conversation = match view.count.last_usage {
        // The usage counts the whole request it answered: system prompt, tools, messages.
        Some(_) => view
            .count
            .tokens
            .saturating_sub(t.system + t.tools + t.instructions + t.git),
        None => history_tokens.saturating_sub(first_blocks),
    };
    t.add_up();
    p.pending = pending_since_start(ctx, now);
    // The session's hooks: those it started with (where it has some that run), else its
    // settings' as they stand.
    let model = session.model();
    let view = match session.hooks() {
        Some(h) => super::hooks::view(h.config(), h.active(), &model),
        None => {
            let config = super::hooks::read(fs, ctx);
            super::hooks::view(&config, super::hooks::trusted(ctx), &model)
        }
    };
    with_hooks(&mut p, view);
    if let Some(c) = session.compaction() {
        p.totals.auto_compact_threshold = c.policy().budget.auto_threshold;
    }
    p
}

/// Instruction files whose text differs between the session's frozen walk and the walk a new
/// session would make now (editor buffers included), added or gone since.
fn pending_since_start(frozen: &Context, now: &Context) -> Vec<PendingEdit> {
    let loaded = |c: &Context| -> std::collections::HashMap<PathBuf, String> {
        c.files
            .iter()
            .filter(|f| f.status == Status::Loaded)
            .map(|f| (f.path.clone(), f.content.clone()))
            .collect()
    };
    let (old, new) = (loaded(frozen), loaded(now));
    let mut out = Vec::new();
    for (path, text) in &new {
        let message = match old.get(path) {
            Some(t) if t == text => continue,
            Some(_) => "changed since the session started: a new session sees the change",
            None => "added since the session started: a new session loads it",
        };
        out.push(PendingEdit {
            path: path.clone(),
            message: message.to_string(),
        });
    }
    for path in old.keys().filter(|p| !new.contains_key(*p)) {
        out.push(PendingEdit {
            path: path.clone(),
            message: "gone since the session started: the session still has it".to_string(),
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}
