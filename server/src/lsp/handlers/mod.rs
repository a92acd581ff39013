//! One file per LSP method. Each converts params, calls `features`/the core against the state,
//! and converts back. Shared steps (publishing diagnostics, `context/changed`, background git
//! snapshots and workspace scans) live here.
//!
//! Concurrency: notifications run in order on the reading task (see `transport`), so they must
//! not wait for a client answer; work that does (`workspace/configuration`, registrations) is
//! spawned. Requests run on their own tasks against the shared state.

pub mod code_lens;
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
pub mod preview;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::Uri;

use super::Backend;
use super::convert;
use super::ext::{ContextChanged, ContextChangedParams};
use super::state::Document;
use crate::features::preview::GitPart;
use crate::fs::Fs;

/// How long diagnostics wait after a change for the next one.
pub(crate) const DIAGNOSTICS_DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(25);

/// `-32602` with a message that names the field.
pub(crate) fn invalid_params(msg: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: format!("Invalid params: {}", msg.into()).into(),
        data: None,
    }
}

/// What a positional request works on: the file, its text (the editor's when open), its root.
pub(crate) struct Target {
    pub path: PathBuf,
    pub text: String,
    pub root: PathBuf,
}

impl Backend {
    pub(crate) fn utf8(&self) -> bool {
        self.state
            .utf8_positions
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The open document, or the file on disk, behind `uri`; `None` for non-file URIs.
    pub(crate) fn target(&self, uri: &Uri) -> Option<Target> {
        let path = convert::uri_to_path(uri)?;
        let text = match self.state.docs.get(uri.as_str()) {
            Some(d) => d.text.clone(),
            None => self.state.fs.read_text(&path).ok()?,
        };
        let root = self.state.root_for(&path);
        Some(Target { path, text, root })
    }

    /// Publishes the diagnostics of one open document (nothing for non-instruction files).
    pub(crate) async fn publish(&self, doc: &Document) {
        let s = self.state.settings();
        let Some(path) = &doc.path else { return };
        if !s.diagnostics.enabled || !self.state.is_instruction_doc(path) {
            return;
        }
        let Ok(uri) = Uri::from_str(&doc.uri) else {
            return;
        };
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
            files.as_deref().map(Vec::as_slice),
        );
        let utf8 = self.utf8();
        let diags = findings
            .iter()
            .filter(|f| f.path == *path)
            .map(|f| convert::diagnostic(&doc.text, f, utf8))
            .collect();
        // Published from a background task: a newer edit may have overtaken this one.
        let current = self.state.docs.get(&doc.uri).map(|d| d.version);
        if current != Some(doc.version) {
            return;
        }
        self.client
            .publish_diagnostics(uri, diags, Some(doc.version))
            .await;
    }

    /// Re-publishes diagnostics of every open instruction document.
    pub(crate) async fn publish_all(&self) {
        let docs: Vec<Document> = self.state.docs.iter().map(|d| d.clone()).collect();
        for d in &docs {
            self.publish(d).await;
        }
    }

    /// After a change to the context: `context/changed` at once, and the diagnostics of every
    /// open instruction document on a background task, debounced: when edits come faster than
    /// [`DIAGNOSTICS_DEBOUNCE`], only the last one is linted (and the requests that follow an
    /// edit do not compete with the lint for the CPU).
    pub(crate) async fn context_changed(&self) {
        let this = self.clone();
        let seq = &self.state.diagnostics_seq;
        let mine = seq.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        tokio::spawn(async move {
            tokio::time::sleep(DIAGNOSTICS_DEBOUNCE).await;
            if this
                .state
                .diagnostics_seq
                .load(std::sync::atomic::Ordering::Acquire)
                == mine
            {
                this.publish_all().await;
            }
        });
        self.notify_changed().await;
    }

    /// `context/changed` for every open document.
    pub(crate) async fn notify_changed(&self) {
        let mut uris: Vec<String> = self.state.docs.iter().map(|d| d.uri.clone()).collect();
        uris.sort();
        self.client
            .send_notification::<ContextChanged>(ContextChangedParams { uris: Some(uris) })
            .await;
    }

    /// The root's git snapshot for a preview: `(part, first snapshot still pending)`. Starts or
    /// refreshes the snapshot in the background; never waits for it.
    pub(crate) fn git_for(&self, root: &Path) -> (Option<GitPart>, bool) {
        let s = self.state.settings();
        if !s.git.enabled {
            return (None, false);
        }
        let (result, start) = {
            let mut slot = self.state.git.entry(root.to_path_buf()).or_default();
            let stale = slot.taken.is_some_and(|t| {
                s.git.refresh_seconds > 0 && t.elapsed().as_secs() >= s.git.refresh_seconds
            });
            let start = !slot.pending && (slot.taken.is_none() || stale);
            if start {
                slot.pending = true;
            }
            ((slot.part.clone(), slot.taken.is_none()), start)
        };
        if start {
            self.take_snapshot(root.to_path_buf());
        }
        result
    }

    fn take_snapshot(&self, root: PathBuf) {
        let this = self.clone();
        let opts = self.state.env.git_options();
        tokio::spawn(async move {
            let r = root.clone();
            let snap = tokio::task::spawn_blocking(move || crate::git::snapshot(&r, &opts)).await;
            let part = match snap {
                Ok(Ok(Some(snap))) => Some(GitPart::from_snapshot(&snap)),
                Ok(Err(e)) => {
                    crate::log_warn!("git snapshot of {} skipped: {}", root.display(), e.message);
                    None
                }
                _ => None,
            };
            let changed = {
                let mut slot = this.state.git.entry(root).or_default();
                let first = slot.taken.is_none();
                let changed = first
                    || slot.part.as_ref().map(|p| &p.block) != part.as_ref().map(|p| &p.block);
                slot.part = part;
                slot.pending = false;
                slot.taken = Some(Instant::now());
                changed
            };
            if changed {
                this.state.bump();
                this.notify_changed().await;
            }
        });
    }

    /// Starts the root's workspace scan in the background when it has none or an old one; open
    /// rule files get their diagnostics again when it finishes.
    pub(crate) fn ensure_scan(&self, root: &Path) {
        const MAX_AGE_SECS: u64 = 60;
        let start = {
            let mut slot = self.state.scans.entry(root.to_path_buf()).or_default();
            let stale = slot
                .taken
                .is_none_or(|t| t.elapsed().as_secs() >= MAX_AGE_SECS);
            let start = !slot.pending && stale;
            if start {
                slot.pending = true;
            }
            start
        };
        if !start {
            return;
        }
        let this = self.clone();
        let root = root.to_path_buf();
        tokio::spawn(async move {
            let r = root.clone();
            let files = tokio::task::spawn_blocking(move || crate::features::check::scan(&r).files)
                .await
                .unwrap_or_default();
            let changed = {
                let mut slot = this.state.scans.entry(root.clone()).or_default();
                let changed = slot.files.as_deref() != Some(&files);
                slot.files = Some(Arc::new(files));
                slot.pending = false;
                slot.taken = Some(Instant::now());
                changed
            };
            if changed {
                let docs: Vec<Document> = this
                    .state
                    .docs
                    .iter()
                    .filter(|d| d.path.as_deref().is_some_and(|p| p.starts_with(&root)))
                    .map(|d| d.clone())
                    .collect();
                for d in &docs {
                    this.publish(d).await;
                }
            }
        });
    }

    /// Marks the root's scan old so the next use reads the file list again.
    pub(crate) fn scan_outdated(&self, root: &Path) {
        if let Some(mut slot) = self.state.scans.get_mut(root) {
            slot.taken = None;
        }
    }
}
