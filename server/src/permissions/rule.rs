//! The rule grammar (`../shared/spec/permissions-trust.md` sections 2 and 3): `Tool` or
//! `Tool(specifier)`, parsed once into what it matches ([`Form`]), remembering where it was
//! written ([`Source`]) for the preview and `check`.
//!
//! Forms, as measured on the reference CLI:
//! - a bare tool name (`Bash`, `Edit`, `Grep`, `mcp__server__tool`), `Bash(*)`, and in a deny or
//!   ask list `Read(*)`/`Edit(*)`: the whole tool;
//! - `Read(path)`: every file-reading tool on those paths (Read, Glob and Grep, Bash commands that
//!   read them); `Edit(path)`: every file-editing tool (Edit **and** Write);
//! - `Read(*)`/`Edit(*)` in an allow list: the tool inside the working directories only (with the
//!   reference's warning for `Edit(*)`);
//! - `Bash(cmd)` exactly, `Bash(prefix:*)` and `Bash(prefix *)` (the command word and what
//!   follows), `Bash(a * b)` (a wildcard anywhere, with the reference's warning in allow lists);
//! - `mcp__server`, `mcp__server__*` (every tool of the server), `mcp__server__tool`;
//! - `WebFetch(domain:host)` (exactly that host);
//! - `Write(path)` and `Glob(path)` match nothing (the reference warns), `Grep(path)` neither (it
//!   does not warn); an unknown specifier matches nothing either.
//!
//! Path specifiers (section 3): `//abs` is absolute (`///abs` too), `~/x` is below the home folder,
//! `/x` is below the folder that holds the settings file's `.claude` folder (the project for
//! project and local settings, the home folder for user settings), and anything else (`./x`,
//! `src/**`, `**/*.env`) is below cwd. The pattern itself is gitignore's grammar, as the
//! reference reads it: `*` matches dot names, `**` crosses folders, a pattern without a slash
//! matches at any depth, `..` is never resolved. A one-slash absolute path is therefore below the
//! settings' folder and matches nothing real (`check` says so).

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which list a rule is in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Allow,
    Ask,
    Deny,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Ask => "ask",
            Kind::Deny => "deny",
        }
    }
}

/// Where a rule comes from.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// `managed-settings.json`.
    Managed,
    /// `~/.claude/settings.json`.
    User,
    /// `<cwd>/.claude/settings.json`.
    Project,
    /// `<cwd>/.claude/settings.local.json`.
    Local,
    /// `--allowed-tools` / `--disallowed-tools`.
    CommandLine,
}

impl Origin {
    pub fn label(self) -> &'static str {
        match self {
            Origin::Managed => "managed",
            Origin::User => "user",
            Origin::Project => "project",
            Origin::Local => "local",
            Origin::CommandLine => "command line",
        }
    }
}

/// Where a rule (or a mode) was written: the source, its file and the 0-based line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub origin: Origin,
    /// The settings file; absent for the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// 0-based line in `file`, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Source {
    pub fn command_line() -> Source {
        Source {
            origin: Origin::CommandLine,
            file: None,
            line: None,
        }
    }

    /// `~/.claude/settings.json:4`, `command line`.
    pub fn describe(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{}:{}", f.display(), l + 1),
            (Some(f), None) => f.display().to_string(),
            (None, _) => self.origin.label().to_string(),
        }
    }
}

/// The folders a path specifier is read against.
#[derive(Clone, Debug, Default)]
pub struct Bases {
    /// The session's working directory: `src/**`, `./x`, `**/*.env`.
    pub cwd: PathBuf,
    /// `~/x`.
    pub home: Option<PathBuf>,
    /// `/x`: the folder holding the settings file's `.claude` folder (cwd for the command line).
    pub root: PathBuf,
}

/// Which tool family a path rule names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRule {
    /// `Read(path)`: Read, Glob, Grep, and Bash commands that read.
    Read,
    /// `Edit(path)`: Edit and Write.
    Edit,
}

/// A compiled path specifier.
#[derive(Clone, Debug)]
pub struct PathPattern {
    /// The folder the pattern is below.
    root: PathBuf,
    /// One gitignore line, matched against the path relative to `root`.
    glob: Gitignore,
    /// Matches everything below `root` (`~`, `//`).
    everything: bool,
    /// A path the pattern matches (its wildcards as one name), for `check`'s overlap test.
    pub sample: PathBuf,
}

