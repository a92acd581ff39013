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
//! Two engines compute the status:
//! - the native one (Unix; the usual case) reads `.git/index` itself (no checksum pass, no copy), checks the work tree
//!   directory by directory on several threads (one listing per tracked directory gives the untracked names; each
//!   tracked name is `fstatat`'ed through its directory and compared with the index's stat data; content is hashed only
//!   when the stat data moved or is racy), applies git's exclude rules itself (`.gitignore` files, `info/exclude`,
//!   `core.excludesFile`, compiled with globset), and compares HEAD with the index through the cache-tree, so
//!   directories unchanged since the last `git write-tree` are never read. libgit2 still answers what needs more of
//!   git: submodules, content filters (end-of-line conversion), inexact rename scoring, and exclude patterns the
//!   translation cannot express (POSIX character classes).
//! - libgit2's diffs, for what the native engine does not reproduce: split or sparse indexes, case-insensitive or
//!   Unicode-precomposing file systems (`core.ignorecase`, `core.precomposeunicode`, so macOS by default),
//!   `core.symlinks=false`, SHA-256 repositories, non-Unix platforms. Known differences from git there: an
//!   intent-to-add entry shows `AM` (git: ` A`), an empty nested repository is not listed.
//!
//! Neither runs external filter drivers (Git LFS's `clean`): a tracked file whose stat data moved and whose raw content
//! differs from the index shows as modified.
//!
//! Cost: the walks run on their own threads while the calling thread reads the branch, config and log. They are
//! time-boxed by [`GitOptions::status_timeout`]; when the time is up the snapshot says the status is incomplete, and the
//! abandoned walks finish in the background (libgit2 cannot be interrupted from safe Rust). On the standard benchmark
//! tree (20,000 files) the snapshot takes about 0.6 of `git status --short` plus `git log -n 5` (see
//! `scripts/bench-git.sh`).

// The native walker is Unix-only; elsewhere its helpers are unused.
#![cfg_attr(not(unix), allow(dead_code))]

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use git2::{
    Config, ConfigLevel, Delta, DiffFindOptions, DiffOptions, ErrorCode, FileMode, Index,
    ObjectType, Oid, Repository, RepositoryOpenFlags, Status, SubmoduleIgnore, SubmoduleStatus,
};

/// The status is cut at this many characters (UTF-16 code units, as the reference CLI counts them).
pub const STATUS_LIMIT: usize = 2000;

/// Appended after a status cut at [`STATUS_LIMIT`].
pub const TRUNCATION_NOTE: &str = "\n... (truncated because it exceeds 2k characters. If you need more information, run \"git status\" using Bash)";

/// Our own line, appended when the work tree walk ran out of time.
pub const INCOMPLETE_NOTE: &str = "... (status incomplete: the scan hit its time limit; run \"git status\" using Bash for the full list)";

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
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let no_system_config = std::env::var("GIT_CONFIG_NOSYSTEM")
            .map(|v| parse_git_bool(&v).unwrap_or(false))
            .unwrap_or(false);
        Self {
            ceiling_dirs,
            no_system_config,
            ..Self::default()
        }
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
        Self {
            message: e.message().to_owned(),
        }
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
        return if rest.is_empty() {
            b"./".to_vec()
        } else {
            rest.to_vec()
        };
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
    let needs = rel
        .iter()
        .any(|&c| c == b' ' || c_escape(c, quote_fully).is_some());
    if !needs {
        out.extend_from_slice(rel);
        return;
    }
    out.push(b'"');
    for &c in rel {
        match c_escape(c, quote_fully) {
            None => out.push(c),
            Some(0) => out.extend_from_slice(&[
                b'\\',
                b'0' + (c >> 6),
                b'0' + ((c >> 3) & 7),
                b'0' + (c & 7),
            ]),
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
        let end = line
            .iter()
            .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .map_or(0, |p| p + 1);
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
    let bits = if packed_objects == 0 {
        1
    } else {
        64 - packed_objects.leading_zeros() as usize
    };
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
// The index file, read directly (pure)
//
// libgit2 checks the SHA-1 of the whole index on every load and validates every path, which costs more than git's
// whole status on a large tree. The native engine reads the file itself (git does not verify the checksum either):
// entry paths, stat data and object names, and the cache-tree, which tells which directories are unchanged since the
// last `git write-tree` (git's own way of skipping most of the HEAD-against-index diff).

const HASH_LEN: usize = 20;

/// One index entry: the stat data git compares, the object name, the flags (decoded on demand).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct IndexEntry {
    ctime: (u32, u32),
    mtime: (u32, u32),
    ino: u32,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u32,
    oid: [u8; HASH_LEN],
    flags: u16,
    ext_flags: u16,
}

impl IndexEntry {
    fn stage(&self) -> u16 {
        (self.flags >> 12) & 3
    }
    fn assume_unchanged(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    fn skip_worktree(&self) -> bool {
        self.ext_flags & 0x4000 != 0
    }
    fn intent_to_add(&self) -> bool {
        self.ext_flags & 0x2000 != 0
    }
}

/// Where an entry sits in the index file, and its path (in the file, or in `names` for version 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EntryAt {
    at: u32,
    name_at: u32,
    name_len: u32,
}

/// A cache-tree node: a directory and, when still valid, the tree object its index entries make.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CacheNode {
    name: Vec<u8>,
    oid: Option<[u8; HASH_LEN]>,
    children: Vec<usize>,
}

/// An index file, parsed without copying: the entries are offsets into the file's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ParsedIndex {
    buf: Vec<u8>,
    entries: Vec<EntryAt>,
    /// Version 4 only: the paths, expanded from their prefix compression.
    names: Vec<u8>,
    v4: bool,
    /// Pre-order; `[0]` is the root when the `TREE` extension is present.
    cache_tree: Vec<CacheNode>,
    /// A split index (`link`), a sparse index (`sdir`) or another required extension we don't know.
    unsupported: bool,
    /// Some entry is a `.gitattributes` file.
    has_attributes: bool,
}

impl ParsedIndex {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn name_of(&self, e: &EntryAt) -> &[u8] {
        let src = if self.v4 { &self.names } else { &self.buf };
        &src[e.name_at as usize..(e.name_at + e.name_len) as usize]
    }

    fn name(&self, i: usize) -> &[u8] {
        self.name_of(&self.entries[i])
    }

    fn entry(&self, i: usize) -> IndexEntry {
        let at = self.entries[i].at as usize;
        let b = &self.buf[at..at + 62];
        let flags = u16::from_be_bytes([b[60], b[61]]);
        let mut e = IndexEntry {
            ctime: (be32(b, 0), be32(b, 4)),
            mtime: (be32(b, 8), be32(b, 12)),
            ino: be32(b, 20),
            mode: be32(b, 24),
            uid: be32(b, 28),
            gid: be32(b, 32),
            size: be32(b, 36),
            flags,
            ext_flags: 0,
            ..IndexEntry::default()
        };
        e.oid.copy_from_slice(&b[40..40 + HASH_LEN]);
        if flags & 0x4000 != 0 {
            e.ext_flags = u16::from_be_bytes([self.buf[at + 62], self.buf[at + 63]]);
        }
        e
    }

    /// The first entry whose path is not below `path` in byte order (the index is sorted that way).
    fn lower_bound(&self, path: &[u8]) -> usize {
        self.entries.partition_point(|e| self.name_of(e) < path)
    }

    /// Whether some entry lies under `dir` (which ends with `/`).
    fn has_dir(&self, dir: &[u8]) -> bool {
        let i = self.lower_bound(dir);
        i < self.len() && self.name(i).starts_with(dir)
    }
}

/// git's `decode_varint` (index v4 path prefix lengths).
fn decode_varint(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let mut c = *buf.get(*pos)?;
    *pos += 1;
    let mut val = usize::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1)?;
        c = *buf.get(*pos)?;
        *pos += 1;
        val = val.checked_mul(128)?.checked_add(usize::from(c & 127))?;
    }
    Some(val)
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn is_attributes_file(name: &[u8]) -> bool {
    name == b".gitattributes" || name.ends_with(b"/.gitattributes")
}

/// Parses a version 2, 3 or 4 index with SHA-1 object names. `None` when the buffer is not such an index.
fn parse_index(buf: Vec<u8>) -> Option<ParsedIndex> {
    if buf.len() < 12 + HASH_LEN || &buf[..4] != b"DIRC" || u32::try_from(buf.len()).is_err() {
        return None;
    }
    let version = be32(&buf, 4);
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(&buf, 8) as usize;
    let end = buf.len() - HASH_LEN;
    let mut entries = Vec::with_capacity(count.min(end / 62));
    let mut names = Vec::new();
    let mut has_attributes = false;
    let mut pos: usize = 12;
    for _ in 0..count {
        const FIXED: usize = 40 + HASH_LEN + 2; // stat data, object name, flags
        if pos.checked_add(FIXED)? > end {
            return None;
        }
        let flags = u16::from_be_bytes([buf[pos + 60], buf[pos + 61]]);
        let mut p = pos + FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 || p + 2 > end {
                return None;
            }
            p += 2;
        }
        let (name_at, name_len) = if version == 4 {
            let mut q = p;
            let strip = decode_varint(&buf[..end], &mut q)?;
            let nul = buf.get(q..end)?.iter().position(|&c| c == 0)?;
            let (prev_at, prev_len) = entries.last().map_or((0, 0), |l: &EntryAt| {
                (l.name_at as usize, l.name_len as usize)
            });
            let keep = prev_len.checked_sub(strip)?;
            let at = names.len();
            names.extend_from_within(prev_at..prev_at + keep);
            names.extend_from_slice(&buf[q..q + nul]);
            pos = q + nul + 1;
            (at, names.len() - at)
        } else {
            // The flags hold the path's length unless it is 0xfff or more; then the NUL ends it.
            let nul = match usize::from(flags & 0xfff) {
                0xfff => buf.get(p..end)?.iter().position(|&c| c == 0)?,
                n if buf.get(p + n) == Some(&0) => n,
                _ => return None,
            };
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
            pos += (p - pos + nul + 8) & !7;
            (p, nul)
        };
        if pos > end {
            return None;
        }
        let e = EntryAt {
            at: u32::try_from(p - FIXED - if flags & 0x4000 != 0 { 2 } else { 0 }).ok()?,
            name_at: u32::try_from(name_at).ok()?,
            name_len: u32::try_from(name_len).ok()?,
        };
        let name = if version == 4 {
            &names[name_at..name_at + name_len]
        } else {
            &buf[name_at..name_at + name_len]
        };
        has_attributes |= is_attributes_file(name);
        entries.push(e);
    }
    let mut cache_tree = Vec::new();
    let mut unsupported = false;
    while pos + 8 <= end {
        let sig = &buf[pos..pos + 4];
        let size = be32(&buf, pos + 4) as usize;
        let data = buf.get(pos + 8..(pos + 8).checked_add(size)?)?;
        if sig == b"TREE" {
            cache_tree = parse_cache_tree(data).unwrap_or_default();
        } else if !sig[0].is_ascii_uppercase() {
            unsupported = true; // a required extension: split index, sparse index, ...
        }
        pos += 8 + size;
    }
    Some(ParsedIndex {
        buf,
        entries,
        names,
        v4: version == 4,
        cache_tree,
        unsupported,
        has_attributes,
    })
}

/// The `TREE` extension: nodes in pre-order, each `name "\0" entry_count " " subtrees "\n"` and an object name when
/// `entry_count >= 0` (valid).
fn parse_cache_tree(data: &[u8]) -> Option<Vec<CacheNode>> {
    fn node(
        data: &[u8],
        pos: &mut usize,
        nodes: &mut Vec<CacheNode>,
        depth: usize,
    ) -> Option<usize> {
        if depth > 4096 {
            return None;
        }
        let rest = data.get(*pos..)?;
        let nul = rest.iter().position(|&b| b == 0)?;
        let nl = rest.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(rest.get(nul + 1..nl)?).ok()?;
        let (count, subtrees) = header.split_once(' ')?;
        let (count, subtrees) = (count.parse::<i64>().ok()?, subtrees.parse::<usize>().ok()?);
        let mut at = *pos + nl + 1;
        let oid = if count >= 0 {
            let o: [u8; HASH_LEN] = data.get(at..at + HASH_LEN)?.try_into().ok()?;
            at += HASH_LEN;
            Some(o)
        } else {
            None
        };
        let id = nodes.len();
        nodes.push(CacheNode {
            name: rest[..nul].to_vec(),
            oid,
            children: Vec::new(),
        });
        *pos = at;
        for _ in 0..subtrees {
            let child = node(data, pos, nodes, depth + 1)?;
            nodes[id].children.push(child);
        }
        Some(id)
    }
    let mut nodes = Vec::new();
    let mut pos = 0;
    node(data, &mut pos, &mut nodes, 0)?;
    Some(nodes)
}

// ---------------------------------------------------------------------------------------------------------------------
// gitignore rules (pure)

/// One rule of a gitignore-format file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IgnoreRule {
    negated: bool,
    dir_only: bool,
}

/// A gitignore-format file (`.gitignore`, `info/exclude`, `core.excludesFile`) compiled with git's rules: the last
/// matching pattern decides, `!` re-includes, a trailing `/` matches directories only, a pattern without a slash
/// matches the name at any depth, one with a slash matches the path from the file's directory (`*` never crosses
/// `/`, `**` does as a whole component).
#[derive(Debug, Default)]
struct IgnoreFile {
    /// Patterns without a slash, matched against the name.
    names: GlobSet,
    name_rules: Vec<usize>,
    /// Patterns with a slash, matched against the path relative to the file's directory.
    paths: GlobSet,
    path_rules: Vec<usize>,
    rules: Vec<IgnoreRule>,
    /// A pattern this translation does not reproduce (POSIX classes, bad syntax, bytes that are not UTF-8): the
    /// caller asks libgit2 instead.
    exotic: bool,
}

