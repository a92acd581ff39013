//! The warm path: `claude-context preview` and `check` asking a running server (`lsp`, `acp`)
//! for the same workspace instead of walking the tree again. What is asked and answered, and how
//! a server answers from what it keeps current; the socket itself is [`crate::rpc::local`].
//!
//! The client sends what its own computation would depend on: the request as it resolved it
//! (folders, files, model, window) and its host (environment without the model's keys, working
//! directory, platform, today's date). The server computes the very same
//! [`super::start_preview::compute_with`] (or [`super::check::check_project_with`]) with a host
//! made of those, reading the instruction files from the disk as the client would, and gives it
//! the git snapshot (and for `check` the project scan) it keeps current from its file watcher
//! ([`Keeper`]): the walk of the work tree is what it saves. Everything else is identical by
//! construction, so the answer is byte for byte the cold one (`tests/e2e/warm.rs` checks this over
//! random edits).
//!
//! A server that cannot vouch for its state declines ([`Answer::Declined`]) and the client
//! computes the answer itself, silently: a folder it does not watch completely, a git
//! configuration the client would read differently (another `HOME`), a status only a full walk
//! could give, a watcher that did not confirm it saw every change made before the request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::check::{self, ProjectScan, Report};
use super::diagnostics::Finding;
use super::preview::Preview;
use super::start_preview::{self, GitResult};
pub use crate::context::ParseCache;
use crate::fs::{Fs, RealFs};
use crate::host::{Clock, Host};

/// What a client's git reads (compared by a [`Keeper`] with its own).
pub use crate::git::GitEnv;

/// The version of this exchange; a server declines any other.
pub const VERSION: u32 = 1;

/// What a client asks.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub version: u32,
    pub host: HostView,
    pub ask: Ask,
}

/// The client's host, as [`Host::from_vars`] takes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostView {
    /// Every variable but the model's keys ([`Host::vars_without_keys`]).
    pub vars: BTreeMap<String, String>,
    pub process_cwd: String,
    pub platform: String,
    pub os_version: String,
    /// The client's local date (the environment section's date).
    pub today: String,
    /// Whether the client runs as root (bypass permissions mode is refused there without
    /// `IS_SANDBOX=1`: the preview's modes follow).
    #[serde(default)]
    pub root: bool,
}

impl std::fmt::Display for HostView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values: they may hold tokens.
        write!(f, "{} variables, cwd {}", self.vars.len(), self.process_cwd)
    }
}

/// What is asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Ask {
    /// `claude-context preview`: [`start_preview::Request`], resolved by the client.
    #[serde(rename_all = "camelCase")]
    Preview {
        cwd: String,
        files: Vec<String>,
        add_dirs: Vec<String>,
        model: Option<String>,
        window: Option<u64>,
        memory_dir: Option<String>,
        no_git: bool,
    },
    /// `claude-context check` in `cwd` (absolute).
    Check { cwd: String },
}

/// What a server answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Answer {
    Preview {
        preview: Box<Preview>,
    },
    Check {
        findings: Vec<Finding>,
        linted: usize,
    },
    /// The server cannot vouch for its state: the client computes the answer itself.
    Declined {
        why: String,
    },
}

/// What a running server keeps current, for the answers.
pub trait Keeper {
    /// Confirms that every change made on disk before now has reached what is kept (the watcher
    /// saw it). `Err` says why not.
    fn settle(&self) -> Result<(), String>;
    /// The git snapshot of a session in `cwd`, from what is kept, for a client whose git reads
    /// `env`. `Err` says why it cannot be given without a full walk.
    fn git(&self, cwd: &Path, env: &GitEnv) -> Result<GitResult, String>;
    /// The project scan of `root` ([`check::scan`]), kept current; `Err` says why not.
    fn scan(&self, root: &Path) -> Result<Arc<ProjectScan>, String>;
    /// The parses of instruction files the server has made (reused when a file's text is the
    /// same: the files are still read from the disk, as the client would read them).
    fn parses(&self) -> Arc<ParseCache>;
}

fn path(s: &str) -> PathBuf {
    PathBuf::from(s)
}

/// A UTF-8 path as a string; `None` for another (such a request goes cold).
fn text(p: &Path) -> Option<String> {
    p.to_str().map(str::to_owned)
}

impl HostView {
    /// The view of `host` (`None` when its working directory is not UTF-8).
    pub fn of(host: &Host) -> Option<HostView> {
        Some(HostView {
            vars: host.vars_without_keys(),
            process_cwd: text(&host.process_cwd)?,
            platform: host.platform.clone(),
            os_version: host.os_version.clone(),
            today: host.today(),
            root: host.root,
        })
    }

    /// The host the client has, minus its keys (which nothing here reads).
    pub fn host(&self) -> Host {
        let mut host = Host::from_vars(
            self.vars.clone(),
            path(&self.process_cwd),
            self.platform.clone(),
            self.os_version.clone(),
            Clock::Fixed(self.today.clone()),
        );
        host.root = self.root;
        host
    }
}

