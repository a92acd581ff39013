//! Plugins: which are enabled and where from (hooks-agents-styles.md section 12).

use super::*;
use crate::context::settings::Trust;
use crate::fs::MemFs;
use crate::host::Host;

const MKT: &str =
    r#"{"name":"testmkt","plugins":[{"name":"demo-plugin","source":"./plugins/demo-plugin"}]}"#;

fn known() -> String {
    r#"{"testmkt":{"source":{"source":"directory","path":"/fx/mkt"},"installLocation":"/fx/mkt"}}"#
        .into()
}

const USER_SETTINGS: &str = r#"{"enabledPlugins":{"demo-plugin@testmkt":true},"extraKnownMarketplaces":{"testmkt":{"source":{"source":"directory","path":"/fx/mkt"}}}}"#;

fn ctx(fs: &MemFs, trusted: bool, plugin_dirs: &[&str]) -> Context {
    let host = Host::for_tests(Path::new("/h"));
    let mut opts = host.context_options(Path::new("/p"), &[], None).unwrap();
    if trusted {
        opts.trust = Trust::trusted_folder();
    }
    opts.plugin_dirs = plugin_dirs.iter().map(PathBuf::from).collect();
    crate::context::build(fs, &opts)
}

fn installed(fs: &MemFs) {
    fs.write("/fx/mkt/.claude-plugin/marketplace.json", MKT);
    fs.write(
        "/fx/mkt/plugins/demo-plugin/skills/plug-skill/SKILL.md",
        "x",
    );
    fs.write("/h/.claude/plugins/known_marketplaces.json", known());
    fs.write(
        "/h/.claude/plugins/installed_plugins.json",
        r#"{"version":2,"plugins":{"demo-plugin@testmkt":[{"scope":"user","installPath":"/h/.claude/plugins/cache/testmkt/demo-plugin/1.0.0","version":"1.0.0"}]}}"#,
    );
    fs.write(
        "/h/.claude/plugins/cache/testmkt/demo-plugin/1.0.0/skills/plug-skill/SKILL.md",
        "x",
    );
}

/// p1: a directory marketplace's plugin is used from its source folder, not the cache copy.
#[test]
fn a_directory_marketplace_plugin_runs_from_its_source_folder() {
    let fs = MemFs::new();
    installed(&fs);
    fs.write("/h/.claude/settings.json", USER_SETTINGS);
    let p = enabled(&fs, &ctx(&fs, false, &[]));
    assert_eq!(p.not_loaded, []);
    let [one] = &p.plugins[..] else {
        panic!("{p:?}")
    };
    assert_eq!(one.name, "demo-plugin");
    assert_eq!(one.root, PathBuf::from("/fx/mkt/plugins/demo-plugin"));
    assert_eq!(
        one.data.as_deref(),
        Some(Path::new("/h/.claude/plugins/data/demo-plugin-testmkt"))
    );
    assert_eq!(one.enabled_by, EnabledBy::User);
    assert_eq!(
        one.agents_dir(),
        PathBuf::from("/fx/mkt/plugins/demo-plugin/agents")
    );
}

/// p2: the settings keys alone (no install record) load it.
#[test]
fn the_two_settings_keys_alone_load_it() {
    let fs = MemFs::new();
    fs.write("/fx/mkt/.claude-plugin/marketplace.json", MKT);
    fs.write("/fx/mkt/plugins/demo-plugin/skills/s/SKILL.md", "x");
    fs.write("/h/.claude/settings.json", USER_SETTINGS);
    let p = enabled(&fs, &ctx(&fs, false, &[]));
    assert_eq!(p.plugins.len(), 1, "{p:?}");
}

/// p2/project_settings(_trusted): the repository's `enabledPlugins` waits for trust.
#[test]
fn a_repositorys_plugins_wait_for_trust() {
    let fs = MemFs::new();
    installed(&fs);
    fs.write("/p/.claude/settings.json", USER_SETTINGS);
    let untrusted = enabled(&fs, &ctx(&fs, false, &[]));
    assert_eq!(untrusted.plugins, []);
    assert!(
        untrusted.not_loaded[0].reason.contains("trust"),
        "{untrusted:?}"
    );
    let trusted = enabled(&fs, &ctx(&fs, true, &[]));
    assert_eq!(trusted.plugins.len(), 1);
    assert_eq!(trusted.plugins[0].enabled_by, EnabledBy::Repository);
}

#[test]
fn a_source_outside_its_marketplace_is_not_read() {
    let fs = MemFs::new();
    fs.write(
        "/fx/mkt/.claude-plugin/marketplace.json",
        r#"{"plugins":[{"name":"demo-plugin","source":"../../etc"}]}"#,
    );
    fs.write("/etc/passwd", "x");
    fs.write("/h/.claude/settings.json", USER_SETTINGS);
    let p = enabled(&fs, &ctx(&fs, false, &[]));
    assert_eq!(p.plugins, []);
    assert!(
        p.not_loaded[0].reason.contains("outside its marketplace"),
        "{p:?}"
    );
}

#[test]
fn an_installed_plugin_of_another_marketplace_runs_from_its_install_path() {
    let fs = MemFs::new();
    installed(&fs);
    fs.write(
        "/h/.claude/plugins/known_marketplaces.json",
        r#"{"testmkt":{"source":{"source":"github","repo":"o/r"},"installLocation":"/h/.claude/plugins/marketplaces/testmkt"}}"#,
    );
    fs.write(
        "/h/.claude/settings.json",
        r#"{"enabledPlugins":{"demo-plugin@testmkt":true}}"#,
    );
    let p = enabled(&fs, &ctx(&fs, false, &[]));
    assert_eq!(
        p.plugins[0].root,
        PathBuf::from("/h/.claude/plugins/cache/testmkt/demo-plugin/1.0.0")
    );
}

#[test]
fn a_plugin_dir_is_named_by_its_manifest() {
    let fs = MemFs::new();
    fs.write("/dev-plug/.claude-plugin/plugin.json", r#"{"name":"devp"}"#);
    let p = enabled(&fs, &ctx(&fs, false, &["/dev-plug"]));
    assert_eq!(p.plugins[0].name, "devp");
    assert_eq!(p.plugins[0].enabled_by, EnabledBy::Flag);
    let disabled = MemFs::new();
    installed(&disabled);
    disabled.write(
        "/h/.claude/settings.json",
        r#"{"enabledPlugins":{"demo-plugin@testmkt":false}}"#,
    );
    assert_eq!(enabled(&disabled, &ctx(&disabled, false, &[])).plugins, []);
}
