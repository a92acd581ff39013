//! Skills: `SKILL.md` folders and legacy `.claude/commands`, found, described, listed and
//! invoked as the reference CLI does (`../shared/spec/skills-mcp.md` sections 2 to 5).
//!
//! Pure but for [`Fs`]; reads no environment variable (the caller passes the budget variable,
//! the window and the settings). Nothing here fails: what is wrong is a [`Finding`].
//!
//! **Sources, in listing order** ([`discover`]): the user's `<user dir>/skills/*/SKILL.md`
//! (`~/.claude` or `$CLAUDE_CONFIG_DIR`); the project's `.claude/skills/*/SKILL.md` in cwd, then
//! each parent up to and including the git root, closest first (outside git: up to the folder
//! below the home directory, or `/`); the `--add-dir` folders' `.claude/skills`; the legacy
//! `.claude/commands/**/*.md` of the same project folders (`grp/sub.md` is `grp:sub`; a folder
//! holding a `SKILL.md` is one skill). Within a folder, entries are sorted by name. Only a file
//! named exactly `SKILL.md` counts; a skill folder that is a link is followed, **but only to a
//! file inside the workspace (the project's folders, the `--add-dir` folders) or the user's Claude
//! folder** ([`Options::roots`]): a repository's skill linked anywhere else (`~/.ssh/id_rsa`, a
//! file of another project) is not read, since its description would go to the model; it is kept
//! in [`Skills::linked_out`] with its target, and the preview shows it as skipped. The user's own
//! skills (`~/.claude/skills`) may link anywhere (a dotfiles repository): a difference from the
//! reference CLI only for a repository's skills. The first of two
//! skills with one name wins (a user skill hides a project skill): the other is kept in
//! [`Skills::shadowed`] for `check`.
//!
//! claude-context has **no bundled skills** of its own: the reference CLI lists thirteen of its
//! own after these; our listing holds only the user's.
//!
//! Skills below cwd are found when a tool touches a file under them ([`nested::Discoverer`]).
//! Shell constructs in a body are found ([`shell`]) and never run here.

pub mod conditional;
pub mod describe;
pub mod invoke;
pub mod listing;
pub mod nested;
pub mod shell;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::frontmatter::{self, Parse};
use crate::context::settings::{Settings, Sourced};
use crate::context::{Context, Finding, Severity};
use crate::fs::{Fs, Kind};

pub use describe::DescriptionFrom;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Skills read at most by one discovery (a cap against runaway trees; a real project has a
/// few dozen). The others are not listed, and a finding says so.
pub const MAX_SKILLS: usize = 2_000;
/// Bytes of one skill file read to list it (its frontmatter and first line are at the top; the
/// whole file is read when the skill is invoked).
pub const LISTING_READ: u64 = 256 << 10;
/// Folder levels below `.claude/commands` read at most.
const MAX_COMMAND_DEPTH: usize = 8;

/// Where a skill was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// `<user dir>/skills`.
    User,
    /// `.claude/skills` of cwd or a parent up to the git root.
    Project,
    /// `.claude/skills` of an `--add-dir` folder.
    AddDir,
    /// `.claude/commands` (a legacy command, or a `SKILL.md` folder inside it).
    Command,
    /// `.claude/skills` of a folder below cwd, found when a tool touched a file under it.
    Nested,
    /// An enabled plugin's `skills` or `commands` folder (`<plugin>:<name>`).
    Plugin,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::AddDir => "add-dir",
            Source::Command => "command",
            Source::Nested => "nested",
            Source::Plugin => "plugin",
        }
    }
}

