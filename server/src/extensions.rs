//! Skills and MCP servers at a session's start: what the user's files add to the environment
//! part of the system prompt, gathered once for the assembly ([`crate::assembly`]) and its views
//! (the preview, a chat session).
//!
//! [`gather`] discovers the skills and lays out their listing under the model's budget, reads
//! the MCP configuration and `~/.claude.json`, and gives each server a status: what a running
//! session reports ([`Input::live`]), else what the last connection learnt (the cache), else
//! only whether it may start. **It never starts a server**: a preview shows a server's cost from
//! the last connection, or says it is unknown (`claude-context preview --mcp-connect` connects
//! the approved ones first, on request).
//!
//! Core: no environment read (the caller passes the budget variable and a lookup for `${VAR}`
//! expansion), no IO but through [`Fs`].

use std::path::{Path, PathBuf};

use crate::context::claude_json::{self, ClaudeJson};
use crate::context::{Context, Finding};
use crate::fs::Fs;
use crate::mcp::{self, Approval, ServerState, Status, Transport};
use crate::skills::{self, SessionListing};

/// A running session's view of a server by name: its status and what it listed.
pub type Live<'a> = &'a dyn Fn(&str) -> Option<(Status, Option<mcp::client::Listing>)>;

/// What gathering depends on besides the walk.
pub struct Input<'a> {
    /// `--add-dir` folders (their `.claude/skills`).
    pub add_dirs: &'a [PathBuf],
    /// The model (its characters per token) and the window the budget derives from.
    pub model: &'a str,
    pub window: u64,
    /// `SLASH_COMMAND_TOOL_CHAR_BUDGET`.
    pub budget_variable: Option<&'a str>,
    /// The environment, for `${VAR}` in MCP entries.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// Where the last connections' listings are kept (`$XDG_STATE_HOME/claude-context`).
    pub state_dir: Option<&'a Path>,
    /// A running session's own view of a server, by name: it wins over the cache.
    pub live: Option<Live<'a>>,
}

/// Skills and MCP servers of a session's start.
#[derive(Clone, Debug)]
pub struct Extensions {
    pub skills: SessionListing,
    /// The skills listing's budget, in display width.
    pub budget: u64,
    pub mcp: mcp::Config,
    /// Per configured server, in name order.
    pub servers: Vec<ServerState>,
    /// What the servers add to the environment message.
    pub parts: mcp::Parts,
    /// `~/.claude.json`, when it exists (for the files a client watches).
    pub global_config: Option<PathBuf>,
    /// What is wrong in the skills, the agents, `.mcp.json` and `~/.claude.json`.
    pub findings: Vec<Finding>,
    /// The enabled plugins (their skills, servers and styles are in the fields above).
    pub plugins: crate::plugins::Plugins,
    /// Every output style the session can choose.
    pub styles: crate::styles::Styles,
    /// The `outputStyle` setting and its file.
    pub style_setting: Option<crate::context::settings::Sourced<String>>,
    /// The active output style: `None` for the default (none set, `default`, an unknown name).
    pub style: Option<crate::styles::Style>,
    /// The agent types the `Agent` tool runs (built-in, project, user; plugins' once their
    /// sources: [`agent_sources`]). `None`: not listed (a session without the
    /// `Agent` tool, or one a deny rule removed).
    pub agents: Option<crate::agents::Agents>,
}

impl Extensions {
    /// The skills listing text, when there is one.
    pub fn skills_text(&self) -> Option<&str> {
        self.skills.listing.text.as_deref()
    }

    /// The texts the environment section gains, in the reference CLI's order: the
    /// deferred-tools list, the failed and connecting notes, the agent types, the MCP
    /// instructions, the skills (`skills-mcp.md` section 1).
    pub fn environment_parts(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .parts
            .before_instructions()
            .map(str::to_string)
            .collect();
        out.extend(self.agents.as_ref().map(crate::agents::Agents::listing));
        out.extend(self.parts.instructions.clone());
        out.extend(self.skills_text().map(str::to_string));
        out
    }

