//! `Glob`: files whose path (relative to the search directory) matches a glob, most recently
//! modified first, at most [`MAX_RESULTS`].
//!
//! The walk is ripgrep's (`ignore`): `.gitignore`, `.ignore` and git's excludes apply as in
//! `rg --files --hidden` (hidden files are listed, `.git` is not), links are not followed (so the
//! walk never leaves the search directory). Matching is `globset` with `*` kept within one
//! directory. The walk stops when the call is cancelled. A file a `Read` deny rule covers is left
//! out (`../shared/spec/permissions-trust.md` section 6), and a `path` a rule covers is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkBuilder;

use super::input::GlobInput;
use super::{CancellationToken, Ctx, ToolOutcome, blocking};

/// Paths returned at most.
pub(crate) const MAX_RESULTS: usize = 100;

pub(crate) async fn run(ctx: &Ctx<'_>, i: GlobInput, cancel: &CancellationToken) -> ToolOutcome {
    let root = match search_root(ctx, i.path.as_deref()).await {
        Ok(r) => r,
        Err(out) => return out,
    };
    if !root.is_dir() {
        return ToolOutcome::error(
            format!(
                "{} is not a directory; Glob searches a directory.",
                root.display()
            ),
            "not a directory",
        );
    }
    let pattern = relative_pattern(&i.pattern, &root);
    let matcher = match GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    {
        Ok(g) => g.compile_matcher(),
        Err(e) => {
            return ToolOutcome::error(
                format!("Invalid glob `{}`: {e}", i.pattern),
                "invalid glob",
            );
        }
    };
    let stop = StopFlag::new(cancel);
    let flag = stop.flag();
    let policy = ctx.tools.config.policy.clone();
    blocking(move || {
        let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
        for entry in walker(&root).build() {
            if flag.load(Ordering::Relaxed) {
                return ToolOutcome::error("The Glob was cancelled.", "cancelled");
            }
            let Ok(entry) = entry else { continue };
            if !is_file(&entry) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&root) else {
                continue;
            };
            // A file a Read deny covers is not there, as far as the model can tell.
            if matcher.is_match(rel) && !policy.hidden(entry.path()) {
                let mtime = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((mtime, entry.into_path()));
            }
        }
        let total = found.len();
        if total == 0 {
            return ToolOutcome::ok(
                format!("No files match `{}` in {}.", i.pattern, root.display()),
                "no files",
            );
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut text: String = found
            .iter()
            .take(MAX_RESULTS)
            .map(|(_, p)| format!("{}\n", p.display()))
            .collect();
        if total > MAX_RESULTS {
            text.push_str(&format!(
                "(showing the {MAX_RESULTS} most recently modified of {total} files; narrow the pattern or the path to see the others)\n"
            ));
        }
        ToolOutcome::ok(text, format!("{total} files"))
    })
    .await
}

/// The directory or file to search: `path` resolved and confined, or the first workspace folder.
pub(crate) async fn search_root(ctx: &Ctx<'_>, path: Option<&str>) -> Result<PathBuf, ToolOutcome> {
    match path {
        Some(p) if !p.is_empty() => ctx.resolve(p).await.map(|r| r.real),
        _ => ctx
            .workspace()
            .primary()
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                ToolOutcome::error(
                    "This session has no workspace folder; give an absolute `path`.",
                    "no path",
                )
            }),
    }
}

/// The walk both Glob and Grep use: ripgrep's defaults plus hidden files, never `.git`, no links.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut w = WalkBuilder::new(root);
    w.hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git");
    w
}

/// A file to list or search: a regular file, or a link to one (a link is listed, never followed
/// into a directory, and Grep skips links: see grep.rs).
fn is_file(e: &ignore::DirEntry) -> bool {
    match e.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() => e.path().is_file(),
        _ => false,
    }
}

/// A pattern written as an absolute path under the search directory is made relative to it;
/// a leading `./` is dropped.
fn relative_pattern(pattern: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    let p = pattern
        .strip_prefix(root.as_ref())
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(pattern);
    p.strip_prefix("./").unwrap_or(p).to_string()
}

/// Raised when the call's future is dropped or its token cancelled, so blocking work stops.
pub(crate) struct StopFlag {
    flag: Arc<AtomicBool>,
    _watch: tokio_util::sync::DropGuard,
}

impl StopFlag {
    pub(crate) fn new(cancel: &CancellationToken) -> StopFlag {
        let flag = Arc::new(AtomicBool::new(false));
        let child = cancel.child_token();
        let f = flag.clone();
        let watched = child.clone();
        tokio::spawn(async move {
            watched.cancelled().await;
            f.store(true, Ordering::Relaxed);
        });
        StopFlag {
            flag,
            _watch: child.drop_guard(),
        }
    }

    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }
}