/// A git wildmatch pattern in globset's syntax (`None` when there is no faithful translation).
fn translate_pattern(p: &str) -> Option<String> {
    let chars: Vec<char> = p.chars().collect();
    let n = chars.len();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    while i < n {
        match chars[i] {
            '\\' => {
                out.push('\\');
                out.push(*chars.get(i + 1)?);
                i += 2;
            }
            '[' => {
                out.push('[');
                i += 1;
                if matches!(chars.get(i), Some('!' | '^')) {
                    out.push('!');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push(']');
                    i += 1;
                }
                loop {
                    match chars.get(i)? {
                        ']' => break,
                        '\\' => return None,
                        '[' if chars.get(i + 1) == Some(&':') => return None, // [[:alpha:]]
                        c => out.push(*c),
                    }
                    i += 1;
                }
                out.push(']');
                i += 1;
            }
            '*' => {
                let run = chars[i..].iter().take_while(|c| **c == '*').count();
                let starts = i == 0 || chars[i - 1] == '/';
                let ends = i + run == n || chars[i + run] == '/';
                out.push_str(if run >= 2 && starts && ends {
                    "**"
                } else {
                    "*"
                });
                i += run;
            }
            c @ ('{' | '}') => {
                out.push('\\'); // literal in git
                out.push(c);
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// git's `trim_trailing_spaces`: unescaped trailing spaces go.
fn trim_trailing_spaces(line: &[u8]) -> &[u8] {
    let mut last_space = None;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' => {
                last_space.get_or_insert(i);
            }
            b'\\' => {
                i += 1;
                if i >= line.len() {
                    return line;
                }
                last_space = None;
            }
            _ => last_space = None,
        }
        i += 1;
    }
    &line[..last_space.unwrap_or(line.len())]
}

impl IgnoreFile {
    fn parse(text: &[u8]) -> Self {
        let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        let mut file = IgnoreFile::default();
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let mut p = trim_trailing_spaces(line);
            let negated = p.first() == Some(&b'!');
            if negated {
                p = &p[1..];
            }
            let dir_only = p.last() == Some(&b'/');
            if dir_only {
                p = &p[..p.len() - 1];
            }
            if p.is_empty() {
                continue;
            }
            let has_slash = p.contains(&b'/');
            let p = if has_slash {
                p.strip_prefix(b"/").unwrap_or(p)
            } else {
                p
            };
            let glob = std::str::from_utf8(p)
                .ok()
                .and_then(translate_pattern)
                .and_then(|g| {
                    GlobBuilder::new(&g)
                        .literal_separator(true)
                        .backslash_escape(true)
                        .build()
                        .ok()
                });
            let Some(glob) = glob else {
                file.exotic = true;
                continue;
            };
            let rule = file.rules.len();
            file.rules.push(IgnoreRule { negated, dir_only });
            if has_slash {
                paths.add(glob);
                file.path_rules.push(rule);
            } else {
                names.add(glob);
                file.name_rules.push(rule);
            }
        }
        match (names.build(), paths.build()) {
            (Ok(n), Ok(p)) => {
                file.names = n;
                file.paths = p;
            }
            _ => file.exotic = true,
        }
        file
    }

    /// The last rule matching `rel` (relative to the file's directory, no trailing slash): `Some(true)` ignored,
    /// `Some(false)` re-included, `None` no rule matches.
    fn matched(&self, rel: &[u8], is_dir: bool) -> Option<bool> {
        if self.rules.is_empty() {
            return None;
        }
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        let by_name = self
            .names
            .matches(bytes_to_path(name))
            .into_iter()
            .map(|k| self.name_rules[k]);
        let by_path = self
            .paths
            .matches(bytes_to_path(rel))
            .into_iter()
            .map(|k| self.path_rules[k]);
        by_name
            .chain(by_path)
            .filter(|&r| is_dir || !self.rules[r].dir_only)
            .max()
            .map(|r| !self.rules[r].negated)
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// Configuration

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

/// The config values that shape the status.
#[derive(Debug, Clone, Copy)]
struct Settings {
    quote_fully: bool,
    relative: bool,
    untracked: Untracked,
    renames: Renames,
    rename_limit: Option<usize>,
    filemode: bool,
    trust_ctime: bool,
    /// Settings the native engine does not reproduce (case-insensitive or Unicode-folding file systems, no
    /// symlinks, SHA-256 object names): the status then goes through libgit2.
    native_ok: bool,
    /// Content filters (end-of-line conversion) may apply: a file whose raw content differs from the index is then
    /// checked again through libgit2, which applies them.
    eol_filters: bool,
}

impl Settings {
    fn read(cfg: &Config) -> Self {
        let bool_of = |key: &str| cfg.get_bool(key).ok();
        let string_of = |key: &str| cfg.get_string(key).ok().map(|v| v.to_ascii_lowercase());
        let untracked = match string_of("status.showUntrackedFiles").as_deref() {
            Some("no" | "false" | "off" | "0") => Untracked::No,
            Some("all") => Untracked::All,
            _ => Untracked::Normal,
        };
        let renames_of = |key: &str| -> Option<Renames> {
            match string_of(key)?.as_str() {
                "copies" | "copy" => Some(Renames::Copies),
                other => parse_git_bool(other).map(|b| if b { Renames::On } else { Renames::Off }),
            }
        };
        let limit_of = |key: &str| {
            cfg.get_i64(key)
                .ok()
                .map(|n| usize::try_from(n).ok().filter(|&n| n > 0))
        };
        let eol_filters = string_of("core.autocrlf").is_some_and(|v| v != "false")
            || string_of("core.eol").is_some()
            || string_of("core.attributesfile").is_some();
        let native_ok = !bool_of("core.ignorecase").unwrap_or(false)
            && !bool_of("core.precomposeunicode").unwrap_or(false)
            && bool_of("core.symlinks").unwrap_or(true)
            && string_of("extensions.objectformat").is_none_or(|f| f == "sha1")
            && cfg!(unix);
        Self {
            quote_fully: bool_of("core.quotePath").unwrap_or(true),
            relative: bool_of("status.relativePaths").unwrap_or(true),
            untracked,
            renames: renames_of("status.renames")
                .or_else(|| renames_of("diff.renames"))
                .unwrap_or(Renames::On),
            rename_limit: limit_of("status.renameLimit")
                .or_else(|| limit_of("diff.renameLimit"))
                .flatten(),
            filemode: bool_of("core.filemode").unwrap_or(true),
            trust_ctime: bool_of("core.trustctime").unwrap_or(true),
            native_ok,
            eol_filters,
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
    if !opts.no_system_config
        && let Ok(p) = Config::find_system()
    {
        plan.push((p, ConfigLevel::System));
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

// ---------------------------------------------------------------------------------------------------------------------
// Shared IO helpers

/// What a status thread needs to open its own handle on the repository (git2 handles are not `Sync`).
#[derive(Debug, Clone)]
struct RepoHandle {
    git_dir: PathBuf,
    work_tree: PathBuf,
    config: Option<ConfigPlan>,
}

impl RepoHandle {
    fn open(&self) -> Result<Repository, git2::Error> {
        let repo = Repository::open_ext(
            &self.git_dir,
            RepositoryOpenFlags::NO_SEARCH,
            [] as [&Path; 0],
        )?;
        if repo.workdir().map(|w| w.canonicalize().ok()) != Some(Some(self.work_tree.clone())) {
            repo.set_workdir(&self.work_tree, false)?;
        }
        apply_config(&repo, self.config.as_ref())?;
        Ok(repo)
    }
}

/// A repository handle opened on first use (most walks never need one).
struct LazyRepo<'a> {
    handle: &'a RepoHandle,
    repo: Option<Repository>,
}

impl<'a> LazyRepo<'a> {
    fn new(handle: &'a RepoHandle) -> Self {
        Self { handle, repo: None }
    }

    fn get(&mut self) -> Option<&Repository> {
        if self.repo.is_none() {
            self.repo = self.handle.open().ok();
        }
        self.repo.as_ref()
    }

    /// Whether git ignores `rel` (a path in the work tree; directories end with `/`). Errors count as not ignored,
    /// so that the path shows.
    fn ignored(&mut self, rel: &[u8]) -> bool {
        self.get()
            .is_some_and(|r| r.is_path_ignored(bytes_to_path(rel)).unwrap_or(false))
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

#[cfg(unix)]
fn os_to_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_to_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

/// The two-letter code of an unmerged path from the stages present (1 base, 2 ours, 3 theirs).
fn unmerged_code_from_mask(mask: u8) -> [u8; 2] {
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

fn unmerged_code(index: &Index, path: &[u8]) -> [u8; 2] {
    let p = bytes_to_path(path);
    let mut mask = 0;
    for (stage, bit) in [(1, 1), (2, 2), (3, 4)] {
        if index.get_path(&p, stage).is_some() {
            mask |= bit;
        }
    }
    unmerged_code_from_mask(mask)
}

/// A modified submodule the way `git status --short` shows it: `M` new commits, `m` modified content, `?`
/// untracked content; `None` when clean.
fn submodule_code(repo: &Repository, path: &[u8]) -> Option<u8> {
    let p = std::str::from_utf8(path).ok()?.trim_end_matches('/');
    let sm = repo.find_submodule(p).ok()?;
    let st = repo
        .submodule_status(sm.name().ok()?, SubmoduleIgnore::Unspecified)
        .ok()?;
    if st.contains(SubmoduleStatus::WD_MODIFIED) {
        Some(b'M')
    } else if st.intersects(SubmoduleStatus::WD_INDEX_MODIFIED | SubmoduleStatus::WD_WD_MODIFIED) {
        Some(b'm')
    } else if st.contains(SubmoduleStatus::WD_UNTRACKED) {
        Some(b'?')
    } else {
        None
    }
}

fn head_tree(repo: &Repository) -> Result<Option<git2::Tree<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_tree()?)),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// The libgit2 engine (fallback for repositories the native engine does not handle)

/// HEAD against the index (`git diff --cached`), with git's rename detection.
fn staged_changes(h: &RepoHandle, settings: Settings) -> Result<Vec<Change>, git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let tree = head_tree(&repo)?;
    let mut dopts = DiffOptions::new();
    dopts.include_typechange(true);
    let mut diff = repo.diff_tree_to_index(tree.as_ref(), Some(&index), Some(&mut dopts))?;
    if settings.renames != Renames::Off && diff.deltas().any(|d| d.status() == Delta::Added) {
        let mut find = DiffFindOptions::new();
        find.renames(true)
            .copies(settings.renames == Renames::Copies)
            .rename_threshold(50)
            .copy_threshold(50);
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
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else {
            continue;
        };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        out.push(Change {
            path: path.to_vec(),
            orig: orig.map(<[u8]>::to_vec),
            code,
            unmerged,
        });
    }
    Ok(out)
}

/// The index against the work tree (`git diff` plus untracked entries).
fn worktree_changes(h: &RepoHandle, settings: Settings) -> Result<WorktreePart, git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let mut dopts = DiffOptions::new();
    dopts
        .include_typechange(true)
        .include_untracked(settings.untracked != Untracked::No)
        .recurse_untracked_dirs(settings.untracked == Untracked::All)
        .update_index(false);
    let diff = repo.diff_index_to_workdir(Some(&index), Some(&mut dopts))?;
    let mut part = WorktreePart::default();
    for d in diff.deltas() {
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else {
            continue;
        };
        let code = match d.status() {
            Delta::Untracked => {
                // git does not list the content of a directory that replaced a tracked file (libgit2 does).
                let replaced = path
                    .strip_suffix(b"/")
                    .is_some_and(|p| index.get_path(&bytes_to_path(p), 0).is_some());
                if !replaced {
                    part.untracked.push(path.to_vec());
                }
                continue;
            }
            Delta::Modified if d.old_file().mode() == FileMode::Commit => {
                submodule_code(&repo, path).unwrap_or(b'M')
            }
            Delta::Modified => b'M',
            Delta::Deleted => b'D',
            Delta::Typechange => b'T',
            Delta::Conflicted => b'U',
            _ => continue,
        };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        part.changes.push(Change {
            path: path.to_vec(),
            orig: None,
            code,
            unmerged,
        });
    }
    Ok(part)
}

// ---------------------------------------------------------------------------------------------------------------------
// The native engine: the index read directly, the work tree checked with lstat on several threads, HEAD compared
// with the index through the cache-tree. libgit2 still answers the questions that need git's rules: ignore patterns,
// submodules, content filters.

/// What the native walks share.
#[derive(Debug)]
struct NativeCtx {
    index: ParsedIndex,
    work_tree: PathBuf,
    handle: RepoHandle,
    settings: Settings,
    /// Content filters may apply (`.gitattributes` anywhere, or end-of-line config).
    filters: bool,
    /// Entries modified in or after this second may be "racily clean" and get their content compared.
    racy_from: u32,
    /// `core.excludesFile` then `info/exclude` (lowest priority first), under every `.gitignore`.
    base_ignores: Vec<IgnoreFile>,
}

#[derive(Debug, Default)]
struct WorktreePart {
    changes: Vec<Change>,
    untracked: Vec<Vec<u8>>,
}

/// git's canonical mode of a tree or index entry.
fn canon_mode(m: u32) -> u32 {
    match m & 0o170000 {
        0o100000 => {
            if m & 0o100 != 0 {
                0o100755
            } else {
                0o100644
            }
        }
        t @ (0o120000 | 0o160000 | 0o040000) => t,
        _ => m,
    }
}

/// A tracked directory and the index entries directly in it (all stages).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TrackedDir {
    path: Vec<u8>,
    direct: Vec<usize>,
}

/// The directories that hold index entries, in pre-order (the root first), each with its direct entries.
fn tracked_dirs(idx: &ParsedIndex) -> Vec<TrackedDir> {
    let mut dirs = vec![TrackedDir {
        path: Vec::new(),
        direct: Vec::new(),
    }];
    let mut open: Vec<usize> = vec![0];
    for i in 0..idx.len() {
        let name = idx.name(i);
        while open.len() > 1
            && !open
                .last()
                .is_some_and(|&d| name.starts_with(&dirs[d].path))
        {
            open.pop();
        }
        let mut start = open.last().map_or(0, |&d| dirs[d].path.len());
        while let Some(p) = name[start..].iter().position(|&b| b == b'/') {
            start += p + 1;
            dirs.push(TrackedDir {
                path: name[..start].to_vec(),
                direct: Vec::new(),
            });
            open.push(dirs.len() - 1);
        }
        if let Some(&d) = open.last() {
            dirs[d].direct.push(i);
        }
    }
    dirs
}

#[cfg(unix)]
mod native {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{DirEntryExt, MetadataExt};

    const S_IFMT: u32 = 0o170000;
    const S_IFREG: u32 = 0o100000;
    const S_IFLNK: u32 = 0o120000;
    const S_IFGITLINK: u32 = 0o160000;

    /// A walker's caches: its repository handle (opened on first use) and the exclude rules of the directories it
    /// has looked at.
    pub(super) struct WalkState<'a> {
        ctx: &'a NativeCtx,
        repo: LazyRepo<'a>,
        dirs: std::collections::HashMap<Vec<u8>, DirIgnore>,
    }

    struct DirIgnore {
        file: Option<IgnoreFile>,
        /// The directory itself is excluded (then so is everything under it).
        excluded: bool,
    }

    /// `"a/b/"` → `"a/"`, `"a/"` → `""`.
    fn parent_dir(dir: &[u8]) -> &[u8] {
        let d = dir.strip_suffix(b"/").unwrap_or(dir);
        d.iter()
            .rposition(|&b| b == b'/')
            .map_or(&d[..0], |p| &d[..=p])
    }

    impl<'a> WalkState<'a> {
        pub(super) fn new(ctx: &'a NativeCtx) -> Self {
            Self {
                ctx,
                repo: LazyRepo::new(&ctx.handle),
                dirs: std::collections::HashMap::new(),
            }
        }

        fn get(&mut self) -> Option<&Repository> {
            self.repo.get()
        }

        /// Loads the rules of `dir` (`""` or ending with `/`) and its parents, and whether it is excluded.
        fn load(&mut self, dir: &[u8]) {
            if self.dirs.contains_key(dir) {
                return;
            }
            let excluded = !dir.is_empty() && {
                let parent = parent_dir(dir);
                self.load(parent);
                self.dirs.get(parent).is_some_and(|d| d.excluded)
                    || self.decide(parent, &dir[..dir.len() - 1], true) == Some(true)
            };
            let file = if excluded {
                None
            } else {
                let mut p = dir.to_vec();
                p.extend_from_slice(b".gitignore");
                let abs = abs_of(self.ctx, &p);
                // git does not follow a symbolic link here.
                match fs::symlink_metadata(&abs) {
                    Ok(md) if md.is_file() => fs::read(&abs).ok().map(|t| IgnoreFile::parse(&t)),
                    _ => None,
                }
            };
            self.dirs.insert(dir.to_vec(), DirIgnore { file, excluded });
        }

        /// The rules from `dir` up to the root, then `info/exclude` and `core.excludesFile`; the deepest file with
        /// a matching rule decides. `None` when a file on the way has a pattern only libgit2 reads right.
        fn decide(&self, dir: &[u8], path: &[u8], is_dir: bool) -> Option<bool> {
            let mut d = dir;
            loop {
                if let Some(f) = self.dirs.get(d).and_then(|x| x.file.as_ref()) {
                    if f.exotic {
                        return None;
                    }
                    if let Some(hit) = f.matched(&path[d.len()..], is_dir) {
                        return Some(hit);
                    }
                }
                if d.is_empty() {
                    break;
                }
                d = parent_dir(d);
            }
            for f in self.ctx.base_ignores.iter().rev() {
                if f.exotic {
                    return None;
                }
                if let Some(hit) = f.matched(path, is_dir) {
                    return Some(hit);
                }
            }
            Some(false)
        }

        /// Whether git ignores `rel` (a path in the work tree; directories end with `/`).
        fn ignored(&mut self, rel: &[u8]) -> bool {
            let is_dir = rel.ends_with(b"/");
            let path = if is_dir { &rel[..rel.len() - 1] } else { rel };
            let dir = path
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(&path[..0], |p| &path[..=p]);
            self.load(dir);
            if self.dirs.get(dir).is_some_and(|d| d.excluded) {
                return true;
            }
            match self.decide(dir, path, is_dir) {
                Some(hit) => hit,
                None => self.repo.ignored(rel),
            }
        }
    }

    /// Checks the tracked directories `dirs`: each listing gives the untracked names, and each tracked name is
    /// stat'ed through the directory (`fstatat`, one path component to resolve) and compared with its index entry.
    pub(super) fn worktree(
        ctx: &NativeCtx,
        dirs: &[TrackedDir],
        next: &AtomicUsize,
    ) -> WorktreePart {
        const BATCH: usize = 8;
        let mut lazy = WalkState::new(ctx);
        let mut part = WorktreePart::default();
        loop {
            let start = next.fetch_add(BATCH, AtomicOrdering::Relaxed);
            if start >= dirs.len() {
                break;
            }
            for dir in &dirs[start..(start + BATCH).min(dirs.len())] {
                scan_tracked_dir(ctx, dir, &mut lazy, &mut part);
            }
        }
        part
    }

    fn scan_tracked_dir(
        ctx: &NativeCtx,
        dir: &TrackedDir,
        lazy: &mut WalkState<'_>,
        part: &mut WorktreePart,
    ) {
        let idx = &ctx.index;
        let abs = abs_of(ctx, &dir.path);
        // A symbolic link where a tracked directory was is not followed (git: "beyond a symbolic link").
        // (Without the trailing slash, which would make lstat follow the link.)
        let real_dir = dir.path.is_empty()
            || fs::symlink_metadata(abs_of(ctx, &dir.path[..dir.path.len() - 1]))
                .is_ok_and(|m| m.is_dir());
        let mut disk: Vec<(std::ffi::OsString, fs::DirEntry)> = match fs::read_dir(&abs) {
            Ok(rd) if real_dir => rd
                .flatten()
                .map(|e| (e.file_name(), e))
                .filter(|(n, _)| n.as_bytes() != b".git")
                .collect(),
            _ => Vec::new(), // gone: every file in it is deleted
        };
        disk.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let base = dir.path.len();
        let mut d = 0;
        let mut k = 0;
        while k < dir.direct.len() || d < disk.len() {
            let iname = dir.direct.get(k).map(|&i| &idx.name(i)[base..]);
            let dname = disk.get(d).map(|(n, _)| n.as_bytes());
            let order = match (iname, dname) {
                (Some(i), Some(n)) => i.cmp(n),
                (Some(_), None) => Ordering::Less,
                (None, _) => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    // Tracked, not on disk.
                    let i = dir.direct[k];
                    let e = idx.entry(i);
                    if e.stage() == 0 && !e.assume_unchanged() && !e.skip_worktree() {
                        part.changes.push(Change {
                            path: idx.name(i).to_vec(),
                            orig: None,
                            code: b'D',
                            unmerged: None,
                        });
                    }
                    k = next_name(idx, &dir.direct, k);
                }
                Ordering::Greater => {
                    let (name, entry) = &disk[d];
                    let mut full = dir.path.clone();
                    full.extend_from_slice(name.as_bytes());
                    untracked_entry(
                        ctx,
                        full,
                        entry.file_type().is_ok_and(|t| t.is_dir()),
                        lazy,
                        &mut part.untracked,
                    );
                    d += 1;
                }
                Ordering::Equal => {
                    let i = dir.direct[k];
                    let e = idx.entry(i);
                    // (A directory where a file is tracked is a deletion; git does not list its content.)
                    let entry = &disk[d].1;
                    let code = if e.stage() != 0 || e.assume_unchanged() || e.skip_worktree() {
                        None
                    } else if e.intent_to_add() {
                        // Added with `git add -N`: new in the work tree, whatever its content.
                        Some(if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            b'D'
                        } else {
                            b'A'
                        })
                    } else {
                        check_entry(ctx, &e, idx.name(i), entry, lazy)
                    };
                    if let Some(code) = code {
                        part.changes.push(Change {
                            path: idx.name(i).to_vec(),
                            orig: None,
                            code,
                            unmerged: None,
                        });
                    }
                    k = next_name(idx, &dir.direct, k);
                    d += 1;
                }
            }
        }
    }

    /// The position after all stages of the name at `k`.
    fn next_name(idx: &ParsedIndex, direct: &[usize], k: usize) -> usize {
        let name = idx.name(direct[k]);
        let mut j = k + 1;
        while j < direct.len() && idx.name(direct[j]) == name {
            j += 1;
        }
        j
    }

    /// A name on disk that has no index entry of its own.
    fn untracked_entry(
        ctx: &NativeCtx,
        mut full: Vec<u8>,
        is_dir: bool,
        lazy: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if is_dir {
            full.push(b'/');
            if ctx.index.has_dir(&full) {
                return; // a tracked directory, checked on its own
            }
            if ctx.settings.untracked != Untracked::No {
                untracked_dir(ctx, full, lazy, out);
            }
        } else if ctx.settings.untracked != Untracked::No && !lazy.ignored(&full) {
            out.push(full);
        }
    }

    /// What `git status` says about one tracked file present on disk: `None` when unchanged.
    fn check_entry(
        ctx: &NativeCtx,
        e: &IndexEntry,
        name: &[u8],
        entry: &fs::DirEntry,
        lazy: &mut WalkState<'_>,
    ) -> Option<u8> {
        let Ok(md) = entry.metadata() else {
            return recheck(lazy, name);
        };
        let itype = e.mode & S_IFMT;
        let wtype = md.mode() & S_IFMT;
        if itype == S_IFGITLINK {
            return if md.is_dir() {
                lazy.get().and_then(|r| submodule_code(r, name))
            } else {
                recheck(lazy, name)
            };
        }
        if md.is_dir() {
            return Some(b'D'); // git: a directory where a file was is a removal
        }
        if itype != wtype {
            return Some(b'T');
        }
        if itype == S_IFREG
            && ctx.settings.filemode
            && (e.mode & 0o100 != 0) != (md.mode() & 0o100 != 0)
        {
            return Some(b'M');
        }
        let size = md.size() as u32;
        if size != e.size && e.size != 0 {
            return Some(b'M');
        }
        // Nanoseconds count only when the index has them (git built without USE_NSEC writes zeros).
        let same_time = |(sec, nsec): (i64, i64), (isec, insec): (u32, u32)| {
            sec as u32 == isec && (insec == 0 || nsec as u32 == insec)
        };
        let stat_same = size == e.size
            && same_time((md.mtime(), md.mtime_nsec()), e.mtime)
            && (!ctx.settings.trust_ctime || same_time((md.ctime(), md.ctime_nsec()), e.ctime))
            && entry.ino() as u32 == e.ino
            && md.uid() == e.uid
            && md.gid() == e.gid;
        if stat_same && e.mtime.0 < ctx.racy_from {
            return None;
        }
        // The stat data moved (or is too recent to trust): compare the content.
        let abs = abs_of(ctx, name);
        let oid = if itype == S_IFLNK {
            fs::read_link(&abs)
                .ok()
                .and_then(|t| Oid::hash_object(ObjectType::Blob, t.as_os_str().as_bytes()).ok())
        } else {
            Oid::hash_file(ObjectType::Blob, &abs).ok()
        };
        match oid {
            Some(oid) if oid.as_bytes() == e.oid.as_slice() => None,
            _ if ctx.filters && itype == S_IFREG => recheck(lazy, name),
            _ => Some(b'M'),
        }
    }

    /// Asks libgit2 about one path (content filters, odd file types).
    fn recheck(lazy: &mut WalkState<'_>, name: &[u8]) -> Option<u8> {
        let st = lazy
            .get()
            .and_then(|r| r.status_file(&bytes_to_path(name)).ok())?;
        if st.contains(Status::WT_DELETED) {
            Some(b'D')
        } else if st.contains(Status::WT_TYPECHANGE) {
            Some(b'T')
        } else if st.contains(Status::WT_MODIFIED) {
            Some(b'M')
        } else {
            None
        }
    }

    fn read_dir_names(abs: &Path) -> Vec<(Vec<u8>, bool)> {
        let Ok(rd) = fs::read_dir(abs) else {
            return Vec::new();
        };
        rd.flatten()
            .filter(|e| e.file_name().as_bytes() != b".git")
            .map(|e| {
                (
                    e.file_name().as_bytes().to_vec(),
                    e.file_type().is_ok_and(|t| t.is_dir()),
                )
            })
            .collect()
    }

    fn abs_of(ctx: &NativeCtx, rel: &[u8]) -> PathBuf {
        let mut p = ctx.work_tree.as_os_str().as_bytes().to_vec();
        p.push(b'/');
        p.extend_from_slice(rel);
        PathBuf::from(OsStr::from_bytes(&p))
    }

    fn is_nested_repo(ctx: &NativeCtx, dir: &[u8]) -> bool {
        let mut p = dir.to_vec();
        p.extend_from_slice(b".git");
        fs::symlink_metadata(abs_of(ctx, &p)).is_ok()
    }

    /// An untracked directory: shown as `dir/` when it holds something untracked that is not ignored (git's
    /// default), or file by file with `status.showUntrackedFiles=all`.
    fn untracked_dir(
        ctx: &NativeCtx,
        dir: Vec<u8>,
        lazy: &mut WalkState<'_>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if lazy.ignored(&dir) {
            return;
        }
        if ctx.settings.untracked == Untracked::All && !is_nested_repo(ctx, &dir) {
            for (name, is_dir) in read_dir_names(&abs_of(ctx, &dir)) {
                let mut full = dir.clone();
                full.extend_from_slice(&name);
                if is_dir {
                    full.push(b'/');
                    untracked_dir(ctx, full, lazy, out);
                } else if !lazy.ignored(&full) {
                    out.push(full);
                }
            }
        } else if has_untracked(ctx, &dir, lazy) {
            out.push(dir);
        }
    }

    fn has_untracked(ctx: &NativeCtx, dir: &[u8], lazy: &mut WalkState<'_>) -> bool {
        if is_nested_repo(ctx, dir) {
            return true;
        }
        read_dir_names(&abs_of(ctx, dir))
            .into_iter()
            .any(|(name, is_dir)| {
                let mut full = dir.to_vec();
                full.extend_from_slice(&name);
                if is_dir {
                    full.push(b'/');
                    !lazy.ignored(&full) && has_untracked(ctx, &full, lazy)
                } else {
                    !lazy.ignored(&full)
                }
            })
    }
}

