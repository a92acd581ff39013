//! A session's skills: the `Skill` tool and the skills below cwd that touched files discover
//! (`../shared/spec/skills-mcp.md` sections 2 and 5).
//!
//! - `Skill {"skill": <name>, "args": <string>}` answers `Launching skill: <name>` and sends,
//!   after the results of its round, the skill's body (`Base directory for this skill: …`, the
//!   substitutions of `skills::invoke`). Called again under either name: `Skill /<name> is
//!   already loaded above; instructions unchanged.`; an unknown name and a
//!   `disable-model-invocation` skill are the measured error results.
//! - Shell constructs in a body (`` !`cmd` ``, ```` ```! ````) run only through the Bash tool,
//!   with its permission prompt (every command asks); their output takes their place. A denied
//!   or failed command fails the whole call, as in the reference CLI, and nothing else ran.
//! - Files the session's tools touch below cwd discover the `.claude/skills` folders between cwd
//!   and them, each once; the message goes after that round's results (the driver-independent
//!   hook `ToolRunner::after_results`).
//! - Conditional skills (`paths:`) are left out of the startup listing and unknown to the tool
//!   until a touched file first matches; the listing of those it activates goes after that
//!   round's results too, after the discovery message of the same file (`skills::conditional`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

use super::events::ToolOutput;
use crate::fs::{Fs, RealFs};
use crate::llm::{CancellationToken, ToolSpec};
use crate::skills::conditional::Activator;
use crate::skills::nested::Discoverer;
use crate::skills::{self, Skill, Skills, invoke};
use crate::tools::Tools;

/// The tool's name.
pub const SKILL_TOOL: &str = "Skill";

/// The skills of one session.
pub struct SessionSkills {
    skills: Skills,
    discoverer: Mutex<Discoverer>,
    activator: Mutex<Activator>,
    /// Files of the skills loaded so far (by either name).
    loaded: Mutex<HashSet<PathBuf>>,
}

impl SessionSkills {
    /// The skills a session in `cwd` (real path) started with, under the settings'
    /// `skillOverrides`.
    pub fn new(
        cwd: &Path,
        skills: Skills,
        max_desc: usize,
        overrides: &std::collections::BTreeMap<String, crate::context::settings::Sourced<String>>,
    ) -> SessionSkills {
        SessionSkills {
            discoverer: Mutex::new(Discoverer::new(cwd, &skills, max_desc)),
            activator: Mutex::new(Activator::new(cwd, &skills, overrides)),
            skills,
            loaded: Mutex::new(HashSet::new()),
        }
    }