/// One skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// The listing name: the folder's name (a command: its file name without `.md`, with
    /// `grp:` for a subfolder; a scoped nested skill: `<dir>:<name>`).
    pub name: String,
    /// The frontmatter `name` when it differs: listed as `- <name> (<alias>)`; both invoke it.
    pub alias: Option<String>,
    /// `SKILL.md` (or the command's file).
    pub file: PathBuf,
    /// The skill's folder (`Base directory for this skill`); `None` for a legacy command.
    pub dir: Option<PathBuf>,
    /// The skills (or commands) folder it was found in.
    pub folder: PathBuf,
    pub source: Source,
    /// As listed: whitespace rules, escaping and the cap applied.
    pub description: String,
    pub description_from: DescriptionFrom,
    /// The description was longer than the cap and was cut.
    pub description_cut: bool,
    /// `disable-model-invocation: true`: not listed, and the `Skill` tool refuses it.
    pub hidden: bool,
    /// `user-invocable: false` (still listed).
    pub user_invocable: bool,
    /// Shell commands the body runs when invoked (never run by claude-context to list it).
    pub shell: Vec<String>,
    /// How the frontmatter was read.
    pub parse: Parse,
    /// For a nested skill: the suffix after its description (`(from …)` or `(scoped to …)`).
    pub scope_note: Option<String>,
    /// `paths:` in the frontmatter (the globs as written): a conditional skill, left out of the
    /// startup listing and announced when a touched file first matches ([`conditional`]).
    /// `None` when it has none, or only globs that match everything (`**`).
    pub paths: Option<Vec<String>>,
    /// The file's size.
    pub bytes: u64,
}

impl Skill {
    /// `<name>` or `<name> (<alias>)`, as the entry shows it.
    pub fn display_name(&self) -> String {
        match &self.alias {
            Some(a) => format!("{} ({a})", self.name),
            None => self.name.clone(),
        }
    }

    /// Is this the skill called `called` (its name or its alias; a leading `/` is allowed)?
    pub fn answers_to(&self, called: &str) -> bool {
        let called = called.strip_prefix('/').unwrap_or(called);
        self.name == called || self.alias.as_deref() == Some(called)
    }
}

/// A skill not read because its file is a link out of the workspace and the user's Claude
/// folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedOut {
    pub name: String,
    /// The `SKILL.md` (or command file) as found.
    pub file: PathBuf,
    /// Where it really is.
    pub target: PathBuf,
    pub source: Source,
}

/// The real path of a skill's `file` when it is outside every one of `roots` (real paths);
/// `None` when it is inside one, or cannot be resolved (then it is not read either way).
pub(crate) fn linked_outside(fs: &dyn Fs, file: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let real = fs.canonicalize(file).ok()?;
    (!roots.iter().any(|r| real.starts_with(r))).then_some(real)
}

/// A skill hidden by another of the same name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadowed {
    pub skill: Skill,
    /// The file of the skill that wins.
    pub by: PathBuf,
}

/// What [`discover`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skills {
    /// The skills that count, in listing order (hidden ones included; they are not listed).
    pub skills: Vec<Skill>,
    /// A repository's skills whose file is a link out of the workspace and the user's Claude
    /// folder: not read (see the module doc).
    pub linked_out: Vec<LinkedOut>,
    /// The folders a repository's skill file must really be in ([`Options::roots`]).
    pub roots: Vec<PathBuf>,
    /// Skills hidden by an earlier one of the same name.
    pub shadowed: Vec<Shadowed>,
    /// Every skills and commands folder looked at, existing or not (an editor watches them).
    pub folders: Vec<PathBuf>,
    pub findings: Vec<Finding>,
}

impl Skills {
    /// The skill `called` names (its name or alias).
    pub fn find(&self, called: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.answers_to(called))
    }
}

/// Where to look, and the setting that shapes descriptions.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The real working directory.
    pub cwd: PathBuf,
    /// The git work tree holding cwd: project folders are read up to it.
    pub git_root: Option<PathBuf>,
    /// Outside git the walk stops below it (its `.claude` is the user's folder).
    pub home: Option<PathBuf>,
    /// `~/.claude` or `$CLAUDE_CONFIG_DIR`.
    pub user_dir: Option<PathBuf>,
    /// `--add-dir` folders.
    pub add_dirs: Vec<PathBuf>,
    /// The cut of one description (`skillListingMaxDescChars`, default 1,536).
    pub max_desc_chars: usize,
    /// The enabled plugins (found by the plugins module): name and folder. Their skills and commands are
    /// listed first as `<plugin>:<name>`, read only from inside the plugin's folder.
    pub plugins: Vec<(String, PathBuf)>,
}