    /// What a chat session starts with: the skills listing and the MCP configuration, without
    /// the preview's MCP parts and server states (those come from the session's own servers:
    /// [`crate::session::mcp::SessionMcp::freeze`] at the first request).
    pub fn for_session(&self) -> Extensions {
        Extensions {
            parts: mcp::Parts::default(),
            servers: Vec::new(),
            ..self.clone()
        }
    }

    /// Every file and folder a change to which changes this (an editor watches them).
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut out = self.skills.skills.folders.clone();
        out.extend(self.mcp.files.iter().cloned());
        out.extend(self.plugins.files.iter().cloned());
        out.extend(self.styles.folders.iter().cloned());
        if let Some(a) = &self.agents {
            out.extend(a.folders.iter().cloned());
        }
        out
    }

    /// The same with the output style `name` chosen (`None` or `default`: the default; an
    /// unknown name gives the default, silently, as the reference does).
    pub fn with_style(mut self, name: Option<&str>) -> Extensions {
        self.style = self.styles.find(name).cloned();
        self
    }
}

/// Where a session in `ctx` finds agent types: the project's and the user's folders, then each
/// enabled plugin's `agents/` ([`crate::agents::Source::plugin`]: named `<plugin>:<name>` and
/// sorted with the others).
pub fn agent_sources(
    ctx: &Context,
    plugins: &crate::plugins::Plugins,
) -> Vec<crate::agents::Source> {
    let mut sources = crate::agents::sources(ctx);
    sources.extend(
        plugins
            .plugins
            .iter()
            .map(|p| crate::agents::Source::plugin(&p.name, &p.root)),
    );
    sources
}

/// Gathers the skills, agent types and MCP servers of a session in `ctx`.
pub fn gather(fs: &dyn Fs, ctx: &Context, input: &Input<'_>) -> Extensions {
    let settings = ctx.settings();
    let cj: Option<ClaudeJson> = ctx
        .global_config()
        .and_then(|p| claude_json::read(fs, p, &ctx.project_root));
    // Plugins: what they add joins each kind below under their names.
    let plugins = crate::plugins::enabled(fs, ctx);
    let plugin_roots = plugins.roots();
    // Skills.
    let mut opts = skills::Options::for_context(ctx, input.add_dirs);
    opts.plugins = plugin_roots.clone();
    let found = skills::discover(fs, &opts);
    let budget = skills::listing::budget(
        input.budget_variable,
        input.window,
        crate::models::chars_per_token(input.model),
        settings
            .skill_listing_budget_fraction
            .as_ref()
            .map(|f| f.value),
    );
    let usage = cj
        .as_ref()
        .map(|c| skills::usage_order(&c.skill_usage))
        .unwrap_or_default();
    let listing = skills::list(found, &settings.skill_overrides, budget, &usage);
    let mut findings = listing.skills.findings.clone();
    // MCP servers. `${VAR}` never expands to a key: an entry (a header, an `env` value) that
    // names one keeps it as written, and `check` reports the variable as unset.
    let var = |k: &str| {
        if crate::host::KEY_VARIABLES.contains(&k) {
            None
        } else {
            (input.var)(k)
        }
    };
    let config = mcp::config::read(
        fs,
        &mcp::config::Options {
            cwd: ctx.cwd.clone(),
            settings,
            claude_json: cj.as_ref(),
            var: &var,
            plugins: &plugins
                .plugins
                .iter()
                .map(|p| mcp::config::PluginServers {
                    name: p.name.clone(),
                    root: p.root.clone(),
                    data: p.data.clone(),
                    users_choice: p.enabled_by != crate::plugins::EnabledBy::Repository,
                })
                .collect::<Vec<_>>(),
        },
    );
    findings.extend(config.findings.iter().cloned());
    if let Some(c) = &cj {
        findings.extend(c.findings.iter().cloned());
    }
    let servers: Vec<ServerState> = config
        .servers
        .iter()
        .map(|s| state_of(fs, ctx, s, input))
        .collect();
    let parts = mcp::parts(&servers, &[]);
    // Output styles.
    let styles = crate::styles::discover(
        fs,
        &crate::styles::Folders {
            user_dir: ctx.user_dir(),
            project: &ctx.cwd,
            plugins: &plugin_roots,
        },
    );
    findings.extend(plugins.findings.iter().cloned());
    findings.extend(styles.findings.iter().cloned());
    let style_setting = crate::styles::setting(fs, settings);
    let style = styles
        .find(style_setting.as_ref().map(|s| s.value.as_str()))
        .cloned();
    let agents = crate::agents::discover(fs, &agent_sources(ctx, &plugins), input.model);
    findings.extend(agents.findings.iter().cloned());
    Extensions {
        agents: Some(agents),
        skills: listing,
        budget,
        mcp: config,
        servers,
        parts,
        global_config: ctx.global_config().map(Path::to_path_buf),
        findings,
        plugins,
        styles,
        style_setting,
        style,
    }
}

