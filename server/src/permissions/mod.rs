//! Permission rules and modes, as Claude Code users write them (`../shared/spec/permissions-trust.md`):
//! what a tool call may do without a prompt, what must be asked, what is refused, and what the
//! model is told each time.
//!
//! - [`rule`]: the grammar (`Tool`, `Tool(specifier)`, the path forms), each rule with the file
//!   and line it comes from;
//! - [`settings`]: the permission keys of the settings files (a typed reader of its own), the
//!   command line's rules, and what an untrusted folder's project file loses;
//! - [`shell`] and [`bash`]: a Bash command parsed and judged part by part;
//! - [`mode`]: the permission modes and where a session's comes from;
//! - [`texts`]: the measured texts;
//! - [`Policy`]: the one decision for every tool call ([`Policy::file`], [`Policy::bash`],
//!   [`Policy::mcp`], [`Policy::removed`]), deny > ask > allow across every source, then the mode.
//!
//! **Architecture Invariant:** core: pure but for [`crate::fs::Fs`] (settings) and the tools'
//! [`bash::Lookup`] seam (real paths, globs); it returns data (an [`Action`]), never asks anyone
//! and never runs anything. `tools` and `session` use it; it uses `context` and `fs` only.

pub mod bash;
pub mod mode;
pub mod rule;
pub mod settings;
pub mod shell;
pub mod texts;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use bash::{Dirs, Lookup};
pub use mode::{Bypass, Mode, ModeSource};
pub use rule::{FileRule, Form, Kind, Notice, Origin, Rule, Source, split_list};

/// What a tool call does, as the rules and the mode decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// It runs, no prompt.
    Run,
    /// The user decides.
    Ask(Ask),
    /// It does not run; the model gets `text` (an error result).
    Refuse(Refusal),
}

/// A question for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    /// What the model gets when nobody can answer (no terminal, a client that cannot ask).
    pub unanswered: String,
    /// Why the user is asked, when a rule or the checker says (shown with the prompt).
    pub reason: Option<String>,
    /// May an "allow for the session" answer cover it (and an earlier one skip the prompt)?
    /// Not under an ask rule, nor for a file that makes programs run code.
    pub session: bool,
    /// A change to a file that makes programs run code: asked every time, with this warning.
    pub runs_code: Option<&'static str>,
}

/// A refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The model's `tool_result` (measured where the spec quotes it).
    pub text: String,
    /// A short line for the editor's `toolResult` event.
    pub summary: String,
}

impl Action {
    fn refuse(text: impl Into<String>, summary: impl Into<String>) -> Action {
        Action::Refuse(Refusal {
            text: text.into(),
            summary: summary.into(),
        })
    }
}

/// How a file tool touches a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Edit,
}

/// A file tool's call, as the tools resolved it.
#[derive(Clone, Debug)]
pub struct FileCall<'a> {
    /// `Read`, `Write`, `Edit`, `Glob`, `Grep`.
    pub tool: &'a str,
    pub access: Access,
    /// Absolute, as the model wrote it.
    pub written: &'a Path,
    /// Every link followed.
    pub real: &'a Path,
    /// Inside the working directories.
    pub inside: bool,
    /// What a change to it can make run (`tools/sensitive.rs`), for Write and Edit.
    pub runs_code: Option<&'static str>,
    /// A directory searched (Glob, Grep): a rule on the files below it counts.
    pub dir: bool,
}

/// A session's permission rules and mode: one per session, shared by its tools and its front
/// end (which switches the mode).
#[derive(Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    notices: Vec<Notice>,
    additional_dirs: Vec<(PathBuf, Source)>,
    bypass: Bypass,
    managed_only: bool,
    mode: Mutex<(Mode, ModeSource)>,
    /// Notes about the starting mode (what was ignored and why).
    mode_notes: Vec<String>,
    /// The folder was trusted when the policy was made (for the preview).
    trusted: bool,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::new(settings::Loaded::default(), None, true, Bypass::Available)
    }
}