impl Options {
    /// The options of a session whose walk is `ctx`.
    pub fn for_context(ctx: &Context, add_dirs: &[PathBuf]) -> Options {
        Options {
            cwd: ctx.cwd.clone(),
            git_root: ctx.git_root.clone(),
            home: ctx.home().map(Path::to_path_buf),
            user_dir: ctx.user_dir().map(Path::to_path_buf),
            add_dirs: add_dirs.to_vec(),
            max_desc_chars: max_desc_chars(ctx.settings()),
            plugins: Vec::new(),
        }
    }

    /// The folders a repository's skill file must really be in: the project's topmost folder (the
    /// git root, or the highest folder the project's skills are read from), the `--add-dir`
    /// folders and the user's Claude folder, each by its real path.
    pub fn roots(&self, fs: &dyn Fs) -> Vec<PathBuf> {
        let top = self
            .git_root
            .clone()
            .or_else(|| self.project_dirs().last().cloned())
            .unwrap_or_else(|| self.cwd.clone());
        std::iter::once(top)
            .chain(self.add_dirs.iter().cloned())
            .chain(self.user_dir.iter().cloned())
            .map(|p| fs.canonicalize(&p).unwrap_or(p))
            .collect()
    }

    /// The folders from cwd up to the git root (outside git: up to the home directory,
    /// excluded, or `/`), closest first.
    pub fn project_dirs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for dir in self.cwd.ancestors() {
            if self.git_root.is_none() && self.home.as_deref() == Some(dir) {
                break;
            }
            out.push(dir.to_path_buf());
            if self.git_root.as_deref() == Some(dir) || out.len() >= crate::context::MAX_DIR_DEPTH {
                break;
            }
        }
        out
    }
}

/// `skillListingMaxDescChars`, else 1,536.
pub fn max_desc_chars(settings: &Settings) -> usize {
    settings
        .skill_listing_max_desc_chars
        .as_ref()
        .map_or(describe::MAX_DESCRIPTION, |s| s.value.min(1 << 20) as usize)
}

/// Every skill of the session's start, in listing order.
pub fn discover(fs: &dyn Fs, opts: &Options) -> Skills {
    let mut d = Discovery {
        fs,
        opts,
        out: Skills {
            roots: opts.roots(fs),
            ..Skills::default()
        },
        names: BTreeMap::new(),
        capped: false,
    };
    for (plugin, root) in &opts.plugins {
        d.plugin(plugin, root);
    }
    if let Some(user) = &opts.user_dir {
        d.skills_folder(&user.join("skills"), Source::User);
    }
    let project = opts.project_dirs();
    for dir in &project {
        d.skills_folder(&dir.join(".claude").join("skills"), Source::Project);
    }
    for dir in &opts.add_dirs {
        d.skills_folder(&dir.join(".claude").join("skills"), Source::AddDir);
    }
    // Legacy commands: the user's, the project's and the `--add-dir` folders', one group sorted
    // by command name (classes K29, K30, K35). The first of one name in that order wins: a user
    // command hides a project command; a skill of the same name (listed before) hides both.
    let mut command_folders: Vec<PathBuf> = Vec::new();
    if let Some(user) = &opts.user_dir {
        command_folders.push(user.join("commands"));
    }
    command_folders.extend(
        project
            .iter()
            .map(|dir| dir.join(".claude").join("commands")),
    );
    command_folders.extend(
        opts.add_dirs
            .iter()
            .map(|dir| dir.join(".claude").join("commands")),
    );
    let mut commands = Vec::new();
    for folder in command_folders {
        d.out.folders.push(folder.clone());
        d.commands(&folder, &folder, "", 0, &mut commands);
    }
    // Stable: of two commands with one name, the earlier folder's stays first and wins.
    commands.sort_by(|a: &Command, b| crate::js::locale_compare(&a.name, &b.name));
    for c in commands {
        d.add(
            &c.name,
            &c.file,
            c.dir.as_deref(),
            &c.folder,
            Source::Command,
        );
    }
    d.out
}

