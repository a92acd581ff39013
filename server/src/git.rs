//! The git snapshot: the second block of the first user message.
//!
//! [`snapshot`] reads the repository once (branch, default branch, `user.name`, `git status --short`, the five newest
//! commits) and [`render_block`] turns the result into the exact `<system-reminder>` text the reference CLI sends.
//! Formatting is pure; only [`snapshot`] does IO.
//!
//! The status reproduces `git status --short` byte for byte: porcelain v1 `XY` codes, staged renames (`R  old -> new`),
//! unmerged codes (`UU`, `AA`, ...), submodule codes (` m`, ` ?`), untracked directories collapsed to `dir/`, paths
//! relative to the working directory and quoted like git's `core.quotePath`. It honours `status.showUntrackedFiles`,
//! `status.relativePaths`, `status.renames` / `diff.renames`, `status.renameLimit` / `diff.renameLimit`,
//! `core.quotePath` and `core.abbrev`; it does not print the `## branch` header of `status.branch`.
//!
//! Cost: the work tree walk (index against work tree) and the HEAD-against-index comparison run on two threads while
//! the calling thread reads the branch, config and log. The walk is time-boxed by [`GitOptions::status_timeout`]; when
//! the time is up the snapshot says the status is incomplete, and the abandoned walk finishes in the background (libgit2
//! cannot be interrupted from safe Rust).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use git2::{
    Config, ConfigLevel, Delta, DiffFindOptions, DiffOptions, ErrorCode, FileMode, Index, Oid, Repository,
    RepositoryOpenFlags, SubmoduleIgnore, SubmoduleStatus,
};

/// The status is cut at this many characters (UTF-16 code units, as the reference CLI counts them).
pub const STATUS_LIMIT: usize = 2000;

/// Appended after a status cut at [`STATUS_LIMIT`].
pub const TRUNCATION_NOTE: &str = "\n... (truncated because it exceeds 2k characters. If you need more information, run \"git status\" using Bash)";

/// Our own line, appended when the work tree walk ran out of time.
pub const INCOMPLETE_NOTE: &str =
    "... (status incomplete: the scan hit its time limit; run \"git status\" using Bash for the full list)";

/// The number of commits listed under `Recent commits:`.
pub const RECENT_COMMITS: usize = 5;

const HEADER: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status at the start of the conversation. Note that this status is a snapshot in time, and will not update during the conversation.\n\n";

const ATTRIBUTION: &str = "Claude Code attached this context automatically; it isn't part of the user's message. It describes the user's own account and workspace, so they don't need it reported back.";

/// What the block shows, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSnapshot {
    /// The current branch's short name; the branch HEAD names on an unborn branch; `HEAD` when detached.
    pub branch: String,
    /// The branch `refs/remotes/origin/HEAD` points to (without `origin/`), otherwise `main`.
    pub main_branch: String,
    /// `user.name`, `None` when unset or blank.
    pub user_name: Option<String>,
    /// The lines of `git status --short`, in git's order.
    pub status_lines: Vec<String>,
    /// False when the status walk was cut by the time limit (the lines are then partial).
    pub status_complete: bool,
    /// The newest commits reachable from HEAD, newest first: (abbreviated hash, subject).
    pub commits: Vec<(String, String)>,
    /// The root of the work tree (canonical, no trailing slash).
    pub work_tree: PathBuf,
}

/// How [`snapshot`] finds the repository and its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// Discovery does not climb into these directories (`GIT_CEILING_DIRECTORIES`).
    pub ceiling_dirs: Vec<PathBuf>,
    /// The status walk is abandoned after this long. Zero skips the status entirely (reported as incomplete).
    pub status_timeout: Duration,
    /// Read the global config from `<home>/.gitconfig` and `<home>/.config/git/config` instead of the process's
    /// `$HOME`. `None`: libgit2's own lookup.
    pub home: Option<PathBuf>,
    /// Skip the system config (`/etc/gitconfig`), like `GIT_CONFIG_NOSYSTEM`.
    pub no_system_config: bool,
}