impl PathPattern {
    /// Reads a specifier as section 3 measures it. `None`: not a pattern gitignore reads.
    pub fn compile(spec: &str, bases: &Bases) -> Option<PathPattern> {
        let (root, pattern): (PathBuf, String) = if let Some(rest) = spec.strip_prefix("//") {
            (
                PathBuf::from("/"),
                format!("/{}", rest.trim_start_matches('/')),
            )
        } else if spec == "~" {
            (bases.home.clone()?, String::new())
        } else if let Some(rest) = spec.strip_prefix("~/") {
            (bases.home.clone()?, format!("/{rest}"))
        } else if spec.starts_with('/') {
            (bases.root.clone(), spec.to_string())
        } else if let Some(rest) = spec.strip_prefix("./") {
            (bases.cwd.clone(), format!("/{rest}"))
        } else {
            (bases.cwd.clone(), spec.to_string())
        };
        let bare = pattern.trim_start_matches('/');
        let sample = root.join(bare.replace("**", "x").replace(['*', '?'], "x"));
        if bare.is_empty() {
            return Some(PathPattern {
                root,
                glob: Gitignore::empty(),
                everything: true,
                sample,
            });
        }
        // A rule is never a whitelist or a comment: a leading `!` or `#` is a character.
        let line = if pattern.starts_with('!') || pattern.starts_with('#') {
            format!("\\{pattern}")
        } else {
            pattern
        };
        let mut b = GitignoreBuilder::new("/");
        b.add_line(None, &line).ok()?;
        let glob = b.build().ok()?;
        Some(PathPattern {
            root,
            glob,
            everything: false,
            sample,
        })
    }

    /// Does the pattern match `path` (absolute), or a folder it is in?
    pub fn matches(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        if rel.as_os_str().is_empty() {
            return false;
        }
        if self.everything {
            return true;
        }
        self.glob
            .matched_path_or_any_parents(rel, false)
            .is_ignore()
    }
}

/// A `Bash(…)` specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BashPattern {
    /// `Bash(mkdir d1)`: that command exactly.
    Exact(String),
    /// `Bash(touch:*)`, `Bash(mv *)`: the words and whatever follows them.
    Prefix(String),
    /// `Bash(cp * copy.txt)`: `*` anywhere matches any text.
    Wildcard(String),
}

impl BashPattern {
    fn parse(spec: &str) -> BashPattern {
        let spec = spec.trim();
        if let Some(p) = spec.strip_suffix(":*") {
            return BashPattern::Prefix(p.trim_end().to_string());
        }
        if let Some(p) = spec.strip_suffix(" *")
            && !p.contains('*')
        {
            return BashPattern::Prefix(p.trim_end().to_string());
        }
        if spec.contains('*') {
            return BashPattern::Wildcard(spec.to_string());
        }
        BashPattern::Exact(spec.to_string())
    }

    /// Does the pattern match one command (a part of a compound command, as written)?
    pub fn matches(&self, command: &str) -> bool {
        let command = command.trim();
        match self {
            BashPattern::Exact(c) => command == c,
            BashPattern::Prefix(p) => {
                command == p
                    || command
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
            }
            BashPattern::Wildcard(w) => wildcard(w, command),
        }
    }

    /// A command the pattern matches (its wildcards as one word), for `check`'s overlap test.
    pub fn sample(&self) -> String {
        match self {
            BashPattern::Exact(c) | BashPattern::Prefix(c) => c.clone(),
            BashPattern::Wildcard(w) => w.replace('*', "x"),
        }
    }

    /// A wildcard that stands before the rest of the command (the reference's warning).
    fn star_before_rest(&self) -> bool {
        matches!(self, BashPattern::Wildcard(w) if w.trim_end_matches('*').contains('*'))
    }
}

/// `*`-only wildcard matching over the whole text (`*` matches any text, spaces included).
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// What a rule matches.
#[derive(Clone, Debug)]
pub enum Form {
    /// Every call of one tool (`Bash`, `Read`, `mcp__s__t`).
    Tool(String),
    /// `Read(path)` / `Edit(path)`.
    Path(FileRule, PathPattern),
    /// `Read(*)` / `Edit(*)` in an allow list: inside the working directories.
    Inside(FileRule),
    Bash(BashPattern),
    /// `mcp__server` and `mcp__server__*`: every tool of a server (its normalised name).
    McpServer(String),
    /// `WebFetch(domain:host)`.
    Domain(String),
    /// Matches nothing (`Write(path)`, `Glob(path)`, `Grep(path)`, an unknown specifier).
    Inert,
}

