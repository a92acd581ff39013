//! What the session's tools need from the ACP client, over the one ordered outbox: the
//! [`Editor`] (the client's file system: `fs/read_text_file`, `fs/write_text_file`), the
//! [`Asker`] (`session/request_permission`) and the compaction [`Observer`].
//!
//! **Files through the client.** When the client declared `fs.readTextFile`, a tool's read asks
//! the client for the text (its unsaved buffer when it holds one) — but only for a regular file
//! with no other name (no hard link) of at most [`MAX_CLIENT_READ`] on disk, asked by its real
//! path (what the tool judged), under a [`crate::fs::PathGuard`]: when a name on the path changed
//! between the check and the answer (a folder swapped for a link: the client, which reads by
//! path, may have read a file outside the workspace), the answer is dropped. The client's text is
//! used only when it differs from the disk's (an unsaved buffer); otherwise the tool reads the
//! disk itself, confined. A missing file, a FIFO, a device or a larger file is left to the
//! tool's own confined read, which refuses or caps it. When the client declared
//! `fs.writeTextFile`, a `Write` or `Edit` of a file the client holds unsaved lands through
//! `fs/write_text_file` (in its buffer): the text is computed on what the client last gave, and
//! the write is refused when the client's text changed since. Every other write (a file the
//! client holds as it is on disk, or not at all; a new file) is the tool's own confined write,
//! never a path the client resolves. Without these capabilities, the disk, as on the command
//! line (and with `--no-client-files`, which drops them). A `Read` of the client's text says
//! only that it is what the client returned and that it differs from the disk
//! ([`Editor::source`]): some clients answer from the disk, and ACP's capabilities do not say.
//!
//! **Permissions.** Every `Write`, `Edit` and `Bash` the session's policy asks about becomes
//! `session/request_permission` for the call the client already shows (`toolCallId`), with the
//! options allow once, allow for the session (named with the session's own scope text; absent
//! for files that make programs run code, which are asked every time) and reject. A rejection, a
//! `cancelled` outcome, an error or no answer within [`PERMISSION_TIMEOUT`] is a denial.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    Content, ContentBlock, PermissionOption, PermissionOptionKind, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification, SessionUpdate, ToolCallContent, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};
use futures::future::BoxFuture;

use super::updates;
use crate::rpc::outbox::Outbox;
use crate::session::compaction::Observer;
use crate::session::seams::{Asker, BufferEdit, Decision, Editor, PermissionRequest, apply_edits};

/// How long a permission prompt may stay unanswered before the call is denied.
pub const PERMISSION_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How long the client may take to read or write a file.
pub const FILE_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest file read through the client (the same cap as the agent's own reads of text).
pub const MAX_CLIENT_READ: u64 = 10 * 1024 * 1024;

/// What the client said it can do (`initialize`'s `clientCapabilities`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
}

/// The client, for one session: the outbox and the session's id (the client's).
#[derive(Clone)]
pub struct Peer {
    pub out: Outbox,
    pub session_id: Arc<str>,
    pub caps: Caps,
}

impl Peer {
    /// Sends one `session/update`.
    pub async fn update(&self, update: SessionUpdate) {
        self.out
            .notify(
                "session/update",
                &SessionNotification::new(self.session_id.clone(), update),
            )
            .await;
    }
}

/// The client's file system as the tools' editor.
pub struct ClientFiles {
    pub peer: Peer,
}

impl ClientFiles {
    async fn read(&self, path: &Path) -> Result<String, String> {
        let answer = self
            .peer
            .out
            .request_within(
                "fs/read_text_file",
                &ReadTextFileRequest::new(self.peer.session_id.clone(), path),
                Some(FILE_TIMEOUT),
            )
            .await
            .map_err(|e| e.message)?;
        serde_json::from_value::<ReadTextFileResponse>(answer)
            .map(|r| r.content)
            .map_err(|e| {
                format!("the client's answer to fs/read_text_file is not {{content}} ({e})")
            })
    }
}

/// Is `path` a regular file with no other name (a hard link could be one outside the
/// workspace), small enough to ask the client for, named by its real path?
fn worth_asking(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            m.file_type().is_file()
                && m.nlink() == 1
                && m.len() <= MAX_CLIENT_READ
                && std::fs::canonicalize(path).is_ok_and(|real| real == path)
        }
        Err(_) => false,
    }
}