impl Default for GitOptions {
    fn default() -> Self {
        Self {
            ceiling_dirs: Vec::new(),
            status_timeout: Duration::from_secs(5),
            home: None,
            no_system_config: false,
        }
    }
}

impl GitOptions {
    /// Defaults plus what git itself reads from the environment: `GIT_CEILING_DIRECTORIES` and `GIT_CONFIG_NOSYSTEM`.
    pub fn from_env() -> Self {
        let ceiling_dirs = std::env::var_os("GIT_CEILING_DIRECTORIES")
            .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
            .unwrap_or_default();
        let no_system_config =
            std::env::var("GIT_CONFIG_NOSYSTEM").map(|v| parse_git_bool(&v).unwrap_or(false)).unwrap_or(false);
        Self { ceiling_dirs, no_system_config, ..Self::default() }
    }
}

/// A repository that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    pub message: String,
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git: {}", self.message)
    }
}

impl std::error::Error for GitError {}

impl From<git2::Error> for GitError {
    fn from(e: git2::Error) -> Self {
        Self { message: e.message().to_owned() }
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// Pure formatting

/// The exact `<system-reminder>` block.
pub fn render_block(s: &GitSnapshot) -> String {
    let status = status_text(&s.status_lines, s.status_complete);
    let mut out = String::with_capacity(HEADER.len() + ATTRIBUTION.len() + status.len() + 512);
    out.push_str(HEADER);
    out.push_str("Current branch: ");
    out.push_str(&s.branch);
    out.push_str("\n\nMain branch (you will usually use this for PRs): ");
    out.push_str(&s.main_branch);
    out.push_str("\n\n");
    if let Some(user) = &s.user_name {
        out.push_str("Git user: ");
        out.push_str(user);
        out.push_str("\n\n");
    }
    out.push_str("Status:\n");
    out.push_str(&status);
    out.push_str("\n\nRecent commits:\n");
    for (i, (hash, subject)) in s.commits.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(hash);
        out.push(' ');
        out.push_str(subject);
    }
    out.push_str("\n\n");
    out.push_str(ATTRIBUTION);
    out.push_str("\n</system-reminder>");
    out
}

/// The text under `Status:`: the lines joined by newlines, `(clean)` when there are none, cut at [`STATUS_LIMIT`]
/// with [`TRUNCATION_NOTE`], and [`INCOMPLETE_NOTE`] on its own line when the walk was cut.
pub fn status_text(lines: &[String], complete: bool) -> String {
    let mut text = lines.join("\n");
    if let Some(cut) = cut_utf16(&text, STATUS_LIMIT) {
        text.truncate(cut);
        text.push_str(TRUNCATION_NOTE);
    }
    if !complete {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(INCOMPLETE_NOTE);
    } else if text.is_empty() {
        text.push_str("(clean)");
    }
    text
}

/// The number of lines `git status --short` printed (changed, unmerged and untracked entries).
pub fn count_changed(s: &GitSnapshot) -> usize {
    s.status_lines.len()
}

/// True when the work tree has no changes (and the walk completed).
pub fn is_clean(s: &GitSnapshot) -> bool {
    s.status_complete && s.status_lines.is_empty()
}

/// The byte offset at which `s` exceeds `limit` UTF-16 code units, or `None` when it fits. Never splits a character.
fn cut_utf16(s: &str, limit: usize) -> Option<usize> {
    if s.len() <= limit {
        return None; // UTF-16 never needs more units than UTF-8 needs bytes.
    }
    let mut units = 0;
    for (i, ch) in s.char_indices() {
        units += ch.len_utf16();
        if units > limit {
            return Some(i);
        }
    }
    None
}

/// `path` relative to `prefix` (a directory with a trailing `/`, or empty), as git's `relative_path()` does it.
fn relative_path(path: &[u8], prefix: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b"./".to_vec();
    }
    if prefix.is_empty() {
        return path.to_vec();
    }
    let (plen, inlen) = (prefix.len(), path.len());
    let (mut i, mut j, mut prefix_off, mut in_off) = (0, 0, 0, 0);
    while i < plen && j < inlen && prefix[i] == path[j] {
        if prefix[i] == b'/' {
            while i < plen && prefix[i] == b'/' {
                i += 1;
            }
            while j < inlen && path[j] == b'/' {
                j += 1;
            }
            prefix_off = i;
            in_off = j;
        } else {
            i += 1;
            j += 1;
        }
    }
    if i >= plen && prefix_off < plen {
        if j >= inlen {
            in_off = inlen;
        } else if path[j] == b'/' {
            while j < inlen && path[j] == b'/' {
                j += 1;
            }
            in_off = j;
        } else {
            i = prefix_off;
        }
    } else if j >= inlen && in_off < inlen && i < plen && prefix[i] == b'/' {
        while i < plen && prefix[i] == b'/' {
            i += 1;
        }
        in_off = inlen;
    }
    let rest = &path[in_off..];
    if i >= plen {
        return if rest.is_empty() { b"./".to_vec() } else { rest.to_vec() };
    }
    let mut out = Vec::with_capacity(rest.len() + 12);
    while i < plen {
        if prefix[i] == b'/' {
            out.extend_from_slice(b"../");
            while i < plen && prefix[i] == b'/' {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    if prefix[plen - 1] != b'/' {
        out.extend_from_slice(b"../");
    }
    out.extend_from_slice(rest);
    out
}

/// The escape git's `quote_c_style` uses for byte `c`: `None` when it goes out as is.
fn c_escape(c: u8, quote_fully: bool) -> Option<u8> {
    match c {
        0x07 => Some(b'a'),
        0x08 => Some(b'b'),
        b'\t' => Some(b't'),
        b'\n' => Some(b'n'),
        0x0b => Some(b'v'),
        0x0c => Some(b'f'),
        b'\r' => Some(b'r'),
        b'"' => Some(b'"'),
        b'\\' => Some(b'\\'),
        0x00..=0x1f | 0x7f => Some(0), // octal
        0x80..=0xff if quote_fully => Some(0),
        _ => None,
    }
}

/// Appends `rel` as `git status --short` prints a path: C-quoted when it holds a byte that needs it, and in double
/// quotes when it holds a space.
fn push_quoted(out: &mut Vec<u8>, rel: &[u8], quote_fully: bool) {
    let needs = rel.iter().any(|&c| c == b' ' || c_escape(c, quote_fully).is_some());
    if !needs {
        out.extend_from_slice(rel);
        return;
    }
    out.push(b'"');
    for &c in rel {
        match c_escape(c, quote_fully) {
            None => out.push(c),
            Some(0) => out.extend_from_slice(&[b'\\', b'0' + (c >> 6), b'0' + ((c >> 3) & 7), b'0' + (c & 7)]),
            Some(e) => out.extend_from_slice(&[b'\\', e]),
        }
    }
    out.push(b'"');
}

/// How a path is printed: relative to `prefix` (when set) and quoted.
#[derive(Debug, Clone, Copy)]
struct PathStyle<'a> {
    prefix: &'a [u8],
    quote_fully: bool,
}

impl PathStyle<'_> {
    fn push(&self, out: &mut Vec<u8>, path: &[u8]) {
        push_quoted(out, &relative_path(path, self.prefix), self.quote_fully);
    }
}

/// One tracked path's change on one side (HEAD→index or index→work tree).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    path: Vec<u8>,
    /// The source of a rename or copy (HEAD→index only).
    orig: Option<Vec<u8>>,
    /// The status letter (`M`, `A`, `D`, `R`, `C`, `T`, and `m` / `?` for submodules).
    code: u8,
    /// The two-letter code of an unmerged path (overrides both sides).
    unmerged: Option<[u8; 2]>,
}

