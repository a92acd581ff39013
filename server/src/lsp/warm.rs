//! The language server's side of the warm path: for each workspace folder it binds the folder's
//! local socket ([`crate::rpc::local`]) and answers `claude-context preview` and `check` run in
//! that folder from what it keeps current ([`crate::features::warm`]): the git status its file
//! watcher keeps (`StatusCache::kept_snapshot`) and the project scan, re-made only
//! when the tree's shape changed.
//!
//! It answers only when it can vouch for that state, else declines and the command computes the
//! answer itself: the server's own watcher must cover every folder ([`Scope::Everything`]: an
//! editor's watcher reports changes when it likes, so nothing says it has reported all of them
//! yet), and it must have handled every change made before the request
//! ([`ServerWatch::settle`]); the git block must be on; the client's git must read the same
//! configuration; the request must be about a directory of this folder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Backend;
use super::watch::{Scope, ServerWatch};
use crate::features::check::ProjectScan;
use crate::features::start_preview::GitResult;
use crate::features::warm::{self, Keeper};
use crate::rpc::local;
use crate::tasks::{OnConflict, TaskKind};

/// How long an answer may wait for the watcher to catch up (the client gives up at 200 ms).
const SETTLE_WAIT: Duration = Duration::from_millis(100);
/// How long an answer may wait for a snapshot the server is taking itself.
const CACHE_WAIT: Duration = Duration::from_millis(50);

/// Scans kept per root, with the watcher's structure count they were made at.
type Scans = Arc<Mutex<HashMap<PathBuf, (u64, Arc<ProjectScan>)>>>;

/// Serves the socket of every workspace folder (a task each, ended at shutdown: the socket is
/// removed then). Nothing is served when the folder of sockets is not private to the user.
pub fn start(b: &Backend) {
    for folder in b.state.folders() {
        serve_folder(b, folder);
    }
}

/// The folder of sockets of this server.
fn socket_dir(b: &Backend) -> Option<PathBuf> {
    local::socket_dir(
        b.state.env.var("XDG_RUNTIME_DIR"),
        b.state.env.state_dir().as_deref(),
    )
}

/// Binds and serves the socket of `folder` (a task).
pub fn serve_folder(b: &Backend, folder: PathBuf) {
    let Some(dir) = socket_dir(b) else {
        return;
    };
    let b2 = b.clone();
    let key = format!("warm:{}", folder.display());
    b.spawn(
        TaskKind::Refresh,
        key,
        OnConflict::Join,
        move |token| async move {
            let real = std::fs::canonicalize(&folder).unwrap_or_else(|_| folder.clone());
            let bound = match local::bind(&dir, &real) {
                Ok(Some(bound)) => bound,
                Ok(None) => {
                    crate::log_debug!(
                        "another server answers for {} on its socket",
                        real.display()
                    );
                    return;
                }
                Err(e) => {
                    crate::log_info!("no local socket for {}: {e}", real.display());
                    return;
                }
            };
            let listener = match bound
                .listener
                .try_clone()
                .and_then(|l| {
                    l.set_nonblocking(true)?;
                    Ok(l)
                })
                .and_then(tokio::net::UnixListener::from_std)
            {
                Ok(l) => l,
                Err(e) => {
                    crate::log_info!("no local socket for {}: {e}", real.display());
                    return;
                }
            };
            crate::log_debug!(
                "answering for {} at {}",
                real.display(),
                bound.path.display()
            );
            let keeper = Arc::new(FolderKeeper {
                b: b2.detached(),
                folder,
                real,
                dir,
                scans: Scans::default(),
            });
            loop {
                let conn = tokio::select! {
                    c = listener.accept() => c,
                    _ = token.cancelled() => break,
                };
                let Ok((conn, _)) = conn else { continue };
                let Ok(conn) = conn.into_std().and_then(|c| {
                    c.set_nonblocking(false)?;
                    Ok(c)
                }) else {
                    continue;
                };
                let k = keeper.clone();
                tokio::task::spawn_blocking(move || {
                    let r = local::serve_one(conn, |req| {
                        let a = warm::answer(req, &k.real, &*k);
                        serde_json::to_vec(&a).unwrap_or_default()
                    });
                    if let Err(e) = r {
                        crate::log_debug!("local socket: {e}");
                    }
                });
            }
            drop(bound);
        },
    );
}

/// What the server keeps for one folder.
struct FolderKeeper {
    b: Backend,
    /// The folder as the editor named it (the key of its caches).
    folder: PathBuf,
    /// Its real path (what requests are about).
    real: PathBuf,
    /// The folder of sockets, where [`ServerWatch::settle`] writes its marks.
    dir: PathBuf,
    scans: Scans,
}

impl FolderKeeper {
    fn watch(&self) -> Result<Arc<ServerWatch>, String> {
        let w = self.b.state.watch.get().cloned().ok_or("no file watcher")?;
        if w.scope != Scope::Everything {
            return Err(
                "the editor watches the files: the server cannot tell it saw every change".into(),
            );
        }
        if !self.b.state.watch_all.load(Ordering::Acquire) {
            return Err("not every folder is watched".into());
        }
        Ok(w)
    }
}

impl Keeper for FolderKeeper {
    fn settle(&self) -> Result<(), String> {
        self.watch()?.settle(&self.dir, SETTLE_WAIT)
    }

    fn git(&self, cwd: &Path, env: &warm::GitEnv) -> Result<GitResult, String> {
        if !self.b.state.settings().git.enabled {
            return Err("the git block is off in this server".into());
        }
        if !self.b.state.env.git.same_view(env) {
            return Err("the client's git reads another configuration".into());
        }
        let kept = self
            .b
            .state
            .kept_git_cache(&self.folder)
            .and_then(|cache| cache.kept_snapshot(cwd, CACHE_WAIT));
        match kept {
            Some(snapshot) => Ok(Ok(Some(snapshot))),
            None => {
                // Nothing kept (the first snapshot, or the one after the watcher was trusted or
                // lost events, is not taken yet): take it now, for the next command.
                self.b.take_snapshot(self.folder.clone());
                Err("no git status kept for that directory".into())
            }
        }
    }

    fn parses(&self) -> Arc<warm::ParseCache> {
        self.b.state.parses()
    }

    fn scan(&self, root: &Path) -> Result<Arc<ProjectScan>, String> {
        if !root.starts_with(&self.real) {
            return Err("a project outside this folder".into());
        }
        let watch = self.watch()?;
        let now = watch.structure.load(Ordering::Acquire);
        let mut scans = self.scans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, scan)) = scans.get(root)
            && *at == now
        {
            return Ok(scan.clone());
        }
        let scan = Arc::new(crate::features::check::scan(root));
        // Kept only when nothing changed shape while it ran (else it is made again next time).
        if watch.structure.load(Ordering::Acquire) == now {
            scans.insert(root.to_path_buf(), (now, scan.clone()));
        }
        Ok(scan)
    }
}
