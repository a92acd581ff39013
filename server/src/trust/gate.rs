//! The gate: one place that turns a folder's settings files and its trust into what a session
//! may use, with the list of what is held back and why ([`Gate::held`], for the preview, `check`
//! and the question's text).
//!
//! What waits for trust (the repository's own files: the project's `.claude/settings.json`, a
//! tracked `.claude/settings.local.json`; and `.mcp.json`):
//!
//! | item | once trusted |
//! |---|---|
//! | `.mcp.json` servers | start as their approval says (the user's files, or the repository's own `enableAllProjectMcpServers` / `enabledMcpjsonServers`, as measured), else the session asks |
//! | MCP servers the editor offers (ACP `session/new`) | start as the user's kept answer for their definition says, else the session asks (`mcp/offered.rs`) |
//! | `enableAllProjectMcpServers`, `enabledMcpjsonServers` | approve the project's servers |
//! | `autoMemoryDirectory` | the memory folder (never another project's: refused even then) |
//! | `permissions.allow`, `permissions.additionalDirectories`, `permissions.defaultMode: acceptEdits` | apply from the next session (the rules' own warning names them while they wait) |
//! | `hooks` | run (every scope's hooks, the user's too, run only in a trusted folder: `session/hooks.rs` asks the session's `trusted()`) |
//! | `enabledPlugins`, `extraKnownMarketplaces` | the plugins load (the plugins module reads them only once trusted; their MCP servers then need approval as `.mcp.json`'s do) |
//! | `env` (for commands), `apiKeyHelper`, `statusLine` | nothing: claude-context does not run them at all ([`HeldStatus::NotSupported`]) |

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Source, TrustState, Verdict};
use crate::context::settings::Settings;
use crate::mcp::{self, Approval};

/// What is held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// A server of `.mcp.json`.
    McpServer,
    /// `enableAllProjectMcpServers`, `enabledMcpjsonServers`.
    McpApproval,
    AutoMemoryDirectory,
    /// `permissions.allow`, `permissions.additionalDirectories`.
    Permissions,
    /// `env` (its variables for commands, MCP servers and hooks).
    Env,
    Plugins,
    ApiKeyHelper,
    Hooks,
    StatusLine,
}

impl Kind {
    /// The kind of a settings key ([`crate::context::settings::Reach::key`]).
    pub fn of_key(key: &str) -> Kind {
        match key {
            "enableAllProjectMcpServers" | "enabledMcpjsonServers" => Kind::McpApproval,
            "autoMemoryDirectory" => Kind::AutoMemoryDirectory,
            "env" => Kind::Env,
            "enabledPlugins" | "extraKnownMarketplaces" => Kind::Plugins,
            "apiKeyHelper" => Kind::ApiKeyHelper,
            "hooks" => Kind::Hooks,
            "statusLine" => Kind::StatusLine,
            _ => Kind::Permissions,
        }
    }

    /// Does claude-context use it at all? What it does not use, trust changes nothing for.
    pub fn supported(self) -> bool {
        !matches!(self, Kind::Env | Kind::ApiKeyHelper | Kind::StatusLine)
    }

    /// Why claude-context does not use it.
    fn unsupported(self) -> &'static str {
        match self {
            Kind::Env => {
                "claude-context passes no settings file's env to commands or MCP servers (only CLAUDE_CODE_DISABLE_CLAUDE_MDS, CLAUDE_CODE_DISABLE_AUTO_MEMORY and CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD apply, from any file: they only change what is read)"
            }
            Kind::ApiKeyHelper => {
                "claude-context never runs a key helper: the key comes from its own environment"
            }
            Kind::StatusLine => "claude-context runs no status line command",
            _ => "",
        }
    }
}

/// Where a held item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HeldStatus {
    /// Nobody was asked yet: it applies once the folder is trusted (a preview shows it applied).
    WaitingForTrust,
    /// Its user does not trust the folder: it does not apply.
    NotTrusted,
    /// Refused even in a trusted folder.
    Refused,
    /// claude-context does not use it at all.
    NotSupported,
}

/// One thing of a repository that trust holds back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub kind: Kind,
    /// The key (`autoMemoryDirectory`, `permissions.allow`...), or the server's name.
    pub key: String,
    /// The file that says it.
    pub file: PathBuf,
    /// What it says, shortly.
    pub detail: String,
    pub status: HeldStatus,
    /// Why, and what trust would do, in words.
    pub reason: String,
    /// Where in the file (0-based line, byte columns), when known.
    pub line: Option<usize>,
    pub cols: (usize, usize),
}

/// A folder's gate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    /// The folder (its real path).
    pub folder: PathBuf,
    pub verdict: Verdict,
    /// git tracks `.claude/settings.local.json`: it is read as the repository's file.
    pub local_tracked: bool,
    /// What is held back, and why: items a trusted folder applies are not listed.
    pub held: Vec<Held>,
}