/// One side of a HEAD-against-index comparison that may pair into a rename.
struct Side {
    path: Vec<u8>,
    oid: [u8; HASH_LEN],
    mode: u32,
}

/// HEAD against the index, from the parsed index: subtrees whose cache-tree entry still matches HEAD are skipped
/// without reading them. Returns `None` when renames need content similarity (then libgit2 decides).
fn native_staged(ctx: &NativeCtx) -> Result<Option<Vec<Change>>, git2::Error> {
    let idx = &ctx.index;
    let mut out = Vec::new();
    // Unmerged paths: one line each, from the stages present.
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && idx.name(j) == idx.name(i) {
            j += 1;
        }
        let mask = (i..j).fold(0u8, |m, k| match idx.entry(k).stage() {
            1 => m | 1,
            2 => m | 2,
            3 => m | 4,
            _ => m,
        });
        if mask != 0 {
            let code = unmerged_code_from_mask(mask);
            out.push(Change {
                path: idx.name(i).to_vec(),
                orig: None,
                code: b'U',
                unmerged: Some(code),
            });
        }
        i = j;
    }
    let repo = ctx.handle.open()?;
    let tree = head_tree(&repo)?;
    let root = idx
        .cache_tree
        .first()
        .filter(|n| n.name.is_empty())
        .map(|_| 0);
    let mut added = Vec::new();
    let mut deleted = Vec::new();
    let mut walk = StagedWalk {
        repo: &repo,
        idx,
        out: &mut out,
        added: &mut added,
        deleted: &mut deleted,
    };
    walk.level(tree.as_ref(), b"", root, 0..idx.len())?;

    if ctx.settings.renames != Renames::Off && !added.is_empty() && !deleted.is_empty() {
        if ctx.settings.renames == Renames::Copies {
            return Ok(None);
        }
        // Exact renames (same object) pair one to one; anything else needs git's similarity scoring.
        let mut by_oid: BTreeMap<[u8; HASH_LEN], (Vec<usize>, Vec<usize>)> = BTreeMap::new();
        for (k, a) in added.iter().enumerate() {
            by_oid.entry(a.oid).or_default().0.push(k);
        }
        for (k, d) in deleted.iter().enumerate() {
            by_oid.entry(d.oid).or_default().1.push(k);
        }
        let mut paired_a = vec![false; added.len()];
        let mut paired_d = vec![false; deleted.len()];
        for (a_ids, d_ids) in by_oid.values() {
            match (a_ids.as_slice(), d_ids.as_slice()) {
                ([], _) | (_, []) => {}
                ([a], [d]) => {
                    if added[*a].mode == 0o160000 || deleted[*d].mode == 0o160000 {
                        return Ok(None);
                    }
                    paired_a[*a] = true;
                    paired_d[*d] = true;
                    out.push(Change {
                        path: added[*a].path.clone(),
                        orig: Some(deleted[*d].path.clone()),
                        code: b'R',
                        unmerged: None,
                    });
                }
                _ => return Ok(None),
            }
        }
        if paired_a.iter().any(|p| !p) && paired_d.iter().any(|p| !p) {
            return Ok(None);
        }
        added = added
            .into_iter()
            .zip(paired_a)
            .filter(|(_, p)| !p)
            .map(|(a, _)| a)
            .collect();
        deleted = deleted
            .into_iter()
            .zip(paired_d)
            .filter(|(_, p)| !p)
            .map(|(d, _)| d)
            .collect();
    }
    out.extend(added.into_iter().map(|a| Change {
        path: a.path,
        orig: None,
        code: b'A',
        unmerged: None,
    }));
    out.extend(deleted.into_iter().map(|d| Change {
        path: d.path,
        orig: None,
        code: b'D',
        unmerged: None,
    }));
    Ok(Some(out))
}

