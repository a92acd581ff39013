//! One file per LSP method. Each converts params, calls `features`/the core against the state,
//! and converts back. Shared steps live here: the debounced refresh (diagnostics and one
//! `context/changed` per burst of changes), the git snapshot and workspace scan tasks.
//!
//! Concurrency (see [`super::main_loop`]): notification handlers run on the main loop and must
//! not wait for the disk or the client; they change the state and call [`Backend::changed`] or
//! start tasks. Request handlers run on the blocking pool and may read files.

pub mod chat;
pub mod chat_tools;
pub mod code_lens;
pub mod compact;
pub mod completion;
pub mod definition;
pub mod did_change;
pub mod did_change_configuration;
pub mod did_change_watched_files;
pub mod did_change_workspace_folders;
pub mod did_close;
pub mod did_open;
pub mod document_link;
pub mod hover;
pub mod initialize;
pub mod memory;
pub mod preview;
pub mod trust;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ls_types::{Diagnostic, Uri};

use super::Backend;
use super::convert;
use super::ext::{self, ContextChangedParams, CustomNotification};
use super::jsonrpc::ResponseError;
use super::state::{Document, GitNow, Impact};
use crate::features::preview::GitPart;
use crate::fs::Fs;
use crate::tasks::{OnConflict, TaskKind};

/// How long a refresh waits after a change for the next one: a burst of edits gives one
/// diagnostics pass and one `context/changed`.
pub(crate) const REFRESH_DEBOUNCE: Duration = Duration::from_millis(25);
/// File events closer together than this make one git refresh (a build or a checkout writes
/// many files at once).
pub(crate) const GIT_DEBOUNCE: Duration = Duration::from_millis(100);

/// The result type of request handlers.
pub type Result<T> = std::result::Result<T, ResponseError>;

/// `-32602` with a message that names the field.
pub(crate) fn invalid_params(msg: impl AsRef<str>) -> ResponseError {
    ResponseError::invalid_params(msg)
}

/// What a positional request works on: the file, its text (the editor's when open), its root.
pub(crate) struct Target {
    pub path: PathBuf,
    pub text: Arc<str>,
    pub root: PathBuf,
}

impl Backend {
    /// The open document, or the file on disk, behind `uri`; `None` for non-file URIs.
    pub(crate) fn target(&self, uri: &Uri) -> Option<Target> {
        let path = convert::uri_to_path(uri)?;
        let text = match self.state.text(uri.as_str()) {
            Some(t) => t,
            None => Arc::from(self.state.fs.read_text(&path).ok()?),
        };
        let root = self.state.root_for(&path);
        Some(Target { path, text, root })
    }

    /// The diagnostics of one open document; `None` when it gets none (not an instruction
    /// file, diagnostics off). Reads files: call off the main loop.
    fn diagnostics_of(&self, doc: &Document) -> Option<(Uri, Vec<Diagnostic>)> {
        let s = self.state.settings();
        let path = doc.path.as_ref()?;
        if !s.diagnostics.enabled || !self.state.is_instruction_doc(path) {
            return None;
        }
        let uri = Uri::from_str(&doc.uri).ok()?;
        let root = self.state.root_for(path);
        let lint = self.state.lint_options(&root);
        let files = if s.diagnostics.unmatched_globs {
            self.ensure_scan(&root);
            self.state.workspace_files(&root)
        } else {
            None
        };
        let findings = crate::features::diagnostics::diagnostics(
            &self.state.fs,
            path,
            &lint,
            files.as_deref(),
        );
        let lines = convert::LineIndex::new(&doc.text);
        let utf8 = self.utf8();
        let diags = findings
            .iter()
            .filter(|f| f.path == *path)
            .map(|f| convert::diagnostic(&lines, f, utf8))
            .collect();
        Some((uri, diags))
    }