/// A legacy command found, before the group is sorted.
struct Command {
    name: String,
    file: PathBuf,
    /// A folder of `commands` holding a `SKILL.md`.
    dir: Option<PathBuf>,
    /// The `commands` folder.
    folder: PathBuf,
}

struct Discovery<'a> {
    fs: &'a dyn Fs,
    opts: &'a Options,
    out: Skills,
    /// Name → index in `out.skills`.
    names: BTreeMap<String, usize>,
    capped: bool,
}

/// The entries of `dir` sorted by name as the reference CLI sorts skills (`localeCompare`,
/// class K28); nothing when it cannot be listed.
pub(crate) fn sorted_entries(fs: &dyn Fs, dir: &Path) -> Vec<crate::fs::DirEntry> {
    let mut entries = fs.read_dir(dir).unwrap_or_default();
    entries.sort_by(|a, b| crate::js::locale_compare(&a.name, &b.name));
    entries
}

impl Discovery<'_> {
    /// A plugin's skills (`<root>/skills/*/SKILL.md`) and commands (`<root>/commands/*.md`),
    /// named `<plugin>:<name>`, together in name order; a file whose real path leaves the
    /// plugin's folder is not read.
    fn plugin(&mut self, plugin: &str, root: &Path) {
        let real_root = self
            .fs
            .canonicalize(root)
            .unwrap_or_else(|_| root.to_path_buf());
        let mut found: Vec<(String, PathBuf, Option<PathBuf>, PathBuf)> = Vec::new();
        let skills = root.join("skills");
        self.out.folders.push(skills.clone());
        for e in sorted_entries(self.fs, &skills) {
            if e.kind != Some(Kind::Dir) || e.raw.is_some() {
                continue;
            }
            let dir = skills.join(&e.name);
            let file = dir.join(SKILL_FILE);
            if self.fs.is_file(&file) {
                found.push((e.name.clone(), file, Some(dir), skills.clone()));
            }
        }
        let commands = root.join("commands");
        self.out.folders.push(commands.clone());
        for e in sorted_entries(self.fs, &commands) {
            if e.kind != Some(Kind::File) || e.raw.is_some() {
                continue;
            }
            if let Some(stem) = e.name.strip_suffix(".md").filter(|s| !s.is_empty()) {
                found.push((
                    stem.to_string(),
                    commands.join(&e.name),
                    None,
                    commands.clone(),
                ));
            }
        }
        found.sort_by(|a, b| crate::js::locale_compare(&a.0, &b.0));
        for (name, file, dir, folder) in found {
            let name = format!("{plugin}:{name}");
            if let Some(target) = linked_outside(self.fs, &file, std::slice::from_ref(&real_root)) {
                self.out.findings.push(Finding::whole_file(
                    &file,
                    Severity::Warning,
                    "skill-linked-outside",
                    format!(
                        "plugin skill \"{name}\" is a link to {}, outside its plugin's folder: not read",
                        target.display()
                    ),
                ));
                self.out.linked_out.push(LinkedOut {
                    name,
                    file,
                    target,
                    source: Source::Plugin,
                });
                continue;
            }
            let before = self.out.skills.len();
            self.add(&name, &file, dir.as_deref(), &folder, Source::Plugin);
            // A plugin's skill answers to `<plugin>:<name>` only: its frontmatter `name` is not
            // an alias (the bare name would reach past the plugin's prefix).
            if let Some(s) = self.out.skills.get_mut(before) {
                s.alias = None;
            }
        }
    }

    fn skills_folder(&mut self, folder: &Path, source: Source) {
        self.out.folders.push(folder.to_path_buf());
        for e in sorted_entries(self.fs, folder) {
            if e.kind != Some(Kind::Dir) || e.raw.is_some() {
                continue;
            }
            let dir = folder.join(&e.name);
            let file = dir.join(SKILL_FILE);
            if !self.fs.is_file(&file) {
                continue;
            }
            self.add(&e.name, &file, Some(&dir), folder, source);
        }
    }

    fn commands(
        &mut self,
        root: &Path,
        dir: &Path,
        prefix: &str,
        depth: usize,
        out: &mut Vec<Command>,
    ) {
        if depth > MAX_COMMAND_DEPTH || out.len() >= MAX_SKILLS {
            return;
        }
        for e in sorted_entries(self.fs, dir) {
            if e.raw.is_some() {
                continue;
            }
            let path = dir.join(&e.name);
            match e.kind {
                Some(Kind::Dir) => {
                    let skill = path.join(SKILL_FILE);
                    if self.fs.is_file(&skill) {
                        out.push(Command {
                            name: format!("{prefix}{}", e.name),
                            file: skill,
                            dir: Some(path),
                            folder: root.to_path_buf(),
                        });
                    } else {
                        let prefix = format!("{prefix}{}:", e.name);
                        self.commands(root, &path, &prefix, depth + 1, out);
                    }
                }
                Some(Kind::File) => {
                    if let Some(stem) = e.name.strip_suffix(".md")
                        && !stem.is_empty()
                    {
                        out.push(Command {
                            name: format!("{prefix}{stem}"),
                            file: path,
                            dir: None,
                            folder: root.to_path_buf(),
                        });
                    }
                }
                _ => {}
            }
        }
    }

    fn add(&mut self, name: &str, file: &Path, dir: Option<&Path>, folder: &Path, source: Source) {
        if self.out.skills.len() + self.out.shadowed.len() >= MAX_SKILLS {
            if !self.capped {
                self.capped = true;
                self.out.findings.push(Finding::whole_file(
                    file,
                    Severity::Warning,
                    "cap-skills",
                    format!(
                        "this skill and those after it are not listed: {} skills were read, the most claude-context reads for one session (a cap against runaway trees)",
                        crate::context::message::thousands(MAX_SKILLS as u64)
                    ),
                ));
            }
            return;
        }
        if source != Source::User
            && source != Source::Plugin
            && let Some(target) = linked_outside(self.fs, file, &self.out.roots)
        {
            self.out.findings.push(Finding::whole_file(
                file,
                Severity::Warning,
                "skill-linked-outside",
                format!(
                    "skill \"{name}\" is a link to {}, outside the workspace and your Claude folder: not read (a repository's skill could make any file of yours its description)",
                    target.display()
                ),
            ));
            self.out.linked_out.push(LinkedOut {
                name: name.to_string(),
                file: file.to_path_buf(),
                target,
                source,
            });
            return;
        }
        let Some((skill, findings)) = read_skill(
            self.fs,
            name,
            file,
            dir,
            folder,
            source,
            self.opts.max_desc_chars,
        ) else {
            return;
        };
        if let Some(&winner) = self.names.get(name) {
            let by = self.out.skills[winner].file.clone();
            self.out.findings.push(Finding::whole_file(
                file,
                Severity::Warning,
                "skill-shadowed",
                format!(
                    "skill \"{name}\" is hidden by the {} skill of the same name at {}: the model sees that one, never this",
                    self.out.skills[winner].source.label(),
                    by.display()
                ),
            ));
            self.out.shadowed.push(Shadowed { skill, by });
            return;
        }
        self.out.findings.extend(findings);
        self.names.insert(name.to_string(), self.out.skills.len());
        self.out.skills.push(skill);
    }
}

