//! Bash's sandbox settings: Claude Code's `sandbox` key of the settings files, read into the
//! tools' [`SandboxConfig`] (what the sandbox does is `tools/sandbox/`).
//!
//! Read from the four files the context reads (user `~/.claude/settings.json`, project
//! `.claude/settings.json`, local `.claude/settings.local.json`, managed `managed-settings.json`),
//! in its own small typed reader: the context's settings reader knows only the keys that change
//! what is loaded.
//!
//! Keys (Claude Code's names): `sandbox.enabled`, `sandbox.excludedCommands`,
//! `sandbox.network.allowedDomains` (with managed `sandbox.network.allowManagedDomainsOnly`),
//! `sandbox.filesystem.allowWrite` and `sandbox.filesystem.denyRead` (absolute paths, or `~/`).
//!
//! **The rule: a repository can tighten the sandbox, never loosen it.** The project and local
//! files are the repository's (a cloned repository ships them; `settings.local.json` is only
//! ignored by git by convention), so from them only what tightens applies: `enabled: true` and
//! `denyRead`. Turning the sandbox off, running commands outside it, opening the network and
//! writing more folders come only from the user's own file or the managed one (or from the
//! user's answer, when the sandbox cannot run: `tools/sandbox`). What a repository's file tried
//! to loosen is ignored, and each such key is named in a warning ([`Read::ignored`]). Managed
//! settings win over the user's; the default is on (Linux).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::settings::{
    LOCAL_SETTINGS_FILE, MANAGED_SETTINGS_FILE, SETTINGS_FILE, SettingsScope,
};
use crate::fs::Fs;
use crate::host::Host;
use crate::tools::SandboxConfig;

/// The `sandbox` keys of all files, with the rule applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// `None`: no file decided (the default holds).
    pub enabled: Option<bool>,
    pub excluded_commands: Vec<String>,
    pub allowed_domains: Vec<String>,
    pub allow_write: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    /// What a repository's file tried to loosen (or a value that is not of its type), in words.
    pub ignored: Vec<String>,
}

/// The settings files, lowest precedence first, for a session in `cwd`.
pub fn files(host: &Host, cwd: &Path) -> Vec<(SettingsScope, PathBuf)> {
    let mut out = Vec::new();
    if let Some(dir) = host.claude_dir() {
        out.push((SettingsScope::User, dir.join(SETTINGS_FILE)));
    }
    out.push((
        SettingsScope::Project,
        cwd.join(".claude").join(SETTINGS_FILE),
    ));
    out.push((
        SettingsScope::Local,
        cwd.join(".claude").join(LOCAL_SETTINGS_FILE),
    ));
    out.push((
        SettingsScope::Managed,
        host.managed_dir.join(MANAGED_SETTINGS_FILE),
    ));
    out
}

