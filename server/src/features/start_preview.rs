//! The preview of a session about to start in a folder on disk (`claude-context preview`): the
//! walk, the files touched, the git snapshot, skills and MCP servers, assembled exactly as a
//! session's first request would be, with the tools' tokens added. With `mcp_connect`, the
//! approved servers are started once to list their tools (the lists are kept for the next
//! previews). Returns a [`Preview`]; the front end renders it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::preview::Preview;
use crate::assembly::{self, GitPart, StartInput};
use crate::context::{Attacher, ParseCache};
use crate::extensions;
use crate::fs::RealFs;
use crate::host::Host;
use crate::mcp::Status;
use crate::mcp::client::{self, Launch, Limits};

/// What to preview.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The session's folder: absolute, as the session would see it (`Host::session_dir`).
    pub cwd: &'a Path,
    /// Files touched (absolute): the rules they attach are shown.
    pub files: &'a [PathBuf],
    /// `--add-dir` folders (absolute).
    pub add_dirs: &'a [PathBuf],
    /// The model (its window when `window` is `None`); the default model if `None`.
    pub model: Option<&'a str>,
    pub window: Option<u64>,
    pub memory_dir: Option<&'a str>,
    pub no_git: bool,
    /// Start the approved MCP servers to list their tools (and remember the lists), instead of
    /// using what the last connection listed.
    pub mcp_connect: bool,
    /// Run the SessionStart and UserPromptSubmit hooks once (in a trusted folder only), with
    /// this prompt, and show their texts.
    pub run_hooks: Option<&'a str>,
    /// The command line's permission rules and mode (`--allowed-tools`, `--permission-mode`).
    pub permissions: &'a crate::permissions::Options,
}

/// The git snapshot as [`crate::git::snapshot`] gives it.
pub type GitResult = Result<Option<crate::git::GitSnapshot>, crate::git::GitError>;

/// Builds the preview: the git snapshot runs on its own thread while the walk reads files and
/// the touched files attach (neither depends on git), so only assembling waits for git.
pub fn compute(host: &Host, args: &Request<'_>) -> Result<Preview, String> {
    compute_with(host, args, None, Arc::default())
}

/// [`compute`], with the git snapshot given (a running server's, kept current: `warm`) instead
/// of taken, and the parses of texts seen before reused (`parses` compares each file's whole
/// text: every file is still read). `git` is ignored with `no_git`.
pub fn compute_with(
    host: &Host,
    args: &Request<'_>,
    given: Option<GitResult>,
    parses: Arc<ParseCache>,
) -> Result<Preview, String> {
    let (cwd, add_dirs, touched) = (args.cwd, args.add_dirs, args.files);
    let mut opts = host.context_options(cwd, add_dirs, args.memory_dir)?;
    // A preview runs nothing: a folder nobody was asked about is shown as once trusted, what
    // waits for trust listed (and no project MCP server connected, even with `mcp_connect`).
    let at = crate::trust::Where::of(host);
    opts.trust = crate::trust::of_folder(&RealFs, &at, cwd, true).0;
    let git_opts = host.git_options();
    let fs = RealFs;
    let (ctx, attacher, git) = std::thread::scope(|s| {
        let git = match given {
            Some(g) => (!args.no_git).then_some(Ok(g)),
            None => (!args.no_git).then(|| Err(s.spawn(|| crate::git::snapshot(cwd, &git_opts)))),
        };
        let ctx = crate::context::build_with(&fs, &opts, parses);
        let mut attacher = Attacher::new(&ctx);
        for f in touched {
            attacher.touch(&fs, &ctx, f);
        }
        let git = git.and_then(|g| match g {
            Ok(given) => Some(given),
            Err(h) => h.join().ok(),
        });
        (ctx, attacher, git)
    });
    let git_findings = git
        .as_ref()
        .map(super::check::git_findings)
        .unwrap_or_default();
    let git = match git {
        Some(Ok(Some(snap))) => Some(GitPart::from_snapshot(&snap)),
        Some(Err(e)) => {
            crate::log_warn!("git snapshot skipped: {}", e.message);
            None
        }
        _ => None,
    };
    let model = args.model.unwrap_or(assembly::DEFAULT_MODEL);
    let window = args.window.unwrap_or_else(|| crate::models::window(model));
    let var = |k: &str| host.var(k).map(str::to_string);
    let state_dir = host.state_dir();
    let mut ext_input = extensions::Input {
        add_dirs,
        model,
        window,
        budget_variable: host.var(crate::skills::listing::BUDGET_VARIABLE),
        var: &var,
        state_dir: state_dir.as_deref(),
        live: None,
    };
    let mut ext = extensions::gather(&fs, &ctx, &ext_input);
    if args.mcp_connect {
        let live = connect_approved(host, &ctx.cwd, &ext, state_dir.as_deref());
        let lookup = |name: &str| live.get(name).cloned();
        ext_input.live = Some(&lookup);
        ext = extensions::gather(&fs, &ctx, &ext_input);
    }
    // The hooks: listed; run only when asked, and only in a trusted folder.
    let hooks = super::hooks::start(&fs, host, &ctx, model, args.run_hooks);
    let mut perms = args.permissions.clone();
    perms.add_dirs.extend(add_dirs.iter().cloned());
    let policy = crate::session::equip::policy(host, &ctx, &perms);
    let env = super::permissions::environment(&fs, &policy);
    let input = StartInput {
        git: git.as_ref(),
        model,
        extensions: Some(&ext),
        hooks: Some(&hooks.parts),
        permissions: Some(&env),
        ..StartInput::default()
    };
    let a = assembly::assemble(host, &ctx, &attacher, &input);
    let mut p = super::preview::from_assembly(&ctx, &attacher, a, window);
    p.permissions = Some(super::permissions::view(&policy));
    // The whole first request: a chat sends the tool definitions with it.
    p.totals = p.totals.with_tools(crate::session::offered_tools_tokens());
    let discovered = extensions::discover_touched(&fs, &ctx, &ext, touched);
    let activated = extensions::activate_touched(&ctx, &ext, touched);
    super::preview::with_extensions(&mut p, &ext, &discovered, &activated);
    super::preview::with_hooks(&mut p, hooks.view);
    p.findings.extend(hooks.findings);
    super::preview::with_trust(&mut p, &super::workspace::gate_of(&fs, &ctx, &ext, &at));
    p.findings.extend(git_findings);
    Ok(p)
}

