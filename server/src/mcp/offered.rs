//! MCP servers an editor offers for a session (ACP's `mcpServers` of `session/new` and
//! `session/load`): what they become ([`servers`]: [`Server`]s of [`Scope::Client`] beside the
//! configured ones), whether each may start, and the user's answer about each, remembered
//! ([`record`], [`recorded`]).
//!
//! **Approval, as a project's server.** The definition comes from the editor, which is the
//! user's own program, but an editor may take it from the project's own editor settings (Zed's
//! `.zed/settings.json` of a cloned repository): so an offered server is treated as a project's
//! `.mcp.json` server. It never starts in a folder that is not trusted (before the answer,
//! [`Approval::Untrusted`]: it makes the session ask the trust question), and it starts only
//! once the user approved it: asked inside the first turn (`session::mcp`), "Use this MCP
//! server" or "Continue without using this MCP server", both remembered.
//!
//! **Remembered outside the repository, by definition.** The answer is kept in our state folder
//! (`<state>/mcp-offered/`, one small private file per folder, server and definition, as the
//! trust records are), never in the project's settings: a repository cannot approve a server an
//! editor will offer. The file is named by a hash of the folder, the server's name and its
//! definition's [`fingerprint`] (the command, its arguments and environment; the URL and its
//! headers): a changed definition is a new question. The record holds the fingerprint, never the
//! values (an environment or a header may carry a token).
//!
//! **A name the configuration has.** A server of the session's own configuration (the user's
//! `~/.claude.json`, the project's `.mcp.json`, a plugin) keeps its name; an offered server of
//! the same name, or whose tools would have the same names (`my.srv` and `my_srv`), is not
//! used: the configuration's approvals and the permission rules (`mcp__<name>`) were written for
//! the configured one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::{Approval, Config, MAX_SERVERS, Scope, Server, Transport};
use crate::fs::{Fs, WriteFs};

/// What [`Server::source`] says of an offered server (it comes from no file).
pub const SOURCE: &str = "the editor (ACP session/new)";
/// The records' folder, in the state directory.
pub const FOLDER: &str = "mcp-offered";
/// The most read of one record (a real one is well under 1 KB).
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// The approval question's title.
pub fn title(server: &str) -> String {
    format!("New MCP server offered by the editor: {server}")
}

/// A server as the editor offers it (ACP's `McpServer`, converted by the front end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offered {
    pub name: String,
    pub kind: OfferedKind,
}

/// How to reach an offered server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OfferedKind {
    /// A program speaking MCP on its stdio, with these variables added to its environment.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A remote server over streamable HTTP, or the older HTTP+SSE when `sse`.
    Http {
        url: String,
        headers: Vec<(String, String)>,
        sse: bool,
    },
}

/// The definition's fingerprint: a hash of everything that decides what runs or where it
/// connects (the command, its arguments and environment; the transport, the URL and its
/// headers). The same definition gives the same fingerprint whatever the order of its
/// variables or headers.
pub fn fingerprint(t: &Transport) -> String {
    let canonical = match t {
        Transport::Stdio { command, args, env } => {
            serde_json::json!(["stdio", command, args, env])
        }
        Transport::Http { url, headers, sse } => {
            serde_json::json!([if *sse { "sse" } else { "http" }, url, headers])
        }
        Transport::Remote { kind, url } => serde_json::json!([kind, url]),
        Transport::Invalid(why) => serde_json::json!(["invalid", why]),
    };
    let mut h = sha1_smol::Sha1::new();
    h.update(canonical.to_string().as_bytes());
    h.digest().to_string()
}

/// An offered server as the session's [`Server`] (its approval still to decide).
fn server(o: &Offered) -> Server {
    let transport = match &o.kind {
        OfferedKind::Stdio { command, args, env } if !command.trim().is_empty() => {
            Transport::Stdio {
                command: command.clone(),
                args: args.iter().take(1_000).cloned().collect(),
                env: env.iter().take(1_000).cloned().collect::<BTreeMap<_, _>>(),
            }
        }
        OfferedKind::Stdio { .. } => Transport::Invalid("a stdio server needs a command".into()),
        OfferedKind::Http { url, headers, sse } => match super::http::check_url(url) {
            Err(why) => Transport::Invalid(why),
            Ok(()) => Transport::Http {
                url: url.clone(),
                headers: headers.iter().take(100).cloned().collect(),
                sse: *sse,
            },
        },
    };
    let fp = fingerprint(&transport);
    Server {
        name: o.name.clone(),
        scope: Scope::Client,
        source: PathBuf::from(SOURCE),
        transport,
        approval: Approval::Pending,
        missing_vars: Vec::new(),
        // No value of the definition (an environment or a header may carry a token): the
        // fingerprint tells definitions apart.
        entry: serde_json::json!({ "offered": fp }).to_string(),
    }
}