/// What the two walks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StatusParts {
    staged: Vec<Change>,
    worktree: Vec<Change>,
    untracked: Vec<Vec<u8>>,
}

/// The `git status --short` lines: tracked changes sorted by path, then untracked entries sorted by path.
fn build_lines(parts: &StatusParts, style: PathStyle<'_>) -> Vec<String> {
    #[derive(Default)]
    struct Entry<'a> {
        x: u8,
        y: u8,
        orig: Option<&'a [u8]>,
        unmerged: Option<[u8; 2]>,
    }
    let mut changes: BTreeMap<&[u8], Entry<'_>> = BTreeMap::new();
    for c in &parts.staged {
        let e = changes.entry(&c.path).or_default();
        e.x = c.code;
        e.orig = c.orig.as_deref();
        e.unmerged = e.unmerged.or(c.unmerged);
    }
    for c in &parts.worktree {
        let e = changes.entry(&c.path).or_default();
        e.y = c.code;
        e.unmerged = e.unmerged.or(c.unmerged);
    }
    let mut untracked: Vec<&[u8]> = parts.untracked.iter().map(Vec::as_slice).collect();
    untracked.sort_unstable();
    untracked.dedup();

    let mut lines = Vec::with_capacity(changes.len() + untracked.len());
    let mut buf = Vec::with_capacity(128);
    for (path, e) in changes {
        buf.clear();
        match e.unmerged {
            Some(code) => buf.extend_from_slice(&code),
            None => {
                buf.push(if e.x == 0 { b' ' } else { e.x });
                buf.push(if e.y == 0 { b' ' } else { e.y });
            }
        }
        buf.push(b' ');
        if let (Some(orig), None) = (e.orig, e.unmerged) {
            style.push(&mut buf, orig);
            buf.extend_from_slice(b" -> ");
        }
        style.push(&mut buf, path);
        lines.push(String::from_utf8_lossy(&buf).into_owned());
    }
    for path in untracked {
        buf.clear();
        buf.extend_from_slice(b"?? ");
        style.push(&mut buf, path);
        lines.push(String::from_utf8_lossy(&buf).into_owned());
    }
    lines
}

