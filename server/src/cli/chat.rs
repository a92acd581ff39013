//! `claude-context chat [--resume ID] [TEXT]`: a chat session in a terminal, without an editor.
//!
//! With `TEXT`, one turn: the answer streams to stdout, and the command exits (0 when the model
//! finished, 1 when the turn failed, 130 when it was interrupted). Without it, every line read
//! from stdin is a message, until the end of the input. Ctrl-C stops the running turn (the
//! partial answer is kept) and, with no turn running, ends the session.
//!
//! Only the answer goes to stdout; the session id, retries and errors go to stderr, so
//! `claude-context chat "…" > answer.md` keeps just the answer. The session is the same one the
//! language server runs ([`crate::session`]): same requests, same transcripts, resumable from
//! either side.
//!
//! The model has the agent's tools ([`crate::session::seams`]) on the disk ([`DiskOnly`]), confined to the
//! working directory and the additional directories (`--add-dir`, `permissions.additionalDirectories`).
//! What Claude Code's permission rules (the settings files', `--allowed-tools`,
//! `--disallowed-tools`) and the mode (`--permission-mode`, `permissions.defaultMode`) leave to
//! the user is asked on the terminal (`/dev/tty`, so a prompt works while stdin or stdout is
//! redirected); with no terminal to ask on, the call is refused with the reference CLI's `-p`
//! text ("… but you haven't granted it yet.") and a note on stderr, never left waiting. A call
//! the user rejects ends the turn, as in the reference.
//!
//! The session has the skills and MCP servers of the project and the user, as in the editor
//! ([`crate::session::equip`]): a project's server nobody approved is asked about on the
//! terminal first, in the words of the reference CLI's dialog (`y` uses it, `a` uses it and every
//! future one of the project, anything else continues without it; each answer remembered in
//! `.claude/settings.local.json`); with no terminal it does not start and nothing is remembered.
//! The servers stop when the command ends.
//!
//! The session compacts as in the editor ([`crate::session::compaction`]), under the
//! environment's overrides (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
//! `DISABLE_AUTO_COMPACT`), with a note on stderr for each compaction.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::output::{note, out};
use super::quote_name;
use crate::fs::RealFs;
use crate::host::Host;
use crate::session::compaction;
use crate::session::permissions::Options as PermissionOptions;
use crate::session::seams::{Asker, Decision, DiskOnly, PermissionRequest};
use crate::session::{
    ChatEvent, DEFAULT_MODEL, Events, ModelConfig, Outcome, Outgoing, ProviderKind, Session,
    SessionTools, equip, open,
};

