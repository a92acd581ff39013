//! The agent's methods and its sessions. Convert, call [`crate::session`], convert back: a
//! session here is the same [`Session`] the language server and the command line run (its
//! transcript, compaction, memory extraction, tools and their permissions), with the client's
//! seams plugged in ([`super::client`]).
//!
//! - `initialize` negotiates the protocol version (1) and says what the agent does: `loadSession`,
//!   prompts of text, resource links and embedded resources; when no API key is in the
//!   environment it describes the one way to give one (`authMethods`), and the session methods
//!   answer `-32000` (auth required) until the agent is started with one.
//! - `session/new`: the session's folder is `cwd`; it is equipped as on every front end
//!   ([`crate::session::equip`]: skills, the `Skill` tool, the project's MCP servers, started
//!   after the answer so that their approval is asked in a session the client knows); MCP
//!   servers the client offers (`mcpServers`: stdio, http, sse) join them, after the approval a
//!   project's server needs, asked inside the first turn (`docs/acp.md`).
//! - `session/load`: a session of `cwd` (ours or Claude Code's, which continues in a new session
//!   of ours, as over LSP), its history replayed as `session/update`s before the answer.
//! - `session/prompt`: text; resource links and embedded resources become mentions (their rules
//!   attach); `/compact [focus]` and `/context` are commands; `/<skill> [args]` runs a skill
//!   the user may type (offered in `available_commands_update`). The turn runs as a task; the answer
//!   comes when it ends (`end_turn`, `max_tokens`, `refusal`, `cancelled`), or a JSON-RPC error
//!   when it failed (`-32000` when the API refused the key).
//! - `session/new` and `session/load` answer the session's permission `modes` (Claude Code's:
//!   default, acceptEdits, plan, dontAsk, and bypassPermissions where it may run);
//!   `session/set_mode` switches it (a `current_mode_update` follows the answer).
//! - `session/cancel` stops the running turn (its partial answer is kept), as does
//!   `$/cancel_request` of the prompt request.
//! - `--no-client-files` drops the client's `fs` capabilities at `initialize`: every read and
//!   write is the agent's own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::CurrentModeUpdate;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, ContentBlock, EmbeddedResourceResource,
    HttpHeader, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities, SessionConfigOption,
    SessionConfigSelectOption, SessionInfo, SessionListCapabilities, SessionMode, SessionModeState,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use dashmap::DashMap;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::{Caps, ClientAsker, ClientFiles, ClientObserver, Peer};
use super::events::AcpEvents;
use super::updates;
use crate::fs::{OverlayFs, RealFs};
use crate::host::Host;
use crate::rpc::jsonrpc::{
    Id, Notification, Request, ResponseError, code, response_err, response_ok,
};
use crate::rpc::outbox::Outbox;
use crate::session::compaction::{self, Policy};
use crate::session::mcp::{Offered, OfferedKind};
use crate::session::seams::Editor;
use crate::session::{
    DEFAULT_MODEL, Image, MAX_IMAGES_PER_MESSAGE, Model, ModelConfig, Outcome, Outgoing,
    ProviderKind, SendError, Session, SessionTools, Store, equip, open,
};
use crate::tasks::{OnConflict, Spawned, TaskKind, Tasks};

/// `claude-context acp`'s options.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub model: Option<String>,
    /// `anthropic` (default) or `openai`.
    pub provider: Option<String>,
    /// No git block (and no git snapshot taken).
    pub no_git: bool,
    /// Every read and write stays in the agent: the client's `fs` capabilities are not used
    /// (`--no-client-files`, for a client that cannot be trusted with them).
    pub no_client_files: bool,
}

type Answer = Result<Value, ResponseError>;

/// A session this agent serves.
struct Live {
    /// The id the client uses (a continued Claude Code session keeps the id the client loaded).
    id: Arc<str>,
    session: Arc<Session>,
    tools: Arc<SessionTools>,
    peer: Peer,
    /// The session's MCP servers until they are started (after the answer that gives the client
    /// the session's id: their approval is asked in the session).
    servers: Mutex<Option<Arc<crate::session::mcp::SessionMcp>>>,
    /// Cancels a typed skill's shell commands before its turn starts (`session/cancel`).
    typing: Mutex<Option<tokio_util::sync::CancellationToken>>,
}

impl Live {
    /// The session's settings' `skillOverrides`.
    fn overrides(&self) -> crate::session::skills::Overrides {
        self.session
            .snapshot()
            .ctx
            .settings()
            .skill_overrides
            .clone()
    }

    /// The skills and commands the user may type as slash commands.
    fn user_commands(&self) -> Vec<crate::session::skills::UserCommand> {
        self.tools
            .skills()
            .map(|s| s.user_commands(&self.overrides()))
            .unwrap_or_default()
    }

