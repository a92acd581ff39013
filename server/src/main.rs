//! `claude-context`: argument parsing and dispatch. Logs go to stderr; stdout is for results
//! (and, under `lsp`, for JSON-RPC only).

use std::path::PathBuf;
use std::process::ExitCode;

use claude_context::cli;
use claude_context::host::Host;
use claude_context::log;

const USAGE: &str = "claude-context: Claude Code's context engine for editors and terminals

Usage:
  claude-context preview [--cwd DIR] [--file PATH]... [--add-dir DIR]... [--json]
                         [--model ID] [--window N] [--memory-dir DIR] [--no-git]
                         [--mcp-connect] [--run-hooks [--prompt TEXT]] [--cold]
                         [--plugin-dir DIR]... [PERMISSIONS]
      What the model sees at the start of a session in DIR (default: .), with each
      --file touched in order (conditional rules and nested CLAUDE.md files attach),
      skills, MCP servers and hooks included, and the permission rules and mode that
      apply. MCP tools come from the last connection; with --mcp-connect the approved
      servers are started to list them (never others). Hooks are listed, never run; with
      --run-hooks (a trusted folder only) the SessionStart and UserPromptSubmit hooks run
      once (on TEXT) and their texts are shown.
  claude-context check [--cwd DIR] [--json] [--cold]
      Lint every instruction file of the project; exit 1 when there are errors.
      preview and check ask a claude-context server running for the workspace (lsp, acp)
      for what it keeps current; --cold computes the answer here (the same answer).
  claude-context chat [--cwd DIR] [--resume ID] [--model ID] [--provider anthropic|openai]
                      [--no-git] [--add-dir DIR]... [--plugin-dir DIR]... [PERMISSIONS] [TEXT]
      Chat with the model in DIR: TEXT is one message (the answer streams to stdout);
      without it, each line of stdin is a message. --resume continues a session (ours or
      the reference CLI's). Needs ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL optional).
  claude-context trust [--cwd DIR] [--yes | --no | --forget] [--json]
      Whether you trust DIR (default: .), where that is recorded, and what of the repository
      waits for it (its MCP servers, settings that reach outside it). --yes and --no answer
      now (a chat asks before its first turn otherwise); --forget lets the next chat ask.
  claude-context compact TRANSCRIPT [--dry-run] [--focus TEXT] [--json]
      Compact a session's transcript offline (see `claude-context compact --help`).
  claude-context lsp [--plugin-dir DIR]...
      Run the language server on stdio.
  claude-context acp [--model ID] [--provider anthropic|openai] [--no-git]
                     [--no-client-files] [--log LEVEL] [--plugin-dir DIR]...
      Run the Agent Client Protocol agent on stdio (Zed, JetBrains, agent-shell, ...).
      Needs ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL optional). --no-client-files keeps
      every read and write in the agent (never fs/read_text_file or fs/write_text_file).
      Only errors reach stderr unless --log (or CLAUDE_CONTEXT_LOG) asks for more.
  claude-context --version | --help

--plugin-dir DIR loads a Claude Code plugin folder for this run (its skills, commands, MCP
servers, hooks, output styles), as `claude --plugin-dir` does; the plugins Claude Code
installed and enabled load without it.

PERMISSIONS (as Claude Code spells them too: --allowedTools, --disallowedTools):
  --allowed-tools RULES      allow rules, e.g. 'Bash(npm test:*) Edit(src/**)' (repeatable;
                             commas or spaces separate rules)
  --disallowed-tools RULES   deny rules, e.g. 'Read(./.env)'
  --permission-mode MODE     default, acceptEdits, plan, dontAsk, bypassPermissions
                             (manual = default; auto runs as default here)

Environment: HOME, CLAUDE_CONTEXT_MANAGED_DIR (default /etc/claude-code),
CLAUDE_CODE_DISABLE_CLAUDE_MDS, CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD,
CLAUDE_CODE_DISABLE_AUTO_MEMORY, CLAUDE_CONTEXT_MEMORY_DIR, GIT_CEILING_DIRECTORIES,
GIT_CONFIG_NOSYSTEM, SLASH_COMMAND_TOOL_CHAR_BUDGET, XDG_STATE_HOME,
CLAUDE_CONTEXT_LOG (error, warn, info, debug; logs go to stderr; default info, error for acp).
";

