//! A Bash command judged part by part (`../shared/spec/permissions-trust.md` section 4).
//!
//! The line is parsed ([`super::shell`]) into the simple commands it runs; each part gets a
//! [`Verdict`], and the line's is the worst of them:
//! - **deny** when any part matches a `Bash(…)` deny rule (also once its assignments and wrapper
//!   words like `sudo`, `env`, `timeout`, `nohup` are taken off, and inside `bash -c '…'` and
//!   `$(…)`), reads a file a `Read` deny covers (a path argument, `<`, a glob that expands to
//!   it), or writes one an `Edit` (or `Read`) deny covers (`>`, a file command's argument): the
//!   whole line is refused with the measured text, nothing runs;
//! - **ask** when any part matches an ask rule;
//! - **allowed** when every part matches an allow rule, or is one of the audited read-only
//!   commands ([`SAFE`]) on paths inside the working directories next to at least one allowed
//!   part. A part with a nested command, a variable or an output redirection is never allowed by
//!   a rule that names a command (`Bash(echo:*)` does not cover `echo $(rm x)`): only the whole
//!   tool (`Bash`) or a mode covers it;
//! - otherwise the user is asked, and the first part that needs it says why in the measured
//!   words (a nested command, a variable, an output redirection, a file command and the path it
//!   changes, a read outside the working directories, an unknown command).
//!
//! **Safety difference** (docs/decisions.md): the reference runs commands it deems read-only
//! (`echo hi`, `git status`, `cat` inside cwd) with no rule and no prompt. Here no command runs
//! without a prompt unless an allow rule or a mode allows it; the audited read-only commands only
//! stand without a rule beside parts a rule allowed (`touch t6 | cat`). `git` is never in that
//! set: it runs what the repository's configuration names (hooks, fsmonitor, filters, aliases).

use std::path::{Component, Path, PathBuf};

use super::rule::{Form, Kind, Rule};
use super::shell::{self, Parsed, Part, Redirect, Simple, Word};
use super::texts;

/// The audited read-only commands: they read files or print, run no other program, and write
/// nothing; with the options that would break that (a recursive read, a file list from a file).
/// `true` when their arguments are paths.
pub const SAFE: &[(&str, bool)] = &[
    ("cat", true),
    ("head", true),
    ("tail", true),
    ("wc", true),
    ("ls", true),
    ("grep", true),
    ("cut", true),
    ("nl", true),
    ("diff", true),
    ("cmp", true),
    ("echo", false),
    ("printf", false),
    ("pwd", false),
    ("basename", false),
    ("dirname", false),
    ("tr", false),
    ("true", false),
    ("false", false),
];

/// Commands whose arguments are not file paths (no Read deny is matched on them).
const NOT_PATHS: &[&str] = &[
    "echo", "printf", "pwd", "basename", "dirname", "tr", "true", "false", "test", "[", "expr",
    "seq", "sleep", "export", "unset", "cd",
];

/// Commands that create, change or remove the files they name (the "needs approval" text).
const FILE_COMMANDS: &[&str] = &[
    "mkdir", "touch", "rm", "rmdir", "mv", "cp", "ln", "chmod", "chown", "truncate", "unlink",
];

/// The file commands accept-edits mode runs on paths inside the working directories.
pub const ACCEPT_EDITS_COMMANDS: &[&str] = &["mkdir", "touch", "rm", "rmdir", "mv", "cp"];

/// Words that run the command after them (taken off before deny rules are matched again).
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nohup", "time", "nice", "timeout", "command", "builtin", "exec",
    "xargs", "stdbuf", "ionice", "setsid", "unbuffer",
];

/// Shells whose `-c` script is judged too (for deny rules).
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh"];

/// What the judgement needs to know about where the session works, and the file system through
/// the caller (the tools): real paths, glob expansion, files that make programs run code.
pub trait Lookup {
    /// The real path of an absolute path (links followed), or the path itself.
    fn real(&self, path: &Path) -> PathBuf;
    /// The files an absolute glob pattern names now (bounded).
    fn expand(&self, pattern: &Path) -> Vec<PathBuf>;
    /// Does a change to this real path make programs run code (a git directory, editor tasks)?
    fn runs_code(&self, real: &Path) -> bool;
}

