//! Discovery and listing on `MemFs`: check 17 of `hooks-agents-styles.md` section 15 and the
//! rules of section 9.

use std::path::Path;

use super::*;
use crate::fs::MemFs;

/// The a1 fixture of section 9: project agents in `/p/.claude/agents`, user agents in
/// `/h/.claude/agents`.
pub(crate) fn fixture() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "/p/.claude/agents/alpha.md",
            "---\nname: alpha\ndescription: ALPHA-DESC-MARKER tools as a YAML list\ntools:\n  - Bash\n  - Read\n---\nALPHA-BODY\n",
        ),
        (
            "/p/.claude/agents/badfm.md",
            "---\nname: badfm\ndescription: [unclosed\n---\nBAD-BODY\n",
        ),
        (
            "/p/.claude/agents/multi.md",
            "---\nname: multi\ndescription: \"MULTI-DESC-MARKER line one\\nline two <b>&amp;</b>\"\ntools: Read, NoSuchTool\n---\nMULTI-BODY\n",
        ),
        (
            "/p/.claude/agents/sub/nested.md",
            "---\nname: nested\ndescription: NESTED-DESC-MARKER in a subfolder\n---\nNESTED-BODY\n",
        ),
        (
            "/p/.claude/agents/file-name.md",
            "---\nname: other-name\ndescription: OTHERNAME-DESC-MARKER name differs from the file name\n---\nOTHER-BODY\n",
        ),
        (
            "/p/.claude/agents/reviewer.md",
            "---\nname: reviewer\ndescription: REVIEWER-DESC-MARKER Reviews code for bugs\ntools: Read, Grep\nmodel: sonnet\ncolor: blue\n---\nREVIEWER-BODY-MARKER You are a code reviewer.\n",
        ),
        (
            "/p/.claude/agents/shared.md",
            "---\nname: shared\ndescription: PROJECT-SHARED-DESC-MARKER\n---\nPROJECT-SHARED-BODY\n",
        ),
        (
            "/p/.claude/agents/explore.md",
            "---\nname: Explore\ndescription: PROJECT-EXPLORE-DESC-MARKER shadows the built-in Explore\n---\nEXPLORE-BODY\n",
        ),
        (
            "/p/.claude/agents/zeta.md",
            "---\nname: zeta\ndescription: ZETA-DESC-MARKER no tools field\n---\nZETA-BODY\n",
        ),
        (
            "/p/.claude/agents/noname.md",
            "---\ndescription: NONAME-DESC-MARKER\n---\nx\n",
        ),
        ("/p/.claude/agents/nodesc.md", "---\nname: nodesc\n---\nx\n"),
        (
            "/p/.claude/agents/nofm.md",
            "NOFM-BODY-MARKER no frontmatter\n",
        ),
        (
            "/p/.claude/agents/notes.txt",
            "---\nname: txtagent\ndescription: TXT-DESC-MARKER\n---\nx\n",
        ),
        (
            "/h/.claude/agents/shared.md",
            "---\nname: shared\ndescription: USER-SHARED-DESC-MARKER\n---\nUSER-SHARED-BODY\n",
        ),
        (
            "/h/.claude/agents/user-agent.md",
            "---\nname: user-agent\ndescription: USER-AGENT-DESC-MARKER from the home folder\ntools: Bash\n---\nUSER-AGENT-BODY\n",
        ),
    ]
}

/// The sources [`sources`] gives a session in `/p` whose user folder is `/h/.claude`.
fn agents_of(files: Vec<(&'static str, &'static str)>, model: &str) -> Agents {
    let fs = MemFs::with_files(files);
    let sources = [
        Source {
            folder: "/p/.claude/agents".into(),
            scope: Scope::Project,
            prefix: None,
            recursive: true,
        },
        Source {
            folder: "/h/.claude/agents".into(),
            scope: Scope::User,
            prefix: None,
            recursive: false,
        },
    ];
    discover(&fs, &sources, model)
}

