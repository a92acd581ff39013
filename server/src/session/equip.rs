//! What a session has beyond its walk, the same for every front end (the language server, the
//! command line, and the next ones): its skills and MCP servers ([`gather`], before the session
//! starts or resumes: their parts of the system prompt), and the tools that serve them
//! ([`equip`], once it exists: the agent's tools, the `Skill` tool, `ToolSearch` and the MCP
//! tools, the servers themselves), and its hooks ([`super::hooks`]).
//!
//! A front end brings only what it knows: where edits go ([`Editor`]), how the user is asked
//! ([`Asker`]), its other workspace folders; and it runs the servers' future
//! ([`crate::session::mcp::SessionMcp::run`]) as a task of its own, stopping it with the session
//! (and at its own shutdown).

use std::path::PathBuf;
use std::sync::Arc;

use super::config::Model;
use super::hooks::{SessionHooks, Setup};
use super::mcp::{Options, SessionMcp};
use super::trust::SessionTrust;
use super::{Session, SessionTools, tools_config};
use crate::context::Context;
use crate::extensions::{self, Extensions};
use crate::fs::RealFs;
use crate::host::{Host, KEY_VARIABLES};
use crate::tools::{Asker, Editor};

/// The skills and MCP servers of a session starting (or resuming) in `ctx`, as its system
/// prompt lists them: the skills listing under `model`'s budget; the MCP configuration (the
/// servers' parts come at the first request). An entry's `${VAR}` never expands a variable that
/// can hold a key, nor any variable whose value is the key.
pub fn gather(
    host: &Host,
    ctx: &Context,
    model: &Model,
    window: u64,
    add_dirs: &[PathBuf],
) -> Extensions {
    let secret = model.secret.as_ref().map(|s| s.expose().to_string());
    let key_variable = model.config.key_variable.clone();
    let var = |k: &str| {
        if KEY_VARIABLES.contains(&k) || key_variable.as_deref() == Some(k) {
            return None;
        }
        host.var(k)
            .filter(|v| {
                secret
                    .as_deref()
                    .is_none_or(|s| s.is_empty() || !v.contains(s))
            })
            .map(str::to_string)
    };
    extensions::gather(
        &RealFs,
        ctx,
        &extensions::Input {
            add_dirs,
            model: &model.config.model,
            window,
            budget_variable: host.var(crate::skills::listing::BUDGET_VARIABLE),
            var: &var,
            state_dir: None,
            live: None,
        },
    )
    .for_session()
}