/// Where a command runs.
#[derive(Clone, Copy, Debug)]
pub struct Dirs<'a> {
    /// Bash's working directory: relative paths start there.
    pub cwd: &'a Path,
    /// The working directories (workspace folders, then additional directories), real paths.
    pub working: &'a [PathBuf],
    pub home: Option<&'a Path>,
}

impl Dirs<'_> {
    fn inside(&self, real: &Path) -> bool {
        self.working.iter().any(|d| real.starts_with(d))
    }
}

/// One part's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A deny rule covers it (the rule's text).
    Deny(String),
    /// An ask rule covers it.
    Ask(String),
    /// An allow rule covers it.
    Allow(String),
    /// An audited read-only command on paths inside the working directories.
    Safe,
    /// A file command on paths inside the working directories, none of which runs code: what
    /// accept-edits mode runs.
    FileChange(String),
    /// Nothing covers it: the user decides, and this says why (the measured words).
    Unchecked(String),
}

/// A judged line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judged {
    /// Each part as the rules saw it, with its verdict.
    pub parts: Vec<(String, Verdict)>,
    /// The whole `Bash` tool is allowed (or asked) by a rule.
    pub whole_allowed: bool,
    pub whole_ask: Option<String>,
}

impl Judged {
    pub fn denied(&self) -> Option<&str> {
        self.parts.iter().find_map(|(_, v)| match v {
            Verdict::Deny(r) => Some(r.as_str()),
            _ => None,
        })
    }

    pub fn asked(&self) -> Option<&str> {
        self.whole_ask.as_deref().or_else(|| {
            self.parts.iter().find_map(|(_, v)| match v {
                Verdict::Ask(r) => Some(r.as_str()),
                _ => None,
            })
        })
    }

    /// Every part is one of the audited read-only commands (what plan mode lets run).
    pub fn read_only(&self) -> bool {
        !self.parts.is_empty() && self.parts.iter().all(|(_, v)| *v == Verdict::Safe)
    }

    /// Rules allow the line: the whole tool, or every part allowed or safe with one allowed.
    pub fn allowed(&self) -> bool {
        self.whole_allowed
            || (self
                .parts
                .iter()
                .all(|(_, v)| matches!(v, Verdict::Allow(_) | Verdict::Safe))
                && self
                    .parts
                    .iter()
                    .any(|(_, v)| matches!(v, Verdict::Allow(_))))
    }

    /// Accept-edits mode runs it: every part allowed, safe, or a file command inside.
    pub fn accepted_as_edit(&self) -> bool {
        self.whole_allowed
            || (!self.parts.is_empty()
                && self.parts.iter().all(|(_, v)| {
                    matches!(
                        v,
                        Verdict::Allow(_) | Verdict::Safe | Verdict::FileChange(_)
                    )
                }))
    }

    /// Why the user is asked: the first part that needs it.
    pub fn reason(&self) -> Option<&str> {
        self.parts.iter().find_map(|(_, v)| match v {
            Verdict::Unchecked(r) => Some(r.as_str()),
            Verdict::FileChange(r) => Some(r.as_str()),
            _ => None,
        })
    }
}

/// Judges `command` against `rules` (every source, already filtered).
pub fn judge(command: &str, rules: &[Rule], dirs: &Dirs<'_>, look: &dyn Lookup) -> Judged {
    let whole = |kind: Kind| {
        rules
            .iter()
            .find(|r| r.kind == kind && r.is_whole("Bash"))
            .map(|r| r.text.clone())
    };
    let mut judged = Judged {
        parts: Vec::new(),
        whole_allowed: whole(Kind::Allow).is_some(),
        whole_ask: whole(Kind::Ask),
    };
    match shell::parse(command) {
        Parsed::Parts(parts) => {
            for part in parts {
                let p = match &part {
                    Part::Simple(s) => (s.text.clone(), simple(s, rules, dirs, look, 0)),
                    Part::Opaque(text) => {
                        let v = rough_deny(text, rules)
                            .map(Verdict::Deny)
                            .unwrap_or_else(|| Verdict::Unchecked(texts::REQUIRES_APPROVAL.into()));
                        (text.clone(), v)
                    }
                };
                judged.parts.push(p);
            }
            if judged.parts.is_empty() {
                judged.parts.push((
                    command.to_string(),
                    Verdict::Unchecked(texts::REQUIRES_APPROVAL.into()),
                ));
            }
        }
        Parsed::Unreadable => {
            let v = rough_deny(command, rules)
                .map(Verdict::Deny)
                .unwrap_or_else(|| Verdict::Unchecked(texts::REQUIRES_APPROVAL.into()));
            judged.parts.push((command.to_string(), v));
        }
    }
    judged
}

