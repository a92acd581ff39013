//! Walk-level tests on an in-memory tree: what loads, in what order, and what is reported.

use std::path::{Path, PathBuf};

use super::*;
use crate::fs::MemFs;

fn opts(cwd: &str) -> Options {
    Options {
        cwd: PathBuf::from(cwd),
        home: Some(PathBuf::from("/home/u")),
        managed_dir: PathBuf::from("/etc/claude-code"),
        auto_memory: true,
        ..Options::default()
    }
}

fn loaded(ctx: &Context) -> Vec<String> {
    ctx.entries()
        .map(|e| e.path.display().to_string())
        .collect()
}

fn record<'a>(ctx: &'a Context, path: &str) -> &'a FileRecord {
    ctx.files
        .iter()
        .find(|f| f.path == Path::new(path))
        .unwrap_or_else(|| panic!("no record for {path}: {:#?}", ctx.files))
}

fn finding<'a>(ctx: &'a Context, code: &str) -> &'a Finding {
    ctx.findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code} finding: {:#?}", ctx.findings))
}

#[test]
fn walk_order_is_managed_user_root_to_cwd_then_memory() {
    let fs = MemFs::with_files([
        ("/etc/claude-code/CLAUDE.md", "managed"),
        ("/home/u/.claude/CLAUDE.md", "user"),
        ("/home/u/.claude/rules/u.md", "user rule"),
        ("/w/CLAUDE.md", "w"),
        ("/w/repo/.git/HEAD", "ref: refs/heads/main"),
        ("/w/repo/.git/objects/info/packs", ""),
        ("/w/repo/.git/refs/heads/main", ""),
        ("/w/repo/CLAUDE.local.md", "local"),
        ("/w/repo/CLAUDE.md", "repo"),
        ("/w/repo/.claude/rules/r.md", "rule"),
        ("/w/repo/.claude/CLAUDE.md", "dot"),
        ("/w/repo/sub/CLAUDE.md", "below cwd"),
        ("/home/u/.claude/projects/-w-repo/memory/MEMORY.md", "- mem"),
    ]);
    let ctx = build(&fs, &opts("/w/repo"));
    assert_eq!(
        loaded(&ctx),
        [
            "/etc/claude-code/CLAUDE.md",
            "/home/u/.claude/CLAUDE.md",
            "/home/u/.claude/rules/u.md",
            "/w/CLAUDE.md",
            "/w/repo/CLAUDE.md",
            "/w/repo/.claude/CLAUDE.md",
            "/w/repo/.claude/rules/r.md",
            "/w/repo/CLAUDE.local.md",
            "/home/u/.claude/projects/-w-repo/memory/MEMORY.md",
        ]
    );
    assert_eq!(ctx.git_root.as_deref(), Some(Path::new("/w/repo")));
    let block = ctx.instructions_block().unwrap();
    assert!(block.contains("Contents of /etc/claude-code/CLAUDE.md (organization-managed policy instructions):\n\nmanaged"));
    assert!(!block.contains("below cwd"));
}

#[test]
fn conditional_rules_wait_and_say_why() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/.claude/rules/py.md", "---\npaths: \"**/*.py\"\n---\nPY"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let rec = record(&ctx, "/r/.claude/rules/py.md");
    assert_eq!(rec.status, Status::Inactive);
    assert_eq!(rec.globs, ["**/*.py"]);
    assert_eq!(
        rec.reason.as_deref(),
        Some("paths \"**/*.py\": no touched file matches")
    );
    assert!(ctx.instructions_block().is_none());

    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("src/app.ts")), 0);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/tools/x.py")), 1);
    assert_eq!(
        att.touch(&fs, &ctx, Path::new("/r/tools/y.py")),
        0,
        "attached once per session"
    );
    let a = &att.attachments[0];
    assert_eq!(a.record.status, Status::Attached);
    assert_eq!(
        a.record.reason.as_deref(),
        Some("paths \"**/*.py\" matched tools/x.py")
    );
    assert_eq!(
        a.text(),
        "<system-reminder>\nContents of /r/.claude/rules/py.md:\n\nPY\n</system-reminder>"
    );
}

#[test]
fn includes_report_every_skip_with_position() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/CLAUDE.md",
            "top\n@a.md\n\nsee @missing.md\n@img.png\n@../out.md\n@fifo\n",
        ),
        ("/r/a.md", "A\n@b.md"),
        ("/r/b.md", "B\n@a.md"),
        ("/r/img.png", "\u{0}PNG"),
        ("/out.md", "outside"),
    ]);
    fs.special("/r/fifo");
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(loaded(&ctx), ["/r/CLAUDE.md", "/r/a.md", "/r/b.md"]);
    let missing = finding(&ctx, "include-not-found");
    assert_eq!(
        (missing.line, missing.start_col, missing.end_col),
        (Some(3), 4, 15)
    );
    assert_eq!(missing.severity, Severity::Error);
    assert_eq!(
        missing.message,
        "include not found: missing.md (resolved to /r/missing.md)"
    );
    assert_eq!(finding(&ctx, "include-cycle").path, Path::new("/r/b.md"));
    assert_eq!(finding(&ctx, "include-binary").line, Some(4));
    assert!(
        finding(&ctx, "include-external")
            .message
            .contains("outside the project")
    );
    assert!(
        finding(&ctx, "include-unreadable")
            .message
            .contains("not a regular file")
    );
    let b = record(&ctx, "/r/b.md");
    assert_eq!(b.depth, 2);
    assert_eq!(b.included_from.as_ref().unwrap().path, Path::new("/r/a.md"));
}

