//! `claude-context preview`: the context of a new session, as a table or as JSON. The preview
//! is [`crate::features::start_preview`]'s; this file parses paths and renders it.

use std::path::{Path, PathBuf};

use super::display_path;
use super::output::{out, thousands};
use super::{escape_text, quote_name};
use crate::features::diagnostics::Severity;
use crate::features::format::quoted;
use crate::features::preview::Preview;
use crate::features::start_preview;
use crate::features::warm::{self, Answer};
use crate::fs::{Fs, RealFs};
use crate::host::Host;

#[derive(Clone, Debug, Default)]
pub struct Args {
    pub cwd: Option<PathBuf>,
    pub files: Vec<PathBuf>,
    pub add_dirs: Vec<PathBuf>,
    pub json: bool,
    pub model: Option<String>,
    pub window: Option<u64>,
    pub memory_dir: Option<String>,
    pub no_git: bool,
    /// Start the approved MCP servers to list their tools (and remember the lists), instead of
    /// using what the last connection listed.
    pub mcp_connect: bool,
    /// Run the SessionStart and UserPromptSubmit hooks once (a trusted folder only) and show
    /// their texts.
    pub run_hooks: bool,
    /// The prompt UserPromptSubmit hooks get with `run_hooks` (default: empty).
    pub prompt: Option<String>,
    /// `--allowed-tools`, `--disallowed-tools`, `--permission-mode`: shown with the settings'.
    pub permissions: crate::session::permissions::Options,
    /// Never ask a running server (`cli/warm.rs`): compute here.
    pub cold: bool,
}

/// Builds the preview ([`start_preview::compute`]) of a session in `--cwd`.
pub fn compute(host: &Host, args: &Args) -> Result<Preview, String> {
    let cwd = host.abs(args.cwd.as_deref().unwrap_or(Path::new(".")));
    if let Some(why) = crate::fs::folder_problem(&cwd) {
        return Err(format!("--cwd {} {why}", quote_name(cwd.as_os_str())));
    }
    // Touched paths through a link to cwd count as under it only when `PWD` names that link.
    let cwd = host.session_dir(&RealFs, &cwd);
    let add_dirs: Vec<PathBuf> = args.add_dirs.iter().map(|d| host.abs(d)).collect();
    let touched: Vec<PathBuf> = args.files.iter().map(|f| host.abs(f)).collect();
    let req = start_preview::Request {
        cwd: &cwd,
        files: &touched,
        add_dirs: &add_dirs,
        model: args.model.as_deref(),
        window: args.window,
        memory_dir: args.memory_dir.as_deref(),
        no_git: args.no_git,
        mcp_connect: args.mcp_connect,
        run_hooks: args
            .run_hooks
            .then(|| args.prompt.as_deref().unwrap_or_default()),
        permissions: &args.permissions,
    };
    // A running server answers from what it keeps current; starting MCP servers or running
    // hooks is never asked of it, nor a preview with the command line's own permission rules or
    // mode (the server computes with none).
    let own_permissions = !args.permissions.command_line.is_empty()
        || args.permissions.mode.is_some()
        || args.permissions.trusted.is_some();
    if !args.cold
        && host.plugin_dirs.is_empty()
        && !args.mcp_connect
        && !args.run_hooks
        && !own_permissions
        && let Some(ask) = warm::preview_request(host, &req)
        && let Some(Answer::Preview { preview }) = super::warm::ask(
            host,
            &RealFs.canonicalize(&cwd).unwrap_or_else(|_| cwd.clone()),
            &ask,
        )
    {
        return Ok(*preview);
    }
    start_preview::compute(host, &req)
}

pub fn run(host: &Host, args: &Args) -> Result<i32, String> {
    let p = compute(host, args)?;
    if args.json {
        let mut text = serde_json::to_string_pretty(&p).map_err(|e| e.to_string())?;
        text.push('\n');
        out(&text);
    } else {
        out(&render_table(&p, host.home.as_deref()));
    }
    Ok(0)
}

