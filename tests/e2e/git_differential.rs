//! Differential test of the git status against the git CLI: seeded random sequences of what users do to a repository
//! (write, edit, delete, add, rm, mv, chmod, `add -N`, partial staging, commit, branch, checkout, merges with
//! conflicts, submodules, sparse checkout with and without a sparse index, split index, index versions, ignore rules,
//! symbolic links, type changes, FIFOs, nested repositories, config toggles, refreshes), and after every step our
//! snapshot's status must equal `git --no-optional-locks status --short --ignore-submodules=dirty`, from the root or
//! a subdirectory.
//!
//! `cargo test --test e2e git_differential::` runs a fast subset; `scripts/git-differential.sh` runs the full corpus
//! (`GIT_DIFF_STATES`, default 1,200 states). `GIT_DIFF_SEED=n` replays one seed. A mismatch prints the seed, the step
//! and the recipe so far. At the end the test prints how many states each engine answered and why the native engine
//! declined; it fails when the native engine answered too few (a fallback that answered everything would pass the
//! comparison and test nothing).
#![allow(clippy::disallowed_methods)] // reason: tests, benches and examples drive real processes and read their own environment.

use crate::git_support;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use claude_context::git::{self, Engine, StatusCache, StatusEngine};
use git_support::Repo;

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        (!v.is_empty()).then(|| &v[self.below(v.len())])
    }
}

const DIRS: [&str; 8] = [
    "",
    "d/",
    "d/e/",
    "x/",
    "x/y/z/",
    "sp ace/",
    "ü/",
    "new/deep/",
];
const NAMES: [&str; 12] = [
    "a.txt",
    "b.txt",
    "c.md",
    "n.log",
    "keep.log",
    "Ünï.txt",
    "x y.txt",
    "top",
    "build",
    "t\tab",
    "q\"uote",
    "data.bin",
];
const WORDS: [&str; 10] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
];
const IGNORES: [&str; 9] = [
    "*.log",
    "!keep.log",
    "build/",
    "/top",
    "x/**/z",
    "*.bin",
    "sp ace/",
    "[ab].txt",
    "d/*.md",
];

struct World {
    repo: Repo,
    rng: Rng,
    sub_src: PathBuf,
    recipe: Vec<String>,
    crlf: bool,
    /// How many times [`World::write_untracked_cache`] set the directories' times back.
    backdates: u64,
}

