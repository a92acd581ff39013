//! Hooks as the user sees them before they run: every configured hook with its event, scope,
//! matcher and command (in full), whether it runs here and why not, and where its text would
//! land in the model's layout (`hooks-agents-styles.md` section 13: a preview never runs a hook;
//! the order of several hooks' texts is the order they finish, so it cannot be known ahead).
//!
//! On request ([`run_start`], `preview --run-hooks`, `context/preview` with `runHooks`), in a
//! trusted folder only, the SessionStart and UserPromptSubmit hooks are run once, as a session's
//! first prompt would run them, and their texts shown with their tokens, marked as one run's
//! output: the next run may say something else.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::assembly::HookParts;
use crate::context::Context;
use crate::fs::Fs;
use crate::hooks::input::{Common, Fields, Input};
use crate::hooks::outcome::{self, Prompt};
use crate::hooks::persist::Persist;
use crate::hooks::{Config, Event, Runner, Status};
use crate::host::Host;

/// The hooks of a session about to start (or running).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksView {
    /// The folder is trusted: hooks run in a session here. Until then none runs, user hooks
    /// included.
    pub trusted: bool,
    /// `environment` (texts in the environment section of the system prompt, and one block per
    /// later `system` message) or `reminders` (one `<system-reminder>` block per text): the
    /// model's layout.
    pub layout: String,
    /// Every configured hook: sources in order (managed, user, project, local, plugins), then
    /// file order.
    pub hooks: Vec<HookView>,
    /// One run's output of the SessionStart and UserPromptSubmit hooks, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<HookRunView>,
}

/// One configured hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookView {
    pub event: String,
    /// `managed`, `user`, `project`, `local`, `plugin`.
    pub scope: String,
    /// The settings file (or plugin hooks file) that configures it.
    #[serde(flatten, with = "crate::fs::json_path::path")]
    #[schemars(with = "crate::fs::json_path::path::Schema")]
    pub path: PathBuf,
    /// The 0-based line of its command there, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The matcher as written (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The command, in full, exactly as configured.
    pub command: String,
    /// Its time limit, in seconds, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// `runs`, `off` (a switch, an unsupported type, a bad matcher), `untrusted` (the folder is
    /// not trusted yet), `notHere` (an event claude-context does not run).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where its text lands.
    pub lands: String,
}

/// One run of the SessionStart (`startup`) and UserPromptSubmit hooks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunView {
    /// What this is: one run's output (another run may differ).
    pub note: String,
    /// The prompt the UserPromptSubmit hooks were given.
    pub prompt: String,
    /// The texts a session's first request would carry from this run, in the order the hooks
    /// finished.
    pub texts: Vec<HookTextView>,
    /// A UserPromptSubmit hook stopped the prompt: what the user would read (no request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// Hooks that failed, timed out or said something for the user only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Tokens of the texts.
    pub tokens: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookTextView {
    pub event: String,
    /// The exact text.
    pub text: String,
    pub tokens: u64,
}

/// The hooks of a session in `ctx`.
pub fn read(fs: &dyn Fs, ctx: &Context) -> Config {
    let paths = crate::hooks::config::Paths {
        project_dir: ctx.cwd.clone(),
        home: ctx.home().map(PathBuf::from),
    };
    let mut config = Config::read(fs, &ctx.settings().files, &paths);
    // The enabled plugins' `hooks/hooks.json` (a repository's plugins only once trusted).
    crate::plugins::add_hooks(fs, &crate::plugins::enabled(fs, ctx), &mut config, &paths);
    config
}

/// Is `ctx`'s folder trusted (hooks may run)? The trust module's answer as the context was read
/// with it (`crate::trust`; a preview of a folder nobody was asked about is not trusted: no hook
/// of it runs), the one the MCP servers and the permission rules get.
pub fn trusted(ctx: &Context) -> bool {
    ctx.settings().trust.trusted()
}

/// The view of `config` for a session of `model` in a folder `trusted` or not. `None` when no
/// hook is configured.
pub fn view(config: &Config, trusted: bool, model: &str) -> Option<HooksView> {
    if config.entries.is_empty() {
        return None;
    }
    let environment = crate::models::environment_message(model);
    let hooks = config
        .entries
        .iter()
        .map(|e| {
            let h = &e.hook;
            let (status, reason) = match &e.status {
                Status::Off(why) => ("off", Some(why.clone())),
                Status::Runs if !h.event.runs_here() => (
                    "notHere",
                    Some(format!("{} hooks are not run by claude-context", h.event)),
                ),
                Status::Runs if h.matcher.error().is_some() => (
                    "off",
                    Some(format!(
                        "its matcher is not a regular expression ({}): it matches nothing",
                        h.matcher.error().unwrap_or_default()
                    )),
                ),
                Status::Runs if !trusted => (
                    "untrusted",
                    Some(
                        "this folder is not trusted yet: no hook runs until it is (trust it in Claude Code or when a chat asks)"
                            .to_string(),
                    ),
                ),
                Status::Runs => ("runs", None),
            };
            HookView {
                event: h.event.name().to_string(),
                scope: serde_json::to_value(h.source.scope())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                path: h.file.clone(),
                line: h.line.map(|l| l as u64),
                matcher: h.matcher.raw().map(str::to_string),
                command: h.command.clone(),
                timeout: h.timeout,
                status: status.to_string(),
                reason,
                lands: lands(h.event, environment),
            }
        })
        .collect();
    Some(HooksView {
        trusted,
        layout: if environment {
            "environment"
        } else {
            "reminders"
        }
        .to_string(),
        hooks,
        run: None,
    })
}