    /// A prompt `/<name> args` naming a skill the user may type: the message that runs it
    /// (`None`: not a skill; the text goes as written).
    /// `Err`: the reason it could not run, and whether `session/cancel` stopped it.
    async fn typed_skill(&self, text: &str) -> Option<Result<String, (String, bool)>> {
        let t = text.trim_start();
        let rest = t.strip_prefix('/')?;
        let (name, args) = match rest.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a),
            None => (rest, ""),
        };
        let skills = self.tools.skills()?;
        let cancel = tokio_util::sync::CancellationToken::new();
        *self.typing.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
        let out = skills
            .typed(
                name,
                args,
                &self.overrides(),
                self.session.id(),
                self.tools.tools(),
                &cancel,
            )
            .await;
        *self.typing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        out.map(|r| r.map_err(|why| (why, cancel.is_cancelled())))
    }
}

/// The agent: its client, its sessions, the model client they share.
pub struct Agent {
    host: Host,
    args: Args,
    out: Outbox,
    tasks: Tasks,
    caps: Mutex<Option<Caps>>,
    /// Built once at start: a missing key is reported at `initialize` and on every session
    /// method.
    model: Result<Model, String>,
    config: ModelConfig,
    sessions: DashMap<String, Arc<Live>>,
    /// Running `session/prompt` requests: their session (for `$/cancel_request`).
    prompts: DashMap<Id, Arc<str>>,
}

/// The absolute ones of `dirs` (the protocol's `additionalDirectories` must be absolute).
fn absolute(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter().filter(|d| d.is_absolute()).cloned().collect()
}

/// What the client's `session/new` or `session/load` brings besides the folder.
struct Setup {
    /// Its `additionalDirectories` (the absolute ones).
    dirs: Vec<PathBuf>,
    /// Its `mcpServers`.
    servers: Vec<Offered>,
}

/// The MCP servers the client offers (`mcpServers` of `session/new` and `session/load`), as the
/// session takes them: used after the approval a project's server needs (`docs/acp.md`).
fn offered(servers: &[McpServer]) -> Vec<Offered> {
    // An `http` or `sse` server: the same fields, another transport.
    fn remote(name: &str, url: &str, headers: &[HttpHeader], sse: bool) -> Offered {
        Offered {
            name: name.to_owned(),
            kind: OfferedKind::Http {
                url: url.to_owned(),
                headers: headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
                sse,
            },
        }
    }
    servers
        .iter()
        .filter_map(|s| match s {
            McpServer::Stdio(s) => Some(Offered {
                name: s.name.clone(),
                kind: OfferedKind::Stdio {
                    command: s.command.to_string_lossy().into_owned(),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|e| (e.name.clone(), e.value.clone()))
                        .collect(),
                },
            }),
            McpServer::Http(s) => Some(remote(&s.name, &s.url, &s.headers, false)),
            McpServer::Sse(s) => Some(remote(&s.name, &s.url, &s.headers, true)),
            other => {
                crate::log_warn!("an MCP server of a transport this agent does not speak was offered: not used ({other:?})");
                None
            }
        })
        .collect()
}

/// A session's permission modes as ACP lists them (`session/new`, `session/load`).
/// The id of the output style's session config option.
const STYLE_OPTION: &str = "output_style";

/// The session's output style as a config option (a select of its styles, `default` first).
fn style_option(session: &Session) -> SessionConfigOption {
    let options: Vec<SessionConfigSelectOption> = session
        .style_names()
        .into_iter()
        .map(|n| SessionConfigSelectOption::new(n.clone(), n))
        .collect();
    SessionConfigOption::select(STYLE_OPTION, "Output style", session.style_name(), options)
        .description(
            "How Claude responds (Claude Code's output styles: outputStyle, .claude/output-styles)"
                .to_string(),
        )
}

fn modes(policy: &crate::session::permissions::Policy) -> SessionModeState {
    SessionModeState::new(
        policy.mode().id(),
        policy
            .available()
            .into_iter()
            .map(|m| SessionMode::new(m.id(), m.name()).description(m.description().to_string()))
            .collect(),
    )
}

use crate::session::permissions::Mode;

fn invalid(msg: impl AsRef<str>) -> ResponseError {
    ResponseError::invalid_params(msg)
}

fn failed(msg: impl Into<String>) -> ResponseError {
    ResponseError::new(code::INTERNAL_ERROR, msg)
}

fn params<T: DeserializeOwned>(method: &str, p: Option<Value>) -> Result<T, ResponseError> {
    let p = p.unwrap_or(Value::Null);
    serde_path_to_error::deserialize::<_, T>(&p).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            "params".to_string()
        } else {
            path
        };
        invalid(format!("{method}: {at}: {}", e.inner()))
    })
}

fn to_value<T: serde::Serialize>(t: &T) -> Answer {
    serde_json::to_value(t).map_err(|e| ResponseError::internal(e.to_string()))
}