struct StagedWalk<'r, 'o> {
    repo: &'r Repository,
    idx: &'o ParsedIndex,
    out: &'o mut Vec<Change>,
    added: &'o mut Vec<Side>,
    deleted: &'o mut Vec<Side>,
}

impl StagedWalk<'_, '_> {
    /// Compares the tree `tree` (HEAD's at `prefix`) with the index entries in `range` (those under `prefix`).
    fn level(
        &mut self,
        tree: Option<&git2::Tree<'_>>,
        prefix: &[u8],
        node: Option<usize>,
        range: std::ops::Range<usize>,
    ) -> Result<(), git2::Error> {
        let idx = self.idx;
        if let (Some(t), Some(n)) = (tree, node)
            && idx.cache_tree[n]
                .oid
                .is_some_and(|o| o.as_slice() == t.id().as_bytes())
        {
            return Ok(()); // unchanged since HEAD
        }
        let tree_items: Vec<(Vec<u8>, u32, Oid)> = tree
            .map(|t| {
                t.iter()
                    .map(|e| (e.name_bytes().to_vec(), e.filemode() as u32, e.id()))
                    .collect()
            })
            .unwrap_or_default();
        let mut ti = 0;
        let mut i = range.start;
        loop {
            // The next index item at this level: a file (all its stages) or a directory (all entries under it).
            let index_item = (i < range.end).then(|| {
                let rel = &idx.name(i)[prefix.len()..];
                match rel.iter().position(|&b| b == b'/') {
                    Some(p) => {
                        let mut key = idx.name(i)[..prefix.len() + p].to_vec();
                        key.push(b'0'); // '/' + 1: the end of the block under this directory
                        let j = idx.lower_bound(&key).min(range.end);
                        key.pop();
                        (rel[..p].to_vec(), true, i..j)
                    }
                    None => {
                        let mut j = i + 1;
                        while j < range.end && idx.name(j) == idx.name(i) {
                            j += 1;
                        }
                        (rel.to_vec(), false, i..j)
                    }
                }
            });
            let tree_item = tree_items.get(ti);
            let order = match (&index_item, tree_item) {
                (None, None) => break,
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (Some((iname, idir, _)), Some((tname, tmode, _))) => {
                    tree_key(tname, *tmode == 0o040000).cmp(&tree_key(iname, *idir))
                }
            };
            let mut path = prefix.to_vec();
            match order {
                Ordering::Less => {
                    let (tname, tmode, toid) = &tree_items[ti];
                    path.extend_from_slice(tname);
                    self.removed(&path, *tmode, *toid)?;
                    ti += 1;
                }
                Ordering::Greater => {
                    let Some((iname, _, block)) = index_item else {
                        break;
                    };
                    path.extend_from_slice(&iname);
                    let _ = path;
                    self.added_block(block.clone());
                    i = block.end;
                }
                Ordering::Equal => {
                    let Some((iname, idir, block)) = index_item else {
                        break;
                    };
                    let (_, tmode, toid) = &tree_items[ti];
                    path.extend_from_slice(&iname);
                    if idir {
                        let sub = self.repo.find_tree(*toid)?;
                        path.push(b'/');
                        let child = node.and_then(|n| {
                            idx.cache_tree[n]
                                .children
                                .iter()
                                .copied()
                                .find(|&c| idx.cache_tree[c].name == iname)
                        });
                        self.level(Some(&sub), &path, child, block.clone())?;
                    } else if let Some(e) = block
                        .clone()
                        .map(|k| idx.entry(k))
                        .find(|e| e.stage() == 0 && !e.intent_to_add())
                    {
                        let (tm, im) = (canon_mode(*tmode), canon_mode(e.mode));
                        if tm != im || toid.as_bytes() != e.oid.as_slice() {
                            let code = if tm & 0o170000 != im & 0o170000 {
                                b'T'
                            } else {
                                b'M'
                            };
                            self.out.push(Change {
                                path,
                                orig: None,
                                code,
                                unmerged: None,
                            });
                        }
                    }
                    ti += 1;
                    i = block.end;
                }
            }
        }
        Ok(())
    }

    /// Everything HEAD has at `path` (a file, or a whole directory) that the index lacks.
    fn removed(&mut self, path: &[u8], mode: u32, oid: Oid) -> Result<(), git2::Error> {
        if mode != 0o040000 {
            let mut o = [0u8; HASH_LEN];
            o.copy_from_slice(oid.as_bytes());
            self.deleted.push(Side {
                path: path.to_vec(),
                oid: o,
                mode: canon_mode(mode),
            });
            return Ok(());
        }
        let sub = self.repo.find_tree(oid)?;
        for e in sub.iter() {
            let mut p = path.to_vec();
            p.push(b'/');
            p.extend_from_slice(e.name_bytes());
            self.removed(&p, e.filemode() as u32, e.id())?;
        }
        Ok(())
    }

    /// Index entries HEAD lacks (unmerged ones are reported apart).
    fn added_block(&mut self, block: std::ops::Range<usize>) {
        for k in block {
            let e = self.idx.entry(k);
            if e.stage() == 0 && !e.intent_to_add() {
                self.added.push(Side {
                    path: self.idx.name(k).to_vec(),
                    oid: e.oid,
                    mode: canon_mode(e.mode),
                });
            }
        }
    }
}

/// A name as git orders tree entries: directories as if followed by `/`.
fn tree_key(name: &[u8], dir: bool) -> Vec<u8> {
    let mut k = name.to_vec();
    if dir {
        k.push(b'/');
    }
    k
}

// ---------------------------------------------------------------------------------------------------------------------
// Running the walks

enum Part {
    Staged(Result<Vec<Change>, git2::Error>),
    Worktree(Result<WorktreePart, git2::Error>),
}

/// Knobs for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default)]
struct Tuning {
    /// Use libgit2 even where the native engine would do.
    force_libgit2: bool,
    /// Work tree walkers (native engine); `None`: by core count and index size.
    workers: Option<usize>,
}

type Job = Box<dyn FnOnce() -> Part + Send>;

/// Reads a file; a large one in two halves on two threads (most of the cost is faulting in fresh pages).
fn read_index_file(path: &Path) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let file = fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
        if (1 << 20..1 << 31).contains(&len) {
            let mut buf = vec![0u8; len];
            let half = len / 2;
            let (a, b) = buf.split_at_mut(half);
            let (ra, rb) = thread::scope(|s| {
                let t = s.spawn(|| file.read_exact_at(b, half as u64));
                (file.read_exact_at(a, 0), t.join())
            });
            ra?;
            rb.unwrap_or_else(|_| Err(std::io::Error::other("reader thread panicked")))?;
            return Ok(buf);
        }
    }
    fs::read(path)
}

/// Reads the index and decides the walks: the native engine when the index and config allow, else libgit2.
fn plan_jobs(
    repo: &Repository,
    handle: &RepoHandle,
    settings: Settings,
    excludes_file: Option<PathBuf>,
    tuning: Tuning,
) -> Vec<(&'static str, Job)> {
    let index_path = repo.path().join("index");
    let buf = read_index_file(&index_path).unwrap_or_default();
    let parsed = if buf.is_empty() {
        Some(ParsedIndex::default())
    } else {
        parse_index(buf)
    };
    let native = settings.native_ok
        && !tuning.force_libgit2
        && parsed.as_ref().is_some_and(|p| !p.unsupported);
    let mut jobs: Vec<(&'static str, Job)> = Vec::with_capacity(4);
    if let (true, Some(index)) = (native, &parsed) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let racy_from = fs::metadata(&index_path).map_or(0, |m| m.mtime() as u32);
            let filters = settings.eol_filters
                || index.has_attributes
                || repo.path().join("info/attributes").is_file();
            let entries = index.len();
            let workers = tuning.workers.unwrap_or_else(|| {
                // More walkers than cores: the work is mostly system calls, and git's preload uses up to 20.
                let cores = thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .clamp(1, 4)
                    * 2;
                cores.min(entries / 1500).max(1)
            });
            let ctx = Arc::new(NativeCtx {
                index: parsed.unwrap_or_default(),
                work_tree: handle.work_tree.clone(),
                handle: handle.clone(),
                settings,
                filters,
                racy_from,
                base_ignores: [
                    excludes_file.as_deref(),
                    Some(&repo.commondir().join("info/exclude")),
                ]
                .into_iter()
                .flatten()
                .filter_map(|p| fs::read(p).ok())
                .map(|t| IgnoreFile::parse(&t))
                .collect(),
            });
            let c = Arc::clone(&ctx);
            jobs.push((
                "git-status-staged",
                Box::new(move || {
                    Part::Staged(match native_staged(&c) {
                        Ok(Some(changes)) => Ok(changes),
                        Ok(None) => staged_changes(&c.handle, c.settings),
                        Err(e) => Err(e),
                    })
                }),
            ));
            // The walkers take directories in small batches from a shared counter, so none idles while another
            // still has a long list.
            let dirs = Arc::new(tracked_dirs(&ctx.index));
            let next = Arc::new(AtomicUsize::new(0));
            for _ in 0..workers {
                let (c, d, n) = (Arc::clone(&ctx), Arc::clone(&dirs), Arc::clone(&next));
                jobs.push((
                    "git-status-worktree",
                    Box::new(move || Part::Worktree(Ok(native::worktree(&c, &d, &n)))),
                ));
            }
            return jobs;
        }
        #[cfg(not(unix))]
        let _ = index;
    }
    // libgit2: HEAD against the index (unless the cache-tree shows nothing is staged) and the work tree.
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_tree().ok())
        .map(|t| t.id());
    let staged = match (&parsed, head) {
        (Some(p), Some(head)) => !p.cache_tree.first().is_some_and(|n| {
            n.name.is_empty() && n.oid.is_some_and(|o| o.as_slice() == head.as_bytes())
        }),
        (Some(p), None) => !p.entries.is_empty(),
        (None, _) => true,
    };
    if staged {
        let h = handle.clone();
        jobs.push((
            "git-status-staged",
            Box::new(move || Part::Staged(staged_changes(&h, settings))),
        ));
    }
    let h = handle.clone();
    jobs.push((
        "git-status-worktree",
        Box::new(move || Part::Worktree(worktree_changes(&h, settings))),
    ));
    jobs
}