/// The human table of `ux.md`.
pub fn render_table(p: &Preview, home: Option<&Path>) -> String {
    let base = p.cwd.as_path();
    let mut s = String::new();
    let cwd_shown = match home.and_then(|h| p.cwd.strip_prefix(h).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => {
            let mut shown = std::ffi::OsString::from("~/");
            shown.push(rel.as_os_str());
            quote_name(&shown).into_owned()
        }
        _ => quote_name(p.cwd.as_os_str()).into_owned(),
    };
    let git = match &p.git {
        Some(g) => format!("  (git: {}, {} changed)", escape_text(&g.branch), g.changed),
        None => "  (not a git repository)".to_string(),
    };
    s.push_str(&format!(
        "Context for a new session in {cwd_shown}{git}\n\n"
    ));
    if p.files.is_empty() {
        s.push_str("  No instruction files found (CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md, MEMORY.md).\n");
    } else {
        let rows: Vec<(String, String, String, String, String)> = p
            .files
            .iter()
            .map(|f| {
                let tokens = match f.status.as_str() {
                    "skipped" | "empty" | "excluded" => "—".to_string(),
                    _ => thousands(f.tokens),
                };
                let indent = "  ".repeat(f.depth as usize);
                let mark = if f.depth > 0 { "└ " } else { "" };
                let file = format!("{indent}{mark}{}", display_path(&f.path, base, home));
                let site = f.included_from.as_deref().map(|site| {
                    let (path, line) = site.rsplit_once(':').unwrap_or((site, ""));
                    format!("{}:{line}", display_path(Path::new(path), base, home))
                });
                let note = match (f.status.as_str(), &f.reason, site) {
                    ("excluded", _, site) if f.excluded_by.is_some() => {
                        let ex = f.excluded_by.as_ref().expect("checked");
                        let site = site.map(|s| format!(" ({s})")).unwrap_or_default();
                        format!(
                            "excluded by {} ({}){site}",
                            quoted(&ex.pattern),
                            display_path(&ex.settings, base, home)
                        )
                    }
                    ("loaded", None, Some(site)) => format!("(included from {site})"),
                    (_, Some(r), Some(site)) => format!("{} ({site})", escape_text(r)),
                    (_, Some(r), None) => escape_text(r).into_owned(),
                    _ => String::new(),
                };
                (f.scope.clone(), f.status.clone(), tokens, file, note)
            })
            .collect();
        let file_w = rows
            .iter()
            .map(|r| r.3.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        s.push_str(&format!(
            "  {:<9} {:<9} {:>6}  file\n",
            "scope", "status", "tokens"
        ));
        for (scope, status, tokens, file, note) in rows {
            if note.is_empty() {
                s.push_str(&format!("  {scope:<9} {status:<9} {tokens:>6}  {file}\n"));
            } else if file.chars().count() + note.chars().count() > 100 {
                s.push_str(&format!("  {scope:<9} {status:<9} {tokens:>6}  {file}\n"));
                s.push_str(&format!("  {:<9} {:<9} {:>6}     {note}\n", "", "", ""));
            } else {
                s.push_str(&format!(
                    "  {scope:<9} {status:<9} {tokens:>6}  {file:<file_w$}  {note}\n"
                ));
            }
        }
    }
    if !p.settings.is_empty() {
        s.push_str("\n  settings read\n");
        let rows: Vec<(String, String)> = p
            .settings
            .iter()
            .map(|f| {
                let note = if !f.valid {
                    "not valid JSON: none of its keys apply".to_string()
                } else if f.keys.is_empty() {
                    "nothing that changes what is loaded".to_string()
                } else {
                    f.keys.join(", ")
                };
                let note = if f.repository && f.scope == "local" {
                    format!("{note}; tracked by git: the repository's file")
                } else {
                    note
                };
                (
                    format!("{:<9} {}", f.scope, display_path(&f.path, base, home)),
                    note,
                )
            })
            .collect();
        let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        for (file, note) in rows {
            s.push_str(&format!("  {file:<w$}  {note}\n"));
        }
    }
    if let Some(t) = &p.trust
        && (t.state != crate::features::preview::TrustState::NeverAsked || !t.held.is_empty())
    {
        s.push('\n');
        s.push_str(&super::trust::render(t, home));
    }
    render_skills(&mut s, p, base, home);
    render_style(&mut s, p, base, home);
    render_plugins(&mut s, p, base, home);
    render_agents(&mut s, p, base, home);
    render_mcp(&mut s, p, base, home);
    render_hooks(&mut s, p, base, home);
    render_permissions(&mut s, p, base, home);
    let t = &p.totals;
    let parts: Vec<String> = [("skills", t.skills), ("agents", t.agents), ("MCP", t.mcp)]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{what} {}", thousands(*n)))
        .collect();
    let of_which = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    s.push_str(&format!(
        "\n  system prompt {} tokens{of_which}   tools {} tokens   instructions block {} tokens   git block {} tokens   attachments {} tokens{}\n",
        thousands(t.system),
        thousands(t.tools),
        thousands(t.instructions),
        thousands(t.git),
        thousands(t.attachments),
        if t.hooks > 0 {
            format!("   hooks (one run) {} tokens", thousands(t.hooks))
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  total ≈ {} tokens of {} ({:.1}%); auto-compaction at {}\n",
        thousands(t.tokens),
        thousands(t.window),
        t.percent,
        thousands(t.auto_compact_threshold)
    ));
    let problems = p
        .findings
        .iter()
        .filter(|f| f.severity <= Severity::Warning)
        .count();
    if problems > 0 {
        s.push_str(&format!(
            "\n  {problems} problem{} found; run `claude-context check` for details\n",
            if problems == 1 { "" } else { "s" }
        ));
    }
    s
}

/// The permissions section of the table: the mode and where it came from, the rules with the
/// file and line of each, the additional directories, and what was ignored.
fn render_permissions(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    use crate::session::permissions::ModeSource;
    let Some(v) = &p.permissions else { return };
    let at = |f: &Option<String>, line: Option<usize>, origin: &str| match f {
        Some(f) => {
            let shown = display_path(Path::new(f), base, home);
            match line {
                Some(l) => format!("{shown}:{l}"),
                None => shown,
            }
        }
        None => origin.to_string(),
    };
    let from = match &v.mode_source {
        ModeSource::Default => "no setting".to_string(),
        ModeSource::Settings(src) => format!(
            "permissions.defaultMode in {}",
            at(
                &src.file.as_ref().map(|f| f.display().to_string()),
                src.line.map(|l| l + 1),
                src.origin.label()
            )
        ),
        ModeSource::CommandLine => "--permission-mode".to_string(),
        ModeSource::Session => "switched in the session".to_string(),
    };
    s.push_str(&format!(
        "\n  permissions: mode {} ({from}); folder {}{}\n",
        v.mode.id(),
        if v.trusted { "trusted" } else { "not trusted" },
        if v.managed_only {
            "; managed rules only"
        } else {
            ""
        }
    ));
    if !v.rules.is_empty() {
        s.push_str(&format!("  {:<6} {:<40} from\n", "kind", "rule"));
        for r in &v.rules {
            let rule = escape_text(&r.rule);
            let note = if r.inert { "  (matches nothing)" } else { "" };
            s.push_str(&format!(
                "  {:<6} {:<40} {}{note}\n",
                r.kind.label(),
                rule,
                at(&r.source.file, r.source.line, r.source.origin.label())
            ));
        }
    }
    for d in &v.additional_directories {
        s.push_str(&format!(
            "  additional working directory {} ({})\n",
            display_path(Path::new(&d.path), base, home),
            at(&d.source.file, d.source.line, d.source.origin.label())
        ));
    }
    for n in &v.notices {
        s.push_str(&format!("  note: {}\n", escape_text(&n.message)));
    }
}

/// The output style: the active one and what it costs, or why the setting gives the default.
fn render_style(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    let Some(st) = &p.style else { return };
    let set = match (&st.setting, &st.setting_path) {
        (Some(v), Some(f)) => format!(
            " (outputStyle \"{}\" in {})",
            escape_text(v),
            display_path(f, base, home)
        ),
        _ => String::new(),
    };
    if st.source.is_none() {
        if st.unknown {
            s.push_str(&format!(
                "\n  output style: default{set}: no style has that name (names are case-sensitive), so nothing changes\n"
            ));
        }
        return;
    }
    let from = match &st.path {
        Some(f) => display_path(f, base, home),
        None => "built in".into(),
    };
    s.push_str(&format!(
        "\n  output style: {} ({from}){set}: {} tokens in the system prompt, {} after every tool result and prompt{}\n",
        escape_text(&st.name),
        thousands(st.tokens),
        thousands(st.reminder_tokens),
        if st.drops_coding_instructions {
            "; the coding instructions are left out (no keep-coding-instructions: true)"
        } else {
            ""
        }
    ));
}

/// The enabled plugins: what each adds, and what did not load.
fn render_plugins(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    let Some(pv) = &p.plugins else { return };
    s.push_str(&format!(
        "\n  plugins: {} enabled, {} tokens\n",
        pv.plugins.len(),
        thousands(pv.tokens)
    ));
    let names = |v: &[crate::features::preview::NamedCost]| {
        v.iter()
            .map(|n| format!("{} ({})", escape_text(&n.name), thousands(n.tokens)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for pl in &pv.plugins {
        s.push_str(&format!(
            "  {} {} tokens  {}\n",
            escape_text(&pl.id),
            thousands(pl.tokens),
            display_path(&pl.root, base, home)
        ));
        if !pl.skills.is_empty() {
            s.push_str(&format!("    skills: {}\n", names(&pl.skills)));
        }
        if !pl.servers.is_empty() {
            s.push_str(&format!("    MCP servers: {}\n", names(&pl.servers)));
        }
        for h in &pl.hooks {
            s.push_str(&format!(
                "    hook: {} (its output is unknown until it runs)\n",
                escape_text(h)
            ));
        }
        if !pl.styles.is_empty() {
            s.push_str(&format!("    output styles: {}\n", names(&pl.styles)));
        }
        for f in &pl.skipped {
            s.push_str(&format!(
                "    not read: {} links outside the plugin's folder\n",
                display_path(f, base, home)
            ));
        }
    }
    for n in &pv.not_loaded {
        s.push_str(&format!(
            "  {} not loaded: {}\n",
            escape_text(&n.id),
            escape_text(&n.reason)
        ));
    }
}

/// The agent types section of the table: the listing's cost, then each type (built-in ones
/// only counted, unless a file replaced one).
fn render_agents(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    use crate::features::preview::AgentView;
    let Some(a) = &p.agents else { return };
    let files: Vec<&AgentView> = a.agents.iter().filter(|x| x.path.is_some()).collect();
    let built_in = a.agents.len() - files.len();
    s.push_str(&format!(
        "\n  agents: listing {} tokens; {} built-in, {} from files\n",
        thousands(a.tokens),
        built_in,
        files.len()
    ));
    if files.is_empty() {
        return;
    }
    s.push_str(&format!("  {:<9} {:>6}  agent\n", "scope", "tokens"));
    for x in files {
        let scope = serde_json::to_value(x.scope)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let file = x
            .path
            .as_deref()
            .map(|f| display_path(f, base, home))
            .unwrap_or_default();
        s.push_str(&format!(
            "  {scope:<9} {:>6}  {}  {file}  tools: {}\n",
            thousands(x.tokens),
            escape_text(&x.name),
            escape_text(&x.tools),
        ));
    }
    for sh in &a.shadowed {
        if sh.file.is_none() {
            continue;
        }
        let file = sh
            .file
            .as_deref()
            .map(|f| display_path(f, base, home))
            .unwrap_or_default();
        s.push_str(&format!(
            "  {:<9} {:>6}  {}  {file}  (not listed: another agent has its name)\n",
            "shadowed",
            "—",
            escape_text(&sh.name),
        ));
    }
}

/// The skills section of the table.
fn render_skills(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    let Some(sk) = &p.skills else { return };
    if sk.skills.is_empty()
        && sk.shadowed.is_empty()
        && sk.skipped.is_empty()
        && sk.discovered.is_empty()
    {
        return;
    }
    let reduced = sk.skills.iter().filter(|x| x.listed == "reduced").count();
    s.push_str(&format!(
        "\n  skills: listing {} tokens; budget {} characters, {} used{}\n",
        thousands(sk.tokens),
        thousands(sk.budget),
        thousands(sk.width),
        if reduced > 0 {
            format!(", {reduced} cut to their names")
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  {:<9} {:<9} {:>6}  skill\n",
        "source", "listed", "tokens"
    ));
    for k in &sk.skills {
        let tokens = match k.listed.as_str() {
            "hidden" | "off" => "—".to_string(),
            _ => thousands(k.tokens),
        };
        let name = match &k.alias {
            Some(a) => format!("{} ({})", escape_text(&k.name), escape_text(a)),
            None => escape_text(&k.name).into_owned(),
        };
        let mut note = match k.listed.as_str() {
            "reduced" => "cut to its name by the budget".to_string(),
            "hidden" => "not listed: disable-model-invocation".to_string(),
            "off" => "not listed: skillOverrides".to_string(),
            "nameOnly" => "name only: skillOverrides".to_string(),
            _ => String::new(),
        };
        if !k.shell.is_empty() {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str(&format!(
                "runs shell commands when invoked (never by the preview): {}",
                k.shell
                    .iter()
                    .take(2)
                    .map(|c| format!("`{}`", escape_text(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let file = display_path(&k.path, base, home);
        s.push_str(&format!(
            "  {:<9} {:<9} {tokens:>6}  {name}  {file}{}\n",
            k.source,
            k.listed,
            if note.is_empty() {
                String::new()
            } else {
                format!("  ({note})")
            }
        ));
    }
    for x in &sk.shadowed {
        s.push_str(&format!(
            "  {:<9} {:<9} {:>6}  {}  {}  (hidden by {})\n",
            "",
            "shadowed",
            "—",
            escape_text(&x.name),
            display_path(&x.path, base, home),
            display_path(&x.by, base, home)
        ));
    }
    for x in &sk.skipped {
        s.push_str(&format!(
            "  {:<9} {:<9} {:>6}  {}  {}  (a link to {}, outside the workspace and your Claude folder: not read)\n",
            x.source,
            "skipped",
            "—",
            escape_text(&x.name),
            display_path(&x.path, base, home),
            display_path(&x.target, base, home)
        ));
    }
    for d in &sk.discovered {
        let names = d
            .text
            .lines()
            .filter(|l| l.starts_with("- ") && !l.contains(": "))
            .count();
        s.push_str(&format!(
            "  {:<9} {:<9} {:>6}  {names} skill{} below cwd, found by touching {}\n",
            "nested",
            "added",
            thousands(d.tokens),
            if names == 1 { "" } else { "s" },
            display_path(&d.trigger, base, home)
        ));
    }
}

/// The hooks section of the table: every hook, its command in full, where its text lands; and
/// one run's texts when asked for.
fn render_hooks(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    let Some(h) = &p.hooks else { return };
    let running = h.hooks.iter().filter(|x| x.status == "runs").count();
    s.push_str(&format!(
        "\n  hooks: {} configured, {running} run{}; never run by the preview{}\n",
        h.hooks.len(),
        if h.trusted {
            String::new()
        } else {
            " (this folder is not trusted: none runs until it is)".to_string()
        },
        if h.run.is_some() {
            " unless asked (below)"
        } else {
            ""
        }
    ));
    if !h.hooks.is_empty() {
        s.push_str(&format!(
            "  {:<18} {:<8} {:<10} {:<9} command\n",
            "event", "scope", "status", "matcher"
        ));
    }
    for x in &h.hooks {
        let matcher = match &x.matcher {
            None => "(all)".to_string(),
            Some(m) if m.is_empty() => "\"\"".to_string(),
            Some(m) => escape_text(m).into_owned(),
        };
        s.push_str(&format!(
            "  {:<18} {:<8} {:<10} {:<9} {}\n",
            x.event,
            x.scope,
            x.status,
            matcher,
            escape_text(&x.command)
        ));
        let mut line = format!(
            "from {}{}",
            display_path(&x.path, base, home),
            x.line.map(|l| format!(":{}", l + 1)).unwrap_or_default()
        );
        if let Some(t) = x.timeout {
            line.push_str(&format!("; timeout {t} s"));
        }
        if let Some(r) = &x.reason {
            line.push_str(&format!("; {}", escape_text(r)));
        } else {
            line.push_str(&format!("; lands in {}", escape_text(&x.lands)));
        }
        s.push_str(&format!("  {:<18} {line}\n", ""));
    }
    if let Some(run) = &h.run {
        s.push_str(&format!("\n  {}\n", escape_text(&run.note)));
        if let Some(b) = &run.blocked {
            s.push_str(&format!(
                "  the prompt would be blocked: {}\n",
                escape_text(b)
            ));
        }
        for t in &run.texts {
            s.push_str(&format!(
                "  {:<18} {:>6} tokens  {}\n",
                t.event,
                thousands(t.tokens),
                escape_text(&t.text)
            ));
        }
        for n in &run.notes {
            s.push_str(&format!("  note: {}\n", escape_text(n)));
        }
    }
}

/// The MCP section of the table.
fn render_mcp(s: &mut String, p: &Preview, base: &Path, home: Option<&Path>) {
    let Some(m) = &p.mcp else { return };
    if m.servers.is_empty() {
        return;
    }
    s.push_str(&format!(
        "\n  MCP servers: {} tokens now (tool names, notes, instructions); {} more once every definition is loaded\n",
        thousands(m.tokens),
        thousands(m.definition_tokens)
    ));
    s.push_str(&format!(
        "  {:<8} {:<13} {:>5} {:>6} {:>6} {:>6}  server\n",
        "scope", "status", "tools", "names", "instr", "defs"
    ));
    for v in &m.servers {
        let known = v.tools.is_some();
        let n = |x: u64| {
            if known {
                thousands(x)
            } else {
                "—".to_string()
            }
        };
        s.push_str(&format!(
            "  {:<8} {:<13} {:>5} {:>6} {:>6} {:>6}  {}  {}\n",
            v.scope,
            v.status,
            v.tools
                .as_ref()
                .map_or("—".to_string(), |t| t.len().to_string()),
            n(v.name_tokens),
            n(v.instructions_tokens),
            n(v.definition_tokens),
            escape_text(&v.name),
            display_path(&v.path, base, home),
        ));
        let mut why = escape_text(&v.reason).into_owned();
        if let Some(ms) = v.start_ms {
            why.push_str(&format!("; started in {ms} ms"));
        }
        s.push_str(&format!("  {:<8} {why}\n", ""));
        for note in &v.notes {
            s.push_str(&format!("  {:<8} {}\n", "", escape_text(note)));
        }
    }
}
