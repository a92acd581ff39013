//! The session's [`ToolRunner`] over the agent's tools ([`crate::tools::Tools`]).
//!
//! [`SessionTools`] is built once per session by its driver (the language server, the command
//! line), which brings the two seams it knows how to serve: an [`Editor`] (the editor's buffers,
//! or [`crate::tools::DiskOnly`]) and an [`Asker`] (`chat/permission`, or the terminal). This
//! file only adapts: the tools' definitions become the request's `tools`, a `tool_use` becomes a
//! [`Tools::run`], and the files a call touched go back by their real paths (what the
//! attachment rules judge).
//!
//! What it decides for every driver ([`tools_config`]):
//! - the workspace is the session's folder first (relative paths and Bash start there), then the
//!   driver's other folders;
//! - the model's key never reaches the model through a tool: its value is scrubbed from every
//!   result, and the variables that can hold a key are removed from Bash's environment.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::config::Model;
use super::events::{ToolContext, ToolOutput, ToolRunner};
use crate::conversation::ToolUse;
use crate::llm::ToolSpec;
use crate::tools::{Asker, Editor, Tools, ToolsConfig, Workspace};

// The variables that hold a model key: removed from every Bash child, whatever the provider
// (a child needs none of them).
use crate::host::KEY_VARIABLES;

/// The tools of one session, as the session's [`ToolRunner`].
pub struct SessionTools {
    tools: Tools,
    specs: Vec<ToolSpec>,
    /// The `Skill` tool and the discovery of skills below cwd, when the session has skills.
    skills: Option<super::skills::SessionSkills>,
    /// The session's MCP servers, `ToolSearch` and the loaded MCP tools, when it has servers.
    mcp: Option<Arc<super::mcp::SessionMcp>>,
    /// The session's workspace trust, settled before its first request.
    trust: Option<Arc<super::trust::SessionTrust>>,
    /// The permission mode the model was last told about (in the environment section at the
    /// first request, then in reminders); `None` before the first request.
    told: std::sync::Mutex<Option<crate::permissions::Mode>>,
}

/// The tools' configuration for a session working in `root` (its real working directory), with
/// `folders` (the editor's other workspace folders) also inside the workspace.
pub fn tools_config(root: PathBuf, folders: &[PathBuf], model: &Model) -> ToolsConfig {
    let mut roots = vec![root];
    for f in folders {
        if !roots.contains(f) {
            roots.push(f.clone());
        }
    }
    let mut config = ToolsConfig::new(Workspace::new(roots, Vec::new()));
    if let Some(s) = &model.secret
        && !s.is_empty()
    {
        config.scrub.push(s.expose().to_string());
    }
    let mut remove: Vec<String> = KEY_VARIABLES
        .iter()
        .chain([&crate::host::SECRETS_FD_VARIABLE])
        .map(|v| v.to_string())
        .collect();
    if let Some(v) = model
        .config
        .key_variable
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        && !remove.iter().any(|r| r == v)
    {
        remove.push(v.to_string());
    }
    config.bash.env_remove = remove;
    config
}

/// The estimate of the tool definitions every chat request carries (`ceil(bytes / 4)` of their
/// names, descriptions and schemas, as [`super::compose::estimate_request`] counts them).
pub fn offered_tools_tokens() -> u64 {
    static TOKENS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOKENS.get_or_init(|| {
        let mut specs = offered_specs();
        // Every session lists agent types (the built-in ones at least), so it offers `Agent`.
        specs.push(super::subagent::spec());
        super::compose::estimate_request(&[], &specs, &[])
    })
}

fn offered_specs() -> Vec<ToolSpec> {
    crate::tools::definitions()
        .into_iter()
        .map(|d| ToolSpec {
            name: d.name.to_string(),
            description: d.description.to_string(),
            input_schema: d.input_schema,
            defer_loading: false,
        })
        .collect()
}

impl SessionTools {
    pub fn new(
        config: ToolsConfig,
        editor: Arc<dyn Editor>,
        asker: Arc<dyn Asker>,
    ) -> SessionTools {
        let specs = offered_specs();
        SessionTools {
            tools: Tools::new(config, editor, asker),
            specs,
            skills: None,
            mcp: None,
            trust: None,
            told: std::sync::Mutex::new(None),
        }
    }

    /// Adds the session's workspace trust: settled (asked when it must be) before the first
    /// request, ahead of the MCP servers.
    pub fn with_trust(mut self, trust: Arc<super::trust::SessionTrust>) -> SessionTools {
        self.trust = Some(trust);
        self
    }