/// The subject as `git log --oneline` prints it: leading blank lines skipped, the first paragraph's lines with their
/// trailing whitespace removed, joined by spaces.
fn subject(message: &[u8]) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(80);
    let mut started = false;
    for line in message.split(|&b| b == b'\n') {
        let end = line.iter().rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')).map_or(0, |p| p + 1);
        let line = &line[..end];
        if line.is_empty() {
            if started {
                break;
            }
            continue;
        }
        if started {
            out.push(b' ');
        }
        out.extend_from_slice(line);
        started = true;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// git's default abbreviation length for a repository holding `packed_objects` packed objects (`core.abbrev=auto`).
fn auto_abbrev_len(packed_objects: u64) -> usize {
    // msb(count) + 1 bits, two hex digits per doubling of the expected collision space, at least 7.
    let bits = if packed_objects == 0 { 1 } else { 64 - packed_objects.leading_zeros() as usize };
    bits.div_ceil(2).max(7)
}

fn parse_git_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// IO

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Untracked {
    No,
    Normal,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renames {
    Off,
    On,
    Copies,
}

/// The config values that shape the status output.
#[derive(Debug, Clone, Copy)]
struct Settings {
    quote_fully: bool,
    relative: bool,
    untracked: Untracked,
    renames: Renames,
    rename_limit: Option<usize>,
}

impl Settings {
    fn read(cfg: &Config) -> Self {
        let bool_of = |key: &str| cfg.get_bool(key).ok();
        let untracked = match cfg.get_string("status.showUntrackedFiles") {
            Ok(v) => match v.to_ascii_lowercase().as_str() {
                "no" | "false" | "off" | "0" => Untracked::No,
                "all" => Untracked::All,
                _ => Untracked::Normal,
            },
            Err(_) => Untracked::Normal,
        };
        let renames_of = |key: &str| -> Option<Renames> {
            let v = cfg.get_string(key).ok()?;
            match v.to_ascii_lowercase().as_str() {
                "copies" | "copy" => Some(Renames::Copies),
                other => parse_git_bool(other).map(|b| if b { Renames::On } else { Renames::Off }),
            }
        };
        let limit_of = |key: &str| cfg.get_i64(key).ok().map(|n| if n <= 0 { usize::MAX } else { n as usize });
        Self {
            quote_fully: bool_of("core.quotePath").unwrap_or(true),
            relative: bool_of("status.relativePaths").unwrap_or(true),
            untracked,
            renames: renames_of("status.renames").or_else(|| renames_of("diff.renames")).unwrap_or(Renames::On),
            rename_limit: limit_of("status.renameLimit").or_else(|| limit_of("diff.renameLimit")),
        }
    }
}

/// Config files to load in place of libgit2's defaults (when the options override `$HOME` or the system config).
type ConfigPlan = Vec<(PathBuf, ConfigLevel)>;

fn config_plan(repo: &Repository, opts: &GitOptions) -> Option<ConfigPlan> {
    if opts.home.is_none() && !opts.no_system_config {
        return None;
    }
    let mut plan = Vec::with_capacity(4);
    if !opts.no_system_config {
        if let Ok(p) = Config::find_system() {
            plan.push((p, ConfigLevel::System));
        }
    }
    match &opts.home {
        Some(home) => {
            plan.push((home.join(".config/git/config"), ConfigLevel::XDG));
            plan.push((home.join(".gitconfig"), ConfigLevel::Global));
        }
        None => {
            if let Ok(p) = Config::find_xdg() {
                plan.push((p, ConfigLevel::XDG));
            }
            if let Ok(p) = Config::find_global() {
                plan.push((p, ConfigLevel::Global));
            }
        }
    }
    plan.push((repo.commondir().join("config"), ConfigLevel::Local));
    Some(plan)
}

fn apply_config(repo: &Repository, plan: Option<&ConfigPlan>) -> Result<(), git2::Error> {
    let Some(plan) = plan else { return Ok(()) };
    let mut cfg = Config::new()?;
    for (path, level) in plan {
        if path.is_file() {
            cfg.add_file(path, *level, false)?;
        }
    }
    repo.set_config(&cfg)
}

/// What a status thread needs to open its own handle on the repository (git2 handles are not `Sync`).
#[derive(Debug, Clone)]
struct RepoHandle {
    git_dir: PathBuf,
    work_tree: PathBuf,
    config: Option<ConfigPlan>,
}

impl RepoHandle {
    fn open(&self) -> Result<Repository, git2::Error> {
        let repo = Repository::open_ext(&self.git_dir, RepositoryOpenFlags::NO_SEARCH, [] as [&Path; 0])?;
        if repo.workdir().map(|w| w.canonicalize().ok()) != Some(Some(self.work_tree.clone())) {
            repo.set_workdir(&self.work_tree, false)?;
        }
        apply_config(&repo, self.config.as_ref())?;
        Ok(repo)
    }
}

#[cfg(unix)]
fn bytes_to_path(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

#[cfg(not(unix))]
fn bytes_to_path(b: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(b).into_owned())
}

fn unmerged_code(index: &Index, path: &[u8]) -> [u8; 2] {
    let p = bytes_to_path(path);
    let mut mask = 0;
    for (stage, bit) in [(1, 1), (2, 2), (3, 4)] {
        if index.get_path(&p, stage).is_some() {
            mask |= bit;
        }
    }
    match mask {
        1 => *b"DD",
        2 => *b"AU",
        3 => *b"UD",
        4 => *b"UA",
        5 => *b"DU",
        6 => *b"AA",
        _ => *b"UU",
    }
}

/// HEAD against the index (`git diff --cached`), with git's rename detection.
fn staged_changes(h: &RepoHandle, settings: Settings) -> Result<Vec<Change>, git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let tree = match repo.head() {
        Ok(head) => Some(head.peel_to_tree()?),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => None,
        Err(e) => return Err(e),
    };
    let mut dopts = DiffOptions::new();
    dopts.include_typechange(true);
    let mut diff = repo.diff_tree_to_index(tree.as_ref(), Some(&index), Some(&mut dopts))?;
    if settings.renames != Renames::Off && diff.deltas().any(|d| d.status() == Delta::Added) {
        let mut find = DiffFindOptions::new();
        find.renames(true).copies(settings.renames == Renames::Copies).rename_threshold(50).copy_threshold(50);
        if let Some(limit) = settings.rename_limit {
            find.rename_limit(limit);
        }
        diff.find_similar(Some(&mut find))?;
    }
    let mut out = Vec::new();
    for d in diff.deltas() {
        let (code, orig) = match d.status() {
            Delta::Added => (b'A', None),
            Delta::Deleted => (b'D', None),
            Delta::Modified => (b'M', None),
            Delta::Typechange => (b'T', None),
            Delta::Renamed => (b'R', d.old_file().path_bytes()),
            Delta::Copied => (b'C', d.old_file().path_bytes()),
            Delta::Conflicted => (b'U', None),
            _ => continue,
        };
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else { continue };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        out.push(Change { path: path.to_vec(), orig: orig.map(<[u8]>::to_vec), code, unmerged });
    }
    Ok(out)
}

/// Refines a modified submodule the way `git status --short` does: `M` new commits, `m` modified content, `?`
/// untracked content.
fn submodule_code(repo: &Repository, path: &[u8]) -> u8 {
    let code = || -> Option<u8> {
        let p = std::str::from_utf8(path).ok()?.trim_end_matches('/');
        let sm = repo.find_submodule(p).ok()?;
        let st = repo.submodule_status(sm.name().ok()?, SubmoduleIgnore::Unspecified).ok()?;
        if st.contains(SubmoduleStatus::WD_MODIFIED) {
            Some(b'M')
        } else if st.intersects(SubmoduleStatus::WD_INDEX_MODIFIED | SubmoduleStatus::WD_WD_MODIFIED) {
            Some(b'm')
        } else if st.contains(SubmoduleStatus::WD_UNTRACKED) {
            Some(b'?')
        } else {
            None
        }
    };
    code().unwrap_or(b'M')
}

/// The index against the work tree (`git diff` plus untracked entries).
fn worktree_changes(h: &RepoHandle, settings: Settings) -> Result<(Vec<Change>, Vec<Vec<u8>>), git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let mut dopts = DiffOptions::new();
    dopts
        .include_typechange(true)
        .include_untracked(settings.untracked != Untracked::No)
        .recurse_untracked_dirs(settings.untracked == Untracked::All)
        .update_index(false);
    let diff = repo.diff_index_to_workdir(Some(&index), Some(&mut dopts))?;
    let mut changes = Vec::new();
    let mut untracked = Vec::new();
    for d in diff.deltas() {
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else { continue };
        let code = match d.status() {
            Delta::Untracked => {
                untracked.push(path.to_vec());
                continue;
            }
            Delta::Modified if d.old_file().mode() == FileMode::Commit => submodule_code(&repo, path),
            Delta::Modified => b'M',
            Delta::Deleted => b'D',
            Delta::Typechange => b'T',
            Delta::Conflicted => b'U',
            _ => continue,
        };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        changes.push(Change { path: path.to_vec(), orig: None, code, unmerged });
    }
    Ok((changes, untracked))
}