/// Starts each job on its own thread; returns the receiver and how many started.
fn spawn_jobs(jobs: Vec<(&'static str, Job)>) -> Result<(mpsc::Receiver<Part>, usize), GitError> {
    let (tx, rx) = mpsc::channel();
    let count = jobs.len();
    for (name, job) in jobs {
        let tx = tx.clone();
        let spawned = thread::Builder::new().name(name.to_owned()).spawn(move || {
            let _ = tx.send(job());
        });
        if let Err(e) = spawned {
            return Err(GitError {
                message: format!("cannot start a status thread: {e}"),
            });
        }
    }
    Ok((rx, count))
}

/// Collects what the walks send until `deadline`; returns the parts and whether all of them arrived.
fn wait_status(
    rx: &mpsc::Receiver<Part>,
    jobs: usize,
    deadline: Instant,
) -> Result<(StatusParts, bool), GitError> {
    let mut parts = StatusParts::default();
    let mut received = 0;
    while received < jobs {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Part::Staged(r)) => parts.staged = r?,
            Ok(Part::Worktree(r)) => {
                let w = r?;
                parts.worktree.extend(w.changes);
                parts.untracked.extend(w.untracked);
            }
            Err(_) => break,
        }
        received += 1;
    }
    Ok((parts, received == jobs))
}

// ---------------------------------------------------------------------------------------------------------------------
// Branch, config and log

fn branch_name(repo: &Repository) -> String {
    match repo.head() {
        Ok(head) if head.is_branch() => {
            String::from_utf8_lossy(head.shorthand_bytes()).into_owned()
        }
        Ok(_) => "HEAD".to_owned(),
        Err(_) => {
            // Unborn branch: the name HEAD points to.
            let target = repo
                .find_reference("HEAD")
                .ok()
                .and_then(|r| r.symbolic_target_bytes().map(<[u8]>::to_vec));
            match target {
                Some(t) => String::from_utf8_lossy(t.strip_prefix(b"refs/heads/").unwrap_or(&t))
                    .into_owned(),
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
            if short.is_empty() {
                "main".to_owned()
            } else {
                String::from_utf8_lossy(short).into_owned()
            }
        }
        None => "main".to_owned(),
    }
}

fn user_name(cfg: &Config) -> Option<String> {
    let entry = cfg.get_entry("user.name").ok()?;
    let v = String::from_utf8_lossy(entry.value_bytes())
        .trim()
        .to_owned();
    (!v.is_empty()).then_some(v)
}

/// Objects in the repository's packs, as git's `repo_approximate_object_count()` counts them (loose objects don't
/// count). Reads only the fan-out table of each pack index.
fn packed_object_count(objects_dir: &Path) -> u64 {
    let Ok(dir) = fs::read_dir(objects_dir.join("pack")) else {
        return 0;
    };
    let mut total = 0u64;
    for entry in dir.flatten() {
        if !entry.file_name().to_string_lossy().ends_with(".idx") {
            continue;
        }
        let mut head = [0u8; 8 + 256 * 4];
        let Ok(mut f) = fs::File::open(entry.path()) else {
            continue;
        };
        if f.read_exact(&mut head).is_err() {
            continue;
        }
        // Version 2 starts with "\xfftOc" and a version word; version 1 starts with the fan-out table.
        let fanout = if head[..4] == [0xff, b't', b'O', b'c'] {
            &head[8..]
        } else {
            &head[..256 * 4]
        };
        total += u64::from(be32(fanout, 255 * 4));
    }
    total
}

fn abbrev_len(repo: &Repository, cfg: &Config) -> usize {
    let auto = || auto_abbrev_len(packed_object_count(&repo.commondir().join("objects")));
    match cfg.get_string("core.abbrev") {
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "auto" => auto(),
            "no" | "false" | "off" => 40,
            n => n
                .parse::<usize>()
                .map_or_else(|_| auto(), |n| n.clamp(4, 40)),
        },
        Err(_) => auto(),
    }
}

/// The shortest abbreviation of `oid` of at least `min` hex digits that no other object shares.
fn unique_abbrev(odb: Option<&git2::Odb<'_>>, oid: Oid, min: usize) -> String {
    let hex = oid.to_string();
    let mut len = min.min(hex.len());
    let Some(odb) = odb else {
        return hex[..len].to_owned();
    };
    while len < hex.len() {
        let Ok(short) = Oid::from_str(&hex[..len]) else {
            break;
        };
        match odb.exists_prefix(short, len) {
            Err(e) if e.code() == ErrorCode::Ambiguous => len += 1,
            _ => break,
        }
    }
    hex[..len].to_owned()
}

fn recent_commits(repo: &Repository, abbrev: usize, n: usize) -> Vec<(String, String)> {
    let Ok(mut walk) = repo.revwalk() else {
        return Vec::new();
    };
    if walk.push_head().is_err() {
        return Vec::new(); // unborn branch
    }
    let odb = repo.odb().ok();
    let mut out = Vec::with_capacity(n);
    for oid in walk.take(n).flatten() {
        let Ok(commit) = repo.find_commit(oid) else {
            break;
        };
        out.push((
            unique_abbrev(odb.as_ref(), oid, abbrev),
            subject(commit.message_bytes()),
        ));
    }
    out
}

/// `core.excludesFile`, or git's default `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
fn excludes_file(cfg: &Config, opts: &GitOptions) -> Option<PathBuf> {
    if let Ok(p) = cfg.get_path("core.excludesFile") {
        return Some(p);
    }
    match &opts.home {
        Some(home) => Some(home.join(".config/git/ignore")),
        None => std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|d| d.join("git/ignore")),
    }
}

// ---------------------------------------------------------------------------------------------------------------------
// The snapshot

/// Takes the snapshot for a session started in `cwd`.
///
/// `Ok(None)` when `cwd` is not inside a git work tree (no repository below the ceiling directories, a bare
/// repository, or `cwd` inside the `.git` directory). `Err` when a repository exists but cannot be read. Never panics.
///
/// Cost: the work tree check runs on worker threads (one `lstat` per tracked file, one directory listing per tracked
/// directory, as git does) while the calling thread reads the branch, config and log; HEAD is compared with the index
/// through the cache-tree, so unchanged directories are not read.
pub fn snapshot(cwd: &Path, opts: &GitOptions) -> Result<Option<GitSnapshot>, GitError> {
    snapshot_tuned(cwd, opts, Tuning::default())
}

fn snapshot_tuned(
    cwd: &Path,
    opts: &GitOptions,
    tuning: Tuning,
) -> Result<Option<GitSnapshot>, GitError> {
    let deadline = Instant::now() + opts.status_timeout;
    let repo = match Repository::open_ext(cwd, RepositoryOpenFlags::empty(), &opts.ceiling_dirs) {
        Ok(r) => r,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(work_tree) = repo.workdir() else {
        return Ok(None);
    };
    let work_tree = work_tree
        .canonicalize()
        .unwrap_or_else(|_| work_tree.to_path_buf());
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
            let mut p = os_to_bytes(rel.as_os_str());
            if cfg!(windows) {
                p.iter_mut()
                    .filter(|b| **b == b'\\')
                    .for_each(|b| *b = b'/');
            }
            p.push(b'/');
            p
        }
        _ => Vec::new(),
    };

    // The walks run on their own threads so that the reads below overlap them.
    let status = if opts.status_timeout.is_zero() {
        None
    } else {
        let handle = RepoHandle {
            git_dir,
            work_tree: work_tree.clone(),
            config: plan,
        };
        let excludes = excludes_file(&cfg, opts);
        Some(spawn_jobs(plan_jobs(
            &repo, &handle, settings, excludes, tuning,
        ))?)
    };

    let branch = branch_name(&repo);
    let main_branch = main_branch(&repo);
    let user_name = user_name(&cfg);
    let abbrev = abbrev_len(&repo, &cfg);
    let commits = recent_commits(&repo, abbrev, RECENT_COMMITS);

    let (parts, status_complete) = match &status {
        Some((rx, jobs)) => wait_status(rx, *jobs, deadline)?,
        None => (StatusParts::default(), false),
    };
    let style = PathStyle {
        prefix: &prefix,
        quote_fully: settings.quote_fully,
    };
    let status_lines = build_lines(&parts, style);
    Ok(Some(GitSnapshot {
        branch,
        main_branch,
        user_name,
        status_lines,
        status_complete,
        commits,
        work_tree,
    }))
}

#[cfg(test)]
mod tests {
    //! Real repositories made with the `git` CLI in temporary directories; every status is compared byte for byte
    //! with `git status --short` run in the same directory, through each engine (native with 1, 3 or the default
    //! number of walkers; libgit2).

    use super::*;
    use std::process::Command;

    const ENGINES: [Tuning; 4] = [
        Tuning {
            force_libgit2: false,
            workers: None,
        },
        Tuning {
            force_libgit2: false,
            workers: Some(1),
        },
        Tuning {
            force_libgit2: false,
            workers: Some(3),
        },
        Tuning {
            force_libgit2: true,
            workers: None,
        },
    ];
    const NATIVE_ONLY: [Tuning; 3] = [ENGINES[0], ENGINES[1], ENGINES[2]];

    struct Fixture {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        home: PathBuf,
        root: PathBuf,
    }

    impl Fixture {
        /// An empty work directory `base/work` (not a repository yet) and a `HOME` without a `.gitconfig`.
        fn new() -> Self {
            let tmp = tempfile::tempdir().expect("tempdir");
            let base = tmp.path().canonicalize().expect("canonical tempdir");
            let home = base.join("home");
            let root = base.join("work");
            fs::create_dir_all(&home).expect("home");
            fs::create_dir_all(&root).expect("work");
            Self {
                _tmp: tmp,
                base,
                home,
                root,
            }
        }

        /// A repository on `branch` with `user.name` set (or not).
        fn repo(branch: &str, user: Option<&str>) -> Self {
            let f = Self::new();
            f.git(&f.root, &["init", "-q", "-b", branch]);
            if let Some(user) = user {
                f.git(&f.root, &["config", "user.name", user]);
                f.git(&f.root, &["config", "user.email", "oracle@example.invalid"]);
            }
            f
        }

        fn cmd(&self, cwd: &Path) -> Command {
            let mut c = Command::new("git");
            c.current_dir(cwd)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &self.home)
                .env("LANG", "C")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CEILING_DIRECTORIES", &self.base)
                .env("GIT_AUTHOR_NAME", "Oracle Tester")
                .env("GIT_AUTHOR_EMAIL", "oracle@example.invalid")
                .env("GIT_COMMITTER_NAME", "Oracle Tester")
                .env("GIT_COMMITTER_EMAIL", "oracle@example.invalid")
                .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
                .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
            c
        }

