//! `workspace/didChangeConfiguration`: settings apply without a restart. When the notification
//! carries the `claudeContext` section it is used as is; otherwise the server asks with
//! `workspace/configuration` (from a task: the answer comes through the main loop).
//! What the client configures is laid over `initializationOptions`, which lie over the defaults.

use ls_types::{ConfigurationItem, DidChangeConfigurationParams, MessageType};

use crate::features::settings::{SECTION, Settings, merge};
use crate::lsp::Backend;
use crate::lsp::state::Impact;
use crate::tasks::{OnConflict, TaskKind};

pub fn did_change_configuration(b: &Backend, params: DidChangeConfigurationParams) {
    let carries_section = params
        .settings
        .as_object()
        .is_some_and(|m| m.contains_key(SECTION));
    if carries_section {
        apply(b, &params.settings);
    } else if b.state.client_caps().configuration {
        pull(b);
    }
}

/// Asks the client for the `claudeContext` section and applies it (a task: it waits for the
/// client).
pub fn pull(b: &Backend) {
    let b2 = b.clone();
    b.spawn(
        TaskKind::Refresh,
        "configuration".into(),
        OnConflict::Replace,
        move |_| async move {
            let item = ConfigurationItem {
                scope_uri: None,
                section: Some(SECTION.into()),
            };
            match b2.client.configuration(vec![item]).await {
                Ok(values) => {
                    let value = values.into_iter().next().unwrap_or_default();
                    apply(&b2, &value);
                }
                Err(e) => crate::log_warn!("workspace/configuration failed: {}", e.message),
            }
        },
    );
}

/// Applies a configuration over `initializationOptions` and the defaults; a bad value is shown
/// to the user, naming the field, and the previous settings stay.
fn apply(b: &Backend, value: &serde_json::Value) {
    let base = b
        .state
        .init_options
        .read()
        .map(|v| v.clone())
        .unwrap_or_default();
    match Settings::parse(&merge(&base, value)) {
        Ok(s) => {
            if b.state.set_settings(s) {
                b.changed(
                    Impact {
                        context: true,
                        maybe_attaches: None,
                    },
                    None,
                );
            }
        }
        Err(e) => show_settings_error(b, &format!("settings ignored: {e}")),
    }
}

/// A warning the user sees (`window/showMessage`) and the log keeps.
pub fn show_settings_error(b: &Backend, message: &str) {
    crate::log_warn!("{message}");
    let client = b.client.clone();
    let message = format!("claude-context: {message}");
    b.spawn(
        TaskKind::Refresh,
        format!("show:{message}"),
        OnConflict::Join,
        move |_| async move {
            client.show_message(MessageType::WARNING, message).await;
        },
    );
}