    /// The session's workspace trust, when it has one.
    pub fn trust(&self) -> Option<&Arc<super::trust::SessionTrust>> {
        self.trust.as_ref()
    }

    /// Adds the session's MCP servers: `ToolSearch` (once the first request found a server
    /// connected or connecting), the tools it loaded, and the calls of `mcp__…` tools.
    pub fn with_mcp(mut self, mcp: Arc<super::mcp::SessionMcp>) -> SessionTools {
        self.mcp = Some(mcp);
        self
    }

    /// Shares `runtime` as the session's sandbox state with its hooks (see
    /// [`Tools::share_sandbox`]).
    pub fn with_sandbox(mut self, runtime: Arc<crate::tools::SandboxRuntime>) -> SessionTools {
        self.tools.share_sandbox(runtime);
        self
    }

    /// The session's MCP servers, when it has any.
    pub fn mcp(&self) -> Option<&Arc<super::mcp::SessionMcp>> {
        self.mcp.as_ref()
    }

    /// Adds the `Skill` tool over `skills` (the session's start; skills below cwd are found as
    /// files are touched).
    pub fn with_skills(mut self, skills: super::skills::SessionSkills) -> SessionTools {
        self.specs.push(super::skills::SessionSkills::spec());
        self.skills = Some(skills);
        self
    }

    /// The session's skills, when it has any (the `Skill` tool's; what the user may type).
    pub fn skills(&self) -> Option<&super::skills::SessionSkills> {
        self.skills.as_ref()
    }

    /// Adds the `Agent` tool (the session runs its calls: `session::subagent`).
    pub fn with_agents(mut self) -> SessionTools {
        self.specs.push(super::subagent::spec());
        self
    }

    /// The tools themselves (the session's remembered answers, its todo list).
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The session's permission rules and mode (its front end switches the mode).
    pub fn policy(&self) -> &Arc<crate::permissions::Policy> {
        self.tools.policy()
    }
}