/// What became of the offered servers.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The servers to add to the session's configuration, each with its approval.
    pub servers: Vec<Server>,
    /// Why an offered server is not used (a name the configuration has, an empty or repeated
    /// name), one line each.
    pub dropped: Vec<String>,
}

/// The offered servers of a session in `folder` (a real path) beside `config`: each with its
/// approval (the answer in `records` for its definition, else to be asked; held while the
/// folder is not `trusted`). At most [`MAX_SERVERS`].
pub fn servers(
    fs: &dyn Fs,
    offered: &[Offered],
    config: &Config,
    folder: &Path,
    trusted: bool,
    records: Option<&Path>,
) -> Outcome {
    let mut out = Outcome::default();
    let mut taken: Vec<String> = config
        .servers
        .iter()
        .map(|s| super::texts::normalize(&s.name))
        .collect();
    for o in offered.iter().take(MAX_SERVERS) {
        if o.name.trim().is_empty() {
            out.dropped
                .push("an MCP server the editor offered has no name: not used".into());
            continue;
        }
        let norm = super::texts::normalize(&o.name);
        if let Some(c) = config
            .servers
            .iter()
            .find(|s| super::texts::normalize(&s.name) == norm)
        {
            out.dropped.push(format!(
                "the MCP server {:?} the editor offered is not used: the {} server {:?} of {} has that name",
                o.name,
                c.scope.label(),
                c.name,
                c.source.display()
            ));
            continue;
        }
        if taken.contains(&norm) {
            out.dropped.push(format!(
                "the editor offered the MCP server {:?} twice (or two whose tools would have the same names): the first is used",
                o.name
            ));
            continue;
        }
        taken.push(norm);
        let mut s = server(o);
        let answered = records.and_then(|dir| recorded(fs, dir, folder, &s));
        let approval = match answered {
            Some(r) if !r.used => Approval::Disabled(r.file),
            Some(r) => Approval::Approved(format!(
                "your answer for this definition, kept in {}",
                r.file.display()
            )),
            None => Approval::Pending,
        };
        s.approval = match approval {
            // A rejection stands whatever the trust.
            Approval::Disabled(_) => approval,
            a if trusted => a,
            a => Approval::Untrusted(Box::new(a)),
        };
        out.servers.push(s);
    }
    out
}

/// One answer, as kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    folder: PathBuf,
    server: String,
    fingerprint: String,
    /// "Use this MCP server" (`true`) or "Continue without using this MCP server".
    used: bool,
    /// `YYYY-MM-DD`.
    #[serde(default)]
    answered_at: String,
}

/// An answer found, and its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub used: bool,
    pub file: PathBuf,
}

/// The record file of `server` (its name and definition) in `folder`.
pub fn path(dir: &Path, folder: &Path, server: &Server) -> PathBuf {
    let mut h = sha1_smol::Sha1::new();
    h.update(folder.as_os_str().as_encoded_bytes());
    h.update(b"\0");
    h.update(server.name.as_bytes());
    h.update(b"\0");
    h.update(fingerprint(&server.transport).as_bytes());
    dir.join(FOLDER).join(format!("{}.json", h.digest()))
}

/// The answer kept for `server` (this name, this definition) in `folder`, if any. A file that
/// does not parse, is too large, or names another folder, server or definition is no answer.
pub fn recorded(fs: &dyn Fs, dir: &Path, folder: &Path, server: &Server) -> Option<Answer> {
    let file = path(dir, folder, server);
    let bytes = fs.read_bytes(&file, MAX_RECORD_BYTES + 1).ok()?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return None;
    }
    let r: Record = serde_json::from_slice(&bytes).ok()?;
    (r.folder == folder
        && r.server == server.name
        && r.fingerprint == fingerprint(&server.transport))
    .then_some(Answer { used: r.used, file })
}