/// A deny rule matched by any rough piece of `text` (an unreadable line, a loop's body).
fn rough_deny(text: &str, rules: &[Rule]) -> Option<String> {
    shell::rough_parts(text).iter().find_map(|piece| {
        deny_bash(piece, rules).or_else(|| deny_bash(&unwrapped_text(piece), rules))
    })
}

fn bash_rule<'a>(rules: &'a [Rule], kind: Kind, text: &str) -> Option<&'a Rule> {
    rules
        .iter()
        .find(|r| r.kind == kind && matches!(&r.form, Form::Bash(p) if p.matches(text)))
}

fn deny_bash(text: &str, rules: &[Rule]) -> Option<String> {
    bash_rule(rules, Kind::Deny, text).map(|r| r.text.clone())
}

/// `text` without leading assignments and wrapper words (and their options and durations).
fn unwrapped_text(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if is_assignment(w) || w.starts_with('-') {
            i += 1;
        } else if WRAPPERS.contains(&w) {
            i += 1;
            // `timeout 10 cmd`, `nice -n 5 cmd`: a number after a wrapper is its argument.
            while i < words.len()
                && (words[i].starts_with('-')
                    || words[i].chars().next().is_some_and(|c| c.is_ascii_digit()))
            {
                i += 1;
            }
        } else {
            break;
        }
    }
    words[i.min(words.len())..].join(" ")
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The verdict of one simple command.
fn simple(s: &Simple, rules: &[Rule], dirs: &Dirs<'_>, look: &dyn Lookup, level: usize) -> Verdict {
    if let Some(rule) = deny(s, rules, dirs, look, level) {
        return Verdict::Deny(rule);
    }
    if let Some(r) = bash_rule(rules, Kind::Ask, &s.text) {
        return Verdict::Ask(r.text.clone());
    }
    let structural = if !s.nested.is_empty() {
        Some(texts::NESTED.to_string())
    } else if s.variable {
        Some(texts::VARIABLE.to_string())
    } else {
        out_redirect(s, dirs, look)
    };
    if let Some(why) = structural {
        return Verdict::Unchecked(why);
    }
    if let Some(r) = bash_rule(rules, Kind::Allow, &s.text) {
        return Verdict::Allow(r.text.clone());
    }
    classify(s, dirs, look)
}

/// The first output redirection to a file other than `/dev/null`: why it needs approval.
fn out_redirect(s: &Simple, dirs: &Dirs<'_>, look: &dyn Lookup) -> Option<String> {
    s.redirects.iter().find_map(|r| match r {
        Redirect::Out(w) => {
            let path = path_of(w, dirs)?;
            if path == Path::new("/dev/null") {
                return None;
            }
            let real = look.real(&path);
            Some(texts::redirect_needs_approval(
                &path,
                dirs.inside(&real),
                dirs.working,
            ))
        }
        // A target the shell computes (`> $F`) was caught as a variable before this.
        Redirect::In(_) => None,
    })
}

/// The command word as the shell runs it (its literal text), if it has one.
fn command_word(s: &Simple) -> Option<&str> {
    s.words.first()?.literal.as_deref()
}