impl World {
    fn files(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            let Ok(rd) = fs::read_dir(dir) else { return };
            for e in rd.flatten() {
                if e.file_name() == ".git" {
                    continue;
                }
                let p = e.path();
                let ft = e.file_type().expect("file type");
                if ft.is_dir() {
                    walk(root, &p, out);
                } else if ft.is_file() || ft.is_symlink() {
                    out.push(
                        p.strip_prefix(root)
                            .expect("below")
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.repo.root, &self.repo.root, &mut out);
        out.sort();
        out
    }

    fn dirs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .files()
            .iter()
            .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_owned()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// git writes its untracked cache (`core.untrackedCache=true`): first every directory's modification time is
    /// set back, so that none is racily new for the index written now and the cache vouches for each one that the
    /// next steps leave alone. Each time to another whole second, further back than any real time: git compares
    /// whole seconds, and a directory changed and set back into the second it was recorded at would look unchanged
    /// to git (an untracked cache git itself answers wrongly from; no real clock goes backwards like that).
    fn write_untracked_cache(&mut self) {
        self.backdates += 1;
        fn backdate(dir: &Path, when: SystemTime) {
            if let Ok(f) = fs::File::open(dir) {
                let _ = f.set_modified(when);
            }
            let Ok(rd) = fs::read_dir(dir) else { return };
            for e in rd.flatten() {
                if e.file_name() != ".git" && e.file_type().is_ok_and(|t| t.is_dir()) {
                    backdate(&e.path(), when);
                }
            }
        }
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000 + self.backdates);
        backdate(&self.repo.root, when);
        self.git(&["status", "--short"]);
    }

    fn content(&mut self) -> String {
        let n = self.rng.below(14);
        let eol = if self.crlf && self.rng.chance(40) {
            "\r\n"
        } else {
            "\n"
        };
        (0..n)
            .map(|_| {
                let w = *self.rng.pick(&WORDS).expect("words");
                format!("{w} {}{eol}", self.rng.below(5))
            })
            .collect()
    }

    fn new_path(&mut self) -> String {
        let d = *self.rng.pick(&DIRS).expect("dirs");
        let n = *self.rng.pick(&NAMES).expect("names");
        format!("{d}{n}")
    }

    fn some_file(&mut self) -> Option<String> {
        let files = self.files();
        self.rng.pick(&files).cloned()
    }

    fn write(&mut self, rel: &str) {
        let text = self.content();
        let p = self.repo.root.join(rel);
        // Anything but a regular file goes first (writing to a FIFO would wait for a reader for ever).
        if fs::symlink_metadata(&p).is_ok_and(|m| !m.is_file()) {
            let _ = fs::remove_dir_all(&p);
            let _ = fs::remove_file(&p);
        }
        // A file where a parent directory should be: make room.
        let mut parent = p.parent();
        while let Some(d) = parent {
            if d == self.repo.root {
                break;
            }
            if d.is_file() || fs::symlink_metadata(d).is_ok_and(|m| m.file_type().is_symlink()) {
                let _ = fs::remove_file(d);
            }
            parent = d.parent();
        }
        let _ = fs::create_dir_all(p.parent().expect("parent"));
        let _ = fs::write(&p, text);
    }

    fn git(&mut self, args: &[&str]) -> bool {
        self.repo.try_git(args)
    }

    /// One random step; returns its description.
    fn step(&mut self) -> String {
        let roll = self.rng.below(100);
        match roll {
            0..=14 => {
                let p = self.new_path();
                self.write(&p);
                format!("write {p:?}")
            }
            15..=26 => match self.some_file() {
                Some(p)
                    if fs::symlink_metadata(self.repo.root.join(&p)).is_ok_and(|m| m.is_file()) =>
                {
                    let full = self.repo.root.join(&p);
                    let how = self.rng.below(3);
                    let _ = match how {
                        0 => fs::OpenOptions::new()
                            .append(true)
                            .open(&full)
                            .and_then(|mut f| std::io::Write::write_all(&mut f, b"more\n")),
                        1 => {
                            // Same size, different bytes.
                            let mut b = fs::read(&full).unwrap_or_default();
                            if let Some(x) = b.first_mut() {
                                *x = if *x == b'Z' { b'Y' } else { b'Z' };
                            }
                            fs::write(&full, b)
                        }
                        _ => {
                            let t = self.content();
                            fs::write(&full, t)
                        }
                    };
                    format!("edit {p:?} ({how})")
                }
                _ => "edit (nothing, or not a regular file)".into(),
            },
            27..=31 => match self.some_file() {
                Some(p) => {
                    let _ = fs::remove_file(self.repo.root.join(&p));
                    format!("delete {p:?}")
                }
                None => "delete (nothing)".into(),
            },
            32..=43 => {
                if self.rng.chance(40) {
                    self.git(&["add", "-A"]);
                    "git add -A".into()
                } else if let Some(p) = self.some_file() {
                    self.git(&["add", "--", &p]);
                    format!("git add {p:?}")
                } else {
                    "add (nothing)".into()
                }
            }
            44..=47 => match self.some_file() {
                Some(p) => {
                    let cached = self.rng.chance(50);
                    if cached {
                        self.git(&["rm", "-q", "--cached", "--", &p]);
                    } else {
                        self.git(&["rm", "-q", "-f", "--", &p]);
                    }
                    format!("git rm {}{p:?}", if cached { "--cached " } else { "" })
                }
                None => "rm (nothing)".into(),
            },
            48..=50 => {
                // Renames git must find by similarity: files moved by the file system with small edits, staged
                // as deletions and additions (several at once, some with the same basename).
                let mut moved = Vec::new();
                for _ in 0..1 + self.rng.below(3) {
                    let Some(p) = self.some_file() else { break };
                    let full = self.repo.root.join(&p);
                    if !fs::symlink_metadata(&full).is_ok_and(|m| m.is_file()) {
                        continue;
                    }
                    let d = *self.rng.pick(&DIRS).expect("dirs");
                    let base = p.rsplit('/').next().unwrap_or(&p).to_owned();
                    let to = if self.rng.chance(50) {
                        format!("{d}{base}")
                    } else {
                        self.new_path()
                    };
                    let dest = self.repo.root.join(&to);
                    if dest.exists() || fs::create_dir_all(dest.parent().expect("parent")).is_err()
                    {
                        continue;
                    }
                    if fs::rename(&full, &dest).is_ok() {
                        let extra = self.content();
                        let _ = fs::OpenOptions::new()
                            .append(true)
                            .open(&dest)
                            .and_then(|mut f| std::io::Write::write_all(&mut f, extra.as_bytes()));
                        moved.push(format!("{p:?} -> {to:?}"));
                    }
                }
                self.git(&["add", "-A"]);
                format!("move and edit {}, git add -A", moved.join(", "))
            }
            51..=53 => match self.some_file() {
                Some(p) => {
                    let to = self.new_path();
                    if let Some(parent) = self.repo.root.join(&to).parent() {
                        let _ = fs::create_dir_all(parent);
                    }
                    let ok = self.git(&["mv", "-k", "--", &p, &to]);
                    let regular =
                        fs::symlink_metadata(self.repo.root.join(&to)).is_ok_and(|m| m.is_file());
                    let edited = ok && regular && self.rng.chance(50);
                    if edited {
                        let _ = fs::OpenOptions::new()
                            .append(true)
                            .open(self.repo.root.join(&to))
                            .and_then(|mut f| std::io::Write::write_all(&mut f, b"edit\n"));
                        if self.rng.chance(50) {
                            self.git(&["add", "--", &to]);
                        }
                    }
                    format!("git mv {p:?} {to:?}{}", if edited { " + edit" } else { "" })
                }
                None => "mv (nothing)".into(),
            },
            54..=56 => match self.some_file() {
                Some(p) => {
                    let full = self.repo.root.join(&p);
                    if let Ok(m) = fs::symlink_metadata(&full)
                        && m.is_file()
                    {
                        let mode = m.permissions().mode() ^ 0o111;
                        let _ = fs::set_permissions(&full, fs::Permissions::from_mode(mode));
                    }
                    format!("chmod {p:?}")
                }
                None => "chmod (nothing)".into(),
            },
            57..=59 => {
                let p = self.new_path();
                self.write(&p);
                self.git(&["add", "-N", "--", &p]);
                format!("git add -N {p:?}")
            }
            60..=62 => match self.some_file() {
                Some(p) => {
                    // Partial staging: one version staged, another in the work tree.
                    self.write(&p);
                    self.git(&["add", "--", &p]);
                    self.write(&p);
                    format!("stage then edit {p:?}")
                }
                None => "partial (nothing)".into(),
            },
            63..=67 => {
                self.git(&["add", "-A"]);
                self.git(&["commit", "-q", "--no-verify", "-m", "step"]);
                "commit -a".into()
            }
            68..=69 => {
                let name = format!("b{}", self.rng.below(3));
                if !self.git(&["checkout", "-q", "-b", &name]) {
                    self.git(&["checkout", "-q", "-f", &name]);
                }
                format!("checkout {name}")
            }
            70..=71 => self.conflict(),
            72 => self.submodule(),
            73..=74 => {
                let how = self.rng.below(4);
                let dir = ["d", "x", "sp ace"][self.rng.below(3)];
                match how {
                    0 => self.git(&["sparse-checkout", "set", "--cone", dir]),
                    1 => self.git(&["sparse-checkout", "set", "--cone", dir, "--sparse-index"]),
                    _ => self.git(&["sparse-checkout", "disable"]),
                };
                format!("sparse-checkout {how} {dir:?}")
            }
            75 => {
                let on = self.rng.chance(50);
                self.git(&[
                    "update-index",
                    if on {
                        "--split-index"
                    } else {
                        "--no-split-index"
                    },
                ]);
                format!("split index {on}")
            }
            76 => {
                let v = ["2", "3", "4"][self.rng.below(3)];
                self.git(&["update-index", "--index-version", v]);
                format!("index version {v}")
            }
            77..=79 => {
                let d = *self.rng.pick(&DIRS).expect("dirs");
                let rule = *self.rng.pick(&IGNORES).expect("rules");
                let p = self.repo.root.join(d).join(".gitignore");
                let _ = fs::create_dir_all(p.parent().expect("parent"));
                let mut text = fs::read_to_string(&p).unwrap_or_default();
                text.push_str(rule);
                text.push('\n');
                let _ = fs::write(&p, text);
                format!("ignore {rule:?} in {d:?}")
            }
            80..=81 => match self.some_file() {
                Some(p) => {
                    let full = self.repo.root.join(&p);
                    let target = self.some_file().unwrap_or_else(|| "nowhere".into());
                    let _ = fs::remove_file(&full);
                    let _ = std::os::unix::fs::symlink(&target, &full);
                    format!("symlink {p:?} -> {target:?}")
                }
                None => "symlink (nothing)".into(),
            },
            82..=83 => {
                // A file becomes a directory, or a directory a file.
                let dirs = self.dirs();
                if self.rng.chance(50)
                    && let Some(d) = self.rng.pick(&dirs).cloned()
                {
                    let _ = fs::remove_dir_all(self.repo.root.join(&d));
                    let _ = fs::write(self.repo.root.join(&d), "now a file\n");
                    format!("dir {d:?} becomes a file")
                } else if let Some(p) = self.some_file() {
                    let full = self.repo.root.join(&p);
                    let _ = fs::remove_file(&full);
                    let _ = fs::create_dir_all(&full);
                    let _ = fs::write(full.join("inside.txt"), "i\n");
                    format!("file {p:?} becomes a directory")
                } else {
                    "type change (nothing)".into()
                }
            }
            84 => {
                let p = self.new_path();
                let full = self.repo.root.join(&p);
                let _ = fs::create_dir_all(full.parent().expect("parent"));
                let _ = git::command("mkfifo").arg(&full).status();
                format!("mkfifo {p:?}")
            }
            85 => {
                let d = ["nested", "d/inner"][self.rng.below(2)];
                let full = self.repo.root.join(d);
                let _ = fs::create_dir_all(&full);
                self.repo.git_in(&full, &["init", "-q"]);
                format!("nested repository {d:?}")
            }
            86..=89 => {
                // Refresh: what a user's shell does, sometimes after every file got an old mtime (not racy).
                if self.rng.chance(50) {
                    let old = SystemTime::now() - Duration::from_secs(3600);
                    for f in self.files() {
                        let p = self.repo.root.join(&f);
                        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_file())
                            && let Ok(file) = fs::File::options().write(true).open(&p)
                        {
                            let _ = file.set_modified(old);
                        }
                    }
                }
                self.git(&["status", "--short"]);
                "refresh".into()
            }
            90..=93 => {
                let (key, values): (&str, &[&str]) = match self.rng.below(10) {
                    0 => ("status.showUntrackedFiles", &["no", "normal", "all"]),
                    1 => ("status.renames", &["false", "true", "copies"]),
                    2 => ("core.quotePath", &["false", "true"]),
                    3 => ("status.relativePaths", &["false", "true"]),
                    4 => ("core.filemode", &["false", "true"]),
                    5 => ("core.ignorecase", &["true", "false"]),
                    6 => ("core.autocrlf", &["true", "false", "input"]),
                    7 => ("core.checkStat", &["minimal", "default"]),
                    8 => ("core.precomposeUnicode", &["true", "false"]),
                    _ => ("core.trustctime", &["false", "true"]),
                };
                let v = *self.rng.pick(values).expect("values");
                self.crlf |= key == "core.autocrlf" && v != "false";
                self.git(&["config", key, v]);
                format!("config {key}={v}")
            }
            94 => {
                let _ = fs::write(
                    self.repo.root.join(".gitattributes"),
                    "*.txt text=auto\n*.bin binary\n",
                );
                self.crlf = true;
                "gitattributes text=auto".into()
            }
            95 => {
                let ok = self.git(&["reset", "-q", "--soft", "HEAD~1"]);
                format!("reset --soft HEAD~1 ({ok})")
            }
            96 => {
                let dirs = self.dirs();
                match self.rng.pick(&dirs).cloned() {
                    Some(d) => {
                        let _ = fs::remove_dir_all(self.repo.root.join(&d));
                        format!("rm -r {d:?}")
                    }
                    None => "rm -r (nothing)".into(),
                }
            }
            97 => {
                let d = *self.rng.pick(&DIRS).expect("dirs");
                let _ = fs::create_dir_all(self.repo.root.join(d).join("empty/inner"));
                format!("empty directories in {d:?}")
            }
            _ => {
                let ok = self.git(&["stash", "-q"]);
                format!("stash ({ok})")
            }
        }
    }

