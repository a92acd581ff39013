//! The sandbox Bash commands run in (Linux): bubblewrap (`bwrap`, Debian's `bubblewrap`)
//! around the reaper and the shell, so that an approved command sees the workspace and little
//! else of the user's.
//!
//! What a sandboxed command gets ([`Plan::args`]):
//! - the whole file system **read-only** (`--ro-bind / /`), with the workspace folders, the
//!   allowed directories, the git directories their repositories use outside them (a linked
//!   worktree's) and the user's `sandbox.filesystem.allowWrite` folders bound
//!   **writable** over it; inside them, the files that make programs run code (`sensitive.rs`:
//!   the repository's `.git/config` and `.git/hooks`, `.claude/`, `.vscode/`, `.envrc`, ...) that
//!   exist at a folder's top are bound read-only again, so a command cannot plant what the
//!   editor's own `git status` would run outside the sandbox seconds later;
//! - a **private `/tmp`** (a folder of the session's, bound as `/tmp` and `TMPDIR`, kept for the
//!   session's commands and removed with it; the folders of servers that ended without removing
//!   theirs are swept when the next one is made: [`sweep`]), a fresh `/dev` and an empty
//!   `/var/tmp`;
//! - a **new PID namespace** with its own `/proc`: no other process of the user is visible, so
//!   no `/proc/<pid>/environ` of the editor or the shell that started it (where the key lives);
//! - a **new network namespace**: only its own loopback. With `sandbox.network.allowedDomains`
//!   (user or managed settings), the reaper inside listens on its loopback and carries each
//!   connection over a Unix socket to this process's proxy ([`proxy`]), which lets through
//!   `CONNECT host:port` and plain `http://` requests to the allowed hosts only; `HTTP_PROXY`,
//!   `HTTPS_PROXY` (and the lower-case forms) point the command's programs at it;
//! - credential stores hidden (`deny_read`: `~/.ssh`, `~/.aws`, `~/.netrc`, Claude Code's own
//!   credential files, ...; the session fills the list) and the user's runtime folder
//!   (`/run/user/<uid>`: the session bus, agents' sockets) and docker's socket masked;
//! - a new session (`setsid`: no terminal to inject keystrokes into) and death with its parent.
//!
//! The reaper (`claude-context __reap`) still runs the shell inside and kills every descendant
//! when the call ends, times out or is cancelled; the PID namespace makes that total (when its
//! first process ends, the kernel ends every process in it).
//!
//! Whether it can run is probed once per bubblewrap program and process ([`probe`]): `bwrap` with
//! the same namespaces running `true`. Where it is missing or the kernel (or a container)
//! refuses the namespaces, the session asks the user once, through the [`super::Asker`], whether
//! commands may run without it ([`decide`]): never silently. That question comes after the
//! session's permission rules (a command a deny rule refuses is refused unasked) and before the
//! command's own question; in don't ask mode it is not asked and the command is refused. Being
//! sandboxed allows nothing: whether a command runs is the rules', the mode's or the user's
//! answer (`permissions/`), where it runs is this module's. A user or managed setting
//! `sandbox.enabled: false` turns it off without asking; a repository's settings cannot (see
//! `session/sandbox.rs`, which reads the settings).
//!
//! Why bubblewrap (docs/decisions.md): it gives the three things the issue asks for in one
//! maintained program (Debian's `bubblewrap`, the mechanism of Claude Code and Flatpak):
//! confined writes, a PID namespace and a network namespace. Landlock (through the `landlock`
//! crate) confines writes without namespaces and costs less per command, but it hides no process
//! (`/proc/<pid>/cmdline` stays readable), filters TCP ports and not hosts, and leaves UDP,
//! abstract Unix sockets and raw sockets open; seccomp could close those but not filter hosts.

pub(crate) mod proxy;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::paths::Workspace;

/// Where bubblewrap is looked for, in order. Never through `PATH`: a folder a repository controls
/// (`node_modules/.bin`, `.`) could be on it.
pub const BWRAP_CANDIDATES: [&str; 3] = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];

/// Where the proxy's socket appears inside the sandbox (bwrap's own `/dev`, where a mount point
/// can be made).
pub(crate) const PROXY_SOCKET_INSIDE: &str = "/dev/claude-context-proxy";