/// A part no rule covers: safe, a file change, or why the user must decide.
fn classify(s: &Simple, dirs: &Dirs<'_>, look: &dyn Lookup) -> Verdict {
    let Some(cmd) = command_word(s) else {
        return Verdict::Unchecked(texts::REQUIRES_APPROVAL.into());
    };
    let name = cmd.rsplit('/').next().unwrap_or(cmd);
    let args = &s.words[1..];
    if s.assignments {
        // `FOO=1 touch t13`: no rule matched the line as written; the file command's text still
        // says what it changes.
        if FILE_COMMANDS.contains(&name) {
            return file_change(name, args, dirs, look, false);
        }
        return Verdict::Unchecked(texts::REQUIRES_APPROVAL.into());
    }
    if let Some((_, paths)) = SAFE.iter().find(|(n, _)| *n == cmd) {
        if !options_safe(cmd, args) {
            return Verdict::Unchecked(texts::REQUIRES_APPROVAL.into());
        }
        if !*paths {
            return Verdict::Safe;
        }
        for w in args {
            let Some(lit) = w.literal.as_deref() else {
                return Verdict::Unchecked(texts::VARIABLE.into());
            };
            if lit.starts_with('-') && lit != "-" {
                continue;
            }
            let Some(path) = path_of(w, dirs) else {
                continue;
            };
            let files = if w.glob {
                look.expand(&path)
            } else {
                vec![look.real(&path)]
            };
            let pattern_dir = if w.glob {
                look.real(&glob_base(&path))
            } else {
                look.real(&path)
            };
            if !dirs.inside(&pattern_dir) || files.iter().any(|f| !dirs.inside(f)) {
                return Verdict::Unchecked(texts::read_outside(cmd, &path, dirs.working));
            }
        }
        return Verdict::Safe;
    }
    if FILE_COMMANDS.contains(&name) && name == cmd {
        return file_change(name, args, dirs, look, true);
    }
    Verdict::Unchecked(texts::REQUIRES_APPROVAL.into())
}

/// Options that would make an audited command read more than its arguments name.
fn options_safe(cmd: &str, args: &[Word]) -> bool {
    args.iter().all(|w| {
        let Some(l) = w.literal.as_deref() else {
            return true;
        };
        match cmd {
            "grep" | "diff" => {
                let recursive = l == "--recursive"
                    || l == "--dereference-recursive"
                    || l.starts_with("--directories")
                    || l.starts_with("--exclude-from")
                    || (l.starts_with('-') && !l.starts_with("--") && l.contains(['r', 'R', 'd']));
                !recursive
            }
            "wc" => !l.starts_with("--files0-from"),
            _ => true,
        }
    })
}

/// A file command: what it changes, and whether accept-edits mode may run it.
fn file_change(
    name: &str,
    args: &[Word],
    dirs: &Dirs<'_>,
    look: &dyn Lookup,
    eligible: bool,
) -> Verdict {
    let mut paths = Vec::new();
    let mut skip_first = matches!(name, "chmod" | "chown");
    for w in args {
        let Some(lit) = w.literal.as_deref() else {
            return Verdict::Unchecked(texts::VARIABLE.into());
        };
        if lit.starts_with('-') && lit != "-" {
            continue;
        }
        if skip_first {
            skip_first = false;
            continue;
        }
        if let Some(p) = path_of(w, dirs) {
            paths.push((p, w.glob));
        }
    }
    let Some((first, _)) = paths.first() else {
        return Verdict::Unchecked(texts::REQUIRES_APPROVAL.into());
    };
    let first_inside = dirs.inside(&look.real(first));
    let text = texts::needs_approval(name, first, first_inside, dirs.working);
    let all_inside = paths.iter().all(|(p, glob)| {
        let reals = if *glob {
            look.expand(p)
        } else {
            vec![look.real(p)]
        };
        let base = if *glob { glob_base(p) } else { p.clone() };
        dirs.inside(&look.real(&base))
            && reals.iter().all(|r| {
                dirs.inside(r)
                    && !look.runs_code(r)
                    // Never a working directory itself or a folder holding one (`rm -rf .`).
                    && !dirs.working.iter().any(|d| d.starts_with(r))
            })
    });
    if eligible && ACCEPT_EDITS_COMMANDS.contains(&name) && all_inside {
        Verdict::FileChange(text)
    } else {
        Verdict::Unchecked(text)
    }
}