/// `--plugin-dir DIR`: a plugin folder enabled for this process's sessions (absolute).
fn plugin_dir(host: &mut Host, parser: &mut lexopt::Parser) -> Result<(), String> {
    let dir = path(parser)?;
    let dir = host.abs(&dir);
    host.plugin_dirs.push(dir);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => ExitCode::from(code as u8),
        Err(msg) => {
            eprintln!("claude-context: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<i32, String> {
    use lexopt::prelude::*;
    // The Bash tool's reaper (host/reaper.rs): a tiny process of its own, nothing else runs.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == claude_context::host::reaper::REAP_ARG)
    {
        return Ok(claude_context::host::reaper::reap_main(&args[2..]));
    }
    let mut parser = lexopt::Parser::from_env();
    let sub = match parser.next().map_err(|e| e.to_string())? {
        Some(Value(v)) => v.string().map_err(|e| e.to_string())?,
        Some(Long("version")) | Some(Short('V')) => {
            cli::output::out(&format!("claude-context {}\n", env!("CARGO_PKG_VERSION")));
            return Ok(0);
        }
        Some(Long("help")) | Some(Short('h')) | None => {
            cli::output::out(USAGE);
            return Ok(0);
        }
        Some(other) => return Err(format!("{}\n\n{USAGE}", other.unexpected())),
    };
    // The key leaves the environment block before anything else runs (the process executes
    // itself again without it; the value comes back over a pipe into memory only).
    claude_context::host::isolate_secrets();
    let mut host = Host::from_process();
    if matches!(sub.as_str(), "lsp" | "chat" | "acp") {
        // These hold a key in memory and run the model's commands: out of their reach.
        claude_context::host::protect_memory();
        // Bash commands run under this binary as their reaper, so nothing they start outlives
        // them (`setsid` included).
        if let Some(exe) = host.exe.clone() {
            claude_context::host::reaper::use_reaper(exe);
        }
    }
    match host.var("CLAUDE_CONTEXT_LOG").and_then(log::Level::parse) {
        Some(level) => log::set_level(level),
        // ACP clients (acp.el, agent-shell) show every stderr line as an error, and ACP has no
        // log channel: errors only, unless asked (`--log`, `CLAUDE_CONTEXT_LOG`).
        None if sub == "acp" => log::set_level(log::Level::Error),
        None => {}
    }
    match sub.as_str() {
        "preview" => {
            let mut args = cli::preview::Args::default();
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                match arg {
                    Long("cwd") => args.cwd = Some(path(&mut parser)?),
                    Long("file") => args.files.push(path(&mut parser)?),
                    Long("add-dir") => args.add_dirs.push(path(&mut parser)?),
                    Long("plugin-dir") => plugin_dir(&mut host, &mut parser)?,
                    Long("json") => args.json = true,
                    Long("no-git") => args.no_git = true,
                    Long("mcp-connect") => args.mcp_connect = true,
                    Long("run-hooks") => args.run_hooks = true,
                    Long("prompt") => args.prompt = Some(string(&mut parser)?),
                    Long("cold") => args.cold = true,
                    Long(flag) if permission_flag(flag) => {
                        let flag = flag.to_string();
                        if let Some(code) =
                            permission_arg(&flag, &mut parser, &mut args.permissions)?
                        {
                            return Ok(code);
                        }
                    }
                    Long("model") => args.model = Some(string(&mut parser)?),
                    Long("memory-dir") => args.memory_dir = Some(string(&mut parser)?),
                    Long("window") => {
                        let v = string(&mut parser)?;
                        args.window = Some(
                            v.parse()
                                .map_err(|_| format!("--window {v}: not a number"))?,
                        );
                    }
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    other => return Err(format!("preview: {}", other.unexpected())),
                }
            }
            cli::preview::run(&host, &args)
        }
        "check" => {
            let mut args = cli::check::Args::default();
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                match arg {
                    Long("cwd") => args.cwd = Some(path(&mut parser)?),
                    Long("json") => args.json = true,
                    Long("cold") => args.cold = true,
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    other => return Err(format!("check: {}", other.unexpected())),
                }
            }
            cli::check::run(&host, &args)
        }
        "chat" => {
            let mut args = cli::chat::Args::default();
            let mut words: Vec<String> = Vec::new();
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                match arg {
                    Long("cwd") => args.cwd = Some(path(&mut parser)?),
                    Long("resume") => args.resume = Some(string(&mut parser)?),
                    Long("model") => args.model = Some(string(&mut parser)?),
                    Long("provider") => args.provider = Some(string(&mut parser)?),
                    Long("no-git") => args.no_git = true,
                    Long("add-dir") => args.permissions.add_dirs.push(path(&mut parser)?),
                    Long("plugin-dir") => plugin_dir(&mut host, &mut parser)?,
                    Long(flag) if permission_flag(flag) => {
                        let flag = flag.to_string();
                        if let Some(code) =
                            permission_arg(&flag, &mut parser, &mut args.permissions)?
                        {
                            return Ok(code);
                        }
                    }
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    Value(v) => words.push(v.string().map_err(|e| e.to_string())?),
                    other => return Err(format!("chat: {}", other.unexpected())),
                }
            }
            if !words.is_empty() {
                args.text = Some(words.join(" "));
            }
            cli::chat::run(&host, &args)
        }
        "trust" => {
            let mut args = cli::trust::Args::default();
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                let answer = match arg {
                    Long("cwd") => {
                        args.cwd = Some(path(&mut parser)?);
                        None
                    }
                    Long("json") => {
                        args.json = true;
                        None
                    }
                    Long("yes") => Some(claude_context::features::trust::Answer::Yes),
                    Long("no") => Some(claude_context::features::trust::Answer::No),
                    Long("forget") => Some(claude_context::features::trust::Answer::Forget),
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    other => return Err(format!("trust: {}", other.unexpected())),
                };
                if let Some(a) = answer {
                    if args.answer.is_some_and(|b| b != a) {
                        return Err("trust: give one of --yes, --no, --forget".into());
                    }
                    args.answer = Some(a);
                }
            }
            cli::trust::run(&host, &args)
        }
        "lsp" => {
            // Clients pass `--stdio` (vscode-languageclient does); stdio is the only transport.
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                match arg {
                    Long("stdio") => {}
                    Long("plugin-dir") => plugin_dir(&mut host, &mut parser)?,
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    other => return Err(format!("lsp: {}", other.unexpected())),
                }
            }
            Ok(claude_context::lsp::run(host))
        }
        "acp" => {
            let mut args = claude_context::acp::Args::default();
            while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
                match arg {
                    Long("model") => args.model = Some(string(&mut parser)?),
                    Long("provider") => {
                        let p = string(&mut parser)?;
                        if claude_context::session::ProviderKind::parse(&p).is_none() {
                            return Err(format!("--provider {p}: use anthropic or openai"));
                        }
                        args.provider = Some(p);
                    }
                    Long("no-git") => args.no_git = true,
                    Long("no-client-files") => args.no_client_files = true,
                    Long("log") => {
                        let l = string(&mut parser)?;
                        let level = log::Level::parse(&l)
                            .ok_or_else(|| format!("--log {l}: use error, warn, info or debug"))?;
                        log::set_level(level);
                    }
                    Long("plugin-dir") => plugin_dir(&mut host, &mut parser)?,
                    Long("help") | Short('h') => {
                        cli::output::out(USAGE);
                        return Ok(0);
                    }
                    other => return Err(format!("acp: {}", other.unexpected())),
                }
            }
            Ok(claude_context::acp::run(host, args))
        }
        "compact" => cli::compact::main(&host, &mut parser),
        "help" => {
            cli::output::out(USAGE);
            Ok(0)
        }
        other => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    }
}

