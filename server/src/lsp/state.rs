//! The server's state: open documents, settings, and the caches that keep requests fast.
//!
//! * Open documents live in a [`DashMap`] keyed by URI; their text is also laid over the disk in
//!   an [`OverlayFs`], so the core reads unsaved editor text for open files.
//! * The walk ([`Context`]) is cached per project root and dropped only when a file it depends on
//!   changes (an instruction file on its path, a user/managed/memory file, an include target).
//! * Previews are cached per (root, document) and tagged with a *generation* number that every
//!   change that can alter an effective context bumps (an open or close, an edit of an instruction
//!   file, a watched-file event, a new git snapshot, a settings change). A warm preview is a map
//!   lookup.
//!
//! * Walks are built outside any map lock, once per root at a time (single flight): concurrent
//!   requests for the same root wait on that root's cell, not on a map shard.
//!
//! Mutation happens on the main loop (notifications, `initialize`); requests read concurrently.
//! Documents are `Arc<str>`: the map, the overlay and a request share one copy of each text.
//! Nothing here knows about LSP types; the handlers convert at the edge. What the caches hold
//! is computed by [`crate::features::workspace`] (walks, attachments, extensions, previews, which
//! paths matter); this file keeps it per root and drops it when something changes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use dashmap::DashMap;

use crate::features::check::is_instruction_file;
use crate::features::diagnostics::Finding;
use crate::features::files::FileList;
use crate::features::preview::{GitPart, PendingEdit};
use crate::features::settings::Settings;
use crate::features::workspace::{
    self, Attacher, Context, GitError, GitSnapshot, LintOptions, ParseCache, StatusCache,
    WalkOptions,
};
use crate::fs::{Fs, OverlayFs, RealFs};
use crate::host::Host;

/// One open document.
#[derive(Clone, Debug)]
pub struct Document {
    /// The client's URI, as sent.
    pub uri: String,
    /// The file path for `file:` URIs.
    pub path: Option<PathBuf>,
    /// The text as it is in the editor: what the client reported, with the edits it applied
    /// for us (`workspace/applyEdit` answered `applied: true`) and has not reported yet.
    pub text: Arc<str>,
    /// The last version the client reported.
    pub version: i32,
    /// Opening order: open files are touched in this order.
    pub seq: u64,
    /// The text as the client's notifications tell it (`didOpen`, then every `didChange`):
    /// equal to `text` unless edits we sent are not reported yet.
    pub reported: Arc<str>,
    /// Edits sent to the client whose `didChange` has not come yet, oldest first.
    pub expected: Vec<ExpectedEdit>,
}

/// An edit sent with `workspace/applyEdit`, until the client's `didChange` reports it.
///
/// Clients answer and report in either order: VS Code sends its `didChange` before the answer,
/// Neovim (which debounces changes by 150 ms) after it, some clients never. Once the client
/// answered `applied: true`, the document's text is `after`; the `didChange` that brings
/// [`Document::reported`] to `after` is recognised as this edit (not applied twice).
#[derive(Clone, Debug)]
pub struct ExpectedEdit {
    pub id: u64,
    /// The document's text once the edit is applied.
    pub after: Arc<str>,
    /// The client answered `applied: true`.
    pub applied: bool,
}

/// An edit announced with [`State::expect_edit`]: what to send.
#[derive(Clone, Debug)]
pub struct EditTicket {
    pub uri: String,
    pub id: u64,
    /// The version the edit applies to, when the server knows the client's current version
    /// (no earlier edit of ours is still unreported); `None`: send `null`.
    pub version: Option<i32>,
}

/// The git snapshot of one root (taken by a `git:<root>` task from the root's
/// [`StatusCache`]).
#[derive(Clone, Debug, Default)]
pub struct GitSlot {
    pub part: Option<GitPart>,
    /// Why the block is missing or has no status (`git-status-timeout`, `-unavailable`,
    /// `git-unreadable`), shown in previews as `check` shows them.
    pub findings: Vec<Finding>,
    /// When the last snapshot finished.
    pub taken: Option<Instant>,
    /// The repository's work tree, once a snapshot found it: file events below it refresh
    /// this root's snapshot.
    pub work_tree: Option<PathBuf>,
}

/// What a preview or a new session gets of a root's git snapshot.
#[derive(Clone, Debug, Default)]
pub struct GitNow {
    pub part: Option<GitPart>,
    pub findings: Vec<Finding>,
    /// The first snapshot is still being taken (a preview does not wait for it).
    pub pending: bool,
}

/// The workspace file list of one root (for glob hovers and unmatched-glob hints), made by a
/// `scan:<root>` task.
#[derive(Clone, Debug, Default)]
pub struct ScanSlot {
    pub files: Option<Arc<FileList>>,
    pub taken: Option<Instant>,
}

