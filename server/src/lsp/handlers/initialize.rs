//! `initialize` (capabilities, workspace folders, settings from `initializationOptions`) and
//! `initialized` (file watchers, `workspace/configuration`, warming the walk, the git snapshot
//! and the workspace scan in the background).

use std::path::PathBuf;

use ls_types::*;

use super::Result;
use super::did_change_configuration::show_settings_error;
use crate::features::settings::{SECTION, Settings};
use crate::lsp::Backend;
use crate::lsp::convert::uri_to_path;
use crate::lsp::state::ClientCaps;
use crate::tasks::{OnConflict, TaskKind};

/// The editor's own workspace trust: `workspaceTrust` (a boolean) beside the `claudeContext`
/// section of `initializationOptions`, never inside it. A section may hold what a repository's
/// editor settings say (`.vscode/settings.json`), and a repository must not vouch for itself; so
/// only the wrapped form (`{"claudeContext": {…}, "workspaceTrust": …}`) is read.
fn editor_trust(opts: &serde_json::Value) -> Option<bool> {
    let map = opts.as_object()?;
    if !map.contains_key(SECTION) {
        return None;
    }
    map.get("workspaceTrust")?.as_bool()
}

pub fn initialize(b: &Backend, params: InitializeParams) -> Result<InitializeResult> {
    let st = &b.state;
    let mut folders: Vec<PathBuf> = params
        .workspace_folders
        .iter()
        .flatten()
        .filter_map(|f| uri_to_path(&f.uri))
        .collect();
    #[allow(deprecated)] // reason: older clients send only rootUri.
    if folders.is_empty()
        && let Some(root) = params.root_uri.as_ref().and_then(uri_to_path)
    {
        folders.push(root);
    }
    st.set_folders(folders);

    if let Some(opts) = &params.initialization_options {
        st.set_editor_trust(editor_trust(opts));
        match Settings::parse(opts) {
            Ok(s) => {
                st.set_settings(s);
                *st.init_options.write().unwrap_or_else(|p| p.into_inner()) =
                    crate::features::settings::section(opts).clone();
            }
            // Shown after the answer (the task is deferred): clients ignore messages before it.
            Err(e) => show_settings_error(b, &format!("initializationOptions ignored: {e}")),
        }
    }

    let caps = &params.capabilities;
    let utf8 = caps
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref())
        .is_some_and(|e| e.contains(&PositionEncodingKind::UTF8));
    let ws = caps.workspace.as_ref();
    let watched = ws.and_then(|w| w.did_change_watched_files.as_ref());
    let window = caps.window.as_ref();
    st.set_client_caps(ClientCaps {
        utf8_positions: utf8,
        configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
        watchers: watched
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false),
        apply_edit: ws.and_then(|w| w.apply_edit).unwrap_or(false),
        work_done_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
        show_message_request: window.and_then(|w| w.show_message.as_ref()).is_some(),
        document_changes: ws
            .and_then(|w| w.workspace_edit.as_ref())
            .and_then(|e| e.document_changes)
            .unwrap_or(false),
        code_lens_refresh: ws
            .and_then(|w| w.code_lens.as_ref())
            .and_then(|c| c.refresh_support)
            .unwrap_or(false),
    });

    Ok(InitializeResult {
        capabilities: ServerCapabilities {
            position_encoding: Some(if utf8 {
                PositionEncodingKind::UTF8
            } else {
                PositionEncodingKind::UTF16
            }),
            text_document_sync: Some(TextDocumentSyncCapability::Options(
                TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    ..Default::default()
                },
            )),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            document_link_provider: Some(DocumentLinkOptions {
                resolve_provider: Some(false),
                work_done_progress_options: WorkDoneProgressOptions::default(),
            }),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(vec!["@".into(), "/".into()]),
                ..Default::default()
            }),
            code_lens_provider: Some(CodeLensOptions {
                resolve_provider: Some(false),
            }),
            workspace: Some(WorkspaceServerCapabilities {
                workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                    supported: Some(true),
                    change_notifications: Some(OneOf::Left(true)),
                }),
                file_operations: None,
            }),
            experimental: Some(serde_json::json!({
                "claudeContext": {
                    "methods": crate::lsp::ext::METHODS.iter().map(|m| m.name).collect::<Vec<_>>()
                }
            })),
            ..Default::default()
        },
        server_info: Some(ServerInfo {
            name: "claude-context".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..Default::default()
    })
}

