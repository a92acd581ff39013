//! Skills below cwd, found when a tool touches a file under them (`../shared/spec/skills-mcp.md`
//! section 2).
//!
//! A touched file below cwd discovers the `.claude/skills` folders of the folders between cwd
//! (excluded) and the file, each once per session. The session then sends, right after the user
//! message holding that tool result, one `system` message:
//!
//! ```text
//! New skills discovered in <deepest folder>/.claude/skills, now available via the Skill tool:\n- <name>...
//! \n\nNew skills discovered in <next folder up>/.claude/skills, ...
//! \n\nThe following skills are available for use with the Skill tool:\n\n- <name>: <description> (from <folder>/.claude/skills — applies when working on files under <folder>/)...
//! ```
//!
//! The `New skills discovered` parts come deepest folder first, the listing shallowest first,
//! sorted by folder name within a folder; folders are relative to cwd. A name already known is
//! renamed `<folder>:<name>` and gets `(scoped to <folder>/ — use this instead of the unscoped
//! "<name>" skill when the files being changed are under <folder>/)` instead.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{Skill, Skills, Source, read_skill, sorted_entries};
use crate::fs::{Fs, Kind};

/// What one touch discovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    /// The `system` message's text.
    pub text: String,
    /// The skills it made available, in listing order (with their session names).
    pub skills: Vec<Skill>,
    /// The skills folders it read, deepest first.
    pub folders: Vec<PathBuf>,
}

/// The session's memory of what was discovered.
#[derive(Clone, Debug, Default)]
pub struct Discoverer {
    cwd: PathBuf,
    max_desc: usize,
    /// Names the model already knows (the listing's, and earlier discoveries').
    names: HashSet<String>,
    /// Folders (below cwd) already looked at.
    done: HashSet<PathBuf>,
    /// Where a skill's file must really be (the startup's roots; else cwd).
    roots: Vec<PathBuf>,
    /// Every skill discovered so far, for invocation.
    pub skills: Vec<Skill>,
}

impl Discoverer {
    /// A session in `cwd` (real path) whose start listed `startup`.
    pub fn new(cwd: &Path, startup: &Skills, max_desc: usize) -> Discoverer {
        Discoverer {
            cwd: cwd.to_path_buf(),
            max_desc,
            names: super::names_of(startup),
            done: HashSet::new(),
            roots: if startup.roots.is_empty() {
                vec![cwd.to_path_buf()]
            } else {
                startup.roots.clone()
            },
            skills: Vec::new(),
        }
    }

    /// Marks the folders below cwd a resumed session had already discovered, without a message.
    pub fn seen(&mut self, folder: &Path) {
        self.done.insert(folder.to_path_buf());
    }

    /// The discovery a touch of `file` (its real path) makes; `None` when it finds nothing new.
    pub fn touch(&mut self, fs: &dyn Fs, file: &Path) -> Option<Discovery> {
        let rel = file.strip_prefix(&self.cwd).ok()?;
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut at = self.cwd.clone();
        let comps: Vec<_> = rel.components().collect();
        // Folders between cwd and the file, shallowest first (the file's own name excluded).
        for c in comps.iter().take(comps.len().saturating_sub(1)) {
            at.push(c);
            if dirs.len() >= crate::context::MAX_DIR_DEPTH {
                break;
            }
            dirs.push(at.clone());
        }
        // Per folder, shallowest first: (relative folder, its skills).
        let mut found: Vec<(String, PathBuf, Vec<Skill>)> = Vec::new();
        for dir in dirs {
            if !self.done.insert(dir.clone()) {
                continue;
            }
            let folder = dir.join(".claude").join("skills");
            if !fs.is_dir(&folder) {
                continue;
            }
            let rel_dir = dir
                .strip_prefix(&self.cwd)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut skills = Vec::new();
            for e in sorted_entries(fs, &folder) {
                if e.kind != Some(Kind::Dir) || e.raw.is_some() {
                    continue;
                }
                let sdir = folder.join(&e.name);
                let sfile = sdir.join(super::SKILL_FILE);
                if !fs.is_file(&sfile) || super::linked_outside(fs, &sfile, &self.roots).is_some() {
                    continue;
                }
                let Some((mut skill, _)) = read_skill(
                    fs,
                    &e.name,
                    &sfile,
                    Some(&sdir),
                    &folder,
                    Source::Nested,
                    self.max_desc,
                ) else {
                    continue;
                };
                if skill.hidden {
                    continue;
                }
                let plain = skill.name.clone();
                if self.names.contains(&plain) {
                    skill.name = format!("{rel_dir}:{plain}");
                    skill.scope_note = Some(format!(
                        "(scoped to {rel_dir}/ — use this instead of the unscoped \"{plain}\" skill when the files being changed are under {rel_dir}/)"
                    ));
                } else {
                    skill.scope_note = Some(format!(
                        "(from {rel_dir}/.claude/skills — applies when working on files under {rel_dir}/)"
                    ));
                }
                self.names.insert(skill.name.clone());
                skills.push(skill);
            }
            if !skills.is_empty() {
                found.push((rel_dir, folder, skills));
            }
        }
        if found.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = found
            .iter()
            .rev()
            .map(|(rel, _, skills)| {
                let names: Vec<String> = skills.iter().map(|s| format!("- {}", s.name)).collect();
                format!(
                    "New skills discovered in {rel}/.claude/skills, now available via the Skill tool:\n{}",
                    names.join("\n")
                )
            })
            .collect();
        let entries: Vec<String> = found
            .iter()
            .flat_map(|(_, _, skills)| skills.iter())
            .map(|s| {
                format!(
                    "- {}: {} {}",
                    s.display_name(),
                    s.description,
                    s.scope_note.as_deref().unwrap_or_default()
                )
            })
            .collect();
        parts.push(format!("{}{}", super::listing::HEADER, entries.join("\n")));
        let skills: Vec<Skill> = found.iter().flat_map(|f| f.2.iter().cloned()).collect();
        self.skills.extend(skills.iter().cloned());
        Some(Discovery {
            text: parts.join("\n\n"),
            skills,
            folders: found.into_iter().rev().map(|f| f.1).collect(),
        })
    }

    /// A discovered skill `called` names.
    pub fn find(&self, called: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.answers_to(called))
    }
}
