//! Branch, default branch, `user.name` and the recent commits (abbreviated as `git log --oneline` does), through
//! libgit2, or through the git CLI when libgit2 cannot open the repository; and a submodule's checked-out commit,
//! read from its refs.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use git2::{Config, ErrorCode, Oid, Repository};

use super::command;
use super::discover::{DotGit, common_dir_of, dot_git};
use super::env::GitEnv;
use super::index::be32;
use crate::fs::RealFs;

/// Branch, default branch, user and log: everything in the block but the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Meta {
    pub(super) branch: String,
    pub(super) main_branch: String,
    pub(super) user_name: Option<String>,
    pub(super) commits: Vec<(String, String)>,
}

/// The same through the git CLI (for repositories libgit2 cannot open: another object format, reftable, an
/// extension it does not know). Bounded by `deadline` and `stop`.
pub(super) fn cli_meta(
    env: &GitEnv,
    cwd: &Path,
    n: usize,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<Meta, String> {
    let run = |args: &[&str]| {
        let mut c = command::git(env, cwd);
        c.args(args);
        command::run(c, deadline, stop)
            .map(|out| String::from_utf8_lossy(&out).trim_end().to_owned())
    };
    let branch = match run(&["symbolic-ref", "-q", "--short", "HEAD"]) {
        Ok(b) if !b.is_empty() => b,
        Ok(_) | Err(command::RunError::Failed { .. }) => "HEAD".to_owned(),
        Err(e) => return Err(e.to_string()),
    };
    let main_branch = match run(&["symbolic-ref", "-q", "refs/remotes/origin/HEAD"]) {
        Ok(t) => match t.strip_prefix("refs/remotes/origin/") {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => "main".to_owned(),
        },
        Err(command::RunError::Failed { .. }) => "main".to_owned(),
        Err(e) => return Err(e.to_string()),
    };
    let user_name = match run(&["config", "user.name"]) {
        Ok(u) => Some(u.trim().to_owned()).filter(|u| !u.is_empty()),
        Err(command::RunError::Failed { .. }) => None,
        Err(e) => return Err(e.to_string()),
    };
    let count = format!("-n{n}");
    let commits = match run(&["log", "--no-decorate", &count, "--format=%h %s"]) {
        Ok(log) => log
            .lines()
            .map(|l| {
                let (h, s) = l.split_once(' ').unwrap_or((l, ""));
                (h.to_owned(), s.to_owned())
            })
            .collect(),
        Err(command::RunError::Failed { .. }) => Vec::new(), // no commits yet
        Err(e) => return Err(e.to_string()),
    };
    Ok(Meta {
        branch,
        main_branch,
        user_name,
        commits,
    })
}

/// The same through libgit2.
pub(super) fn meta(repo: &Repository, cfg: &Config, n: usize) -> Meta {
    let abbrev = abbrev_len(repo, cfg);
    Meta {
        branch: branch_name(repo),
        main_branch: main_branch(repo),
        user_name: user_name(cfg),
        commits: recent_commits(repo, abbrev, n),
    }
}

fn parse_oid(hex: &str) -> Option<[u8; 20]> {
    let hex = hex.trim();
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What `HEAD` of the git directory `git_dir` names, following symbolic refs through loose refs and `packed-refs`
/// (git's `resolve_ref`). `Ok(None)` for an unborn branch; `Err` for what this reader does not read.
pub(super) fn resolve_head(git_dir: &Path) -> Result<Option<[u8; 20]>, String> {
    let common = common_dir_of(&RealFs, git_dir);
    let read = |p: &Path| -> Result<Option<String>, String> {
        match crate::fs::read_regular(p) {
            Ok(t) => Ok(Some(String::from_utf8_lossy(&t).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    };
    if common.join("reftable").is_dir() {
        return Err("its refs are in a reftable".into());
    }
    let mut name = "HEAD".to_owned();
    for _ in 0..5 {
        // Per-worktree refs (HEAD) live in the git directory, the others in the common directory.
        let dir = if name == "HEAD" { git_dir } else { &common };
        let text = match read(&dir.join(&name))? {
            Some(t) => t,
            None => {
                let packed = read(&common.join("packed-refs"))?.unwrap_or_default();
                return Ok(packed.lines().find_map(|l| {
                    let (oid, r) = l.split_once(' ')?;
                    (r == name).then(|| parse_oid(oid)).flatten()
                }));
            }
        };
        match text.trim_end().strip_prefix("ref:") {
            Some(target) => name = target.trim().to_owned(),
            None => {
                return parse_oid(&text)
                    .map(Some)
                    .ok_or_else(|| format!("{name} does not name a SHA-1 object"));
            }
        }
    }
    Err("a chain of symbolic refs too long".into())
}

/// The commit a submodule's work tree has checked out: `Ok(None)` when the directory is not a repository (not
/// checked out) or has no commit, which git reports as unchanged.
pub(super) fn submodule_head(dir: &Path) -> Result<Option<[u8; 20]>, String> {
    match dot_git(&RealFs, dir) {
        DotGit::Repo(git_dir) => resolve_head(&git_dir),
        DotGit::Absent | DotGit::Broken(..) => Ok(None),
    }
}

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
        let Ok(mut f) = crate::fs::open_regular(&entry.path()) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::render_block;
    use crate::git::test_support::{Fixture, lines};

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
}