/// Watchers for the whole workspace: every file when the git snapshot is on (its status is
/// about every file, and the status caches are kept current from these events: P6), else
/// instruction files and `.claude/` anywhere and Markdown files (the usual include targets).
/// The places outside the workspace (the user's and managed folders, `~/.claude.json`, memory
/// directories) are not asked of the client: the server watches them itself
/// ([`crate::lsp::watch::Scope::OutsideOnly`]), one folder at a time, where a client would
/// watch a relative pattern's whole base (the home folder) recursively.
fn watchers(b: &Backend) -> Vec<FileSystemWatcher> {
    let workspace: &[&str] = if all_files(b) {
        &["**/*"]
    } else {
        &[
            "**/CLAUDE.md",
            "**/CLAUDE.local.md",
            "**/AGENTS.md",
            "**/.claude/**",
            "**/*.md",
        ]
    };
    workspace
        .iter()
        .map(|p| FileSystemWatcher {
            glob_pattern: GlobPattern::String(p.to_string()),
            kind: None,
        })
        .collect()
}

/// Whether the workspace watcher covers every file.
fn all_files(b: &Backend) -> bool {
    b.state.settings().git.enabled
}

fn registration(id: String, watchers: Vec<FileSystemWatcher>) -> Registration {
    Registration {
        id,
        method: "workspace/didChangeWatchedFiles".into(),
        register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
            watchers,
        })
        .ok(),
    }
}

/// Warms a folder's walk, git snapshot and scan (a task: it reads the disk), and answers for it
/// on its local socket (`lsp/warm.rs`).
fn start_folder(b: &Backend, folder: PathBuf) {
    crate::lsp::warm::serve_folder(b, folder.clone());
    let b2 = b.clone();
    let key = format!("folder:{}", folder.display());
    b.spawn(
        TaskKind::Refresh,
        key,
        OnConflict::Join,
        move |_| async move {
            let (st, f) = (b2.state.clone(), folder.clone());
            let _ = tokio::task::spawn_blocking(move || st.context(&f)).await;
            b2.git_for(&folder);
            b2.ensure_scan(&folder);
        },
    );
}

/// Folders added or removed after `initialize`.
pub fn folders_changed(b: &Backend, added: Vec<PathBuf>, removed: Vec<PathBuf>) {
    if let Some(w) = b.state.watch.get() {
        for f in &removed {
            w.remove_below(f);
        }
    }
    for f in &removed {
        b.tasks.cancel(&format!("warm:{}", f.display()));
    }
    for f in added {
        crate::lsp::watch::add_folder(b, f.clone());
        start_folder(b, f);
    }
}

pub fn initialized(b: &Backend, _: InitializedParams) {
    if b.state.client_caps().configuration {
        super::did_change_configuration::pull(b);
    }
    if b.state.client_caps().watchers {
        let b2 = b.clone();
        b.spawn(
            TaskKind::Refresh,
            "watchers".into(),
            OnConflict::Join,
            move |_| async move {
                let all = all_files(&b2);
                let reg = registration("claude-context-watchers".into(), watchers(&b2));
                match b2.client.register_capability(vec![reg]).await {
                    Ok(_) => {
                        // From now on file events keep the git status caches current; until
                        // now every snapshot walked the tree.
                        if all {
                            b2.state.trust_file_events();
                        }
                        crate::lsp::watch::start(&b2, crate::lsp::watch::Scope::OutsideOnly);
                    }
                    Err(e) => {
                        crate::log_info!(
                            "the client refused file watchers ({}): the server watches",
                            e.message
                        );
                        crate::lsp::watch::start(&b2, crate::lsp::watch::Scope::Everything);
                    }
                }
            },
        );
    }
    if !b.state.client_caps().watchers {
        // Neovim 0.11 on Linux, Helix: nobody would tell the server about changes on disk.
        crate::lsp::watch::start(b, crate::lsp::watch::Scope::Everything);
    }
    let folders = b.state.folders();
    crate::log_info!(
        "ready ({} workspace folder(s); settings section `{SECTION}`)",
        folders.len()
    );
    for f in folders {
        start_folder(b, f);
    }
}