/// What an edit or a file event changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impact {
    /// Some effective context changed (previews, hovers, lenses must refresh).
    pub context: bool,
    /// Opening or closing this file changes the context if touching it attaches something:
    /// decided off the main loop (it needs the walk).
    pub maybe_attaches: Option<PathBuf>,
}

/// What the client said it supports, recorded at `initialize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCaps {
    /// Positions are UTF-8 byte columns (negotiated) instead of UTF-16 code units.
    pub utf8_positions: bool,
    /// The client answers `workspace/configuration`.
    pub configuration: bool,
    /// The client accepts dynamic registration of file watchers.
    pub watchers: bool,
    /// `workspace/applyEdit` (the chat's Write and Edit go through the editor's buffers).
    pub apply_edit: bool,
    /// `window.workDoneProgress` (`$/progress` for compaction and long scans).
    pub work_done_progress: bool,
    /// `window/showMessageRequest`.
    pub show_message_request: bool,
    /// `workspace.workspaceEdit.documentChanges`: edits name the document version they apply to.
    pub document_changes: bool,
    /// `workspace.codeLens.refreshSupport`: the server may ask for lenses again.
    pub code_lens_refresh: bool,
}

/// Work a burst of notifications asks of the next refresh (debounced).
#[derive(Clone, Debug, Default)]
pub struct PendingRefresh {
    /// Some context changed: `context/changed`, and every open instruction file is linted again.
    pub context: bool,
    /// Files opened or closed whose effect depends on what they attach.
    pub maybe_attaches: Vec<PathBuf>,
    /// Documents to lint even when nothing else changed (just opened).
    pub lint: Vec<String>,
}

type ContextCell = Arc<OnceLock<Arc<Context>>>;

/// The server's state. Shared as `Arc<State>` by every handler.
pub struct State {
    /// The process environment, read once at start.
    pub env: Host,
    settings: RwLock<Arc<Settings>>,
    /// `initializationOptions` (the `claudeContext` section), under every later configuration.
    pub init_options: RwLock<serde_json::Value>,
    client: RwLock<ClientCaps>,
    /// What the next debounced refresh has to do.
    pub refresh: Mutex<PendingRefresh>,
    /// Open documents by URI.
    pub docs: DashMap<String, Document>,
    /// The disk with open documents' text laid over it: what the core reads.
    pub fs: OverlayFs,
    folders: RwLock<Vec<PathBuf>>,
    /// The walk per project root; a cell is filled once, outside the map's locks.
    contexts: DashMap<PathBuf, ContextCell>,
    /// Parsed instruction files, reused by rebuilt walks while a file's text is unchanged: an
    /// edit re-parses the edited file only.
    parses: Arc<ParseCache>,
    /// Bumped on every change that can alter an effective context.
    generation: AtomicU64,
    /// Previews per (root, document), tagged with the generation they were built at.
    previews: DashMap<(PathBuf, Option<PathBuf>), (u64, Arc<super::ext::PreviewResult>)>,
    /// What the open files attach per root, tagged with the generation it was built at.
    open_attachers: DashMap<PathBuf, (u64, Arc<Attacher>)>,
    pub git: DashMap<PathBuf, GitSlot>,
    /// The status kept current per root: file events feed it, so a snapshot redoes only what
    /// changed (P6: a new session's snapshot in microseconds, not a walk of the tree).
    git_caches: DashMap<PathBuf, Arc<StatusCache>>,
    /// The client reports changes of every file under the workspace folders (the `**/*`
    /// watcher was registered): the caches can trust file events. Otherwise each snapshot
    /// starts from a full walk.
    pub watch_all: AtomicBool,
    pub scans: DashMap<PathBuf, ScanSlot>,
    seq: AtomicU64,
    /// Paths the last walks and previews read (include targets of any name among them): an edit
    /// to one of them matters.
    relevant: DashMap<PathBuf, ()>,
    /// The chat sessions of this server.
    pub chats: super::handlers::chat::Chats,
    /// The server's own file watcher, when the client cannot watch files.
    pub watch: OnceLock<Arc<super::watch::ServerWatch>>,
    /// When the server started: a watch added later re-reads what changed since then in its
    /// folder (a walk may have read the folder before the watch was in place).
    pub started: std::time::SystemTime,
    /// The editor's own workspace trust, when it has one (VS Code: `workspaceTrust` in
    /// `initializationOptions`, then `trust/changed`): the answer for every folder, no question.
    editor_trust: RwLock<Option<bool>>,
}