    /// The `Skill` tool's definition (our words).
    pub fn spec() -> ToolSpec {
        ToolSpec {
            name: SKILL_TOOL.into(),
            description: "Load a skill: instructions the user or the project wrote for a kind of task, listed in the system prompt under \"The following skills are available for use with the Skill tool\". Call it with the skill's name (and its arguments, if the task gives any) before doing that kind of task; the skill's instructions arrive after the result. A skill already loaded in this conversation need not be loaded again.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "skill": {"type": "string", "description": "The skill's name as listed (for example \"deploy\" or \"grp:sub\")."},
                    "args": {"type": "string", "description": "Arguments for the skill, as a user would type them after /<name>."}
                },
                "required": ["skill"],
                "additionalProperties": false
            }),
            defer_loading: false,
        }
    }

    fn find(&self, called: &str) -> Option<Skill> {
        // A conditional skill no touched file has matched yet is unknown, as it is unlisted.
        let pending = |s: &Skill| self.activator.lock().is_ok_and(|a| a.pending(&s.file));
        if let Some(s) = self
            .skills
            .skills
            .iter()
            .find(|s| s.answers_to(called) && !pending(s))
        {
            return Some(s.clone());
        }
        self.discoverer
            .lock()
            .ok()
            .and_then(|d| d.find(called).cloned())
    }

    /// Runs one `Skill` call; shell constructs go through `tools`' Bash (its prompt).
    pub async fn run(
        &self,
        input: &Value,
        session_id: &str,
        tools: &Tools,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let error = |content: String| ToolOutput {
            content,
            is_error: true,
            ..ToolOutput::default()
        };
        let Some(called) = input.get("skill").and_then(Value::as_str) else {
            return error(
                "<tool_use_error>The Skill tool takes {\"skill\": \"<name>\", \"args\": \"<arguments>\"}</tool_use_error>"
                    .into(),
            );
        };
        let called = called.trim();
        let args = input.get("args").and_then(Value::as_str);
        let Some(skill) = self.find(called) else {
            return error(invoke::unknown(called));
        };
        if skill.hidden {
            return error(invoke::not_for_the_model(&skill.name));
        }
        if self.loaded.lock().is_ok_and(|l| l.contains(&skill.file)) {
            return ToolOutput {
                content: invoke::already_loaded(called.trim_start_matches('/')),
                ..ToolOutput::default()
            };
        }
        let text = match RealFs.read_text(&skill.file) {
            Ok(t) => t,
            Err(e) => return error(format!("The skill's file could not be read: {e}")),
        };
        let body = invoke::body(&text).to_string();
        let body = match self.run_shell(&body, &skill, tools, cancel).await {
            Ok(b) => b,
            Err((e, stop)) => {
                return ToolOutput { stop, ..error(e) };
            }
        };
        // A plugin's skill: `${CLAUDE_PLUGIN_ROOT}` is its plugin's folder (the parent of the
        // `skills` or `commands` folder it was found in).
        let body = match (skill.source, skill.folder.parent()) {
            (crate::skills::Source::Plugin, Some(root)) => {
                body.replace("${CLAUDE_PLUGIN_ROOT}", &root.display().to_string())
            }
            _ => body,
        };
        let block = invoke::text_block(skill.dir.as_deref(), &body, args, session_id);
        if let Ok(mut l) = self.loaded.lock() {
            l.insert(skill.file.clone());
        }
        ToolOutput {
            content: invoke::launching(called.trim_start_matches('/')),
            is_error: false,
            extra: vec![block],
            ..ToolOutput::default()
        }
    }

    /// The body with each shell construct replaced by its command's output; every command asks
    /// through the Bash tool first.
    async fn run_shell(
        &self,
        body: &str,
        skill: &Skill,
        tools: &Tools,
        cancel: &CancellationToken,
    ) -> Result<String, (String, bool)> {
        let sites = skills::shell::find(body);
        if sites.is_empty() {
            return Ok(body.to_string());
        }
        let mut out = String::with_capacity(body.len());
        let mut at = 0;
        for site in sites.iter().take(skills::shell::MAX_REPORTED) {
            let input = json!({
                "command": site.command,
                "description": format!("Run by the skill {}", skill.name),
            });
            let r = tools.run("Bash", &input, cancel).await;
            if r.is_error {
                let why = r.content.lines().next().unwrap_or_default().to_string();
                let text = if r.refused {
                    format!(
                        "Shell command permission check failed for pattern \"{}\": {why}",
                        site.command
                    )
                } else {
                    format!(
                        "Shell command failed for pattern \"{}\": {why}",
                        site.command
                    )
                };
                return Err((text, r.stop));
            }
            out.push_str(&body[at..site.start]);
            out.push_str(r.content.trim_end_matches('\n'));
            if site.fenced {
                out.push('\n');
            }
            at = site.end;
        }
        out.push_str(&body[at..]);
        Ok(out)
    }

    /// The skills and commands the user may type as `/<name> [args]` (an ACP client's slash
    /// commands): every `user-invocable` one no `skillOverrides` `off` turned off, the
    /// `disable-model-invocation` ones included (they are for the user to run), in listing
    /// order.
    pub fn user_commands(&self, overrides: &Overrides) -> Vec<UserCommand> {
        self.skills
            .skills
            .iter()
            .filter(|s| typeable(s, overrides))
            .map(|s| UserCommand {
                name: s.name.clone(),
                description: s.description.clone(),
                hint: argument_hint(s),
            })
            .collect()
    }

    /// The skill the user typed as `/<called> <args>`: the first user message's text, as the
    /// reference sends it (`skills::invoke::typed`'s block, then the skill's body with its
    /// substitutions under `Base directory for this skill: …`). Its shell constructs run first,
    /// each through `tools`' Bash and its prompt. `None`: no skill of that name the user may
    /// type (the prompt goes to the model as written). `Err`: the skill could not be run, with
    /// the reason.
    pub async fn typed(
        &self,
        called: &str,
        args: &str,
        overrides: &Overrides,
        session_id: &str,
        tools: &Tools,
        cancel: &CancellationToken,
    ) -> Option<Result<String, String>> {
        let called = called.strip_prefix('/').unwrap_or(called);
        let skill = self
            .skills
            .skills
            .iter()
            .find(|s| s.answers_to(called) && typeable(s, overrides))?
            .clone();
        let text = match RealFs.read_text(&skill.file) {
            Ok(t) => t,
            Err(e) => return Some(Err(format!("The skill's file could not be read: {e}"))),
        };
        let body = invoke::body(&text).to_string();
        let body = match self.run_shell(&body, &skill, tools, cancel).await {
            Ok(b) => b,
            Err((e, _)) => return Some(Err(e)),
        };
        let args = args.trim();
        let block = invoke::text_block(
            skill.dir.as_deref(),
            &body,
            Some(args).filter(|a| !a.is_empty()),
            session_id,
        );
        if let Ok(mut l) = self.loaded.lock() {
            l.insert(skill.file.clone());
        }
        Some(Ok(format!("{}{block}", invoke::typed(called, args))))
    }

    /// The discovery and activation messages for files the session's tools touched, per file
    /// in order: the skills found below cwd, then the conditional skills it activated.
    pub fn discovered(&self, touched: &[PathBuf]) -> Vec<String> {
        let (Ok(mut d), Ok(mut a)) = (self.discoverer.lock(), self.activator.lock()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for f in touched {
            out.extend(d.touch(&RealFs, f).map(|found| found.text));
            out.extend(a.touch(f).map(|activated| activated.text));
        }
        out
    }
}