enum Part {
    Staged(Result<Vec<Change>, git2::Error>),
    Worktree(Result<(Vec<Change>, Vec<Vec<u8>>), git2::Error>),
}

/// Starts both walks on their own threads; returns the receiver and how many threads started.
fn spawn_status(h: RepoHandle, settings: Settings) -> (mpsc::Receiver<Part>, usize) {
    let (tx, rx) = mpsc::channel();
    let h2 = h.clone();
    let tx2 = tx.clone();
    let jobs: [(&str, Box<dyn FnOnce() -> Part + Send>); 2] = [
        ("git-status-staged", Box::new(move || Part::Staged(staged_changes(&h2, settings)))),
        ("git-status-worktree", Box::new(move || Part::Worktree(worktree_changes(&h, settings)))),
    ];
    let mut started = 0;
    for ((name, job), tx) in jobs.into_iter().zip([tx2, tx]) {
        let spawned = thread::Builder::new().name(name.to_owned()).spawn(move || {
            let _ = tx.send(job());
        });
        started += usize::from(spawned.is_ok());
    }
    (rx, started)
}

/// Collects what the walks send until `deadline`; returns the parts and whether both arrived.
fn wait_status(rx: &mpsc::Receiver<Part>, started: usize, deadline: Instant) -> Result<(StatusParts, bool), GitError> {
    let mut parts = StatusParts::default();
    let mut received = 0;
    while received < started {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Part::Staged(r)) => parts.staged = r?,
            Ok(Part::Worktree(r)) => (parts.worktree, parts.untracked) = r?,
            Err(_) => break,
        }
        received += 1;
    }
    Ok((parts, received == 2))
}