impl State {
    pub fn new(env: Host) -> State {
        State {
            env,
            settings: RwLock::new(Arc::new(Settings::default())),
            init_options: RwLock::new(serde_json::Value::Null),
            client: RwLock::default(),
            refresh: Mutex::default(),
            docs: DashMap::new(),
            fs: OverlayFs::new(Arc::new(RealFs)),
            folders: RwLock::new(Vec::new()),
            contexts: DashMap::new(),
            parses: Arc::default(),
            generation: AtomicU64::new(1),
            previews: DashMap::new(),
            open_attachers: DashMap::new(),
            git: DashMap::new(),
            git_caches: DashMap::new(),
            watch_all: AtomicBool::new(false),
            scans: DashMap::new(),
            seq: AtomicU64::new(0),
            relevant: DashMap::new(),
            chats: Default::default(),
            watch: OnceLock::new(),
            started: std::time::SystemTime::now(),
            editor_trust: RwLock::new(None),
        }
    }

    /// The editor's own workspace trust, when it has one.
    pub fn editor_trust(&self) -> Option<bool> {
        *self.editor_trust.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The editor's workspace trust changed: every walk and preview is redone (`true` when it
    /// did change).
    pub fn set_editor_trust(&self, trusted: Option<bool>) -> bool {
        let mut guard = self.editor_trust.write().unwrap_or_else(|p| p.into_inner());
        if *guard == trusted {
            return false;
        }
        *guard = trusted;
        drop(guard);
        self.trust_changed();
        true
    }

    /// A folder's trust changed (the user answered): walks and previews are redone.
    pub fn trust_changed(&self) {
        self.contexts.clear();
        self.previews.clear();
        self.bump();
    }

    /// Where workspace trust is looked up, with the editor's own.
    pub fn trust_places(&self) -> workspace::TrustPlaces {
        workspace::TrustPlaces::of(&self.env).with_editor(self.editor_trust())
    }

    /// The root's status cache, made on first use.
    pub fn git_cache(&self, root: &Path) -> Arc<StatusCache> {
        self.git_caches
            .entry(root.to_path_buf())
            .or_insert_with(|| {
                Arc::new(StatusCache::new(root.to_path_buf(), self.env.git_options()))
            })
            .clone()
    }

    /// The root's status cache when one was made (never makes one).
    pub fn kept_git_cache(&self, root: &Path) -> Option<Arc<StatusCache>> {
        self.git_caches.get(root).map(|c| c.value().clone())
    }

    /// Tells every status cache that `paths` changed on disk (each ignores what lies outside
    /// its work tree; recording is cheap and never waits for a running snapshot). Returns the
    /// roots whose work tree holds one of them: their snapshot should be refreshed.
    pub fn git_paths_changed(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        for cache in self.git_caches.iter() {
            cache.value().changed(paths.iter().cloned());
        }
        self.git
            .iter()
            .filter(|slot| {
                slot.work_tree
                    .as_ref()
                    .is_some_and(|t| paths.iter().any(|p| p.starts_with(t)))
            })
            .map(|slot| slot.key().clone())
            .collect()
    }

    /// The client now reports every file change: the status caches may keep what they hold
    /// between events. What they hold now may predate the watchers, so each starts again from a
    /// full snapshot.
    pub fn trust_file_events(&self) {
        for cache in self.git_caches.iter() {
            cache.value().invalidate();
        }
        self.watch_all.store(true, Ordering::Release);
    }

    /// Takes the root's snapshot now, from its status cache (blocking: call it off the main
    /// loop). When file events are not trusted, the cache walks the tree again first.
    pub fn git_snapshot_now(&self, root: &Path) -> Result<Option<GitSnapshot>, GitError> {
        let cache = self.git_cache(root);
        if !self.watch_all.load(Ordering::Acquire) {
            cache.invalidate();
        }
        cache.snapshot()
    }

    pub fn client_caps(&self) -> ClientCaps {
        *self.client.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_client_caps(&self, caps: ClientCaps) {
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = caps;
    }

    /// Adds work for the next refresh.
    pub fn schedule(&self, impact: Impact, lint: Option<&str>) {
        let mut r = self.refresh.lock().unwrap_or_else(|p| p.into_inner());
        r.context |= impact.context;
        r.maybe_attaches.extend(impact.maybe_attaches);
        r.lint.extend(lint.map(str::to_string));
    }

    /// Takes the work scheduled so far.
    pub fn take_refresh(&self) -> PendingRefresh {
        std::mem::take(&mut *self.refresh.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Applies new settings; returns whether anything changed. Every cache is dropped.
    pub fn set_settings(&self, new: Settings) -> bool {
        let mut guard = self.settings.write().unwrap_or_else(|p| p.into_inner());
        if **guard == new {
            return false;
        }
        *guard = Arc::new(new);
        drop(guard);
        self.contexts.clear();
        self.previews.clear();
        self.bump();
        true
    }

    pub fn set_folders(&self, folders: Vec<PathBuf>) {
        *self.folders.write().unwrap_or_else(|p| p.into_inner()) = folders;
        self.bump();
    }

    pub fn folders(&self) -> Vec<PathBuf> {
        self.folders.read().map(|f| f.clone()).unwrap_or_default()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The session directory for a file: the innermost workspace folder holding it; outside
    /// every folder, its own project (the git work tree holding it, else its directory), as
    /// `check` run in that directory would judge it.
    pub fn root_for(&self, path: &Path) -> PathBuf {
        let folders = self.folders();
        if let Some(f) = folders
            .iter()
            .filter(|f| path.starts_with(f))
            .max_by_key(|f| f.as_os_str().len())
        {
            return f.clone();
        }
        workspace::project_of(&self.fs, &self.env, path)
    }

    /// The walk's options for a session in `root`, with the settings applied.
    /// The walk's options for previews of `root` (a folder nobody was asked about is shown as
    /// once trusted).
    pub fn options(&self, root: &Path) -> WalkOptions {
        workspace::walk_options(
            &self.env,
            &self.settings(),
            root,
            &self.trust_places(),
            true,
        )
    }

    /// The cached walk for `root`. Built outside the map's locks, once: concurrent callers for
    /// the same root wait for that one build (single flight); other roots are not held up.
    pub fn context(&self, root: &Path) -> Arc<Context> {
        let cell: ContextCell = match self.contexts.get(root) {
            Some(c) => c.clone(),
            None => self.contexts.entry(root.to_path_buf()).or_default().clone(),
        };
        cell.get_or_init(|| {
            let ctx = Arc::new(workspace::walk(
                &self.fs,
                &self.options(root),
                self.parses.clone(),
            ));
            // The files it read and the settings files it looked at (they change what loads,
            // whether they exist yet or not).
            for p in workspace::walk_reads(&ctx) {
                self.relevant.insert(p.clone(), ());
            }
            ctx
        })
        .clone()
    }

    /// Paths of open `file:` documents, in opening order.
    pub fn open_files(&self) -> Vec<PathBuf> {
        let mut v: Vec<(u64, PathBuf)> = self
            .docs
            .iter()
            .filter_map(|d| d.path.clone().map(|p| (d.seq, p)))
            .collect();
        v.sort_unstable_by_key(|(s, _)| *s);
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// The files touched for a session working on `first`: `first`, then (when the setting is
    /// on) every other open file in opening order.
    pub fn touched(&self, first: Option<&Path>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = first.map(Path::to_path_buf).into_iter().collect();
        if self.settings().rules.activate_from_open_files {
            out.extend(
                self.open_files()
                    .into_iter()
                    .filter(|p| Some(p.as_path()) != first),
            );
        }
        out
    }

    /// A session's attachments after touching [`State::touched`].
    pub fn attacher(&self, ctx: &Context, first: Option<&Path>) -> Attacher {
        let att = workspace::attach(&self.fs, ctx, &self.touched(first));
        for r in &att.records {
            self.relevant.insert(r.path.clone(), ());
        }
        att
    }

    /// What touching `file` alone attaches (for hovers: why rules apply to this file).
    pub fn attacher_for_file(&self, ctx: &Context, file: &Path) -> Attacher {
        workspace::attach(&self.fs, ctx, &[file.to_path_buf()])
    }

    /// What the open files attach in `root`'s session (when the setting is on), cached until
    /// the next change.
    pub fn open_attacher(&self, root: &Path, ctx: &Context) -> Option<Arc<Attacher>> {
        if !self.settings().rules.activate_from_open_files {
            return None;
        }
        let generation = self.generation();
        if let Some(hit) = self.open_attachers.get(root)
            && hit.0 == generation
        {
            return Some(hit.1.clone());
        }
        let att = Arc::new(self.attacher(ctx, None));
        self.open_attachers
            .insert(root.to_path_buf(), (generation, att.clone()));
        Some(att)
    }

    /// Instruction files open with unsaved changes: the previews show the editor's text, while a
    /// session started now would read the saved file.
    pub fn pending_edits(&self) -> Vec<PendingEdit> {
        let mut out: Vec<PendingEdit> = self
            .docs
            .iter()
            .filter_map(|d| {
                let path = d.path.as_ref()?;
                if !self.is_relevant(path) {
                    return None;
                }
                let disk = RealFs.read_text(path).ok();
                (disk.as_deref() != Some(&*d.text)).then(|| PendingEdit {
                    path: path.clone(),
                    message: "has unsaved changes: previews and hovers show them; a session reads the file once it is saved".into(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The skills and MCP servers of a session in `ctx` (never starting a server: their tools
    /// come from the last connection). Their files become relevant: a change drops the preview.
    pub fn extensions(&self, ctx: &Context) -> workspace::Extensions {
        let (ext, reads) = workspace::extensions(&self.fs, &self.env, &self.settings(), ctx);
        for p in reads {
            self.relevant.insert(p, ());
        }
        ext
    }

    /// The preview of a new session in `root` working on `doc`, from the cache when
    /// nothing changed since it was built. `git` is the root's snapshot, `git_pending` whether
    /// the first one is still being taken.
    pub fn preview(
        &self,
        root: &Path,
        doc: Option<&Path>,
        uri: Option<&str>,
        run_hooks: Option<&str>,
        git: impl FnOnce() -> GitNow,
    ) -> Arc<super::ext::PreviewResult> {
        let key = (root.to_path_buf(), doc.map(Path::to_path_buf));
        let generation = self.generation();
        if run_hooks.is_none()
            && let Some(hit) = self.previews.get(&key)
            && hit.0 == generation
        {
            return hit.1.clone();
        }
        let GitNow {
            part: git,
            findings: git_findings,
            pending: git_pending,
        } = git();
        let ctx = self.context(root);
        let s = self.settings();
        let touched = self.touched(doc);
        let attacher = workspace::attach(&self.fs, &ctx, &touched);
        for r in &attacher.records {
            self.relevant.insert(r.path.clone(), ());
        }
        let ext = self.extensions(&ctx);
        let mut p = workspace::start_preview(
            &self.fs,
            &self.env,
            &s,
            &workspace::Start {
                ctx: &ctx,
                attacher: &attacher,
                extensions: &ext,
                touched: &touched,
                git: git.as_ref(),
                run_hooks,
                trust: &self.trust_places(),
            },
        );
        p.findings.extend(git_findings);
        p.pending = self.pending_edits();
        let result = super::ext::PreviewResult {
            preview: p,
            document: uri.map(str::to_string),
            touched,
            git_pending,
            session: None,
        };
        let value = Arc::new(result);
        // One run of the hooks is never served again.
        if run_hooks.is_some() {
            return value;
        }
        // Old generations are never served again: drop them so the cache holds at most the
        // previews of the current state.
        self.previews.retain(|_, v| v.0 == generation);
        self.previews.insert(key, (generation, value.clone()));
        value
    }

    /// Would an edit of `path` change some context? Instruction files by name and place, the
    /// memory index, `~/.claude.json`, anything under the user (or `CLAUDE_CONFIG_DIR`) or
    /// managed directory, the settings files a walk looked at, and every file a walk or preview
    /// read (include targets).
    pub fn is_relevant(&self, path: &Path) -> bool {
        workspace::is_config_path(&self.env, path) || self.relevant.contains_key(path)
    }

    /// Drops what depends on `path` after it changed in the editor.
    pub fn file_changed(&self, path: &Path) -> Impact {
        self.invalidate(path, false)
    }

    /// Drops what depends on `path` or anything below it after a change on disk: a deleted or
    /// renamed `docs/` or `.claude/rules` arrives as one event for the folder.
    pub fn path_changed_on_disk(&self, path: &Path) -> Impact {
        self.invalidate(path, true)
    }

    fn invalidate(&self, path: &Path, below: bool) -> Impact {
        let relevant = self.is_relevant(path)
            || (below
                && (self.relevant.iter().any(|r| r.key().starts_with(path))
                    || path.components().any(|c| c.as_os_str() == ".claude")
                    || self.contexts.iter().any(|c| {
                        c.value()
                            .get()
                            .is_some_and(|ctx| ctx.files.iter().any(|f| f.path.starts_with(path)))
                    })));
        if !relevant {
            return Impact::default();
        }
        let global = !is_below_any(path, &self.folders())
            || path.file_name().is_some_and(|n| n == ".claude.json");
        self.contexts.retain(|root, cell| {
            // A walk still being built is dropped too: it may have read the old text.
            let Some(ctx) = cell.get() else {
                return false;
            };
            let in_walk = ctx
                .files
                .iter()
                .any(|f| f.path == path || (below && f.path.starts_with(path)));
            let owner = crate::features::hover::owner_dir(path);
            let on_path = (root.starts_with(&owner) || (below && root.starts_with(path)))
                && !path.starts_with(root.join(".git"));
            let memory = ctx
                .memory_dir
                .as_deref()
                .is_some_and(|m| path.starts_with(m) || (below && m.starts_with(path)));
            let keep = !(global || in_walk || on_path || memory);
            if keep {
                // A kept walk may still have scanned the changed file's directory for a session
                // (nested CLAUDE.md, rules below cwd): those scans are read again on next touch.
                ctx.forget(path);
            }
            keep
        });
        self.bump();
        Impact {
            context: true,
            maybe_attaches: None,
        }
    }

    /// Opens a document. In memory only: whether opening it attaches something is decided by
    /// the next refresh ([`Impact::maybe_attaches`]).
    pub fn open(&self, uri: String, path: Option<PathBuf>, text: Arc<str>, version: i32) -> Impact {
        let seq = self.seq.fetch_add(1, Ordering::AcqRel);
        if let Some(p) = &path {
            self.fs.set(p.clone(), text.clone());
        }
        self.docs.insert(
            uri.clone(),
            Document {
                uri,
                path: path.clone(),
                reported: text.clone(),
                text,
                version,
                seq,
                expected: Vec::new(),
            },
        );
        self.touched_changed(path)
    }

    /// After a document opened or closed: its text may differ from the disk's (an instruction
    /// file's walk is redone), and it touches or stops touching its root's session.
    fn touched_changed(&self, path: Option<PathBuf>) -> Impact {
        let Some(p) = path else {
            return Impact::default();
        };
        let mut impact = self.file_changed(&p);
        if self.settings().rules.activate_from_open_files {
            self.bump();
            impact.maybe_attaches = Some(p);
        }
        impact
    }

    /// Does touching `path` attach anything in its root's session? Reads the walk (IO): for
    /// refreshes, not for the main loop.
    pub fn attaches(&self, path: &Path) -> bool {
        let root = self.root_for(path);
        let ctx = self.context(&root);
        Attacher::new(&ctx).touch(&self.fs, &ctx, path) > 0
    }

    /// The text of an open document.
    pub fn text(&self, uri: &str) -> Option<Arc<str>> {
        self.docs.get(uri).map(|d| d.text.clone())
    }

    /// The text the client's next `didChange` applies to (its own view of the document).
    pub fn reported_text(&self, uri: &str) -> Option<Arc<str>> {
        self.docs.get(uri).map(|d| d.reported.clone())
    }

    /// The client reported a new text (after its incremental changes) and version. A report
    /// that reaches the text of an edit we sent settles that edit and those before it; any other
    /// report means the client's text went its own way (the user typed, an edit was not
    /// applied as sent): the client's text wins and nothing is expected any more.
    pub fn set_text(&self, uri: &str, reported: Arc<str>, version: i32) -> Impact {
        self.update_doc(uri, |doc| {
            doc.version = version;
            match doc.expected.iter().position(|e| *e.after == *reported) {
                Some(i) => {
                    doc.expected.drain(..=i);
                }
                None => doc.expected.clear(),
            }
            doc.reported = reported;
        })
    }

    /// Announces an edit of the open document at `path` whose text must still be `base`;
    /// `after` is its text once applied. `Err`: why it cannot be sent (a message for the model).
    pub fn expect_edit(
        &self,
        path: &Path,
        base: &str,
        after: Arc<str>,
    ) -> Result<EditTicket, String> {
        let uri = self
            .docs
            .iter()
            .find(|d| d.path.as_deref() == Some(path))
            .map(|d| d.uri.clone())
            .ok_or_else(|| {
                format!(
                    "{} is no longer open in the editor; nothing was changed",
                    path.display()
                )
            })?;
        let Some(mut doc) = self.docs.get_mut(&uri) else {
            return Err(format!(
                "{} is no longer open in the editor; nothing was changed",
                path.display()
            ));
        };
        if *doc.text != *base {
            return Err(format!(
                "{} changed in the editor since it was read; nothing was changed (Read it again)",
                path.display()
            ));
        }
        if doc.expected.iter().any(|e| !e.applied) {
            return Err(format!(
                "the editor is still applying another edit of {}; nothing was changed (try again)",
                path.display()
            ));
        }
        let id = self.seq.fetch_add(1, Ordering::AcqRel);
        let version = doc.expected.is_empty().then_some(doc.version);
        doc.expected.push(ExpectedEdit {
            id,
            after,
            applied: false,
        });
        Ok(EditTicket { uri, id, version })
    }

    /// The client answered the edit `ticket`: `applied` or not (refused, no answer, an error).
    /// An applied edit is the document's text from now on, until the client reports otherwise.
    pub fn edit_answered(&self, ticket: &EditTicket, applied: bool) -> Impact {
        self.update_doc(&ticket.uri, |doc| {
            if let Some(i) = doc.expected.iter().position(|e| e.id == ticket.id) {
                if applied {
                    doc.expected[i].applied = true;
                } else {
                    doc.expected.remove(i);
                }
            }
        })
    }

    /// Changes an open document, then sets its text from what the client reported and the
    /// applied edits it has not reported yet; the overlay follows.
    fn update_doc(&self, uri: &str, f: impl FnOnce(&mut Document)) -> Impact {
        let path = {
            let Some(mut doc) = self.docs.get_mut(uri) else {
                return Impact::default();
            };
            f(&mut doc);
            let text = doc
                .expected
                .iter()
                .rev()
                .find(|e| e.applied)
                .map_or_else(|| doc.reported.clone(), |e| e.after.clone());
            if *text == *doc.text {
                return Impact::default();
            }
            if let Some(p) = &doc.path {
                self.fs.set(p.clone(), text.clone());
            }
            doc.text = text;
            doc.path.clone()
        };
        match path {
            Some(p) => self.file_changed(&p),
            None => Impact::default(),
        }
    }

    /// Closes a document: the disk's text applies again.
    pub fn close(&self, uri: &str) -> Impact {
        let Some((_, doc)) = self.docs.remove(uri) else {
            return Impact::default();
        };
        if let Some(p) = &doc.path {
            self.fs.clear(p);
        }
        self.touched_changed(doc.path)
    }

    /// What a lint of a file in `root` needs.
    pub fn lint_options(&self, root: &Path) -> LintOptions {
        workspace::lint_options(&self.env, root, &self.context(root))
    }

    /// Does `path` get diagnostics and a code lens? Instruction files, the memory index, and
    /// files the walk of its root includes.
    pub fn is_instruction_doc(&self, path: &Path) -> bool {
        if is_instruction_file(path) {
            return true;
        }
        if workspace::is_memory_index(path) {
            return true;
        }
        let root = self.root_for(path);
        self.context(&root).files.iter().any(|f| f.path == path)
    }

    /// The cached workspace file list of `root`, if a scan finished.
    pub fn workspace_files(&self, root: &Path) -> Option<Arc<FileList>> {
        self.scans.get(root).and_then(|s| s.files.clone())
    }

    /// Roots with a cached walk or an open document.
    pub fn roots(&self) -> Vec<PathBuf> {
        let mut set: HashSet<PathBuf> = self.folders().into_iter().collect();
        for p in self.open_files() {
            set.insert(self.root_for(&p));
        }
        let mut v: Vec<PathBuf> = set.into_iter().collect();
        v.sort();
        v
    }
}

fn is_below_any(path: &Path, dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| path.starts_with(d))
}

/// Where the language server's sessions re-read their instructions and git block (compaction):
/// the saved files through the settings' options (unsaved edits show as pending), a git snapshot
/// taken now when git is on.
pub struct SavedFiles(pub Arc<State>);

impl crate::session::open::Project for SavedFiles {
    fn walk(&self, root: &Path) -> Result<Arc<Context>, String> {
        Ok(self.0.session_walk(root))
    }

    fn git(&self, cwd: &Path) -> Option<GitPart> {
        if !self.0.settings().git.enabled {
            return None;
        }
        match self.0.git_snapshot_now(cwd) {
            Ok(Some(s)) => Some(GitPart::from_snapshot(&s)),
            Ok(None) => None,
            Err(e) => {
                crate::log_warn!("no git snapshot for the session: {}", e.message);
                None
            }
        }
    }
}

impl State {
    /// The parses of instruction files this server made, shared by its walks (every one of
    /// them compares the whole text before reusing a parse).
    pub fn parses(&self) -> Arc<ParseCache> {
        self.parses.clone()
    }

    /// The walk a session starts from: the saved files (unsaved edits show as pending). Every
    /// file is read from the disk; only the parse of a text the server has parsed before is
    /// reused (the parse cache compares the whole text).
    pub fn session_walk(&self, root: &Path) -> Arc<Context> {
        let opts = workspace::walk_options(
            &self.env,
            &self.settings(),
            root,
            &self.trust_places(),
            false,
        );
        Arc::new(workspace::walk(&RealFs, &opts, self.parses.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Host {
        Host::for_tests(home)
    }

    #[test]
    fn open_files_activate_rules_and_closing_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join(".claude/rules")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "Project.\n").unwrap();
        std::fs::write(
            root.join(".claude/rules/ts.md"),
            "---\npaths: \"**/*.ts\"\n---\nTS rule.\n",
        )
        .unwrap();
        std::fs::write(root.join("src/a.ts"), "x").unwrap();
        let state = State::new(env(dir.path()));
        state.set_folders(vec![root.clone()]);
        let ts = root.join("src/a.ts");
        let status = |state: &State| -> String {
            let v = serde_json::to_value(&*state.preview(&root, None, None, None, GitNow::default))
                .unwrap();
            v["files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"].as_str().unwrap().ends_with("ts.md"))
                .map(|f| f["status"].as_str().unwrap().to_string())
                .unwrap()
        };
        assert_eq!(status(&state), "inactive");
        let impact = state.open("file:///a.ts".into(), Some(ts.clone()), "x".into(), 1);
        assert_eq!(impact.maybe_attaches.as_deref(), Some(ts.as_path()));
        assert!(state.attaches(&ts));
        assert_eq!(status(&state), "attached");
        let impact = state.close("file:///a.ts");
        assert!(impact.maybe_attaches.is_some());
        assert_eq!(status(&state), "inactive");
    }

    #[test]
    fn concurrent_callers_share_one_walk_and_folder_events_reach_below() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "One.\n@docs/a.md\n").unwrap();
        std::fs::write(root.join("docs/a.md"), "A.\n").unwrap();
        let state = Arc::new(State::new(env(dir.path())));
        state.set_folders(vec![root.clone()]);
        let walks: Vec<Arc<Context>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| state.context(&root))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(walks.iter().all(|w| Arc::ptr_eq(w, &walks[0])), "one build");
        // A folder event drops the walk that read a file below the folder.
        assert!(
            !state.file_changed(&root.join("docs")).context,
            "not a file of the walk"
        );
        assert!(state.path_changed_on_disk(&root.join("docs")).context);
        assert!(!Arc::ptr_eq(&state.context(&root), &walks[0]), "rebuilt");
    }

    #[test]
    fn editing_claude_md_invalidates_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "One.\n").unwrap();
        let state = State::new(env(dir.path()));
        state.set_folders(vec![root.clone()]);
        let block = |state: &State| {
            let v = serde_json::to_value(&*state.preview(&root, None, None, None, GitNow::default))
                .unwrap();
            v["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["kind"] == "instructions")
                .unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert!(block(&state).contains("One."));
        let uri = "file:///CLAUDE.md".to_string();
        state.open(
            uri.clone(),
            Some(root.join("CLAUDE.md")),
            "One.\n".into(),
            1,
        );
        let impact = state.set_text(&uri, Arc::from("Two.\n"), 2);
        assert!(impact.context);
        assert!(block(&state).contains("Two."));
        let pending = state.pending_edits();
        assert_eq!(pending.len(), 1);
        // An unrelated file changes nothing.
        assert!(!state.file_changed(&root.join("src/main.rs")).context);
    }

    #[test]
    fn an_applied_edit_is_the_text_until_the_client_reports_it_or_goes_its_own_way() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.ts");
        let state = State::new(env(dir.path()));
        let uri = "file:///a.ts";
        state.open(uri.into(), Some(path.clone()), "one\n".into(), 1);
        // Sent, not answered yet: still the client's text; a second edit waits for the answer.
        let t = state
            .expect_edit(&path, "one\n", "one\ntwo\n".into())
            .unwrap();
        assert_eq!(t.version, Some(1));
        assert_eq!(&*state.text(uri).unwrap(), "one\n");
        assert!(state.expect_edit(&path, "one\n", "x".into()).is_err());
        // Applied: the edited text, before any didChange; the next edit has no known version.
        state.edit_answered(&t, true);
        assert_eq!(&*state.text(uri).unwrap(), "one\ntwo\n");
        assert_eq!(state.fs.read_text(&path).unwrap(), "one\ntwo\n");
        let t2 = state
            .expect_edit(&path, "one\ntwo\n", "one\ntwo\nthree\n".into())
            .unwrap();
        assert_eq!(t2.version, None);
        state.edit_answered(&t2, true);
        // The client reports the first edit: the second is still expected.
        state.set_text(uri, "one\ntwo\n".into(), 2);
        assert_eq!(&*state.text(uri).unwrap(), "one\ntwo\nthree\n");
        // Then the second: settled, not applied twice.
        state.set_text(uri, "one\ntwo\nthree\n".into(), 3);
        assert_eq!(&*state.text(uri).unwrap(), "one\ntwo\nthree\n");
        assert!(state.docs.get(uri).unwrap().expected.is_empty());
        // A refused edit changes nothing; a report that is none of ours wins.
        let t3 = state
            .expect_edit(&path, "one\ntwo\nthree\n", "four\n".into())
            .unwrap();
        assert_eq!(t3.version, Some(3));
        state.edit_answered(&t3, false);
        assert_eq!(&*state.text(uri).unwrap(), "one\ntwo\nthree\n");
        let t4 = state
            .expect_edit(&path, "one\ntwo\nthree\n", "four\n".into())
            .unwrap();
        state.edit_answered(&t4, true);
        state.set_text(uri, "typed\n".into(), 9);
        assert_eq!(&*state.text(uri).unwrap(), "typed\n");
    }
}
