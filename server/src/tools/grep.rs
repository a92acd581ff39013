//! `Grep`: ripgrep's search crates (`grep-regex`, `grep-searcher`) over ripgrep's walk (`ignore`,
//! the same walk as Glob): output modes `files_with_matches` (newest first), `content`
//! (`path:line:text`, context lines `path-line-text`, `--` between groups) and `count`.
//!
//! Binary files (a NUL byte) are skipped as ripgrep does; links met in the walk are skipped (a
//! link could lead out of the workspace, and the search would read what it points at); an
//! explicit file path is resolved and confined like any other. Output is capped
//! ([`MAX_LINES`] lines or paths, [`MAX_LINE_CHARS`] characters a line, [`MAX_OUTPUT_BYTES`]),
//! each cut said in the output. A file a `Read` deny rule covers is not searched, and a `path` on
//! it is refused with the reference's text (`../shared/spec/permissions-trust.md` section 6).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;

use super::glob::{StopFlag, search_root, walker};
use super::input::{GrepInput, OutputMode};
use super::paths::Workspace;
use super::{CancellationToken, Ctx, ToolOutcome, blocking};

/// Lines (content mode) or paths (the other modes) returned at most.
pub(crate) const MAX_LINES: usize = 250;
/// Characters kept of one line (minified files have lines of megabytes).
pub(crate) const MAX_LINE_CHARS: usize = 500;
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// The searcher's buffer never grows past this (a minified file's one line, a multi-line search
/// of a whole file): such a file is skipped.
const MAX_HEAP_BYTES: usize = 32 * 1024 * 1024;

pub(crate) async fn run(ctx: &Ctx<'_>, i: GrepInput, cancel: &CancellationToken) -> ToolOutcome {
    let root = match search_root(ctx, i.path.as_deref()).await {
        Ok(r) => r,
        Err(out) => return out,
    };
    if !root.exists() {
        return ToolOutcome::error(format!("{} does not exist.", root.display()), "not found");
    }
    let mut mb = RegexMatcherBuilder::new();
    mb.case_insensitive(i.case_insensitive);
    if i.multiline {
        mb.multi_line(true).dot_matches_new_line(true);
    } else {
        mb.line_terminator(Some(b'\n'));
    }
    let matcher = match mb.build(&i.pattern) {
        Ok(m) => m,
        Err(e) => {
            return ToolOutcome::error(
                format!("Invalid regular expression `{}`: {e}", i.pattern),
                "invalid pattern",
            );
        }
    };
    let mut walk = walker(&root);
    if let Some(g) = i.glob.as_deref().filter(|g| !g.is_empty()) {
        let mut ob = OverrideBuilder::new(&root);
        let built = match ob.add(g) {
            Ok(_) => ob.build(),
            Err(e) => Err(e),
        };
        match built {
            Ok(o) => {
                walk.overrides(o);
            }
            Err(e) => {
                return ToolOutcome::error(format!("Invalid glob `{g}`: {e}"), "invalid glob");
            }
        }
    }
    if let Some(t) = i.file_type.as_deref().filter(|t| !t.is_empty()) {
        let mut tb = TypesBuilder::new();
        tb.add_defaults();
        if !tb.definitions().iter().any(|d| d.name() == t) {
            return ToolOutcome::error(
                format!(
                    "Unknown file type `{t}`. Use ripgrep's names (rust, py, js, ts, go, java, c, cpp, md, ...) or a `glob` instead."
                ),
                "unknown type",
            );
        }
        tb.select(t);
        match tb.build() {
            Ok(types) => {
                walk.types(types);
            }
            Err(e) => {
                return ToolOutcome::error(format!("Invalid type `{t}`: {e}"), "invalid type");
            }
        }
    }
    let context = i.context.unwrap_or(0);
    let mut sb = SearcherBuilder::new();
    sb.binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .multi_line(i.multiline)
        // One line (or, multi-line, one file) held in memory at most this big: past it the file
        // is skipped rather than the server's memory spent.
        .heap_limit(Some(MAX_HEAP_BYTES));
    if i.output_mode == OutputMode::Content {
        // More context than the output can hold is never kept (`-B` is a buffer of lines).
        let most = |n: Option<u32>| (n.unwrap_or(context) as usize).min(MAX_LINES);
        sb.before_context(most(i.before))
            .after_context(most(i.after));
    }
    let opts = Opts {
        mode: i.output_mode,
        line_numbers: i.line_numbers.unwrap_or(true),
        cap: i
            .head_limit
            .map_or(MAX_LINES, |h| (h as usize).clamp(1, MAX_LINES)),
    };
    let stop = StopFlag::new(cancel);
    let flag = stop.flag();
    let pattern = i.pattern;
    let ws = ctx.workspace().clone();
    let policy = ctx.tools.config.policy.clone();
    blocking(move || {
        let files = if root.is_file() {
            vec![root.clone()]
        } else {
            let mut files = Vec::new();
            for e in walk.build() {
                if flag.load(Ordering::Relaxed) {
                    return ToolOutcome::error("The Grep was cancelled.", "cancelled");
                }
                // A file a Read deny covers is not searched (nor named).
                if let Ok(e) = e
                    && e.file_type().is_some_and(|t| t.is_file())
                    && !policy.hidden(e.path())
                {
                    files.push(e.into_path());
                }
            }
            files.sort();
            files
        };
        search(&ws, &files, &matcher, sb.build(), &opts, &flag, &pattern)
    })
    .await
}

struct Opts {
    mode: OutputMode,
    line_numbers: bool,
    cap: usize,
}

