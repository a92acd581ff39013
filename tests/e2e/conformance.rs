//! The conformance cases, run natively against the binary this `cargo test` built.
//!
//! `tests/conformance/reference/` (16 cases), `tests/conformance/fidelity/` (52 cases),
//! `tests/conformance/fidelity-2/` (34 cases) and `tests/conformance/fidelity-3/` (9 cases, skills
//! and MCP) are copies, byte for byte, of the cases measured on the reference CLI (Claude Code
//! 2.1.328) that `../shared/conformance/` publishes; `tests/conformance/ours/` holds our own
//! fixtures in the same format. This file implements the runner's contract of `../shared/conformance/README.md`:
//! materialise the tree (`templated` files, the `{PROJECT}` folder, `symlinks`), make the git
//! repositories of `case.json` with their fixed commit dates, run `preview --json` with a clean
//! environment, rewrite the output (`{ROOT}`, `{HOME}`, `{MANAGED}`, `{PROJECT}`, `{HASH}`),
//! reorder the `readdir_groups` of the expected text by the real readdir order, and compare
//! blocks and attachments exactly, with a unified diff of the first mismatch. An `expected.json`
//! with an `environment` object has its keys compared too, as the shared runner does, with the
//! environment parts `preview --json` reports (`skills` with `skills.listing`, `discovered` and
//! `activated` with the texts of `skills.discovered[]` and `skills.activated[]`, `mcpNames` with
//! the `mcp__…` and resource lines of `mcp.deferredTools`, `mcpFailed`, `mcpConnecting` and
//! `mcpInstructions` with `mcp.failedNote`, `mcp.connectingNote` and `mcp.instructions`).
//!
//! Our own cases may also pin other parts of the preview: `expected.json`'s `preview` maps JSON
//! pointers into the output (`/skills/listing`, `/mcp/failedNote`) to their exact values, after
//! the same rewriting.
//!
//! Each case runs once per `cargo test`; the cases of a folder run in parallel.
//! `CONFORMANCE_ONLY=<case>` runs one case; `CONFORMANCE_KEEP=1` keeps its temporary tree.
//! `CONFORMANCE_BLESS=<case folder>` (see `scripts/bless-case`) writes that case's
//! `expected.json` from the current binary instead of comparing.
#![allow(clippy::disallowed_methods)] // reason: tests drive the real binary and git, with their own environment.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PLACEHOLDERS: [&str; 3] = ["ROOT", "HOME", "MANAGED"];
const PREAMBLE_HEADER: &str = "<system-reminder>\nCodebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.\n\n";
const FOOTER: &str = "\n</system-reminder>";
const DESCRIPTIONS: [&str; 5] = [
    "organization-managed policy instructions",
    "user's private global instructions for all projects",
    "project instructions, checked into the codebase",
    "user's private project instructions, not checked in",
    "user's auto-memory, persists across conversations",
];
/// 2024-01-01T00:00:00Z; commit i (counted over the whole case) is dated one minute later each.
const COMMIT_DATE0: u64 = 1_704_067_200;
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn cases_dir(suite: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/conformance")
        .join(suite)
}

type Fail = String;

/// The temporary tree of one case: ROOT, HOME and MANAGED under one real directory.
struct Bases {
    tmp: PathBuf,
    map: BTreeMap<&'static str, PathBuf>,
    project: Option<PathBuf>,
}

impl Bases {
    /// `ROOT/a/b`, `{ROOT}/a/b` or `ROOT` → the absolute path.
    fn resolve(&self, reference: &str) -> Result<PathBuf, Fail> {
        let r = reference.strip_prefix('{').unwrap_or(reference);
        for key in PLACEHOLDERS {
            if let Some(rest) = r.strip_prefix(key) {
                let rest = rest.strip_prefix('}').unwrap_or(rest);
                if rest.is_empty() {
                    return Ok(self.map[key].clone());
                }
                if let Some(rel) = rest.strip_prefix('/') {
                    return Ok(self.map[key].join(rel));
                }
            }
        }
        Err(format!(
            "path {reference:?} must start with ROOT/, HOME/ or MANAGED/"
        ))
    }

    fn substitute(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in PLACEHOLDERS {
            out = out.replace(&format!("{{{key}}}"), &self.map[key].to_string_lossy());
        }
        out
    }

