//! Permission modes (`../shared/spec/permissions-trust.md` section 7): their names, where a
//! session's starting mode comes from, and which modes a session may switch to.
//!
//! - `default` (the reference's `manual` too): rules, then a prompt for what changes anything;
//! - `acceptEdits`: Write and Edit inside the working directories, and the common file commands
//!   (`mkdir`, `touch`, `rm`, `rmdir`, `mv`, `cp`) on paths inside them, run without a prompt;
//! - `plan`: nothing that changes anything runs (the measured refusals), the plan reminder is in
//!   the environment section;
//! - `dontAsk`: what would ask is refused with the measured text; allow rules still allow;
//! - `bypassPermissions`: everything runs but what a deny rule covers (and, ours, a change to a
//!   file that makes programs run code, which still asks); refused where the reference refuses
//!   it (as root without `IS_SANDBOX=1`) and when `disableBypassPermissionsMode` is `"disable"`;
//! - `auto`: the reference's classifier runs on Anthropic's side and is not available here: the
//!   session runs in default mode and says so.
//!
//! Settings' `permissions.defaultMode` (section 7): user settings may give any mode; project and
//! local settings `plan`, `dontAsk` and `default`; `acceptEdits` from the user's own local file
//! (untracked) as measured, and from the repository's files (the project's, a tracked local
//! one: workspace trust) only once the folder is trusted (ours: the reference honours the
//! project's untrusted); `bypassPermissions` and `auto` only from user (or managed) settings. The command line's `--permission-mode` beats every setting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rule::{Origin, Source};

/// A permission mode a session runs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    #[default]
    Default,
    AcceptEdits,
    Plan,
    DontAsk,
    BypassPermissions,
}

/// The reference's `--permission-mode` choices, in its order.
pub const CHOICES: &str = "acceptEdits, auto, bypassPermissions, manual, dontAsk, plan";

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::DontAsk,
        Mode::BypassPermissions,
    ];

    /// The wire name (`acceptEdits`).
    pub fn id(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }

    /// A name for a picker.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "Default",
            Mode::AcceptEdits => "Accept edits",
            Mode::Plan => "Plan",
            Mode::DontAsk => "Don't ask",
            Mode::BypassPermissions => "Bypass permissions",
        }
    }

    /// One line for a picker.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Default => "Ask before anything that changes files or runs commands",
            Mode::AcceptEdits => {
                "Edits and common file commands inside the workspace run without asking"
            }
            Mode::Plan => "Read-only: explore and plan, change nothing",
            Mode::DontAsk => "Never ask: run what rules allow, refuse the rest",
            Mode::BypassPermissions => {
                "Run everything without asking, except what deny rules refuse"
            }
        }
    }

    /// Reads a mode as the reference's `--permission-mode` does (`manual` is `default`).
    /// `Some(None)` is `auto`, which this session cannot run.
    pub fn parse(s: &str) -> Option<Option<Mode>> {
        Some(Some(match s {
            "default" | "manual" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "plan" => Mode::Plan,
            "dontAsk" => Mode::DontAsk,
            "bypassPermissions" => Mode::BypassPermissions,
            "auto" => return Some(None),
            _ => return None,
        }))
    }

    /// The reference's error for a value it does not know.
    pub fn invalid(value: &str) -> String {
        format!(
            "error: option '--permission-mode <mode>' argument '{value}' is invalid. Allowed choices are {CHOICES}."
        )
    }
}

/// Where a session's mode came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", tag = "from")]
pub enum ModeSource {
    /// Nothing set one.
    Default,
    /// `permissions.defaultMode` of a settings file.
    Settings(Source),
    /// `--permission-mode`, or the front end's own request (`chat/new`'s `mode`).
    CommandLine,
    /// Changed during the session (`chat/setMode`, `session/set_mode`).
    Session,
}

/// Whether bypass permissions mode may run, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bypass {
    Available,
    /// `disableBypassPermissionsMode: "disable"` in a settings file.
    Disabled(Source),
    /// Root without `IS_SANDBOX=1`.
    Root,
}

impl Bypass {
    /// Why the mode is refused, for a note or an error.
    pub fn refusal(&self) -> Option<String> {
        match self {
            Bypass::Available => None,
            Bypass::Disabled(s) => Some(format!(
                "bypassPermissions is disabled by disableBypassPermissionsMode in {}",
                s.describe()
            )),
            Bypass::Root => Some(
                "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
                    .to_string(),
            ),
        }
    }
}

/// A `defaultMode` one settings file gives.
#[derive(Clone, Debug)]
pub struct Declared {
    pub value: String,
    pub source: Source,
    /// From the repository's file (the project's, a tracked local one: workspace trust), not the
    /// user's.
    pub repository: bool,
}

/// The starting mode, where it came from, and notes on what was ignored (for stderr and the
/// preview).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub mode: Mode,
    pub source: ModeSource,
    pub notes: Vec<String>,
}