/// The settings' `skillOverrides`.
pub type Overrides = std::collections::BTreeMap<String, crate::context::settings::Sourced<String>>;

/// A skill or command the user may type (`SessionSkills::user_commands`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserCommand {
    /// Typed as `/<name>`.
    pub name: String,
    pub description: String,
    /// Its frontmatter's `argument-hint`, when it has one.
    pub hint: Option<String>,
}

/// May the user type `skill` (`user-invocable`, not turned `off` by `skillOverrides`)?
fn typeable(skill: &Skill, overrides: &Overrides) -> bool {
    let mode = overrides
        .get(&skill.name)
        .or_else(|| skill.alias.as_ref().and_then(|a| overrides.get(a)));
    skill.user_invocable && mode.is_none_or(|m| m.value != "off")
}

/// A skill file's `argument-hint` (files over 1 MiB are not read for it).
fn argument_hint(skill: &Skill) -> Option<String> {
    if skill.bytes > 1024 * 1024 {
        return None;
    }
    let text = RealFs.read_text(&skill.file).ok()?;
    let (fm, _) = crate::context::frontmatter::split(&text);
    let hint = fm?
        .fields
        .get("argument-hint")?
        .as_str()?
        .trim()
        .to_string();
    (!hint.is_empty()).then_some(hint)
}