fn search(
    ws: &Workspace,
    files: &[PathBuf],
    matcher: &RegexMatcher,
    mut searcher: Searcher,
    opts: &Opts,
    stop: &AtomicBool,
    pattern: &str,
) -> ToolOutcome {
    let mut lines: Vec<String> = Vec::new();
    let mut hits: Vec<(SystemTime, &Path, u64)> = Vec::new();
    let mut bytes = 0usize;
    let mut cut = false;
    let mut total_matches = 0u64;
    for path in files {
        if stop.load(Ordering::Relaxed) {
            return ToolOutcome::error("The Grep was cancelled.", "cancelled");
        }
        let display = path.display().to_string();
        let mut sink = Collect {
            mode: opts.mode,
            path: &display,
            line_numbers: opts.line_numbers,
            out: Vec::new(),
            bytes: 0,
            count: 0,
            last: None,
        };
        // Opened below the workspace folder's handle without following links and without
        // blocking (a path swapped for a link or a FIFO is skipped: confine.rs); read through
        // the stop flag, so a cancel stops a search inside one huge file too.
        let Ok(file) = super::confine::open_read(ws, path) else {
            continue; // unreadable, vanished, not a regular file: as ripgrep, skip it
        };
        let mtime = file
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let reader = Stoppable { inner: file, stop };
        if searcher.search_reader(matcher, reader, &mut sink).is_err() {
            if stop.load(Ordering::Relaxed) {
                return ToolOutcome::error("The Grep was cancelled.", "cancelled");
            }
            continue;
        }
        if sink.count == 0 {
            continue;
        }
        total_matches += sink.count;
        match opts.mode {
            OutputMode::FilesWithMatches | OutputMode::Count => {
                hits.push((mtime, path, sink.count));
            }
            OutputMode::Content => {
                if !lines.is_empty() {
                    sink.out.insert(0, "--".to_string());
                }
                for l in sink.out {
                    if lines.len() >= opts.cap || bytes + l.len() + 1 > MAX_OUTPUT_BYTES {
                        cut = true;
                        break;
                    }
                    bytes += l.len() + 1;
                    lines.push(l);
                }
                hits.push((SystemTime::UNIX_EPOCH, path, sink.count));
                if cut {
                    break;
                }
            }
        }
    }
    if hits.is_empty() {
        return ToolOutcome::ok(format!("No matches for `{pattern}`."), "no matches");
    }
    let files_n = hits.len();
    match opts.mode {
        OutputMode::FilesWithMatches => {
            hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            let mut text: String = hits
                .iter()
                .take(opts.cap)
                .map(|(_, p, _)| format!("{}\n", p.display()))
                .collect();
            if files_n > opts.cap {
                text.push_str(&format!(
                    "(showing {} of {files_n} files, most recently modified first)\n",
                    opts.cap
                ));
            }
            ToolOutcome::ok(text, format!("{files_n} files"))
        }
        OutputMode::Count => {
            let mut text: String = hits
                .iter()
                .take(opts.cap)
                .map(|(_, p, n)| format!("{}:{n}\n", p.display()))
                .collect();
            if files_n > opts.cap {
                text.push_str(&format!("(showing {} of {files_n} files)\n", opts.cap));
            }
            text.push_str(&format!(
                "{total_matches} matching lines in {files_n} files\n"
            ));
            ToolOutcome::ok(text, format!("{total_matches} matches in {files_n} files"))
        }
        OutputMode::Content => {
            let mut text = lines.join("\n");
            text.push('\n');
            if cut {
                text.push_str(&format!(
                    "(output cut at {} lines; there are more matches: narrow the pattern, the path, or use `glob`)\n",
                    lines.len()
                ));
            }
            let summary = if cut {
                format!("{}+ matches", total_matches)
            } else {
                format!("{total_matches} matches in {files_n} files")
            };
            ToolOutcome::ok(text, summary)
        }
    }
}

/// A file read that fails once the stop flag is raised (a cancelled call stops within one read).
struct Stoppable<'a> {
    inner: std::fs::File,
    stop: &'a AtomicBool,
}

impl io::Read for Stoppable<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("cancelled"));
        }
        self.inner.read(buf)
    }
}

/// Collects one file's output.
struct Collect<'a> {
    mode: OutputMode,
    path: &'a str,
    line_numbers: bool,
    out: Vec<String>,
    /// Bytes in `out`: a file's own output stops past the output's cap.
    bytes: usize,
    count: u64,
    /// Last line number written (to insert `--` between groups).
    last: Option<u64>,
}

impl Collect<'_> {
    fn push(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) {
        let mut number = number;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if let (Some(last), Some(n)) = (self.last, number)
                && n > last + 1
            {
                self.out.push("--".to_string());
            }
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end_matches(['\n', '\r']);
            let shown = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((i, _)) => format!("{} [… line cut]", &text[..i]),
                None => text.to_string(),
            };
            let line = match (self.line_numbers, number) {
                (true, Some(n)) => format!("{}{sep}{n}{sep}{shown}", self.path),
                _ => format!("{}{sep}{shown}", self.path),
            };
            self.bytes += line.len() + 1;
            self.out.push(line);
            if let Some(n) = number {
                self.last = Some(n);
                number = Some(n + 1);
            }
        }
    }
}

impl Collect<'_> {
    /// More than the whole output can show: the rest of the file is not read.
    fn full(&self) -> bool {
        self.out.len() > MAX_LINES || self.bytes > MAX_OUTPUT_BYTES
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        match self.mode {
            // One match is enough to list the file.
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                self.push(':', mat.line_number(), mat.bytes());
                // A file's own output beyond the cap is not needed.
                Ok(!self.full())
            }
        }
    }

    fn context(&mut self, _s: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content && *ctx.kind() != SinkContextKind::Other {
            self.push('-', ctx.line_number(), ctx.bytes());
            return Ok(!self.full());
        }
        Ok(true)
    }
}