/// The servers' bounds: [`crate::mcp::client::Limits`]'s, with the reference CLI's
/// `MCP_TIMEOUT` (connection, ms) and `MCP_TOOL_TIMEOUT` (one call, ms) when set.
fn limits(host: &Host) -> crate::mcp::client::Limits {
    let ms = |name: &str| {
        host.var(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
    };
    let mut l = crate::mcp::client::Limits::default();
    if let Some(d) = ms("MCP_TIMEOUT") {
        l.connect = d;
    }
    if let Some(d) = ms("MCP_TOOL_TIMEOUT") {
        l.call = d;
    }
    l
}

/// What a front end gives a session's tools.
pub struct Front {
    /// The editor's buffers, or [`crate::tools::DiskOnly`].
    pub editor: Arc<dyn Editor>,
    /// `chat/permission`, or the terminal.
    pub asker: Arc<dyn Asker>,
    /// The front end's other workspace folders (the session's own comes first).
    pub folders: Vec<PathBuf>,
    /// Told of the files the session writes itself besides its tools' (an MCP server's approval
    /// in `.claude/settings.local.json`), so the front end's caches and previews follow.
    pub wrote: Option<Wrote>,
    /// The editor's own workspace trust, when it has one (VS Code): the answer, no question.
    pub editor_trust: Option<bool>,
    /// Called when the user answered the trust question (the editor refreshes its previews).
    pub on_trust: Option<super::trust::OnAnswer>,
    /// Its permission flags or requests (rules, the mode, `--add-dir`, trust).
    pub permissions: crate::permissions::Options,
    /// MCP servers the editor offers for this session (ACP `session/new`): used beside the
    /// configured ones after the approval a project's server needs ([`crate::mcp::offered`]).
    pub offered: Vec<super::mcp::Offered>,
}

/// The permission policy of a session in `ctx`'s folder with `opts` (what [`equip`] gives its
/// tools; the preview shows the same).
pub fn policy(
    host: &Host,
    ctx: &Context,
    opts: &crate::permissions::Options,
) -> crate::permissions::Policy {
    crate::permissions::for_context(&RealFs, ctx, opts, host.bypass_refused())
}

/// See [`Front::wrote`].
pub type Wrote = Arc<dyn Fn(&[PathBuf]) + Send + Sync>;

/// A session's tools, its workspace trust, and its MCP servers when it has any (their future
/// is the front end's to run: [`SessionMcp::run`]).
pub struct Equipped {
    pub tools: Arc<SessionTools>,
    pub servers: Option<Arc<SessionMcp>>,
    pub trust: Arc<SessionTrust>,
}

/// The workspace trust of `session` (its folder's, as it stands; settled at its first turn),
/// and its MCP servers: the configured ones and those the editor offers (which wait for trust
/// as a project's do, so they count in the gate).
fn session_trust(
    host: &Host,
    session: &Session,
    front: &Front,
) -> (Arc<SessionTrust>, Option<crate::mcp::Config>) {
    let snap = session.snapshot();
    let at = crate::trust::Where::of(host).with_editor(front.editor_trust);
    let folder = snap.cwd();
    let verdict = crate::trust::verdict(&RealFs, &at, &folder);
    let ctx = &snap.ctx;
    let mut mcp = snap.extensions.as_ref().map(|e| e.mcp.clone());
    if !front.offered.is_empty() {
        let config = mcp.get_or_insert_with(crate::mcp::Config::default);
        let out = crate::mcp::offered::servers(
            &RealFs,
            &front.offered,
            config,
            &folder,
            verdict.trusted(),
            host.state_dir().as_deref(),
        );
        for why in &out.dropped {
            crate::log_warn!("{why}");
        }
        config.servers.extend(out.servers);
        config
            .servers
            .sort_by(|a, b| crate::mcp::texts::utf16_cmp(&a.name, &b.name));
    }
    let gate = crate::trust::Gate::of(
        &folder,
        ctx.settings(),
        mcp.as_ref(),
        ctx.held_memory_dir.as_ref(),
        &ctx.findings,
        verdict,
    );
    let trust = SessionTrust::new(
        gate,
        at,
        front.asker.clone(),
        host.today(),
        front.on_trust.clone(),
    );
    (trust, mcp)
}

/// The tools of `session`, new or resumed: the agent's, the `Skill` tool over the skills it
/// started with, and its MCP servers (`ToolSearch`, the loaded tools, calls), the tools a
/// resumed history loaded included.
pub fn equip(host: &Host, session: &Session, model: &Model, front: Front) -> Equipped {
    let snap = session.snapshot();
    let (trust, mcp) = session_trust(host, session, &front);
    // One notion of trust: the session's (the editor's, our record, Claude Code's). The rules
    // of a folder trusted during this session apply from the next one, as its
    // `autoMemoryDirectory` does (this session's tools and workspace are set by then).
    let mut opts = front.permissions.clone();
    opts.trusted = opts.trusted.or(Some(trust.trusted()));
    let policy = Arc::new(policy(host, &snap.ctx, &opts));
    let mut config = tools_config(snap.cwd(), &front.folders, model);
    // The additional working directories (settings, `--add-dir`) widen where tools may look
    // without a prompt (permissions-trust.md section 8).
    let additional: Vec<PathBuf> = policy
        .additional_dirs()
        .iter()
        .map(|(d, _)| d.clone())
        .collect();
    config.workspace = crate::tools::Workspace::new(config.workspace.roots().to_vec(), additional);
    // Outside them, the user is asked (the reference's behaviour), unless a rule decides.
    config.outside = crate::tools::OutsidePolicy::Ask;
    config.home = host.home.clone();
    config.policy = policy.clone();
    // Where Bash runs: the sandbox's settings (it writes to the workspace and the additional
    // directories above).
    super::sandbox::configure(host, &RealFs, &snap.cwd(), &mut config.bash.sandbox);
    let env_remove = config.bash.env_remove.clone();
    // One sandbox state for Bash and the hooks: one private `/tmp`, one answer to "run commands
    // without a sandbox".
    let sandbox = Arc::new(crate::tools::SandboxRuntime::default());
    // The hooks of the session's settings, as they are now: they run around its turns, its
    // tool calls (a tool's question goes to PermissionRequest hooks first) and compactions.
    let hooks = SessionHooks::new(Setup {
        session_id: session.id(),
        transcript: session.journal().path(),
        model: &model.config.model,
        snapshot: snap.clone(),
        bash: config.bash.clone(),
        workspace: config.workspace.clone(),
        sandbox: sandbox.clone(),
        secrets: config.scrub.clone(),
        state_dir: host.state_dir(),
        policy: policy.clone(),
        trust: Some(trust.clone()),
    })
    .map(Arc::new);
    let asker = match &hooks {
        Some(h) => {
            session.set_hooks(h.clone());
            if let Some(c) = session.compaction() {
                c.set_hooks(h.clone());
            }
            h.wrap(front.asker.clone())
        }
        None => front.asker.clone(),
    };
    let mut tools = super::skills::attach(
        SessionTools::new(config, front.editor, asker).with_sandbox(sandbox),
        session,
    );
    if snap.agents().is_some() {
        tools = tools.with_agents();
    }
    let limits = limits(host);
    // `MCP_CONNECTION_NONBLOCKING=0` (the reference CLI's variable): the first request waits
    // for every server, until its connection deadline has passed.
    let first_wait = match host.var("MCP_CONNECTION_NONBLOCKING") {
        Some("0" | "false") => limits.connect + std::time::Duration::from_secs(1),
        _ => super::mcp::FIRST_REQUEST_WAIT,
    };
    let servers = mcp.as_ref().and_then(|config| {
        SessionMcp::new(
            config,
            Options {
                cwd: snap.cwd(),
                limits,
                env_remove,
                secret: model.secret.as_ref().map(|s| s.expose().to_string()),
                state_dir: host.state_dir(),
                date: host.today(),
                // The tools' asker: its questions are scrubbed of the key.
                asker: tools.tools().asker().clone(),
                first_wait,
                wrote: front.wrote,
                trust: Some(trust.clone()),
                policy,
            },
        )
    });
    let tools = match &servers {
        Some(m) => {
            m.restore_loaded(crate::conversation::loaded_tools(&session.history()));
            tools.with_mcp(m.clone())
        }
        None => tools,
    }
    .with_trust(trust.clone());
    Equipped {
        tools: Arc::new(tools),
        servers,
        trust,
    }
}
