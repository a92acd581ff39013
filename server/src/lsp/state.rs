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
//! Nothing here knows about tower-lsp; the handlers convert LSP types at the edge.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use dashmap::DashMap;

use crate::assembly::{self, StartInput};
use crate::context::{self, Attacher, Context, LintOptions, ParseCache};
use crate::features::check::is_instruction_file;
use crate::features::preview::{self, GitPart, PendingEdit};
use crate::features::settings::Settings;
use crate::fs::{Fs, OverlayFs, RealFs};
use crate::host::Host;

/// One open document.
#[derive(Clone, Debug)]
pub struct Document {
    /// The client's URI, as sent.
    pub uri: String,
    /// The file path for `file:` URIs.
    pub path: Option<PathBuf>,
    pub text: String,
    pub version: i32,
    /// Opening order: open files are touched in this order.
    pub seq: u64,
}

/// The git snapshot of one root.
#[derive(Clone, Debug, Default)]
pub struct GitSlot {
    pub part: Option<GitPart>,
    /// A snapshot is being taken.
    pub pending: bool,
    /// When the last snapshot finished.
    pub taken: Option<Instant>,
}

/// The workspace file list of one root (for glob hovers and unmatched-glob hints).
#[derive(Clone, Debug, Default)]
pub struct ScanSlot {
    pub files: Option<Arc<Vec<PathBuf>>>,
    pub pending: bool,
    pub taken: Option<Instant>,
}

/// What an edit or a file event changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impact {
    /// Some effective context may have changed (previews, hovers, lenses must refresh).
    pub context: bool,
}

/// The server's state. Shared as `Arc<State>` by every handler.
pub struct State {
    /// The process environment, read once at start.
    pub env: Host,
    settings: RwLock<Arc<Settings>>,
    /// `initializationOptions` (the `claudeContext` section), under every later configuration.
    pub init_options: RwLock<serde_json::Value>,
    /// Positions are UTF-8 byte columns (negotiated) instead of UTF-16 code units.
    pub utf8_positions: AtomicBool,
    /// The client answers `workspace/configuration`.
    pub client_configuration: AtomicBool,
    /// The client accepts dynamic registration of file watchers.
    pub client_watchers: AtomicBool,
    /// The client's watchers support relative patterns (for paths outside the workspace).
    pub client_relative_patterns: AtomicBool,
    /// Open documents by URI.
    pub docs: DashMap<String, Document>,
    /// The disk with open documents' text laid over it: what the core reads.
    pub fs: OverlayFs,
    folders: RwLock<Vec<PathBuf>>,
    /// The walk per project root.
    contexts: DashMap<PathBuf, Arc<Context>>,
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
    pub scans: DashMap<PathBuf, ScanSlot>,
    seq: AtomicU64,
    /// Bumped by every request for a (debounced) diagnostics pass; a pass runs only if no newer
    /// one was asked for meanwhile.
    pub diagnostics_seq: AtomicU64,
    /// `shutdown` was received (the exit code is 0 only then).
    pub shutdown: AtomicBool,
    /// Paths the last walks and previews read (include targets of any name among them): an edit
    /// to one of them matters.
    relevant: DashMap<PathBuf, ()>,
}

