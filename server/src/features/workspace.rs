//! The editor's workspace model, the parts that are not about LSP: which project a file belongs
//! to, the walk's options under the editor's settings, building a walk and what it read, what
//! touching files attaches, the skills and MCP servers of a session, the preview of a session
//! about to start, and which paths can change some context. The language server keeps these
//! per root, with its own caching and invalidation (`lsp/state.rs`); this module computes them.
//!
//! The types are re-exported here so that a front end holding them (as caches) names the
//! features, not the core below.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::check::{is_agent_path, is_instruction_file, is_skill_file};
use super::preview::{self, GitPart, Preview};
use super::settings::Settings;
use crate::assembly::{self, StartInput};
use crate::fs::Fs;
use crate::host::Host;

pub use crate::context::{Attacher, Context, LintOptions, Options as WalkOptions, ParseCache};
pub use crate::extensions::Extensions;
pub use crate::git::{GitError, GitSnapshot, StatusCache};

/// The project of a file outside every workspace folder: the git work tree holding it, else its
/// directory (as `check` run in that directory would judge it).
pub fn project_of(fs: &dyn Fs, host: &Host, path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("/"));
    crate::memory::find_git_roots(fs, dir, &host.git_ceilings)
        .map_or_else(|| dir.to_path_buf(), |r| r.work_tree)
}

/// `settings.additionalDirectories`, resolved against `root`.
fn added_dirs(settings: &Settings, root: &Path) -> Vec<PathBuf> {
    settings
        .additional_directories
        .iter()
        .map(|d| crate::fs::normalize(root, Path::new(d)))
        .collect()
}

/// The walk's options for a session in `root`, with the settings applied (a `memoryDir` that
/// cannot be used is logged and ignored) and the folder's workspace trust looked up at `at`
/// (`preview`: a preview reads a folder nobody was asked about as once trusted; a session
/// reads it restricted).
pub fn walk_options(
    host: &Host,
    settings: &Settings,
    root: &Path,
    at: &crate::trust::Where,
    preview: bool,
) -> WalkOptions {
    let add = added_dirs(settings, root);
    let mut opts = match host.context_options(root, &add, settings.memory_dir.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            crate::log_warn!("memoryDir ignored: {e}");
            host.context_options(root, &add, None).unwrap_or_default()
        }
    };
    opts.trust = crate::trust::of_folder(&crate::fs::RealFs, at, root, preview).0;
    opts
}

/// Where workspace trust is looked up (re-exported for the front end's caches).
pub use crate::trust::Where as TrustPlaces;

/// Builds a walk, reusing `parses` for unchanged files.
pub fn walk(fs: &dyn Fs, opts: &WalkOptions, parses: Arc<ParseCache>) -> Context {
    crate::context::build_with(fs, opts, parses)
}

/// The paths a walk depends on: the files it read and the settings files it looked at
/// (Claude Code's settings change what loads, whether they exist yet or not).
pub fn walk_reads(ctx: &Context) -> impl Iterator<Item = &PathBuf> {
    ctx.files
        .iter()
        .map(|f| &f.path)
        .chain(ctx.settings().looked_at.iter())
}

/// What touching `files` (in order) attaches.
pub fn attach(fs: &dyn Fs, ctx: &Context, files: &[PathBuf]) -> Attacher {
    let mut att = Attacher::new(ctx);
    for f in files {
        att.touch(fs, ctx, f);
    }
    att
}

/// The skills and MCP servers of a session in `ctx` (never starting a server: their tools come
/// from the last connection), and the paths they depend on.
pub fn extensions(
    fs: &dyn Fs,
    host: &Host,
    settings: &Settings,
    ctx: &Context,
) -> (Extensions, Vec<PathBuf>) {
    let folders = added_dirs(settings, &ctx.cwd);
    let var = |k: &str| host.var(k).map(str::to_string);
    let state_dir = host.state_dir();
    let ext = crate::extensions::gather(
        fs,
        ctx,
        &crate::extensions::Input {
            add_dirs: &folders,
            model: &settings.model,
            window: settings.window(),
            budget_variable: host.var(crate::skills::listing::BUDGET_VARIABLE),
            var: &var,
            state_dir: state_dir.as_deref(),
            live: None,
        },
    );
    let mut reads: Vec<PathBuf> = ext.watched().into_iter().collect();
    reads.extend(ext.skills.skills.skills.iter().map(|sk| sk.file.clone()));
    (ext, reads)
}