/// Keeps the user's answer about `server` in `folder` (`dir`: the state directory); the file
/// written. Private (0700 folder, 0600 file), replaced in one step.
pub fn record(
    fs: &dyn Fs,
    wfs: &dyn WriteFs,
    dir: &Path,
    folder: &Path,
    server: &Server,
    used: bool,
    date: &str,
) -> Result<PathBuf, String> {
    let file = path(dir, folder, server);
    let r = Record {
        folder: folder.to_path_buf(),
        server: server.name.clone(),
        fingerprint: fingerprint(&server.transport),
        used,
        answered_at: date.to_string(),
    };
    let mut text = serde_json::to_vec_pretty(&r).map_err(|e| e.to_string())?;
    text.push(b'\n');
    let parent = dir.join(FOLDER);
    wfs.create_dir_all(&parent)
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    if fs.is_dir(&parent) {
        crate::fs::keep_private(&parent);
    }
    wfs.replace(&file, &text)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::RealFs;

    fn stdio(name: &str, command: &str, env: &[(&str, &str)]) -> Offered {
        Offered {
            name: name.into(),
            kind: OfferedKind::Stdio {
                command: command.into(),
                args: vec!["--serve".into()],
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
        }
    }

    fn configured(name: &str) -> Server {
        Server {
            name: name.into(),
            scope: Scope::Project,
            source: PathBuf::from("/w/.mcp.json"),
            transport: Transport::Stdio {
                command: "demo".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
            approval: Approval::Pending,
            missing_vars: Vec::new(),
            entry: "{}".into(),
        }
    }

    #[test]
    fn the_fingerprint_follows_what_runs_and_not_the_order_of_variables() {
        let a = server(&stdio("x", "/bin/srv", &[("A", "1"), ("B", "2")]));
        let b = server(&stdio("x", "/bin/srv", &[("B", "2"), ("A", "1")]));
        assert_eq!(fingerprint(&a.transport), fingerprint(&b.transport));
        for changed in [
            stdio("x", "/bin/other", &[("A", "1"), ("B", "2")]),
            stdio("x", "/bin/srv", &[("A", "1"), ("B", "3")]),
            stdio("x", "/bin/srv", &[("A", "1"), ("LD_PRELOAD", "/tmp/x.so")]),
        ] {
            assert_ne!(
                fingerprint(&a.transport),
                fingerprint(&server(&changed).transport)
            );
        }
        // Nothing of the definition's values is in the entry.
        let s = server(&stdio("x", "/bin/srv", &[("TOKEN", "s3cret")]));
        assert!(!s.entry.contains("s3cret") && !s.entry.contains("/bin/srv"));
    }

    #[test]
    fn an_answer_is_kept_for_one_folder_name_and_definition() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let folder = dir.path().join("w");
        let config = Config::default();
        let offered = [stdio("theirs", "/bin/srv", &[("A", "1")])];
        let out = servers(&RealFs, &offered, &config, &folder, true, Some(&state));
        assert_eq!(out.servers[0].approval, Approval::Pending);
        assert_eq!(out.servers[0].scope, Scope::Client);
        let file = record(
            &RealFs,
            &RealFs,
            &state,
            &folder,
            &out.servers[0],
            true,
            "2026-01-02",
        )
        .unwrap();
        assert!(file.starts_with(state.join(FOLDER)));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("/bin/srv"), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(state.join(FOLDER))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let again = servers(&RealFs, &offered, &config, &folder, true, Some(&state));
        assert!(matches!(again.servers[0].approval, Approval::Approved(_)));
        // Untrusted: held, whatever the answer.
        let held = servers(&RealFs, &offered, &config, &folder, false, Some(&state));
        assert!(matches!(held.servers[0].approval, Approval::Untrusted(_)));
        // Another folder, a changed definition: asked again.
        let other = servers(
            &RealFs,
            &offered,
            &config,
            &dir.path().join("v"),
            true,
            Some(&state),
        );
        assert_eq!(other.servers[0].approval, Approval::Pending);
        let changed = [stdio("theirs", "/bin/srv", &[("A", "2")])];
        let changed = servers(&RealFs, &changed, &config, &folder, true, Some(&state));
        assert_eq!(changed.servers[0].approval, Approval::Pending);
        // A rejection is kept too, and stands untrusted.
        record(
            &RealFs,
            &RealFs,
            &state,
            &folder,
            &out.servers[0],
            false,
            "2026-01-02",
        )
        .unwrap();
        let no = servers(&RealFs, &offered, &config, &folder, false, Some(&state));
        assert!(matches!(no.servers[0].approval, Approval::Disabled(_)));
    }

    #[test]
    fn the_configuration_keeps_its_names() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            servers: vec![configured("my_srv")],
            ..Config::default()
        };
        let offered = [
            stdio("my.srv", "/bin/a", &[]),
            stdio("ok", "/bin/b", &[]),
            stdio("ok", "/bin/c", &[]),
            stdio(" ", "/bin/d", &[]),
        ];
        let out = servers(&RealFs, &offered, &config, dir.path(), true, None);
        let names: Vec<&str> = out.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ok"]);
        assert!(
            matches!(&out.servers[0].transport, Transport::Stdio { command, .. } if command == "/bin/b")
        );
        assert_eq!(out.dropped.len(), 3, "{:?}", out.dropped);
        assert!(
            out.dropped[0].contains("project server \"my_srv\""),
            "{:?}",
            out.dropped
        );
    }

    #[test]
    fn a_bad_url_is_an_entry_that_cannot_start() {
        let offered = [Offered {
            name: "web".into(),
            kind: OfferedKind::Http {
                url: "file:///etc/passwd".into(),
                headers: Vec::new(),
                sse: false,
            },
        }];
        let out = servers(
            &RealFs,
            &offered,
            &Config::default(),
            Path::new("/w"),
            true,
            None,
        );
        assert!(matches!(out.servers[0].transport, Transport::Invalid(_)));
    }
}