#[test]
fn depth_limit_is_four_levels_below_the_top_file() {
    let mut files = vec![("/r/.git/HEAD".to_string(), String::new())];
    files.push(("/r/CLAUDE.md".into(), "@d1.md".into()));
    for i in 1..=7 {
        files.push((format!("/r/d{i}.md"), format!("D{i}\n@d{}.md", i + 1)));
    }
    let fs = MemFs::with_files(files.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(
        loaded(&ctx),
        [
            "/r/CLAUDE.md",
            "/r/d1.md",
            "/r/d2.md",
            "/r/d3.md",
            "/r/d4.md"
        ]
    );
    let deep = finding(&ctx, "include-too-deep");
    assert_eq!(deep.path, Path::new("/r/d4.md"));
    assert_eq!(
        deep.message,
        "not loaded: includes go at most 4 levels below CLAUDE.md"
    );
}

#[test]
fn frontmatter_errors_and_bad_globs_are_findings_and_the_rule_still_loads() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/.claude/rules/broken.md",
            "---\ndescription: x\npaths: [unclosed\n---\nBROKEN",
        ),
        (
            "/r/.claude/rules/badglob.md",
            "---\npaths: \"src/[oops\"\n---\nBAD",
        ),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let fm = finding(&ctx, "frontmatter");
    assert_eq!(fm.severity, Severity::Error);
    assert!(fm.message.starts_with("frontmatter: "), "{}", fm.message);
    assert!(
        fm.message
            .ends_with("the rule loads as if it had no `paths`")
    );
    assert_eq!(
        record(&ctx, "/r/.claude/rules/broken.md").status,
        Status::Loaded
    );
    let glob = finding(&ctx, "invalid-glob");
    assert_eq!(glob.line, Some(1));
    assert_eq!(
        record(&ctx, "/r/.claude/rules/badglob.md").status,
        Status::Inactive
    );
}

#[test]
fn empty_files_are_reported_not_loaded() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/CLAUDE.md", "<!-- only a comment -->\n\n"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(record(&ctx, "/r/CLAUDE.md").status, Status::Empty);
    assert!(ctx.instructions_block().is_none());
}

#[test]
fn agents_md_is_inactive_when_claude_files_exist() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/AGENTS.md", "agents"),
        ("/r/CLAUDE.md", "claude"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(loaded(&ctx), ["/r/CLAUDE.md"]);
    let agents = record(&ctx, "/r/AGENTS.md");
    assert_eq!(agents.status, Status::Inactive);
    assert!(
        agents
            .reason
            .as_deref()
            .unwrap()
            .contains("only when no CLAUDE.md")
    );
}

#[test]
fn memory_caps_warn_on_the_first_cut_line() {
    let text: String = (1..=230).map(|i| format!("- m{i}\n")).collect();
    let fs = MemFs::new();
    fs.write("/home/u/.claude/projects/-r/memory/MEMORY.md", &text);
    fs.mkdir("/r");
    let ctx = build(&fs, &opts("/r"));
    let mem = record(&ctx, "/home/u/.claude/projects/-r/memory/MEMORY.md");
    assert_eq!(
        mem.reason.as_deref(),
        Some("cut to 200 of 230 lines (warning included)")
    );
    assert!(mem.content.ends_with("move detail into topic files."));
    let f = finding(&ctx, "memory-cap");
    assert_eq!(f.line, Some(200));
    assert_eq!(
        f.message,
        "230 lines (limit 200): lines 201-230 are not loaded"
    );
}

#[test]
fn memory_dir_override_and_auto_memory_off() {
    let fs = MemFs::with_files([("/mem/MEMORY.md", "- custom"), ("/r/x", "")]);
    let mut o = opts("/r");
    o.memory_dir = Some(PathBuf::from("/mem"));
    assert_eq!(loaded(&build(&fs, &o)), ["/mem/MEMORY.md"]);
    o.auto_memory = false;
    assert!(loaded(&build(&fs, &o)).is_empty());
}

