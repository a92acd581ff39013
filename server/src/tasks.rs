//! Long work owned by the server, not by a request: a chat turn, a compaction, a git snapshot,
//! a workspace scan, a debounced refresh.
//!
//! Each task has a key (what it works on: `chat:<session>`, `git:<root>`), a [`TaskKind`] that
//! says whether shutdown must wait for it, and a [`CancellationToken`] it checks at its await
//! points. A request may *start* a task and answer at once (`chat/send` answers `{turnId}`); the
//! task outlives the request, and `$/cancelRequest` of that request does not touch it (a chat turn
//! is stopped by `chat/cancel`, i.e. [`Tasks::cancel`] of its key).
//!
//! Conflicts on a key are decided by the caller's [`OnConflict`]: `Join` keeps the running task
//! (single flight: one snapshot per root at a time; one turn per session), `Replace` cancels it
//! and starts anew (debounce: the last edit's refresh wins).
//!
//! [`Tasks::shutdown`] cancels every token and waits, within a bound, for the tasks that must
//! finish their bookkeeping (a turn fsyncs its transcript, a compaction writes its boundary); a
//! refresh is abandoned (libgit2 cannot be interrupted, and nothing is lost by not waiting).
//!
//! No LSP types here: the chat (`session/`) and compaction start their turns through this registry
//! with any future.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;
pub use tokio_util::sync::CancellationToken;

/// What a task is, which decides whether shutdown waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// A chat turn: streams, runs tools, appends to the transcript. Shutdown waits for it to
    /// stop and fsync.
    ChatTurn,
    /// A compaction: writes a boundary record before the new history is used. Shutdown waits.
    Compaction,
    /// Memory extraction after a turn. Shutdown waits (it writes files).
    MemoryExtraction,
    /// A chat session's MCP servers, kept for the session's life: shutdown cancels it and waits
    /// while it stops them (their process groups killed).
    McpServers,
    /// A git snapshot, a workspace scan, a walk warm-up: abandoned at shutdown.
    Refresh,
    /// Debounced diagnostics and `context/changed`: abandoned at shutdown.
    Debounce,
}

impl TaskKind {
    /// Must shutdown wait for this task to end?
    pub fn must_finish(self) -> bool {
        matches!(
            self,
            TaskKind::ChatTurn
                | TaskKind::Compaction
                | TaskKind::MemoryExtraction
                | TaskKind::McpServers
        )
    }
}

/// What to do when a task with the same key is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// Keep the running one; do not start.
    Join,
    /// Cancel the running one and start the new one.
    Replace,
}

/// A task's identity, unique for the life of the registry.
pub type TaskId = u64;

/// What [`Tasks::spawn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spawned {
    Started(TaskId),
    /// `Join`: this task was already running under the key.
    Running(TaskId),
    /// The registry is shutting down: nothing new starts.
    Closed,
}

struct Entry {
    id: TaskId,
    kind: TaskKind,
    token: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Inner {
    running: HashMap<String, Entry>,
    closed: bool,
}

/// The registry of running tasks. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct Tasks {
    inner: Arc<Mutex<Inner>>,
    next: Arc<AtomicU64>,
    handle: Handle,
}

/// What shutdown found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Tasks that ended within the bound.
    pub finished: usize,
    /// Must-finish tasks still running when the bound passed (their keys).
    pub abandoned: Vec<String>,
}