/// The starting mode from the command line's (or front end's) request and the settings'
/// `defaultMode`s (lowest precedence first: user, project, local, managed), given trust and
/// whether bypass may run.
pub fn start(
    requested: Option<Option<Mode>>,
    declared: &[Declared],
    trusted: bool,
    bypass: &Bypass,
) -> Start {
    let mut notes = Vec::new();
    let mut pick: Option<(Mode, ModeSource)> = None;
    for d in declared {
        let Some(parsed) = Mode::parse(&d.value) else {
            notes.push(format!(
                "permissions.defaultMode {:?} in {} is not a mode ({CHOICES}); ignored",
                d.value,
                d.source.describe()
            ));
            continue;
        };
        let own = matches!(d.source.origin, Origin::User | Origin::Managed);
        match parsed {
            None if !own => {} // the reference ignores a project's `auto` silently
            None => notes.push(format!(
                "permissions.defaultMode \"auto\" in {}: auto mode's safety check runs on Anthropic's servers and is not available to claude-context; default mode instead",
                d.source.describe()
            )),
            Some(Mode::BypassPermissions) if !own => {} // ignored silently, as measured
            Some(Mode::AcceptEdits) if d.repository && !trusted => notes.push(format!(
                "permissions.defaultMode \"acceptEdits\" in {} is ignored until this folder is trusted (a cloned repository must not turn its own edits' prompts off)",
                d.source.describe()
            )),
            Some(m) => pick = Some((m, ModeSource::Settings(d.source.clone()))),
        }
    }
    match requested {
        Some(Some(m)) => pick = Some((m, ModeSource::CommandLine)),
        Some(None) => {
            notes.push("auto mode's safety check runs on Anthropic's servers and is not available to claude-context; running in default mode".to_string());
            pick = Some((Mode::Default, ModeSource::CommandLine));
        }
        None => {}
    }
    let (mut mode, mut source) = pick.unwrap_or((Mode::Default, ModeSource::Default));
    if mode == Mode::BypassPermissions
        && let Some(why) = bypass.refusal()
    {
        // The reference turns a disabled bypass into default mode silently; ours says so.
        notes.push(format!("{why}; running in default mode"));
        mode = Mode::Default;
        if matches!(bypass, Bypass::Disabled(_)) {
            source = ModeSource::Default;
        }
    }
    Start {
        mode,
        source,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn declared(value: &str, origin: Origin) -> Declared {
        Declared {
            value: value.into(),
            source: Source {
                origin,
                file: Some(PathBuf::from(format!("/{}.json", origin.label()))),
                line: Some(2),
            },
            repository: origin == Origin::Project,
        }
    }

    #[test]
    fn names_are_the_references() {
        assert_eq!(Mode::parse("manual"), Some(Some(Mode::Default)));
        assert_eq!(Mode::parse("auto"), Some(None));
        assert_eq!(Mode::parse("bogus"), None);
        assert_eq!(
            Mode::invalid("bogus"),
            "error: option '--permission-mode <mode>' argument 'bogus' is invalid. Allowed choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan."
        );
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.id()), Some(Some(m)));
            assert_eq!(serde_json::to_value(m).unwrap(), m.id());
        }
    }

    /// dm/*: where a starting mode may come from.
    #[test]
    fn default_mode_sources_as_measured() {
        let ok = Bypass::Available;
        let s = start(None, &[declared("plan", Origin::User)], false, &ok);
        assert_eq!(s.mode, Mode::Plan);
        let s = start(
            Some(Some(Mode::AcceptEdits)),
            &[declared("plan", Origin::User)],
            false,
            &ok,
        );
        assert_eq!(
            (s.mode, s.source),
            (Mode::AcceptEdits, ModeSource::CommandLine)
        );
        assert_eq!(
            start(None, &[declared("plan", Origin::Project)], false, &ok).mode,
            Mode::Plan
        );
        // Ours: an untrusted project's acceptEdits waits for trust.
        let s = start(
            None,
            &[declared("acceptEdits", Origin::Project)],
            false,
            &ok,
        );
        assert_eq!(s.mode, Mode::Default);
        assert!(s.notes[0].contains("until this folder is trusted"), "{s:?}");
        assert_eq!(
            start(None, &[declared("acceptEdits", Origin::Local)], true, &ok).mode,
            Mode::AcceptEdits
        );
        // The user's own local file (untracked): honoured untrusted, as measured (dm/local_accept).
        assert_eq!(
            start(None, &[declared("acceptEdits", Origin::Local)], false, &ok).mode,
            Mode::AcceptEdits
        );
        // A local file git tracks is the repository's (workspace trust): it waits for trust too.
        let tracked = Declared {
            repository: true,
            ..declared("acceptEdits", Origin::Local)
        };
        let s = start(None, std::slice::from_ref(&tracked), false, &ok);
        assert_eq!(s.mode, Mode::Default);
        assert!(s.notes[0].contains("until this folder is trusted"), "{s:?}");
        assert_eq!(start(None, &[tracked], true, &ok).mode, Mode::AcceptEdits);
        for origin in [Origin::Project, Origin::Local] {
            let s = start(None, &[declared("bypassPermissions", origin)], true, &ok);
            assert_eq!(s.mode, Mode::Default);
            assert!(s.notes.is_empty());
        }
        assert_eq!(
            start(
                None,
                &[declared("bypassPermissions", Origin::User)],
                true,
                &ok
            )
            .mode,
            Mode::BypassPermissions
        );
        let s = start(None, &[declared("auto", Origin::Project)], true, &ok);
        assert_eq!((s.mode, s.notes.len()), (Mode::Default, 0));
        let s = start(Some(None), &[], true, &ok);
        assert_eq!(s.mode, Mode::Default);
        assert!(s.notes[0].contains("not available"));
    }

    #[test]
    fn bypass_is_refused_where_the_reference_refuses_it() {
        let disabled = Bypass::Disabled(declared("x", Origin::User).source);
        let s = start(Some(Some(Mode::BypassPermissions)), &[], true, &disabled);
        assert_eq!(s.mode, Mode::Default);
        let s = start(
            Some(Some(Mode::BypassPermissions)),
            &[],
            true,
            &Bypass::Root,
        );
        assert_eq!(s.mode, Mode::Default);
        assert!(s.notes[0].contains("root/sudo"), "{s:?}");
    }
}