impl Gate {
    /// The gate of `folder` (a real path), from its settings as read (with the trust they were
    /// read with), its MCP configuration, the walk's view of a held memory folder, and its
    /// verdict.
    pub fn of(
        folder: &Path,
        settings: &Settings,
        mcp: Option<&mcp::Config>,
        held_memory_dir: Option<&(PathBuf, Result<PathBuf, String>)>,
        memory_findings: &[crate::context::Finding],
        verdict: Verdict,
    ) -> Gate {
        let trusted = verdict.trusted();
        let waiting = match verdict.state {
            TrustState::NotTrusted => HeldStatus::NotTrusted,
            _ => HeldStatus::WaitingForTrust,
        };
        let waits = |what: &str| match waiting {
            HeldStatus::NotTrusted => format!(
                "you do not trust this folder: {what} does not apply (`claude-context trust` changes the answer)"
            ),
            _ => format!("{what} applies once you trust this folder (a chat asks first)"),
        };
        let mut held = Vec::new();
        for s in mcp.into_iter().flat_map(|c| &c.servers) {
            let Approval::Untrusted(inner) = &s.approval else {
                continue;
            };
            let then = match &**inner {
                Approval::Approved(why) => format!("once trusted, it starts: {why}"),
                _ => "once trusted, a chat asks whether to use it".to_string(),
            };
            let from = if s.scope == mcp::Scope::Client {
                "no MCP server the editor offers"
            } else {
                "no server of its .mcp.json"
            };
            held.push(Held {
                kind: Kind::McpServer,
                key: s.name.clone(),
                file: s.source.clone(),
                detail: server_command(s),
                status: waiting,
                reason: match waiting {
                    HeldStatus::NotTrusted => {
                        format!("you do not trust this folder: {from} starts; {then}")
                    }
                    _ => format!("{from} starts before you trust this folder; {then}"),
                },
                line: None,
                cols: (0, 0),
            });
        }
        for r in &settings.reach {
            let kind = Kind::of_key(&r.key);
            let mut item = Held {
                kind,
                key: r.key.clone(),
                file: r.source.clone(),
                detail: r.detail.clone(),
                status: waiting,
                reason: String::new(),
                line: r.line,
                cols: r.cols,
            };
            if !kind.supported() {
                item.status = HeldStatus::NotSupported;
                item.reason = kind.unsupported().to_string();
                held.push(item);
                continue;
            }
            if kind == Kind::AutoMemoryDirectory {
                let refused = match held_memory_dir {
                    Some((src, Err(why))) if *src == r.source => Some(why.clone()),
                    _ => memory_findings
                        .iter()
                        .find(|f| f.code == "settings-memory-dir" && f.path == r.source)
                        .map(|f| f.message.clone()),
                };
                if let Some(why) = refused {
                    item.status = HeldStatus::Refused;
                    item.reason = why;
                    held.push(item);
                    continue;
                }
            }
            if trusted {
                continue; // applied
            }
            item.reason = match kind {
                Kind::AutoMemoryDirectory if settings.trust.reads_held() => format!(
                    "{} (this preview shows it applied; a session uses it once you trust this folder)",
                    waits("this memory folder")
                ),
                Kind::AutoMemoryDirectory => waits("this memory folder"),
                Kind::McpApproval => waits("its approval of the project's MCP servers"),
                Kind::Hooks => waits("its hooks (and every other scope's)"),
                Kind::Plugins => waits("the plugins it enables"),
                _ => waits("it"),
            };
            held.push(item);
        }
        Gate {
            folder: folder.to_path_buf(),
            local_tracked: settings.trust.local_tracked,
            verdict,
            held,
        }
    }

    pub fn trusted(&self) -> bool {
        self.verdict.trusted()
    }

    /// The gate once the trust is `verdict` (the user answered). `started`: for a session that
    /// started before the answer (its memory folder was chosen then: a trusted folder's
    /// `autoMemoryDirectory` applies from the next session).
    pub fn with_verdict(&self, verdict: Verdict, started: bool) -> Gate {
        let mut g = self.clone();
        let state = verdict.state;
        g.verdict = verdict;
        g.held.retain_mut(|h| {
            if !matches!(h.status, HeldStatus::WaitingForTrust | HeldStatus::NotTrusted) {
                return true;
            }
            match state {
                TrustState::Trusted if started && h.kind == Kind::AutoMemoryDirectory => {
                    h.status = HeldStatus::WaitingForTrust;
                    h.reason = "trusted since this session started: this memory folder applies from the next session".to_string();
                    true
                }
                TrustState::Trusted => false,
                TrustState::NotTrusted => {
                    h.status = HeldStatus::NotTrusted;
                    h.reason = "you do not trust this folder: it does not apply (`claude-context trust` changes the answer)".to_string();
                    true
                }
                TrustState::NeverAsked => true,
            }
        });
        g
    }

    /// Something claude-context would use waits for the user's answer: a session asks.
    pub fn would_ask(&self) -> bool {
        self.verdict.state == TrustState::NeverAsked
            && self
                .held
                .iter()
                .any(|h| h.status == HeldStatus::WaitingForTrust)
    }

    /// May a repository's `kind` run or apply now? (Hooks will ask this.)
    pub fn allows(&self, kind: Kind) -> bool {
        kind.supported() && self.trusted()
    }

    /// Where the trust comes from, in words (`None` when nobody was asked).
    pub fn source_words(&self) -> Option<String> {
        let src = self.verdict.source?;
        Some(match (src, &self.verdict.record) {
            (Source::Editor, _) => "the editor's workspace trust".to_string(),
            (Source::Ours, Some(p)) => format!("your answer, kept in {}", p.display()),
            (Source::Ours, None) => "your answer".to_string(),
            (Source::ClaudeCode, Some(p)) => {
                format!("Claude Code's trust dialog, kept in {}", p.display())
            }
            (Source::ClaudeCode, None) => "Claude Code's trust dialog".to_string(),
        })
    }
}

/// A server's command line (or URL), shortly.
fn server_command(s: &mcp::Server) -> String {
    let line = match &s.transport {
        mcp::Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        mcp::Transport::Http { url, .. } | mcp::Transport::Remote { url, .. } => url.clone(),
        mcp::Transport::Invalid(why) => why.clone(),
    };
    crate::context::message::cut(&line).into_owned()
}