/// The deny rule a simple command falls under, if any.
fn deny(
    s: &Simple,
    rules: &[Rule],
    dirs: &Dirs<'_>,
    look: &dyn Lookup,
    level: usize,
) -> Option<String> {
    if let Some(r) = deny_bash(&s.text, rules) {
        return Some(r);
    }
    let words: Vec<String> = s
        .words
        .iter()
        .map(|w| w.literal.clone().unwrap_or_else(|| w.raw.clone()))
        .collect();
    let unwrapped = unwrapped_text(&words.join(" "));
    if let Some(r) = deny_bash(&unwrapped, rules) {
        return Some(r);
    }
    // Scripts that run inside: `$(…)`, `bash -c '…'`, an unwrapped `sh -c`.
    let mut scripts: Vec<String> = s.nested.clone();
    let mut it = unwrapped.split_whitespace();
    if it
        .next()
        .is_some_and(|c| SHELLS.contains(&c.rsplit('/').next().unwrap_or(c)))
    {
        let lits: Vec<&str> = s
            .words
            .iter()
            .filter_map(|w| w.literal.as_deref())
            .collect();
        if let Some(i) = lits.iter().position(|w| *w == "-c")
            && let Some(script) = lits.get(i + 1)
        {
            scripts.push((*script).to_string());
        }
    }
    if level < 3 {
        for script in scripts {
            match shell::parse(&script) {
                Parsed::Parts(parts) => {
                    for p in parts {
                        let r = match &p {
                            Part::Simple(inner) => deny(inner, rules, dirs, look, level + 1),
                            Part::Opaque(t) => rough_deny(t, rules),
                        };
                        if r.is_some() {
                            return r;
                        }
                    }
                }
                Parsed::Unreadable => {
                    if let Some(r) = rough_deny(&script, rules) {
                        return Some(r);
                    }
                }
            }
        }
    } else if !scripts.is_empty() {
        // Deeper than the judgement goes: a deny rule is matched on its rough pieces only.
        if let Some(r) = scripts.iter().find_map(|sc| rough_deny(sc, rules)) {
            return Some(r);
        }
    }
    // Files it reads or writes.
    let cmd = command_word(s).map(|c| c.rsplit('/').next().unwrap_or(c));
    let args_are_paths = cmd.is_none_or(|c| !NOT_PATHS.contains(&c));
    let changes = cmd.is_some_and(|c| FILE_COMMANDS.contains(&c));
    let mut read: Vec<(PathBuf, bool)> = Vec::new();
    let mut written: Vec<(PathBuf, bool)> = Vec::new();
    if args_are_paths {
        for w in s.words.iter().skip(1) {
            let Some(lit) = w.literal.as_deref() else {
                continue;
            };
            // `--file=.env`: the value is a path too.
            let value = match lit.split_once('=') {
                Some((opt, v)) if opt.starts_with('-') => v,
                _ if lit.starts_with('-') => continue,
                _ => lit,
            };
            let word = Word {
                literal: Some(value.to_string()),
                tilde: value.starts_with('~'),
                ..w.clone()
            };
            if let Some(p) = path_of(&word, dirs) {
                read.push((p.clone(), w.glob));
                if changes {
                    written.push((p, w.glob));
                }
            }
        }
    }
    for r in &s.redirects {
        match r {
            Redirect::In(w) => {
                if let Some(p) = path_of(w, dirs) {
                    read.push((p, w.glob));
                }
            }
            Redirect::Out(w) => {
                if let Some(p) = path_of(w, dirs) {
                    written.push((p.clone(), w.glob));
                    read.push((p, w.glob));
                }
            }
        }
    }
    let candidates = |p: &Path, glob: bool| -> Vec<PathBuf> {
        if glob {
            look.expand(p)
        } else {
            vec![p.to_path_buf(), look.real(p)]
        }
    };
    for (p, glob) in &read {
        for c in candidates(p, *glob) {
            if let Some(r) = path_rule(rules, super::rule::FileRule::Read, &c) {
                return Some(r);
            }
        }
    }
    for (p, glob) in &written {
        for c in candidates(p, *glob) {
            if let Some(r) = path_rule(rules, super::rule::FileRule::Edit, &c) {
                return Some(r);
            }
        }
    }
    None
}

fn path_rule(rules: &[Rule], family: super::rule::FileRule, path: &Path) -> Option<String> {
    rules
        .iter()
        .find(|r| {
            r.kind == Kind::Deny
                && matches!(&r.form, Form::Path(f, p) if *f == family && p.matches(path))
        })
        .map(|r| r.text.clone())
}