/// Where an event's text lands in a layout.
fn lands(event: Event, environment: bool) -> String {
    match (event, environment) {
        (Event::SessionStart, false) => {
            "a <system-reminder> block first in the first user message; nothing on resume".into()
        }
        (Event::UserPromptSubmit, false) => {
            "a <system-reminder> block before the instructions (first prompt), after the prompt (later ones); exit 2 or a block stops the prompt".into()
        }
        (Event::PreToolUse | Event::PostToolUse, false) => {
            "a <system-reminder> block right after the tool result (additionalContext, blocks); a PreToolUse deny, ask or exit 2 replaces the result".into()
        }
        _ => event.lands().to_string(),
    }
}

/// The hooks of a session about to start in `ctx`, for a preview.
pub struct Start {
    pub view: Option<HooksView>,
    /// What one run put into the environment section (empty when nothing ran).
    pub parts: HookParts,
    /// What is wrong in the hook settings (`check`'s findings).
    pub findings: Vec<crate::context::Finding>,
}

/// The hooks of a session about to start in `ctx`, for a preview: the view, and what one run
/// of them (`run`: the prompt, when asked for) puts into the environment section. A folder that
/// is not trusted runs nothing; its run says so.
pub fn start(fs: &dyn Fs, host: &Host, ctx: &Context, model: &str, run: Option<&str>) -> Start {
    let config = read(fs, ctx);
    let (view, parts) = start_with(host, ctx, &config, trusted(ctx), model, run);
    Start {
        view,
        parts,
        findings: config.findings,
    }
}

fn start_with(
    host: &Host,
    ctx: &Context,
    config: &Config,
    trusted: bool,
    model: &str,
    run: Option<&str>,
) -> (Option<HooksView>, HookParts) {
    let mut view = view(config, trusted, model);
    let Some(prompt) = run else {
        return (view, HookParts::default());
    };
    let v = view.get_or_insert_with(|| HooksView {
        trusted,
        layout: if crate::models::environment_message(model) {
            "environment"
        } else {
            "reminders"
        }
        .to_string(),
        hooks: Vec::new(),
        run: None,
    });
    if !trusted {
        v.run = Some(HookRunView {
            note: "not run: this folder is not trusted, and no hook runs in a folder its user has not trusted (trust it in Claude Code, or when a chat asks)".into(),
            prompt: prompt.to_string(),
            texts: Vec::new(),
            blocked: None,
            notes: Vec::new(),
            tokens: 0,
        });
        return (view, HookParts::default());
    }
    let (run, parts) = run_start(host, ctx, config, model, prompt);
    v.run = Some(run);
    (view, parts)
}