/// How Bash commands are confined; part of [`super::BashConfig`]. Plain data: the session fills
/// it from the settings (`session/sandbox.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Commands run in the sandbox (the default on Linux; elsewhere there is none yet).
    pub enabled: bool,
    /// The bubblewrap program; `None` when none was found.
    pub bwrap: Option<PathBuf>,
    /// Folders a command may write besides the workspace folders and allowed directories
    /// (`sandbox.filesystem.allowWrite`, user or managed settings).
    pub allow_write: Vec<PathBuf>,
    /// Files and folders hidden from commands (credential stores; `sandbox.filesystem.denyRead`).
    pub deny_read: Vec<PathBuf>,
    /// Hosts a command may reach through the proxy (`sandbox.network.allowedDomains`, user or
    /// managed settings): `example.com`, `*.example.com` (its subdomains), `*` (any). Empty: no
    /// network at all.
    pub allowed_domains: Vec<String>,
    /// Commands that run outside the sandbox (`sandbox.excludedCommands`, user or managed
    /// settings), still judged by the permission rules and asked for unless one allows it:
    /// `docker`, `docker compose *`.
    pub excluded_commands: Vec<String>,
    /// The user's runtime folder (`/run/user/<uid>`), masked.
    pub runtime_dir: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            enabled: cfg!(target_os = "linux"),
            bwrap: find_bwrap(),
            allow_write: Vec::new(),
            deny_read: Vec::new(),
            allowed_domains: Vec::new(),
            excluded_commands: Vec::new(),
            runtime_dir: None,
        }
    }
}