impl Agent {
    pub fn new(host: Host, args: Args, out: Outbox, tasks: Tasks) -> Agent {
        let config = ModelConfig {
            provider: args
                .provider
                .as_deref()
                .and_then(ProviderKind::parse)
                .unwrap_or_default(),
            model: args
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            ..ModelConfig::default()
        };
        let model = crate::session::config::build(&host, &config).map_err(|e| e.to_string());
        if let Err(e) = &model {
            crate::log_warn!("no model client: {e}");
        }
        Agent {
            host,
            args,
            out,
            tasks,
            caps: Mutex::new(None),
            model,
            config,
            sessions: DashMap::new(),
            prompts: DashMap::new(),
        }
    }

    /// Sends the answer to request `id`.
    pub async fn answer(&self, id: &Id, answer: Answer) {
        let frame = match answer {
            Ok(v) => response_ok(
                id,
                &serde_json::to_vec(&v).unwrap_or_else(|_| b"null".to_vec()),
            ),
            Err(e) => response_err(id, &e),
        };
        self.out.send(frame).await;
    }

    fn caps(&self) -> Result<Caps, ResponseError> {
        self.caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ok_or_else(|| {
                ResponseError::invalid_request(
                    "the agent is not initialized: send initialize first",
                )
            })
    }

    fn model(&self) -> Result<&Model, ResponseError> {
        self.model.as_ref().map_err(|e| {
            ResponseError::new(
                code::AUTH_REQUIRED,
                format!(
                    "no API key: {e}. Start the agent with ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in its environment"
                ),
            )
        })
    }

    /// `initialize`: the version (1, the only one), the capabilities, how to authenticate.
    pub fn initialize(&self, p: Option<Value>) -> Answer {
        let req: InitializeRequest = params("initialize", p)?;
        let fs = &req.client_capabilities.fs;
        let ours = !self.args.no_client_files;
        let caps = Caps {
            read_text_file: ours && fs.read_text_file,
            write_text_file: ours && fs.write_text_file,
            terminal: req.client_capabilities.terminal,
        };
        *self.caps.lock().unwrap_or_else(|p| p.into_inner()) = Some(caps);
        let agent_caps = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
            // Offered servers: stdio (every agent), and the remote transports the MCP client
            // speaks (streamable HTTP, HTTP+SSE).
            .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
            .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
        let mut answer = InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(agent_caps)
            .agent_info(
                Implementation::new("claude-context", env!("CARGO_PKG_VERSION"))
                    .title("claude-context"),
            );
        if let Err(e) = &self.model {
            answer = answer.auth_methods(vec![AuthMethod::Agent(
                AuthMethodAgent::new("anthropic-api-key", "Anthropic API key").description(
                    format!(
                        "The agent reads the key from its environment only ({e}). Set \
                         ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL for another \
                         endpoint) in the agent's configuration (Zed: agent_servers.<name>.env) \
                         and restart it. The key never leaves the agent's memory."
                    ),
                ),
            )]);
        }
        to_value(&answer)
    }