#[test]
fn rules_follow_directory_listing_order_not_names() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/.claude/rules/b.md", "b"),
        ("/r/.claude/rules/sub/z.md", "z"),
        ("/r/.claude/rules/a.md", "a"),
        ("/r/.claude/rules/notes.txt", "not a rule"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(
        loaded(&ctx),
        [
            "/r/.claude/rules/b.md",
            "/r/.claude/rules/sub/z.md",
            "/r/.claude/rules/a.md"
        ]
    );
}

#[test]
fn nested_files_attach_outer_first_with_local_before_rules() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/p/.claude/rules/cond.md",
            "---\npaths: \"**/*.rs\"\n---\nCOND",
        ),
        ("/r/p/.claude/rules/always.md", "ALWAYS"),
        ("/r/p/CLAUDE.local.md", "LOCAL"),
        ("/r/p/CLAUDE.md", "P"),
        ("/r/p/q/CLAUDE.md", "Q"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/p/q/main.rs"));
    let paths: Vec<_> = att
        .attachments
        .iter()
        .map(|a| a.record.path.display().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "/r/p/CLAUDE.md",
            "/r/p/CLAUDE.local.md",
            "/r/p/.claude/rules/always.md",
            "/r/p/.claude/rules/cond.md",
            "/r/p/q/CLAUDE.md",
        ]
    );
    assert_eq!(
        att.attachments[0].record.reason.as_deref(),
        Some("nested: p/q/main.rs is below p")
    );
}

#[test]
fn files_outside_cwd_attach_only_matching_ancestor_rules() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/.claude/rules/all.md", "---\npaths: \"**\"\n---\nALL"),
        ("/r/other/CLAUDE.md", "OTHER"),
    ]);
    let ctx = build(&fs, &opts("/r/sub"));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/other/file.txt"));
    let paths: Vec<_> = att
        .attachments
        .iter()
        .map(|a| a.record.path.clone())
        .collect();
    assert_eq!(paths, [PathBuf::from("/r/.claude/rules/all.md")]);
}

#[test]
fn disabled_loads_nothing() {
    let fs = MemFs::with_files([("/r/CLAUDE.md", "x")]);
    let mut o = opts("/r");
    o.disabled = true;
    assert!(build(&fs, &o).files.is_empty());
}

#[test]
fn user_rules_met_again_under_home_are_not_doubled() {
    let fs = MemFs::with_files([
        ("/home/u/.claude/CLAUDE.md", "user"),
        ("/home/u/.claude/rules/always.md", "always"),
        (
            "/home/u/.claude/rules/rs.md",
            "---\npaths: \"**/*.rs\"\n---\nRS",
        ),
        ("/home/u/proj/.git/HEAD", ""),
    ]);
    let ctx = build(&fs, &opts("/home/u/proj"));
    assert_eq!(
        loaded(&ctx),
        [
            "/home/u/.claude/CLAUDE.md",
            "/home/u/.claude/rules/always.md"
        ]
    );
    assert_eq!(ctx.conditional_rules().count(), 1);
    let (base, _) = ctx.conditional_rules().next().unwrap();
    assert_eq!(
        base,
        Path::new("/home/u/proj"),
        "user rules match relative to the project root"
    );
    let mut att = Attacher::new(&ctx);
    assert_eq!(
        att.touch(&fs, &ctx, Path::new("/home/u/proj/src/main.rs")),
        1
    );
}

#[test]
fn nested_scans_are_shared_by_sessions_and_forgotten_on_change() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/p/.claude/rules/rs.md",
            "---\npaths: \"**/*.rs\"\n---\nRS",
        ),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let touched = |ctx: &Context| {
        let mut att = Attacher::new(ctx);
        att.touch(&fs, ctx, Path::new("/r/p/main.rs"));
        att.attachments
            .iter()
            .map(|a| a.record.path.display().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(touched(&ctx), ["/r/p/.claude/rules/rs.md"]);
    // A CLAUDE.md appears: the cached scan does not know it until told.
    fs.write("/r/p/CLAUDE.md", "P");
    assert_eq!(touched(&ctx), ["/r/p/.claude/rules/rs.md"]);
    ctx.forget(Path::new("/r/p/CLAUDE.md"));
    assert_eq!(
        touched(&ctx),
        ["/r/p/CLAUDE.md", "/r/p/.claude/rules/rs.md"]
    );
}

#[test]
fn a_rebuilt_walk_reparses_only_changed_files_and_never_serves_stale_text() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/CLAUDE.md", "A\n@inc.md"),
        ("/r/inc.md", "INC"),
    ]);
    let parses = std::sync::Arc::new(ParseCache::default());
    let first = build_with(&fs, &opts("/r"), parses.clone());
    assert_eq!(parses.len(), 2);
    fs.write("/r/inc.md", "INC v2");
    let second = build_with(&fs, &opts("/r"), parses.clone());
    assert_eq!(record(&first, "/r/inc.md").content, "INC");
    assert_eq!(record(&second, "/r/inc.md").content, "INC v2");
    assert_eq!(
        second.instructions_block(),
        build(&fs, &opts("/r")).instructions_block()
    );
}