impl ToolRunner for SessionTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.specs.clone();
        if let Some(m) = &self.mcp
            && m.offers_search()
        {
            specs.push(super::mcp::search_spec());
            specs.extend(m.loaded_specs());
        }
        // A tool a deny rule names as a whole is not offered (permissions-trust.md section 2).
        let policy = self.tools.policy();
        specs.retain(|s| policy.removed(&s.name).is_none());
        specs
    }

    fn environment<'a>(
        &'a self,
        cancel: &'a crate::llm::CancellationToken,
    ) -> BoxFuture<'a, Option<super::events::Environment>> {
        Box::pin(async move {
            // Trust first: nothing of the repository runs, and no request is sent, before it.
            if let Some(t) = &self.trust
                && !t.settle(cancel).await
            {
                return None;
            }
            let mcp = match &self.mcp {
                Some(m) => {
                    if !m.settle(cancel).await {
                        return None;
                    }
                    Some(m.freeze())
                }
                None => None,
            };
            let policy = self.tools.policy();
            let mode = policy.mode();
            *self
                .told
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(mode);
            let permissions = policy.environment(self.tools.config().workspace.allowed());
            Some(super::events::Environment {
                mcp,
                permissions: Some(permissions),
                no_agents: !self.specs.iter().any(|s| s.name == super::subagent::TOOL)
                    || policy.removed(super::subagent::TOOL).is_some(),
            })
        })
    }

    fn before_turn(&self) -> Vec<String> {
        let mode = self.tools.policy().mode();
        let mut told = self
            .told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(before) = *told else {
            return Vec::new();
        };
        *told = Some(mode);
        crate::permissions::mode_change_note(before, mode)
            .into_iter()
            .collect()
    }

    fn run<'a>(&'a self, call: &'a ToolUse, cx: ToolContext<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // A PreToolUse hook's decision meets the call's permission decision (tools::Preset).
            let _preset = cx.preset.map(|p| self.tools.preset(&call.id, p.clone()));
            let own =
                call.name == super::skills::SKILL_TOOL || call.name == crate::mcp::search::TOOL;
            if own
                && let Err(out) = self
                    .tools
                    .permit_unjudged(Some(&call.id), &call.name, &call.input, call.name.clone())
                    .await
            {
                return ToolOutput {
                    content: out.content,
                    is_error: out.is_error,
                    stop: out.stop,
                    ..ToolOutput::default()
                };
            }
            if call.name == super::skills::SKILL_TOOL
                && let Some(skills) = &self.skills
            {
                return skills
                    .run(&call.input, cx.session_id, &self.tools, cx.cancel)
                    .await;
            }
            if let Some(m) = &self.mcp {
                if call.name == crate::mcp::search::TOOL && m.offers_search() {
                    return m.search(&call.input, cx.cancel).await;
                }
                if call.name.starts_with("mcp__") {
                    return m
                        .call(
                            Some(&call.id),
                            &call.name,
                            &call.input,
                            &self.tools,
                            cx.cancel,
                        )
                        .await;
                }
            }
            let out = self
                .tools
                .run_call(Some(&call.id), &call.name, &call.input, cx.cancel)
                .await;
            ToolOutput {
                content: out.content,
                is_error: out.is_error,
                touched: out.touched.into_iter().map(|t| t.real).collect(),
                stop: out.stop,
                ..ToolOutput::default()
            }
        })
    }

    fn after_results(&self, touched: &[PathBuf]) -> Vec<String> {
        let mut notes = self
            .skills
            .as_ref()
            .map(|s| s.discovered(touched))
            .unwrap_or_default();
        notes.extend(self.mcp.as_ref().and_then(|m| m.delta()));
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::CancellationToken;
    use crate::tools::{Decision, DiskOnly, PermissionRequest};
    use std::sync::Mutex;

    struct Answer(Decision, Mutex<Vec<String>>);

    impl Asker for Answer {
        fn ask(&self, r: PermissionRequest) -> BoxFuture<'_, Decision> {
            self.1.lock().unwrap().push(r.summary);
            Box::pin(async move { self.0 })
        }
    }

    fn model(key: &str, var: Option<&str>) -> Model {
        let vars = [("ANTHROPIC_API_KEY".to_string(), key.to_string())]
            .into_iter()
            .chain(var.map(|v| (v.to_string(), key.to_string())))
            .collect();
        let host = crate::host::Host::from_vars(
            vars,
            PathBuf::from("/"),
            "linux".into(),
            "Linux".into(),
            crate::host::Clock::Fixed("2026-01-01".into()),
        );
        let config = super::super::ModelConfig {
            key_variable: var.map(str::to_string),
            ..Default::default()
        };
        super::super::config::build(&host, &config).unwrap()
    }

    #[tokio::test]
    async fn reads_are_scrubbed_of_the_key_and_a_denied_write_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let key = "sk-ant-api03-secretsecretsecret0123456789";
        std::fs::write(root.join("notes.txt"), format!("the key is {key}\n")).unwrap();
        let m = model(key, Some("MY_KEY"));
        let config = tools_config(root.clone(), std::slice::from_ref(&root), &m);
        assert_eq!(config.workspace.roots(), std::slice::from_ref(&root));
        assert!(config.bash.env_remove.contains(&"MY_KEY".to_string()));
        assert!(
            config
                .bash
                .env_remove
                .contains(&"ANTHROPIC_API_KEY".to_string())
        );
        let asker = Arc::new(Answer(Decision::Allow, Mutex::default()));
        let tools = SessionTools::new(config, Arc::new(DiskOnly), asker.clone());
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"]
        );
        let cancel = CancellationToken::new();
        let cx = || ToolContext {
            session_id: "s",
            root: &root,
            cancel: &cancel,
            preset: None,
        };
        let read = ToolUse {
            id: "t1".into(),
            name: "Read".into(),
            input: serde_json::json!({"file_path": root.join("notes.txt")}),
        };
        let out = tools.run(&read, cx()).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(!out.content.contains(key), "{}", out.content);
        assert!(out.content.contains("[redacted]"), "{}", out.content);
        assert_eq!(out.touched, vec![root.join("notes.txt")]);
        // Write asks; a denial is an error result and nothing is written.
        let tools = SessionTools::new(
            tools_config(root.clone(), &[], &m),
            Arc::new(DiskOnly),
            Arc::new(Answer(Decision::Deny, Mutex::default())),
        );
        let write = ToolUse {
            id: "t2".into(),
            name: "Write".into(),
            input: serde_json::json!({"file_path": root.join("new.txt"), "content": "x"}),
        };
        let out = tools.run(&write, cx()).await;
        assert!(out.is_error, "{}", out.content);
        assert!(!root.join("new.txt").exists());
        assert!(asker.1.lock().unwrap().is_empty(), "Read did not ask");
    }
}
