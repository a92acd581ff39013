//! Output styles: discovery, names, precedence, lookup (hooks-agents-styles.md section 11).

use super::*;
use crate::fs::MemFs;

fn folders<'a>(plugins: &'a [(String, PathBuf)]) -> Folders<'a> {
    Folders {
        user_dir: Some(Path::new("/h/.claude")),
        project: Path::new("/p"),
        plugins,
    }
}

#[test]
fn names_bodies_and_precedence_as_measured() {
    let fs = MemFs::with_files([
        (
            "/p/.claude/output-styles/terse.md",
            "---\nname: Terse\ndescription: Short\n---\n\nTERSE-BODY-MARKER Answer in as few words as possible.\n\nSecond paragraph of the terse style.\n",
        ),
        (
            "/p/.claude/output-styles/fname.md",
            "---\nname: Fancy Name\n---\nFancy body.\n",
        ),
        ("/p/.claude/output-styles/nofm.md", "No frontmatter body.\n"),
        (
            "/p/.claude/output-styles/keeper.md",
            "---\nname: Keeper\nkeep-coding-instructions: true\n---\nKeep.\n",
        ),
        (
            "/p/.claude/output-styles/shared.md",
            "---\nname: Shared\n---\nPROJECT\n",
        ),
        (
            "/h/.claude/output-styles/shared.md",
            "---\nname: Shared\n---\nUSER\n",
        ),
        ("/p/.claude/output-styles/notes.txt", "not a style"),
    ]);
    let s = discover(&fs, &folders(&[]));
    let terse = s.find(Some("Terse")).unwrap();
    assert_eq!(
        terse.part(),
        "# Output Style: Terse\nTERSE-BODY-MARKER Answer in as few words as possible.\n\nSecond paragraph of the terse style."
    );
    assert!(!terse.keep_coding_instructions);
    assert_eq!(
        terse.active_sentence(),
        "Terse output style is active. Remember to follow the specific guidelines for this style."
    );
    assert!(s.find(Some("Fancy Name")).is_some());
    assert!(
        s.find(Some("fname")).is_none(),
        "the file name does not name a style with a name"
    );
    assert_eq!(s.find(Some("nofm")).unwrap().body, "No frontmatter body.");
    assert!(s.find(Some("Keeper")).unwrap().keep_coding_instructions);
    assert_eq!(
        s.find(Some("Shared")).unwrap().body,
        "PROJECT",
        "the project's beats the user's"
    );
    // Case-sensitive; unknown and default give the default.
    assert!(s.find(Some("explanatory")).is_none());
    assert!(s.find(Some("NoSuchStyle")).is_none());
    assert!(s.find(Some("default")).is_none());
    assert!(s.find(None).is_none());
    assert!(s.find(Some("notes")).is_none());
}

#[test]
fn the_built_ins_carry_the_reference_texts() {
    let s = discover(&MemFs::new(), &folders(&[]));
    let e = s.find(Some("Explanatory")).unwrap();
    assert!(e.body.starts_with("You are an interactive CLI tool that helps users with software engineering tasks. In addition to software engineering tasks, you should provide educational insights about the codebase along the way."));
    assert!(e.body.contains("`★ Insight ─────"));
    assert!(e.keep_coding_instructions);
    let l = s.find(Some("Learning")).unwrap();
    assert!(l.body.contains("you should help users learn more about the codebase through hands-on practice and educational insights."));
    assert!(l.body.contains("● **Learn by Doing**"));
    assert!(
        l.body.contains("## Insights\n\n## Insights\n"),
        "the heading twice, as measured"
    );
    assert_eq!(s.names()[..3], ["default", "Explanatory", "Learning"]);
}

#[test]
fn plugin_styles_are_prefixed_and_the_bare_name_is_unknown() {
    let fs = MemFs::with_files([(
        "/mkt/plugins/demo/output-styles/plug.md",
        "---\nname: PlugStyle\n---\nPLUG-STYLE\n",
    )]);
    let plugins = [("demo".to_string(), PathBuf::from("/mkt/plugins/demo"))];
    let s = discover(&fs, &folders(&plugins));
    assert_eq!(s.find(Some("demo:PlugStyle")).unwrap().body, "PLUG-STYLE");
    assert!(s.find(Some("PlugStyle")).is_none());
}

#[test]
fn a_huge_style_is_cut_and_said() {
    let big = format!(
        "---\nname: Big\n---\n{}",
        "x".repeat(MAX_STYLE_BYTES as usize + 10)
    );
    let fs = MemFs::with_files([("/p/.claude/output-styles/big.md", big.as_str())]);
    let s = discover(&fs, &folders(&[]));
    assert!(s.find(Some("Big")).unwrap().body.len() < MAX_STYLE_BYTES as usize);
    assert!(s.findings.iter().any(|f| f.code == "style-too-large"));
}

#[test]
fn check_names_an_unknown_setting_and_a_duplicate() {
    let fs = MemFs::with_files([
        ("/p/.claude/output-styles/a.md", "---\nname: Same\n---\nA\n"),
        ("/p/.claude/output-styles/b.md", "---\nname: Same\n---\nB\n"),
    ]);
    let s = discover(&fs, &folders(&[]));
    let set = Sourced {
        value: "explanatory".to_string(),
        source: PathBuf::from("/p/.claude/settings.local.json"),
    };
    let f = lint(&s, Some(&set));
    let codes: Vec<&str> = f.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["style-duplicate", "style-unknown"]);
    assert!(
        f[1].message.contains("did you mean \"Explanatory\""),
        "{}",
        f[1].message
    );
    let ok = Sourced {
        value: "Same".to_string(),
        source: PathBuf::from("/x"),
    };
    assert_eq!(
        lint(&discover(&MemFs::new(), &folders(&[])), Some(&ok)).len(),
        1
    );
}