fn state_of(fs: &dyn Fs, ctx: &Context, s: &mcp::Server, input: &Input<'_>) -> ServerState {
    let state = |status, listing| ServerState {
        server: s.clone(),
        status,
        listing,
    };
    match &s.approval {
        Approval::Disabled(by) => return state(Status::Disabled(by.clone()), None),
        Approval::Pending => return state(Status::NotApproved, None),
        Approval::Untrusted(_) => {
            let status = match ctx.settings().trust.state {
                crate::context::settings::TrustState::NotTrusted => Status::NotTrusted,
                _ => Status::WaitingForTrust,
            };
            return state(status, None);
        }
        Approval::Approved(_) => {}
    }
    match &s.transport {
        Transport::Invalid(why) => return state(Status::Unsupported(why.clone()), None),
        Transport::Remote { kind, .. } => {
            return state(Status::Unsupported(mcp::http::unsupported(kind)), None);
        }
        Transport::Stdio { .. } | Transport::Http { .. } => {}
    }
    if let Some(live) = input.live
        && let Some((status, listing)) = live(&s.name)
    {
        return state(status, listing);
    }
    let cached = input
        .state_dir
        .and_then(|dir| mcp::cache::read(fs, dir, &ctx.cwd, &s.name, &s.entry));
    match cached {
        Some(c) => match (c.listing, c.failure) {
            (Some(l), _) => state(Status::Cached { date: c.date }, Some(l)),
            (None, Some((code, message))) => state(Status::Failed { code, message }, None),
            (None, None) => state(Status::Approved, None),
        },
        None => state(Status::Approved, None),
    }
}

/// What touching a file discovered: the skills below cwd, and the message the session sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// The touched file.
    pub trigger: PathBuf,
    pub discovery: skills::nested::Discovery,
}

/// What touching a file activated: the conditional skills (`paths:`) it made available, and the
/// message the session sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activated {
    /// The touched file.
    pub trigger: PathBuf,
    pub activation: skills::conditional::Activation,
}

/// The conditional skills that touching `touched` in order activates (each skill once).
pub fn activate_touched(ctx: &Context, ext: &Extensions, touched: &[PathBuf]) -> Vec<Activated> {
    let mut a = skills::conditional::Activator::new(
        &ctx.cwd,
        &ext.skills.skills,
        &ctx.settings().skill_overrides,
    );
    touched
        .iter()
        .filter_map(|f| {
            a.touch(&ctx.session_path(f)).map(|activation| Activated {
                trigger: f.clone(),
                activation,
            })
        })
        .collect()
}

/// The skills below cwd that touching `touched` in order discovers (each folder once).
pub fn discover_touched(
    fs: &dyn Fs,
    ctx: &Context,
    ext: &Extensions,
    touched: &[PathBuf],
) -> Vec<Discovered> {
    let mut d = skills::nested::Discoverer::new(
        &ctx.cwd,
        &ext.skills.skills,
        skills::max_desc_chars(ctx.settings()),
    );
    touched
        .iter()
        .filter_map(|f| {
            let file = ctx.session_path(f);
            d.touch(fs, &file).map(|discovery| Discovered {
                trigger: f.clone(),
                discovery,
            })
        })
        .collect()
}
