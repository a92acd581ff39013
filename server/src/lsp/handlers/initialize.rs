//! `initialize` (capabilities, workspace folders, settings from `initializationOptions`) and
//! `initialized` (file watchers, `workspace/configuration`, warming the walk, the git snapshot
//! and the workspace scan in the background).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

use crate::features::settings::{SECTION, Settings};
use crate::lsp::Backend;
use crate::lsp::convert::{path_to_uri, uri_to_path};

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
        match Settings::parse(opts) {
            Ok(s) => {
                st.set_settings(s);
                *st.init_options.write().unwrap_or_else(|p| p.into_inner()) =
                    crate::features::settings::section(opts).clone();
            }
            Err(e) => eprintln!("claude-context: initializationOptions ignored: {e}"),
        }
    }

    let caps = &params.capabilities;
    let utf8 = caps
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref())
        .is_some_and(|e| e.contains(&PositionEncodingKind::UTF8));
    st.utf8_positions.store(utf8, Ordering::Relaxed);
    let ws = caps.workspace.as_ref();
    st.client_configuration.store(
        ws.and_then(|w| w.configuration).unwrap_or(false),
        Ordering::Relaxed,
    );
    st.client_watchers.store(
        ws.and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false),
        Ordering::Relaxed,
    );
    st.client_relative_patterns.store(
        ws.and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.relative_pattern_support)
            .unwrap_or(false),
        Ordering::Relaxed,
    );

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

/// File watchers: instruction files and `.claude/` anywhere in the workspace, Markdown files
/// (the usual include targets), the user and managed directories, `~/.claude.json`, and the
/// memory directories of the workspace folders.
fn watchers(b: &Backend) -> Vec<FileSystemWatcher> {
    let st = &b.state;
    let mut out: Vec<FileSystemWatcher> = [
        "**/CLAUDE.md",
        "**/CLAUDE.local.md",
        "**/AGENTS.md",
        "**/.claude/**",
        "**/*.md",
    ]
    .iter()
    .map(|p| FileSystemWatcher {
        glob_pattern: GlobPattern::String(p.to_string()),
        kind: None,
    })
    .collect();
    if !st.client_relative_patterns.load(Ordering::Relaxed) {
        return out;
    }
    let mut outside: Vec<(PathBuf, &str)> = vec![(st.env.managed_dir.clone(), "**/*")];
    if let Some(home) = &st.env.home {
        outside.push((home.join(".claude"), "*.md"));
        outside.push((home.join(".claude").join("rules"), "**/*"));
        outside.push((home.clone(), ".claude.json"));
    }
    for root in st.folders() {
        if let Some(dir) = st.context(&root).memory_dir.clone() {
            outside.push((dir, "*.md"));
        }
    }
    for (base, pattern) in outside {
        if let Some(uri) = path_to_uri(&base) {
            out.push(FileSystemWatcher {
                glob_pattern: GlobPattern::Relative(RelativePattern {
                    base_uri: OneOf::Right(uri),
                    pattern: pattern.to_string(),
                }),
                kind: None,
            });
        }
    }
    out
}

pub fn initialized(b: &Backend) {
    let b = b.clone();
    // Waits for client answers: must not run on the reading task.
    tokio::spawn(async move {
        let st = b.state.clone();
        if st.client_configuration.load(Ordering::Relaxed) {
            super::did_change_configuration::pull(&b).await;
        }
        for root in st.folders() {
            let s = st.clone();
            let r = root.clone();
            let _ = tokio::task::spawn_blocking(move || s.context(&r)).await;
            b.git_for(&root);
            b.ensure_scan(&root);
        }
        if st.client_watchers.load(Ordering::Relaxed) {
            let options = DidChangeWatchedFilesRegistrationOptions {
                watchers: watchers(&b),
            };
            let registration = Registration {
                id: "claude-context-watchers".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: serde_json::to_value(options).ok(),
            };
            if let Err(e) = b.client.register_capability(vec![registration]).await {
                eprintln!(
                    "claude-context: file watchers not registered: {}",
                    e.message
                );
            }
        }
        eprintln!(
            "claude-context: ready ({} workspace folder(s); settings section `{SECTION}`)",
            st.folders().len()
        );
    });
}