    /// Where a tree file goes (`{PROJECT}` in its path is the memory project's folder name).
    fn target(&self, rel: &str) -> Result<PathBuf, Fail> {
        let rel = if rel.contains("{PROJECT}") {
            let project = self.project.as_ref().ok_or_else(|| {
                format!("tree/{rel} uses {{PROJECT}} but case.json has no memory_project")
            })?;
            rel.replace("{PROJECT}", &sanitize(&project.to_string_lossy()))
        } else {
            rel.to_string()
        };
        Ok(self.tmp.join(rel))
    }
}

/// The auto-memory folder name: every character other than `A-Z a-z 0-9` becomes `-`.
fn sanitize(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Every file of `tree/`, as (path relative to `tree/` with `/`, bytes), sorted.
fn tree_files(case: &Path) -> Result<Vec<(String, Vec<u8>)>, Fail> {
    let tree = case.join("tree");
    if !tree.is_dir() {
        return Err("missing tree/".into());
    }
    let mut out = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&tree)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .replace('\\', "/");
            let top = rel.split('/').next().unwrap_or_default();
            if !PLACEHOLDERS.contains(&top) {
                return Err(format!(
                    "tree/{rel}: top-level folder must be ROOT, HOME or MANAGED"
                ));
            }
            out.push((rel, std::fs::read(&path).map_err(|e| e.to_string())?));
        }
    }
    out.sort();
    Ok(out)
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), Fail> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, data).map_err(|e| format!("{}: {e}", path.display()))
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Writes `tree/` into the temporary directory (templated files substituted).
fn materialize(case: &Path, spec: &Value, bases: &Bases) -> Result<(), Fail> {
    let templated = str_list(&spec["templated"]);
    let files = tree_files(case)?;
    for t in &templated {
        if !files.iter().any(|(rel, _)| rel == t) {
            return Err(format!("templated file not found in tree/: {t}"));
        }
    }
    for (rel, data) in &files {
        write_file(
            &bases.target(rel)?,
            &file_data(rel, data, &templated, bases)?,
        )?;
    }
    Ok(())
}

fn file_data(rel: &str, data: &[u8], templated: &[String], bases: &Bases) -> Result<Vec<u8>, Fail> {
    if templated.iter().any(|t| t == rel) {
        let text =
            std::str::from_utf8(data).map_err(|_| format!("templated tree/{rel} is not UTF-8"))?;
        Ok(bases.substitute(text).into_bytes())
    } else {
        Ok(data.to_vec())
    }
}

fn clean_path() -> String {
    let mut dirs = vec!["/usr/local/bin", "/usr/bin", "/bin"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    if let Some(git) = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("git").is_file()))
    {
        let git = git.to_string_lossy().into_owned();
        if !dirs.contains(&git) {
            dirs.insert(0, git);
        }
    }
    dirs.join(":")
}