    fn conflict(&mut self) -> String {
        let p = "conflict.txt";
        self.write(p);
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--no-verify", "-m", "base"]);
        let here = self
            .repo
            .git(&["rev-parse", "--abbrev-ref", "HEAD"])
            .trim()
            .to_owned();
        self.git(&["checkout", "-q", "-B", "other"]);
        self.write(p);
        if self.rng.chance(30) {
            let _ = fs::remove_file(self.repo.root.join(p));
        }
        self.write("only-other.txt");
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--no-verify", "-m", "other"]);
        self.git(&["checkout", "-q", "-f", &here]);
        self.write(p);
        self.write("only-other.txt");
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--no-verify", "-m", "ours"]);
        let merged = self.git(&["merge", "-q", "--no-edit", "other"]);
        format!("merge with conflicts from {here} (clean: {merged})")
    }

    fn submodule(&mut self) -> String {
        let src = self.sub_src.to_string_lossy().into_owned();
        let name = ["sub", "d/sub2"][self.rng.below(2)];
        if self.repo.root.join(name).join(".git").exists() {
            let inner = self.repo.root.join(name);
            let _ = fs::write(inner.join("s.txt"), self.content());
            if self.rng.chance(50) {
                self.repo.git_in(&inner, &["commit", "-q", "-am", "inner"]);
                return format!("new commit in submodule {name}");
            }
            return format!("dirty submodule {name}");
        }
        let ok = self.git(&[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            "-f",
            &src,
            name,
        ]);
        format!("submodule add {name} ({ok})")
    }
}