/// What is on disk at `path` now, as text, when it can be had (at most [`MAX_CLIENT_READ`]).
fn disk_text(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::fs::open_regular(path)
        .ok()?
        .take(MAX_CLIENT_READ + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The guard a question about `path` is asked under, from the attempt to watch it: `None`
/// when the client must not be asked. On Linux a path that cannot be watched is never asked
/// about (a folder on it was a link at that moment, or the user's inotify instances ran out
/// under load): asked unguarded, a link swapped in afterwards would go unseen, and the client
/// would read outside the workspace. Elsewhere there is no guard, and the client is asked
/// unguarded (docs/threat-model.md).
fn watch_or_refuse(
    path: &Path,
    watched: std::io::Result<crate::fs::PathGuard>,
) -> Option<Option<crate::fs::PathGuard>> {
    match watched {
        Ok(guard) => Some(Some(guard)),
        Err(e) if cfg!(target_os = "linux") => {
            crate::log_debug!(
                "fs/read_text_file {}: not asked, the path cannot be watched ({e})",
                path.display()
            );
            None
        }
        Err(_) => Some(None),
    }
}

impl ClientFiles {
    /// The client's text of `path`, asked under a [`crate::fs::PathGuard`] (made before the
    /// path is checked, read after the answer): `None` when the path is not one to ask about,
    /// the client did not answer, or a name on the path changed meanwhile (the client may have
    /// read through a link swapped in: its answer is dropped). Also the disk's text, read under
    /// the same guard.
    async fn guarded_read(&self, path: &Path) -> Option<(String, Option<String>)> {
        let guard = watch_or_refuse(path, crate::fs::PathGuard::watch(path))?;
        if !worth_asking(path) {
            return None;
        }
        let text = match self.read(path).await {
            Ok(t) if t.len() as u64 <= 6 * MAX_CLIENT_READ => t,
            Ok(_) => return None,
            Err(e) => {
                crate::log_debug!("fs/read_text_file {}: {e}", path.display());
                return None;
            }
        };
        let disk = disk_text(path);
        if guard.as_ref().is_some_and(crate::fs::PathGuard::changed) || !worth_asking(path) {
            crate::log_warn!(
                "fs/read_text_file {}: the path changed while the client read it; its answer is \
                 not used",
                path.display()
            );
            return None;
        }
        Some((text, disk))
    }
}

impl Editor for ClientFiles {
    /// The client's text when it differs from the disk's: the client holds the file with unsaved
    /// changes. A file the client holds as it is on disk (or not at all) is `None`: the tools
    /// read and write the disk themselves, confined (`tools/confine.rs`), so the client never
    /// resolves a path for a write that a swapped link could send outside the workspace.
    fn open_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if !self.peer.caps.read_text_file {
                return None;
            }
            let (text, disk) = self.guarded_read(path).await?;
            (disk.as_deref() != Some(text.as_str())).then_some(text)
        })
    }

    /// ACP describes `fs/read_text_file` as the client's text with its unsaved changes, but
    /// clients differ (codecompanion.nvim answers from the disk: docs/acp.md): the result says
    /// only what is known, that the client's answer differs from the disk.
    fn source(&self) -> &'static str {
        "the text the ACP client returned for it (fs/read_text_file), which differs from the file on disk"
    }

    fn can_apply_edits(&self) -> bool {
        self.peer.caps.read_text_file && self.peer.caps.write_text_file
    }

    fn apply_edit(&self, edit: BufferEdit) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            // ACP has no versions: the client's text is read again (guarded, as every read), and
            // the edit refused when it is no longer what the edit was computed on.
            let Some((now, _)) = self.guarded_read(&edit.path).await else {
                return Err(
                    "the file could not be read back from the editor (or its path changed \
                     meanwhile); read it again"
                        .to_string(),
                );
            };
            if now != edit.base {
                return Err(
                    "the file changed in the editor since it was read; read it again".to_string(),
                );
            }
            let content = apply_edits(&edit.base, &edit.edits);
            self.peer
                .out
                .request_within(
                    "fs/write_text_file",
                    &WriteTextFileRequest::new(
                        self.peer.session_id.clone(),
                        edit.path.clone(),
                        content,
                    ),
                    Some(FILE_TIMEOUT),
                )
                .await
                .map(|_| ())
                .map_err(|e| format!("the editor did not write the file: {}", e.message))
        })
    }
}

/// `session/request_permission` for one session.
pub struct ClientAsker {
    pub peer: Peer,
}

