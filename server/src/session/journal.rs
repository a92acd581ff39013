//! The session's transcript, shared by the two places that write it: the request that accepts a
//! user message (`chat/send`, on a blocking thread: the message is on disk before the answer)
//! and the turn task (answers, partial answers, tool results, on the blocking pool so an fsync
//! never stalls the async workers).
//!
//! The file is created at the first write, not when the session starts: a session nobody wrote
//! in leaves no empty transcript behind. A session continued from the reference CLI's transcript
//! first records the history it inherited, so our file alone resumes to the same conversation.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::transcript::{SessionMeta, Writer};
use crate::conversation::{Message, Role};
use crate::llm::Secret;

/// A session's transcript. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Journal {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    writer: Option<Writer>,
    /// How to create the file at the first write.
    plan: Option<Plan>,
    path: PathBuf,
    /// Scrubbed from every record (added after the file was created, too).
    secrets: Vec<Secret>,
}

#[derive(Debug)]
struct Plan {
    dir: PathBuf,
    meta: SessionMeta,
    inherited: Vec<Message>,
}

impl Journal {
    /// A transcript created at `<dir>/<session id>.jsonl` on the first write, starting with
    /// `inherited` (a reference CLI session's history), every record scrubbed of `secret`.
    pub fn lazy(
        dir: &Path,
        meta: SessionMeta,
        inherited: Vec<Message>,
        secret: Option<Secret>,
    ) -> Journal {
        let path = dir.join(format!("{}.jsonl", meta.session_id));
        Journal {
            inner: Arc::new(Mutex::new(Inner {
                writer: None,
                plan: Some(Plan {
                    dir: dir.to_path_buf(),
                    meta,
                    inherited,
                }),
                path,
                secrets: secret.into_iter().collect(),
            })),
        }
    }

    /// An open transcript (a resumed session of ours).
    pub fn open(writer: Writer) -> Journal {
        let path = writer.path().to_path_buf();
        Journal {
            inner: Arc::new(Mutex::new(Inner {
                writer: Some(writer),
                plan: None,
                path,
                secrets: Vec::new(),
            })),
        }
    }

    /// Scrubs `secret` from every record written from now on (a key configured after the
    /// session started).
    pub fn scrub(&self, secret: &Secret) {
        let mut inner = self.lock();
        if inner.secrets.contains(secret) {
            return;
        }
        inner.secrets.push(secret.clone());
        if let Some(w) = inner.writer.as_mut() {
            w.scrub(secret.clone());
        }
    }

    /// Where the transcript is (or will be).
    pub fn path(&self) -> PathBuf {
        self.lock().path.clone()
    }

    /// Has anything been written?
    pub fn exists(&self) -> bool {
        self.lock().writer.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the writer, creating the file first if needed. Blocking (it fsyncs): call
    /// from a blocking thread, or use [`Journal::run`].
    pub fn with<T>(&self, f: impl FnOnce(&mut Writer) -> io::Result<T>) -> io::Result<T> {
        let mut inner = self.lock();
        if inner.writer.is_none() {
            let plan = inner
                .plan
                .as_ref()
                .ok_or_else(|| io::Error::other("the transcript is not open; not writing"))?;
            let mut w = Writer::create(&plan.dir, plan.meta.clone())?;
            for s in &inner.secrets {
                w.scrub(s.clone());
            }
            for m in &plan.inherited {
                match m.role {
                    Role::User => w.user(m)?,
                    Role::Assistant => w.assistant(m)?,
                };
            }
            inner.plan = None;
            inner.writer = Some(w);
        }
        let w = inner.writer.as_mut().expect("created above");
        f(w)
    }

    /// [`Journal::with`] on the blocking pool.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Writer) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let j = self.clone();
        tokio::task::spawn_blocking(move || j.with(f))
            .await
            .map_err(|e| io::Error::other(format!("the transcript writer stopped: {e}")))?
    }
}