impl Tasks {
    /// A registry spawning on `handle`'s runtime.
    pub fn new(handle: Handle) -> Tasks {
        Tasks {
            inner: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
            handle,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `work(token)` under `key`. The task leaves the registry when it ends.
    pub fn spawn<F, Fut>(&self, kind: TaskKind, key: &str, on: OnConflict, work: F) -> Spawned
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut inner = self.lock();
        if inner.closed {
            return Spawned::Closed;
        }
        if let Some(old) = inner.running.get(key) {
            match on {
                OnConflict::Join => return Spawned::Running(old.id),
                OnConflict::Replace => old.token.cancel(),
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let fut = work(token.clone());
        let registry = self.inner.clone();
        let owned_key = key.to_string();
        // The entry is in the map before the task can end (the lock is held), so its removal
        // below always finds it (or a newer task under the key, which it leaves alone).
        let handle = self.handle.spawn(async move {
            fut.await;
            let mut inner = registry.lock().unwrap_or_else(|p| p.into_inner());
            if inner.running.get(&owned_key).is_some_and(|e| e.id == id) {
                inner.running.remove(&owned_key);
            }
        });
        inner.running.insert(
            key.to_string(),
            Entry {
                id,
                kind,
                token,
                handle: Some(handle),
            },
        );
        Spawned::Started(id)
    }

    /// Cancels the task under `key`; returns whether one was running.
    pub fn cancel(&self, key: &str) -> bool {
        match self.lock().running.get(key) {
            Some(e) => {
                e.token.cancel();
                true
            }
            None => false,
        }
    }

    /// Is a task running under `key`?
    pub fn is_running(&self, key: &str) -> bool {
        self.lock().running.contains_key(key)
    }

    /// Keys of the running tasks, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().running.keys().cloned().collect();
        v.sort();
        v
    }

    /// Stops accepting tasks, cancels every running one, and waits up to `grace` for those that
    /// must finish. Refresh and debounce tasks are not waited for.
    pub async fn shutdown(&self, grace: Duration) -> ShutdownReport {
        let waits: Vec<(String, JoinHandle<()>)> = {
            let mut inner = self.lock();
            inner.closed = true;
            let mut waits = Vec::new();
            for (key, e) in inner.running.iter_mut() {
                e.token.cancel();
                if e.kind.must_finish()
                    && let Some(h) = e.handle.take()
                {
                    waits.push((key.clone(), h));
                }
            }
            waits
        };
        let deadline = tokio::time::Instant::now() + grace;
        let mut report = ShutdownReport::default();
        for (key, h) in waits {
            match tokio::time::timeout_at(deadline, h).await {
                Ok(_) => report.finished += 1,
                Err(_) => report.abandoned.push(key),
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[tokio::test]
    async fn join_is_single_flight_and_replace_cancels() {
        let tasks = Tasks::new(Handle::current());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let first = tasks.spawn(TaskKind::Refresh, "git:/w", OnConflict::Join, |_| async {
            let _ = rx.await;
        });
        let Spawned::Started(id) = first else {
            panic!("{first:?}")
        };
        assert_eq!(
            tasks.spawn(TaskKind::Refresh, "git:/w", OnConflict::Join, |_| async {}),
            Spawned::Running(id)
        );
        let _ = tx.send(());
        for _ in 0..100 {
            if !tasks.is_running("git:/w") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!tasks.is_running("git:/w"), "an ended task leaves");

        let cancelled = Arc::new(AtomicBool::new(false));
        let c = cancelled.clone();
        tasks.spawn(
            TaskKind::Debounce,
            "refresh",
            OnConflict::Replace,
            |t| async move {
                t.cancelled().await;
                c.store(true, Ordering::SeqCst);
            },
        );
        tasks.spawn(
            TaskKind::Debounce,
            "refresh",
            OnConflict::Replace,
            |_| async {},
        );
        for _ in 0..100 {
            if cancelled.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            cancelled.load(Ordering::SeqCst),
            "the replaced task saw its token"
        );
    }

    #[tokio::test]
    async fn shutdown_waits_for_turns_within_the_bound() {
        let tasks = Tasks::new(Handle::current());
        let saved = Arc::new(AtomicBool::new(false));
        let s = saved.clone();
        tasks.spawn(
            TaskKind::ChatTurn,
            "chat:1",
            OnConflict::Join,
            |t| async move {
                t.cancelled().await;
                // The turn's bookkeeping after a cancel (a transcript's fsync).
                tokio::time::sleep(Duration::from_millis(20)).await;
                s.store(true, Ordering::SeqCst);
            },
        );
        tasks.spawn(TaskKind::ChatTurn, "chat:2", OnConflict::Join, |_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        tasks.spawn(TaskKind::Refresh, "git:/w", OnConflict::Join, |_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let report = tasks.shutdown(Duration::from_millis(300)).await;
        assert!(saved.load(Ordering::SeqCst));
        assert_eq!(report.finished, 1);
        assert_eq!(report.abandoned, ["chat:2"]);
        assert_eq!(
            tasks.spawn(TaskKind::Refresh, "x", OnConflict::Join, |_| async {}),
            Spawned::Closed
        );
    }
}