/// One rule as written, what it matches, and where it is.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As written (trimmed).
    pub text: String,
    pub kind: Kind,
    pub source: Source,
    pub form: Form,
}

/// Something the reference prints on stderr about a rule it will not match as written, or
/// about entries it ignored (section 1), or what `check` says on top.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// A stable code (`permission-rule-write-path`, `permissions-untrusted`, …).
    pub code: String,
    pub message: String,
    pub source: Source,
    /// The rule it is about, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// The tools whose bare name a rule may give, besides MCP tools.
const KNOWN_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Bash",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "NotebookEdit",
    "Skill",
    "ToolSearch",
    "Agent",
    "Task",
];

impl Rule {
    /// Parses `text` from `source`; `shown` is the settings file as the reference's warnings name
    /// it (relative to cwd). Notices (the reference's warnings) go to `notices`.
    pub fn parse(
        text: &str,
        kind: Kind,
        source: Source,
        bases: &Bases,
        shown: &str,
        notices: &mut Vec<Notice>,
    ) -> Rule {
        let text = text.trim().to_string();
        let mut notice = |code: &str, message: String| {
            notices.push(Notice {
                code: code.to_string(),
                message,
                source: source.clone(),
                rule: Some(text.clone()),
            })
        };
        let (tool, spec) = match text.find('(') {
            Some(open) if text.ends_with(')') => {
                (&text[..open], Some(&text[open + 1..text.len() - 1]))
            }
            _ => (text.as_str(), None),
        };
        let tool = tool.trim();
        let valid_name = !tool.is_empty()
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*');
        let label = kind.label();
        let form = if !valid_name {
            notice(
                "permission-rule-invalid",
                format!(
                    "Permission {label} rule \"{text}\" is not a rule (`Tool` or `Tool(specifier)`): it matches nothing"
                ),
            );
            Form::Inert
        } else if let Some(rest) = tool.strip_prefix("mcp__") {
            match (rest.split_once("__"), spec) {
                (_, Some(_)) => Form::Inert,
                (None, None) if !rest.is_empty() => Form::McpServer(rest.to_string()),
                (Some((server, "*")), None) if !server.is_empty() => {
                    Form::McpServer(server.to_string())
                }
                (Some((server, t)), None) if !server.is_empty() && !t.is_empty() => {
                    Form::Tool(tool.to_string())
                }
                _ => Form::Inert,
            }
        } else {
            match spec.map(str::trim) {
                None => Form::Tool(tool.to_string()),
                Some("*") => match (tool, kind) {
                    ("Read" | "Edit", Kind::Allow) => {
                        if tool == "Edit" {
                            notice(
                                "permission-rule-edit-star",
                                format!(
                                    "Permission {label} rule \"Edit(*)\" lets Edit run without asking only in the working directories. \"Edit\" alone allows every path. Older versions of Claude Code treat \"Edit(*)\" as \"Edit\", and this version will too if Anthropic turns this change off."
                                ),
                            );
                        }
                        Form::Inside(if tool == "Read" {
                            FileRule::Read
                        } else {
                            FileRule::Edit
                        })
                    }
                    _ => Form::Tool(tool.to_string()),
                },
                Some("") => Form::Tool(tool.to_string()),
                Some(s) => match tool {
                    "Read" | "Edit" => {
                        let family = if tool == "Read" {
                            FileRule::Read
                        } else {
                            FileRule::Edit
                        };
                        match PathPattern::compile(s, bases) {
                            Some(p) => Form::Path(family, p),
                            None => Form::Inert,
                        }
                    }
                    "Write" => {
                        notice(
                            "permission-rule-write-path",
                            format!(
                                "Permission {label} rule ({shown}): {text} is not matched by file permission checks — only Edit(path) rules are. Use Edit({s}) instead (Edit rules cover all file-editing tools)."
                            ),
                        );
                        Form::Inert
                    }
                    "Glob" => {
                        notice(
                            "permission-rule-glob-path",
                            format!(
                                "Permission {label} rule ({shown}): {text} is not matched by file permission checks — only Read(path) rules are. Use Read({s}) instead (Read rules cover all file-reading tools)."
                            ),
                        );
                        Form::Inert
                    }
                    "Bash" => {
                        let p = BashPattern::parse(s);
                        if kind == Kind::Allow && p.star_before_rest() {
                            notice(
                                "permission-rule-bash-wildcard",
                                format!(
                                    "Permission {label} rule ({shown}): {text} has a wildcard before the rest of the command, so it also matches any options inserted at that position and approves them without a prompt. Replace that * with the exact value you mean, or only use * after the subcommand."
                                ),
                            );
                        }
                        Form::Bash(p)
                    }
                    "WebFetch" => match s.strip_prefix("domain:") {
                        Some(d) if !d.trim().is_empty() => {
                            Form::Domain(d.trim().to_ascii_lowercase())
                        }
                        _ => Form::Inert,
                    },
                    // `Grep(path)` draws no warning in the reference and matches nothing.
                    _ => Form::Inert,
                },
            }
        };
        if let (Form::Tool(t), true) = (&form, valid_name)
            && !t.starts_with("mcp__")
            && !KNOWN_TOOLS.contains(&t.as_str())
        {
            notice(
                "permission-rule-unknown-tool",
                format!(
                    "Permission {label} rule \"{text}\" names no tool claude-context has ({}): it matches nothing here",
                    KNOWN_TOOLS[..6].join(", ")
                ),
            );
        }
        if let (Form::Path(_, _), Some(s)) = (&form, spec)
            && s.trim().starts_with('/')
            && !s.trim().starts_with("//")
        {
            notice(
                "permission-rule-one-slash",
                format!(
                    "Permission {label} rule \"{text}\": a path with one leading slash is read below {} (the folder holding this settings file's .claude folder), not as an absolute path. Write //{} for the absolute path",
                    bases.root.display(),
                    s.trim().trim_start_matches('/')
                ),
            );
        }
        Rule {
            text,
            kind,
            source,
            form,
        }
    }