/// One run of the SessionStart (`startup`) and UserPromptSubmit (on `prompt`) hooks of `config`
/// in `ctx`'s folder, for a preview: their texts, and what they put into the environment
/// section (the environment layout) for the assembly. Call only in a trusted folder.
pub fn run_start(
    host: &Host,
    ctx: &Context,
    config: &Config,
    model: &str,
    prompt: &str,
) -> (HookRunView, HookParts) {
    let session_id = uuid::Uuid::new_v4().to_string();
    let mut bash = crate::tools::BashConfig {
        env_remove: crate::host::KEY_VARIABLES
            .iter()
            .chain([&crate::host::SECRETS_FD_VARIABLE])
            .map(|v| v.to_string())
            .collect(),
        ..Default::default()
    };
    // In the sandbox a session's hooks get: the same settings; where it cannot run, nobody is
    // asked here, so a hook runs outside it only when the user's settings turned it off.
    crate::session::sandbox::configure(host, &crate::fs::RealFs, &ctx.cwd, &mut bash.sandbox);
    let runner = Runner {
        bash: crate::hooks::run::hook_bash(&bash),
        workspace: crate::tools::Workspace::new(vec![ctx.cwd.clone()], Vec::new()),
        sandbox: std::sync::Arc::default(),
        scrubber: std::sync::Arc::new(crate::scrub::Scrubber::new(std::iter::empty::<&str>())),
        cwd: ctx.cwd.clone(),
        env: crate::hooks::run::session_env(&ctx.cwd, &session_id),
        limits: Default::default(),
    };
    let persist = Persist {
        dir: host.state_dir().map(|d| {
            d.join("preview-hooks")
                .join(&session_id)
                .join("tool-results")
        }),
    };
    let cwd = ctx.cwd.display().to_string();
    let prompt_id = uuid::Uuid::new_v4().to_string();
    let common = |prompt: bool| Common {
        session_id: &session_id,
        transcript_path: "",
        cwd: &cwd,
        prompt_id: prompt.then_some(prompt_id.as_str()),
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return (
            HookRunView {
                note: "the hooks could not be run: no runtime".into(),
                prompt: prompt.to_string(),
                texts: Vec::new(),
                blocked: None,
                notes: Vec::new(),
                tokens: 0,
            },
            HookParts::default(),
        );
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let (ss_runs, ups_runs) = rt.block_on(async {
        let ss = config.select(Event::SessionStart, Some("startup"));
        let input = Input {
            common: common(false),
            fields: Fields::SessionStart {
                hook_event_name: "SessionStart",
                source: "startup",
                model: None,
            },
        };
        let ss_runs = runner.run(&ss, &input.to_bytes(), &[], &cancel).await;
        let ups = config.select(Event::UserPromptSubmit, None);
        let input = Input {
            common: common(true),
            fields: Fields::UserPromptSubmit {
                permission_mode: "default",
                hook_event_name: "UserPromptSubmit",
                prompt,
            },
        };
        let ups_runs = runner.run(&ups, &input.to_bytes(), &[], &cancel).await;
        (ss_runs, ups_runs)
    });
    let mut notes: Vec<String> = outcome::notices(&ss_runs)
        .into_iter()
        .chain(outcome::notices(&ups_runs))
        .map(|n| format!("{} ({}): {}", n.hook.event, n.hook.command, n.text))
        .collect();
    let ss = outcome::session_start(&ss_runs, "startup", &persist);
    let (ups, blocked) = match outcome::user_prompt_submit(&ups_runs, prompt, &persist) {
        Prompt::Go(t) => (t, None),
        Prompt::Blocked(t) | Prompt::Stopped(t) => (Vec::new(), Some(t)),
    };
    let mut texts = Vec::new();
    for (event, list) in [("SessionStart", &ss), ("UserPromptSubmit", &ups)] {
        for t in list {
            texts.push(HookTextView {
                event: event.to_string(),
                tokens: crate::context::estimate_tokens(t) as u64,
                text: t.clone(),
            });
        }
    }
    if ss_runs.is_empty() && ups_runs.is_empty() {
        notes.push("no SessionStart or UserPromptSubmit hook runs here".into());
    }
    let tokens = texts.iter().map(|t| t.tokens).sum();
    let parts = if crate::models::environment_message(model) {
        HookParts {
            session_start: ss,
            user_prompt_submit: ups,
            compacted: false,
        }
    } else {
        HookParts::default()
    };
    (
        HookRunView {
            note: "one run's output: the hooks ran now, for this preview; another run may say something else, and several hooks' texts come in the order they finish".into(),
            prompt: prompt.to_string(),
            texts,
            blocked,
            notes,
            tokens,
        },
        parts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn the_view_lists_every_hook_with_its_status_and_where_it_lands() {
        let text = r#"{"disableAllHooks": false, "hooks": {
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 guard.py --deny rm", "timeout": 5}]}],
  "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "true"}]}],
  "Stop": [{"hooks": [{"type": "prompt", "prompt": "Done?"}]}]
}}"#;
        let fs = MemFs::with_files([("/p/.claude/settings.json", text)]);
        let config = Config::read(
            &fs,
            &[crate::context::settings::SettingsFile {
                path: "/p/.claude/settings.json".into(),
                scope: crate::context::settings::SettingsScope::Project,
                valid: true,
                keys: Vec::new(),
                repository: true,
            }],
            &Default::default(),
        );
        let v = view(&config, false, "claude-opus-5-5").unwrap();
        assert_eq!(v.layout, "environment");
        let rows: Vec<(&str, &str, Option<&str>, &str)> = v
            .hooks
            .iter()
            .map(|h| {
                (
                    h.event.as_str(),
                    h.status.as_str(),
                    h.matcher.as_deref(),
                    h.command.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "PreToolUse",
                    "untrusted",
                    Some("Bash"),
                    "python3 guard.py --deny rm"
                ),
                ("PostToolUseFailure", "notHere", None, "true"),
                ("Stop", "off", None, "Done?"),
            ]
        );
        assert_eq!(v.hooks[0].timeout, Some(5.0));
        assert_eq!(v.hooks[0].line, Some(1));
        let trusted = view(&config, true, "claude-sonnet-4-5").unwrap();
        assert_eq!(trusted.hooks[0].status, "runs");
        assert!(trusted.hooks[0].lands.contains("<system-reminder> block"));
        assert!(view(&Config::default(), true, "x").is_none());
    }
}
