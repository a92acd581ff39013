//! The routing table: every method the server handles, on one screen, with where it runs.
//!
//! * [`Mode::MainLoop`]: requests that change the state (`initialize`). They run on the main
//!   loop, in order with the notifications around them.
//! * [`Mode::Pool`]: requests that read the state. They run on the blocking pool (never on the
//!   async workers), concurrently, each behind the panic boundary of its task; a panic answers
//!   `-32603` for that request only.
//! * Notifications all run on the main loop, in arrival order: they change the state and
//!   schedule work (tasks), never wait for the disk or the client.
//!
//! The lifecycle methods are the main loop's own (see [`super::main_loop`]): `shutdown`, `exit`,
//! `$/cancelRequest`; a request whose method starts with `$/` and is not routed answers `-32601`.

use std::collections::HashMap;
use std::sync::Arc;

use ls_types::notification::{self as n, Notification};
use ls_types::request::{self as r, Request};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Backend;
use super::chat_ext;
use super::ext::{self, CustomRequest};
use super::handlers as h;
use super::jsonrpc::ResponseError;

/// Where a request runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    MainLoop,
    Pool,
}

type RequestFn = dyn Fn(&Backend, Option<Value>) -> Result<Vec<u8>, ResponseError> + Send + Sync;
type NotificationFn = dyn Fn(&Backend, Option<Value>) + Send + Sync;

/// A routed request.
#[derive(Clone)]
pub struct RequestRoute {
    pub mode: Mode,
    pub call: Arc<RequestFn>,
}

/// Every route, by method name.
#[derive(Clone, Default)]
pub struct Routes {
    pub requests: HashMap<&'static str, RequestRoute>,
    pub notifications: HashMap<&'static str, Arc<NotificationFn>>,
}

/// Decodes params, naming the offending field once: `Invalid params: position.line: ...`.
/// Absent or `null` params read as `{}` (all-optional params need none).
pub fn decode<P: DeserializeOwned>(
    method: &str,
    params: Option<Value>,
) -> Result<P, ResponseError> {
    let value = match params {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v) => v,
    };
    match serde_path_to_error::deserialize::<_, P>(&value) {
        Ok(p) => Ok(p),
        Err(e) => {
            let msg = ext::explain_params(method, Some(value)).unwrap_or_else(|| {
                let path = e.path().to_string();
                let path = if path == "." { "params".into() } else { path };
                format!("{path}: {}", e.inner())
            });
            Err(ResponseError::invalid_params(msg))
        }
    }
}

fn encode<T: Serialize>(result: &T) -> Result<Vec<u8>, ResponseError> {
    serde_json::to_vec(result)
        .map_err(|e| ResponseError::internal(format!("serialising the result: {e}")))
}

impl Routes {
    fn route<P, T>(
        mut self,
        method: &'static str,
        mode: Mode,
        f: fn(&Backend, P) -> Result<T, ResponseError>,
    ) -> Self
    where
        P: DeserializeOwned + 'static,
        T: Serialize + 'static,
    {
        let call =
            move |b: &Backend, params: Option<Value>| encode(&f(b, decode::<P>(method, params)?)?);
        self.requests.insert(
            method,
            RequestRoute {
                mode,
                call: Arc::new(call),
            },
        );
        self
    }

    fn on<R: Request>(
        self,
        mode: Mode,
        f: fn(&Backend, R::Params) -> Result<R::Result, ResponseError>,
    ) -> Self
    where
        R::Params: 'static,
        R::Result: 'static,
    {
        self.route(R::METHOD, mode, f)
    }

    fn on_custom<M: CustomRequest>(
        self,
        mode: Mode,
        f: fn(&Backend, M::Params) -> Result<M::Result, ResponseError>,
    ) -> Self {
        self.route(M::METHOD, mode, f)
    }

    fn notify_custom<M: ext::CustomNotification>(mut self, f: fn(&Backend, M::Params)) -> Self {
        let call = move |b: &Backend, params: Option<Value>| match decode::<M::Params>(
            M::METHOD,
            params,
        ) {
            Ok(p) => f(b, p),
            Err(e) => crate::log_warn!("{} ignored: {}", M::METHOD, e.message),
        };
        self.notifications.insert(M::METHOD, Arc::new(call));
        self
    }

    fn notify<N: Notification>(mut self, f: fn(&Backend, N::Params)) -> Self
    where
        N::Params: 'static,
    {
        let call = move |b: &Backend, params: Option<Value>| match decode::<N::Params>(
            N::METHOD,
            params,
        ) {
            Ok(p) => f(b, p),
            Err(e) => crate::log_warn!("{} ignored: {}", N::METHOD, e.message),
        };
        self.notifications.insert(N::METHOD, Arc::new(call));
        self
    }
}

/// The table.
#[rustfmt::skip]
pub fn table() -> Routes {
    Routes::default()
        // Requests that change the state: on the main loop.
        .on::<r::Initialize>(Mode::MainLoop, h::initialize::initialize)
        // Requests that read the state: on the blocking pool.
        .on::<r::HoverRequest>(Mode::Pool, h::hover::hover)
        .on::<r::GotoDefinition>(Mode::Pool, h::definition::goto_definition)
        .on::<r::DocumentLinkRequest>(Mode::Pool, h::document_link::document_link)
        .on::<r::Completion>(Mode::Pool, h::completion::completion)
        .on::<r::CodeLensRequest>(Mode::Pool, h::code_lens::code_lens)
        .on_custom::<ext::PreviewRequest>(Mode::Pool, h::preview::preview)
        .on_custom::<chat_ext::New>(Mode::Pool, h::chat::new)
        .on_custom::<chat_ext::List>(Mode::Pool, h::chat::list)
        .on_custom::<chat_ext::Resume>(Mode::Pool, h::chat::resume)
        .on_custom::<chat_ext::Send>(Mode::Pool, h::chat::send)
        .on_custom::<chat_ext::Cancel>(Mode::Pool, h::chat::cancel)
        .on_custom::<chat_ext::SetMode>(Mode::Pool, h::chat::set_mode)
        .on_custom::<chat_ext::SetStyle>(Mode::Pool, h::chat::set_style)
        .on_custom::<chat_ext::CompactRun>(Mode::Pool, h::compact::run)
        // Notifications: on the main loop, in order; they change the state and schedule work.
        .notify::<n::Initialized>(h::initialize::initialized)
        .notify::<n::DidOpenTextDocument>(h::did_open::did_open)
        .notify::<n::DidChangeTextDocument>(h::did_change::did_change)
        .notify::<n::DidCloseTextDocument>(h::did_close::did_close)
        .notify::<n::DidChangeConfiguration>(h::did_change_configuration::did_change_configuration)
        .notify::<n::DidChangeWatchedFiles>(h::did_change_watched_files::did_change_watched_files)
        .notify::<n::DidChangeWorkspaceFolders>(h::did_change_workspace_folders::did_change_workspace_folders)
        .notify_custom::<ext::TrustChanged>(h::trust::changed)
}

/// Methods the main loop handles itself.
pub const LIFECYCLE: &[&str] = &["shutdown", "exit", "$/cancelRequest"];

/// Every method name the server answers or accepts, sorted (for the tidy check).
pub fn methods() -> Vec<&'static str> {
    let t = table();
    let mut v: Vec<&'static str> = t
        .requests
        .keys()
        .chain(t.notifications.keys())
        .chain(LIFECYCLE)
        .copied()
        .collect();
    v.sort_unstable();
    v
}
