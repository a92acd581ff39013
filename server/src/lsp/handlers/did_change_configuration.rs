//! `workspace/didChangeConfiguration`: settings apply without a restart. When the notification
//! carries the `claudeContext` section it is used as is; otherwise the server asks with
//! `workspace/configuration` (on a spawned task: the answer comes through the reading task).
//! What the client configures is laid over `initializationOptions`, which lie over the defaults.

use tower_lsp_server::ls_types::{ConfigurationItem, DidChangeConfigurationParams, MessageType};

use crate::features::settings::{SECTION, Settings, merge};
use crate::lsp::Backend;

pub async fn did_change_configuration(b: &Backend, params: DidChangeConfigurationParams) {
    let carries_section = params
        .settings
        .as_object()
        .is_some_and(|m| m.contains_key(SECTION));
    if carries_section {
        apply(b, &params.settings).await;
    } else if b
        .state
        .client_configuration
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        let b = b.clone();
        tokio::spawn(async move { pull(&b).await });
    }
}

/// Asks the client for the `claudeContext` section and applies it.
pub async fn pull(b: &Backend) {
    let item = ConfigurationItem {
        scope_uri: None,
        section: Some(SECTION.into()),
    };
    match b.client.configuration(vec![item]).await {
        Ok(values) => {
            let value = values.into_iter().next().unwrap_or_default();
            apply(b, &value).await;
        }
        Err(e) => eprintln!(
            "claude-context: workspace/configuration failed: {}",
            e.message
        ),
    }
}

/// Applies a configuration over `initializationOptions` and the defaults.
async fn apply(b: &Backend, value: &serde_json::Value) {
    let base = b
        .state
        .init_options
        .read()
        .map(|v| v.clone())
        .unwrap_or_default();
    match Settings::parse(&merge(&base, value)) {
        Ok(s) => {
            if b.state.set_settings(s) {
                b.publish_all().await;
                b.notify_changed().await;
            }
        }
        Err(e) => {
            eprintln!("claude-context: settings ignored: {e}");
            b.client
                .show_message(
                    MessageType::WARNING,
                    format!("claude-context: settings ignored: {e}"),
                )
                .await;
        }
    }
}