/// Reads one skill file; `None` when it cannot be read at all (a finding says why).
pub(crate) fn read_skill(
    fs: &dyn Fs,
    name: &str,
    file: &Path,
    dir: Option<&Path>,
    folder: &Path,
    source: Source,
    max_desc: usize,
) -> Option<(Skill, Vec<Finding>)> {
    let mut findings = Vec::new();
    let meta = fs.metadata(file).ok()?;
    if meta.kind != Kind::File {
        return None;
    }
    let bytes = match fs.read_bytes(file, LISTING_READ) {
        Ok(b) => b,
        Err(e) => {
            findings.push(Finding::whole_file(
                file,
                Severity::Warning,
                "skill-unreadable",
                format!("skill file not read: {e}; it is not listed"),
            ));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let (fm, body) = frontmatter::split(&text);
    let fields = fm.as_ref().map(|f| f.fields.clone()).unwrap_or_default();
    let parse = fm.as_ref().map_or(Parse::Clean, |f| f.parse);
    let (raw, from) = describe::raw(&fields, body);
    let (description, cut) = describe::cap(&describe::clean(&raw), max_desc);
    let alias = describe::alias(fields.get("name"), name);
    let flag = |key: &str| match fields.get(key) {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) => match s.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    };
    let hidden = flag("disable-model-invocation") == Some(true);
    // `paths:` as rules read it; only globs that match everything (`**`) leave it unconditional.
    let paths = fm
        .as_ref()
        .and_then(|f| f.paths.as_ref())
        .map(|globs| globs.iter().map(|g| g.glob.clone()).collect::<Vec<_>>())
        .filter(|globs| crate::context::globs::normalize(globs).is_some());
    let user_invocable = flag("user-invocable") != Some(false);
    let sites = shell::find(body);
    let skill = Skill {
        name: name.to_string(),
        alias,
        file: file.to_path_buf(),
        dir: dir.map(Path::to_path_buf),
        folder: folder.to_path_buf(),
        source,
        description,
        description_from: from,
        description_cut: cut,
        hidden,
        user_invocable,
        shell: shell::reported(&sites),
        parse,
        scope_note: None,
        paths,
        bytes: meta.len,
    };
    // What `check` says about the file.
    let line_of = |key: &str| -> Option<usize> {
        text.lines()
            .take(fm.as_ref().map_or(0, |f| f.lines))
            .position(|l| l.starts_with(&format!("{key}:")))
    };
    if let Some(fm) = &fm
        && let Some(err) = &fm.error
    {
        let (severity, what) = match fm.parse {
            Parse::Retried => (
                Severity::Warning,
                "Claude Code reads it only after quoting values; write valid YAML",
            ),
            _ => (
                Severity::Error,
                "every field is dropped: the skill is listed under its folder name with its first body line",
            ),
        };
        findings.push(Finding {
            path: file.to_path_buf(),
            line: Some(err.line),
            start_col: err.col,
            end_col: err.col + 1,
            severity,
            code: "skill-frontmatter-invalid".into(),
            message: format!("invalid YAML frontmatter ({}): {what}", err.message),
        });
    }
    if from != DescriptionFrom::Frontmatter && source != Source::Command && !hidden {
        findings.push(Finding::whole_file(
            file,
            Severity::Warning,
            "skill-no-description",
            format!(
                "no description in the frontmatter: the listing shows \"{}\" instead; the model picks skills by their description, so write one (`description: ...`)",
                crate::context::message::cut(&skill.description)
            ),
        ));
    }
    if cut {
        let line = line_of("description");
        findings.push(Finding {
            path: file.to_path_buf(),
            line,
            start_col: 0,
            end_col: if line.is_some() { "description".len() } else { 0 },
            severity: Severity::Warning,
            code: "skill-description-cut".into(),
            message: format!(
                "the description is {} characters as listed; the listing keeps {} and `…`. Shorten it",
                crate::context::message::thousands(crate::js::len_utf16(&describe::clean(&raw)) as u64),
                crate::context::message::thousands(max_desc.saturating_sub(1) as u64)
            ),
        });
    }
    if !skill.shell.is_empty() {
        findings.push(Finding::whole_file(
            file,
            Severity::Warning,
            "skill-runs-commands",
            format!(
                "runs shell commands when invoked ({}): Claude Code runs them and puts their output in the body; claude-context asks before each, as for Bash, and never runs them to preview",
                skill
                    .shell
                    .iter()
                    .take(3)
                    .map(|c| format!("`{}`", crate::context::message::cut(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Some((skill, findings))
}

/// `check`'s findings on one skill file found outside a session's startup skills (a folder below
/// cwd): everything but shadowing, which depends on the session.
pub fn lint_file(fs: &dyn Fs, file: &Path, max_desc: usize) -> Vec<Finding> {
    let Some(dir) = file.parent() else {
        return Vec::new();
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = dir.parent().unwrap_or(dir);
    read_skill(fs, &name, file, Some(dir), folder, Source::Nested, max_desc)
        .map(|(_, f)| f)
        .unwrap_or_default()
}

/// Why a skill is or is not in the listing, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Listed {
    /// `- <name>: <description>`.
    Full,
    /// Reduced to `- <name>` by the budget.
    Reduced,
    /// `- <name>` by a `skillOverrides` `name-only`.
    NameOnly,
    /// Not listed: `disable-model-invocation: true`.
    Hidden,
    /// Not listed: `skillOverrides` `off` or `user-invocable-only`.
    Off,
    /// Not listed at start: `paths:` in its frontmatter; announced when a touched file first
    /// matches ([`conditional`]).
    Conditional,
}

/// The listing of a session's start: the entries, the budget's choice, and the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionListing {
    pub skills: Skills,
    /// Per skill (same order as `skills.skills`): how it is listed.
    pub listed: Vec<Listed>,
    /// Per skill: the full entry's text (empty when not listed).
    pub entries: Vec<String>,
    pub listing: listing::Listing,
}

/// The listing of `skills` under `budget`, with the settings' `skillOverrides` and the usage
/// record (most used first).
pub fn list(
    skills: Skills,
    overrides: &BTreeMap<String, Sourced<String>>,
    budget: u64,
    usage: &[String],
) -> SessionListing {
    let mut listed = Vec::with_capacity(skills.skills.len());
    let mut texts = Vec::with_capacity(skills.skills.len());
    let mut entries = Vec::new();
    let mut index = Vec::new();
    for (i, s) in skills.skills.iter().enumerate() {
        let mode = overrides
            .get(&s.name)
            .or_else(|| s.alias.as_ref().and_then(|a| overrides.get(a)))
            .map(|o| o.value.as_str());
        let shown = s.display_name();
        let full = format!("- {shown}: {}", s.description);
        let (state, line) = if s.hidden {
            (Listed::Hidden, None)
        } else {
            match mode {
                Some("off" | "user-invocable-only") => (Listed::Off, None),
                _ if s.paths.is_some() => (Listed::Conditional, None),
                Some("name-only") => (Listed::NameOnly, Some(format!("- {shown}"))),
                _ => (Listed::Full, Some(full)),
            }
        };
        texts.push(line.clone().unwrap_or_default());
        listed.push(state);
        if let Some(line) = line {
            index.push(i);
            entries.push(listing::Entry {
                name: s.name.clone(),
                full: line,
                short: format!("- {shown}"),
                pinned: false,
            });
        }
    }
    let laid = listing::lay_out(&entries, budget, usage);
    for (k, &i) in index.iter().enumerate() {
        if !laid.full[k] && listed[i] == Listed::Full {
            listed[i] = Listed::Reduced;
        }
    }
    SessionListing {
        skills,
        listed,
        entries: texts,
        listing: laid,
    }
}

/// The names of the usage record most used first, as [`list`] takes them.
pub fn usage_order(usage: &[(String, f64)]) -> Vec<String> {
    usage.iter().map(|(n, _)| n.clone()).collect()
}

/// The folders of `skills` and the names it holds (for the nested discovery).
pub(crate) fn names_of(skills: &Skills) -> HashSet<String> {
    skills.skills.iter().map(|s| s.name.clone()).collect()
}

#[cfg(test)]
mod tests;