#[test]
fn check_17_the_listing_as_measured() {
    let a = agents_of(fixture(), crate::models::DEFAULT_MODEL);
    let text = a.listing();
    let lines: Vec<&str> = text.split("\n- ").collect();
    let expected_start = [
        "Available agent types for the Agent tool:",
        "alpha: ALPHA-DESC-MARKER tools as a YAML list (Tools: Bash, Read)",
        "badfm: [unclosed (Tools: All tools)",
        "claude: Catch-all for any task that doesn't fit a more specific agent. FleetView's default when no agent name is typed. (Tools: *)",
        "Explore: PROJECT-EXPLORE-DESC-MARKER shadows the built-in Explore (Tools: All tools)",
    ];
    assert_eq!(&lines[..5], &expected_start, "{text}");
    assert!(lines[5].starts_with("general-purpose: General-purpose agent for "));
    assert!(lines[5].ends_with(" (Tools: *)"));
    let expected_mid = [
        "multi: MULTI-DESC-MARKER line one\nline two <b>&amp;</b> (Tools: Read, NoSuchTool)",
        "nested: NESTED-DESC-MARKER in a subfolder (Tools: All tools)",
        "other-name: OTHERNAME-DESC-MARKER name differs from the file name (Tools: All tools)",
    ];
    assert_eq!(&lines[6..9], &expected_mid);
    assert!(lines[9].starts_with("Plan: Software architect agent "));
    assert!(lines[9].ends_with(" (Tools: All tools except Agent, Artifact, ArtifactComments, ArtifactData, ArtifactCheck, ExitPlanMode, Edit, Write, NotebookEdit)"));
    let expected_end = [
        "reviewer: REVIEWER-DESC-MARKER Reviews code for bugs (Tools: Read, Grep)",
        "shared: PROJECT-SHARED-DESC-MARKER (Tools: All tools)",
        "statusline-setup: Use this agent to configure the user's Claude Code status line setting. (Tools: Read, Edit)",
        "user-agent: USER-AGENT-DESC-MARKER from the home folder (Tools: Bash)",
        "zeta: ZETA-DESC-MARKER no tools field (Tools: All tools)\n\nWhen you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.",
    ];
    assert_eq!(&lines[10..], &expected_end);
    for absent in ["noname", "nodesc", "NOFM", "txtagent", "USER-SHARED"] {
        assert!(!text.contains(absent), "{absent} listed: {text}");
    }
    assert_eq!(
        a.names().join(", "),
        "alpha, badfm, claude, Explore, general-purpose, multi, nested, other-name, Plan, reviewer, shared, statusline-setup, user-agent, zeta"
    );
    // What was skipped or shadowed is said.
    let codes: Vec<&str> = a.findings.iter().map(|f| f.code.as_str()).collect();
    for c in [
        "agent-no-name",
        "agent-no-description",
        "agent-no-frontmatter",
        "agent-not-md",
        "agent-unknown-tool",
        "agent-frontmatter-invalid",
    ] {
        assert!(codes.contains(&c), "{c} missing: {codes:?}");
    }
    let shadowed: Vec<(&str, Scope)> = a
        .shadowed
        .iter()
        .map(|s| (s.name.as_str(), s.scope))
        .collect();
    assert!(shadowed.contains(&("shared", Scope::User)));
    assert!(shadowed.contains(&("Explore", Scope::BuiltIn)));
    // The agent's own fields.
    let r = a.get("reviewer").unwrap();
    assert_eq!(r.model.as_deref(), Some("sonnet"));
    assert_eq!(r.body, "REVIEWER-BODY-MARKER You are a code reviewer.");
    assert_eq!(
        r.tools.as_deref(),
        Some(&["Read".to_string(), "Grep".to_string()][..])
    );
}

#[test]
fn built_in_descriptions_follow_the_model() {
    let opus = agents_of(Vec::new(), crate::models::DEFAULT_MODEL);
    let sonnet = agents_of(Vec::new(), "claude-sonnet-4-5");
    assert!(
        sonnet
            .get("Explore")
            .unwrap()
            .description
            .starts_with("Fast read-only search agent for locating code. ")
    );
    assert_ne!(
        opus.get("Explore").unwrap().description,
        sonnet.get("Explore").unwrap().description
    );
    assert_eq!(opus.names().len(), 5);
}

#[test]
fn plugin_agents_are_prefixed_and_sorted_with_the_others() {
    let fs = MemFs::with_files([(
        "/plug/agents/plug-agent.md",
        "---\nname: plug-agent\ndescription: PLUGAGENT-DESC-MARKER a plugin agent\ntools: Read\n---\nB\n",
    )]);
    let a = discover(
        &fs,
        &[Source::plugin("demo-plugin", Path::new("/plug"))],
        crate::models::DEFAULT_MODEL,
    );
    assert!(a.listing().contains(
        "\n- claude: Catch-all for any task that doesn't fit a more specific agent. FleetView's default when no agent name is typed. (Tools: *)\n- demo-plugin:plug-agent: PLUGAGENT-DESC-MARKER a plugin agent (Tools: Read)\n- Explore: "
    ), "{}", a.listing());
    assert_eq!(
        a.get("demo-plugin:plug-agent").unwrap().scope,
        Scope::Plugin
    );
}
