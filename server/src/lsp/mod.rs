//! `claude-context lsp`: the language server on stdio.
//!
//! Thin by design: each handler (one file per method under [`handlers`]) converts LSP params to
//! plain data, calls a pure function of [`crate::features`] or the core against the server's
//! [`state::State`], and converts the result back. [`transport`] replaces tower-lsp-server's stdio
//! loop with one that survives malformed input. Only this module knows LSP types.
//!
//! Entry point: [`run`].

pub mod convert;
pub mod ext;
pub mod handlers;
pub mod state;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService};

use crate::host::Host;
use state::State;

/// The tower-lsp-server backend: the client handle and the shared state.
#[derive(Clone)]
pub struct Backend {
    pub client: Client,
    pub state: Arc<State>,
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        handlers::initialize::initialize(self, params)
    }

    async fn initialized(&self, _: InitializedParams) {
        handlers::initialize::initialized(self);
    }

    async fn shutdown(&self) -> Result<()> {
        self.state
            .shutdown
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        handlers::did_open::did_open(self, params).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        handlers::did_change::did_change(self, params).await;
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        handlers::did_close::did_close(self, params).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        handlers::did_change_configuration::did_change_configuration(self, params).await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        handlers::did_change_watched_files::did_change_watched_files(self, params).await;
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        handlers::did_change_workspace_folders::did_change_workspace_folders(self, params).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        handlers::hover::hover(self, params)
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        handlers::definition::goto_definition(self, params)
    }

    async fn document_link(&self, params: DocumentLinkParams) -> Result<Option<Vec<DocumentLink>>> {
        handlers::document_link::document_link(self, params)
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        handlers::completion::completion(self, params)
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        handlers::code_lens::code_lens(self, params)
    }
}

impl Backend {
    /// `context/preview`.
    async fn preview(&self, params: ext::PreviewParams) -> Result<handlers::preview::Shared> {
        handlers::preview::preview(self, params)
    }
}

/// The service with every standard and custom method registered.
pub fn service(
    env: Host,
) -> (
    LspService<Backend>,
    tower_lsp_server::ClientSocket,
    Arc<State>,
) {
    let state = Arc::new(State::new(env));
    let shared = state.clone();
    let (service, socket) = LspService::build(move |client| Backend {
        client,
        state: shared,
    })
    .custom_method(ext::PREVIEW, Backend::preview)
    .finish();
    (service, socket, state)
}

/// Runs the server on stdin/stdout until `exit` or the end of input. Returns the exit code:
/// 0 after `shutdown`, 1 otherwise (as LSP asks).
pub fn run(env: Host) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("claude-context: cannot start the runtime: {e}");
            return 2;
        }
    };
    let code = rt.block_on(async {
        let (service, socket, state) = service(env);
        let ended =
            transport::serve(tokio::io::stdin(), tokio::io::stdout(), service, socket).await;
        let clean = state.shutdown.load(std::sync::atomic::Ordering::Acquire);
        if !clean {
            eprintln!("claude-context: {ended:?} without shutdown");
        }
        i32::from(!clean)
    });
    // Blocking work (a git snapshot of a huge repository, a pending stdin read) must not hold
    // the exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    code
}
