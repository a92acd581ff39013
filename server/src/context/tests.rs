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
    let ext = finding(&ctx, "include-extension");
    assert_eq!(ext.line, Some(4));
    assert!(ext.message.contains(".png is not one"), "{}", ext.message);
    let external = finding(&ctx, "include-external");
    assert!(
        external.message.contains("outside /r")
            && external
                .message
                .contains("projects[\"/r\"].hasClaudeMdExternalIncludesApproved"),
        "{}",
        external.message
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
    assert!(
        deep.message
            .starts_with("not loaded: includes go at most 4 levels below CLAUDE.md"),
        "{}",
        deep.message
    );
}

#[test]
fn frontmatter_errors_and_bad_globs_are_findings_and_the_rule_still_loads() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/.claude/rules/broken.md",
            "---\ndescription: x\npaths:\n  - [unclosed\n---\nBROKEN",
        ),
        (
            "/r/.claude/rules/retried.md",
            "---\npaths: **/*.ts\n---\nRETRIED",
        ),
        (
            "/r/.claude/rules/badglob.md",
            "---\npaths: \"src/[oops\"\n---\nBAD",
        ),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let fm = finding(&ctx, "frontmatter");
    assert_eq!(fm.severity, Severity::Error);
    assert!(
        fm.message.starts_with("frontmatter is not valid YAML ("),
        "{}",
        fm.message
    );
    assert!(
        fm.message
            .contains("the rule has no paths and loads in every session")
    );
    // Invalid YAML that Claude Code's retry repairs: a warning, and the rule stays conditional.
    let retried = ctx
        .findings
        .iter()
        .find(|f| f.code == "frontmatter" && f.path.ends_with("retried.md"))
        .unwrap();
    assert_eq!(retried.severity, Severity::Warning);
    assert!(
        retried.message.contains("reads paths \"**/*.ts\""),
        "{}",
        retried.message
    );
    assert_eq!(
        record(&ctx, "/r/.claude/rules/retried.md").status,
        Status::Inactive
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
        "230 lines (limit 200): lines 201-230 are not loaded; keep index entries to one line and move detail into topic files"
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
            "---\npaths: \"**/*.rs\"\n---\nCOND\n@../../cond-inc.md",
        ),
        ("/r/p/cond-inc.md", "COND-INC"),
        ("/r/p/.claude/CLAUDE.md", "DOT"),
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
            "/r/p/.claude/CLAUDE.md",
            "/r/p/CLAUDE.local.md",
            // Listing order: cond.md (its include, in its place), then always.md; the
            // matching rule itself comes after the directory's files.
            "/r/p/cond-inc.md",
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
fn only_files_under_cwd_attach_anything() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        (
            "/r/.claude/rules/all.md",
            "---\npaths: \"**/*.txt\"\n---\nALL",
        ),
        ("/r/other/CLAUDE.md", "OTHER"),
        ("/r/sub/CLAUDE.md", "SUB-NESTED"),
    ]);
    let ctx = build(&fs, &opts("/r/sub"));
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/other/file.txt")), 0);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/file.txt")), 0);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/sub/d/file.txt")), 1);
    assert_eq!(
        att.attachments[0].record.path,
        Path::new("/r/.claude/rules/all.md")
    );
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
        "user rules match relative to cwd"
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

fn attached(att: &Attacher) -> Vec<String> {
    att.attachments
        .iter()
        .map(|a| a.record.path.display().to_string())
        .collect()
}

#[test]
fn cwd_is_resolved_to_its_real_path_and_pwd_paths_map_onto_it() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", ""),
        ("/w/repo/CLAUDE.md", "ROOT\n@inc.md"),
        ("/w/repo/inc.md", "INC"),
        ("/w/repo/sub/CLAUDE.md", "SUB"),
        (
            "/w/repo/.claude/rules/c.md",
            "---\npaths: src/**\n---\nCOND",
        ),
    ]);
    fs.symlink("/w/link", "repo");
    let ctx = build(&fs, &opts("/w/link"));
    assert_eq!(ctx.cwd, Path::new("/w/repo"));
    assert_eq!(ctx.pwd, Path::new("/w/link"));
    assert_eq!(loaded(&ctx), ["/w/repo/CLAUDE.md", "/w/repo/inc.md"]);
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/w/link/sub/f.txt"));
    att.touch(&fs, &ctx, Path::new("/w/link/src/a.ts"));
    assert_eq!(
        attached(&att),
        ["/w/repo/sub/CLAUDE.md", "/w/repo/.claude/rules/c.md"]
    );
}

#[test]
fn agents_md_fallback() {
    // Only a CLAUDE-family file with content on the walk turns it off; rules, a comment-only
    // CLAUDE.md and the user's file do not. AGENTS.md comes after its directory's rules, its
    // includes are followed (cwd boundary), and one below cwd never loads.
    let fs = MemFs::with_files([
        ("/home/u/.claude/CLAUDE.md", "USER"),
        ("/w/AGENTS.md", "ABOVE"),
        ("/w/repo/.git/HEAD", ""),
        ("/w/repo/CLAUDE.md", "<!-- nothing yet -->\n"),
        ("/w/repo/AGENTS.md", "REPO\n@sub/in.md\n@up.md"),
        ("/w/repo/up.md", "UP"),
        ("/w/repo/.claude/rules/r.md", "RULE"),
        ("/w/repo/sub/AGENTS.md", "SUB"),
        ("/w/repo/sub/in.md", "IN"),
        ("/w/repo/sub/deeper/AGENTS.md", "DEEPER"),
    ]);
    let ctx = build(&fs, &opts("/w/repo/sub"));
    assert_eq!(
        loaded(&ctx),
        [
            "/home/u/.claude/CLAUDE.md",
            "/w/AGENTS.md",
            "/w/repo/.claude/rules/r.md",
            "/w/repo/AGENTS.md",
            "/w/repo/sub/in.md",
            "/w/repo/sub/AGENTS.md",
        ]
    );
    let mut att = Attacher::new(&ctx);
    assert_eq!(
        att.touch(&fs, &ctx, Path::new("/w/repo/sub/deeper/f.txt")),
        0
    );
    // A CLAUDE.local.md with content anywhere on the walk turns the fallback off.
    fs.write("/w/CLAUDE.local.md", "LOCAL");
    let ctx = build(&fs, &opts("/w/repo/sub"));
    assert!(!loaded(&ctx).iter().any(|p| p.ends_with("AGENTS.md")));
    assert_eq!(record(&ctx, "/w/repo/AGENTS.md").status, Status::Inactive);
}

