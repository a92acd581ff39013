//! Claude Code's plugins as they are installed (`../shared/spec/hooks-agents-styles.md` section
//! 12): which are enabled and the folder each is used from. Installing is Claude Code's job
//! (`claude plugin install`); this module reads what it wrote and never writes.
//!
//! **Enabled**: `enabledPlugins` (`{"<plugin>@<marketplace>": true}`) of the user's settings
//! files (user, an untracked local, managed), and of the repository's files (the project's
//! `.claude/settings.json`, a tracked `settings.local.json`) **only once the folder is trusted**
//! (measured p2/project_settings*); a later file's value wins. `--plugin-dir <folder>` enables a
//! folder for one session (its name from `.claude-plugin/plugin.json`, else the folder's).
//!
//! **Where from**: the marketplace is `<user dir>/plugins/known_marketplaces.json`'s entry or an
//! `extraKnownMarketplaces` entry of the same settings files. A directory marketplace's plugin is
//! used from its source folder (the `source` of its entry in
//! `<marketplace>/.claude-plugin/marketplace.json`, else `<marketplace>/plugins/<name>`), as
//! measured, not from the cache copy; any other plugin from its `installPath` in
//! `<user dir>/plugins/installed_plugins.json`. `CLAUDE_PLUGIN_DATA` is
//! `<user dir>/plugins/data/<plugin>-<marketplace>`.
//!
//! **Confined**: a plugin's source must stay inside its marketplace's folder, and its files
//! (skills, commands, styles, `.mcp.json`, `hooks/hooks.json`, agents) are read only when their
//! real path is inside the plugin's folder ([`outside`]); every JSON file is read up to
//! [`MAX_JSON_BYTES`], at most [`MAX_PLUGINS`] plugins.
//!
//! What a plugin adds is loaded by the owners of each kind: skills and commands by the skills
//! module (`<plugin>:<name>`), styles by the styles module, MCP servers by the MCP configuration
//! (`plugin:<plugin>:<server>`), hooks by the hooks' configuration ([`add_hooks`]), agents by the
//! agents loader from [`Plugin::agents_dir`].
//!
//! Pure but for [`Fs`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::context::{Context, Finding, Severity};
use crate::fs::Fs;

/// Bytes of one plugin record (`installed_plugins.json`, `marketplace.json`, …) read at most.
pub const MAX_JSON_BYTES: u64 = 1 << 20;
/// Plugins enabled at most in one session.
pub const MAX_PLUGINS: usize = 100;

/// Who enabled a plugin.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum EnabledBy {
    /// A settings file of the user's (user, an untracked local, managed): the user's choice.
    User,
    /// The repository's settings file (the folder is trusted): the repository's choice, so its
    /// MCP servers need the same approval as the project's `.mcp.json` servers.
    Repository,
    /// `--plugin-dir`.
    Flag,
}

/// One enabled plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plugin {
    /// The plugin's name: the prefix of everything it adds.
    pub name: String,
    /// `<plugin>@<marketplace>` (a `--plugin-dir` folder: `<plugin>@inline`).
    pub id: String,
    /// The folder it is used from (`CLAUDE_PLUGIN_ROOT`).
    pub root: PathBuf,
    /// `CLAUDE_PLUGIN_DATA`.
    pub data: Option<PathBuf>,
    pub enabled_by: EnabledBy,
    /// The settings file that enabled it (`None` for `--plugin-dir`).
    pub source: Option<PathBuf>,
    /// Its hooks, `<Event>: <command>` (for people: the preview).
    pub hooks: Vec<String>,
}

