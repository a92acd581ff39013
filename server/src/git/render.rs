//! Pure formatting: the `<system-reminder>` block, the status text (cut at [`STATUS_LIMIT`] UTF-16 code units), and
//! the `git status --short` lines built from the walks' results (paths made relative and quoted as git does).

use std::collections::BTreeMap;

use super::{GitSnapshot, StatusProblem};

/// The status is cut at this many characters (UTF-16 code units, as the reference CLI counts them).
pub const STATUS_LIMIT: usize = 2000;

/// Appended after a status cut at [`STATUS_LIMIT`].
pub const TRUNCATION_NOTE: &str = "\n... (truncated because it exceeds 2k characters. If you need more information, run \"git status\" using Bash)";

/// Our own text in place of the status when there is none: `(status unavailable: <why>. Run "git status" using
/// Bash for it.)`. This is its start.
pub const UNAVAILABLE_NOTE: &str = "(status unavailable: ";

const HEADER: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status at the start of the conversation. Note that this status is a snapshot in time, and will not update during the conversation.\n\n";

const ATTRIBUTION: &str = "Claude Code attached this context automatically; it isn't part of the user's message. It describes the user's own account and workspace, so they don't need it reported back.";

/// The exact `<system-reminder>` block.
pub fn render_block(s: &GitSnapshot) -> String {
    let status = status_text(&s.status_lines, s.status_problem.as_ref());
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
/// with [`TRUNCATION_NOTE`]; or, when there is no status, [`UNAVAILABLE_NOTE`] and why (never partial lines: a
/// line from half a walk could be wrong).
pub fn status_text(lines: &[String], problem: Option<&StatusProblem>) -> String {
    if let Some(p) = problem {
        let why: String = p
            .message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        return format!(
            "{UNAVAILABLE_NOTE}{}. Run \"git status\" using Bash for it.)",
            why.trim_end_matches('.')
        );
    }
    let mut text = lines.join("\n");
    if let Some(cut) = cut_utf16(&text, STATUS_LIMIT) {
        text.truncate(cut);
        text.push_str(TRUNCATION_NOTE);
    }
    if text.is_empty() {
        text.push_str("(clean)");
    }
    text
}

/// The number of lines `git status --short` printed (changed, unmerged and untracked entries).
pub fn count_changed(s: &GitSnapshot) -> usize {
    s.status_lines.len()
}

/// True when the work tree has no changes (and the status is known).
pub fn is_clean(s: &GitSnapshot) -> bool {
    s.status_problem.is_none() && s.status_lines.is_empty()
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
pub(super) struct PathStyle<'a> {
    pub(super) prefix: &'a [u8],
    pub(super) quote_fully: bool,
}

impl PathStyle<'_> {
    fn push(&self, out: &mut Vec<u8>, path: &[u8]) {
        push_quoted(out, &relative_path(path, self.prefix), self.quote_fully);
    }
}

/// One tracked path's change on one side (HEAD→index or index→work tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) path: Vec<u8>,
    /// The source of a rename or copy (HEAD→index only).
    pub(super) orig: Option<Vec<u8>>,
    /// The status letter (`M`, `A`, `D`, `R`, `C`, `T`, and `m` / `?` for submodules).
    pub(super) code: u8,
    /// The two-letter code of an unmerged path (overrides both sides).
    pub(super) unmerged: Option<[u8; 2]>,
}

/// What the two walks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct StatusParts {
    pub(super) staged: Vec<Change>,
    pub(super) worktree: Vec<Change>,
    pub(super) untracked: Vec<Vec<u8>>,
}

/// The `git status --short` lines: tracked changes sorted by path, then untracked entries sorted by path.
pub(super) fn build_lines(parts: &StatusParts, style: PathStyle<'_>) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_support::{BLOCK_HEAD, BLOCK_TAIL, Fixture, lines};
    use std::path::PathBuf;

    fn sample() -> GitSnapshot {
        GitSnapshot {
            branch: "feature/x".into(),
            main_branch: "main".into(),
            user_name: Some("Oracle Tester".into()),
            status_lines: lines(&[" M a.txt", "M  b.txt"]),
            status_problem: None,
            status_engine: Some(crate::git::StatusEngine::Native),
            status_declined: None,
            status_unlisted_dirs: 0,
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
        let text = status_text(&lines, None);
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
        assert_eq!(status_text(&exact, None), "x".repeat(STATUS_LIMIT));
    }

    #[test]
    fn status_text_counts_utf16_units_and_keeps_characters_whole() {
        // 1999 ASCII characters then a character outside the BMP (two UTF-16 units): it does not fit.
        let line = format!("{}\u{1F600}tail", "a".repeat(1999));
        let text = status_text(&[line], None);
        assert_eq!(text, format!("{}{TRUNCATION_NOTE}", "a".repeat(1999)));
        // Three-byte characters count one unit each.
        let line = "é".repeat(2000);
        assert_eq!(status_text(std::slice::from_ref(&line), None), line);
    }

    #[test]
    fn a_missing_status_says_why_and_lists_nothing() {
        let problem = crate::git::StatusProblem {
            kind: crate::git::StatusProblemKind::TimedOut,
            message: "the status scan did not finish\nin time.".into(),
        };
        let want = "(status unavailable: the status scan did not finish in time. Run \"git status\" using Bash for it.)";
        assert_eq!(status_text(&lines(&["M  a"]), Some(&problem)), want);
        let s = GitSnapshot {
            status_problem: Some(problem),
            status_lines: vec![],
            ..sample()
        };
        assert!(render_block(&s).contains(&format!("Status:\n{want}\n\nRecent commits:")));
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
}