#[test]
fn conditional_rule_includes_load_at_startup_in_the_rules_place() {
    let fs = MemFs::with_files([
        ("/home/u/uinc.md", "USER-INC"),
        (
            "/home/u/.claude/rules/u.md",
            "---\npaths: \"*.py\"\n---\nU\n@~/uinc.md",
        ),
        ("/r/.git/HEAD", ""),
        ("/r/CLAUDE.md", "ROOT"),
        ("/r/inc.md", "INC"),
        (
            "/r/.claude/rules/c.md",
            "---\npaths: src/**\n---\nCOND\n@../../inc.md",
        ),
        ("/r/CLAUDE.local.md", "LOCAL"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(
        loaded(&ctx),
        [
            "/home/u/uinc.md",
            "/r/CLAUDE.md",
            "/r/inc.md",
            "/r/CLAUDE.local.md"
        ]
    );
    assert_eq!(record(&ctx, "/home/u/uinc.md").scope, Scope::User);
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/src/a.ts"));
    att.touch(&fs, &ctx, Path::new("/r/b.py"));
    // Only the rule files: their includes came at startup.
    assert_eq!(
        attached(&att),
        ["/r/.claude/rules/c.md", "/home/u/.claude/rules/u.md"]
    );
}

#[test]
fn attachment_order_is_managed_user_nested_then_the_walks_rules() {
    let fs = MemFs::with_files([
        (
            "/etc/claude-code/.claude/rules/m.md",
            "---\npaths: \"**/*.ts\"\n---\nM",
        ),
        ("/home/u/.claude/rules/u.md", "---\npaths: \"b/**\"\n---\nU"),
        (
            "/w/.claude/rules/above.md",
            "---\npaths: \"**/*.ts\"\n---\nABOVE",
        ),
        ("/w/repo/.git/HEAD", ""),
        (
            "/w/repo/.claude/rules/root.md",
            "---\npaths: \"a/**\"\n---\nROOT",
        ),
        (
            "/w/repo/a/.claude/rules/mid.md",
            "---\npaths: \"**/*.ts\"\n---\nMID",
        ),
        ("/w/repo/a/b/CLAUDE.md", "AB"),
        ("/w/repo/a/b/c/CLAUDE.md", "ABC"),
    ]);
    // cwd /w/repo/a: user globs are relative to cwd (`b/**` matches a/b/c/x.ts).
    let ctx = build(&fs, &opts("/w/repo/a"));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/w/repo/a/b/c/x.ts"));
    assert_eq!(
        attached(&att),
        [
            "/etc/claude-code/.claude/rules/m.md",
            "/home/u/.claude/rules/u.md",
            "/w/repo/a/b/CLAUDE.md",
            "/w/repo/a/b/c/CLAUDE.md",
            "/w/.claude/rules/above.md",
            "/w/repo/.claude/rules/root.md",
            "/w/repo/a/.claude/rules/mid.md",
        ]
    );
}

#[test]
fn a_touched_file_is_never_attached() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/.claude/rules/c.md", "---\npaths: src/**\n---\nCOND"),
        ("/r/sub/CLAUDE.md", "SUB\n@inc.md"),
        ("/r/sub/inc.md", "INC"),
        ("/r/sub/CLAUDE.local.md", "LOCAL"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/.claude/rules/c.md"));
    att.touch(&fs, &ctx, Path::new("/r/sub/inc.md"));
    att.touch(&fs, &ctx, Path::new("/r/src/a.ts"));
    assert_eq!(
        attached(&att),
        ["/r/sub/CLAUDE.md", "/r/sub/CLAUDE.local.md"]
    );
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/sub/CLAUDE.md"));
    assert_eq!(attached(&att), ["/r/sub/CLAUDE.local.md"]);
}

#[test]
fn linked_instruction_files_load_wherever_they_lead_and_include_from_there() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", ""),
        ("/w/repo/docs/main.md", "MAIN\n@inc.txt"),
        ("/w/repo/docs/inc.txt", "TARGET-DIR-INC"),
        ("/w/repo/inc.txt", "LINK-DIR-INC"),
        ("/w/outside/dot.md", "OUTSIDE-DOT\n@dot-inc.txt"),
        ("/w/outside/dot-inc.txt", "OUTSIDE-INC"),
    ]);
    fs.symlink("/w/repo/CLAUDE.md", "docs/main.md");
    fs.symlink("/w/repo/.claude/CLAUDE.md", "../../outside/dot.md");
    let ctx = build(&fs, &opts("/w/repo"));
    assert_eq!(
        loaded(&ctx),
        [
            "/w/repo/CLAUDE.md",
            "/w/repo/docs/inc.txt",
            "/w/repo/.claude/CLAUDE.md"
        ]
    );
    assert_eq!(
        record(&ctx, "/w/repo/CLAUDE.md").real,
        Path::new("/w/repo/docs/main.md")
    );
    // The outside file's include resolves outside cwd and is dropped; the link is reported.
    assert!(
        finding(&ctx, "include-external")
            .message
            .contains("dot-inc.txt")
    );
    let link = finding(&ctx, "instruction-link-outside");
    assert_eq!(link.path, Path::new("/w/repo/.claude/CLAUDE.md"));
    assert!(
        link.message.contains("/w/outside/dot.md"),
        "{}",
        link.message
    );
}

#[test]
fn includes_are_bounded_by_cwd_on_their_written_and_real_paths() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", ""),
        (
            "/w/repo/CLAUDE.md",
            "ROOT\n@docs/passwd.md\n@docs/keys/k.md\n@../outside-link.md\n@docs/alias.md\n@docs/t.md",
        ),
        ("/w/repo/docs/t.md", "T"),
        ("/w/repo/x.md", "X"),
        ("/w/outside/secret.txt", "SECRET"),
        ("/w/outside/keys/k.md", "KEY"),
    ]);
    fs.symlink("/w/repo/docs/alias.md", "t.md");
    fs.symlink("/w/repo/docs/passwd.md", "../../outside/secret.txt");
    fs.symlink("/w/repo/docs/keys", "../../outside/keys");
    fs.symlink("/w/outside-link.md", "repo/x.md");
    let ctx = build(&fs, &opts("/w/repo"));
    // The alias loads under the path written; `docs/t.md` after it is the same file.
    assert_eq!(loaded(&ctx), ["/w/repo/CLAUDE.md", "/w/repo/docs/alias.md"]);
    let external: Vec<_> = ctx
        .findings
        .iter()
        .filter(|f| f.code == "include-external")
        .map(|f| f.line)
        .collect();
    assert_eq!(external, [Some(1), Some(2), Some(3)]);
    assert_eq!(finding(&ctx, "include-duplicate").line, Some(5));
    // Approved: both paths may lie outside, and the includes show as written.
    fs.write(
        "/home/u/.claude.json",
        r#"{"projects": {"/w/repo": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
    );
    let ctx = build(&fs, &opts("/w/repo"));
    assert_eq!(
        loaded(&ctx),
        [
            "/w/repo/CLAUDE.md",
            "/w/repo/docs/passwd.md",
            "/w/repo/docs/keys/k.md",
            "/w/outside-link.md",
            "/w/repo/docs/alias.md",
        ]
    );
}

#[test]
fn the_include_boundary_is_cwd_and_the_approval_key_the_git_root() {
    let fs = MemFs::with_files([
        // A valid git directory (git's discovery passes over one without HEAD, objects, refs).
        ("/w/repo/.git/HEAD", "ref: refs/heads/main"),
        ("/w/repo/.git/objects/info/packs", ""),
        ("/w/repo/.git/refs/heads/main", ""),
        ("/w/repo/CLAUDE.md", "ROOT\n@inc.md\n@sub/in.md"),
        ("/w/repo/inc.md", "INC"),
        ("/w/repo/sub/in.md", "IN"),
    ]);
    let ctx = build(&fs, &opts("/w/repo/sub"));
    assert_eq!(loaded(&ctx), ["/w/repo/CLAUDE.md", "/w/repo/sub/in.md"]);
    let f = finding(&ctx, "include-external");
    assert!(
        f.message
            .contains("is above it. Start it in /w/repo, or set projects[\"/w/repo\"]"),
        "{}",
        f.message
    );
    // A key equal to cwd is not consulted; the git root's is.
    fs.write(
        "/home/u/.claude.json",
        r#"{"projects": {"/w/repo/sub": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
    );
    assert_eq!(loaded(&build(&fs, &opts("/w/repo/sub"))).len(), 2);
    fs.write(
        "/home/u/.claude.json",
        r#"{"projects": {"/w/repo": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
    );
    assert_eq!(loaded(&build(&fs, &opts("/w/repo/sub"))).len(), 3);
}

#[test]
fn rule_links_load_under_their_real_path_and_never_leave_cwd() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", ""),
        ("/w/repo/docs/r.md", "VIA-FILE-LINK"),
        ("/w/repo/shared/in.md", "VIA-DIR-LINK"),
        ("/w/repo/lib/a/b/cond.md", "---\npaths: src/*.ts\n---\nCOND"),
        ("/w/repo/.claude/notes.md", "NOTES"),
        ("/w/outside/k.md", "SECRET"),
        ("/w/outside/kc.md", "---\npaths: src/**\n---\nSECRET-COND"),
    ]);
    fs.symlink("/w/repo/.claude/rules/filelink.md", "../../docs/r.md");
    fs.symlink("/w/repo/.claude/rules/linked", "../../shared");
    fs.symlink("/w/repo/.claude/rules/cond.md", "../../lib/a/b/cond.md");
    fs.symlink("/w/repo/.claude/rules/loop", "..");
    fs.symlink("/w/repo/.claude/rules/self", ".");
    fs.symlink("/w/repo/.claude/rules/ext.md", "../../../outside/k.md");
    fs.symlink("/w/repo/.claude/rules/extcond.md", "../../../outside/kc.md");
    fs.symlink("/w/repo/.claude/rules/dangling.md", "nowhere.md");
    let ctx = build(&fs, &opts("/w/repo"));
    assert_eq!(
        loaded(&ctx),
        [
            "/w/repo/docs/r.md",
            "/w/repo/shared/in.md",
            "/w/repo/.claude/notes.md"
        ]
    );
    let outside: Vec<_> = ctx
        .findings
        .iter()
        .filter(|f| f.code == "rules-link-outside")
        .map(|f| f.path.display().to_string())
        .collect();
    assert_eq!(
        outside,
        [
            "/w/repo/.claude/rules/ext.md",
            "/w/repo/.claude/rules/extcond.md"
        ]
    );
    // A linked conditional rule matches relative to the folder holding the link's `.claude`.
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/w/repo/src/z.ts"));
    assert_eq!(attached(&att), ["/w/repo/lib/a/b/cond.md"]);
    // Approved: the outside unconditional rule loads, the conditional one still never attaches.
    fs.write(
        "/home/u/.claude.json",
        r#"{"projects": {"/w/repo": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
    );
    let ctx = build(&fs, &opts("/w/repo"));
    assert!(loaded(&ctx).contains(&"/w/outside/k.md".to_string()));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/w/repo/src/a/b.ts"));
    assert!(attached(&att).is_empty(), "{:?}", attached(&att));
}

#[test]
fn touched_files_are_judged_by_their_real_path() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", ""),
        (
            "/w/repo/.claude/rules/v.md",
            "---\npaths: vendor/**\n---\nVENDOR",
        ),
        (
            "/w/repo/.claude/rules/i.md",
            "---\npaths: inlib/**\n---\nINLIB",
        ),
        ("/w/repo/.claude/rules/l.md", "---\npaths: lib/**\n---\nLIB"),
        ("/w/repo/lib/CLAUDE.md", "LIB-CLAUDE"),
        ("/w/outside/vendor/CLAUDE.md", "SECRET"),
    ]);
    fs.symlink("/w/repo/vendor", "../outside/vendor");
    fs.symlink("/w/repo/inlib", "lib");
    let ctx = build(&fs, &opts("/w/repo"));
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/w/repo/vendor/f.txt")), 0);
    att.touch(&fs, &ctx, Path::new("/w/repo/inlib/h.txt"));
    assert_eq!(
        attached(&att),
        ["/w/repo/inlib/CLAUDE.md", "/w/repo/.claude/rules/i.md"]
    );
}

#[test]
fn entries_are_trimmed_like_javascript() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", ""),
        ("/r/CLAUDE.md", "\u{FEFF}BOM\n"),
        ("/r/CLAUDE.local.md", "\u{85}NEL\u{85}\n"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let block = ctx.instructions_block().unwrap();
    assert!(block.contains("checked into the codebase):\n\nBOM\n\n"));
    assert!(block.contains("not checked in):\n\n\u{85}NEL\u{85}\n</system-reminder>"));
}

// Caps against hostile trees: each one cut is a finding that says what was cut.

fn count(ctx: &Context, code: &str) -> usize {
    ctx.findings.iter().filter(|f| f.code == code).count()
}

#[test]
fn includes_past_the_per_file_cap_are_one_finding() {
    let text: String = (0..1_200).map(|i| format!("@gone/m{i}.md\n")).collect();
    let fs = MemFs::with_files([("/r/CLAUDE.md", text.as_str())]);
    let ctx = build(&fs, &opts("/r"));
    let skipped = ctx
        .files
        .iter()
        .filter(|f| f.kind == FileKind::Include)
        .count();
    assert_eq!(skipped, includes::MAX_PER_FILE);
    assert_eq!(count(&ctx, "include-not-found"), includes::MAX_PER_FILE);
    let f = finding(&ctx, "cap-includes");
    assert_eq!(
        (f.path.as_path(), f.line),
        (Path::new("/r/CLAUDE.md"), Some(1_000))
    );
    assert!(
        f.message.starts_with(
            "this file has 1,200 @includes; claude-context follows the first 1,000 and not the 200 from here on"
        ),
        "{}",
        f.message
    );
}

#[test]
fn includes_past_the_session_cap_are_said_once_per_file() {
    let mut files = vec![(
        "/r/CLAUDE.md".to_string(),
        (0..12)
            .map(|i| format!("@inc/i{i}.md\n"))
            .collect::<String>(),
    )];
    for i in 0..12 {
        files.push((
            format!("/r/inc/i{i}.md"),
            (0..1_000).map(|j| format!("@gone/{i}-{j}.md\n")).collect(),
        ));
    }
    let fs = MemFs::with_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let ctx = build(&fs, &opts("/r"));
    let cuts: Vec<(&Path, Option<usize>, &str)> = ctx
        .findings
        .iter()
        .filter(|f| f.code == "cap-session-includes")
        .map(|f| (f.path.as_path(), f.line, f.message.as_str()))
        .collect();
    // 9 files of 1,001 sites, then 990 of i9's: its last 10 and CLAUDE.md's last 2 are cut.
    assert_eq!(cuts.len(), 2, "{cuts:#?}");
    assert_eq!(
        (cuts[0].0, cuts[0].1),
        (Path::new("/r/inc/i9.md"), Some(990))
    );
    assert!(
        cuts[0].2.contains("already pulled in 10,000 includes")
            && cuts[0]
                .2
                .contains("this include and the 9 after it in this file are not loaded"),
        "{}",
        cuts[0].2
    );
    assert_eq!(
        (cuts[1].0, cuts[1].1),
        (Path::new("/r/CLAUDE.md"), Some(10))
    );
    assert!(
        cuts[1].2.contains("this include and the 1 after it"),
        "{}",
        cuts[1].2
    );
    assert!(record(&ctx, "/r/inc/i9.md").status == Status::Loaded);
    assert!(
        ctx.files
            .iter()
            .all(|f| f.path != Path::new("/r/inc/i10.md"))
    );
}

#[test]
fn rules_past_the_cap_are_counted_on_their_folder() {
    let fs = MemFs::with_files([("/r/CLAUDE.md", "TOP")]);
    for i in 0..load::MAX_RULES + 5 {
        fs.write(format!("/r/.claude/rules/r{i:05}.md"), format!("rule {i}"));
    }
    let ctx = build(&fs, &opts("/r"));
    let rules = ctx
        .files
        .iter()
        .filter(|f| f.kind == FileKind::Rule)
        .count();
    assert_eq!(rules, load::MAX_RULES);
    assert_eq!(count(&ctx, "cap-rules"), 1);
    let f = finding(&ctx, "cap-rules");
    assert_eq!(f.path, Path::new("/r/.claude/rules"));
    assert!(
        f.message.starts_with(
            "5 rule files in this folder are not read, from r10000.md on: 10,000 were read"
        ),
        "{}",
        f.message
    );
    assert!(!ctx.instructions_block().unwrap().contains("rule 10000"));
}

#[test]
fn text_past_the_byte_cap_is_not_read() {
    let big = "x".repeat(9 << 20);
    let fs = MemFs::with_files([("/r/CLAUDE.md", "TOP")]);
    for name in ["a", "b", "c", "d", "e"] {
        fs.write(format!("/r/.claude/rules/{name}.md"), &big);
    }
    let ctx = build(&fs, &opts("/r"));
    let loaded: Vec<&str> = ctx
        .entries()
        .filter_map(|e| e.path.file_name()?.to_str())
        .collect();
    assert_eq!(loaded, ["CLAUDE.md", "a.md", "b.md", "c.md"]);
    for late in ["/r/.claude/rules/d.md", "/r/.claude/rules/e.md"] {
        let r = record(&ctx, late);
        assert_eq!(r.status, Status::Skipped);
        assert!(
            r.reason.as_deref().unwrap_or_default().contains("32 MB"),
            "{r:?}"
        );
    }
    assert_eq!(count(&ctx, "cap-bytes"), 1);
    let f = finding(&ctx, "cap-bytes");
    assert_eq!(f.path, Path::new("/r/.claude/rules/d.md"));
    assert!(
        f.message.contains("nor any instruction file after it"),
        "{}",
        f.message
    );
}

#[test]
fn a_large_file_costs_what_is_sent() {
    let fat = format!("---\ndescription: {}\n---\nBody.\n", "x".repeat(60_000));
    let long = "word ".repeat(20_000);
    let memory: String = (0..5_000)
        .map(|i| format!("- entry {i}: {}\n", "y".repeat(90)))
        .collect();
    let fs = MemFs::with_files([
        ("/r/.claude/rules/fat.md", fat.as_str()),
        ("/r/CLAUDE.md", long.as_str()),
        (
            "/home/u/.claude/projects/-r/memory/MEMORY.md",
            memory.as_str(),
        ),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let large = |path: &str| {
        ctx.findings
            .iter()
            .find(|f| f.code == "large-file" && f.path == Path::new(path))
            .map(|f| f.message.clone())
    };
    assert_eq!(
        large("/r/.claude/rules/fat.md").as_deref(),
        Some(
            "large file, little of it sent: 60,028 characters, 60,022 in its frontmatter (not sent, but read and parsed in every session); ≈ 2 tokens sent with every request"
        )
    );
    assert_eq!(
        large("/r/CLAUDE.md").as_deref(),
        Some("large instruction file: 100,000 characters, ≈ 25,000 tokens sent with every request")
    );
    // MEMORY.md is cut to 200 lines: its cap finding says so, no size finding counts the rest.
    assert_eq!(large("/home/u/.claude/projects/-r/memory/MEMORY.md"), None);
    finding(&ctx, "memory-cap");
}

#[test]
fn directories_past_the_depth_cap_are_not_looked_at() {
    let deep = format!("/r{}", "/d".repeat(walk::MAX_DIR_DEPTH + 3));
    let fs = MemFs::with_files([("/r/CLAUDE.md", "TOP")]);
    // Made from the top down: MemFs makes missing parents recursively.
    let mut dir = PathBuf::from("/r");
    for _ in 0..walk::MAX_DIR_DEPTH + 3 {
        dir.push("d");
        fs.mkdir(&dir);
    }
    fs.write(format!("{deep}/CLAUDE.md"), "DEEP");
    let ctx = build(&fs, &opts(&deep));
    assert_eq!(loaded(&ctx), ["/r/CLAUDE.md"]);
    let f = finding(&ctx, "cap-depth");
    assert_eq!(f.path, Path::new(&deep));
    assert!(
        f.message.starts_with(
            "the working directory is 4,100 directories below /: claude-context looks for instruction files in the first 4,096 only"
        ),
        "{}",
        f.message
    );

    // Touching a file that deep below cwd attaches nothing, and says why.
    fs.write("/r/d/CLAUDE.md", "NESTED");
    let ctx = build(&fs, &opts("/r"));
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new(&format!("{deep}/x.ts"))), 0);
    assert_eq!(att.findings.len(), 1, "{:#?}", att.findings);
    assert_eq!(att.findings[0].code, "cap-depth");
    assert!(
        att.findings[0]
            .message
            .contains("4,099 directories below the working directory")
    );
}

#[test]
fn globs_past_the_per_rule_cap_are_one_finding() {
    let globs: String = (0..1_200).map(|i| format!("  - src/d{i}/**\n")).collect();
    let text = format!("---\npaths:\n{globs}---\nMANY\n");
    let fs = MemFs::with_files([("/r/.claude/rules/many.md", text.as_str())]);
    let ctx = build(&fs, &opts("/r"));
    let rule = record(&ctx, "/r/.claude/rules/many.md");
    assert_eq!(rule.status, Status::Inactive);
    assert_eq!(rule.globs.len(), globs::MAX_PATTERNS);
    assert!(
        rule.reason.as_deref().unwrap_or_default().len() < 200,
        "{rule:?}"
    );
    let f = finding(&ctx, "cap-globs");
    assert_eq!((f.line, f.start_col), (Some(1_002), 4));
    assert!(
        f.message.starts_with(
            "paths has 1,200 globs; claude-context matches the first 1,000 and not the 200 from here on"
        ),
        "{}",
        f.message
    );
    // Matched up to the cap, not past it.
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/src/d999/a.ts")), 1);
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/src/d1000/a.ts")), 0);
}

#[test]
fn braces_past_the_per_rule_cap_and_overlong_globs_are_said() {
    let braces = "{a,b}".repeat(12);
    let long = format!("src/{}", "x".repeat(globs::MAX_GLOB_LEN));
    let text = format!("---\npaths:\n  - \"{long}\"\n  - \"{braces}\"\n---\nR\n");
    let fs = MemFs::with_files([("/r/.claude/rules/r.md", text.as_str())]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(
        record(&ctx, "/r/.claude/rules/r.md").status,
        Status::Inactive
    );
    let f = finding(&ctx, "cap-globs");
    assert_eq!(f.line, Some(3));
    assert!(
        f.message
            .contains("expand to more patterns than claude-context matches for one rule (1,000)"),
        "{}",
        f.message
    );
    let f = finding(&ctx, "cap-glob-length");
    assert_eq!(f.line, Some(2));
    assert!(
        f.message.starts_with(
            "this glob is 4,100 characters long; claude-context matches globs of up to 4,096"
        ),
        "{}",
        f.message
    );
    assert!(f.message.len() < 500, "{}", f.message.len());
}

/// Claude Code lists names as UTF-8 text and cannot open a rule whose name is not: it is
/// skipped, and said (with its exact name; `--json` carries the bytes).
#[cfg(unix)]
#[test]
fn a_rule_name_that_is_not_utf8_is_reported() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().canonicalize().expect("real temp dir");
    let rules = root.join(".claude/rules");
    std::fs::create_dir_all(&rules).expect("mkdir");
    let name = std::ffi::OsStr::from_bytes(b"r\xe8gle.md");
    std::fs::write(rules.join(name), "LATIN1").expect("write");
    std::fs::create_dir(rules.join(std::ffi::OsStr::from_bytes(b"d\xe8p"))).expect("mkdir");
    std::fs::write(rules.join("ok.md"), "OK").expect("write");
    let mut o = opts(&root.to_string_lossy());
    o.home = None;
    let ctx = build(&crate::fs::RealFs, &o);
    assert_eq!(loaded(&ctx), [rules.join("ok.md").display().to_string()]);
    let said: Vec<(&Path, &str)> = ctx
        .findings
        .iter()
        .filter(|f| f.code == "name-not-utf8")
        .map(|f| (f.path.as_path(), f.message.as_str()))
        .collect();
    assert_eq!(said.len(), 2, "{said:#?}");
    let file = said
        .iter()
        .find(|(p, _)| *p == rules.join(name))
        .expect("the file");
    assert!(
        file.1
            .starts_with("rule not loaded: its name is not valid UTF-8, and Claude Code"),
        "{}",
        file.1
    );
    assert!(
        said.iter()
            .any(|(_, m)| m.starts_with("rules folder not read"))
    );
}

#[test]
fn one_rules_listing_reads_at_most_ten_thousand_folders_and_says_so() {
    let fs = MemFs::with_files([
        ("/p/CLAUDE.md", "top\n"),
        ("/p/.claude/rules/a.md", "RULE-A\n"),
    ]);
    for i in 0..10_050 {
        fs.mkdir(format!("/p/.claude/rules/d{i:05}"));
    }
    fs.write("/p/.claude/rules/d10049/late.md", "LATE\n");
    let ctx = build(&fs, &opts("/p"));
    let capped: Vec<_> = ctx
        .findings
        .iter()
        .filter(|f| f.code == "cap-rules-dirs")
        .collect();
    assert_eq!(capped.len(), 1, "said once");
    assert!(capped[0].message.contains("10,000 folders were read"));
    let files = loaded(&ctx);
    assert!(
        files.contains(&"/p/.claude/rules/a.md".to_string()),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|f| f.ends_with("late.md")),
        "past the cap: not read"
    );
}

/// k25: the files of a folder below cwd never follow an include out of cwd, approved or not
/// (relative, absolute, `~/`, above cwd inside the repository, and the second step of a chain);
/// their includes under cwd attach after them. `check`'s lint says so on the `@` line.
#[test]
fn nested_files_never_follow_an_include_out_of_cwd() {
    let fs = MemFs::with_files([
        ("/w/repo/.git/HEAD", "ref: refs/heads/main"),
        ("/w/repo/.git/objects/info/packs", ""),
        ("/w/repo/.git/refs/heads/main", ""),
        (
            "/home/u/.claude.json",
            r#"{"projects": {"/w/repo": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
        ),
        ("/home/u/h.md", "HOME INC"),
        ("/w/ext/x.md", "EXT X"),
        ("/w/ext/y.md", "EXT Y"),
        ("/w/ext/w.md", "EXT W"),
        ("/w/repo/top.md", "TOP"),
        ("/w/repo/CLAUDE.md", "ROOT\n@../ext/x.md"),
        (
            "/w/repo/sub/pkg/CLAUDE.md",
            "PKG\n@../../../ext/w.md\n@/w/ext/y.md\n@~/h.md\n@../../top.md\n@inner.md",
        ),
        ("/w/repo/sub/pkg/inner.md", "INNER\n@../../../ext/y.md"),
        ("/w/repo/sub/CLAUDE.md", "SUB"),
    ]);
    // The walk's own includes are approved (cwd /w/repo/sub: the root CLAUDE.md's include loads).
    let ctx = build(&fs, &opts("/w/repo/sub"));
    assert_eq!(
        loaded(&ctx),
        ["/w/repo/CLAUDE.md", "/w/ext/x.md", "/w/repo/sub/CLAUDE.md"]
    );
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/w/repo/sub/pkg/m.txt"));
    let attached: Vec<_> = att
        .attachments
        .iter()
        .map(|a| a.record.path.display().to_string())
        .collect();
    assert_eq!(
        attached,
        ["/w/repo/sub/pkg/CLAUDE.md", "/w/repo/sub/pkg/inner.md"]
    );
    let nested: Vec<_> = att
        .findings
        .iter()
        .filter(|f| f.code == "include-external-nested")
        .map(|f| (f.path.display().to_string(), f.line))
        .collect();
    assert_eq!(
        nested,
        [
            ("/w/repo/sub/pkg/CLAUDE.md".to_string(), Some(1)),
            ("/w/repo/sub/pkg/CLAUDE.md".to_string(), Some(2)),
            ("/w/repo/sub/pkg/CLAUDE.md".to_string(), Some(3)),
            ("/w/repo/sub/pkg/CLAUDE.md".to_string(), Some(4)),
            ("/w/repo/sub/pkg/inner.md".to_string(), Some(1)),
        ],
        "{:#?}",
        att.findings
    );
    assert!(
        att.findings[0]
            .message
            .contains("even with external includes approved"),
        "{}",
        att.findings[0].message
    );
    // The lint of that file, from a session in /w/repo/sub, says the same.
    let lint = LintOptions {
        cwd: "/w/repo/sub".into(),
        git_root: Some("/w/repo".into()),
        home: Some("/home/u".into()),
        config_dir: None,
    };
    let codes: Vec<_> = lint_file(&fs, Path::new("/w/repo/sub/pkg/CLAUDE.md"), &lint)
        .into_iter()
        .map(|f| (f.code, f.line))
        .collect();
    assert!(
        codes.contains(&("include-external-nested".to_string(), Some(1))),
        "{codes:?}"
    );
}

/// `claudeMdExcludes` in the records a preview shows: each excluded file is a record with status
/// `excluded`, the pattern and its settings file (an include target with its site, a nested file
/// in the session's records); a conditional rule that is excluded never fires; managed files and
/// MEMORY.md stay; an excluded CLAUDE.md gives no entry, so the AGENTS.md fallback applies.
#[test]
fn excluded_files_are_records_that_say_why() {
    let fs = MemFs::with_files([
        (
            "/home/u/.claude/settings.json",
            r#"{"claudeMdExcludes": ["**/inc.md", "/r/CLAUDE.md", "**/.claude/rules/c.md", "**/sub/CLAUDE.md", "**"]}"#,
        ),
        ("/etc/claude-code/CLAUDE.md", "MANAGED"),
        ("/home/u/.claude/projects/-r/memory/MEMORY.md", "- mem"),
        ("/r/CLAUDE.md", "ROOT"),
        ("/r/AGENTS.md", "AGENTS"),
        (
            "/r/.claude/rules/c.md",
            "---\npaths: src/**\n---\nCOND\n@inc.md",
        ),
        ("/r/inc.md", "INC"),
        ("/r/sub/CLAUDE.md", "SUB"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    // `**` excludes AGENTS.md too: only the managed file and MEMORY.md are left.
    assert_eq!(
        loaded(&ctx),
        [
            "/etc/claude-code/CLAUDE.md",
            "/home/u/.claude/projects/-r/memory/MEMORY.md"
        ]
    );
    let root = record(&ctx, "/r/CLAUDE.md");
    assert_eq!(root.status, Status::Excluded);
    let ex = root.excluded.as_ref().unwrap();
    assert_eq!(
        (ex.pattern.as_str(), ex.settings.as_path()),
        ("/r/CLAUDE.md", Path::new("/home/u/.claude/settings.json"))
    );
    assert_eq!(
        root.reason.as_deref(),
        Some(
            "excluded by the claudeMdExcludes pattern \"/r/CLAUDE.md\" of /home/u/.claude/settings.json"
        )
    );
    assert_eq!(record(&ctx, "/r/AGENTS.md").status, Status::Excluded);
    assert_eq!(
        record(&ctx, "/r/.claude/rules/c.md").status,
        Status::Excluded
    );
    assert!(
        !ctx.files.iter().any(|f| f.path == Path::new("/r/inc.md")),
        "an excluded rule's includes go with it"
    );
    assert_eq!(ctx.conditional_rules().count(), 0, "never fires");
    let mut att = Attacher::new(&ctx);
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/sub/f.txt")), 0);
    assert_eq!(att.records.len(), 1);
    assert_eq!(att.records[0].status, Status::Excluded);
    assert_eq!(
        att.records[0].excluded.as_ref().unwrap().pattern,
        "**/sub/CLAUDE.md"
    );
    assert_eq!(ctx.exclusion(Path::new("/etc/claude-code/CLAUDE.md")), None);
    assert_eq!(
        ctx.exclusion(Path::new("/home/u/.claude/projects/-r/memory/MEMORY.md")),
        None
    );

    // Without `**`: the excluded CLAUDE.md gives no entry, so AGENTS.md is the fallback; an
    // excluded include target is a record at its site, the includer and its other includes stay.
    fs.write(
        "/home/u/.claude/settings.json",
        r#"{"claudeMdExcludes": ["/r/CLAUDE.md", "**/inc.md"]}"#,
    );
    fs.write("/r/AGENTS.md", "AGENTS\n@inc.md\n@other.md");
    fs.write("/r/other.md", "OTHER");
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(
        loaded(&ctx),
        [
            "/etc/claude-code/CLAUDE.md",
            "/r/AGENTS.md",
            "/r/other.md",
            "/home/u/.claude/projects/-r/memory/MEMORY.md"
        ]
    );
    let inc = record(&ctx, "/r/inc.md");
    assert_eq!(inc.status, Status::Excluded);
    assert_eq!(inc.included_from.as_ref().unwrap().line, 1);
}

/// The managed `claudeMd` string is an entry right after the managed CLAUDE.md (first without
/// one), shown as `<managed-settings>`; in user settings it does nothing (with a warning), and
/// `CLAUDE_CODE_DISABLE_CLAUDE_MDS` removes it.
#[test]
fn the_managed_claude_md_string_is_an_entry() {
    let fs = MemFs::with_files([
        (
            "/etc/claude-code/managed-settings.json",
            r#"{"claudeMd": "  POLICY\n"}"#,
        ),
        ("/etc/claude-code/.claude/rules/m.md", "MANAGED RULE"),
        ("/home/u/.claude/settings.json", r#"{"claudeMd": "MINE"}"#),
        ("/r/CLAUDE.md", "ROOT"),
    ]);
    let ctx = build(&fs, &opts("/r"));
    let block = ctx.instructions_block().unwrap();
    assert!(
        block.contains("written.\n\nContents of <managed-settings> (organization-managed policy instructions):\n\nPOLICY\n\nContents of /etc/claude-code/.claude/rules/m.md"),
        "{block}"
    );
    assert!(!block.contains("MINE"));
    assert_eq!(finding(&ctx, "settings-claude-md-ignored").line, Some(0));
    let rec = record(&ctx, "/etc/claude-code/managed-settings.json");
    assert_eq!((rec.kind, rec.scope), (FileKind::Settings, Scope::Managed));
    let mut o = opts("/r");
    o.disabled = true;
    assert_eq!(build(&fs, &o).instructions_block(), None);
}

/// `CLAUDE_CONFIG_DIR` replaces `~/.claude` for the user's CLAUDE.md and rules, the settings,
/// the global config (the approval) and the memory folder; nothing under `~/.claude` is read.
#[test]
fn the_config_dir_replaces_the_users_folder() {
    let fs = MemFs::with_files([
        ("/home/u/.claude/CLAUDE.md", "DEFAULT USER"),
        (
            "/home/u/.claude/settings.json",
            r#"{"claudeMdExcludes": ["**"]}"#,
        ),
        (
            "/home/u/.claude.json",
            r#"{"projects": {"/r": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
        ),
        ("/home/u/.claude/projects/-r/memory/MEMORY.md", "- default"),
        ("/cfg/CLAUDE.md", "CFG USER"),
        ("/cfg/rules/c.md", "CFG RULE"),
        ("/cfg/rules/cc.md", "---\npaths: src/**\n---\nCFG COND"),
        (
            "/cfg/settings.json",
            r#"{"env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}}"#,
        ),
        ("/cfg/projects/-r/memory/MEMORY.md", "- cfg"),
        ("/r/CLAUDE.md", "ROOT\n@../ext.md"),
        ("/ext.md", "EXT"),
    ]);
    let mut o = opts("/r");
    o.config_dir = Some("/cfg".into());
    o.auto_memory = false; // CLAUDE_CODE_DISABLE_AUTO_MEMORY=1, overridden by the settings' env
    let ctx = build(&fs, &o);
    assert_eq!(
        loaded(&ctx),
        [
            "/cfg/CLAUDE.md",
            "/cfg/rules/c.md",
            "/r/CLAUDE.md",
            "/cfg/projects/-r/memory/MEMORY.md"
        ]
    );
    assert_eq!(finding(&ctx, "include-external").line, Some(1));
    let mut att = Attacher::new(&ctx);
    att.touch(&fs, &ctx, Path::new("/r/src/a.ts"));
    assert_eq!(
        att.attachments[0].record.path,
        Path::new("/cfg/rules/cc.md")
    );
    // The approval is read from `<dir>/.claude.json`.
    fs.write(
        "/cfg/.claude.json",
        r#"{"projects": {"/r": {"hasClaudeMdExternalIncludesApproved": true}}}"#,
    );
    assert!(loaded(&build(&fs, &o)).contains(&"/ext.md".to_string()));
    // A user rule in `<dir>/rules` is linted as a rule, in the user's scope.
    let lint = LintOptions {
        cwd: "/r".into(),
        git_root: None,
        home: Some("/home/u".into()),
        config_dir: Some("/cfg".into()),
    };
    fs.write("/cfg/rules/bad.md", "---\npaths: [unclosed\n---\nx");
    let codes: Vec<_> = lint_file(&fs, Path::new("/cfg/rules/bad.md"), &lint)
        .into_iter()
        .map(|f| f.code)
        .collect();
    assert!(codes.contains(&"invalid-glob".to_string()), "{codes:?}");
}

/// A repository's `autoMemoryDirectory` inside another project's memory folder (or inside
/// `~/.claude` but its `projects/`) is refused even in a trusted folder, by real path; this
/// project's own folder there, and the user's own settings, are not.
#[test]
fn a_repository_cannot_point_the_session_at_another_projects_memory() {
    let other = "/home/u/.claude/projects/-other/memory";
    let fs = MemFs::with_files([
        ("/r/CLAUDE.md", "ROOT"),
        (
            "/home/u/.claude/projects/-other/memory/MEMORY.md",
            "- secret",
        ),
        ("/home/u/.claude/projects/-r/memory/MEMORY.md", "- mine"),
    ]);
    let mut o = opts("/r");
    o.trust = crate::context::settings::Trust::trusted_folder();
    for bad in [
        other,
        "~/.claude/projects/-other/memory/x",
        "~/.claude/rules",
    ] {
        fs.write(
            "/r/.claude/settings.json",
            format!("{{\"autoMemoryDirectory\": \"{bad}\"}}"),
        );
        let ctx = build(&fs, &o);
        assert_eq!(
            ctx.memory_dir.as_deref(),
            Some(Path::new("/home/u/.claude/projects/-r/memory")),
            "{bad}"
        );
        assert!(
            loaded(&ctx).iter().all(|f| !f.contains("-other")),
            "{bad}: {:?}",
            loaded(&ctx)
        );
        let f = finding(&ctx, "settings-memory-dir");
        assert_eq!(f.path, Path::new("/r/.claude/settings.json"));
        // Untrusted: the gate is told it would be refused even then.
        let mut u = o.clone();
        u.trust = Default::default();
        let held = build(&fs, &u).held_memory_dir.unwrap();
        assert!(held.1.is_err(), "{bad}: {held:?}");
    }
    assert!(
        finding(&build(&fs, &o), "settings-memory-dir")
            .message
            .contains("Claude Code reads its settings"),
    );
    fs.write(
        "/r/.claude/settings.json",
        format!("{{\"autoMemoryDirectory\": \"{other}\"}}"),
    );
    assert!(
        finding(&build(&fs, &o), "settings-memory-dir")
            .message
            .contains("inside another project's memory folder"),
    );
    // This project's own folder there is fine.
    fs.write(
        "/r/.claude/settings.json",
        r#"{"autoMemoryDirectory": "~/.claude/projects/-r/memory/team"}"#,
    );
    assert_eq!(
        build(&fs, &o).memory_dir.as_deref(),
        Some(Path::new("/home/u/.claude/projects/-r/memory/team"))
    );
    // The user's own settings may share another checkout's memory on purpose.
    fs.write("/r/.claude/settings.json", "{}");
    fs.write(
        "/home/u/.claude/settings.json",
        format!("{{\"autoMemoryDirectory\": \"{other}\"}}"),
    );
    assert_eq!(build(&fs, &o).memory_dir.as_deref(), Some(Path::new(other)));
}

/// A settings `env` block acts as the environment, both ways; `autoMemoryEnabled: false` and a
/// refused `autoMemoryDirectory` say what they did.
#[test]
fn settings_env_and_memory_keys() {
    let fs = MemFs::with_files([
        ("/r/CLAUDE.md", "ROOT"),
        ("/home/u/.claude/projects/-r/memory/MEMORY.md", "- default"),
        ("/home/u/mem/MEMORY.md", "- moved"),
        (
            "/r/.claude/settings.json",
            r#"{"env": {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "true"}}"#,
        ),
    ]);
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(ctx.instructions_block(), None);
    assert!(ctx.disabled);
    assert_eq!(
        finding(&ctx, "settings-disable-claude-mds").path,
        Path::new("/r/.claude/settings.json")
    );
    let mut att = Attacher::new(&ctx);
    fs.write("/r/sub/CLAUDE.md", "SUB");
    assert_eq!(att.touch(&fs, &ctx, Path::new("/r/sub/f.txt")), 0);
    // "0" in settings turns off what the environment turned on.
    fs.write(
        "/r/.claude/settings.json",
        r#"{"env": {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "0"}, "autoMemoryDirectory": "~/mem"}"#,
    );
    let mut o = opts("/r");
    o.disabled = true;
    // Not trusted: the repository's memory folder waits (the default one is read); the loading
    // variable applies either way.
    let ctx = build(&fs, &o);
    assert_eq!(
        loaded(&ctx),
        [
            "/r/CLAUDE.md",
            "/home/u/.claude/projects/-r/memory/MEMORY.md"
        ]
    );
    assert_eq!(
        ctx.held_memory_dir,
        Some((
            PathBuf::from("/r/.claude/settings.json"),
            Ok(PathBuf::from("/home/u/mem"))
        ))
    );
    o.trust = crate::context::settings::Trust::trusted_folder();
    let ctx = build(&fs, &o);
    assert_eq!(loaded(&ctx), ["/r/CLAUDE.md", "/home/u/mem/MEMORY.md"]);
    assert_eq!(ctx.held_memory_dir, None);
    fs.write(
        "/r/.claude/settings.local.json",
        r#"{"autoMemoryDirectory": "relative/mem"}"#,
    );
    let ctx = build(&fs, &opts("/r"));
    assert!(loaded(&ctx).contains(&"/home/u/.claude/projects/-r/memory/MEMORY.md".to_string()));
    assert!(
        finding(&ctx, "settings-memory-dir")
            .message
            .contains("is relative"),
        "{:?}",
        ctx.findings
    );
    fs.write(
        "/r/.claude/settings.local.json",
        r#"{"autoMemoryEnabled": false}"#,
    );
    let ctx = build(&fs, &opts("/r"));
    assert_eq!(loaded(&ctx), ["/r/CLAUDE.md"]);
    assert_eq!(ctx.memory_dir, None);
}