fn branch_name(repo: &Repository) -> String {
    match repo.head() {
        Ok(head) if head.is_branch() => String::from_utf8_lossy(head.shorthand_bytes()).into_owned(),
        Ok(_) => "HEAD".to_owned(),
        Err(_) => {
            // Unborn branch: the name HEAD points to.
            let target = repo.find_reference("HEAD").ok().and_then(|r| r.symbolic_target_bytes().map(<[u8]>::to_vec));
            match target {
                Some(t) => String::from_utf8_lossy(t.strip_prefix(b"refs/heads/").unwrap_or(&t)).into_owned(),
                None => "HEAD".to_owned(),
            }
        }
    }
}

fn main_branch(repo: &Repository) -> String {
    let target = repo
        .find_reference("refs/remotes/origin/HEAD")
        .ok()
        .and_then(|r| r.symbolic_target_bytes().map(<[u8]>::to_vec));
    match target {
        Some(t) => {
            let short = t.strip_prefix(b"refs/remotes/origin/").unwrap_or(&t);
            if short.is_empty() { "main".to_owned() } else { String::from_utf8_lossy(short).into_owned() }
        }
        None => "main".to_owned(),
    }
}

fn user_name(cfg: &Config) -> Option<String> {
    let entry = cfg.get_entry("user.name").ok()?;
    let v = String::from_utf8_lossy(entry.value_bytes()).trim().to_owned();
    (!v.is_empty()).then_some(v)
}