    /// Is this rule about the whole of `tool`?
    pub fn is_whole(&self, tool: &str) -> bool {
        match &self.form {
            Form::Tool(t) => t == tool,
            Form::McpServer(s) => mcp_server_of(tool) == Some(s.as_str()),
            Form::Bash(_) | Form::Path(..) | Form::Inside(_) | Form::Domain(_) | Form::Inert => {
                false
            }
        }
    }
}

/// Allow rules that a deny rule covers (wholly or in part): they cannot undo it, since deny wins
/// whatever the file (`check` says so, naming both).
pub fn undone(rules: &[Rule]) -> Vec<Notice> {
    let mut out = Vec::new();
    for a in rules.iter().filter(|r| r.kind == Kind::Allow) {
        let Some(d) = rules.iter().find(|d| d.kind == Kind::Deny && covers(d, a)) else {
            continue;
        };
        out.push(Notice {
            code: "permission-allow-under-deny".into(),
            message: format!(
                "The allow rule {} cannot undo the deny rule {} ({}): a deny wins over every allow, whatever file each is in",
                a.text,
                d.text,
                d.source.describe()
            ),
            source: a.source.clone(),
            rule: Some(a.text.clone()),
        });
    }
    out
}

/// Does deny rule `d` match what allow rule `a` would allow (a sample of it)?
fn covers(d: &Rule, a: &Rule) -> bool {
    match (&d.form, &a.form) {
        (Form::Tool(t), Form::Tool(u)) => t == u,
        (Form::Tool(t), Form::Bash(_)) => t == "Bash",
        (Form::Tool(t), Form::Path(FileRule::Read, _) | Form::Inside(FileRule::Read)) => {
            t == "Read"
        }
        (Form::Tool(t), Form::Path(FileRule::Edit, _) | Form::Inside(FileRule::Edit)) => {
            t == "Edit" || t == "Write"
        }
        (Form::Bash(dp), Form::Bash(ap)) => dp.matches(&ap.sample()),
        (Form::Path(f, dp), Form::Path(g, ap)) => f == g && dp.matches(&ap.sample),
        (Form::McpServer(s), Form::McpServer(t)) => s == t,
        (Form::McpServer(s), Form::Tool(t)) => mcp_server_of(t) == Some(s.as_str()),
        (Form::Domain(x), Form::Domain(y)) => x == y,
        _ => false,
    }
}

/// The server part of `mcp__<server>__<tool>`.
pub fn mcp_server_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix("mcp__")?;
    let (server, t) = rest.split_once("__")?;
    (!server.is_empty() && !t.is_empty()).then_some(server)
}