#[derive(Default)]
struct Tally {
    states: usize,
    mismatches: Vec<String>,
    native: usize,
    cli: usize,
    declined: BTreeMap<String, usize>,
    /// States checked through a [`StatusCache`] fed by a simulated file watcher, and how many of its snapshots were
    /// full ones.
    cached: usize,
    cache_full: u64,
    /// States whose native answer skipped listings on the word of git's untracked cache, and how many it skipped.
    untracked_cache_states: usize,
    unlisted: usize,
}

/// What a file watcher sees of a path: its type, size, times, inode and mode.
type Sig = (bool, u64, i128, u64, u32);

/// Every path of the work tree (`.git` included, as an editor's watcher reports it) with its [`Sig`].
fn watch(root: &Path) -> BTreeMap<PathBuf, Sig> {
    use std::os::unix::fs::MetadataExt;
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Sig>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = fs::symlink_metadata(&p) else {
                continue;
            };
            let t = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
            out.insert(p.clone(), (m.is_dir(), m.len(), t, m.ino(), m.mode()));
            if m.is_dir() {
                walk(&p, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// The paths a watcher reports between two views: created, deleted, changed.
fn reported(before: &BTreeMap<PathBuf, Sig>, after: &BTreeMap<PathBuf, Sig>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = after
        .iter()
        .filter(|(p, s)| before.get(*p) != Some(s))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(before.keys().filter(|p| !after.contains_key(*p)).cloned());
    out
}

/// `GIT_DIFF_KEEP=1`: the repository of a mismatch stays on disk for a look (its path is printed).
fn keep_for_debugging(w: World) {
    if std::env::var_os("GIT_DIFF_KEEP").is_some() {
        eprintln!("kept: {}", w.repo.root.display());
        std::mem::forget(w);
    }
}

fn run_seed(seed: u64, steps: usize, untracked_cache: bool, tally: &mut Tally) {
    let repo = Repo::new();
    let sub_src = repo.base.join("subsrc");
    fs::create_dir_all(&sub_src).expect("mkdir");
    repo.git_in(&sub_src, &["init", "-q", "-b", "main"]);
    fs::write(sub_src.join("s.txt"), "s\n").expect("write");
    repo.git_in(&sub_src, &["add", "."]);
    repo.git_in(&sub_src, &["commit", "-q", "-m", "s"]);
    let mut w = World {
        repo,
        rng: Rng(seed),
        sub_src,
        recipe: Vec::new(),
        crlf: false,
        backdates: 0,
    };
    for _ in 0..3 {
        let p = w.new_path();
        w.write(&p);
    }
    w.git(&["add", "-A"]);
    w.git(&["commit", "-q", "-m", "init"]);
    if untracked_cache {
        w.git(&["config", "core.untrackedCache", "true"]);
        w.git(&["update-index", "--untracked-cache"]);
        w.write_untracked_cache();
    }
    let cache = StatusCache::new(w.repo.root.clone(), w.repo.opts(Engine::Auto));
    let mut seen = watch(&w.repo.root);
    let _ = cache.snapshot();
    for step in 0..steps {
        let what = w.step();
        w.recipe.push(what);
        if untracked_cache && w.rng.chance(40) {
            w.write_untracked_cache();
            w.recipe.push("git writes its untracked cache".into());
        }
        let now = watch(&w.repo.root);
        cache.changed(reported(&seen, &now));
        seen = now;
        // From the root, or now and then from a subdirectory that exists.
        let dirs = w.dirs();
        let cwd = match (w.rng.chance(20), w.rng.pick(&dirs)) {
            (true, Some(d)) if w.repo.root.join(d).is_dir() => w.repo.root.join(d),
            _ => w.repo.root.clone(),
        };
        let out = w
            .repo
            .cmd(&cwd)
            .args([
                "--no-optional-locks",
                "status",
                "--short",
                "--ignore-submodules=dirty",
            ])
            .output()
            .expect("git status");
        if !out.status.success() {
            continue; // a state git itself cannot read is not a state of the corpus
        }
        let want: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        tally.states += 1;
        let snap = w.repo.snap_in(&cwd, Engine::Auto);
        if snap.status_unlisted_dirs > 0 {
            tally.untracked_cache_states += 1;
            tally.unlisted += snap.status_unlisted_dirs;
        }
        match snap.status_engine {
            Some(StatusEngine::Native) => tally.native += 1,
            Some(StatusEngine::GitCli) => tally.cli += 1,
            None => {}
        }
        if let Some(why) = &snap.status_declined {
            // Group reasons by their first words (paths vary).
            let key: String = why.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
            *tally.declined.entry(key).or_default() += 1;
        }
        if cwd == w.repo.root {
            tally.cached += 1;
            let kept = cache.snapshot().ok().flatten();
            if kept.as_ref().map(|k| &k.status_lines) != Some(&want) {
                tally.mismatches.push(format!(
                    "seed {seed}, step {step}, through the status cache:\n  git:  {want:?}\n  ours: {:?}\n  recipe:\n    {}",
                    kept.map(|k| (k.status_lines, k.status_problem)),
                    w.recipe.join("\n    ")
                ));
                keep_for_debugging(w);
                return;
            }
        }
        if snap.status_problem.is_some() || snap.status_lines != want {
            tally.mismatches.push(format!(
                "seed {seed}, step {step}, cwd {}:\n  git:  {want:?}\n  ours: {:?} {:?} ({:?})\n  recipe:\n    {}",
                cwd.display(),
                snap.status_lines,
                snap.status_problem,
                snap.status_engine,
                w.recipe.join("\n    ")
            ));
            keep_for_debugging(w);
            return; // the rest of this seed builds on a state already reported
        }
    }
    tally.cache_full += cache.full_snapshots();
}

/// The same with git's untracked cache on (`core.untrackedCache`, `git update-index --untracked-cache`), git writing
/// it now and then between the steps: the directories it vouches for are not listed, and the answer must not change.
#[test]
fn status_equals_git_over_random_states_with_the_untracked_cache() {
    let states: usize = std::env::var("GIT_DIFF_STATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(72);
    let steps = 12;
    let seeds: Vec<u64> = match std::env::var("GIT_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(s) => vec![s],
        None => (1..=states.div_ceil(steps) as u64).collect(),
    };
    let mut tally = Tally::default();
    for seed in seeds {
        run_seed(seed + 10_000, steps, true, &mut tally);
    }
    eprintln!(
        "git differential with the untracked cache: {} states, {} mismatches; native engine answered {}, git CLI \
         {}; {} answers skipped listings on the cache's word ({} directories)",
        tally.states,
        tally.mismatches.len(),
        tally.native,
        tally.cli,
        tally.untracked_cache_states,
        tally.unlisted,
    );
    for (why, n) in &tally.declined {
        eprintln!("  declined {n:4}x: {why}");
    }
    assert!(
        tally.mismatches.is_empty(),
        "{}",
        tally.mismatches.join("\n\n")
    );
    assert!(
        tally.states < 50 || tally.untracked_cache_states * 4 >= tally.states,
        "the untracked cache was used in only {} of {} states",
        tally.untracked_cache_states,
        tally.states
    );
}

#[test]
fn status_equals_git_over_random_states() {
    let states: usize = std::env::var("GIT_DIFF_STATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(72);
    let steps = 12;
    let seeds: Vec<u64> = match std::env::var("GIT_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(s) => vec![s],
        None => (1..=states.div_ceil(steps) as u64).collect(),
    };
    let mut tally = Tally::default();
    for seed in seeds {
        run_seed(seed, steps, false, &mut tally);
    }
    eprintln!(
        "git differential: {} states, {} mismatches; native engine answered {}, git CLI {}; {} states through the \
         status cache ({} of its snapshots were full ones)",
        tally.states,
        tally.mismatches.len(),
        tally.native,
        tally.cli,
        tally.cached,
        tally.cache_full,
    );
    for (why, n) in &tally.declined {
        eprintln!("  declined {n:4}x: {why}");
    }
    assert!(
        tally.mismatches.is_empty(),
        "{}",
        tally.mismatches.join("\n\n")
    );
    assert!(
        tally.states < 50 || tally.native * 2 >= tally.states,
        "the native engine answered only {} of {} states",
        tally.native,
        tally.states
    );
}