#[derive(Clone, Debug, Default)]
pub struct Args {
    pub cwd: Option<std::path::PathBuf>,
    /// A session of this directory to continue (ours or the reference CLI's).
    pub resume: Option<String>,
    /// One message; without it, messages are read from stdin, one per line.
    pub text: Option<String>,
    pub model: Option<String>,
    /// `anthropic` (default) or `openai`.
    pub provider: Option<String>,
    pub no_git: bool,
    /// `--allowed-tools`, `--disallowed-tools`, `--permission-mode`, `--add-dir`.
    pub permissions: PermissionOptions,
}

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let cwd = host.abs(args.cwd.as_deref().unwrap_or(Path::new(".")));
    if let Some(why) = crate::fs::folder_problem(&cwd) {
        return Err(format!("--cwd {} {why}", quote_name(cwd.as_os_str())));
    }
    // Touched paths through a link to cwd count as under it only when `PWD` names that link.
    let cwd = host.session_dir(&RealFs, &cwd);
    let provider = match args.provider.as_deref() {
        None => ProviderKind::Anthropic,
        Some(p) => ProviderKind::parse(p)
            .ok_or_else(|| format!("--provider {p}: use anthropic or openai"))?,
    };
    let config = ModelConfig {
        provider,
        model: args
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
        ..ModelConfig::default()
    };
    let model = crate::session::config::build(host, &config).map_err(|e| e.to_string())?;
    // Compaction follows the environment (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`,
    // `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, `DISABLE_AUTO_COMPACT`) over the defaults.
    let defaults = compaction::Settings::default();
    let policy = open::policy(host, &config, &defaults, &mut |source, message| {
        note(&format!("warning: {source}: {message}\n"))
    });
    // The walk, git, the skills the system prompt lists and the `Skill` tool loads, the MCP
    // servers.
    let disk = open::Disk {
        host: host.clone(),
        git: !args.no_git,
    };
    let opener = open::Opener {
        host,
        model: &model,
        policy: &policy,
        project: &disk,
        add_dirs: &args.permissions.add_dirs,
    };
    let mut resume = None;
    let session = match &args.resume {
        Some(id) => {
            let r = opener.resume(&cwd, id).map_err(|e| e.to_string())?;
            for w in &r.warnings {
                note(&format!("warning: {w}\n"));
            }
            if let Some(theirs) = &r.continues {
                note(&format!(
                    "continuing the reference CLI's session {theirs} in a new session (its transcript is not written)\n"
                ));
            }
            if args.text.is_none() {
                print_history(&r.session);
            }
            resume = Some(r.compaction);
            r.session
        }
        None => opener.start(&cwd)?,
    };
    open::attach_compaction(
        host,
        &session,
        policy,
        resume.as_ref(),
        Arc::new(disk),
        Arc::new(RealFs),
        Arc::new(TerminalObserver),
    );
    note(&format!(
        "session {id} (continue with: claude-context chat --resume {id})\n",
        id = session.id()
    ));
    let rt = crate::session::runtime()?;
    let session = Arc::new(session);
    let equip::Equipped { tools, servers, .. } = equip::equip(
        host,
        &session,
        &model,
        equip::Front {
            editor: Arc::new(DiskOnly),
            asker: Arc::new(TtyAsker),
            folders: Vec::new(),
            wrote: None,
            editor_trust: None,
            on_trust: None,
            permissions: args.permissions.clone(),
            offered: Vec::new(),
        },
    );
    // The reference CLI's warnings about the permission settings (rules it will not match as
    // written, an untrusted folder's ignored entries), and what became of the mode.
    for n in tools.policy().notices() {
        note(&format!("{}\n", esc(&n.message)));
    }
    for m in tools.policy().mode_notes() {
        note(&format!("warning: {}\n", esc(m)));
    }
    let code = rt.block_on(async move {
        // The MCP servers start now (a project's after the terminal's answer), and stop with
        // the session.
        let stop = tokio_util::sync::CancellationToken::new();
        let running = servers.map(|m| tokio::spawn(m.run(stop.clone())));
        let memory = crate::session::memory::attach(host, &session);
        let code = match &args.text {
            Some(t) => turn(&session, &model, &tools, t).await,
            None => {
                use tokio::io::AsyncBufReadExt;
                let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
                let mut code = 0;
                loop {
                    let line = tokio::select! {
                        l = lines.next_line() => l,
                        _ = tokio::signal::ctrl_c() => break,
                    };
                    let Ok(Some(line)) = line else { break };
                    if line.trim().is_empty() {
                        continue;
                    }
                    code = turn(&session, &model, &tools, &line).await;
                }
                code
            }
        };
        // SessionEnd hooks, bounded: the command does not wait on them for long.
        session.end("other", SESSION_END_LIMIT).await;
        stop.cancel();
        if let Some(r) = running {
            let _ = r.await;
        }
        if let Some(m) = memory {
            // A one-shot chat still saves its memories (Ctrl-C skips).
            tokio::select! {
                _ = m.settle(session.id(), std::time::Duration::from_secs(60)) => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        code
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(code)
}

/// How long the session's SessionEnd hooks may hold up the command's end.
const SESSION_END_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Compaction notes on stderr.
struct TerminalObserver;

impl compaction::Observer for TerminalObserver {
    fn started<'a>(&'a self, title: &'a str) -> BoxFuture<'a, ()> {
        note(&format!("[{title}…]\n"));
        Box::pin(async {})
    }
    fn finished(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn breaker_tripped<'a>(&'a self, message: &'a str) -> BoxFuture<'a, ()> {
        note(&format!("warning: {message}\n"));
        Box::pin(async {})
    }
}

/// One message and its answer. Ctrl-C cancels the turn.
async fn turn(
    session: &Session,
    model: &crate::session::Model,
    tools: &SessionTools,
    text: &str,
) -> i32 {
    let out_msg = Outgoing {
        text: text.to_string(),
        ..Outgoing::default()
    };
    let prepared = match session.prepare(&RealFs, out_msg) {
        Ok(p) => p,
        Err(e) => {
            note(&format!("error: {e}\n"));
            return 1;
        }
    };
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let outcome =
        crate::session::run_turn(session, prepared, model, tools, &Terminal, ctrl_c).await;
    match outcome {
        Outcome::Completed => 0,
        Outcome::Failed => 1,
        Outcome::Cancelled => 130,
    }
}

/// Prints a resumed session's conversation (what was said, not what was injected).
fn print_history(session: &Session) {
    for m in crate::session::history::view(&session.history()) {
        if m.text.is_empty() {
            continue;
        }
        let who = if m.role == "user" { "> " } else { "" };
        out(&format!(
            "{who}{}\n\n",
            crate::features::format::escape_stream(&m.text)
        ));
    }
}

/// Events to the terminal: the answer to stdout as it arrives, the rest to stderr. Every byte
/// the model (or a file) chose is escaped first (`escape_stream` keeps the answer's lines,
/// `escape_text` escapes everything): no escape sequence reaches the terminal raw.
struct Terminal;

fn esc(text: &str) -> std::borrow::Cow<'_, str> {
    crate::features::format::escape_text(text)
}

impl Events for Terminal {
    fn emit(&self, event: ChatEvent) -> BoxFuture<'_, ()> {
        match event {
            ChatEvent::Text { text, .. } => out(&crate::features::format::escape_stream(&text)),
            ChatEvent::Attachment { path, trigger, .. } => note(&format!(
                "[attached {} (because of {})]\n",
                esc(&path),
                esc(&trigger)
            )),
            ChatEvent::ToolUse {
                name,
                parent_tool_use_id: None,
                ..
            } => note(&format!("[the model called {}]\n", esc(&name))),
            ChatEvent::ToolUse { name, .. } => {
                note(&format!("[the subagent called {}]\n", esc(&name)))
            }
            ChatEvent::SubagentStart {
                agent_type,
                description,
                ..
            } => note(&format!(
                "[subagent {} started: {}]\n",
                esc(&agent_type),
                esc(&description)
            )),
            ChatEvent::SubagentEnd {
                outcome, tool_uses, ..
            } => note(&format!(
                "[subagent {outcome} after {tool_uses} tool calls]\n"
            )),
            ChatEvent::Compacted {
                tokens_before,
                tokens_after,
                mode,
            } => note(&format!(
                "[{}: about {tokens_before} → {tokens_after} tokens]\n",
                match mode.as_str() {
                    "micro" => "old tool results cleared",
                    "full" => "conversation summarised (every message you wrote is kept)",
                    _ => "the API cleared old tool results",
                }
            )),
            ChatEvent::ToolResult {
                content,
                is_error: true,
                ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                note(&format!("[the tool failed: {}]\n", esc(first)));
            }
            // A prompt a hook blocked: its text is the answer (as Claude Code prints it; `done`
            // ends the line).
            ChatEvent::Hook(h) if h.event == "UserPromptSubmit" && h.outcome == "blocked" => {
                out(&crate::features::format::escape_stream(&h.text))
            }
            // What a hook added for the model is the model's business.
            ChatEvent::Hook(h) if h.outcome == "context" => {}
            ChatEvent::Hook(h) => {
                let first = h.text.lines().next().unwrap_or_default();
                note(&format!(
                    "[{} hook: {}: {}]\n",
                    esc(&h.event),
                    esc(&h.outcome),
                    esc(first)
                ));
            }
            ChatEvent::Error(e) => match (&e.retry, e.restart) {
                (Some(r), _) => note(&format!(
                    "[{}; retrying in {:.1} s ({} of {})]\n",
                    esc(&e.message),
                    r.delay_ms as f64 / 1000.0,
                    r.attempt,
                    r.of
                )),
                (None, true) => note(&format!(
                    "\n[the stream was cut ({}); the answer starts again]\n",
                    esc(&e.message)
                )),
                (None, false) => note(&format!("\nerror: {}\n", esc(&e.message))),
            },
            ChatEvent::Done { outcome, .. } => {
                out("\n");
                if outcome == Outcome::Cancelled {
                    note("[interrupted; the partial answer is kept]\n");
                }
            }
            _ => {}
        }
        Box::pin(async {})
    }
}

/// Asks on the terminal. `/dev/tty` rather than stdin: stdin may carry the messages, or be a
/// pipe. No terminal (a service, a CI job): denied at once, with a note saying why (and, for a
/// question whose answer is remembered, an MCP server's approval, nothing is remembered).
struct TtyAsker;

impl Asker for TtyAsker {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move { self.answer(request).await.unwrap_or(Decision::Deny) })
    }

    fn answer(&self, request: PermissionRequest) -> BoxFuture<'_, Option<Decision>> {
        Box::pin(async move {
            // A blocking read; a cancelled call drops the wait (the line read later is ignored).
            tokio::task::spawn_blocking(move || ask_tty(&request))
                .await
                .unwrap_or(None)
        })
    }
}