fn git(repo: &Path, args: &[&str], env: &[(&str, String)]) -> Result<(), Fail> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            repo.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The repositories of `case.json`: commits with fixed dates, then the final tree and the
/// uncommitted changes of `after`.
fn make_repos(case: &Path, spec: &Value, bases: &Bases) -> Result<(), Fail> {
    let setup_home = bases.tmp.join(".git-setup-home");
    std::fs::create_dir_all(&setup_home).map_err(|e| e.to_string())?;
    let env0: Vec<(&str, String)> = vec![
        ("PATH", clean_path()),
        ("LANG", "C".into()),
        ("HOME", setup_home.to_string_lossy().into_owned()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
        ("GIT_TERMINAL_PROMPT", "0".into()),
    ];
    let templated = str_list(&spec["templated"]);
    let mut n = 0;
    for repo_spec in spec["git"].as_array().into_iter().flatten() {
        let repo = bases.resolve(repo_spec["repo"].as_str().unwrap_or_default())?;
        std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
        git(&repo, &["init", "-q"], &env0)?;
        let branch = repo_spec["branch"].as_str().unwrap_or("main");
        git(
            &repo,
            &["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")],
            &env0,
        )?;
        let user_name = repo_spec["user_name"].as_str().filter(|s| !s.is_empty());
        let user_email = repo_spec["user_email"].as_str().filter(|s| !s.is_empty());
        if let Some(name) = user_name {
            git(&repo, &["config", "user.name", name], &env0)?;
        }
        if let Some(email) = user_email {
            git(&repo, &["config", "user.email", email], &env0)?;
        }
        for commit in repo_spec["commits"].as_array().into_iter().flatten() {
            if let Some(set) = commit["set"].as_object() {
                for (rel, content) in set {
                    let path = repo.join(rel);
                    match content.as_str() {
                        None => {
                            if path.symlink_metadata().is_ok() {
                                std::fs::remove_file(&path).map_err(|e| e.to_string())?;
                            }
                        }
                        Some(text) => write_file(&path, text.as_bytes())?,
                    }
                }
            }
            let mut files = str_list(&commit["files"]);
            if files.is_empty() {
                files.push(".".into());
            }
            let mut add = vec!["add", "-A", "--"];
            add.extend(files.iter().map(String::as_str));
            git(&repo, &add, &env0)?;
            n += 1;
            let date = format!("@{} +0000", COMMIT_DATE0 + 60 * n);
            let name = user_name.unwrap_or("Conformance Setup").to_string();
            let email = user_email.unwrap_or("setup@example.invalid").to_string();
            let mut env = env0.clone();
            env.extend([
                ("GIT_AUTHOR_DATE", date.clone()),
                ("GIT_COMMITTER_DATE", date),
                ("GIT_AUTHOR_NAME", name.clone()),
                ("GIT_COMMITTER_NAME", name),
                ("GIT_AUTHOR_EMAIL", email.clone()),
                ("GIT_COMMITTER_EMAIL", email),
            ]);
            let message = commit["message"].as_str().unwrap_or_default();
            git(
                &repo,
                &[
                    "commit",
                    "-q",
                    "--no-verify",
                    "--no-gpg-sign",
                    "--allow-empty",
                    "-m",
                    message,
                ],
                &env,
            )?;
        }
        if let Some(checkout) = repo_spec["checkout"].as_str() {
            git(&repo, &["checkout", "-q", "-b", checkout], &env0)?;
        }
        // The working tree back to its final state, then the uncommitted index changes.
        for (rel, data) in tree_files(case)? {
            let target = bases.target(&rel)?;
            if target.starts_with(&repo) {
                write_file(&target, &file_data(&rel, &data, &templated, bases)?)?;
            }
        }
        let after = &repo_spec["after"];
        let stage = str_list(&after["stage"]);
        if !stage.is_empty() {
            let mut args = vec!["add", "--"];
            args.extend(stage.iter().map(String::as_str));
            git(&repo, &args, &env0)?;
        }
        let rm = str_list(&after["git_rm"]);
        if !rm.is_empty() {
            let mut args = vec!["rm", "-q", "--"];
            args.extend(rm.iter().map(String::as_str));
            git(&repo, &args, &env0)?;
        }
        for rel in str_list(&after["delete"]) {
            std::fs::remove_file(repo.join(&rel)).map_err(|e| format!("delete {rel}: {e}"))?;
        }
    }
    Ok(())
}