/// Objects in the repository's packs, as git's `repo_approximate_object_count()` counts them (loose objects don't
/// count). Reads only the fan-out table of each pack index.
fn packed_object_count(objects_dir: &Path) -> u64 {
    let Ok(dir) = fs::read_dir(objects_dir.join("pack")) else { return 0 };
    let mut total = 0u64;
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().ends_with(".idx") {
            continue;
        }
        let mut head = [0u8; 8 + 256 * 4];
        let Ok(mut f) = fs::File::open(entry.path()) else { continue };
        if f.read_exact(&mut head).is_err() {
            continue;
        }
        // Version 2 starts with "\xfftOc" and a version word; version 1 starts with the fan-out table.
        let fanout = if head[..4] == [0xff, b't', b'O', b'c'] { &head[8..] } else { &head[..256 * 4] };
        let last = &fanout[255 * 4..256 * 4];
        total += u64::from(u32::from_be_bytes([last[0], last[1], last[2], last[3]]));
    }
    total
}

fn abbrev_len(repo: &Repository, cfg: &Config) -> usize {
    match cfg.get_string("core.abbrev") {
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "auto" => auto_abbrev_len(packed_object_count(&repo.commondir().join("objects"))),
            "no" | "false" | "off" => 40,
            n => n.parse::<usize>().map_or(7, |n| n.clamp(4, 40)),
        },
        Err(_) => auto_abbrev_len(packed_object_count(&repo.commondir().join("objects"))),
    }
}