/// Splits a command-line value into rules: commas and blanks outside parentheses separate them
/// (`--allowed-tools "Bash(git log:*) Edit"`).
pub fn split_list(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in value.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bases() -> Bases {
        Bases {
            cwd: "/r/repo".into(),
            home: Some("/r/home".into()),
            root: "/r/repo".into(),
        }
    }

    fn user_bases() -> Bases {
        Bases {
            root: "/r/home".into(),
            ..bases()
        }
    }

    fn rule(text: &str, kind: Kind, b: &Bases) -> (Rule, Vec<Notice>) {
        let mut n = Vec::new();
        let r = Rule::parse(
            text,
            kind,
            Source::command_line(),
            b,
            "../home/.claude/settings.json",
            &mut n,
        );
        (r, n)
    }

    fn path_matches(text: &str, b: &Bases, path: &str) -> bool {
        match rule(text, Kind::Deny, b).0.form {
            Form::Path(_, p) => p.matches(Path::new(path)),
            f => panic!("{text}: {f:?}"),
        }
    }

    /// Section 3's table, form by form.
    #[test]
    fn path_forms_match_as_measured() {
        let (p, u) = (bases(), user_bases());
        let cases: &[(&str, &Bases, &str, bool)] = &[
            ("Read(./.env)", &u, "/r/repo/.env", true),
            ("Read(./.env)", &p, "/r/repo/.env", true),
            ("Read(./.env)", &p, "/r/repo/sub/.env", false),
            ("Read(src/sub/**)", &u, "/r/repo/src/sub/b.ts", true),
            ("Read(src/sub/**)", &u, "/r/repo/src/a.ts", false),
            ("Read(**/*.env)", &u, "/r/repo/.env", true),
            ("Read(**/*.env)", &u, "/r/repo/config/app.env", true),
            ("Read(**/*.env)", &u, "/r/outside/x.env", false),
            ("Read(/src/a.ts)", &u, "/r/repo/src/a.ts", false),
            ("Read(/src/a.ts)", &p, "/r/repo/src/a.ts", true),
            ("Read(/config/*.env)", &p, "/r/repo/config/app.env", true),
            ("Read(//r/outside/**)", &u, "/r/outside/o.txt", true),
            ("Read(//r/outside/**)", &u, "/r/outside/sub/o2.txt", true),
            ("Read(///r/outside/**)", &u, "/r/outside/o.txt", true),
            (
                "Edit(//r/repo/config/app.env)",
                &p,
                "/r/repo/config/app.env",
                true,
            ),
            ("Read(/r/repo/src/a.ts)", &u, "/r/repo/src/a.ts", false),
            ("Read(/r/repo/src/a.ts)", &p, "/r/repo/src/a.ts", false),
            ("Read(~/x.txt)", &u, "/r/home/x.txt", true),
            ("Read(~/x.txt)", &p, "/r/home/x.txt", true),
            (
                "Read(~/../repo/src/sub/b.ts)",
                &u,
                "/r/repo/src/sub/b.ts",
                false,
            ),
            ("Read(*.env)", &p, "/r/repo/deep/er/a.env", true),
            ("Read(secrets)", &p, "/r/repo/secrets/key.pem", true),
            ("Read(!x)", &p, "/r/repo/!x", true),
        ];
        for (text, b, path, want) in cases {
            assert_eq!(path_matches(text, b, path), *want, "{text} on {path}");
        }
    }

    #[test]
    fn bash_forms_match_as_measured() {
        let m = |spec: &str, cmd: &str| BashPattern::parse(spec).matches(cmd);
        assert!(m("mkdir d1", "mkdir d1"));
        assert!(!m("mkdir d1", "mkdir d1x"));
        assert!(m("touch:*", "touch t1"));
        assert!(m("touch:*", "touch   t8"));
        assert!(m("touch:*", "touch"));
        assert!(!m("touch:*", "touchx t9"));
        assert!(m("mv *", "mv t2 t2b"));
        assert!(!m("mv *", "mvx t2"));
        assert!(m("cp * copy.txt", "cp README.md copy.txt"));
        assert!(!m("cp * copy.txt", "cp README.md other.txt"));
        assert!(m("npm run test:*", "npm run test --silent"));
        assert!(!m("npm run test:*", "npm run testx"));
        assert!(m("git * --help", "git log --oneline --help"));
    }

    #[test]
    fn whole_tools_mcp_and_domains() {
        let b = bases();
        for (text, kind, whole) in [
            ("Bash", Kind::Allow, "Bash"),
            ("Bash(*)", Kind::Allow, "Bash"),
            ("Read(*)", Kind::Deny, "Read"),
            ("Read", Kind::Deny, "Read"),
            ("mcp__mini", Kind::Allow, "mcp__mini__ping"),
            ("mcp__third__*", Kind::Allow, "mcp__third__echo"),
            ("mcp__other__ping", Kind::Deny, "mcp__other__ping"),
        ] {
            let (r, _) = rule(text, kind, &b);
            assert!(r.is_whole(whole), "{text}: {:?}", r.form);
        }
        let (r, _) = rule("mcp__other__ping", Kind::Deny, &b);
        assert!(!r.is_whole("mcp__other__pong"));
        let (r, n) = rule("Edit(*)", Kind::Allow, &b);
        assert!(matches!(r.form, Form::Inside(FileRule::Edit)));
        assert_eq!(
            n[0].message,
            "Permission allow rule \"Edit(*)\" lets Edit run without asking only in the working directories. \"Edit\" alone allows every path. Older versions of Claude Code treat \"Edit(*)\" as \"Edit\", and this version will too if Anthropic turns this change off."
        );
        let (r, _) = rule("WebFetch(domain:example.com)", Kind::Allow, &b);
        assert!(matches!(&r.form, Form::Domain(d) if d == "example.com"));
    }

    /// The reference's stderr warnings, byte for byte (section 1).
    #[test]
    fn rules_that_cannot_match_say_so_in_the_references_words() {
        let b = user_bases();
        let (r, n) = rule("Write(src/**)", Kind::Allow, &b);
        assert!(matches!(r.form, Form::Inert));
        assert_eq!(
            n[0].message,
            "Permission allow rule (../home/.claude/settings.json): Write(src/**) is not matched by file permission checks — only Edit(path) rules are. Use Edit(src/**) instead (Edit rules cover all file-editing tools)."
        );
        let (_, n) = rule("Glob(src/**)", Kind::Deny, &b);
        assert_eq!(
            n[0].message,
            "Permission deny rule (../home/.claude/settings.json): Glob(src/**) is not matched by file permission checks — only Read(path) rules are. Use Read(src/**) instead (Read rules cover all file-reading tools)."
        );
        let (_, n) = rule("Bash(cp * copy.txt)", Kind::Allow, &b);
        assert_eq!(
            n[0].message,
            "Permission allow rule (../home/.claude/settings.json): Bash(cp * copy.txt) has a wildcard before the rest of the command, so it also matches any options inserted at that position and approves them without a prompt. Replace that * with the exact value you mean, or only use * after the subcommand."
        );
        let (r, n) = rule("Grep(src/**)", Kind::Deny, &b);
        assert!(matches!(r.form, Form::Inert) && n.is_empty());
        let (_, n) = rule("Read(/r/repo/src/a.ts)", Kind::Deny, &b);
        assert_eq!(n[0].code, "permission-rule-one-slash");
        let (_, n) = rule("Bash(mv *)", Kind::Allow, &b);
        assert!(n.is_empty(), "{n:?}");
    }

    #[test]
    fn an_allow_under_a_deny_is_found() {
        let b = bases();
        let rules: Vec<Rule> = [
            ("Bash(rm:*)", Kind::Deny),
            ("Bash(rm -rf build)", Kind::Allow),
            ("Bash(ls:*)", Kind::Allow),
            ("Read(**/*.env)", Kind::Deny),
            ("Read(config/app.env)", Kind::Allow),
            ("mcp__other", Kind::Deny),
            ("mcp__other__ping", Kind::Allow),
        ]
        .iter()
        .map(|(t, k)| rule(t, *k, &b).0)
        .collect();
        let found: Vec<String> = undone(&rules)
            .into_iter()
            .map(|n| n.rule.unwrap())
            .collect();
        assert_eq!(
            found,
            [
                "Bash(rm -rf build)",
                "Read(config/app.env)",
                "mcp__other__ping"
            ]
        );
    }

    #[test]
    fn command_line_lists_split_outside_parentheses() {
        assert_eq!(
            split_list("Bash(git log:*) Edit,Read(src/a b.ts)"),
            ["Bash(git log:*)", "Edit", "Read(src/a b.ts)"]
        );
    }
}