fn make_symlinks(spec: &Value, bases: &Bases) -> Result<(), Fail> {
    for link in spec["symlinks"].as_array().into_iter().flatten() {
        let path = bases.resolve(link["path"].as_str().unwrap_or_default())?;
        if path.symlink_metadata().is_ok() {
            return Err(format!("symlinks: {} already exists", path.display()));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let target = bases.substitute(link["target"].as_str().unwrap_or_default());
        std::os::unix::fs::symlink(&target, &path).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The output's absolute paths back to placeholders, longest first.
fn normalizer(bases: &Bases) -> impl Fn(&str) -> String + '_ {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for key in PLACEHOLDERS {
        let p = &bases.map[key];
        for s in [p.clone(), p.canonicalize().unwrap_or_else(|_| p.clone())] {
            pairs.push((s.to_string_lossy().into_owned(), format!("{{{key}}}")));
        }
    }
    pairs.sort_by_key(|(a, _)| std::cmp::Reverse(a.len()));
    let project = bases.project.as_ref().map(|p| {
        let real = p.canonicalize().unwrap_or_else(|_| p.clone());
        (
            sanitize(&p.to_string_lossy()),
            sanitize(&real.to_string_lossy()),
        )
    });
    move |s: &str| {
        let mut s = s.to_string();
        if let Some((a, b)) = &project {
            s = s
                .replace(a.as_str(), "{PROJECT}")
                .replace(b.as_str(), "{PROJECT}");
        }
        for (a, b) in &pairs {
            s = s.replace(a.as_str(), b);
        }
        s
    }
}

/// In a gitStatus block, the hash at the start of each `Recent commits` line becomes `{HASH}`.
fn normalize_hashes(text: &str) -> String {
    let Some((head, tail)) = text.split_once("\nRecent commits:\n") else {
        return text.to_string();
    };
    let (commits, rest) = match tail.split_once("\n\n") {
        Some((c, r)) => (c, Some(r)),
        None => (tail, None),
    };
    let commits: Vec<String> = commits
        .split('\n')
        .map(|line| {
            let hex = line
                .chars()
                .take_while(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
                .count();
            if (7..=40).contains(&hex) && line[hex..].starts_with(' ') {
                format!("{{HASH}}{}", &line[hex..])
            } else {
                line.to_string()
            }
        })
        .collect();
    let mut out = format!("{head}\nRecent commits:\n{}", commits.join("\n"));
    if let Some(rest) = rest {
        out.push_str("\n\n");
        out.push_str(rest);
    }
    out
}

/// Splits an expected instructions block into (path, entry text) pairs.
fn split_instructions(text: &str) -> Result<Vec<(String, String)>, Fail> {
    let body = text
        .strip_prefix(PREAMBLE_HEADER)
        .and_then(|b| b.strip_suffix(FOOTER))
        .ok_or("expected instructions block has an unexpected frame")?;
    let entry_at = |i: usize| -> Option<String> {
        let rest = body[i..].strip_prefix("Contents of ")?;
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        DESCRIPTIONS
            .iter()
            .filter_map(|d| {
                let marker = format!(" ({d}):");
                let at = line.find(&marker)?;
                rest[at + marker.len()..]
                    .starts_with("\n\n")
                    .then(|| rest[..at].to_string())
            })
            .min_by_key(String::len)
    };
    let mut starts = Vec::new();
    for (i, _) in body.match_indices("Contents of ") {
        if (i == 0 || body[..i].ends_with("\n\n"))
            && let Some(path) = entry_at(i)
        {
            starts.push((i, path));
        }
    }
    if starts.first().map(|s| s.0) != Some(0) {
        return Err("cannot split expected instructions block into entries".into());
    }
    Ok(starts
        .iter()
        .enumerate()
        .map(|(k, (s, path))| {
            let end = starts.get(k + 1).map_or(body.len(), |n| n.0 - 2);
            (path.clone(), body[*s..end].to_string())
        })
        .collect())
}

/// Position of `path` in a recursive walk of `dir` in raw readdir order.
fn readdir_rank(dir: &Path, path: &Path) -> Result<Vec<usize>, Fail> {
    let rel = path.strip_prefix(dir).map_err(|_| {
        format!(
            "readdir_groups: {} is not under {}",
            path.display(),
            dir.display()
        )
    })?;
    let mut key = Vec::new();
    let mut cur = dir.to_path_buf();
    for comp in rel.components() {
        let names: Vec<_> = std::fs::read_dir(&cur)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        let index = names
            .iter()
            .position(|n| n == comp.as_os_str())
            .ok_or_else(|| format!("readdir_groups: {comp:?} not found in {}", cur.display()))?;
        key.push(index);
        cur.push(comp);
    }
    Ok(key)
}

/// Reorders the consecutive span of `items` named by a `readdir_groups` entry by readdir order.
fn reorder_units<T: Clone>(
    items: Vec<T>,
    paths: &[String],
    group: &Value,
    bases: &Bases,
) -> Result<Vec<T>, Fail> {
    let units: Vec<Vec<String>> = group["units"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| {
            str_list(u)
                .into_iter()
                .map(|p| match p.split_once('/') {
                    Some((top, rest)) => format!("{{{top}}}/{rest}"),
                    None => format!("{{{p}}}"),
                })
                .collect()
        })
        .collect();
    let flat: Vec<&String> = units.iter().flatten().collect();
    let start = (0..=paths.len().saturating_sub(flat.len()))
        .find(|&i| paths[i..].iter().take(flat.len()).eq(flat.iter().copied()))
        .filter(|_| paths.len() >= flat.len())
        .ok_or_else(|| {
            format!(
                "readdir_groups: units {flat:?} not found consecutively in expected {}",
                group["where"]
            )
        })?;
    let by_path: BTreeMap<&String, T> = paths[start..start + flat.len()]
        .iter()
        .zip(items[start..start + flat.len()].iter().cloned())
        .collect();
    let dir = bases.resolve(group["dir"].as_str().unwrap_or_default())?;
    let mut ranked = Vec::new();
    for unit in &units {
        ranked.push((readdir_rank(&dir, &bases.resolve(&unit[0])?)?, unit));
    }
    ranked.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = items[..start].to_vec();
    for (_, unit) in ranked {
        for p in unit {
            out.push(by_path[p].clone());
        }
    }
    out.extend(items[start + flat.len()..].iter().cloned());
    Ok(out)
}

type Blocks = Vec<(String, String)>;

fn expected_for(spec: &Value, expected: &Value, bases: &Bases) -> Result<(Blocks, Blocks), Fail> {
    let pairs = |v: &Value, a: &str, b: &str| -> Blocks {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|x| {
                (
                    x[a].as_str().unwrap_or_default().to_string(),
                    x[b].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let mut blocks = pairs(&expected["blocks"], "kind", "text");
    let mut atts = pairs(&expected["attachments"], "path", "text");
    for group in spec["readdir_groups"].as_array().into_iter().flatten() {
        match group["where"].as_str() {
            Some("instructions") => {
                for (kind, text) in blocks.iter_mut() {
                    if kind == "instructions" {
                        let entries = split_instructions(text)?;
                        let paths: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
                        let entries = reorder_units(entries, &paths, group, bases)?;
                        let joined: Vec<String> = entries.into_iter().map(|e| e.1).collect();
                        *text = format!("{PREAMBLE_HEADER}{}{FOOTER}", joined.join("\n\n"));
                    }
                }
            }
            Some("attachments") => {
                let paths: Vec<String> = atts.iter().map(|a| a.0.clone()).collect();
                atts = reorder_units(atts, &paths, group, bases)?;
            }
            other => return Err(format!("readdir_groups: unknown where {other:?}")),
        }
    }
    for (kind, text) in blocks.iter_mut() {
        if kind == "gitStatus" {
            *text = normalize_hashes(text);
        }
    }
    Ok((blocks, atts))
}

/// A case measured on the reference CLI (not one of our own fixtures).
fn measured(spec: &Value) -> bool {
    spec["source"]
        .as_str()
        .is_some_and(|s| s.starts_with("reference CLI"))
}

/// The measured cases are `-p` runs, which start a project's `.mcp.json` servers whatever the
/// folder's trust (`skills-mcp.md` K33; claude-context does not copy it: no project server starts
/// before its folder is trusted, docs/decisions.md). So that the servers they started start here
/// too (K37, K38: a committed approval), the case's folder is trusted first, as its user would
/// (`claude-context trust --yes`, our record in the case's HOME); nothing else a preview shows
/// depends on it (a folder nobody was asked about is previewed as once trusted). The gate itself
/// is tested in `tests/e2e/cli.rs` and `tests/e2e/chat_mcp.rs`, and by our own case
/// `mcp_committed_approval_waits_for_trust`.
fn trust_the_folder(spec: &Value, bases: &Bases) -> Result<(), Fail> {
    let cwd = bases.resolve(spec["cwd"].as_str().unwrap_or_default())?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_claude-context"));
    cmd.args(["trust", "--yes", "--cwd"])
        .arg(&cwd)
        .env_clear()
        .env("PATH", clean_path())
        .env("HOME", &bases.map["HOME"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", &bases.tmp)
        .stdin(Stdio::null());
    // The case's own environment too (where the state folder is, for one).
    if let Some(env) = spec["env"].as_object() {
        for (k, v) in env {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            cmd.env(k, bases.substitute(&v));
        }
    }
    let o = cmd
        .output()
        .map_err(|e| format!("cannot run the binary: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "trust --yes failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}

/// Runs the binary on the materialised case; returns its JSON output.
fn run_binary(spec: &Value, bases: &Bases) -> Result<Value, Fail> {
    let cwd = bases.resolve(spec["cwd"].as_str().unwrap_or_default())?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_claude-context"));
    cmd.args(["preview", "--json", "--cwd"]).arg(&cwd);
    for f in str_list(&spec["files"]) {
        cmd.arg("--file").arg(bases.resolve(&f)?);
    }
    for a in str_list(&spec["args"]) {
        cmd.arg(bases.substitute(&a));
    }
    cmd.current_dir(&cwd)
        .env_clear()
        .env("PATH", clean_path())
        .env("LANG", "C.UTF-8")
        .env("HOME", &bases.map["HOME"])
        .env("CLAUDE_CONTEXT_MANAGED_DIR", &bases.map["MANAGED"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", &bases.tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(env) = spec["env"].as_object() {
        for (k, v) in env {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            cmd.env(k, bases.substitute(&v));
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run the binary: {e}"))?;
    // Both pipes are drained while the process runs (a large output must not block it).
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("timed out after {}s", RUN_TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr.trim().chars().rev().take(500).collect();
        return Err(format!(
            "exit status {}; stderr: {}",
            out.status,
            tail.chars().rev().collect::<String>()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).map_err(|e| {
        format!(
            "stdout is not JSON: {e}; stdout starts {:?}",
            stdout.chars().take(200).collect::<String>()
        )
    })
}

/// (blocks, attachments) of the output, normalised; blocks of other kinds are left out.
fn actual_from(out: &Value, bases: &Bases) -> Result<(Blocks, Blocks, Vec<String>), Fail> {
    let norm = normalizer(bases);
    let blocks = out["blocks"]
        .as_array()
        .ok_or("output JSON has no \"blocks\" list")?;
    let mut b = Vec::new();
    for block in blocks {
        let kind = block["kind"].as_str().unwrap_or_default();
        if kind != "instructions" && kind != "gitStatus" {
            continue;
        }
        let mut text = norm(block["text"].as_str().unwrap_or_default());
        if kind == "gitStatus" {
            text = normalize_hashes(&text);
        }
        b.push((kind.to_string(), text));
    }
    let mut atts = Vec::new();
    let mut triggers = Vec::new();
    for a in out["attachments"].as_array().into_iter().flatten() {
        atts.push((
            norm(a["path"].as_str().unwrap_or_default()),
            norm(a["text"].as_str().unwrap_or_default()),
        ));
        triggers.push(norm(a["trigger"].as_str().unwrap_or_default()));
    }
    Ok((b, atts, triggers))
}

/// The environment parts of the output (the shared runner's `environment_from`), normalised.
fn environment_from(out: &Value, bases: &Bases) -> serde_json::Map<String, Value> {
    let norm = normalizer(bases);
    let text = |v: &Value| v.as_str().map_or(Value::Null, |t| Value::String(norm(t)));
    let texts = |v: &Value| {
        Value::Array(
            v.as_array()
                .into_iter()
                .flatten()
                .map(|d| text(&d["text"]))
                .collect(),
        )
    };
    const RESOURCE_TOOLS: [&str; 3] = [
        "ListMcpResourcesTool",
        "ReadMcpResourceDirTool",
        "ReadMcpResourceTool",
    ];
    let names: Vec<Value> = out["mcp"]["deferredTools"]
        .as_str()
        .map(|d| {
            d.split('\n')
                .skip(1)
                .filter(|l| l.starts_with("mcp__") || RESOURCE_TOOLS.contains(l))
                .map(|l| Value::String(norm(l)))
                .collect()
        })
        .unwrap_or_default();
    let (sk, mc) = (&out["skills"], &out["mcp"]);
    [
        ("skills", text(&sk["listing"])),
        ("discovered", texts(&sk["discovered"])),
        ("activated", texts(&sk["activated"])),
        ("mcpNames", Value::Array(names)),
        ("mcpFailed", text(&mc["failedNote"])),
        ("mcpConnecting", text(&mc["connectingNote"])),
        ("mcpInstructions", text(&mc["instructions"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `None` when every key of `expected` holds the output's value, else the first that differs.
fn compare_environment(
    expected: &serde_json::Map<String, Value>,
    actual: &serde_json::Map<String, Value>,
) -> Option<String> {
    let show = |v: &Value| match v {
        Value::String(t) => t.clone() + "\n",
        other => serde_json::to_string_pretty(other).unwrap_or_default() + "\n",
    };
    for (k, want) in expected {
        let got = actual.get(k).unwrap_or(&Value::Null);
        if want != got {
            return Some(format!(
                "environment {k} differs\n{}",
                diff(&show(want), &show(got), &format!("environment {k}"))
            ));
        }
    }
    None
}

fn diff(expected: &str, actual: &str, label: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(&format!("expected {label}"), &format!("actual {label}"))
        .to_string()
}

/// `None` when equal, else the first mismatch with a diff.
fn compare(exp: &(Blocks, Blocks), act: &(Blocks, Blocks)) -> Option<String> {
    let kinds = |b: &Blocks| b.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    let (ek, ak) = (kinds(&exp.0), kinds(&act.0));
    if ek != ak {
        return Some(format!(
            "block kinds differ: expected {ek:?}, got {ak:?}\n{}",
            diff(
                &(ek.join("\n") + "\n"),
                &(ak.join("\n") + "\n"),
                "block kinds"
            )
        ));
    }
    for (i, (e, a)) in exp.0.iter().zip(&act.0).enumerate() {
        if e.1 != a.1 {
            return Some(format!(
                "blocks[{i}] ({}) text differs\n{}",
                e.0,
                diff(&e.1, &a.1, &format!("blocks[{i}]"))
            ));
        }
    }
    let (ep, ap) = (kinds(&exp.1), kinds(&act.1));
    if ep != ap {
        return Some(format!(
            "attachment paths differ (expected {}, got {})\n{}",
            ep.len(),
            ap.len(),
            diff(
                &(ep.join("\n") + "\n"),
                &(ap.join("\n") + "\n"),
                "attachment paths"
            )
        ));
    }
    for (i, (e, a)) in exp.1.iter().zip(&act.1).enumerate() {
        if e.1 != a.1 {
            return Some(format!(
                "attachments[{i}] ({}) text differs\n{}",
                e.0,
                diff(&e.1, &a.1, &format!("attachments[{i}]"))
            ));
        }
    }
    None
}

fn read_json(path: &Path) -> Result<Value, Fail> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Sets up and runs one case: `Ok(())` when it passes (or was blessed).
fn run_case(case: &Path, bless: bool) -> Result<(), Fail> {
    let spec = read_json(&case.join("case.json"))?;
    let dir = tempfile::Builder::new()
        .prefix("cc-conf-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let tmp = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let mut bases = Bases {
        map: PLACEHOLDERS.iter().map(|k| (*k, tmp.join(k))).collect(),
        tmp,
        project: None,
    };
    for p in bases.map.values() {
        std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
    }
    if let Some(project) = spec["memory_project"].as_str() {
        bases.project = Some(bases.resolve(project)?);
    }
    let setup = || -> Result<(), Fail> {
        materialize(case, &spec, &bases)?;
        make_repos(case, &spec, &bases)?;
        make_symlinks(&spec, &bases)
    };
    setup().map_err(|e| format!("materialization failed: {e}"))?;
    if measured(&spec) {
        trust_the_folder(&spec, &bases)?;
    }
    let out = run_binary(&spec, &bases)?;
    let (blocks, atts, triggers) = actual_from(&out, &bases)?;
    // Pinned parts of the preview (`preview`: JSON pointer → value).
    let norm = normalizer(&bases);
    fn rewrite(v: &Value, norm: &dyn Fn(&str) -> String) -> Value {
        match v {
            Value::String(t) => Value::String(norm(t)),
            Value::Array(a) => Value::Array(a.iter().map(|x| rewrite(x, norm)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), rewrite(x, norm)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let previous = read_json(&case.join("expected.json")).unwrap_or(Value::Null);
    let pinned: Vec<(String, Value)> = previous["preview"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(ptr, want)| {
            let got = out.pointer(ptr).map_or(Value::Null, |v| rewrite(v, &norm));
            (
                ptr.clone(),
                if bless { got.clone() } else { want.clone() },
                got,
            )
        })
        .map(|(ptr, want, got)| {
            if !bless && want != got {
                let show = |v: &Value| match v {
                    Value::String(t) => t.clone() + "\n",
                    other => serde_json::to_string_pretty(other).unwrap_or_default() + "\n",
                };
                return Err(format!(
                    "preview {ptr} differs\n{}",
                    diff(&show(&want), &show(&got), &ptr)
                ));
            }
            Ok((ptr, got))
        })
        .collect::<Result<_, Fail>>()?;
    if std::env::var_os("CONFORMANCE_KEEP").is_some() {
        eprintln!("  (kept {})", dir.keep().display());
    }
    if bless {
        #[derive(serde::Serialize)]
        struct Expected {
            blocks: Vec<Value>,
            attachments: Vec<Value>,
            #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
            environment: serde_json::Map<String, Value>,
            #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
            preview: serde_json::Map<String, Value>,
        }
        // The environment keys the case compared keep being compared, with today's values.
        let actual_env = environment_from(&out, &bases);
        let expected = Expected {
            blocks: blocks
                .iter()
                .map(|(k, t)| json!({"kind": k, "text": t}))
                .collect(),
            attachments: atts
                .iter()
                .zip(&triggers)
                .map(|((p, t), trigger)| json!({"path": p, "text": t, "trigger": trigger}))
                .collect(),
            environment: previous["environment"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| (k.clone(), actual_env.get(k).cloned().unwrap_or(Value::Null)))
                .collect(),
            preview: pinned.into_iter().collect(),
        };
        let mut text = serde_json::to_string_pretty(&expected).map_err(|e| e.to_string())?;
        text.push('\n');
        std::fs::write(case.join("expected.json"), text).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let expected_json = read_json(&case.join("expected.json"))?;
    let expected = expected_for(&spec, &expected_json, &bases)?;
    if let Some(why) = compare(&expected, &(blocks, atts)) {
        return Err(why);
    }
    match expected_json["environment"].as_object() {
        Some(env) => match compare_environment(env, &environment_from(&out, &bases)) {
            None => Ok(()),
            Some(why) => Err(why),
        },
        None => Ok(()),
    }
}

/// Runs every case of a suite folder (in parallel) and fails with a report of each failure.
fn run_suite(suite: &str, at_least: usize) {
    let dir = cases_dir(suite);
    let only = std::env::var("CONFORMANCE_ONLY").ok();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").is_file())
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| p.file_name().is_some_and(|n| n == o))
        })
        .collect();
    cases.sort();
    if only.is_none() {
        assert!(
            cases.len() >= at_least,
            "{}: {} cases, expected at least {at_least}",
            dir.display(),
            cases.len()
        );
    }
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let result = run_case(case, false);
                    results.lock().unwrap().push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(i, r)| {
            let name = cases[*i].file_name().unwrap_or_default().to_string_lossy();
            r.as_ref().err().map(|why| format!("FAIL {name}: {why}"))
        })
        .collect();
    eprintln!(
        "conformance {suite}: {} passed, {} failed",
        results.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The 16 cases measured on the reference CLI (`../shared/conformance/cases`).
#[test]
fn reference_cases_pass_byte_for_byte() {
    run_suite("reference", 16);
}

/// The 52 smaller cases measured on the reference CLI (`../shared/conformance/cases-fidelity`).
#[test]
fn fidelity_cases_pass_byte_for_byte() {
    run_suite("fidelity", 52);
}

/// The 34 cases of the third differential run, settings and `CLAUDE_CONFIG_DIR` among them
/// (`../shared/conformance/cases-fidelity-2`).
#[test]
fn fidelity_2_cases_pass_byte_for_byte() {
    run_suite("fidelity-2", 34);
}

/// The 9 skills and MCP cases of the fourth differential run (classes K27 to K38), whose
/// `environment` parts are compared too (`../shared/conformance/cases-fidelity-3`).
#[test]
fn fidelity_3_cases_pass_byte_for_byte() {
    run_suite("fidelity-3", 9);
}

/// Our own fixtures, in the same format.
#[test]
fn our_cases_pass() {
    run_suite("ours", 19);
}

/// `CONFORMANCE_BLESS=<case folder>`: writes that case's `expected.json` from the current binary
/// (what `scripts/bless-case` runs). Does nothing otherwise.
#[test]
fn bless() {
    let Some(case) = std::env::var_os("CONFORMANCE_BLESS") else {
        return;
    };
    let case = PathBuf::from(case);
    run_case(&case, true).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    eprintln!("wrote {}", case.join("expected.json").display());
}

/// The runner's own pieces, on inputs whose answer is known.
#[test]
fn runner_pieces() {
    let text = "x\nRecent commits:\nabc1234 first\n0123456789abcdef0123456789abcdef01234567 second\nnot a hash\n\ntail";
    assert_eq!(
        normalize_hashes(text),
        "x\nRecent commits:\n{HASH} first\n{HASH} second\nnot a hash\n\ntail"
    );
    let block = format!(
        "{PREAMBLE_HEADER}Contents of /a (project instructions, checked into the codebase):\n\nA\n\nContents of /b (user's private project instructions, not checked in):\n\nB\nContents of /c (x)\n{}",
        &FOOTER[1..]
    );
    let entries = split_instructions(&block).unwrap();
    assert_eq!(
        entries.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["/a", "/b"]
    );
    assert_eq!(sanitize("/home/me/My Repo_v2.x"), "-home-me-My-Repo-v2-x");
}