impl Plugin {
    /// `<root>/agents`: the agents loader reads `<plugin>:<name>` agents there.
    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }
    pub fn commands_dir(&self) -> PathBuf {
        self.root.join("commands")
    }
    pub fn styles_dir(&self) -> PathBuf {
        self.root.join("output-styles")
    }
    pub fn mcp_file(&self) -> PathBuf {
        self.root.join(".mcp.json")
    }
    pub fn hooks_file(&self) -> PathBuf {
        self.root.join("hooks").join("hooks.json")
    }

    /// `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` for its hooks and servers.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut out = vec![(
            "CLAUDE_PLUGIN_ROOT".to_string(),
            self.root.display().to_string(),
        )];
        if let Some(d) = &self.data {
            out.push(("CLAUDE_PLUGIN_DATA".into(), d.display().to_string()));
        }
        out
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}` replaced.
    pub fn substitute(&self, text: &str) -> String {
        let mut out = text.replace("${CLAUDE_PLUGIN_ROOT}", &self.root.display().to_string());
        if let Some(d) = &self.data {
            out = out.replace("${CLAUDE_PLUGIN_DATA}", &d.display().to_string());
        }
        out
    }
}

/// A plugin that is enabled but not loaded, and why.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct NotLoaded {
    pub id: String,
    pub reason: String,
}

/// The enabled plugins of a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plugins {
    /// In id order, `--plugin-dir` folders last.
    pub plugins: Vec<Plugin>,
    /// Enabled plugins not loaded: the repository's before trust, missing folders, links out.
    pub not_loaded: Vec<NotLoaded>,
    /// The records and settings read (an editor watches them).
    pub files: Vec<PathBuf>,
    pub findings: Vec<Finding>,
}

impl Plugins {
    /// `(name, root)` pairs, in order.
    pub fn roots(&self) -> Vec<(String, PathBuf)> {
        self.plugins
            .iter()
            .map(|p| (p.name.clone(), p.root.clone()))
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&Plugin> {
        self.plugins.iter().find(|p| p.name == name)
    }
}

/// The real path of `file` when it is outside `root`'s real path (a link out of the plugin's
/// folder): such a file is not read. `None` when it is inside, or does not exist.
pub fn outside(fs: &dyn Fs, file: &Path, root: &Path) -> Option<PathBuf> {
    let real = fs.canonicalize(file).ok()?;
    let root = fs.canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    (!real.starts_with(&root)).then_some(real)
}

/// A JSON object file read up to [`MAX_JSON_BYTES`]; `None` when missing or not an object (a
/// finding says so when it exists).
pub fn read_json(
    fs: &dyn Fs,
    path: &Path,
    findings: &mut Vec<Finding>,
) -> Option<Map<String, Value>> {
    let bytes = fs.read_bytes(path, MAX_JSON_BYTES + 1).ok()?;
    if bytes.len() as u64 > MAX_JSON_BYTES {
        findings.push(Finding::whole_file(
            path,
            Severity::Warning,
            "plugin-record-too-large",
            format!(
                "longer than {} bytes: not read",
                crate::context::message::thousands(MAX_JSON_BYTES)
            ),
        ));
        return None;
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Some(m),
        _ => {
            findings.push(Finding::whole_file(
                path,
                Severity::Warning,
                "plugin-record-invalid",
                "not a JSON object: Claude Code's plugin records cannot be read",
            ));
            None
        }
    }
}

/// What the settings files say: plugin id → (enabled, by whom, file); marketplace name → entry.
type Enabled = BTreeMap<String, (bool, EnabledBy, PathBuf)>;

/// The enabled plugins of a session in `ctx`, with `--plugin-dir` folders `plugin_dirs`.
pub fn enabled(fs: &dyn Fs, ctx: &Context) -> Plugins {
    let mut out = Plugins::default();
    let settings = ctx.settings();
    let trusted = settings.trust.trusted();
    let mut wanted: Enabled = BTreeMap::new();
    let mut extra: BTreeMap<String, Value> = BTreeMap::new();
    let mut held: Vec<(String, PathBuf)> = Vec::new();
    for f in settings.files.iter().filter(|f| f.valid) {
        let Some(json) = read_json(fs, &f.path, &mut Vec::new()) else {
            continue;
        };
        let repository = f.repository;
        let by = if repository {
            EnabledBy::Repository
        } else {
            EnabledBy::User
        };
        if let Some(Value::Object(map)) = json.get("enabledPlugins") {
            for (id, v) in map.iter().take(MAX_PLUGINS) {
                let on = v.as_bool().unwrap_or(false);
                if repository && !trusted {
                    if on {
                        held.push((id.clone(), f.path.clone()));
                    }
                    continue;
                }
                wanted.insert(id.clone(), (on, by.clone(), f.path.clone()));
            }
        }
        if let Some(Value::Object(map)) = json.get("extraKnownMarketplaces")
            && (!repository || trusted)
        {
            for (name, v) in map.iter().take(MAX_PLUGINS) {
                extra.insert(name.clone(), v.clone());
            }
        }
    }
    for (id, path) in held {
        if !wanted.contains_key(&id) {
            out.not_loaded.push(NotLoaded {
                id,
                reason: format!(
                    "enabled by the repository's {}: waits until you trust this folder",
                    path.display()
                ),
            });
        }
    }
    let plugins_dir = ctx.user_dir().map(|u| u.join("plugins"));
    let mut known = Map::new();
    let mut installed = Map::new();
    if let Some(dir) = &plugins_dir {
        let k = dir.join("known_marketplaces.json");
        let i = dir.join("installed_plugins.json");
        out.files.push(k.clone());
        out.files.push(i.clone());
        known = read_json(fs, &k, &mut out.findings).unwrap_or_default();
        installed = read_json(fs, &i, &mut out.findings)
            .and_then(|m| m.get("plugins").and_then(Value::as_object).cloned())
            .unwrap_or_default();
    }
    for (id, (on, by, source)) in wanted {
        if !on {
            continue;
        }
        if out.plugins.len() >= MAX_PLUGINS {
            out.not_loaded.push(NotLoaded {
                id,
                reason: format!("more than {MAX_PLUGINS} plugins are enabled: not loaded"),
            });
            continue;
        }
        let (name, mkt) = match id.rsplit_once('@') {
            Some((n, m)) if !n.is_empty() && !m.is_empty() => (n.to_string(), m.to_string()),
            _ => {
                out.not_loaded.push(NotLoaded {
                    id,
                    reason: "not of the form <plugin>@<marketplace>".into(),
                });
                continue;
            }
        };
        match locate(
            fs,
            &name,
            &mkt,
            &id,
            &known,
            &extra,
            &installed,
            &mut out.findings,
        ) {
            Ok(root) => out.plugins.push(Plugin {
                data: plugins_dir
                    .as_ref()
                    .map(|d| d.join("data").join(format!("{name}-{mkt}"))),
                name,
                id,
                root,
                enabled_by: by,
                source: Some(source),
                hooks: Vec::new(),
            }),
            Err(reason) => out.not_loaded.push(NotLoaded { id, reason }),
        }
    }
    for dir in ctx.plugin_dirs() {
        let root = fs.canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if !fs.is_dir(&root) {
            out.not_loaded.push(NotLoaded {
                id: dir.display().to_string(),
                reason: "--plugin-dir: not a folder".into(),
            });
            continue;
        }
        let manifest = root.join(".claude-plugin").join("plugin.json");
        let name = read_json(fs, &manifest, &mut out.findings)
            .and_then(|m| m.get("name").and_then(Value::as_str).map(str::to_string))
            .filter(|n| valid_name(n))
            .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "plugin".into());
        out.plugins.retain(|p| p.name != name);
        out.plugins.push(Plugin {
            data: plugins_dir
                .as_ref()
                .map(|d| d.join("data").join(format!("{name}-inline"))),
            id: format!("{name}@inline"),
            name,
            root,
            enabled_by: EnabledBy::Flag,
            source: None,
            hooks: Vec::new(),
        });
    }
    // Each plugin's hooks, for people.
    let paths = crate::hooks::config::Paths {
        project_dir: ctx.cwd.clone(),
        home: ctx.home().map(Path::to_path_buf),
    };
    for i in 0..out.plugins.len() {
        let one = Plugins {
            plugins: vec![out.plugins[i].clone()],
            ..Plugins::default()
        };
        let mut c = crate::hooks::Config::default();
        add_hooks(fs, &one, &mut c, &paths);
        out.plugins[i].hooks = c
            .entries
            .iter()
            .map(|e| format!("{}: {}", e.hook.event.name(), e.hook.command))
            .collect();
        out.findings.extend(c.findings);
    }
    out
}

/// A name that can prefix what a plugin adds: no path separators, no `:`.
fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 128 && !n.contains(['/', '\\', ':', '\0']) && n != "." && n != ".."
}

/// The folder plugin `name` of marketplace `mkt` is used from.
#[allow(clippy::too_many_arguments)]
fn locate(
    fs: &dyn Fs,
    name: &str,
    mkt: &str,
    id: &str,
    known: &Map<String, Value>,
    extra: &BTreeMap<String, Value>,
    installed: &Map<String, Value>,
    findings: &mut Vec<Finding>,
) -> Result<PathBuf, String> {
    if !valid_name(name) {
        return Err(format!(
            "\"{name}\" is not a plugin name Claude Code accepts"
        ));
    }
    let entry = known.get(mkt).or_else(|| extra.get(mkt));
    let directory = entry.and_then(|e| {
        let src = e.get("source")?;
        (src.get("source")?.as_str()? == "directory")
            .then(|| {
                src.get("path")
                    .and_then(Value::as_str)
                    .or_else(|| e.get("installLocation").and_then(Value::as_str))
            })
            .flatten()
            .map(PathBuf::from)
    });
    if let Some(loc) = directory.filter(|p| p.is_absolute()) {
        let loc_real = fs.canonicalize(&loc).unwrap_or(loc.clone());
        let manifest = loc.join(".claude-plugin").join("marketplace.json");
        let rel = read_json(fs, &manifest, findings).and_then(|m| {
            m.get("plugins")?
                .as_array()?
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(name))?
                .get("source")?
                .as_str()
                .map(str::to_string)
        });
        let root = match rel {
            Some(r) => crate::fs::normalize(&loc, Path::new(&r)),
            None => loc.join("plugins").join(name),
        };
        let real = fs.canonicalize(&root).unwrap_or(root.clone());
        if !real.starts_with(&loc_real) {
            return Err(format!(
                "its folder {} is outside its marketplace {}: not read",
                real.display(),
                loc.display()
            ));
        }
        if fs.is_dir(&real) {
            return Ok(real);
        }
        return Err(format!("its folder {} does not exist", root.display()));
    }
    let install = installed
        .get(id)
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|e| e.get("installPath"))
        .and_then(Value::as_str)
        .map(PathBuf::from);
    match install {
        Some(p) if p.is_absolute() && fs.is_dir(&p) => Ok(fs.canonicalize(&p).unwrap_or(p)),
        Some(p) => Err(format!("its install folder {} does not exist", p.display())),
        None => Err(format!(
            "not installed (no entry in installed_plugins.json) and marketplace \"{mkt}\" is not a local folder"
        )),
    }
}

/// Adds each plugin's `hooks/hooks.json` to `config` (`${CLAUDE_PLUGIN_ROOT}` replaced; a
/// file linked out of its plugin is not read).
pub fn add_hooks(
    fs: &dyn Fs,
    plugins: &Plugins,
    config: &mut crate::hooks::Config,
    paths: &crate::hooks::config::Paths,
) {
    for p in &plugins.plugins {
        let file = p.hooks_file();
        if outside(fs, &file, &p.root).is_some() {
            continue;
        }
        let Ok(bytes) = fs.read_bytes(&file, MAX_JSON_BYTES) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        config.add(
            fs,
            crate::hooks::config::Source::Plugin {
                name: p.name.clone(),
                root: p.root.clone(),
                data: p.data.clone(),
            },
            &file,
            &text,
            paths,
        );
    }
}

#[cfg(test)]
mod tests;