/// Reads the `sandbox` key of `files` (see the module doc). `home` expands `~/`.
pub fn read(fs: &dyn Fs, files: &[(SettingsScope, PathBuf)], home: Option<&Path>) -> Read {
    let mut out = Read::default();
    let mut user_enabled = None;
    let mut repo_enables = false;
    let mut managed_enabled = None;
    let mut managed_domains_only = false;
    let mut managed_domains = Vec::new();
    let mut seen: Vec<&PathBuf> = Vec::new();
    for (scope, path) in files {
        if seen.contains(&path) {
            continue;
        }
        seen.push(path);
        let Ok(text) = fs.read_text(path) else {
            continue;
        };
        let Ok(Value::Object(root)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let Some(sandbox) = root.get("sandbox") else {
            continue;
        };
        let trusted = matches!(scope, SettingsScope::User | SettingsScope::Managed);
        let where_ = path.display().to_string();
        let Value::Object(sandbox) = sandbox else {
            out.ignored
                .push(format!("{where_}: `sandbox` is not an object"));
            continue;
        };
        let mut ignore = |key: &str, why: &str| out.ignored.push(format!("{where_}: {key} {why}"));
        let repo = "is ignored: a repository's settings cannot loosen the sandbox (set it in ~/.claude/settings.json)";
        match sandbox.get("enabled") {
            None => {}
            Some(Value::Bool(b)) => match scope {
                SettingsScope::User => user_enabled = Some(*b),
                SettingsScope::Managed => managed_enabled = Some(*b),
                _ if *b => repo_enables = true,
                _ => ignore("sandbox.enabled: false", repo),
            },
            Some(_) => ignore("sandbox.enabled", "is not true or false"),
        }
        let strings = |v: Option<&Value>| -> Option<Vec<String>> {
            match v? {
                Value::Array(a) => Some(
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .take(256)
                        .collect(),
                ),
                _ => Some(Vec::new()),
            }
        };
        if let Some(list) = strings(sandbox.get("excludedCommands")) {
            if trusted {
                out.excluded_commands.extend(list);
            } else if !list.is_empty() {
                ignore("sandbox.excludedCommands", repo);
            }
        }
        let network = sandbox.get("network").and_then(Value::as_object);
        if let Some(list) = strings(network.and_then(|n| n.get("allowedDomains"))) {
            match scope {
                SettingsScope::Managed => managed_domains.extend(list),
                SettingsScope::User => out.allowed_domains.extend(list),
                _ if !list.is_empty() => ignore("sandbox.network.allowedDomains", repo),
                _ => {}
            }
        }
        if *scope == SettingsScope::Managed
            && network
                .and_then(|n| n.get("allowManagedDomainsOnly"))
                .and_then(Value::as_bool)
                == Some(true)
        {
            managed_domains_only = true;
        }
        let filesystem = sandbox.get("filesystem").and_then(Value::as_object);
        let paths = |key: &str, out: &mut Vec<PathBuf>, ignored: &mut Vec<String>| {
            for p in strings(filesystem.and_then(|f| f.get(key))).unwrap_or_default() {
                match expand(&p, home) {
                    Some(path) => out.push(path),
                    None => ignored.push(format!(
                        "{where_}: sandbox.filesystem.{key} {p:?} is not an absolute path or ~/…"
                    )),
                }
            }
        };
        if trusted {
            paths("allowWrite", &mut out.allow_write, &mut out.ignored);
        } else if strings(filesystem.and_then(|f| f.get("allowWrite")))
            .is_some_and(|l| !l.is_empty())
        {
            out.ignored
                .push(format!("{where_}: sandbox.filesystem.allowWrite {repo}"));
        }
        paths("denyRead", &mut out.deny_read, &mut out.ignored);
    }
    if managed_domains_only {
        out.allowed_domains = managed_domains;
    } else {
        out.allowed_domains.extend(managed_domains);
    }
    out.enabled = managed_enabled.or(if repo_enables {
        Some(true)
    } else {
        user_enabled
    });
    out
}

/// `~/x` under `home`, or an absolute path; `None` otherwise.
fn expand(p: &str, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = p.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let p = PathBuf::from(p);
    p.is_absolute().then_some(p)
}

/// Fills `cfg` for a session in `cwd`: the settings (with the rule), the credential stores
/// hidden under the user's home and Claude folder, the user's runtime folder. Each ignored key
/// is logged as a warning.
pub fn configure(host: &Host, fs: &dyn Fs, cwd: &Path, cfg: &mut SandboxConfig) {
    let read = read(fs, &files(host, cwd), host.home.as_deref());
    for i in &read.ignored {
        crate::log_warn!("sandbox settings: {i}");
    }
    if let Some(e) = read.enabled {
        cfg.enabled = e && cfg!(target_os = "linux");
    }
    cfg.excluded_commands = read.excluded_commands;
    cfg.allowed_domains = read.allowed_domains;
    cfg.allow_write = read
        .allow_write
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect();
    let mut deny = match &host.home {
        Some(h) => crate::tools::default_deny_read(h, host.claude_dir().as_deref()),
        None => Vec::new(),
    };
    deny.extend(read.deny_read);
    cfg.deny_read = deny;
    cfg.runtime_dir = host.var("XDG_RUNTIME_DIR").map(PathBuf::from);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn settings(files: &[(SettingsScope, &str)]) -> Read {
        let fs = MemFs::new();
        let mut list = Vec::new();
        for (i, (scope, text)) in files.iter().enumerate() {
            let p = PathBuf::from(format!("/s/{i}.json"));
            fs.write(&p, text.as_bytes());
            list.push((*scope, p));
        }
        read(&fs, &list, Some(Path::new("/home/u")))
    }

    #[test]
    fn a_repository_can_tighten_the_sandbox_never_loosen_it() {
        let loosen = r#"{"sandbox": {"enabled": false, "excludedCommands": ["curl"],
            "network": {"allowedDomains": ["evil.example"]},
            "filesystem": {"allowWrite": ["/"], "denyRead": ["~/secrets"]}}}"#;
        for scope in [SettingsScope::Project, SettingsScope::Local] {
            let r = settings(&[(scope, loosen)]);
            assert_eq!(r.enabled, None, "{scope:?}");
            assert!(r.excluded_commands.is_empty());
            assert!(r.allowed_domains.is_empty());
            assert!(r.allow_write.is_empty());
            assert_eq!(r.deny_read, vec![PathBuf::from("/home/u/secrets")]);
            assert_eq!(r.ignored.len(), 4, "{:?}", r.ignored);
            assert!(r.ignored[0].contains("sandbox.enabled: false"));
        }
        // The user's own file loosens; a repository's `enabled: true` wins over the user's off.
        let r = settings(&[(SettingsScope::User, loosen)]);
        assert_eq!(r.enabled, Some(false));
        assert_eq!(r.excluded_commands, ["curl"]);
        assert_eq!(r.allowed_domains, ["evil.example"]);
        assert_eq!(r.allow_write, [PathBuf::from("/")]);
        assert!(r.ignored.is_empty(), "{:?}", r.ignored);
        let r = settings(&[
            (SettingsScope::User, r#"{"sandbox": {"enabled": false}}"#),
            (SettingsScope::Project, r#"{"sandbox": {"enabled": true}}"#),
        ]);
        assert_eq!(r.enabled, Some(true));
        // Managed settings decide over everyone; `allowManagedDomainsOnly` keeps only theirs.
        let r = settings(&[
            (
                SettingsScope::User,
                r#"{"sandbox": {"enabled": false, "network": {"allowedDomains": ["a.example"]}}}"#,
            ),
            (
                SettingsScope::Managed,
                r#"{"sandbox": {"enabled": true, "network": {"allowedDomains": ["b.example"], "allowManagedDomainsOnly": true}}}"#,
            ),
        ]);
        assert_eq!(r.enabled, Some(true));
        assert_eq!(r.allowed_domains, ["b.example"]);
        // Wrong types are named, not guessed.
        let r = settings(&[(
            SettingsScope::User,
            r#"{"sandbox": {"enabled": "no", "filesystem": {"allowWrite": ["relative/dir"]}}}"#,
        )]);
        assert_eq!(r.enabled, None);
        assert_eq!(r.ignored.len(), 2, "{:?}", r.ignored);
    }
}