    /// Every request but `initialize`.
    pub async fn request(self: &Arc<Self>, r: Request) {
        let answer = match r.method.as_str() {
            "authenticate" => self.authenticate(),
            "session/new" | "session/load" => {
                let started = if r.method == "session/new" {
                    self.new_session(r.params).await
                } else {
                    self.load_session(r.params).await
                };
                match started {
                    Ok((live, answer)) => {
                        // The answer first (the client learns the id), then the commands the
                        // client offers for it.
                        self.answer(&r.id, Ok(answer)).await;
                        live.peer
                            .update(updates::commands(&live.user_commands()))
                            .await;
                        self.start_servers(&live);
                        return;
                    }
                    Err(e) => Err(e),
                }
            }
            "session/prompt" => self.prompt(&r.id, r.params).await,
            "session/list" => self.list(r.params).await,
            "session/set_mode" => match self.set_mode(r.params) {
                Ok((live, mode)) => {
                    // The answer, then the update every client shows.
                    self.answer(&r.id, to_value(&SetSessionModeResponse::new()))
                        .await;
                    live.peer
                        .update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                            mode.id(),
                        )))
                        .await;
                    return;
                }
                Err(e) => Err(e),
            },
            "session/set_config_option" => self.set_config_option(r.params),
            other => Err(ResponseError::method_not_found(other)),
        };
        self.answer(&r.id, answer).await;
    }

    /// Notifications, in order: `session/cancel`, `$/cancel_request`; others are ignored.
    pub fn notification(&self, n: Notification) {
        match n.method.as_str() {
            "session/cancel" => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("sessionId"))
                    .and_then(Value::as_str);
                match id.and_then(|id| self.sessions.get(id).map(|s| s.clone())) {
                    Some(live) => {
                        live.session.cancel();
                        if let Some(t) = &*live.typing.lock().unwrap_or_else(|p| p.into_inner()) {
                            t.cancel();
                        }
                    }
                    None => crate::log_warn!("session/cancel: no session {id:?}"),
                }
            }
            "$/cancel_request" => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(Id::from_value);
                if let Some(session) = id.and_then(|id| self.prompts.get(&id).map(|s| s.clone()))
                    && let Some(live) = self.sessions.get(&*session).map(|s| s.clone())
                {
                    live.session.cancel();
                }
            }
            other => crate::log_debug!("notification {other} ignored"),
        }
    }

    fn authenticate(&self) -> Answer {
        self.caps()?;
        self.model()?;
        Ok(serde_json::json!({}))
    }

    /// A session's folder: absolute, an existing directory.
    fn folder(&self, cwd: &Path) -> Result<PathBuf, ResponseError> {
        if !cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd: {} is not an absolute path",
                cwd.display()
            )));
        }
        if let Some(why) = crate::fs::folder_problem(cwd) {
            return Err(invalid(format!("cwd: {} {why}", cwd.display())));
        }
        Ok(cwd.to_path_buf())
    }

    fn policy(&self) -> Policy {
        let defaults = compaction::Settings::default();
        open::policy(
            &self.host,
            &self.config,
            &defaults,
            &mut |source, message| crate::log_warn!("{source}: {message}"),
        )
    }

    /// Where sessions read their instructions and git block: the disk now.
    fn disk(&self) -> open::Disk {
        open::Disk {
            host: self.host.clone(),
            git: !self.args.no_git,
        }
    }

    /// How this agent opens sessions (`dirs`: the client's additional directories).
    fn opener<'a>(
        &'a self,
        model: &'a Model,
        policy: &'a Policy,
        project: &'a open::Disk,
        dirs: &'a [PathBuf],
    ) -> open::Opener<'a> {
        open::Opener {
            host: &self.host,
            model,
            policy,
            project,
            add_dirs: dirs,
        }
    }

    async fn new_session(
        self: &Arc<Self>,
        p: Option<Value>,
    ) -> Result<(Arc<Live>, Value), ResponseError> {
        let caps = self.caps()?;
        let req: NewSessionRequest = params("session/new", p)?;
        let model = self.model()?.clone();
        let root = self.folder(&req.cwd)?;
        let me = self.clone();
        let dirs = absolute(&req.additional_directories);
        let m = model.clone();
        let session = tokio::task::spawn_blocking(move || -> Result<Session, ResponseError> {
            // The walk, git, the skills and the configured MCP servers (the client's join
            // them in `adopt`, with their approval).
            let (policy, disk) = (me.policy(), me.disk());
            me.opener(&m, &policy, &disk, &dirs)
                .start(&root)
                .map_err(failed)
        })
        .await
        .map_err(|e| failed(e.to_string()))??;
        let setup = Setup {
            dirs: absolute(&req.additional_directories),
            servers: offered(&req.mcp_servers),
        };
        let live = self.adopt(&model, session, None, None, caps, setup);
        let answer = to_value(
            &NewSessionResponse::new(live.id.to_string())
                .modes(modes(live.tools.policy()))
                .config_options(vec![style_option(&live.session)]),
        )?;
        Ok((live, answer))
    }

    /// `session/set_config_option`: the output style (`output_style`, one of the values its
    /// `session/new` or `session/load` answer listed); the answer lists the options again.
    fn set_config_option(&self, p: Option<Value>) -> Result<Value, ResponseError> {
        let req: SetSessionConfigOptionRequest = params("session/set_config_option", p)?;
        let live = self
            .sessions
            .get(&*req.session_id.0)
            .map(|l| l.clone())
            .ok_or_else(|| invalid(format!("sessionId: no session {:?}", &*req.session_id.0)))?;
        if &*req.config_id.0 != STYLE_OPTION {
            return Err(invalid(format!(
                "configId: {:?} is not one of this session's options ({STYLE_OPTION})",
                &*req.config_id.0
            )));
        }
        let value = req
            .value
            .as_value_id()
            .ok_or_else(|| invalid("value: the output style is a select: give a style's name"))?;
        live.session.set_style(&value.0).map_err(invalid)?;
        to_value(&SetSessionConfigOptionResponse::new(vec![style_option(
            &live.session,
        )]))
    }

    /// `session/set_mode`: the user switches the session's permission mode (one of the
    /// `modes` its `session/new` or `session/load` answer listed).
    fn set_mode(&self, p: Option<Value>) -> Result<(Arc<Live>, Mode), ResponseError> {
        let req: SetSessionModeRequest = params("session/set_mode", p)?;
        let live = self
            .sessions
            .get(&*req.session_id.0)
            .map(|l| l.clone())
            .ok_or_else(|| invalid(format!("sessionId: no session {:?}", &*req.session_id.0)))?;
        let mode = match Mode::parse(&req.mode_id.0) {
            Some(Some(m)) => m,
            _ => {
                return Err(invalid(format!(
                    "modeId: {:?} is not one of this session's modes ({})",
                    &*req.mode_id.0,
                    live.tools
                        .policy()
                        .available()
                        .iter()
                        .map(|m| m.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        };
        live.tools.policy().set_mode(mode).map_err(failed)?;
        Ok((live, mode))
    }

    /// Starts `live`'s MCP servers (a project's once the client answered its approval) as a
    /// task of this agent, stopped at its end.
    fn start_servers(&self, live: &Live) {
        let servers = live
            .servers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(servers) = servers {
            self.tasks.spawn(
                TaskKind::McpServers,
                &format!("mcp:{}", live.session.id()),
                OnConflict::Join,
                move |token| servers.run(token),
            );
        }
    }

    /// Gives a started or resumed session its seams (the client's files and prompts, compaction,
    /// memory extraction) and keeps it under `id` (default: its own).
    fn adopt(
        &self,
        model: &Model,
        session: Session,
        id: Option<&str>,
        resume: Option<&compaction::Resume>,
        caps: Caps,
        setup: Setup,
    ) -> Arc<Live> {
        let session = Arc::new(session);
        let id: Arc<str> = Arc::from(id.unwrap_or(session.id()));
        let peer = Peer {
            out: self.out.clone(),
            session_id: id.clone(),
            caps,
        };
        // Compaction: instructions and git re-read from the disk, files re-injected from it.
        open::attach_compaction(
            &self.host,
            &session,
            self.policy(),
            resume,
            Arc::new(self.disk()),
            Arc::new(RealFs),
            Arc::new(ClientObserver::new(peer.clone())),
        );
        if !crate::session::memory::off_by_env(&self.host) {
            session.set_after_turn(Arc::new(crate::session::memory::Extractor::new(
                self.tasks.clone(),
            )));
        }
        // The tools, the `Skill` tool and the project's MCP servers, as for every front end;
        // the servers run as a task of this agent, stopped at its end.
        let equipped = equip::equip(
            &self.host,
            &session,
            model,
            equip::Front {
                editor: Arc::new(ClientFiles { peer: peer.clone() }),
                asker: Arc::new(ClientAsker { peer: peer.clone() }),
                folders: setup.dirs,
                wrote: None,
                editor_trust: None,
                on_trust: None,
                permissions: Default::default(),
                offered: setup.servers,
            },
        );
        let tools = equipped.tools;
        let live = Arc::new(Live {
            id: id.clone(),
            session,
            tools,
            peer,
            servers: Mutex::new(equipped.servers),
            typing: Mutex::new(None),
        });
        self.sessions.insert(id.to_string(), live.clone());
        live
    }

    /// Every session ends (the agent's input ended): their SessionEnd hooks run together, for
    /// at most `limit`.
    pub async fn end_sessions(&self, limit: std::time::Duration) {
        let sessions: Vec<Arc<Session>> = self.sessions.iter().map(|l| l.session.clone()).collect();
        futures::future::join_all(sessions.iter().map(|s| s.end("other", limit))).await;
    }

    async fn load_session(
        self: &Arc<Self>,
        p: Option<Value>,
    ) -> Result<(Arc<Live>, Value), ResponseError> {
        let caps = self.caps()?;
        let req: LoadSessionRequest = params("session/load", p)?;
        let model = self.model()?.clone();
        let id = req.session_id.0.to_string();
        let live = match self.sessions.get(&id).map(|s| s.clone()) {
            Some(live) => {
                // Equipped when it was first opened here: its servers stand.
                if !req.mcp_servers.is_empty() {
                    crate::log_info!(
                        "session/load of a session open in this agent: its MCP servers stay as they are ({} offered, not added)",
                        req.mcp_servers.len()
                    );
                }
                live
            }
            None => {
                let root = self.folder(&req.cwd)?;
                let me = self.clone();
                let wanted = id.clone();
                let dirs = absolute(&req.additional_directories);
                let m = model.clone();
                let resumed = tokio::task::spawn_blocking(move || {
                    let (policy, disk) = (me.policy(), me.disk());
                    me.opener(&m, &policy, &disk, &dirs)
                        .resume(&root, &wanted)
                        .map_err(|e| match e {
                            open::ResumeError::NotFound(m) => {
                                ResponseError::new(code::RESOURCE_NOT_FOUND, m)
                            }
                            open::ResumeError::Failed(m) => failed(m),
                        })
                })
                .await
                .map_err(|e| failed(e.to_string()))??;
                for w in &resumed.warnings {
                    crate::log_warn!("session/load: {w}");
                }
                if let Some(theirs) = &resumed.continues {
                    crate::log_info!(
                        "continuing Claude Code's session {theirs} in a new session {} (its transcript is not written)",
                        resumed.session.id()
                    );
                }
                self.adopt(
                    &model,
                    resumed.session,
                    Some(&id),
                    Some(&resumed.compaction),
                    caps,
                    Setup {
                        dirs: absolute(&req.additional_directories),
                        servers: offered(&req.mcp_servers),
                    },
                )
            }
        };
        // The whole conversation first, then the answer.
        let root = live.session.snapshot().cwd();
        let entries = crate::session::history::entries(&live.session.history());
        let describe = |name: &str, input: &Value| live.tools.tools().describe(name, input);
        for u in updates::replay(&entries, &root, &describe) {
            live.peer.update(u).await;
        }
        let mut answer = LoadSessionResponse::new()
            .modes(modes(live.tools.policy()))
            .config_options(vec![style_option(&live.session)]);
        if live.session.id() != &*live.id {
            let mut meta = serde_json::Map::new();
            meta.insert(
                "claudeContext".into(),
                serde_json::json!({"continuedIn": live.session.id(), "continues": &*live.id}),
            );
            answer = answer.meta(meta);
        }
        let answer = to_value(&answer)?;
        Ok((live, answer))
    }

    async fn list(&self, p: Option<Value>) -> Answer {
        self.caps()?;
        let cwd = p
            .as_ref()
            .and_then(|p| p.get("cwd"))
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .unwrap_or_else(|| self.host.process_cwd.clone());
        let host = self.host.clone();
        let sessions = tokio::task::spawn_blocking(move || {
            let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
            let store = Store::from_host(&host);
            let mut list = store.list(&cwd);
            list.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
            list.truncate(100);
            list.into_iter()
                .map(|s| {
                    let mut info = SessionInfo::new(s.id, cwd.clone());
                    if let Some(t) = s.title.or(s.first_prompt) {
                        info = info.title(t);
                    }
                    if let Some(u) = s.updated_at {
                        info = info.updated_at(u);
                    }
                    info
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| failed(e.to_string()))?;
        Ok(serde_json::json!({ "sessions": sessions }))
    }

    fn live(&self, id: &str) -> Result<Arc<Live>, ResponseError> {
        self.sessions.get(id).map(|s| s.clone()).ok_or_else(|| {
            ResponseError::new(
                code::RESOURCE_NOT_FOUND,
                format!(
                    "sessionId: no session {id:?} (start one with session/new, or session/load it)"
                ),
            )
        })
    }

    async fn prompt(self: &Arc<Self>, request: &Id, p: Option<Value>) -> Answer {
        self.caps()?;
        let req: PromptRequest = params("session/prompt", p)?;
        let live = self.live(&req.session_id.0)?;
        let model = self.model()?.clone();
        let prompt = Prompt::read(&req.prompt)?;
        if let Some(t) = live.session.running() {
            return Err(ResponseError::invalid_request(format!(
                "a turn is running in this session ({t}); wait for its answer or send session/cancel first"
            )));
        }
        if let Some(cmd) = prompt.command() {
            return self.command(&live, &model, cmd).await;
        }
        let mut prompt = prompt;
        // A skill typed as a slash command: its body goes with the message, as the reference
        // sends it; one that cannot run says why and ends the turn.
        match live.typed_skill(&prompt.text).await {
            Some(Ok(text)) => prompt.text = text,
            Some(Err((_, true))) => return to_value(&PromptResponse::new(StopReason::Cancelled)),
            Some(Err((why, false))) => {
                live.peer.update(updates::message(why)).await;
                return to_value(&PromptResponse::new(StopReason::EndTurn));
            }
            None => {}
        }
        // Mentioned files as the client holds them (its unsaved text), else from the disk.
        let overlay = OverlayFs::new(Arc::new(RealFs));
        let files = ClientFiles {
            peer: live.peer.clone(),
        };
        for (path, text) in &prompt.embedded {
            overlay.set(path.clone(), Arc::from(text.as_str()));
        }
        for path in &prompt.mentions {
            if overlay.buffer(path).is_none()
                && let Some(text) = Editor::open_text(&files, path).await
            {
                overlay.set(path.clone(), Arc::from(text.as_str()));
            }
        }
        let out = Outgoing {
            text: prompt.text,
            mentions: prompt.mentions,
            open: Vec::new(),
            images: prompt.images,
        };
        let session = live.session.clone();
        let prepared = tokio::task::spawn_blocking(move || session.prepare(&overlay, out))
            .await
            .map_err(|e| failed(e.to_string()))?
            .map_err(|e| match e {
                SendError::Invalid(m) => invalid(m),
                SendError::Busy { .. } => ResponseError::invalid_request(e.to_string()),
                SendError::Transcript(_) => failed(e.to_string()),
            })?;
        self.prompts.insert(request.clone(), live.id.clone());
        let events = Arc::new(AcpEvents::new(
            live.peer.clone(),
            live.tools.clone(),
            &live.session,
        ));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let key = crate::session::turn_key(&live.session, &prepared);
        let task_live = live.clone();
        let task_events = events.clone();
        let spawned = self.tasks.spawn(
            TaskKind::ChatTurn,
            &key,
            OnConflict::Join,
            move |token| async move {
                // The end of the input (the task's token) cancels the turn like session/cancel.
                let outcome = crate::session::run_turn(
                    &task_live.session,
                    prepared,
                    &model,
                    &task_live.tools,
                    &*task_events,
                    token.cancelled_owned(),
                )
                .await;
                let _ = tx.send(outcome);
            },
        );
        if !matches!(spawned, Spawned::Started(_)) {
            self.prompts.remove(request);
            return Err(failed("the agent is shutting down"));
        }
        let outcome = rx.await.unwrap_or(Outcome::Cancelled);
        self.prompts.remove(request);
        match outcome {
            Outcome::Completed => to_value(&PromptResponse::new(
                match events.stop_reason().as_deref() {
                    Some("max_tokens") => StopReason::MaxTokens,
                    Some("refusal") => StopReason::Refusal,
                    _ => StopReason::EndTurn,
                },
            )),
            Outcome::Cancelled => to_value(&PromptResponse::new(StopReason::Cancelled)),
            Outcome::Failed => Err(events.failure()),
        }
    }

    /// `/compact [focus]` and `/context`.
    async fn command(&self, live: &Live, model: &Model, cmd: Command<'_>) -> Answer {
        match cmd {
            Command::Context => {
                let session = live.session.clone();
                let tools = live.tools.clone();
                let disk = self.disk();
                let text = tokio::task::spawn_blocking(move || {
                    let now = open::walk_now(&disk, &session);
                    let p = crate::features::preview::of_session(
                        &session,
                        Some(&tools),
                        &RealFs,
                        &[],
                        &now,
                    );
                    super::context::markdown(&p, &session.view().attachments)
                })
                .await
                .map_err(|e| failed(e.to_string()))?;
                live.peer.update(updates::message(text)).await;
                to_value(&PromptResponse::new(StopReason::EndTurn))
            }
            Command::Compact(focus) => {
                let Some(compaction) = live.session.compaction().cloned() else {
                    return Err(failed("this session has no compaction"));
                };
                let specs = crate::session::ToolRunner::specs(&*live.tools);
                let request = compaction::RunRequest {
                    mode: compaction::Mode::Full,
                    focus: Some(focus).filter(|f| !f.trim().is_empty()),
                    dry_run: false,
                };
                let report = compaction
                    .run(&live.session, model, &specs, request, None)
                    .await;
                let text = match report {
                    Ok(r) => {
                        let mut t = format!(
                            "Compacted the conversation: about {} → {} tokens; {} of your messages kept (verbatim or in the summary).",
                            r.tokens_before, r.tokens_after, r.preserved_user_messages
                        );
                        if let Some(n) = r.note {
                            t.push_str(&format!("\n\n{n}"));
                        }
                        t
                    }
                    Err(compaction::RunError::Busy { turn_id }) => {
                        return Err(ResponseError::invalid_request(format!(
                            "the session is busy ({turn_id}); wait for its answer or cancel it first"
                        )));
                    }
                    Err(e) => format!("The conversation was not compacted: {e}"),
                };
                live.peer.update(updates::message(text)).await;
                to_value(&PromptResponse::new(StopReason::EndTurn))
            }
        }
    }
}

/// A command typed as a prompt.
enum Command<'a> {
    Context,
    /// With its focus (may be empty).
    Compact(&'a str),
}

/// What a prompt's content blocks say.
struct Prompt {
    text: String,
    /// Files linked or embedded: mentioned (their contents sent, their rules attached).
    mentions: Vec<PathBuf>,
    /// Embedded files' text, as the client gave it.
    embedded: Vec<(PathBuf, String)>,
    /// Images, in order, each checked (type, size, magic number): sent before the text.
    images: Vec<Image>,
}

/// A `file:` URI's path (percent-decoded); `None` for other URIs.
fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only the local host.
    let rest = match rest.strip_prefix("localhost") {
        Some(r) => r,
        None => rest,
    };
    if !rest.starts_with('/') {
        return None;
    }
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let bytes = rest.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

impl Prompt {
    fn read(blocks: &[ContentBlock]) -> Result<Prompt, ResponseError> {
        let mut p = Prompt {
            text: String::new(),
            mentions: Vec::new(),
            embedded: Vec::new(),
            images: Vec::new(),
        };
        // Counted before any is decoded.
        let images = blocks
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image(_)))
            .count();
        if images > MAX_IMAGES_PER_MESSAGE {
            return Err(invalid(format!(
                "prompt: {images} images; a prompt may hold at most {MAX_IMAGES_PER_MESSAGE}. Nothing was sent or kept."
            )));
        }
        let push = |t: &mut String, s: &str| {
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            t.push_str(s);
        };
        for (i, b) in blocks.iter().enumerate() {
            match b {
                ContentBlock::Text(t) => push(&mut p.text, &t.text),
                ContentBlock::ResourceLink(l) => match file_path(&l.uri) {
                    Some(path) => p.mentions.push(path),
                    None => push(&mut p.text, &format!("[{}]({})", l.name, l.uri)),
                },
                ContentBlock::Resource(r) => match &r.resource {
                    EmbeddedResourceResource::TextResourceContents(t) => match file_path(&t.uri) {
                        Some(path) => {
                            p.embedded.push((path.clone(), t.text.clone()));
                            p.mentions.push(path);
                        }
                        None => push(
                            &mut p.text,
                            &format!("{}:\n{}", t.uri, super::updates::fenced(&t.text)),
                        ),
                    },
                    _ => {
                        return Err(invalid(format!(
                            "prompt[{i}]: binary resources are not supported; send text"
                        )));
                    }
                },
                ContentBlock::Image(img) => {
                    let image = Image::from_base64(&img.mime_type, &img.data).map_err(|e| {
                        invalid(format!("prompt[{i}]: {e}. Nothing was sent or kept."))
                    })?;
                    p.images.push(image);
                }
                _ => {
                    return Err(invalid(format!(
                        "prompt[{i}]: only text, images, resource links and embedded text resources are supported (promptCapabilities)"
                    )));
                }
            }
        }
        Ok(p)
    }

    fn command(&self) -> Option<Command<'_>> {
        let t = self.text.trim();
        let (name, rest) = match t.split_once(char::is_whitespace) {
            Some((n, r)) => (n, r.trim()),
            None => (t, ""),
        };
        match name {
            "/context" => Some(Command::Context),
            "/compact" => Some(Command::Compact(rest)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths_and_other_uris_stay_links() {
        assert_eq!(
            file_path("file:///w/a%20b.ts"),
            Some(PathBuf::from("/w/a b.ts"))
        );
        assert_eq!(
            file_path("file://localhost/w/a.ts"),
            Some(PathBuf::from("/w/a.ts"))
        );
        assert_eq!(
            file_path("file:///w/a.ts#L3"),
            Some(PathBuf::from("/w/a.ts"))
        );
        assert_eq!(file_path("https://x.dev/a"), None);
        assert_eq!(file_path("file://other/w"), None);
    }

    #[test]
    fn prompts_read_text_links_and_embedded_files_and_commands() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "text", "text": "look at"},
            {"type": "resource_link", "name": "a.ts", "uri": "file:///w/a.ts"},
            {"type": "resource", "resource": {"uri": "file:///w/b.ts", "text": "unsaved"}},
            {"type": "resource_link", "name": "doc", "uri": "https://x.dev/doc"}
        ]))
        .unwrap();
        let p = Prompt::read(&blocks).unwrap();
        assert_eq!(p.text, "look at\n[doc](https://x.dev/doc)");
        assert_eq!(
            p.mentions,
            [PathBuf::from("/w/a.ts"), PathBuf::from("/w/b.ts")]
        );
        assert_eq!(
            p.embedded,
            [(PathBuf::from("/w/b.ts"), "unsaved".to_string())]
        );
        assert!(p.command().is_none());
        let cmd = |t: &str| {
            let blocks: Vec<ContentBlock> =
                serde_json::from_value(serde_json::json!([{"type": "text", "text": t}])).unwrap();
            match Prompt::read(&blocks).unwrap().command() {
                Some(Command::Context) => "context".to_string(),
                Some(Command::Compact(f)) => format!("compact:{f}"),
                None => "none".to_string(),
            }
        };
        assert_eq!(cmd("/context"), "context");
        assert_eq!(cmd(" /compact  the API work "), "compact:the API work");
        assert_eq!(cmd("/compact"), "compact:");
        assert_eq!(cmd("/compaction please"), "none");
        // Images: checked, kept in order; a bad one refuses the prompt and names it.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let images: Vec<ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "text", "text": "what is this?"}
        ]))
        .unwrap();
        let p = Prompt::read(&images).unwrap();
        assert_eq!(p.text, "what is this?");
        assert_eq!(p.images.len(), 1);
        assert_eq!(p.images[0].dims, Some((1, 1)));
        let image: Vec<ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "text", "text": "look"},
            {"type": "image", "data": "AA==", "mimeType": "image/png"}
        ]))
        .unwrap();
        let e = Prompt::read(&image).err().unwrap();
        assert!(
            e.message
                .contains("prompt[1]: the image is declared image/png but its bytes are not"),
            "{}",
            e.message
        );
        let many: Vec<ContentBlock> = serde_json::from_value(serde_json::Value::Array(
            (0..=MAX_IMAGES_PER_MESSAGE)
                .map(|_| serde_json::json!({"type": "image", "data": png, "mimeType": "image/png"}))
                .collect(),
        ))
        .unwrap();
        assert!(
            Prompt::read(&many)
                .err()
                .unwrap()
                .message
                .contains("at most 20")
        );
    }
}