/// What a session about to start would see.
pub struct Start<'a> {
    pub ctx: &'a Context,
    pub attacher: &'a Attacher,
    pub extensions: &'a Extensions,
    pub touched: &'a [PathBuf],
    pub git: Option<&'a GitPart>,
    /// Run the SessionStart and UserPromptSubmit hooks once with this prompt (a trusted folder
    /// only) and show what they say.
    pub run_hooks: Option<&'a str>,
    /// Where the folder's workspace trust is looked up (the preview shows it).
    pub trust: &'a crate::trust::Where,
}

/// The preview of a new session: assembled as its first request would be, with the tools'
/// tokens added and the skills and MCP servers the touched files discover.
pub fn start_preview(fs: &dyn Fs, host: &Host, settings: &Settings, s: &Start<'_>) -> Preview {
    let hooks = super::hooks::start(fs, host, s.ctx, &settings.model, s.run_hooks);
    // The rules and mode a chat started here now would have.
    let policy = crate::permissions::for_context(
        fs,
        s.ctx,
        &crate::permissions::Options::default(),
        host.bypass_refused(),
    );
    let env = super::permissions::environment(fs, &policy);
    let input = StartInput {
        git: s.git,
        model: &settings.model,
        extensions: Some(s.extensions),
        hooks: Some(&hooks.parts),
        permissions: Some(&env),
        ..StartInput::default()
    };
    let a = assembly::assemble(host, s.ctx, s.attacher, &input);
    let mut p = preview::from_assembly(s.ctx, s.attacher, a, settings.window());
    p.permissions = Some(super::permissions::view(&policy));
    // The whole first request: a chat sends the tool definitions with it.
    p.totals = p.totals.with_tools(crate::session::offered_tools_tokens());
    let discovered = crate::extensions::discover_touched(fs, s.ctx, s.extensions, s.touched);
    let activated = crate::extensions::activate_touched(s.ctx, s.extensions, s.touched);
    preview::with_extensions(&mut p, s.extensions, &discovered, &activated);
    preview::with_hooks(&mut p, hooks.view);
    p.findings.extend(hooks.findings);
    preview::with_trust(&mut p, &gate_of(fs, s.ctx, s.extensions, s.trust));
    p
}

/// The workspace-trust gate of a session about to start in `ctx`'s folder.
pub fn gate_of(
    fs: &dyn Fs,
    ctx: &Context,
    ext: &Extensions,
    at: &crate::trust::Where,
) -> crate::trust::Gate {
    crate::trust::Gate::of(
        &ctx.cwd,
        ctx.settings(),
        Some(&ext.mcp),
        ctx.held_memory_dir.as_ref(),
        &ctx.findings,
        crate::trust::verdict(fs, at, &ctx.cwd),
    )
}

/// Whether `path` is the memory index (`MEMORY.md`).
pub fn is_memory_index(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == crate::memory::INDEX_FILE)
}

/// Would an edit of `path` change some context, whatever was read so far? Instruction files by
/// name and place, skills, `.mcp.json`, the memory index, `~/.claude.json`, anything under the
/// user (or `CLAUDE_CONFIG_DIR`) or managed directory.
pub fn is_config_path(host: &Host, path: &Path) -> bool {
    if is_instruction_file(path)
        || is_skill_file(path)
        || is_agent_path(path)
        || path
            .file_name()
            .is_some_and(|n| n == crate::mcp::config::MCP_FILE)
        || is_memory_index(path)
    {
        return true;
    }
    if let Some(home) = &host.home
        && (path == home.join(".claude.json") || path.starts_with(home.join(".claude")))
    {
        return true;
    }
    if host
        .config_dir
        .as_ref()
        .is_some_and(|d| path.starts_with(d))
    {
        return true;
    }
    path.starts_with(&host.managed_dir)
}

/// What a lint of a file in `root` (walked as `ctx`) needs.
pub fn lint_options(host: &Host, root: &Path, ctx: &Context) -> LintOptions {
    LintOptions {
        cwd: root.to_path_buf(),
        git_root: ctx.git_root.clone(),
        home: host.home.clone(),
        config_dir: host.config_dir.clone(),
    }
}
