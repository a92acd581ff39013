//! Opening a session from the disk, the same for every front end that reads the project itself
//! (the command line, the ACP agent): the walk, the git snapshot, the skills and MCP servers
//! ([`super::equip::gather`]), a new or resumed session ([`super::Store`]), and the hooks a
//! session runs with: compaction that re-reads the instructions and git from the disk, and memory
//! extraction. A front end brings its folder, its model and where compaction reports; it never
//! names the context walk, git or the compactor itself (`tests/e2e/layers.rs`).
//!
//! Where the instructions and the git block come from is a [`Project`]: the disk now
//! ([`Disk`]: the command line, the ACP agent), or the language server's kept walks and git
//! snapshots (current from file events; `lsp/handlers/chat.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::compaction::{self, AutoCompact, Observer, Resume};
use super::config::{Model, ModelConfig};
use super::store::{Resumed, Store};
use super::{Session, equip};
use crate::fs::{Fs, RealFs};
use crate::host::Host;

/// The instruction files as read for a session, and its git block: what a [`Project`] gives.
pub use crate::assembly::GitPart;
pub use crate::context::Context;

/// Where a session's instructions and git block come from.
pub trait Project: Send + Sync {
    /// The instruction files of `root` as a new session reads them.
    fn walk(&self, root: &Path) -> Result<Arc<Context>, String>;
    /// The git block of `cwd` now (`None`: not a repository, git is off, or it failed).
    fn git(&self, cwd: &Path) -> Option<GitPart>;
}

/// The disk now, through the host's options.
#[derive(Clone)]
pub struct Disk {
    pub host: Host,
    /// Take git snapshots (`false`: `--no-git`).
    pub git: bool,
}

impl Project for Disk {
    fn walk(&self, root: &Path) -> Result<Arc<Context>, String> {
        let mut opts = self.host.context_options(root, &[], None)?;
        // A session reads a folder that is not trusted restricted (crate::trust).
        let at = crate::trust::Where::of(&self.host);
        opts.trust = crate::trust::of_folder(&RealFs, &at, root, false).0;
        Ok(Arc::new(crate::context::build(&RealFs, &opts)))
    }

    fn git(&self, cwd: &Path) -> Option<GitPart> {
        self.git.then(|| snapshot(&self.host, cwd)).flatten()
    }
}

/// The compaction policy (its budget holds the window) for `config`: the environment
/// (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, `DISABLE_AUTO_COMPACT`)
/// over `settings` (the defaults on the command line and over ACP; the editor's settings over
/// LSP). Notes on what was ignored go to `note`.
pub fn policy(
    host: &Host,
    config: &ModelConfig,
    settings: &crate::compact::Settings,
    note: &mut dyn FnMut(&str, &str),
) -> crate::compact::Policy {
    let (policy, notes) = compaction::policy(host, config, settings);
    for n in notes {
        note(&n.source, &n.message);
    }
    policy
}

/// How a session is opened.
pub struct Opener<'a> {
    pub host: &'a Host,
    pub model: &'a Model,
    pub policy: &'a crate::compact::Policy,
    /// The instructions and the git block.
    pub project: &'a dyn Project,
    /// More folders for the skills (relative ones start at the session's folder).
    pub add_dirs: &'a [PathBuf],
}

/// Why a session was not resumed.
#[derive(Debug)]
pub enum ResumeError {
    /// No transcript of that id in the folder's project (ours or the reference CLI's).
    NotFound(String),
    /// The transcript is there but cannot be opened (open in another process, unreadable).
    Failed(String),
}

impl std::fmt::Display for ResumeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResumeError::NotFound(m) | ResumeError::Failed(m) => f.write_str(m),
        }
    }
}

impl Opener<'_> {
    /// The skills and MCP servers of a session in `ctx`.
    fn extensions(&self, ctx: &Context) -> crate::extensions::Extensions {
        let dirs: Vec<PathBuf> = self
            .add_dirs
            .iter()
            .map(|d| crate::fs::normalize(&ctx.cwd, d))
            .collect();
        equip::gather(self.host, ctx, self.model, self.policy.budget.window, &dirs)
    }

    /// A new session in `root`.
    pub fn start(&self, root: &Path) -> Result<Session, String> {
        let ctx = self.project.walk(root)?;
        let git = self.project.git(&ctx.cwd);
        let window = self.policy.budget.window;
        let ext = self.extensions(&ctx);
        let store = Store::from_host(self.host);
        Ok(store.start_with(self.host, ctx, git.as_ref(), self.model, window, Some(&ext)))
    }

    /// The session `id` of `root`'s project, ours or the reference CLI's (which continues in a
    /// new session of ours).
    pub fn resume(&self, root: &Path, id: &str) -> Result<Resumed, ResumeError> {
        let ctx = self.project.walk(root).map_err(ResumeError::Failed)?;
        let store = Store::from_host(self.host);
        store.find(&ctx.cwd, id).map_err(ResumeError::NotFound)?;
        // A reference CLI session gets the blocks a new session would send.
        let git = self.project.git(&ctx.cwd);
        let window = self.policy.budget.window;
        let ext = self.extensions(&ctx);
        store
            .resume_with(
                self.host,
                ctx,
                id,
                self.model,
                window,
                git.as_ref(),
                Some(&ext),
            )
            .map_err(ResumeError::Failed)
    }
}

/// The git block of `cwd` now, or `None` (not a repository; an error, logged).
fn snapshot(host: &Host, cwd: &Path) -> Option<GitPart> {
    match crate::git::snapshot(cwd, &host.git_options()) {
        Ok(Some(snap)) => Some(GitPart::from_snapshot(&snap)),
        Ok(None) => None,
        Err(e) => {
            crate::log_warn!("no git snapshot for the session: {}", e.message);
            None
        }
    }
}

/// Compaction for `session` (`resume`: where it stood in a resumed history): the instructions and
/// git re-read from `project`, files re-injected from `fs`, progress reported to `observer`.
pub fn attach_compaction(
    host: &Host,
    session: &Session,
    policy: crate::compact::Policy,
    resume: Option<&Resume>,
    project: Arc<dyn Project>,
    fs: Arc<dyn Fs>,
    observer: Arc<dyn Observer>,
) {
    let root = session.snapshot().cwd();
    let h = host.clone();
    let clock: compaction::Clock = Arc::new(move || h.now());
    let c = match resume {
        None => AutoCompact::new(policy, root.clone(), fs, clock),
        Some(r) => AutoCompact::resumed(policy, &session.history(), r, root.clone(), fs, clock),
    };
    let h = host.clone();
    let reread: compaction::Reread = Arc::new(move || {
        let Ok(ctx) = project.walk(&root) else {
            return compaction::Blocks::default();
        };
        let git = project.git(&ctx.cwd);
        compaction::blocks(&h, &ctx, git.as_ref())
    });
    session.set_compaction(Arc::new(c.with_reread(reread).with_observer(observer)));
}

/// The walk a new session would make in `session`'s folder now (for what changed since it
/// started); the session's own when the folder cannot be read.
pub fn walk_now(project: &dyn Project, session: &Session) -> Arc<Context> {
    project
        .walk(&session.snapshot().cwd())
        .unwrap_or_else(|_| session.snapshot().ctx.clone())
}