type Live = std::collections::HashMap<String, (Status, Option<crate::mcp::client::Listing>)>;

/// Starts (reaches) every approved stdio (http) server at once, lists it, stops it, and remembers what it
/// listed (or why it failed) for the next previews. Asked for by `--mcp-connect` only: a
/// preview never starts a process unasked, and never one that is not approved.
fn connect_approved(
    host: &Host,
    cwd: &Path,
    ext: &extensions::Extensions,
    state_dir: Option<&Path>,
) -> Live {
    let remove: Vec<String> = crate::host::KEY_VARIABLES
        .iter()
        .map(|v| v.to_string())
        .collect();
    let launches: Vec<Launch> = ext
        .servers
        .iter()
        .filter(|s| s.server.approval.may_start())
        .filter_map(|s| s.server.launch(cwd, &remove))
        .map(|l| {
            crate::host::KEY_VARIABLES
                .iter()
                .filter_map(|v| host.secret(v))
                .fold(l, |l, k| l.without_secret(Some(k.expose())))
        })
        .collect();
    if launches.is_empty() {
        return Live::new();
    }
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return Live::new();
    };
    let limits = Limits::default();
    let cancel = CancellationToken::new();
    let results = rt.block_on(futures::future::join_all(launches.iter().map(|l| {
        let (limits, cancel) = (&limits, &cancel);
        async move {
            match client::connect(l, limits, cancel).await {
                Ok(conn) => {
                    let listing = conn.listing.clone();
                    conn.stop().await;
                    (l.name.clone(), Ok(listing))
                }
                Err(e) => {
                    if !e.stderr.trim().is_empty() {
                        crate::log_warn!("MCP server {}: {}", l.name, e.stderr.trim());
                    }
                    (l.name.clone(), Err((e.code, e.message)))
                }
            }
        }
    })));
    let mut live = Live::new();
    for (name, r) in results {
        let Some(s) = ext.mcp.get(&name) else {
            continue;
        };
        let entry = crate::mcp::cache::Entry {
            server: name.clone(),
            entry: s.entry.clone(),
            date: host.today(),
            listing: r.as_ref().ok().cloned(),
            failure: r.as_ref().err().cloned(),
        };
        if let Some(dir) = state_dir
            && let Err(e) = crate::mcp::cache::write(&RealFs, dir, cwd, &entry)
        {
            crate::log_warn!("MCP server {name}: its tool list was not kept: {e}");
        }
        let state = match r {
            Ok(l) => (Status::Running, Some(l)),
            Err((code, message)) => (Status::Failed { code, message }, None),
        };
        live.insert(name, state);
    }
    live
}