/// The question as the terminal shows it. Every piece the model (or a project's files) wrote is
/// escaped (`\033[28D` stays visible text), so what the user approves is what runs.
fn prompt_text(request: &PermissionRequest) -> String {
    let esc = |s: &str| crate::features::format::escape_text(s).into_owned();
    if request.tool == crate::session::trust::QUESTION_TOOL {
        // The trust dialog: its title, its text line by line, its two answers.
        let mut prompt = format!("\n{}\n", esc(&request.summary));
        for line in request.warning.as_deref().unwrap_or_default().lines() {
            prompt.push_str(&format!("{}\n", esc(line)));
        }
        if let Some(c) = &request.choices {
            prompt.push_str(&format!(
                "  y: {}\n  n: {} (default)\n> ",
                esc(&c.allow),
                esc(&c.deny)
            ));
        }
        return crate::log::redact(&prompt);
    }
    let mut prompt = match &request.choices {
        // A question of its own (an MCP server's approval): its own words.
        Some(_) => format!("\n{}\n", esc(&request.summary)),
        None => format!("\nAllow {}?\n", esc(&request.summary)),
    };
    if let Some(w) = &request.warning {
        prompt.push_str(&format!("  WARNING: {}\n", esc(w)));
    }
    if let Some(r) = &request.reason {
        prompt.push_str(&format!("  why: {}\n", esc(r)));
    }
    if let Some(url) = request.input.get("url").and_then(|c| c.as_str())
        && request.choices.is_some()
    {
        // A remote server: where it is, not a command.
        prompt.push_str(&format!("  url: {}\n", esc(url)));
    } else if let Some(command) = request.input.get("command").and_then(|c| c.as_str())
        && request.choices.is_some()
    {
        let mut line = command.to_string();
        for a in request.input["args"].as_array().into_iter().flatten() {
            line.push(' ');
            line.push_str(a.as_str().unwrap_or_default());
        }
        prompt.push_str(&format!("  command: {}\n", esc(&line)));
    }
    match &request.choices {
        Some(c) => {
            prompt.push_str(&format!("  y: {}\n", esc(&c.allow)));
            if let Some(a) = &c.allow_session {
                prompt.push_str(&format!("  a: {}\n", esc(a)));
            }
            prompt.push_str(&format!("  n: {} (default)\n> ", esc(&c.deny)));
        }
        None => {
            prompt.push_str("  y: yes, this once\n");
            if let Some(scope) = &request.session_scope {
                prompt.push_str(&format!("  a: yes, and {}\n", esc(scope)));
            }
            prompt.push_str("  n: no (default)\n> ");
        }
    }
    crate::log::redact(&prompt)
}

