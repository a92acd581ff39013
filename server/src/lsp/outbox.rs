//! The typed client handle the language server's handlers use, over the one ordered, bounded
//! outbound queue ([`Outbox`], shared with the ACP front end in [`crate::rpc::outbox`]).
//!
//! [`Client::request`] sends a server → client request and awaits the client's answer:
//! `chat/permission` and `workspace/applyEdit` use it. [`Client::request_within`] gives a request
//! up after a time limit, and a request whose future is dropped (the tool call was cancelled) is
//! given up too: the client gets `$/cancelRequest` for it.

use std::time::Duration;

use ls_types::notification::Notification as LspNotification;
use ls_types::{
    ConfigurationItem, ConfigurationParams, Diagnostic, LogMessageParams, MessageType,
    PublishDiagnosticsParams, Registration, RegistrationParams, ShowMessageParams, Unregistration,
    UnregistrationParams, Uri,
};
use serde::Serialize;
use serde_json::Value;

use super::jsonrpc::{self, ResponseError};
pub use crate::rpc::outbox::{Dialect, OUT_CAPACITY, Out, Outbox, write_loop};

/// The client as the handlers see it: typed notifications and requests over the [`Outbox`].
#[derive(Clone)]
pub struct Client {
    pub out: Outbox,
}

impl Client {
    pub async fn notify<N: LspNotification>(&self, params: N::Params) {
        self.out
            .send(jsonrpc::message(None, N::METHOD, &params))
            .await;
    }

    /// A notification of a method given by name (custom methods).
    pub async fn notify_raw<P: Serialize>(&self, method: &str, params: &P) {
        self.out.send(jsonrpc::message(None, method, params)).await;
    }

    /// Sends a request and waits for the client's answer; an error when the connection ends
    /// first.
    pub async fn request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Value, ResponseError> {
        self.request_within(method, params, None).await
    }

    /// [`Client::request`] with a time limit: past `timeout` the request is given up (an error
    /// saying so, `$/cancelRequest` sent to the client). Dropping the future (the work that
    /// asked was cancelled) gives it up the same way ([`Outbox::request_within`]).
    pub async fn request_within<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Value, ResponseError> {
        self.out.request_within(method, params, timeout).await
    }

    pub async fn publish_diagnostics(
        &self,
        uri: Uri,
        diagnostics: Vec<Diagnostic>,
        version: Option<i32>,
    ) {
        self.notify::<ls_types::notification::PublishDiagnostics>(PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        })
        .await;
    }

    pub async fn show_message(&self, typ: MessageType, message: String) {
        self.notify::<ls_types::notification::ShowMessage>(ShowMessageParams { typ, message })
            .await;
    }

    /// `window/logMessage` without waiting: dropped when the queue is full.
    /// `window/logMessage`, if the queue has room now (a log line never waits); `false` when not.
    pub fn log_message(&self, typ: MessageType, message: String) -> bool {
        self.out.try_send(jsonrpc::message(
            None,
            "window/logMessage",
            &LogMessageParams { typ, message },
        ))
    }

    pub async fn configuration(
        &self,
        items: Vec<ConfigurationItem>,
    ) -> Result<Vec<Value>, ResponseError> {
        let v = self
            .request("workspace/configuration", &ConfigurationParams { items })
            .await?;
        serde_json::from_value(v)
            .map_err(|e| ResponseError::internal(format!("workspace/configuration answer: {e}")))
    }

    pub async fn register_capability(
        &self,
        registrations: Vec<Registration>,
    ) -> Result<(), ResponseError> {
        self.request(
            "client/registerCapability",
            &RegistrationParams { registrations },
        )
        .await
        .map(|_| ())
    }

    pub async fn unregister_capability(
        &self,
        unregisterations: Vec<Unregistration>,
    ) -> Result<(), ResponseError> {
        self.request(
            "client/unregisterCapability",
            &UnregistrationParams { unregisterations },
        )
        .await
        .map(|_| ())
    }
}