/// The absolute path a literal word names (relative to cwd, `~` expanded, `.` and `..` folded).
fn path_of(w: &Word, dirs: &Dirs<'_>) -> Option<PathBuf> {
    let lit = w.literal.as_deref()?;
    if lit.is_empty() {
        return None;
    }
    let p = if w.tilde {
        let home = dirs.home?;
        match lit.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None if lit == "~" => home.to_path_buf(),
            None => return None,
        }
    } else {
        dirs.cwd.join(lit)
    };
    Some(fold(&p))
}

fn fold(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// The folder a glob pattern starts in (its components before the first with a wildcard).
fn glob_base(pattern: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in pattern.components() {
        let s = c.as_os_str().to_string_lossy();
        if s.contains(['*', '?', '[']) {
            break;
        }
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::rule::{Bases, Source};
    use super::*;

    struct Disk {
        files: Vec<PathBuf>,
    }

    impl Lookup for Disk {
        fn real(&self, path: &Path) -> PathBuf {
            path.to_path_buf()
        }
        fn expand(&self, pattern: &Path) -> Vec<PathBuf> {
            let g = globset::GlobBuilder::new(&pattern.to_string_lossy())
                .literal_separator(true)
                .build()
                .unwrap()
                .compile_matcher();
            self.files
                .iter()
                .filter(|f| g.is_match(f))
                .cloned()
                .collect()
        }
        fn runs_code(&self, real: &Path) -> bool {
            real.components().any(|c| c.as_os_str() == ".git")
        }
    }

    fn rules(list: &[(Kind, &str)]) -> Vec<Rule> {
        let bases = Bases {
            cwd: "/R/repo".into(),
            home: Some("/R/home".into()),
            root: "/R/home".into(),
        };
        let mut n = Vec::new();
        list.iter()
            .map(|(k, t)| Rule::parse(t, *k, Source::command_line(), &bases, "x", &mut n))
            .collect()
    }

    fn judged(command: &str, rules: &[Rule]) -> Judged {
        let working = [PathBuf::from("/R/repo")];
        let dirs = Dirs {
            cwd: Path::new("/R/repo"),
            working: &working,
            home: Some(Path::new("/R/home")),
        };
        let disk = Disk {
            files: vec![
                "/R/repo/.env".into(),
                "/R/repo/config/app.env".into(),
                "/R/repo/README.md".into(),
            ],
        };
        judge(command, rules, &dirs, &disk)
    }

    /// r3/bash, line by line.
    #[test]
    fn compound_commands_are_judged_part_by_part_as_measured() {
        let r = rules(&[
            (Kind::Allow, "Bash(touch:*)"),
            (Kind::Allow, "Bash(mkdir d1)"),
            (Kind::Allow, "Bash(cp * copy.txt)"),
            (Kind::Allow, "Bash(mv *)"),
            (Kind::Deny, "Bash(rm:*)"),
        ]);
        for allowed in [
            "touch t2 && touch t3",
            "touch t10 || touch t11",
            "touch t6 | cat",
            "touch   t8",
            "mkdir d1",
            "cp README.md copy.txt",
            "mv t2 t2b",
        ] {
            let j = judged(allowed, &r);
            assert!(j.allowed(), "{allowed}: {j:?}");
        }
        for (cmd, reason) in [
            (
                "touch t4 && mkdir d4",
                "mkdir in '/R/repo/d4' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
            (
                "touch t5; mkdir d5",
                "mkdir in '/R/repo/d5' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
            (
                "touch t15\nmkdir d15",
                "mkdir in '/R/repo/d15' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
            (
                "FOO=1 touch t13",
                "touch in '/R/repo/t13' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
            ("bash -c 'touch t14'", "This command requires approval"),
            ("touchx t9", "This command requires approval"),
            (
                "echo $(touch t12)",
                "A nested command in this command can't be checked before it runs",
            ),
            (
                "echo ENV=$PPT_PROJECT_ENV",
                "A variable in this command can't be checked before it runs",
            ),
            (
                "echo hi > out.txt",
                "Output redirection to '/R/repo/out.txt' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
            (
                "cat /R/outside/o.txt",
                "cat in '/R/outside/o.txt' was blocked. For security, Claude Code may only concatenate files from the allowed working directories for this session: '/R/repo'.",
            ),
            (
                "cp README.md other.txt",
                "cp in '/R/repo/README.md' needs approval. The path is inside the working directories for this session ('/R/repo'), and Claude Code asks before a shell command creates, changes or removes files there.",
            ),
        ] {
            let j = judged(cmd, &r);
            assert!(!j.allowed() && j.denied().is_none(), "{cmd}: {j:?}");
            assert_eq!(j.reason(), Some(reason), "{cmd}");
        }
        for denied in [
            "touch t7 && rm -f t7",
            "ls && rm -f t3",
            "sudo rm -rf x",
            "FOO=1 rm x",
            "timeout 5 rm x",
            "bash -c 'ls; rm x'",
            "echo $(rm x)",
            "for f in a; do rm $f; done",
            "rm x; echo 'unterminated",
        ] {
            assert_eq!(judged(denied, &r).denied(), Some("Bash(rm:*)"), "{denied}");
        }
    }

    /// A Read deny also denies a command that reads the file (r1/user_forms), however it is named.
    #[test]
    fn a_read_deny_covers_commands_that_read_the_file() {
        let r = rules(&[
            (Kind::Deny, "Read(./.env)"),
            (Kind::Deny, "Edit(config/**)"),
        ]);
        for cmd in [
            "cat .env",
            "cat ./.env",
            "cp .env /tmp/x",
            "grep SECRET .env",
            "wc -l < .env",
            "cat .e*",
            "cat src/../.env",
            "less --file=.env",
            "echo x > config/app.env",
            "rm config/app.env",
        ] {
            assert!(judged(cmd, &r).denied().is_some(), "{cmd}");
        }
        for cmd in ["cat README.md", "echo .env", "cat *.md"] {
            assert!(judged(cmd, &r).denied().is_none(), "{cmd}");
        }
    }

    #[test]
    fn safe_commands_stand_only_beside_allowed_parts() {
        let none = rules(&[]);
        let j = judged("echo hi", &none);
        assert!(!j.allowed() && j.read_only(), "{j:?}");
        let r = rules(&[(Kind::Allow, "Bash(npm test:*)")]);
        assert!(judged("npm test | head -5", &r).allowed());
        assert!(!judged("npm test | grep -r x .", &r).allowed());
        assert!(!judged("npm test && git status", &r).allowed());
        assert!(!judged("npm test | cat /etc/passwd", &r).allowed());
        // A rule naming a command does not cover what it cannot see.
        let r = rules(&[(Kind::Allow, "Bash(echo:*)")]);
        assert!(!judged("echo $(rm -rf x)", &r).allowed());
        assert!(!judged("echo hi > x.txt", &r).allowed());
        assert!(judged("echo hi > /dev/null 2>&1", &r).allowed());
        // The whole tool does.
        let r = rules(&[(Kind::Allow, "Bash")]);
        assert!(judged("echo $(date) > x.txt", &r).allowed());
        let r = rules(&[(Kind::Ask, "Bash(echo:*)"), (Kind::Allow, "Bash(echo:*)")]);
        assert_eq!(judged("echo hi", &r).asked(), Some("Bash(echo:*)"));
    }

    #[test]
    fn accept_edits_runs_file_commands_inside_only() {
        let none = rules(&[]);
        assert!(judged("mkdir m1", &none).accepted_as_edit());
        assert!(judged("rm -f README.md", &none).accepted_as_edit());
        assert!(judged("mkdir a && touch a/b | cat", &none).accepted_as_edit());
        for cmd in [
            "mkdir /R/outside/m1",
            "rm -rf .",
            "rm -rf ..",
            "touch .git/hooks/pre-commit",
            "chmod +x run.sh",
            "rm $X",
        ] {
            assert!(!judged(cmd, &none).accepted_as_edit(), "{cmd}");
        }
        assert_eq!(
            judged("mkdir /R/outside/m1", &none).reason(),
            Some(
                "mkdir in '/R/outside/m1' needs approval. The path is outside the working directories for this session ('/R/repo'). Allowing runs the command as written."
            )
        );
    }
}