/// `tools` with the `Skill` tool over the skills `session` started with (none: as they were).
pub fn attach(tools: super::SessionTools, session: &super::Session) -> super::SessionTools {
    let snap = session.snapshot();
    match &snap.skills {
        Some(skills) if !skills.skills.is_empty() => tools.with_skills(SessionSkills::new(
            &snap.ctx.cwd,
            skills.clone(),
            crate::skills::max_desc_chars(snap.ctx.settings()),
            &snap.ctx.settings().skill_overrides,
        )),
        _ => tools,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::events::{ToolContext, ToolRunner};
    use crate::tools::{Asker, Decision, DiskOnly, PermissionRequest, ToolsConfig, Workspace};
    use futures::future::BoxFuture;
    use std::sync::Arc;

    struct Answer(Decision, Mutex<Vec<String>>);

    impl Asker for Answer {
        fn ask(&self, r: PermissionRequest) -> BoxFuture<'_, Decision> {
            self.1.lock().unwrap().push(r.summary);
            Box::pin(async move { self.0 })
        }
    }

    fn session_tools(root: &Path, answer: Decision) -> (super::super::SessionTools, Arc<Answer>) {
        std::fs::create_dir_all(root.join(".claude/skills/run")).unwrap();
        std::fs::write(
            root.join(".claude/skills/run/SKILL.md"),
            "---\ndescription: Runs\n---\nInline: !`echo SHELL-OUT-$((6*7))`\n```!\necho fenced > fenced.txt\n```\nend\n",
        )
        .unwrap();
        let opts = crate::skills::Options {
            cwd: root.to_path_buf(),
            git_root: Some(root.to_path_buf()),
            max_desc_chars: 1_536,
            ..Default::default()
        };
        let skills = crate::skills::discover(&RealFs, &opts);
        let asker = Arc::new(Answer(answer, Mutex::default()));
        let config = ToolsConfig::new(Workspace::new(vec![root.to_path_buf()], Vec::new()));
        let tools = super::super::SessionTools::new(config, Arc::new(DiskOnly), asker.clone())
            .with_skills(SessionSkills::new(root, skills, 1_536, &Default::default()));
        (tools, asker)
    }

    fn call() -> crate::conversation::ToolUse {
        crate::conversation::ToolUse {
            id: "t".into(),
            name: SKILL_TOOL.into(),
            input: json!({"skill": "run"}),
        }
    }

    /// A skill's shell commands run only through the Bash tool's prompt: allowed, their output
    /// takes their place (the reference CLI's `Inline: SHELL-OUT-42`); denied, the call fails
    /// with the measured message and nothing ran.
    #[tokio::test]
    async fn shell_commands_in_a_skill_ask_like_bash() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cancel = CancellationToken::new();
        let cx = ToolContext {
            session_id: "s",
            root: &root,
            cancel: &cancel,
            preset: None,
        };
        let (tools, asker) = session_tools(&root, Decision::Deny);
        let out = tools.run(&call(), cx).await;
        assert!(out.is_error, "{out:?}");
        assert!(
            out.content.starts_with(
                "Shell command permission check failed for pattern \"echo SHELL-OUT-$((6*7))\": The user doesn't want to proceed with this tool use."
            ),
            "{}",
            out.content
        );
        assert!(out.stop, "a rejection ends the turn");
        assert!(out.extra.is_empty());
        assert_eq!(asker.1.lock().unwrap().len(), 1, "asked once, then stopped");
        assert!(!root.join("fenced.txt").exists(), "nothing ran");

        let (tools, asker) = session_tools(&root, Decision::Allow);
        let cx = ToolContext {
            session_id: "s",
            root: &root,
            cancel: &cancel,
            preset: None,
        };
        let out = tools.run(&call(), cx).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.content, "Launching skill: run");
        let body = &out.extra[0];
        assert!(body.contains("\n\nInline: SHELL-OUT-42\n"), "{body}");
        assert!(!body.contains("```!") && body.ends_with("end\n"), "{body}");
        assert_eq!(asker.1.lock().unwrap().len(), 2, "each command asked");
        assert!(root.join("fenced.txt").exists());
        assert!(tools.specs().iter().any(|s| s.name == SKILL_TOOL));
    }

    /// A deny rule covers a skill's shell block as it covers the Bash tool: refused with the
    /// measured text, nobody asked, nothing ran.
    #[tokio::test]
    async fn a_deny_rule_refuses_a_skills_shell_block_without_asking() {
        use crate::permissions::{Kind, Mode, Policy, Rule, Source, rule::Bases};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (_, asker) = session_tools(&root, Decision::Allow);
        let bases = Bases {
            cwd: root.clone(),
            home: None,
            root: root.clone(),
        };
        let deny = Rule::parse(
            "Bash(echo:*)",
            Kind::Deny,
            Source::command_line(),
            &bases,
            "x",
            &mut Vec::new(),
        );
        let mut config = ToolsConfig::new(Workspace::new(vec![root.clone()], Vec::new()));
        config.policy = Arc::new(Policy::with_rules(vec![deny], Mode::Default));
        let skills = crate::skills::discover(
            &RealFs,
            &crate::skills::Options {
                cwd: root.clone(),
                git_root: Some(root.clone()),
                max_desc_chars: 1_536,
                ..Default::default()
            },
        );
        let tools =
            super::super::SessionTools::new(config, Arc::new(DiskOnly), asker.clone()).with_skills(
                SessionSkills::new(&root, skills, 1_536, &Default::default()),
            );
        let cancel = CancellationToken::new();
        let out = tools
            .run(
                &call(),
                ToolContext {
                    session_id: "s",
                    root: &root,
                    cancel: &cancel,
                    preset: None,
                },
            )
            .await;
        assert_eq!(
            out.content,
            "Shell command permission check failed for pattern \"echo SHELL-OUT-$((6*7))\": Permission to use Bash with command echo SHELL-OUT-$((6*7)) has been denied."
        );
        assert!(!out.stop);
        assert!(asker.1.lock().unwrap().is_empty(), "nobody was asked");
        assert!(!root.join("fenced.txt").exists());
    }
}