/// The request of `claude-context preview` for `args` (resolved as [`start_preview::compute`]
/// takes them), or `None` when it cannot go over the socket (a path that is not UTF-8).
pub fn preview_request(host: &Host, args: &start_preview::Request<'_>) -> Option<Request> {
    let all = |v: &[PathBuf]| v.iter().map(|p| text(p)).collect::<Option<Vec<_>>>();
    Some(Request {
        version: VERSION,
        host: HostView::of(host)?,
        ask: Ask::Preview {
            cwd: text(args.cwd)?,
            files: all(args.files)?,
            add_dirs: all(args.add_dirs)?,
            model: args.model.map(str::to_owned),
            window: args.window,
            memory_dir: args.memory_dir.map(str::to_owned),
            no_git: args.no_git,
        },
    })
}

/// The request of `claude-context check` in `cwd`.
pub fn check_request(host: &Host, cwd: &Path) -> Option<Request> {
    Some(Request {
        version: VERSION,
        host: HostView::of(host)?,
        ask: Ask::Check { cwd: text(cwd)? },
    })
}

/// The directory a request is about (the server serves those under its folders only).
pub fn cwd_of(req: &Request) -> PathBuf {
    match &req.ask {
        Ask::Preview { cwd, .. } | Ask::Check { cwd } => path(cwd),
    }
}

/// The server's answer to `request` (the bytes of a [`Request`]), made with `keeper`'s state, by
/// the server of the workspace folder whose real path is `folder`: a request about a directory
/// outside it is declined.
pub fn answer(request: &[u8], folder: &Path, keeper: &dyn Keeper) -> Answer {
    let req: Request = match serde_json::from_slice(request) {
        Ok(r) => r,
        Err(e) => {
            return Answer::Declined {
                why: format!("not a request: {e}"),
            };
        }
    };
    // Judged by its real path: `..` and links cannot lead out.
    let cwd = cwd_of(&req);
    let real = RealFs.canonicalize(&cwd);
    if !cwd.is_absolute() || !real.as_ref().is_ok_and(|r| r.starts_with(folder)) {
        return Answer::Declined {
            why: format!("{} is not in this server's folder", cwd.display()),
        };
    }
    match answer_to(&req, keeper) {
        Ok(a) => a,
        Err(why) => Answer::Declined { why },
    }
}

fn answer_to(req: &Request, keeper: &dyn Keeper) -> Result<Answer, String> {
    if req.version != VERSION {
        return Err(format!(
            "version {} (this server speaks {VERSION})",
            req.version
        ));
    }
    let host = req.host.host();
    keeper.settle()?;
    match &req.ask {
        Ask::Preview {
            cwd,
            files,
            add_dirs,
            model,
            window,
            memory_dir,
            no_git,
        } => {
            let cwd = path(cwd);
            let git = if *no_git {
                None
            } else {
                Some(keeper.git(&cwd, &host.git)?)
            };
            let files: Vec<PathBuf> = files.iter().map(|f| path(f)).collect();
            let add_dirs: Vec<PathBuf> = add_dirs.iter().map(|f| path(f)).collect();
            let args = start_preview::Request {
                cwd: &cwd,
                files: &files,
                add_dirs: &add_dirs,
                model: model.as_deref(),
                window: *window,
                memory_dir: memory_dir.as_deref(),
                no_git: *no_git,
                mcp_connect: false,
                // Hooks are run only by the command itself (`--run-hooks` never asks a server).
                run_hooks: None,
                // The command asks only without permission flags of its own.
                permissions: &crate::permissions::Options::default(),
            };
            let preview = start_preview::compute_with(&host, &args, git, keeper.parses())?;
            Ok(Answer::Preview {
                preview: Box::new(preview),
            })
        }
        Ask::Check { cwd } => {
            let cwd = path(cwd);
            let opts = host.context_options(&cwd, &[], None)?;
            let root = check::project_root(&RealFs, &cwd, &opts);
            let scan = keeper.scan(&root)?;
            let git = keeper.git(&cwd, &host.git)?;
            let var = |k: &str| host.var(k).map(str::to_string);
            let report = check::check_project_with(
                &RealFs,
                &cwd,
                &opts,
                &check::Environment {
                    var: &var,
                    path_dirs: &host.path_dirs(),
                    git: &host.git_options(),
                },
                Some((scan, git)),
            );
            Ok(Answer::Check {
                findings: report.by_file.values().flatten().cloned().collect(),
                linted: report.linted,
            })
        }
    }
}

/// The report of a [`Answer::Check`], as [`check::check_project`] would have made it.
pub fn report_of(findings: Vec<Finding>, linted: usize) -> Report {
    let mut report = Report {
        linted,
        ..Report::default()
    };
    for f in findings {
        report.by_file.entry(f.path.clone()).or_default().push(f);
    }
    report
}