        fn git(&self, cwd: &Path, args: &[&str]) -> String {
            let out = self.cmd(cwd).args(args).output().expect("run git");
            assert!(
                out.status.success(),
                "git {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).expect("utf-8 git output")
        }

        fn write(&self, rel: &str, content: &str) {
            let p = self.root.join(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, content).expect("write");
        }

        fn commit(&self, msg: &str) {
            self.git(&self.root, &["add", "-A"]);
            self.git(&self.root, &["commit", "-q", "--allow-empty", "-m", msg]);
        }

        fn opts(&self) -> GitOptions {
            GitOptions {
                ceiling_dirs: vec![self.base.clone()],
                status_timeout: Duration::from_secs(60),
                home: Some(self.home.clone()),
                no_system_config: true,
            }
        }

        fn snap_with(&self, cwd: &Path, tuning: Tuning) -> GitSnapshot {
            match snapshot_tuned(cwd, &self.opts(), tuning) {
                Ok(Some(s)) => s,
                other => panic!("no snapshot in {}: {other:?}", cwd.display()),
            }
        }

        fn snap(&self) -> GitSnapshot {
            self.snap_with(&self.root, Tuning::default())
        }

        fn git_status(&self, cwd: &Path) -> Vec<String> {
            let out = self.git(cwd, &["status", "--short"]);
            out.lines().map(str::to_owned).collect()
        }

        /// Our status equals git's, through every engine in `engines`, before and after git refreshes the index.
        fn assert_status_with(&self, cwd: &Path, engines: &[Tuning]) -> Vec<String> {
            let before: Vec<_> = engines
                .iter()
                .map(|t| (*t, self.snap_with(cwd, *t)))
                .collect();
            let git = self.git_status(cwd);
            for (t, s) in before {
                assert_eq!(s.status_lines, git, "engine {t:?}, before git's refresh");
                assert!(s.status_complete);
            }
            for t in engines {
                assert_eq!(
                    self.snap_with(cwd, *t).status_lines,
                    git,
                    "engine {t:?}, after git's refresh"
                );
            }
            git
        }

        fn assert_status(&self, cwd: &Path) -> Vec<String> {
            self.assert_status_with(cwd, &ENGINES)
        }
    }

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    /// The block with each commit hash replaced by `{HASH}`, as the conformance runner compares it.
    fn normalize_hashes(block: &str) -> String {
        let (head, tail) = block
            .split_once("Recent commits:\n")
            .expect("commits section");
        let (commits, rest) = tail.split_once("\n\n").expect("end of commits");
        let commits: Vec<String> = commits
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((h, s)) if h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    format!("{{HASH}} {s}")
                }
                _ => l.to_owned(),
            })
            .collect();
        format!("{head}Recent commits:\n{}\n\n{rest}", commits.join("\n"))
    }

    const BLOCK_HEAD: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status at the start of the conversation. Note that this status is a snapshot in time, and will not update during the conversation.\n\n";
    const BLOCK_TAIL: &str = "\n\nClaude Code attached this context automatically; it isn't part of the user's message. It describes the user's own account and workspace, so they don't need it reported back.\n</system-reminder>";

    // ---- pure formatting ---------------------------------------------------------------------------------------

    fn sample() -> GitSnapshot {
        GitSnapshot {
            branch: "feature/x".into(),
            main_branch: "main".into(),
            user_name: Some("Oracle Tester".into()),
            status_lines: lines(&[" M a.txt", "M  b.txt"]),
            status_complete: true,
            commits: vec![
                ("abc1234".into(), "second".into()),
                ("def5678".into(), "first".into()),
            ],
            work_tree: PathBuf::from("/w"),
        }
    }

    #[test]
    fn render_block_exact_text() {
        let want = format!(
            "{BLOCK_HEAD}Current branch: feature/x\n\nMain branch (you will usually use this for PRs): main\n\nGit user: Oracle Tester\n\nStatus:\n M a.txt\nM  b.txt\n\nRecent commits:\nabc1234 second\ndef5678 first{BLOCK_TAIL}"
        );
        assert_eq!(render_block(&sample()), want);
    }

    #[test]
    fn render_block_without_user_clean_and_no_commits() {
        let s = GitSnapshot {
            user_name: None,
            status_lines: vec![],
            commits: vec![],
            ..sample()
        };
        let want = format!(
            "{BLOCK_HEAD}Current branch: feature/x\n\nMain branch (you will usually use this for PRs): main\n\nStatus:\n(clean)\n\nRecent commits:\n{BLOCK_TAIL}"
        );
        assert_eq!(render_block(&s), want);
        assert!(is_clean(&s));
        assert_eq!(count_changed(&s), 0);
    }

    #[test]
    fn status_text_truncates_at_exactly_2000_characters() {
        let lines: Vec<String> = (1..=300)
            .map(|i| format!("?? untracked_file_with_a_longish_name_{i:03}.txt"))
            .collect();
        let text = status_text(&lines, true);
        let (cut, note) = text.split_at(STATUS_LIMIT);
        assert_eq!(note, TRUNCATION_NOTE);
        assert_eq!(cut, &lines.join("\n")[..STATUS_LIMIT]);
        assert!(
            cut.ends_with("\n?? untracked_file_with"),
            "{}",
            &cut[cut.len() - 40..]
        );
        // Exactly at the limit: no note.
        let exact = vec!["x".repeat(STATUS_LIMIT)];
        assert_eq!(status_text(&exact, true), "x".repeat(STATUS_LIMIT));
    }

    #[test]
    fn status_text_counts_utf16_units_and_keeps_characters_whole() {
        // 1999 ASCII characters then a character outside the BMP (two UTF-16 units): it does not fit.
        let line = format!("{}\u{1F600}tail", "a".repeat(1999));
        let text = status_text(&[line], true);
        assert_eq!(text, format!("{}{TRUNCATION_NOTE}", "a".repeat(1999)));
        // Three-byte characters count one unit each.
        let line = "é".repeat(2000);
        assert_eq!(status_text(std::slice::from_ref(&line), true), line);
    }

    #[test]
    fn status_text_incomplete() {
        assert_eq!(status_text(&[], false), INCOMPLETE_NOTE);
        assert_eq!(
            status_text(&lines(&["M  a"]), false),
            format!("M  a\n{INCOMPLETE_NOTE}")
        );
        let s = GitSnapshot {
            status_complete: false,
            status_lines: vec![],
            ..sample()
        };
        assert!(
            render_block(&s).contains(&format!("Status:\n{INCOMPLETE_NOTE}\n\nRecent commits:"))
        );
        assert!(!is_clean(&s));
    }

    macro_rules! relative {
        ($path:expr, $prefix:expr, $want:expr) => {
            assert_eq!(
                String::from_utf8(relative_path($path.as_bytes(), $prefix.as_bytes())).unwrap(),
                $want,
                "relative_path({:?}, {:?})",
                $path,
                $prefix
            );
        };
    }

    #[test]
    fn relative_paths_like_git() {
        relative!("a.txt", "", "a.txt");
        relative!("sub/a.txt", "sub/", "a.txt");
        relative!("a.txt", "sub/", "../a.txt");
        relative!("other/a.txt", "sub/deep/", "../../other/a.txt");
        relative!("sub/deep/x", "sub/", "deep/x");
        relative!("subx/a", "sub/", "../subx/a");
        relative!("sub/", "sub/", "./");
        relative!("sub/new/", "sub/", "new/");
        relative!("dir/", "sub/deep/", "../../dir/");
    }

    macro_rules! quoted {
        ($path:expr, $fully:expr, $want:expr) => {
            let mut out = Vec::new();
            push_quoted(&mut out, $path, $fully);
            assert_eq!(String::from_utf8_lossy(&out), $want, "quoting {:?}", $path);
        };
    }

    #[test]
    fn quoting_like_git() {
        quoted!(b"plain.txt", true, "plain.txt");
        quoted!(b"a b.txt", true, "\"a b.txt\"");
        quoted!(b"tab\there", true, "\"tab\\there\"");
        quoted!(b"nl\nx", true, "\"nl\\nx\"");
        quoted!(b"q\"uote", true, "\"q\\\"uote\"");
        quoted!(b"back\\slash", true, "\"back\\\\slash\"");
        quoted!("ünï".as_bytes(), true, "\"\\303\\274n\\303\\257\"");
        quoted!("ünï".as_bytes(), false, "ünï");
        quoted!("ü b".as_bytes(), false, "\"ü b\"");
        quoted!(b"\x01\x7f", true, "\"\\001\\177\"");
    }

    #[test]
    fn subjects_like_git_log_oneline() {
        assert_eq!(subject(b"one line\n"), "one line");
        assert_eq!(subject(b"first\nsecond  \n\nbody\n"), "first second");
        assert_eq!(subject(b"\n\n  indented\r\n"), "  indented");
        assert_eq!(subject(b""), "");
    }

    #[test]
    fn abbreviation_grows_with_packed_objects() {
        assert_eq!(auto_abbrev_len(0), 7);
        assert_eq!(auto_abbrev_len(8191), 7);
        assert_eq!(auto_abbrev_len(16384), 8);
        assert_eq!(auto_abbrev_len(22_501), 8);
        assert_eq!(auto_abbrev_len(110_000), 9);
    }

    #[test]
    fn build_lines_orders_tracked_then_untracked() {
        let parts = StatusParts {
            staged: vec![
                Change {
                    path: b"b".to_vec(),
                    orig: Some(b"a".to_vec()),
                    code: b'R',
                    unmerged: None,
                },
                Change {
                    path: b"c".to_vec(),
                    orig: None,
                    code: b'U',
                    unmerged: Some(*b"UU"),
                },
            ],
            worktree: vec![
                Change {
                    path: b"b".to_vec(),
                    orig: None,
                    code: b'M',
                    unmerged: None,
                },
                Change {
                    path: b"a b".to_vec(),
                    orig: None,
                    code: b'D',
                    unmerged: None,
                },
                Change {
                    path: b"c".to_vec(),
                    orig: None,
                    code: b'U',
                    unmerged: Some(*b"UU"),
                },
            ],
            untracked: vec![b"z".to_vec(), b"d/".to_vec(), b"d.txt".to_vec()],
        };
        let got = build_lines(
            &parts,
            PathStyle {
                prefix: b"",
                quote_fully: true,
            },
        );
        assert_eq!(
            got,
            lines(&[
                " D \"a b\"",
                "RM a -> b",
                "UU c",
                "?? d.txt",
                "?? d/",
                "?? z"
            ])
        );
    }

    #[test]
    fn garbage_index_is_rejected() {
        assert_eq!(parse_index(Vec::new()), None);
        assert_eq!(
            parse_index(b"DIRC\0\0\0\x09\0\0\0\0xxxxxxxxxxxxxxxxxxxx".to_vec()),
            None
        );
        let mut short = b"DIRC\0\0\0\x02\0\0\0\x05".to_vec();
        short.extend_from_slice(&[0u8; 40]);
        assert_eq!(parse_index(short), None);
        assert_eq!(parse_cache_tree(b"\0-1 999999999\n"), None);
    }

    // ---- real repositories -------------------------------------------------------------------------------------

    #[test]
    fn dirty_branch_matches_the_reference_block() {
        // The conformance case git_dirty_branch.
        let f = Fixture::repo("main", Some("Oracle Tester"));
        f.write("README.md", "# g\n");
        for name in ["a.txt", "b.txt", "c.txt"] {
            f.write(name, &format!("{}\n", &name[..1]));
        }
        f.commit("initial commit");
        f.write("README.md", "# g\nsecond\n");
        f.commit("second commit: update readme");
        let mut a = String::from("a\n");
        for n in 3..=8 {
            a.push_str(&format!("{n}\n"));
            f.write("a.txt", &a);
            f.commit(&format!("commit number {n}"));
        }
        f.git(&f.root, &["checkout", "-q", "-b", "feature/x"]);
        f.write("a.txt", &format!("{a}mod\n"));
        f.write("b.txt", "b\nstaged\n");
        f.git(&f.root, &["add", "b.txt"]);
        f.git(&f.root, &["rm", "-q", "c.txt"]);
        f.write("untracked.txt", "u\n");

        let status = f.assert_status(&f.root);
        assert_eq!(
            status,
            lines(&[" M a.txt", "M  b.txt", "D  c.txt", "?? untracked.txt"])
        );
        let s = f.snap();
        let log: Vec<String> = f
            .git(&f.root, &["log", "--oneline", "-n", "5"])
            .lines()
            .map(str::to_owned)
            .collect();
        let ours: Vec<String> = s.commits.iter().map(|(h, m)| format!("{h} {m}")).collect();
        assert_eq!(ours, log);
        assert!(s.commits.iter().all(|(h, _)| h.len() == 7));
        let want = format!(
            "{BLOCK_HEAD}Current branch: feature/x\n\nMain branch (you will usually use this for PRs): main\n\nGit user: Oracle Tester\n\nStatus:\n M a.txt\nM  b.txt\nD  c.txt\n?? untracked.txt\n\nRecent commits:\n{{HASH}} commit number 8\n{{HASH}} commit number 7\n{{HASH}} commit number 6\n{{HASH}} commit number 5\n{{HASH}} commit number 4{BLOCK_TAIL}"
        );
        assert_eq!(normalize_hashes(&render_block(&s)), want);
        assert_eq!(s.work_tree, f.root);
        assert_eq!(count_changed(&s), 4);
    }

    #[test]
    fn no_user_name_omits_the_line() {
        // The conformance case git_no_user.
        let f = Fixture::repo("trunk", None);
        f.write("file.txt", "x\n");
        f.commit("c1");
        f.assert_status(&f.root);
        let s = f.snap();
        assert_eq!(s.user_name, None);
        let want = format!(
            "{BLOCK_HEAD}Current branch: trunk\n\nMain branch (you will usually use this for PRs): main\n\nStatus:\n(clean)\n\nRecent commits:\n{{HASH}} c1{BLOCK_TAIL}"
        );
        assert_eq!(normalize_hashes(&render_block(&s)), want);
    }

    #[test]
    fn user_name_from_global_config() {
        let f = Fixture::repo("main", None);
        fs::write(
            f.home.join(".gitconfig"),
            "[user]\n\tname = Global Person\n",
        )
        .expect("gitconfig");
        f.commit("c1");
        assert_eq!(f.snap().user_name.as_deref(), Some("Global Person"));
        f.git(&f.root, &["config", "user.name", "Local Person"]);
        assert_eq!(f.snap().user_name.as_deref(), Some("Local Person"));
    }

    #[test]
    fn truncated_status_matches_the_reference() {
        // The conformance case git_status_truncated.
        let f = Fixture::repo("main", Some("Oracle Tester"));
        f.write("README.md", "# big\n");
        f.commit("initial commit");
        f.write("README.md", "# big\nsecond\n");
        f.commit("second commit: update readme");
        for i in 1..=300 {
            f.write(
                &format!("untracked_file_with_a_longish_name_{i:03}.txt"),
                "u\n",
            );
        }
        let status = f.assert_status(&f.root);
        assert_eq!(status.len(), 300);
        let block = render_block(&f.snap());
        let listed: String = (1..=43)
            .map(|i| format!("?? untracked_file_with_a_longish_name_{i:03}.txt\n"))
            .collect();
        let want_status = format!(
            "Status:\n{listed}?? untracked_file_with{TRUNCATION_NOTE}\n\nRecent commits:\n"
        );
        assert!(block.contains(&want_status), "{block}");
    }

    #[test]
    fn clean_repository() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.write("d/b.txt", "b\n");
        f.commit("init");
        assert!(f.assert_status(&f.root).is_empty());
        let s = f.snap();
        assert!(is_clean(&s));
        assert!(render_block(&s).contains("Status:\n(clean)\n\n"));
    }

    #[test]
    fn staged_renames_and_modifications() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "alpha\nbeta\ngamma\ndelta\n");
        f.write("b.txt", "one\ntwo\nthree\nfour\n");
        f.write("dir/c.txt", "c content that is long enough\n");
        f.write("dir/keep.txt", "keep\n");
        f.write("gone/x.txt", "x\n");
        f.write("gone/y.txt", "y\n");
        f.commit("init");
        f.git(&f.root, &["mv", "a.txt", "renamed.txt"]);
        f.git(&f.root, &["mv", "b.txt", "b2.txt"]);
        f.write("b2.txt", "one\ntwo\nthree\nfour\nfive\n");
        fs::create_dir_all(f.root.join("moved")).expect("mkdir");
        f.git(&f.root, &["mv", "dir/c.txt", "moved/c.txt"]);
        f.git(&f.root, &["rm", "-q", "-r", "gone"]);
        f.write("dir/keep.txt", "keep\nstaged\n");
        f.git(&f.root, &["add", "dir/keep.txt"]);
        f.write("dir/keep.txt", "keep\nstaged\nand not\n");
        f.write("new/deep/file.txt", "n\n");
        f.git(&f.root, &["add", "new"]);
        let status = f.assert_status(&f.root);
        assert!(
            status.contains(&"R  a.txt -> renamed.txt".to_owned()),
            "{status:?}"
        );
        assert!(
            status.contains(&"RM b.txt -> b2.txt".to_owned()),
            "{status:?}"
        );
        assert!(status.contains(&"MM dir/keep.txt".to_owned()), "{status:?}");
    }

    #[test]
    fn inexact_rename_goes_through_similarity() {
        let f = Fixture::repo("main", Some("U"));
        let body: String = (0..40).map(|i| format!("line {i}\n")).collect();
        f.write("old.txt", &body);
        f.commit("init");
        fs::remove_file(f.root.join("old.txt")).expect("rm");
        f.write("new.txt", &format!("{body}one more\n"));
        f.git(&f.root, &["add", "-A"]);
        let status = f.assert_status(&f.root);
        assert_eq!(status, lines(&["R  old.txt -> new.txt"]));
    }

    #[test]
    fn renames_off_by_config() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "same\n");
        f.commit("init");
        f.git(&f.root, &["config", "status.renames", "false"]);
        f.git(&f.root, &["mv", "a.txt", "b.txt"]);
        assert_eq!(f.assert_status(&f.root), lines(&["D  a.txt", "A  b.txt"]));
    }

    #[test]
    fn paths_relative_to_a_subdirectory() {
        let f = Fixture::repo("main", Some("U"));
        f.write("top.txt", "t\n");
        f.write("sub/here.txt", "h\n");
        f.write("sub/deep/d.txt", "d\n");
        f.write("other/o.txt", "o\n");
        f.commit("init");
        f.write("top.txt", "t2\n");
        f.write("sub/here.txt", "h2\n");
        f.write("sub/deep/d.txt", "d2\n");
        f.write("other/o.txt", "o2\n");
        f.write("other/new/n.txt", "n\n");
        f.write("sub/fresh.txt", "f\n");
        f.git(&f.root, &["mv", "top.txt", "sub/top.txt"]);
        let sub = f.root.join("sub");
        let status = f.assert_status(&sub);
        assert!(
            status.contains(&"RM ../top.txt -> top.txt".to_owned()),
            "{status:?}"
        );
        assert!(
            status.contains(&"?? ../other/new/".to_owned()),
            "{status:?}"
        );
        f.assert_status(&sub.join("deep"));
        f.git(&f.root, &["config", "status.relativePaths", "false"]);
        let status = f.assert_status(&sub);
        assert!(status.contains(&"?? other/new/".to_owned()), "{status:?}");
    }

    #[test]
    fn cwd_inside_an_untracked_directory() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("u/v/file.txt", "x\n");
        let status = f.assert_status(&f.root.join("u/v"));
        assert_eq!(status, lines(&["?? ../"]));
    }

    #[test]
    fn unusual_paths_are_quoted() {
        let f = Fixture::repo("main", Some("U"));
        let names = [
            "a b.txt",
            "ünï.txt",
            "tab\there.txt",
            "quo\"te.txt",
            "back\\slash.txt",
            "dir with space/f.txt",
        ];
        for n in names {
            f.write(n, "x\n");
        }
        f.commit("init");
        for n in names {
            f.write(n, "changed\n");
        }
        f.write("new ü/x.txt", "n\n");
        f.write("new ü.txt", "n\n");
        let status = f.assert_status(&f.root);
        assert!(status.contains(&" M \"a b.txt\"".to_owned()), "{status:?}");
        assert!(
            status.contains(&" M \"\\303\\274n\\303\\257.txt\"".to_owned()),
            "{status:?}"
        );
        f.git(&f.root, &["config", "core.quotePath", "false"]);
        let status = f.assert_status(&f.root);
        assert!(status.contains(&" M ünï.txt".to_owned()), "{status:?}");
    }

    #[test]
    fn unborn_branch() {
        let f = Fixture::repo("trunk", Some("U"));
        let s = f.snap();
        assert_eq!(s.branch, "trunk");
        assert!(s.commits.is_empty());
        assert!(s.status_lines.is_empty());
        assert!(render_block(&s).contains("Recent commits:\n\n\nClaude Code attached"));
        f.write("a.txt", "a\n");
        f.write("d/b.txt", "b\n");
        f.write("staged.txt", "s\n");
        f.git(&f.root, &["add", "staged.txt", "d"]);
        f.write("d/b.txt", "b2\n");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&["AM d/b.txt", "A  staged.txt", "?? a.txt"])
        );
        assert!(f.snap().commits.is_empty());
    }

    #[test]
    fn detached_head_and_origin_head() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("one");
        f.write("a.txt", "b\n");
        f.commit("two");
        assert_eq!(f.snap().main_branch, "main");
        f.git(
            &f.root,
            &["update-ref", "refs/remotes/origin/develop", "HEAD"],
        );
        f.git(
            &f.root,
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/remotes/origin/develop",
            ],
        );
        assert_eq!(f.snap().main_branch, "develop");
        f.git(&f.root, &["checkout", "-q", "--detach", "HEAD~1"]);
        let s = f.snap();
        assert_eq!(s.branch, "HEAD");
        assert_eq!(s.commits.len(), 1);
        assert_eq!(s.commits[0].1, "one");
        f.assert_status(&f.root);
    }

    #[test]
    fn log_lists_five_newest_with_gits_subjects() {
        let f = Fixture::repo("main", Some("U"));
        for i in 0..7 {
            f.write("a.txt", &format!("{i}\n"));
            f.commit(&format!(
                "change {i}\nwrapped subject line\n\nbody text {i}"
            ));
        }
        let s = f.snap();
        let ours: Vec<String> = s.commits.iter().map(|(h, m)| format!("{h} {m}")).collect();
        let log: Vec<String> = f
            .git(&f.root, &["log", "--oneline", "-n", "5"])
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, log);
        assert_eq!(s.commits[0].1, "change 6 wrapped subject line");
        f.git(&f.root, &["config", "core.abbrev", "12"]);
        let log: Vec<String> = f
            .git(&f.root, &["log", "--oneline", "-n", "5"])
            .lines()
            .map(str::to_owned)
            .collect();
        let ours: Vec<String> = f
            .snap()
            .commits
            .iter()
            .map(|(h, m)| format!("{h} {m}"))
            .collect();
        assert_eq!(ours, log);
    }

    #[test]
    fn not_a_repository_and_ceilings() {
        let f = Fixture::new();
        fs::create_dir_all(f.root.join("plain")).expect("mkdir");
        assert_eq!(snapshot(&f.root.join("plain"), &f.opts()), Ok(None));
        assert_eq!(snapshot(&f.root.join("missing"), &f.opts()), Ok(None));
        // A repository above the ceiling is not found.
        f.git(&f.root, &["init", "-q", "-b", "main"]);
        let inner = f.root.join("inner");
        fs::create_dir_all(&inner).expect("mkdir");
        let mut opts = f.opts();
        opts.ceiling_dirs = vec![f.root.clone()];
        assert_eq!(snapshot(&inner, &opts), Ok(None));
        assert!(snapshot(&inner, &f.opts()).expect("ok").is_some());
        // Inside .git is not a work tree.
        assert_eq!(snapshot(&f.root.join(".git"), &f.opts()), Ok(None));
        // A bare repository.
        let bare = f.base.join("bare.git");
        f.git(
            &f.base,
            &["init", "-q", "--bare", bare.to_str().expect("utf-8")],
        );
        assert_eq!(snapshot(&bare, &f.opts()), Ok(None));
    }

    #[test]
    fn ignored_and_empty_directories() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitignore", "*.log\nbuild/\n!keep.log\n/rootonly\n");
        f.write("src/a.txt", "a\n");
        f.write("build/tracked.txt", "t\n");
        f.git(&f.root, &["add", "-f", "build/tracked.txt"]);
        f.commit("init");
        f.write("x.log", "l\n");
        f.write("keep.log", "k\n");
        f.write("only-ignored/a.log", "l\n");
        f.write("only-ignored/deeper/b.log", "l\n");
        fs::create_dir_all(f.root.join("empty/inner")).expect("mkdir");
        f.write("mixed/a.log", "l\n");
        f.write("mixed/deep/real.txt", "r\n");
        f.write("build/new.txt", "n\n");
        f.write("src/build/x.txt", "x\n");
        f.write("src/new.txt", "n\n");
        f.write("src/rootonly", "r\n");
        f.write("rootonly", "r\n");
        f.write("sub/.gitignore", "*.tmp\n");
        f.write("sub/a.tmp", "t\n");
        f.write("sub/b.txt", "b\n");
        let status = f.assert_status(&f.root);
        assert!(status.contains(&"?? keep.log".to_owned()), "{status:?}");
        assert!(status.contains(&"?? mixed/".to_owned()), "{status:?}");
        assert!(
            !status
                .iter()
                .any(|l| l.contains("only-ignored") || l.contains("empty")),
            "{status:?}"
        );
    }

    #[test]
    fn gitignore_patterns_like_git() {
        let f = Fixture::repo("main", Some("U"));
        f.write(
            ".gitignore",
            "# comment\n*.log\n!important.log\n/anchored.txt\ndocs/*.md\ndeep/**/x.txt\n**/any/y.txt\ntrail/\n\
             space\\ \nnoescape   \n*.[oa]\n[!k]eep.bin\na?c.txt\n{brace}.txt\nsub/**\n\\#hash\n\\!bang\ndir*/\n\
             crlf.txt\r\nmid/**/end\nx**y\n",
        );
        f.write("n/.gitignore", "*.tmp\n!keep.tmp\n/root-in-n.txt\n");
        f.write(".git/info/exclude", "from-exclude.txt\n");
        let global = f.home.join("global-ignore");
        fs::write(&global, "from-global.txt\n").expect("write");
        let cfg = format!("[core]\n\texcludesFile = {}\n", global.display());
        fs::write(f.home.join(".gitconfig"), cfg).expect("write");
        f.write("tracked.txt", "t\n");
        f.commit("init");
        for p in [
            "a.log",
            "important.log",
            "deeper/b.log",
            "deeper/important.log",
            "anchored.txt",
            "n/anchored.txt",
            "docs/a.md",
            "docs/sub/b.md",
            "other/docs/a.md",
            "deep/x.txt",
            "deep/1/2/x.txt",
            "any/y.txt",
            "q/any/y.txt",
            "trail/f",
            "trail",
            "t2/trail/f",
            "space ",
            "noescape",
            "m.o",
            "m.a",
            "m.c",
            "keep.bin",
            "reep.bin",
            "abc.txt",
            "a/c.txt",
            "{brace}.txt",
            "brace.txt",
            "sub/s.txt",
            "sub/d/s.txt",
            "#hash",
            "!bang",
            "dirx/f",
            "dirfile",
            "crlf.txt",
            "mid/end",
            "mid/a/b/end",
            "xay",
            "x/y",
            "n/a.tmp",
            "n/keep.tmp",
            "n/root-in-n.txt",
            "n/deeper/root-in-n.txt",
            "root-in-n.txt",
            "from-exclude.txt",
            "from-global.txt",
            "plain.txt",
        ] {
            if p == "trail" {
                continue; // a file named like a directory-only pattern: below
            }
            f.write(p, "x\n");
        }
        f.write("trail-file/trail", "x\n");
        f.assert_status(&f.root);
        f.git(&f.root, &["config", "status.showUntrackedFiles", "all"]);
        let status = f.assert_status(&f.root);
        for shown in [
            "?? important.log",
            "?? n/keep.tmp",
            "?? plain.txt",
            "?? trail-file/trail",
            "?? m.c",
        ] {
            assert!(status.contains(&shown.to_owned()), "{shown} in {status:?}");
        }
        for hidden in [
            "a.log",
            "from-exclude.txt",
            "from-global.txt",
            "n/a.tmp",
            "sub/s.txt",
            "deep/1/2/x.txt",
        ] {
            assert!(
                !status.iter().any(|l| l.ends_with(hidden)),
                "{hidden} in {status:?}"
            );
        }
        // Without core.excludesFile, git reads ~/.config/git/ignore (libgit2 looks at the process's $HOME).
        fs::remove_file(f.home.join(".gitconfig")).expect("rm");
        f.write("../home/.config/git/ignore", "plain.txt\n");
        let status = f.assert_status_with(&f.root, &NATIVE_ONLY);
        assert!(!status.contains(&"?? plain.txt".to_owned()), "{status:?}");
        assert!(
            status.contains(&"?? from-global.txt".to_owned()),
            "{status:?}"
        );
    }

    #[test]
    fn ignore_file_rules() {
        let f = IgnoreFile::parse(b"*.log\n!keep.log\nbuild/\n/top\na/**/b\n# c\n\n  \nsp\\ \n");
        assert!(!f.exotic);
        assert_eq!(f.matched(b"x.log", false), Some(true));
        assert_eq!(f.matched(b"d/x.log", false), Some(true));
        assert_eq!(f.matched(b"keep.log", false), Some(false));
        assert_eq!(f.matched(b"build", true), Some(true));
        assert_eq!(f.matched(b"build", false), None);
        assert_eq!(f.matched(b"top", false), Some(true));
        assert_eq!(f.matched(b"d/top", false), None);
        assert_eq!(f.matched(b"a/b", false), Some(true));
        assert_eq!(f.matched(b"a/x/y/b", false), Some(true));
        assert_eq!(f.matched(b"sp ", false), Some(true));
        assert_eq!(f.matched(b"other", false), None);
        assert!(IgnoreFile::parse(b"[[:alpha:]]\n").exotic);
        assert!(IgnoreFile::parse(b"[unclosed\n").exotic);
        assert_eq!(trim_trailing_spaces(b"a  "), b"a");
        assert_eq!(trim_trailing_spaces(b"a\\  "), b"a\\ ");
        assert_eq!(
            translate_pattern("a**b/**/c{d}").as_deref(),
            Some("a*b/**/c\\{d\\}")
        );
    }

    #[test]
    fn show_untracked_files_all_and_no() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitignore", "*.log\n");
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("a.txt", "a2\n");
        f.write("u/one.txt", "1\n");
        f.write("u/deep/two.txt", "2\n");
        f.write("u/deep/skip.log", "s\n");
        f.write("top.txt", "t\n");
        f.assert_status(&f.root);
        f.git(&f.root, &["config", "status.showUntrackedFiles", "all"]);
        let status = f.assert_status(&f.root);
        assert!(
            status.contains(&"?? u/deep/two.txt".to_owned()),
            "{status:?}"
        );
        f.git(&f.root, &["config", "status.showUntrackedFiles", "no"]);
        assert_eq!(f.assert_status(&f.root), lines(&[" M a.txt"]));
    }

    #[test]
    #[cfg(unix)]
    fn type_and_mode_changes() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let f = Fixture::repo("main", Some("U"));
        for n in [
            "to-link",
            "to-dir",
            "exec",
            "same",
            "gone-dir/a",
            "gone-dir/b",
        ] {
            f.write(n, "content\n");
        }
        symlink("same", f.root.join("link")).expect("symlink");
        f.commit("init");
        fs::remove_file(f.root.join("to-link")).expect("rm");
        symlink("same", f.root.join("to-link")).expect("symlink");
        fs::remove_file(f.root.join("to-dir")).expect("rm");
        f.write("to-dir/inside.txt", "i\n");
        fs::set_permissions(f.root.join("exec"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::remove_dir_all(f.root.join("gone-dir")).expect("rm");
        fs::remove_file(f.root.join("link")).expect("rm");
        symlink("elsewhere", f.root.join("link")).expect("symlink");
        let status = f.assert_status(&f.root);
        assert!(status.contains(&" T to-link".to_owned()), "{status:?}");
        assert!(status.contains(&" M exec".to_owned()), "{status:?}");
        assert!(status.contains(&" M link".to_owned()), "{status:?}");
        assert!(status.contains(&" D to-dir".to_owned()), "{status:?}");
    }

    #[test]
    fn tracked_directory_replaced_by_a_file() {
        let f = Fixture::repo("main", Some("U"));
        f.write("d/a.txt", "a\n");
        f.write("d/e/b.txt", "b\n");
        f.commit("init");
        fs::remove_dir_all(f.root.join("d")).expect("rm");
        f.write("d", "now a file\n");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[" D d/a.txt", " D d/e/b.txt", "?? d"])
        );
    }

    #[test]
    #[cfg(unix)]
    fn tracked_directory_replaced_by_a_symlink() {
        let f = Fixture::repo("main", Some("U"));
        f.write("d/a.txt", "a\n");
        f.write("target/a.txt", "a\n");
        f.commit("init");
        fs::remove_dir_all(f.root.join("d")).expect("rm");
        std::os::unix::fs::symlink("target", f.root.join("d")).expect("symlink");
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&[" D d/a.txt", "?? d"])
        );
    }

    #[test]
    fn index_flags_assume_unchanged_skip_worktree_intent_to_add() {
        let f = Fixture::repo("main", Some("U"));
        f.write("assumed.txt", "a\n");
        f.write("skipped.txt", "s\n");
        f.write("plain.txt", "p\n");
        f.commit("init");
        f.git(
            &f.root,
            &["update-index", "--assume-unchanged", "assumed.txt"],
        );
        f.write("assumed.txt", "changed\n");
        f.write("plain.txt", "changed\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M plain.txt"]));
        f.git(&f.root, &["update-index", "--skip-worktree", "skipped.txt"]);
        f.write("skipped.txt", "changed\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M plain.txt"]));
        f.write("intent.txt", "i\n");
        f.git(&f.root, &["add", "-N", "intent.txt"]);
        // (libgit2 shows `AM` here; only the native engine matches git.)
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&[" A intent.txt", " M plain.txt"])
        );
        fs::remove_file(f.root.join("intent.txt")).expect("rm");
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&[" D intent.txt", " M plain.txt"])
        );
    }

    #[test]
    #[cfg(unix)]
    fn staged_type_and_mode_changes() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let f = Fixture::repo("main", Some("U"));
        f.write("exec", "x\n");
        f.write("to-link", "t\n");
        f.write("d/deep/file", "f\n");
        f.write("d/other", "o\n");
        f.commit("init");
        fs::set_permissions(f.root.join("exec"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::remove_file(f.root.join("to-link")).expect("rm");
        symlink("exec", f.root.join("to-link")).expect("symlink");
        fs::remove_dir_all(f.root.join("d/deep")).expect("rm");
        f.write("d/deep", "now a file\n");
        f.git(&f.root, &["add", "-A"]);
        assert_eq!(
            f.assert_status(&f.root),
            lines(&["A  d/deep", "D  d/deep/file", "M  exec", "T  to-link"])
        );
    }

    #[test]
    fn same_size_edit_right_after_commit_is_seen() {
        // Racily clean entries: the stat data may match, so the content must be compared.
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "aaaa\n");
        f.write("b.txt", "bbbb\n");
        f.commit("init");
        f.write("a.txt", "xxxx\n");
        let status = f.assert_status(&f.root);
        assert_eq!(status, lines(&[" M a.txt"]));
        // Touched but unchanged content: clean.
        f.write("b.txt", "bbbb\n");
        assert_eq!(f.assert_status(&f.root), lines(&[" M a.txt"]));
    }

    #[test]
    fn merge_conflicts_show_unmerged_codes() {
        let f = Fixture::repo("main", Some("U"));
        f.write("both.txt", "base\n");
        f.write("theirs-deletes.txt", "base\n");
        f.write("ours-deletes.txt", "base\n");
        f.write("clean.txt", "c\n");
        f.commit("base");
        f.git(&f.root, &["checkout", "-q", "-b", "other"]);
        f.write("both.txt", "other\n");
        f.write("added.txt", "other\n");
        f.write("ours-deletes.txt", "other\n");
        fs::remove_file(f.root.join("theirs-deletes.txt")).expect("rm");
        f.commit("other");
        f.git(&f.root, &["checkout", "-q", "main"]);
        f.write("both.txt", "main\n");
        f.write("added.txt", "main\n");
        f.write("theirs-deletes.txt", "main\n");
        fs::remove_file(f.root.join("ours-deletes.txt")).expect("rm");
        f.commit("main");
        let out = f
            .cmd(&f.root)
            .args(["merge", "-q", "other"])
            .output()
            .expect("merge");
        assert!(!out.status.success(), "the merge should conflict");
        f.write("clean.txt", "c2\n");
        let status = f.assert_status(&f.root);
        for want in [
            "AA added.txt",
            "UU both.txt",
            "DU ours-deletes.txt",
            "UD theirs-deletes.txt",
            " M clean.txt",
        ] {
            assert!(status.contains(&want.to_owned()), "{want} in {status:?}");
        }
    }

    #[test]
    fn nested_repository_and_submodule() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        // An untracked nested repository shows as a directory, even when empty (libgit2 hides an empty one).
        f.git(&f.root, &["init", "-q", "nested"]);
        assert_eq!(
            f.assert_status_with(&f.root, &NATIVE_ONLY),
            lines(&["?? nested/"])
        );
        f.write("nested/n.txt", "n\n");
        assert_eq!(f.assert_status(&f.root), lines(&["?? nested/"]));
        fs::remove_dir_all(f.root.join("nested")).expect("rm");
        // A submodule: modified content, untracked content, new commits.
        let src = f.base.join("subsrc");
        fs::create_dir_all(&src).expect("mkdir");
        f.git(&src, &["init", "-q", "-b", "main"]);
        fs::write(src.join("s.txt"), "s\n").expect("write");
        f.git(&src, &["add", "."]);
        f.git(&src, &["commit", "-q", "-m", "s"]);
        f.git(
            &f.root,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                src.to_str().expect("utf-8"),
                "sub",
            ],
        );
        f.commit("add sub");
        assert!(f.assert_status(&f.root).is_empty());
        fs::write(f.root.join("sub/new.txt"), "n\n").expect("write");
        assert_eq!(f.assert_status(&f.root), lines(&[" ? sub"]));
        fs::write(f.root.join("sub/s.txt"), "changed\n").expect("write");
        assert_eq!(f.assert_status(&f.root), lines(&[" m sub"]));
        f.git(&f.root.join("sub"), &["commit", "-q", "-am", "inner"]);
        assert_eq!(f.assert_status(&f.root), lines(&[" M sub"]));
    }

    #[test]
    fn index_version_4() {
        let f = Fixture::repo("main", Some("U"));
        for i in 0..30 {
            f.write(&format!("dir{}/sub/file{i}.txt", i % 4), &format!("{i}\n"));
        }
        f.commit("init");
        f.git(&f.root, &["update-index", "--index-version", "4"]);
        f.write("dir1/sub/file1.txt", "changed\n");
        f.write("dir2/new.txt", "n\n");
        fs::remove_file(f.root.join("dir3/sub/file3.txt")).expect("rm");
        let buf = fs::read(f.root.join(".git/index")).expect("index");
        let idx = parse_index(buf).expect("v4 index parses");
        assert_eq!(idx.entries.len(), 30);
        assert_eq!(idx.name(0), b"dir0/sub/file0.txt");
        assert_eq!(
            f.assert_status(&f.root),
            lines(&[
                " M dir1/sub/file1.txt",
                " D dir3/sub/file3.txt",
                "?? dir2/new.txt"
            ])
        );
    }

    #[test]
    fn parsed_index_agrees_with_ls_files() {
        let f = Fixture::repo("main", Some("U"));
        for i in 0..50 {
            f.write(&format!("d{}/e{}/f{i}.txt", i % 5, i % 3), "x\n");
        }
        f.write("top.txt", "t\n");
        f.commit("init");
        let buf = fs::read(f.root.join(".git/index")).expect("index");
        let idx = parse_index(buf).expect("parses");
        let names: Vec<String> = (0..idx.entries.len())
            .map(|i| String::from_utf8_lossy(idx.name(i)).into_owned())
            .collect();
        let ls: Vec<String> = f
            .git(&f.root, &["ls-files"])
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(names, ls);
        let head = f.git(&f.root, &["rev-parse", "HEAD^{tree}"]);
        let root = idx
            .cache_tree
            .first()
            .and_then(|n| n.oid)
            .expect("valid cache-tree root");
        assert_eq!(
            Oid::from_bytes(&root).expect("oid").to_string(),
            head.trim()
        );
        let dirs = tracked_dirs(&idx);
        assert_eq!(dirs.len(), 1 + 5 + 15);
        assert_eq!(dirs.iter().map(|d| d.direct.len()).sum::<usize>(), 51);
        assert!(dirs[0].path.is_empty() && dirs[0].direct.len() == 1);
        assert!(!idx.has_attributes);
    }

    #[test]
    fn line_endings_through_attributes() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitattributes", "*.txt text eol=crlf\n");
        f.write("a.txt", "one\ntwo\n");
        f.write("b.txt", "b\n");
        f.commit("init");
        // Check out again so the work tree has CRLF, then touch without changing the content.
        fs::remove_file(f.root.join("a.txt")).expect("rm");
        f.git(&f.root, &["checkout", "--", "a.txt"]);
        let crlf = fs::read(f.root.join("a.txt")).expect("read");
        assert_eq!(crlf, b"one\r\ntwo\r\n");
        fs::write(f.root.join("a.txt"), &crlf).expect("touch");
        f.write("b.txt", "c\r\n");
        let status = f.assert_status_with(&f.root, &NATIVE_ONLY);
        assert_eq!(status, lines(&[" M b.txt"]));
    }

    #[test]
    fn linked_worktree() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.write("d/b.txt", "b\n");
        f.commit("init");
        let wt = f.base.join("wt");
        f.git(
            &f.root,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "side",
                wt.to_str().expect("utf-8"),
            ],
        );
        fs::write(wt.join("a.txt"), "changed\n").expect("write");
        fs::write(wt.join("new.txt"), "n\n").expect("write");
        let status = f.assert_status(&wt);
        assert_eq!(status, lines(&[" M a.txt", "?? new.txt"]));
        let s = f.snap_with(&wt, Tuning::default());
        assert_eq!(s.branch, "side");
        assert_eq!(s.work_tree, wt);
        assert_eq!(s.user_name.as_deref(), Some("U"));
        assert!(f.assert_status(&f.root).is_empty());
    }

    #[test]
    fn zero_timeout_reports_an_incomplete_status() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "a\n");
        f.commit("init");
        f.write("a.txt", "b\n");
        let mut opts = f.opts();
        opts.status_timeout = Duration::ZERO;
        let s = snapshot(&f.root, &opts).expect("ok").expect("repo");
        assert!(!s.status_complete);
        assert!(s.status_lines.is_empty());
        assert_eq!(s.commits.len(), 1);
        assert!(render_block(&s).contains(INCOMPLETE_NOTE));
    }

    #[test]
    fn options_from_env_parse_ceilings() {
        let o = GitOptions::from_env();
        assert_eq!(o.status_timeout, Duration::from_secs(5));
        assert!(o.ceiling_dirs.iter().all(|p| !p.as_os_str().is_empty()));
        assert_eq!(parse_git_bool("Yes"), Some(true));
        assert_eq!(parse_git_bool("off"), Some(false));
        assert_eq!(parse_git_bool("maybe"), None);
    }
}