impl Policy {
    /// The policy of a session: its settings' rules (and the command line's), the starting mode
    /// (`requested` is the command line's; `Some(None)` is `auto`), trust, and whether bypass
    /// permissions mode may run here.
    pub fn new(
        loaded: settings::Loaded,
        requested: Option<Option<Mode>>,
        trusted: bool,
        bypass: Bypass,
    ) -> Policy {
        let bypass = match (&loaded.disable_bypass, bypass) {
            (Some(s), _) => Bypass::Disabled(s.clone()),
            (None, b) => b,
        };
        let start = mode::start(requested, &loaded.default_modes, trusted, &bypass);
        Policy {
            rules: loaded.rules,
            notices: loaded.notices,
            additional_dirs: loaded.additional_dirs,
            bypass,
            managed_only: loaded.managed_only,
            mode: Mutex::new((start.mode, start.source)),
            mode_notes: start.notes,
            trusted,
        }
    }

    /// Was the folder trusted when the policy was made?
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// A policy with these rules and mode only (tests, the preview of rules).
    pub fn with_rules(rules: Vec<Rule>, mode: Mode) -> Policy {
        let p = Policy::new(
            settings::Loaded {
                rules,
                ..Default::default()
            },
            None,
            true,
            Bypass::Available,
        );
        *lock(&p.mode) = (mode, ModeSource::CommandLine);
        p
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    pub fn mode_notes(&self) -> &[String] {
        &self.mode_notes
    }

    /// `additionalDirectories` that apply, with where each was written.
    pub fn additional_dirs(&self) -> &[(PathBuf, Source)] {
        &self.additional_dirs
    }

    pub fn managed_only(&self) -> bool {
        self.managed_only
    }

    pub fn mode(&self) -> Mode {
        lock(&self.mode).0
    }

    pub fn mode_source(&self) -> ModeSource {
        lock(&self.mode).1.clone()
    }

    /// The modes this session may switch to.
    pub fn available(&self) -> Vec<Mode> {
        Mode::ALL
            .into_iter()
            .filter(|m| *m != Mode::BypassPermissions || self.bypass == Bypass::Available)
            .collect()
    }

    /// Switches the mode (the user, through the front end). `Err` says why it cannot be.
    pub fn set_mode(&self, mode: Mode) -> Result<Mode, String> {
        if mode == Mode::BypassPermissions
            && let Some(why) = self.bypass.refusal()
        {
            return Err(why);
        }
        let mut m = lock(&self.mode);
        let previous = m.0;
        *m = (mode, ModeSource::Session);
        Ok(previous)
    }

    /// The first rule of `kind` that `hit` matches.
    fn find(&self, kind: Kind, hit: impl Fn(&Rule) -> bool) -> Option<&Rule> {
        self.rules.iter().find(|r| r.kind == kind && hit(r))
    }

    /// The deny rule that removes `tool` from the session (its name in deny, `Read(*)`,
    /// `mcp__server`): the tool is not offered, and a call gets "No such tool available".
    pub fn removed(&self, tool: &str) -> Option<&Rule> {
        self.find(Kind::Deny, |r| r.is_whole(tool))
    }

    /// The text a call of a removed tool gets.
    pub fn removed_text(tool: &str) -> String {
        if tool.starts_with("mcp__") {
            texts::no_such_tool(tool)
        } else {
            texts::tool_disabled(tool)
        }
    }

    /// Does a `Read` deny cover this path (Glob and Grep leave it out of what they list)?
    pub fn hidden(&self, path: &Path) -> bool {
        self.find(
            Kind::Deny,
            |r| matches!(&r.form, Form::Path(FileRule::Read, p) if p.matches(path)),
        )
        .is_some()
    }

    fn path_hit(r: &Rule, family: FileRule, tool: &str, c: &FileCall<'_>) -> bool {
        match &r.form {
            Form::Tool(t) => t == tool,
            Form::Path(f, p) if *f == family => {
                let probe = |x: &Path| p.matches(x) || (c.dir && p.matches(&x.join("_")));
                probe(c.written) || probe(c.real)
            }
            Form::Inside(f) => *f == family && c.inside,
            _ => false,
        }
    }

    /// A Read, Write, Edit, Glob or Grep on a path.
    pub fn file(&self, c: &FileCall<'_>) -> Action {
        let family = match c.access {
            Access::Read => FileRule::Read,
            Access::Write | Access::Edit => FileRule::Edit,
        };
        let denied = |fam: FileRule| {
            self.find(Kind::Deny, |r| match &r.form {
                Form::Tool(_) | Form::Inside(_) => false,
                _ => Self::path_hit(r, fam, c.tool, c),
            })
        };
        if let Some(r) = denied(family) {
            let text = match (c.access, c.tool) {
                (Access::Read, "Glob" | "Grep") => texts::read_denied(c.written),
                _ => texts::FILE_DENIED.to_string(),
            };
            return Action::refuse(text, format!("denied by {}", r.text));
        }
        if c.access != Access::Read
            && let Some(r) = denied(FileRule::Read)
        {
            let text = if c.access == Access::Edit {
                texts::EDIT_READ_DENIED
            } else {
                texts::WRITE_READ_DENIED
            };
            return Action::refuse(text, format!("denied by {}", r.text));
        }
        let mode = self.mode();
        if mode == Mode::Plan && c.access != Access::Read {
            return Action::refuse(texts::plan_write(c.written), "refused in plan mode");
        }
        let unanswered = match c.access {
            Access::Read => texts::not_granted_read(c.written),
            Access::Write | Access::Edit => texts::not_granted_write(c.written),
        };
        let ask = if let Some(r) = self.find(Kind::Ask, |r| Self::path_hit(r, family, c.tool, c)) {
            Some(Ask {
                unanswered,
                reason: Some(format!("the ask rule {} ({})", r.text, r.source.describe())),
                session: false,
                runs_code: None,
            })
        } else if c.access != Access::Read
            && let Some(what) = c.runs_code
        {
            Some(Ask {
                unanswered,
                reason: None,
                session: false,
                runs_code: Some(what),
            })
        } else if self
            .find(Kind::Allow, |r| Self::path_hit(r, family, c.tool, c))
            .is_some()
            || mode == Mode::BypassPermissions
            || (c.access == Access::Read && c.inside)
            || (mode == Mode::AcceptEdits && c.inside)
        {
            None
        } else {
            Some(Ask {
                unanswered,
                reason: None,
                session: true,
                runs_code: None,
            })
        };
        self.finish(ask, c.tool)
    }

    /// An ask, in don't-ask mode, is refused.
    fn finish(&self, ask: Option<Ask>, tool: &str) -> Action {
        match ask {
            None => Action::Run,
            Some(_) if self.mode() == Mode::DontAsk => {
                Action::refuse(texts::dont_ask(tool), "refused in don't-ask mode")
            }
            Some(a) => Action::Ask(a),
        }
    }

    /// A Bash command (the Bash tool's, a skill's shell block's).
    pub fn bash(&self, command: &str, dirs: &Dirs<'_>, look: &dyn Lookup) -> Action {
        let j = bash::judge(command, &self.rules, dirs, look);
        if let Some(r) = j.denied() {
            return Action::refuse(texts::bash_denied(command), format!("denied by {r}"));
        }
        let mode = self.mode();
        if mode == Mode::Plan && !j.read_only() {
            return Action::refuse(texts::plan_bash("Bash"), "refused in plan mode");
        }
        let ask = if let Some(r) = j.asked() {
            Some(Ask {
                unanswered: texts::not_granted_use("Bash"),
                reason: Some(format!("the ask rule {r}")),
                session: false,
                runs_code: None,
            })
        } else if j.allowed()
            || mode == Mode::BypassPermissions
            || (mode == Mode::AcceptEdits && j.accepted_as_edit())
        {
            None
        } else {
            let reason = j.reason().map(str::to_string);
            Some(Ask {
                unanswered: reason
                    .clone()
                    .unwrap_or_else(|| texts::not_granted_use("Bash")),
                reason,
                session: true,
                runs_code: None,
            })
        };
        self.finish(ask, "Bash")
    }

    /// A call of an MCP tool (`mcp__<server>__<tool>`). In plan mode it is always asked (ours:
    /// an MCP tool may change anything, and no rule can say it does not).
    pub fn mcp(&self, tool: &str) -> Action {
        if let Some(r) = self.removed(tool) {
            return Action::refuse(Self::removed_text(tool), format!("denied by {}", r.text));
        }
        let mode = self.mode();
        let unanswered = texts::not_granted_use(tool);
        let ask = if let Some(r) = self.find(Kind::Ask, |r| r.is_whole(tool)) {
            Some(Ask {
                unanswered,
                reason: Some(format!("the ask rule {}", r.text)),
                session: false,
                runs_code: None,
            })
        } else if mode == Mode::Plan {
            Some(Ask {
                unanswered,
                reason: Some("plan mode: nothing should change the system".into()),
                session: false,
                runs_code: None,
            })
        } else if self.find(Kind::Allow, |r| r.is_whole(tool)).is_some()
            || mode == Mode::BypassPermissions
        {
            None
        } else {
            Some(Ask {
                unanswered,
                reason: None,
                session: true,
                runs_code: None,
            })
        };
        self.finish(ask, tool)
    }

    /// The environment section's permission parts now: the additional working directories
    /// (real paths, as the tools judge them) and the mode's text.
    pub fn environment(&self, additional: &[PathBuf]) -> EnvironmentParts {
        EnvironmentParts {
            additional_dirs: additional.iter().map(|d| d.display().to_string()).collect(),
            mode_text: mode_text(self.mode()).map(str::to_string),
        }
    }
}

/// What a front end asks of a session's permissions (the command line's flags, an editor's
/// request).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--allowed-tools` (allow) and `--disallowed-tools` (deny) rules, as written.
    pub command_line: Vec<(Kind, String)>,
    /// `--permission-mode` (`Some(None)`: `auto`, which this session cannot run).
    pub mode: Option<Option<Mode>>,
    /// Does the user trust the folder? `None`: as the walk read it (workspace trust: the editor's
    /// trust, our record, or Claude Code's for the exact folder); a session gives its own.
    pub trusted: Option<bool>,
    /// `--add-dir` folders (relative ones below cwd).
    pub add_dirs: Vec<PathBuf>,
}