fn ask_tty(request: &PermissionRequest) -> Option<Decision> {
    use std::io::BufRead;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    let mut tty = match tty {
        Ok(t) => t,
        Err(e) if request.tool == crate::session::trust::QUESTION_TOOL => {
            note(&format!(
                "[this folder is not trusted: there is no terminal to ask on (/dev/tty: {e}). {} Until you trust it (`claude-context trust --yes`), none of that is used]\n",
                esc(request
                    .input
                    .get("loads")
                    .and_then(|l| l.as_str())
                    .unwrap_or("Trusting it would change what this session uses."))
            ));
            return None;
        }
        Err(e) => {
            note(&format!(
                "[{}: denied: there is no terminal to ask for permission on (/dev/tty: {e})]\n",
                esc(&request.summary)
            ));
            return None;
        }
    };
    let prompt = prompt_text(request);
    if tty.write_all(prompt.as_bytes()).is_err() || tty.flush().is_err() {
        return None;
    }
    let mut line = String::new();
    match std::io::BufReader::new(&tty).read_line(&mut line) {
        // The end of the terminal's input is no answer.
        Ok(0) | Err(_) => return None,
        Ok(_) => {}
    }
    let offers_session = request.session_scope.is_some()
        || request
            .choices
            .as_ref()
            .is_some_and(|c| c.allow_session.is_some());
    Some(match decision(&line) {
        // No session answer was offered: `a` allows this call only.
        Decision::AllowSession if !offers_session => Decision::Allow,
        d => d,
    })
}