const ALLOW: &str = "allow";
const ALLOW_SESSION: &str = "allowSession";
const REJECT: &str = "reject";

/// The prompt for `request`: the call it is about, and its options.
pub fn permission_request(
    session_id: &str,
    request: &PermissionRequest,
) -> RequestPermissionRequest {
    // A question that is not "may this call run" (an MCP server's approval) brings its words.
    let (allow, allow_session, reject) = match &request.choices {
        Some(c) => (
            c.allow.clone(),
            c.allow_session
                .clone()
                .filter(|_| request.session_scope.is_some()),
            c.deny.clone(),
        ),
        None => (
            "Allow once".to_string(),
            // "Allow every Edit inside the workspace for this session"
            request.session_scope.as_ref().map(|s| format!("Allow {s}")),
            "Reject".to_string(),
        ),
    };
    // The trust question's answers are kept: "always" in ACP's words.
    let kept = request.tool == crate::session::trust::QUESTION_TOOL;
    let mut options = vec![PermissionOption::new(
        ALLOW,
        allow,
        if kept {
            PermissionOptionKind::AllowAlways
        } else {
            PermissionOptionKind::AllowOnce
        },
    )];
    if let Some(label) = allow_session {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            label,
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        reject,
        if kept {
            PermissionOptionKind::RejectAlways
        } else {
            PermissionOptionKind::RejectOnce
        },
    ));
    let id = request
        .tool_use_id
        .clone()
        .unwrap_or_else(|| format!("ask-{}", uuid::Uuid::new_v4().simple()));
    let mut fields = ToolCallUpdateFields::new().title(request.summary.clone());
    if let Some(w) = &request.warning {
        // The trust question's text is the question itself, not a warning.
        let text = if kept {
            w.clone()
        } else {
            format!("**Warning:** {w}")
        };
        fields = fields.content(vec![ToolCallContent::Content(Content::new(
            ContentBlock::from(text),
        ))]);
    }
    RequestPermissionRequest::new(
        session_id.to_string(),
        ToolCallUpdate::new(ToolCallId::new(id), fields),
        options,
    )
}

/// The user's answer to [`permission_request`] (any answer that is not a choice denies).
pub fn decision(answer: &serde_json::Value, offered_session: bool) -> Decision {
    chosen(answer, offered_session).unwrap_or(Decision::Deny)
}

/// What the user chose; `None` when the answer is no choice (`cancelled`, malformed, an option
/// never offered).
fn chosen(answer: &serde_json::Value, offered_session: bool) -> Option<Decision> {
    match serde_json::from_value::<RequestPermissionResponse>(answer.clone()) {
        Ok(r) => match r.outcome {
            RequestPermissionOutcome::Selected(s) => match &*s.option_id.0 {
                ALLOW => Some(Decision::Allow),
                ALLOW_SESSION if offered_session => Some(Decision::AllowSession),
                ALLOW_SESSION => Some(Decision::Allow),
                REJECT => Some(Decision::Deny),
                other => {
                    crate::log_warn!(
                        "session/request_permission: the client chose an option never offered ({other:?}); denied"
                    );
                    None
                }
            },
            _ => None,
        },
        Err(e) => {
            crate::log_warn!(
                "session/request_permission: the client's answer is not {{outcome}} ({e}); denied"
            );
            None
        }
    }
}

impl Asker for ClientAsker {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move { self.answer(request).await.unwrap_or(Decision::Deny) })
    }

    /// The user's own choice; `None` when nobody chose (no answer in time, an error,
    /// `cancelled`), so that an MCP server's approval records only what a person chose.
    fn answer(&self, request: PermissionRequest) -> BoxFuture<'_, Option<Decision>> {
        Box::pin(async move {
            let prompt = permission_request(&self.peer.session_id, &request);
            let call = prompt.tool_call.tool_call_id.clone();
            // A question that is not a tool call's (an MCP server's approval): shown as a call
            // of its own first, so the client has something to attach the prompt to.
            if request.tool_use_id.is_none() {
                self.peer
                    .update(updates::note(
                        &call.0,
                        request.summary.clone(),
                        ToolCallStatus::Pending,
                    ))
                    .await;
            }
            let answer = self
                .peer
                .out
                .request_within(
                    "session/request_permission",
                    &prompt,
                    Some(PERMISSION_TIMEOUT),
                )
                .await;
            let d = match answer {
                Ok(v) => chosen(&v, request.session_scope.is_some()),
                Err(e) => {
                    crate::log_warn!(
                        "session/request_permission: {} ({}); denied",
                        e.message,
                        e.code
                    );
                    None
                }
            };
            let allowed = d.is_some_and(|d| d != Decision::Deny);
            if request.tool_use_id.is_some() {
                if allowed {
                    self.peer.update(updates::running(&call.0)).await;
                }
            } else {
                let status = if allowed {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                };
                self.peer
                    .update(updates::note_done(&call.0, status, None))
                    .await;
            }
            d
        })
    }
}