/// The shortest abbreviation of `oid` of at least `min` hex digits that no other object shares.
fn unique_abbrev(odb: Option<&git2::Odb<'_>>, oid: Oid, min: usize) -> String {
    let hex = oid.to_string();
    let Some(odb) = odb else { return hex[..min.min(hex.len())].to_owned() };
    let mut len = min.min(hex.len());
    while len < hex.len() {
        let Ok(short) = Oid::from_str(&hex[..len]) else { break };
        match odb.exists_prefix(short, len) {
            Err(e) if e.code() == ErrorCode::Ambiguous => len += 1,
            _ => break,
        }
    }
    hex[..len].to_owned()
}

fn recent_commits(repo: &Repository, abbrev: usize, n: usize) -> Vec<(String, String)> {
    let Ok(mut walk) = repo.revwalk() else { return Vec::new() };
    if walk.push_head().is_err() {
        return Vec::new(); // unborn branch
    }
    let odb = repo.odb().ok();
    let mut out = Vec::with_capacity(n);
    for oid in walk.take(n).flatten() {
        let Ok(commit) = repo.find_commit(oid) else { break };
        out.push((unique_abbrev(odb.as_ref(), oid, abbrev), subject(commit.message_bytes())));
    }
    out
}

/// Takes the snapshot for a session started in `cwd`.
///
/// `Ok(None)` when `cwd` is not inside a git work tree (no repository below the ceiling directories, a bare
/// repository, or `cwd` inside the `.git` directory). `Err` when a repository exists but cannot be read. Never panics.
///
/// Cost: one status walk of the work tree (index against work tree, on its own thread) plus HEAD against the index
/// (another thread); branch, config and the log are read meanwhile on the calling thread.
pub fn snapshot(cwd: &Path, opts: &GitOptions) -> Result<Option<GitSnapshot>, GitError> {
    let deadline = Instant::now() + opts.status_timeout;
    let repo = match Repository::open_ext(cwd, RepositoryOpenFlags::empty(), &opts.ceiling_dirs) {
        Ok(r) => r,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(work_tree) = repo.workdir() else { return Ok(None) };
    let work_tree = work_tree.canonicalize().unwrap_or_else(|_| work_tree.to_path_buf());
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let git_dir = repo.path().to_path_buf();
    if cwd.starts_with(git_dir.canonicalize().unwrap_or_else(|_| git_dir.clone())) {
        return Ok(None); // git: "this operation must be run in a work tree"
    }
    let plan = config_plan(&repo, opts);
    apply_config(&repo, plan.as_ref())?;
    let cfg = repo.config()?.snapshot()?;
    let settings = Settings::read(&cfg);

    let prefix: Vec<u8> = match cwd.strip_prefix(&work_tree) {
        Ok(rel) if settings.relative && !rel.as_os_str().is_empty() => {
            let mut p = rel.to_string_lossy().replace('\\', "/").into_bytes();
            p.push(b'/');
            p
        }
        _ => Vec::new(),
    };

    let handle = RepoHandle { git_dir, work_tree: work_tree.clone(), config: plan };
    // The walks run on their own threads so that the reads below overlap them.
    let status = (!opts.status_timeout.is_zero()).then(|| spawn_status(handle, settings));

    let branch = branch_name(&repo);
    let main_branch = main_branch(&repo);
    let user_name = user_name(&cfg);
    let abbrev = abbrev_len(&repo, &cfg);
    let commits = recent_commits(&repo, abbrev, RECENT_COMMITS);

    let (parts, status_complete) = match &status {
        Some((rx, started)) => wait_status(rx, *started, deadline)?,
        None => (StatusParts::default(), false),
    };
    let style = PathStyle { prefix: &prefix, quote_fully: settings.quote_fully };
    let status_lines = build_lines(&parts, style);
    Ok(Some(GitSnapshot { branch, main_branch, user_name, status_lines, status_complete, commits, work_tree }))
}