impl State {
    pub fn new(env: Host) -> State {
        State {
            env,
            settings: RwLock::new(Arc::new(Settings::default())),
            init_options: RwLock::new(serde_json::Value::Null),
            utf8_positions: AtomicBool::new(false),
            client_configuration: AtomicBool::new(false),
            client_watchers: AtomicBool::new(false),
            client_relative_patterns: AtomicBool::new(false),
            docs: DashMap::new(),
            fs: OverlayFs::new(Arc::new(RealFs)),
            folders: RwLock::new(Vec::new()),
            contexts: DashMap::new(),
            parses: Arc::default(),
            generation: AtomicU64::new(1),
            previews: DashMap::new(),
            open_attachers: DashMap::new(),
            git: DashMap::new(),
            scans: DashMap::new(),
            seq: AtomicU64::new(0),
            diagnostics_seq: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            relevant: DashMap::new(),
        }
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

    /// The session directory for a file: the innermost workspace folder holding it; else the
    /// first folder; else the file's git work tree; else its directory.
    pub fn root_for(&self, path: &Path) -> PathBuf {
        let folders = self.folders();
        if let Some(f) = folders
            .iter()
            .filter(|f| path.starts_with(f))
            .max_by_key(|f| f.as_os_str().len())
        {
            return f.clone();
        }
        if let Some(f) = folders.first() {
            return f.clone();
        }
        let dir = path.parent().unwrap_or(Path::new("/"));
        dir.ancestors()
            .find(|d| self.fs.exists(&d.join(".git")))
            .unwrap_or(dir)
            .to_path_buf()
    }

    /// The walk's options for a session in `root`, with the settings applied.
    pub fn options(&self, root: &Path) -> context::Options {
        let s = self.settings();
        let add: Vec<PathBuf> = s
            .additional_directories
            .iter()
            .map(|d| crate::fs::normalize(root, Path::new(d)))
            .collect();
        match self
            .env
            .context_options(root, &add, s.memory_dir.as_deref())
        {
            Ok(o) => o,
            Err(e) => {
                crate::log_warn!("memoryDir ignored: {e}");
                self.env
                    .context_options(root, &add, None)
                    .unwrap_or_default()
            }
        }
    }

    /// The cached walk for `root`. Concurrent callers wait for one build (the entry's shard is
    /// locked while it runs) instead of each walking.
    pub fn context(&self, root: &Path) -> Arc<Context> {
        if let Some(ctx) = self.contexts.get(root) {
            return ctx.clone();
        }
        match self.contexts.entry(root.to_path_buf()) {
            dashmap::Entry::Occupied(o) => o.get().clone(),
            dashmap::Entry::Vacant(v) => {
                let ctx = Arc::new(context::build_with(
                    &self.fs,
                    &self.options(root),
                    self.parses.clone(),
                ));
                for f in &ctx.files {
                    self.relevant.insert(f.path.clone(), ());
                }
                v.insert(ctx.clone());
                ctx
            }
        }
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
        let mut att = Attacher::new(ctx);
        for f in self.touched(first) {
            att.touch(&self.fs, ctx, &f);
        }
        for r in &att.records {
            self.relevant.insert(r.path.clone(), ());
        }
        att
    }

    /// What touching `file` alone attaches (for hovers: why rules apply to this file).
    pub fn attacher_for_file(&self, ctx: &Context, file: &Path) -> Attacher {
        let mut att = Attacher::new(ctx);
        att.touch(&self.fs, ctx, file);
        att
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
                (disk.as_deref() != Some(d.text.as_str())).then(|| PendingEdit {
                    path: path.clone(),
                    message: "has unsaved changes: previews and hovers show them; a session reads the file once it is saved".into(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The preview of a new session in `root` working on `doc`, from the cache when
    /// nothing changed since it was built. `git` is the root's snapshot, `git_pending` whether
    /// the first one is still being taken.
    pub fn preview(
        &self,
        root: &Path,
        doc: Option<&Path>,
        uri: Option<&str>,
        git: impl FnOnce() -> (Option<GitPart>, bool),
    ) -> Arc<super::ext::PreviewResult> {
        let key = (root.to_path_buf(), doc.map(Path::to_path_buf));
        let generation = self.generation();
        if let Some(hit) = self.previews.get(&key)
            && hit.0 == generation
        {
            return hit.1.clone();
        }
        let (git, git_pending) = git();
        let ctx = self.context(root);
        let s = self.settings();
        let touched = self.touched(doc);
        let mut attacher = Attacher::new(&ctx);
        for f in &touched {
            attacher.touch(&self.fs, &ctx, f);
        }
        for r in &attacher.records {
            self.relevant.insert(r.path.clone(), ());
        }
        let input = StartInput {
            git: git.as_ref(),
            model: &s.model,
            ..StartInput::default()
        };
        let a = assembly::assemble(&self.env, &ctx, &attacher, &input);
        let mut p = preview::from_assembly(&ctx, &attacher, a, s.window);
        p.pending = self.pending_edits();
        let result = super::ext::PreviewResult {
            preview: p,
            document: uri.map(str::to_string),
            touched,
            git_pending,
        };
        let value = Arc::new(result);
        // Old generations are never served again: drop them so the cache holds at most the
        // previews of the current state.
        self.previews.retain(|_, v| v.0 == generation);
        self.previews.insert(key, (generation, value.clone()));
        value
    }

    /// Would an edit of `path` change some context? Instruction files by name and place, the
    /// memory index, `~/.claude.json`, anything under the user or managed directory, and every
    /// file a walk or preview read (include targets).
    pub fn is_relevant(&self, path: &Path) -> bool {
        if is_instruction_file(path) || self.relevant.contains_key(path) {
            return true;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == crate::memory::INDEX_FILE {
            return true;
        }
        if let Some(home) = &self.env.home
            && (path == home.join(".claude.json") || path.starts_with(home.join(".claude")))
        {
            return true;
        }
        path.starts_with(&self.env.managed_dir)
    }

    /// Drops what depends on `path` after it changed (in the editor or on disk).
    pub fn file_changed(&self, path: &Path) -> Impact {
        if !self.is_relevant(path) {
            return Impact::default();
        }
        let global = !is_below_any(path, &self.folders())
            || path.file_name().is_some_and(|n| n == ".claude.json");
        self.contexts.retain(|root, ctx| {
            let in_walk = ctx.files.iter().any(|f| f.path == path);
            let owner = crate::features::hover::owner_dir(path);
            let on_path = root.starts_with(&owner) && !path.starts_with(root.join(".git"));
            let memory = ctx
                .memory_dir
                .as_deref()
                .is_some_and(|m| path.starts_with(m));
            let keep = !(global || in_walk || on_path || memory);
            if keep {
                // A kept walk may still have scanned the changed file's directory for a session
                // (nested CLAUDE.md, rules below cwd): those scans are read again on next touch.
                ctx.forget(path);
            }
            keep
        });
        self.bump();
        Impact { context: true }
    }

    /// Opens a document. Returns its path.
    pub fn open(&self, uri: String, path: Option<PathBuf>, text: String, version: i32) -> Impact {
        let seq = self.seq.fetch_add(1, Ordering::AcqRel);
        if let Some(p) = &path {
            self.fs.set(p.clone(), Arc::from(text.as_str()));
        }
        let disk_differs = path
            .as_deref()
            .is_some_and(|p| RealFs.read_text(p).ok().as_deref() != Some(text.as_str()));
        self.docs.insert(
            uri.clone(),
            Document {
                uri,
                path: path.clone(),
                text,
                version,
                seq,
            },
        );
        let mut impact = Impact::default();
        if let Some(p) = &path {
            if disk_differs {
                impact = self.file_changed(p);
            }
            if self.settings().rules.activate_from_open_files {
                self.bump();
                impact.context |= self.attaches(p);
            }
        }
        impact
    }

    /// Does touching `path` attach anything in its root's session?
    pub fn attaches(&self, path: &Path) -> bool {
        let root = self.root_for(path);
        let ctx = self.context(&root);
        Attacher::new(&ctx).touch(&self.fs, &ctx, path) > 0
    }

    /// Applies a new full text (after incremental edits) to an open document.
    pub fn set_text(&self, uri: &str, text: String, version: i32) -> Impact {
        let path = {
            let Some(mut doc) = self.docs.get_mut(uri) else {
                return Impact::default();
            };
            doc.text = text;
            doc.version = version;
            if let Some(p) = &doc.path {
                self.fs.set(p.clone(), Arc::from(doc.text.as_str()));
            }
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
        let Some(path) = doc.path else {
            return Impact::default();
        };
        self.fs.clear(&path);
        let mut impact = Impact::default();
        if RealFs.read_text(&path).ok().as_deref() != Some(doc.text.as_str()) {
            impact = self.file_changed(&path);
        }
        if self.settings().rules.activate_from_open_files {
            self.bump();
            impact.context |= self.attaches(&path);
        }
        impact
    }

    /// What a lint of a file in `root` needs.
    pub fn lint_options(&self, root: &Path) -> LintOptions {
        let ctx = self.context(root);
        LintOptions {
            cwd: root.to_path_buf(),
            git_root: ctx.git_root.clone(),
            home: self.env.home.clone(),
        }
    }

    /// Does `path` get diagnostics and a code lens? Instruction files, the memory index, and
    /// files the walk of its root includes.
    pub fn is_instruction_doc(&self, path: &Path) -> bool {
        if is_instruction_file(path) {
            return true;
        }
        if path
            .file_name()
            .is_some_and(|n| n == crate::memory::INDEX_FILE)
        {
            return true;
        }
        let root = self.root_for(path);
        self.context(&root).files.iter().any(|f| f.path == path)
    }

    /// The cached workspace file list of `root`, if a scan finished.
    pub fn workspace_files(&self, root: &Path) -> Option<Arc<Vec<PathBuf>>> {
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
            let v =
                serde_json::to_value(&*state.preview(&root, None, None, || (None, false))).unwrap();
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
        assert!(impact.context);
        assert_eq!(status(&state), "attached");
        let impact = state.close("file:///a.ts");
        assert!(impact.context);
        assert_eq!(status(&state), "inactive");
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
            let v =
                serde_json::to_value(&*state.preview(&root, None, None, || (None, false))).unwrap();
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
        let impact = state.set_text(&uri, "Two.\n".into(), 2);
        assert!(impact.context);
        assert!(block(&state).contains("Two."));
        let pending = state.pending_edits();
        assert_eq!(pending.len(), 1);
        // An unrelated file changes nothing.
        assert!(!state.file_changed(&root.join("src/main.rs")).context);
    }
}