    /// Lints `docs` on the blocking pool and publishes what is still current.
    pub(crate) async fn publish(&self, docs: Vec<Document>) {
        let b = self.clone();
        let done = tokio::task::spawn_blocking(move || {
            docs.iter()
                .filter_map(|d| b.diagnostics_of(d).map(|r| (d.uri.clone(), d.version, r)))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (uri_s, version, (uri, diags)) in done {
            // A newer edit may have overtaken this lint: its own refresh publishes.
            let current = self.state.docs.get(&uri_s).map(|d| d.version);
            if current == Some(version) {
                self.client
                    .publish_diagnostics(uri, diags, Some(version))
                    .await;
            }
        }
    }

    fn open_docs(&self, filter: impl Fn(&Document) -> bool) -> Vec<Document> {
        self.state
            .docs
            .iter()
            .filter(|d| filter(d))
            .map(|d| d.clone())
            .collect()
    }

    /// Records what changed and (re)starts the debounced refresh: after [`REFRESH_DEBOUNCE`]
    /// without a newer change, every open instruction document is linted and one
    /// `context/changed` goes out (when the context changed).
    pub(crate) fn changed(&self, impact: Impact, lint: Option<&str>) {
        self.state.schedule(impact, lint);
        let b = self.clone();
        self.spawn(
            TaskKind::Debounce,
            "refresh".into(),
            OnConflict::Replace,
            move |token| async move {
                tokio::select! {
                    _ = tokio::time::sleep(REFRESH_DEBOUNCE) => {}
                    _ = token.cancelled() => return,
                }
                // From here on the work is this task's: a newer change starts its own refresh
                // for what it adds, and never takes this one's away.
                let work = b.state.take_refresh();
                let mut context = work.context;
                if !context && !work.maybe_attaches.is_empty() {
                    let st = b.state.clone();
                    let paths = work.maybe_attaches.clone();
                    context =
                        tokio::task::spawn_blocking(move || paths.iter().any(|p| st.attaches(p)))
                            .await
                            .unwrap_or(true);
                }
                let docs = if context {
                    b.open_docs(|_| true)
                } else {
                    b.open_docs(|d| work.lint.contains(&d.uri))
                };
                if context {
                    b.notify_changed().await;
                    b.refresh_code_lenses();
                }
                b.publish(docs).await;
            },
        );
    }

    /// Asks the client to request code lenses again (`workspace/codeLens/refresh`), when it
    /// supports it: a lens shows a file's tokens and where it applies, which any context change
    /// may alter. The answer is not waited for.
    pub(crate) fn refresh_code_lenses(&self) {
        if !self.state.client_caps().code_lens_refresh || !self.state.settings().code_lens.enabled {
            return;
        }
        let client = self.client.clone();
        tokio::spawn(async move {
            let answer = client
                .request_within(
                    "workspace/codeLens/refresh",
                    &serde_json::Value::Null,
                    Some(Duration::from_secs(10)),
                )
                .await;
            if let Err(e) = answer {
                crate::log_debug!("workspace/codeLens/refresh: {}", e.message);
            }
        });
    }

    /// `context/changed` for every open document.
    pub(crate) async fn notify_changed(&self) {
        let mut uris: Vec<String> = self.state.docs.iter().map(|d| d.uri.clone()).collect();
        uris.sort();
        self.client
            .notify_raw(
                ext::ContextChanged::METHOD,
                &ContextChangedParams { uris: Some(uris) },
            )
            .await;
    }

    /// The root's git snapshot for a preview. Starts or refreshes the snapshot as a task
    /// (single flight per root); never waits for it.
    pub(crate) fn git_for(&self, root: &Path) -> GitNow {
        let s = self.state.settings();
        if !s.git.enabled {
            return GitNow::default();
        }
        let (part, findings, taken) = {
            let slot = self.state.git.entry(root.to_path_buf()).or_default();
            (slot.part.clone(), slot.findings.clone(), slot.taken)
        };
        // With every file watched, events keep the snapshot current; the timer is a safety net
        // (and the only refresh when the client cannot watch every file).
        let stale = taken.is_none_or(|t| {
            s.git.refresh_seconds > 0 && t.elapsed().as_secs() >= s.git.refresh_seconds
        });
        if stale {
            self.take_snapshot(root.to_path_buf());
        }
        GitNow {
            part,
            findings,
            pending: taken.is_none(),
        }
    }

    pub(crate) fn take_snapshot(&self, root: PathBuf) {
        let b = self.clone();
        let key = format!("git:{}", root.display());
        self.spawn(
            TaskKind::Refresh,
            key,
            OnConflict::Join,
            move |_| async move { b.refresh_git(root).await },
        );
    }

    /// Files changed on disk (any file: the git status is about all of them). The status caches
    /// take note at once; the roots whose work tree holds them get a new snapshot after
    /// [`GIT_DEBOUNCE`] without a newer event, so a session that starts later finds it current.
    pub(crate) fn files_changed_on_disk(&self, paths: &[PathBuf]) {
        if paths.is_empty() || !self.state.settings().git.enabled {
            return;
        }
        for root in self.state.git_paths_changed(paths) {
            let b = self.clone();
            let key = format!("git-events:{}", root.display());
            self.spawn(
                TaskKind::Debounce,
                key,
                OnConflict::Replace,
                move |token| async move {
                    tokio::select! {
                        _ = tokio::time::sleep(GIT_DEBOUNCE) => {}
                        _ = token.cancelled() => return,
                    }
                    b.refresh_git(root).await;
                },
            );
        }
    }

    /// Takes the root's snapshot from its status cache (on a blocking thread) and stores it;
    /// `context/changed` follows when the block changed.
    async fn refresh_git(&self, root: PathBuf) {
        let st = self.state.clone();
        let r = root.clone();
        let taken = tokio::task::spawn_blocking(move || {
            let snap = st.git_snapshot_now(&r);
            (snap, st.git_cache(&r).work_tree())
        })
        .await;
        let Ok((snap, work_tree)) = taken else {
            return;
        };
        let findings = crate::features::check::git_findings(&snap);
        let part = match snap {
            Ok(Some(snap)) => Some(GitPart::from_snapshot(&snap)),
            Ok(None) => None,
            Err(e) => {
                crate::log_warn!("git snapshot of {} skipped: {}", root.display(), e.message);
                None
            }
        };
        let changed = {
            let mut slot = self.state.git.entry(root).or_default();
            let first = slot.taken.is_none();
            let changed = first
                || slot.part.as_ref().map(|p| &p.block) != part.as_ref().map(|p| &p.block)
                || slot.findings != findings;
            slot.part = part;
            slot.findings = findings;
            slot.work_tree = work_tree;
            slot.taken = Some(Instant::now());
            changed
        };
        if changed {
            self.state.bump();
            self.notify_changed().await;
        }
    }

    /// Starts the root's workspace scan as a task when it has none or an old one; open
    /// instruction files under the root get their diagnostics again when it finishes.
    pub(crate) fn ensure_scan(&self, root: &Path) {
        const MAX_AGE_SECS: u64 = 60;
        let stale = self
            .state
            .scans
            .get(root)
            .and_then(|s| s.taken)
            .is_none_or(|t| t.elapsed().as_secs() >= MAX_AGE_SECS);
        if !stale {
            return;
        }
        let b = self.clone();
        let root = root.to_path_buf();
        let key = format!("scan:{}", root.display());
        self.spawn(
            TaskKind::Refresh,
            key,
            OnConflict::Join,
            move |_| async move {
                let r = root.clone();
                let files =
                    tokio::task::spawn_blocking(move || crate::features::check::scan(&r).files)
                        .await
                        .unwrap_or_default();
                let changed = {
                    let mut slot = b.state.scans.entry(root.clone()).or_default();
                    let changed = slot.files.as_deref() != Some(&files);
                    slot.files = Some(Arc::new(files));
                    slot.taken = Some(Instant::now());
                    changed
                };
                if changed {
                    let docs =
                        b.open_docs(|d| d.path.as_deref().is_some_and(|p| p.starts_with(&root)));
                    b.publish(docs).await;
                }
            },
        );
    }

    /// Marks the root's scan old so the next use reads the file list again.
    pub(crate) fn scan_outdated(&self, root: &Path) {
        if let Some(mut slot) = self.state.scans.get_mut(root) {
            slot.taken = None;
        }
    }

    /// Does `path` exist (the editor's buffers included)?
    pub(crate) fn exists(&self, path: &Path) -> bool {
        self.state.fs.exists(path)
    }
}