/// Compaction work as a tool call of kind `other`: in progress, then completed.
pub struct ClientObserver {
    pub peer: Peer,
    current: std::sync::Mutex<Option<String>>,
}

impl ClientObserver {
    pub fn new(peer: Peer) -> ClientObserver {
        ClientObserver {
            peer,
            current: std::sync::Mutex::new(None),
        }
    }
}

impl Observer for ClientObserver {
    fn started<'a>(&'a self, title: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let id = format!("compact-{}", uuid::Uuid::new_v4().simple());
            self.peer
                .update(updates::note(
                    &id,
                    title.to_string(),
                    ToolCallStatus::InProgress,
                ))
                .await;
            *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
        })
    }

    fn finished(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let id = self
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(id) = id {
                self.peer
                    .update(updates::note_done(&id, ToolCallStatus::Completed, None))
                    .await;
            }
        })
    }

    fn breaker_tripped<'a>(&'a self, message: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.peer
                .update(updates::message(format!("\n\n**Warning:** {message}\n\n")))
                .await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 25, item 4: under two test runs at once, `PathGuard::watch` failed (a folder on
    /// the path was the swapped-in link at that instant, or the user's inotify instances ran
    /// out) and the client was asked unguarded; the link swapped in again before it read, and
    /// the text of the file outside reached the model.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_path_that_cannot_be_watched_is_never_asked_of_the_client() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("todo.txt");
        std::fs::write(&file, "inside\n").unwrap();
        // A folder on the path that is a file: the watch fails as it does on a link.
        let unwatchable = file.join("below.txt");
        let watched = crate::fs::PathGuard::watch(&unwatchable);
        assert!(watched.is_err());
        assert!(watch_or_refuse(&unwatchable, watched).is_none());
        let watched = crate::fs::PathGuard::watch(&file);
        assert!(matches!(watch_or_refuse(&file, watched), Some(Some(_))));
    }

    fn request(scope: Option<&str>) -> PermissionRequest {
        PermissionRequest {
            tool: "Edit".into(),
            input: json!({"file_path": "/w/a.ts"}),
            summary: "Edit a.ts".into(),
            session_scope: scope.map(str::to_string),
            warning: None,
            reason: None,
            choices: None,
            tool_use_id: Some("toolu_1".into()),
        }
    }

    #[test]
    fn the_prompt_offers_the_sessions_scope_only_when_there_is_one() {
        let v = serde_json::to_value(permission_request(
            "s1",
            &request(Some("every Edit inside the workspace for this session")),
        ))
        .unwrap();
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["toolCall"]["toolCallId"], "toolu_1");
        assert_eq!(v["toolCall"]["title"], "Edit a.ts");
        let kinds: Vec<&str> = v["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
        assert_eq!(
            v["options"][1]["name"],
            "Allow every Edit inside the workspace for this session"
        );
        let mut sensitive = request(None);
        sensitive.warning = Some("This file can make programs run commands: git hooks.".into());
        let v = serde_json::to_value(permission_request("s1", &sensitive)).unwrap();
        assert_eq!(v["options"].as_array().unwrap().len(), 2, "{v}");
        assert!(
            v["toolCall"]["content"][0]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("git hooks")
        );
    }

    #[test]
    fn answers_map_to_decisions_and_anything_else_denies() {
        let sel = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(decision(&sel("allow"), true), Decision::Allow);
        assert_eq!(decision(&sel("allowSession"), true), Decision::AllowSession);
        // A session answer where none was offered allows this call only.
        assert_eq!(decision(&sel("allowSession"), false), Decision::Allow);
        assert_eq!(decision(&sel("reject"), true), Decision::Deny);
        assert_eq!(decision(&sel("yes"), true), Decision::Deny);
        assert_eq!(
            decision(&json!({"outcome": {"outcome": "cancelled"}}), true),
            Decision::Deny
        );
        assert_eq!(decision(&json!({"x": 1}), true), Decision::Deny);
    }
}