/// The first of [`BWRAP_CANDIDATES`] that exists.
pub fn find_bwrap() -> Option<PathBuf> {
    BWRAP_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Is `command` one of the excluded commands? Only a plain command counts (no `;`, `&`, `|`,
/// redirection, substitution, subshell or newline: `docker ps; curl evil` must not pass as
/// `docker`); it matches a pattern when its words start with the pattern's (`docker`,
/// `docker *` and `docker:*` all match `docker ps`).
pub fn excluded(patterns: &[String], command: &str) -> bool {
    let command = command.trim();
    if command.is_empty()
        || command.contains([
            ';', '&', '|', '`', '$', '<', '>', '(', ')', '{', '}', '\n', '\r', '\\',
        ])
    {
        return false;
    }
    let Some(words) = shlex::split(command) else {
        return false;
    };
    patterns.iter().any(|p| {
        let p = p.trim();
        let p = p
            .strip_suffix(":*")
            .or_else(|| p.strip_suffix(" *"))
            .unwrap_or(p);
        match shlex::split(p) {
            Some(pw) if !pw.is_empty() => words.len() >= pw.len() && words[..pw.len()] == pw[..],
            _ => false,
        }
    })
}

/// How one command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Inside the sandbox.
    Sandboxed,
    /// Outside it: turned off, an excluded command, or allowed by the user where it cannot run.
    Plain,
}

/// The per-session state: the private temporary folder, the proxy, whether the user allowed
/// commands without the sandbox. Bash's and the session's hooks' (one answer for both).
#[derive(Default)]
pub struct Runtime {
    /// The user allowed running without the sandbox for the rest of the session.
    unsandboxed_allowed: AtomicBool,
    /// The session's private `/tmp`, made at its first sandboxed command.
    tmp: Mutex<Option<tempfile::TempDir>>,
    /// The network proxy, started at the first command that may use it.
    proxy: tokio::sync::Mutex<Option<proxy::Proxy>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field(
                "unsandboxed_allowed",
                &self.unsandboxed_allowed.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// The private `/tmp` of the session (made now if needed).
    fn tmp(&self) -> std::io::Result<PathBuf> {
        let mut t = super::lock(&self.tmp);
        if let Some(t) = t.as_ref() {
            return Ok(t.path().to_path_buf());
        }
        sweep(TMP_PREFIX);
        let dir = tempfile::Builder::new()
            .prefix(&own_prefix(TMP_PREFIX))
            .tempdir()?;
        let path = std::fs::canonicalize(dir.path())?;
        *t = Some(dir);
        Ok(path)
    }

    /// The proxy's socket (on this side), starting the proxy at the first call.
    async fn proxy_socket(&self, domains: &[String]) -> std::io::Result<PathBuf> {
        let mut p = self.proxy.lock().await;
        if let Some(p) = p.as_ref() {
            return Ok(p.socket().to_path_buf());
        }
        let started = proxy::Proxy::start(domains.to_vec())?;
        let socket = started.socket().to_path_buf();
        *p = Some(started);
        Ok(socket)
    }
}

/// The names of a session's private `/tmp` and of the proxy's folder in the system's temporary
/// folder: `<prefix><pid>-<random>`.
pub(crate) const TMP_PREFIX: &str = "claude-context-sandbox-";
pub(crate) const NET_PREFIX: &str = "claude-context-net-";

/// `<prefix><this process's id>-`.
pub(crate) fn own_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

/// Removes the folders named `<prefix><pid>-…` of processes that are gone (a server killed, or
/// one that exited without dropping its sessions), the user's own only. A pid in use again keeps
/// its folder until it ends too: never another live process's.
pub(crate) fn sweep(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = rustix::process::getuid();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let alive = rustix::process::Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        let ours = e.metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == me.as_raw()
        });
        if !alive && ours {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Has `bwrap` been seen to work here? The answer per program, for the life of the process: the
/// kernel and the program do not change under a running session.
static PROBED: Mutex<Option<HashMap<PathBuf, Result<(), String>>>> = Mutex::new(None);

/// The longest a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Can `bwrap` make the sandbox here? `Err` says why not, in the user's words.
pub async fn probe(bwrap: &Path) -> Result<(), String> {
    if let Some(r) = super::lock(&PROBED)
        .get_or_insert_with(HashMap::new)
        .get(bwrap)
    {
        return r.clone();
    }
    let r = run_probe(bwrap).await;
    super::lock(&PROBED)
        .get_or_insert_with(HashMap::new)
        .insert(bwrap.to_path_buf(), r.clone());
    r
}

async fn run_probe(bwrap: &Path) -> Result<(), String> {
    #[allow(clippy::disallowed_methods)]
    // reason: the sandbox's probe runs bubblewrap itself, once per process (clippy.toml).
    let mut cmd = tokio::process::Command::new(bwrap);
    cmd.args([
        "--new-session",
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--",
        "/bin/sh",
        "-c",
        "exit 0",
    ])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .kill_on_drop(true);
    let out = match tokio::time::timeout(PROBE_TIMEOUT, cmd.output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(format!("{} could not be started: {e}", bwrap.display())),
        Err(_) => {
            return Err(format!(
                "{} did not answer within {} s",
                bwrap.display(),
                PROBE_TIMEOUT.as_secs()
            ));
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let err: String = err.trim().chars().take(300).collect();
    Err(if err.is_empty() {
        format!("{} failed ({})", bwrap.display(), out.status)
    } else {
        format!("{} failed: {err}", bwrap.display())
    })
}

/// How `command` runs when no question is needed: `Err` says why the sandbox cannot run here
/// and the user has not (yet) allowed commands without it.
async fn settled(cfg: &SandboxConfig, rt: &Runtime, command: &str) -> Result<Mode, String> {
    if !cfg.enabled || excluded(&cfg.excluded_commands, command) {
        return Ok(Mode::Plain);
    }
    let why = match &cfg.bwrap {
        Some(b) => match probe(b).await {
            Ok(()) => return Ok(Mode::Sandboxed),
            Err(e) => e,
        },
        None => format!(
            "bubblewrap is not installed (looked for {}; Debian and Ubuntu: apt install bubblewrap)",
            BWRAP_CANDIDATES.join(", ")
        ),
    };
    if rt.unsandboxed_allowed.load(Ordering::Relaxed) {
        return Ok(Mode::Plain);
    }
    Err(why)
}

/// Decides how `command` runs (see the module doc): sandboxed when it can; otherwise only when
/// the user allows it (a setting, or the answer to the one question asked through `ctx`). `Err`
/// is the outcome for the model when it must not run.
pub(crate) async fn decide(
    ctx: &super::Ctx<'_>,
    command: &str,
) -> Result<Mode, super::ToolOutcome> {
    let rt = ctx.sandbox();
    let why = match settled(&ctx.bash_config().sandbox, rt, command).await {
        Ok(m) => return Ok(m),
        Err(why) => why,
    };
    let summary = format!("Commands cannot run in a sandbox here: {why}.");
    // The user chose never to be asked (dontAsk): what would need an answer is refused, this
    // question included; nothing runs outside the sandbox unasked.
    if ctx.tools.config.policy.mode() == crate::permissions::Mode::DontAsk {
        return Err(super::ToolOutcome::refused(
            format!(
                "Not run: {summary} Running a command without it needs the user's answer, and \
                 the session is in don't ask mode. Do not retry; tell the user what you wanted \
                 to run."
            ),
            "not run: no sandbox",
        ));
    }
    let request = super::PermissionRequest {
        tool: "Bash".to_string(),
        input: serde_json::json!({ "command": command }),
        summary: summary.clone(),
        session_scope: Some("commands without a sandbox for this session".to_string()),
        warning: Some(
            "Without the sandbox a command can write anywhere you can, see your other programs \
             (and the environment of the editor, where your API key is) and use the network. \
             To stop being asked, install bubblewrap, or set \"sandbox\": {\"enabled\": false} in \
             ~/.claude/settings.json."
                .to_string(),
        ),
        reason: None,
        choices: Some(super::Choices {
            allow: "Run this command without a sandbox".to_string(),
            allow_session: Some("Run commands without a sandbox for this session".to_string()),
            deny: "Do not run it".to_string(),
        }),
        tool_use_id: ctx.tool_use_id(),
    };
    match ctx.ask(request).await {
        super::Decision::Allow => Ok(Mode::Plain),
        super::Decision::AllowSession => {
            rt.unsandboxed_allowed.store(true, Ordering::Relaxed);
            Ok(Mode::Plain)
        }
        // A "no" to this question is a rejection like any other prompt's: the turn stops after
        // this answer's results, and the model waits for the user.
        super::Decision::Deny => Err(super::ToolOutcome {
            stop: true,
            ..super::ToolOutcome::refused(
                format!(
                    "Not run: {summary} The user did not allow running commands without it. STOP \
                     what you are doing and wait for the user to tell you how to proceed."
                ),
                "not run: no sandbox",
            )
        }),
    }
}

/// How a command nobody is asked about runs (a hook's: `hooks/run.rs`): under the rules of
/// [`decide`], without its question. Sandboxed when the sandbox can run; outside it when it is
/// turned off (user or managed settings), the command is one of the excluded commands, or the
/// user already allowed commands without it for the session (their answer to Bash's question).
/// Otherwise `Err`, in the user's words: the command does not run (a hook cannot stop to ask,
/// and nothing runs outside the sandbox unasked).
pub(crate) async fn unattended(
    cfg: &SandboxConfig,
    rt: &Runtime,
    command: &str,
) -> Result<Mode, String> {
    settled(cfg, rt, command).await.map_err(|why| {
        format!(
            "not run: commands cannot run in a sandbox here ({why}), and running them without \
             it has not been allowed for this session (answer \"Run commands without a sandbox \
             for this session\" when a Bash command asks, install bubblewrap, or set \
             \"sandbox\": {{\"enabled\": false}} in ~/.claude/settings.json)"
        )
    })
}

/// What the reaper is told, and the program that runs a sandboxed command.
pub(crate) struct Plan {
    /// bwrap's arguments up to and including `--`.
    pub args: Vec<OsString>,
    /// The proxy's socket as the reaper sees it, when the network goes through it.
    pub proxy: Option<PathBuf>,
    /// The reaper's program by its real path, bound where it is; `None`: none can run inside.
    pub reaper: Option<PathBuf>,
}

/// The bubblewrap arguments for a command of this session working in `cwd` (see the module
/// doc), up to `--`; `reaper` is bound read-only where it is, so it can run inside.
pub(crate) async fn plan(
    cfg: &SandboxConfig,
    ws: &Workspace,
    rt: &Runtime,
    cwd: &Path,
    reaper: Option<&Path>,
) -> std::io::Result<Plan> {
    let tmp = rt.tmp()?;
    let socket = if cfg.allowed_domains.is_empty() {
        None
    } else {
        Some(rt.proxy_socket(&cfg.allowed_domains).await?)
    };
    let mut a = Args::default();
    a.flags(&[
        "--new-session",
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
    ]);
    a.pair("--ro-bind", "/", "/");
    a.one("--dev", "/dev");
    a.one("--proc", "/proc");
    a.pair("--bind", &tmp, "/tmp");
    if std::fs::symlink_metadata("/var/tmp").is_ok_and(|m| m.is_dir()) {
        a.one("--tmpfs", "/var/tmp");
    }
    let writable: Vec<&PathBuf> = ws
        .roots()
        .iter()
        .chain(ws.allowed())
        .chain(&cfg.allow_write)
        .collect();
    for w in &writable {
        if w.is_dir() {
            a.pair("--bind", w, w);
        }
    }
    // The git directories the folders' repositories use outside them (a linked worktree's, its
    // common directory): writable, so that `git commit` works in a worktree, but for what in them
    // runs code.
    for g in ws.git_dirs() {
        if g.is_dir() {
            a.pair("--bind", g, g);
        }
    }
    for w in &writable {
        for p in super::sensitive::guarded_in(w) {
            a.pair("--ro-bind", &p, &p);
        }
    }
    for g in ws.git_dirs() {
        for p in super::sensitive::guarded_in_git_dir(g) {
            a.pair("--ro-bind", &p, &p);
        }
    }
    // Hidden after the writable folders, so that none binds them back: the credential stores,
    // and the sockets that would let a command act outside (the session bus and agents in the
    // user's runtime folder, docker's daemon).
    if let Some(run) = &cfg.runtime_dir
        && run.is_dir()
    {
        a.one("--tmpfs", run);
    }
    for sock in ["/run/docker.sock", "/var/run/docker.sock"] {
        if let Ok(real) = std::fs::canonicalize(sock) {
            a.pair("--ro-bind", "/dev/null", &real);
        }
    }
    for hidden in &cfg.deny_read {
        // A folder that holds a workspace folder is not hidden over it (the command must work
        // there); what else it holds stays readable.
        if writable.iter().any(|w| w.starts_with(hidden)) {
            continue;
        }
        hide(&mut a, hidden);
    }
    // The reaper by its real path (`/proc/self/exe` would be bwrap's inside); without one (the
    // binary was replaced since it started), the PID namespace alone ends what the command left.
    let reaper = reaper
        .and_then(|r| std::fs::canonicalize(r).ok())
        .filter(|r| r.is_file());
    if let Some(r) = &reaper {
        a.pair("--ro-bind", r, r);
    }
    if let Some(s) = &socket {
        a.pair("--ro-bind", s, PROXY_SOCKET_INSIDE);
    }
    a.one("--chdir", cwd);
    a.flags(&["--"]);
    Ok(Plan {
        args: a.0,
        proxy: socket.map(|_| PathBuf::from(PROXY_SOCKET_INSIDE)),
        reaper,
    })
}

/// Hides `path` (when it exists): an empty folder over a folder, `/dev/null` over a file.
fn hide(a: &mut Args, path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            a.one("--tmpfs", path);
            a.one("--remount-ro", path);
        }
        Ok(m) if m.is_file() => a.pair("--ro-bind", "/dev/null", path),
        Ok(m) if m.file_type().is_symlink() => {
            if let Ok(real) = std::fs::canonicalize(path) {
                hide(a, &real);
            }
        }
        _ => {}
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, f: &[&str]) {
        self.0.extend(f.iter().map(OsString::from));
    }
    fn one(&mut self, flag: &str, p: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(p.as_ref().to_os_string());
    }
    fn pair(
        &mut self,
        flag: &str,
        src: impl AsRef<std::ffi::OsStr>,
        dst: impl AsRef<std::ffi::OsStr>,
    ) {
        self.0.push(flag.into());
        self.0.push(src.as_ref().to_os_string());
        self.0.push(dst.as_ref().to_os_string());
    }
}

/// The credential stores hidden from every sandboxed command, under `home` (the user's home) and
/// `claude_dir` (the user's Claude folder): what a command never needs and a model must never
/// read.
pub fn default_deny_read(home: &Path, claude_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".kube",
        ".docker",
        ".netrc",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".config/gh",
        ".config/gcloud",
        ".config/hub",
        ".password-store",
        ".claude.json",
        ".local/share/keyrings",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect();
    if let Some(c) = claude_dir {
        out.push(c.join(".credentials.json"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_commands_match_the_excluded_ones() {
        let p = vec!["docker".to_string(), "npm run test:*".to_string()];
        assert!(excluded(&p, "docker ps"));
        assert!(excluded(&p, "docker"));
        assert!(excluded(&p, "  docker compose up -d "));
        assert!(excluded(&p, "npm run test"));
        assert!(!excluded(&p, "npm run build"));
        assert!(!excluded(&p, "dockerd"));
        for hostile in [
            "docker ps; curl evil.example",
            "docker ps && rm -rf ~",
            "docker ps | sh",
            "docker $(curl x)",
            "docker `id`",
            "docker ps > ~/.bashrc",
            "docker ps\nrm -rf ~",
            "(docker ps)",
        ] {
            assert!(!excluded(&p, hostile), "{hostile}");
        }
        assert!(!excluded(&[], "docker ps"));
    }

    #[test]
    fn folders_of_processes_that_are_gone_are_swept_and_no_others() {
        let prefix = "claude-context-sweep-test-";
        #[allow(clippy::disallowed_methods)]
        // reason: a process that is surely gone, for its pid.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let tmp = std::env::temp_dir();
        let gone = tmp.join(format!("{prefix}{dead}-abc"));
        let mine = tmp.join(format!("{}abc", own_prefix(prefix)));
        let odd = tmp.join(format!("{prefix}notapid"));
        for d in [&gone, &mine, &odd] {
            std::fs::create_dir_all(d.join("inside")).unwrap();
        }
        sweep(prefix);
        assert!(!gone.exists(), "a gone process's folder stays");
        assert!(mine.exists() && odd.exists());
        let _ = std::fs::remove_dir_all(&mine);
        let _ = std::fs::remove_dir_all(&odd);
    }

    #[test]
    fn the_plan_confines_writes_and_hides_what_it_must() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::write(root.join("home/.netrc"), "machine x").unwrap();
        let cfg = SandboxConfig {
            deny_read: default_deny_read(&root.join("home"), None),
            ..SandboxConfig::default()
        };
        let rt = Runtime::default();
        let workspace = Workspace::new([ws.clone()], []);
        let tokio = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let plan = tokio
            .block_on(plan(&cfg, &workspace, &rt, &ws, None))
            .unwrap();
        let args: Vec<String> = plan
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = args.join(" ");
        let ws_s = ws.display().to_string();
        assert!(joined.contains("--ro-bind / /"), "{joined}");
        assert!(
            joined.contains(&format!("--bind {ws_s} {ws_s}")),
            "{joined}"
        );
        assert!(
            joined.contains(&format!("--ro-bind {ws_s}/.git/config {ws_s}/.git/config")),
            "{joined}"
        );
        assert!(
            joined.contains(&format!("--ro-bind {ws_s}/.git/hooks {ws_s}/.git/hooks")),
            "{joined}"
        );
        assert!(
            joined.contains(&format!("--tmpfs {}/home/.ssh", root.display())),
            "{joined}"
        );
        assert!(
            joined.contains(&format!(
                "--ro-bind /dev/null {}/home/.netrc",
                root.display()
            )),
            "{joined}"
        );
        assert!(joined.contains("--unshare-pid") && joined.contains("--unshare-net"));
        assert_eq!(args.last().unwrap(), "--");
        assert!(plan.proxy.is_none());
        // The writable folder comes after the read-only root, the guarded files after it.
        let at = |s: &str| joined.find(s).unwrap();
        assert!(at("--ro-bind / /") < at(&format!("--bind {ws_s}")));
        assert!(at(&format!("--bind {ws_s}")) < at(&format!("{ws_s}/.git/config")));
    }
}