/// The answer typed at the prompt; anything but yes or always is no.
fn decision(line: &str) -> Decision {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Decision::Allow,
        "a" | "always" => Decision::AllowSession,
        _ => Decision::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MCP server's approval on the terminal: the dialog's words and choices; a name or
    /// command a project wrote to drive the terminal (`ESC[2K`, OSC 52) is shown escaped.
    #[test]
    fn the_approval_prompt_is_the_dialogs_and_escapes_what_the_project_wrote() {
        let request = PermissionRequest {
            tool: "mcpServer".into(),
            input: serde_json::json!({"server": "x", "command": "evil\u{1b}[2K", "args": ["--a", "\u{1b}]52;c;aGk=\u{7}"]}),
            summary: "New MCP server found in this project: x\u{1b}[31m".into(),
            session_scope: Some("Use this and all future MCP servers in this project".into()),
            warning: Some(crate::session::mcp::APPROVAL_WARNING.into()),
            reason: None,
            choices: Some(crate::session::seams::Choices {
                allow: "Use this MCP server".into(),
                allow_session: Some("Use this and all future MCP servers in this project".into()),
                deny: "Continue without using this MCP server".into(),
            }),
            tool_use_id: None,
        };
        let p = prompt_text(&request);
        assert!(!p.contains('\u{1b}') && !p.contains('\u{7}'), "{p:?}");
        assert!(
            p.starts_with("\nNew MCP server found in this project: x"),
            "{p}"
        );
        assert!(p.contains("  command: evil"), "{p}");
        // A remote server: its URL.
        let remote = PermissionRequest {
            input: serde_json::json!({"server": "figma", "command": "http://127.0.0.1:3845/mcp", "url": "http://127.0.0.1:3845/mcp", "args": []}),
            ..request.clone()
        };
        let p = prompt_text(&remote);
        assert!(p.contains("\n  url: http://127.0.0.1:3845/mcp\n"), "{p}");
        assert!(!p.contains("command:"), "{p}");
        assert!(p.ends_with("  y: Use this MCP server\n  a: Use this and all future MCP servers in this project\n  n: Continue without using this MCP server (default)\n> "), "{p}");
        let tool = PermissionRequest {
            choices: None,
            warning: None,
            reason: None,
            summary: "Bash: ls".into(),
            session_scope: Some("this exact command for this session: ls".into()),
            ..request
        };
        assert!(prompt_text(&tool).starts_with("\nAllow Bash: ls?\n  y: yes, this once\n"));
    }

    #[test]
    fn only_yes_or_always_allow() {
        assert_eq!(decision("y\n"), Decision::Allow);
        assert_eq!(decision(" Yes \n"), Decision::Allow);
        assert_eq!(decision("a\n"), Decision::AllowSession);
        for no in ["", "\n", "n\n", "no", "yy", "sure"] {
            assert_eq!(decision(no), Decision::Deny, "{no:?}");
        }
    }
}
