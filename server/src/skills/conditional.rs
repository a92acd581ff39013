//! Conditional skills: a skill whose frontmatter has `paths:` (class K36,
//! `../shared/spec/skills-mcp.md` section 12).
//!
//! Such a skill is left out of the startup listing. When a tool touches a file whose path
//! relative to cwd matches one of its globs (the rules' globs: [`crate::context::globs`]), the
//! session sends, right after the user message holding that tool result, one `system` message
//! (as for the skills a touch discovers below cwd, [`super::nested`]):
//!
//! ```text
//! The following skills are available for use with the Skill tool:\n\n- <name>: <description>
//! ```
//!
//! Each skill is announced once per session; several that one touch activates share one message,
//! in listing order. A skill whose globs never match is never listed, and the `Skill` tool does
//! not know it until it is announced. A file outside cwd activates nothing (the reference matches
//! the path relative to cwd and skips one that starts with `..`). User skills and legacy commands
//! follow the same rule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Skill, Skills};
use crate::context::globs::{self, RuleMatcher};
use crate::context::settings::Sourced;

/// What one touch activated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activation {
    /// The `system` message's text.
    pub text: String,
    /// The skills it made available, in listing order.
    pub skills: Vec<Skill>,
}

/// The session's conditional skills and which of them were announced.
#[derive(Debug, Default)]
pub struct Activator {
    cwd: PathBuf,
    /// The conditional skills, in listing order.
    skills: Vec<Skill>,
    /// Per skill: announced already.
    active: Vec<bool>,
    matcher: RuleMatcher,
}

impl Activator {
    /// The conditional skills of a session in `cwd` (real path) that started with `startup`;
    /// skills the model may not call (`disable-model-invocation`) or that `skillOverrides` turns
    /// off are never announced.
    pub fn new(
        cwd: &Path,
        startup: &Skills,
        overrides: &BTreeMap<String, Sourced<String>>,
    ) -> Activator {
        let off = |s: &Skill| {
            overrides
                .get(&s.name)
                .or_else(|| s.alias.as_ref().and_then(|a| overrides.get(a)))
                .is_some_and(|o| matches!(o.value.as_str(), "off" | "user-invocable-only"))
        };
        let skills: Vec<Skill> = startup
            .skills
            .iter()
            .filter(|s| s.paths.is_some() && !s.hidden && !off(s))
            .cloned()
            .collect();
        let patterns: Vec<Vec<globs::Pattern>> = skills
            .iter()
            .map(|s| globs::normalize(s.paths.as_deref().unwrap_or_default()).unwrap_or_default())
            .collect();
        Activator {
            cwd: cwd.to_path_buf(),
            active: vec![false; skills.len()],
            matcher: RuleMatcher::new(patterns.iter().map(Vec::as_slice)),
            skills,
        }
    }

    /// The activation a touch of `file` (its real path) makes; `None` when no skill not yet
    /// announced matches.
    pub fn touch(&mut self, file: &Path) -> Option<Activation> {
        if self.active.iter().all(|a| *a) {
            return None;
        }
        let rel = globs::relative_to(file, &self.cwd)?;
        let mut skills = Vec::new();
        for (i, _) in self.matcher.matches(rel) {
            if !std::mem::replace(&mut self.active[i], true) {
                skills.push(self.skills[i].clone());
            }
        }
        if skills.is_empty() {
            return None;
        }
        let entries: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {}", s.display_name(), s.description))
            .collect();
        Some(Activation {
            text: format!("{}{}", super::listing::HEADER, entries.join("\n")),
            skills,
        })
    }

    /// Is the conditional skill of `file` still waiting for a matching touch?
    pub fn pending(&self, file: &Path) -> bool {
        self.skills
            .iter()
            .zip(&self.active)
            .any(|(s, a)| !a && s.file == file)
    }

    /// Marks the skill `name` announced without a message (a resumed session that had
    /// announced it).
    pub fn seen(&mut self, name: &str) {
        for (s, a) in self.skills.iter().zip(self.active.iter_mut()) {
            if s.name == name {
                *a = true;
            }
        }
    }

    /// Every conditional skill announced so far.
    pub fn active(&self) -> impl Iterator<Item = &Skill> {
        self.skills
            .iter()
            .zip(&self.active)
            .filter(|(_, a)| **a)
            .map(|(s, _)| s)
    }
}