/// `--allowed-tools` and the other permission flags, in our spelling or Claude Code's.
fn permission_flag(flag: &str) -> bool {
    matches!(
        flag,
        "allowed-tools"
            | "allowedTools"
            | "disallowed-tools"
            | "disallowedTools"
            | "permission-mode"
    )
}

/// Reads one permission flag's value into `opts`. `Some(code)`: exit now (an unknown mode, with
/// the reference CLI's message and code).
fn permission_arg(
    flag: &str,
    parser: &mut lexopt::Parser,
    opts: &mut claude_context::session::permissions::Options,
) -> Result<Option<i32>, String> {
    use claude_context::session::permissions::{Kind, Mode, split_list};
    let value = string(parser)?;
    match flag {
        "allowed-tools" | "allowedTools" => opts
            .command_line
            .extend(split_list(&value).into_iter().map(|r| (Kind::Allow, r))),
        "disallowed-tools" | "disallowedTools" => opts
            .command_line
            .extend(split_list(&value).into_iter().map(|r| (Kind::Deny, r))),
        _ => match Mode::parse(&value) {
            Some(m) => opts.mode = Some(m),
            None => {
                eprintln!("{}", Mode::invalid(&value));
                return Ok(Some(1));
            }
        },
    }
    Ok(None)
}

fn string(parser: &mut lexopt::Parser) -> Result<String, String> {
    parser
        .value()
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|v| format!("not UTF-8: {v:?}"))
}

fn path(parser: &mut lexopt::Parser) -> Result<PathBuf, String> {
    Ok(PathBuf::from(parser.value().map_err(|e| e.to_string())?))
}