/// The policy of a session in `ctx`'s folder: its settings files' permission keys (the files
/// the walk found), `opts`, and whether bypass permissions mode may run here (`bypass_refused`:
/// root without `IS_SANDBOX=1`).
pub fn for_context(
    fs: &dyn crate::fs::Fs,
    ctx: &crate::context::Context,
    opts: &Options,
    bypass_refused: bool,
) -> Policy {
    use crate::context::settings::SettingsScope;
    let files: Vec<settings::FileRef> = ctx
        .settings()
        .files
        .iter()
        .map(|f| settings::FileRef {
            origin: match f.scope {
                SettingsScope::User => Origin::User,
                SettingsScope::Project => Origin::Project,
                SettingsScope::Local => Origin::Local,
                SettingsScope::Managed => Origin::Managed,
            },
            path: f.path.clone(),
            repository: f.repository,
        })
        .collect();
    let trusted = opts
        .trusted
        .unwrap_or_else(|| ctx.settings().trust.trusted());
    let mut loaded = settings::read(
        fs,
        &settings::Input {
            files: &files,
            cwd: &ctx.cwd,
            home: ctx.home(),
            trusted,
            global_config: ctx.global_config(),
            command_line: &opts.command_line,
        },
    );
    for d in &opts.add_dirs {
        loaded
            .additional_dirs
            .push((crate::fs::normalize(&ctx.cwd, d), Source::command_line()));
    }
    let bypass = if bypass_refused {
        Bypass::Root
    } else {
        Bypass::Available
    };
    let mut p = Policy::new(loaded, opts.mode, trusted, bypass);
    p.trusted = trusted;
    p
}

/// What the permission settings add to the environment section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvironmentParts {
    /// ` - Additional working directories:` lines.
    pub additional_dirs: Vec<String>,
    /// The mode's text, before `Today's date is` (plan, bypass permissions).
    pub mode_text: Option<String>,
}

/// The environment section's text for a mode (section 7: plan and bypass permissions; auto does
/// not run here; the others change nothing).
pub fn mode_text(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Plan => Some(texts::PLAN_REMINDER),
        Mode::BypassPermissions => Some(texts::BYPASS_REMINDER),
        Mode::Default | Mode::AcceptEdits | Mode::DontAsk => None,
    }
}

/// What the model is told when the mode changes after its first request, if anything.
pub fn mode_change_note(from: Mode, to: Mode) -> Option<String> {
    if from == to {
        return None;
    }
    let mut parts = Vec::new();
    match from {
        Mode::Plan => parts.push(texts::PLAN_EXITED),
        Mode::BypassPermissions => parts.push(texts::BYPASS_EXITED),
        _ => {}
    }
    parts.extend(mode_text(to));
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
