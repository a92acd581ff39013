//! Context-core benchmarks (`cargo bench --bench context`).
//!
//! P4 (`../shared/spec/quality.md`): rule activation for one opened file with 300 rules ≤ 50 µs,
//! measured as `Attacher::new` + `Attacher::touch` for a deep file of the standard tree (real
//! disk: nested directories are scanned, attached files are read) and on a `MemFs` holding 300
//! synthetic rules in one `.claude/rules` directory (glob matching without disk IO). Also the walk
//! (`context::build`), `features::preview::preview` without git, and the pure pieces (frontmatter,
//! comment stripping, include extraction, glob compilation and matching), so regressions show.
//!
//! The standard tree is `$CC_BENCH_TREE` (default `/tmp/cc-bench/standard`) with home
//! `$CC_BENCH_HOME` (default `<tree>-home`; the layout `<tree>/repo` + `<tree>/home` is found too).
//! When it is missing it is made with `../shared/bench/make-monorepo` (deterministic), and the
//! generator's JSON line is kept in `<tree>.json` for the sample paths.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use claude_context::assembly::{StartInput, assemble_touching};
use claude_context::context::{
    self, Attacher, Context, Options, comments, frontmatter, globs, includes,
};
use claude_context::features::preview::{Preview, from_assembly};
use claude_context::fs::{MemFs, RealFs};
use claude_context::host::Host;
use divan::Bencher;

fn main() {
    // Set up (and print what was set up) before divan starts its table.
    LazyLock::force(&TREE);
    LazyLock::force(&MEM);
    LazyLock::force(&MEM_SHARED);
    LazyLock::force(&SKILLS);
    divan::main();
}

/// The standard tree, its options and the file to open.
struct Tree {
    opts: Options,
    ctx: Context,
    /// The deepest sample source file (absolute).
    deep: PathBuf,
    /// A conditional rule file and the root CLAUDE.md, as text.
    rule_text: String,
    claude_md_text: String,
}

static TREE: LazyLock<Tree> = LazyLock::new(load_tree);

fn load_tree() -> Tree {
    let (root, home, json) = locate_tree();
    let samples = samples(&root, &json);
    let deep = samples
        .iter()
        .filter(|p| !p.ends_with(".md"))
        .max_by_key(|p| p.matches('/').count())
        .map(|p| root.join(p))
        .expect("no sample path");

    let mut env = Host::for_tests(&home);
    env.managed_dir = std::env::temp_dir().join("cc-bench-no-managed");
    env.auto_memory = true;
    let opts = env.context_options(&root, &[], None).expect("options");
    let ctx = context::build(&RealFs, &opts);

    // Sanity: the walk found instructions and the deep file activates rules.
    let mut attacher = Attacher::new(&ctx);
    let attached = attacher.touch(&RealFs, &ctx, &deep);
    let rules = ctx.conditional_rules().count();
    assert!(attached > 0, "{} attaches nothing", deep.display());
    eprintln!(
        "bench tree {}: {} files in the walk, {} conditional rules at start, {} attachments for {}",
        root.display(),
        ctx.files.len(),
        rules,
        attached,
        deep.strip_prefix(&root).unwrap_or(&deep).display()
    );

    let rule_path = ctx
        .conditional_rules()
        .map(|(_, r)| r.path.clone())
        .next()
        .expect("a conditional rule");
    let rule_text = std::fs::read_to_string(rule_path).expect("rule text");
    let claude_md_text = std::fs::read_to_string(root.join("CLAUDE.md")).expect("CLAUDE.md");
    Tree {
        opts,
        ctx,
        deep,
        rule_text,
        claude_md_text,
    }
}

/// (work tree, home, path of the generator's JSON line).
fn locate_tree() -> (PathBuf, PathBuf, PathBuf) {
    let tree = std::env::var_os("CC_BENCH_TREE")
        .map_or_else(|| PathBuf::from("/tmp/cc-bench/standard"), PathBuf::from);
    let json = PathBuf::from(format!("{}.json", tree.display()));
    let env_home = std::env::var_os("CC_BENCH_HOME").map(PathBuf::from);
    if !tree.join(".git").exists() && tree.join("repo/.git").exists() {
        // Layout made by other scripts: <tree>/repo with <tree>/home.
        let home = env_home.unwrap_or_else(|| tree.join("home"));
        return (tree.join("repo"), home, json);
    }
    let home = env_home.unwrap_or_else(|| PathBuf::from(format!("{}-home", tree.display())));
    if !tree.join(".git").exists() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let generator = workspace.join("../shared/bench/make-monorepo");
        eprintln!(
            "making the bench tree {} (home {})",
            tree.display(),
            home.display()
        );
        let out = std::process::Command::new("python3")
            .arg(&generator)
            .arg(&tree)
            .arg("--home")
            .arg(&home)
            .output()
            .expect("run make-monorepo");
        assert!(
            out.status.success(),
            "make-monorepo failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&json, &out.stdout).expect("write the tree's JSON line");
    }
    (tree, home, json)
}

/// The generator's sample paths (relative to the tree), or, without its JSON line, the deepest
/// source files found by walking the tree.
fn samples(root: &Path, json: &Path) -> Vec<String> {
    if let Ok(text) = std::fs::read_to_string(json)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(list) = v.get("samples").and_then(|s| s.as_array())
    {
        return list
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect();
    }
    let mut best: Vec<String> = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if [".ts", ".rs", ".py", ".go"]
                .iter()
                .any(|x| name.ends_with(x))
                && let Ok(rel) = path.strip_prefix(root)
            {
                best.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    best.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    best.truncate(10);
    best
}

// ---------------------------------------------------------------------------------------------
// Standard tree, real disk

/// P4: a new session's attacher, then the deep file touched (rule globs matched, nested
/// directories below cwd scanned, attached files read from disk).
#[divan::bench]
fn p4_touch_deep_file_standard(bencher: Bencher) {
    let t = &*TREE;
    bencher.bench(|| {
        let mut attacher = Attacher::new(&t.ctx);
        black_box(attacher.touch(&RealFs, &t.ctx, black_box(&t.deep)));
        attacher
    });
}

/// The same file touched again in the same session: only glob matching and the cached scan.
#[divan::bench]
fn touch_again_standard(bencher: Bencher) {
    let t = &*TREE;
    let mut attacher = Attacher::new(&t.ctx);
    attacher.touch(&RealFs, &t.ctx, &t.deep);
    bencher.bench_local(|| black_box(attacher.touch(&RealFs, &t.ctx, black_box(&t.deep))));
}

/// The session-start walk (the spec puts reading the instruction files at about 0.1 ms).
#[divan::bench]
fn walk_build_standard(bencher: Bencher) {
    let t = &*TREE;
    bencher.bench(|| context::build(&RealFs, black_box(&t.opts)));
}

/// `features::preview::preview` without git: attacher, touch, blocks, file list, totals.
#[divan::bench]
fn preview_no_git_standard(bencher: Bencher) {
    let t = &*TREE;
    let touched = vec![t.deep.clone()];
    bencher.bench(|| preview(&t.ctx, black_box(&touched)));
}

/// What `claude-context preview --json --no-git` does in-process: walk, preview, pretty JSON.
#[divan::bench]
fn build_preview_json_no_git_standard(bencher: Bencher) {
    let t = &*TREE;
    let touched = vec![t.deep.clone()];
    bencher.bench(|| {
        let ctx = context::build(&RealFs, &t.opts);
        let p = preview(&ctx, &touched);
        serde_json::to_string_pretty(&p).expect("json")
    });
}

/// The preview of a session touching `touched`, without the system prompt or git.
fn preview(ctx: &context::Context, touched: &[PathBuf]) -> Preview {
    let input = StartInput {
        without_system: true,
        ..StartInput::default()
    };
    let host = Host::default();
    let (attacher, a) = assemble_touching(&RealFs, &host, ctx, touched, &input);
    from_assembly(ctx, &attacher, a, 0)
}

// ---------------------------------------------------------------------------------------------
// Skills and MCP servers: what they add to a preview (real disk)

/// A project with 60 project skills, 20 user skills, 10 legacy commands and an `.mcp.json` of
/// three servers (one approved with a cached listing of 20 tools), in a temp folder.
struct SkillsTree {
    _dir: tempfile::TempDir,
    ctx: Context,
    state: PathBuf,
}

static SKILLS: LazyLock<SkillsTree> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = dir.path().canonicalize().expect("real temp dir");
    let (root, home, state) = (base.join("repo"), base.join("home"), base.join("state"));
    let write = |p: PathBuf, text: &str| {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    std::fs::create_dir_all(root.join(".git")).expect("git dir");
    write(root.join(".git/HEAD"), "ref: refs/heads/main\n");
    for i in 0..60 {
        write(
            root.join(format!(".claude/skills/s{i:02}/SKILL.md")),
            &format!(
                "---\ndescription: Project skill {i}, {}\n---\n{}\n",
                "d".repeat(150),
                "Body line.\n".repeat(200)
            ),
        );
    }
    for i in 0..20 {
        write(
            home.join(format!(".claude/skills/u{i:02}/SKILL.md")),
            &format!("---\ndescription: User skill {i}\n---\nBody.\n"),
        );
    }
    for i in 0..10 {
        write(
            root.join(format!(".claude/commands/c{i}.md")),
            "Run the thing with $ARGUMENTS.\n",
        );
    }
    write(
        root.join(".mcp.json"),
        r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}}"#,
    );
    write(
        root.join(".claude/settings.local.json"),
        r#"{"enabledMcpjsonServers": ["a"]}"#,
    );
    let mut host = Host::for_tests(&home);
    host.home = Some(home.clone());
    let opts = host.context_options(&root, &[], None).expect("options");
    let ctx = context::build(&RealFs, &opts);
    let tools = (0..20)
        .map(|i| claude_context::mcp::client::ToolInfo {
            name: format!("tool{i}"),
            description: "A tool. ".repeat(20),
            input_schema:
                serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})
                    .as_object()
                    .expect("object")
                    .clone(),
        })
        .collect();
    claude_context::mcp::cache::write(
        &RealFs,
        &state,
        &ctx.cwd,
        &claude_context::mcp::cache::Entry {
            server: "a".into(),
            entry: r#"{"command":"a"}"#.into(),
            date: "2026-01-01".into(),
            listing: Some(claude_context::mcp::client::Listing {
                tools,
                instructions: Some("Use a.".into()),
                ..Default::default()
            }),
            failure: None,
        },
    )
    .expect("cache");
    SkillsTree {
        _dir: dir,
        ctx,
        state,
    }
});

fn gather(t: &SkillsTree) -> claude_context::extensions::Extensions {
    let no_vars = |_: &str| None;
    claude_context::extensions::gather(
        &RealFs,
        &t.ctx,
        &claude_context::extensions::Input {
            add_dirs: &[],
            model: claude_context::models::DEFAULT_MODEL,
            window: 1_000_000,
            budget_variable: None,
            var: &no_vars,
            state_dir: Some(&t.state),
            live: None,
        },
    )
}

/// Skills discovered (90 files read) and listed under the budget, `.mcp.json` and
/// `~/.claude.json` read, one server's cached listing: what a preview adds to the walk.
#[divan::bench]
fn extensions_gather_90_skills_3_servers(bencher: Bencher) {
    let t = &*SKILLS;
    assert_eq!(gather(t).skills.skills.skills.len(), 90);
    bencher.bench(|| gather(black_box(t)));
}

/// The same project's walk, the baseline a preview already pays.
#[divan::bench]
fn walk_build_skills_project(bencher: Bencher) {
    let t = &*SKILLS;
    let opts = context::Options {
        cwd: t.ctx.cwd.clone(),
        home: t.ctx.home().map(Path::to_path_buf),
        ..context::Options::default()
    };
    bencher.bench(|| context::build(&RealFs, black_box(&opts)));
}

// ---------------------------------------------------------------------------------------------
// Pure pieces, on files of the standard tree

#[divan::bench]
fn frontmatter_split_rule(bencher: Bencher) {
    let text = TREE.rule_text.as_str();
    bencher.bench(|| frontmatter::split(black_box(text)));
}

#[divan::bench]
fn strip_comments_claude_md(bencher: Bencher) {
    let text = TREE.claude_md_text.as_str();
    bencher.bench(|| comments::strip_html_comments(black_box(text)).len());
}

#[divan::bench]
fn extract_includes_claude_md(bencher: Bencher) {
    let text = TREE.claude_md_text.as_str();
    bencher.bench(|| includes::extract(black_box(text)));
}

// ---------------------------------------------------------------------------------------------
// In memory: 300 rules in one .claude/rules directory (no disk IO)

const GLOBS: &[&str] = &[
    "**/*.ts",
    "**/*.tsx",
    "**/*.{ts,tsx}",
    "**/*.test.ts",
    "**/*.rs",
    "**/*.py",
    "src/**/*.go",
    "**/api/**",
    "**/db/**/*.py",
    "docs/**/*.md",
    "**/*_test.go",
    "packages/*/src/**/*.ts",
    "**/migrations/*.py",
    "**/components/**/*.tsx",
];

const MEM_ROOT: &str = "/repo";
const MEM_DEEP: &str = "/repo/packages/pkg005/src/api/db/migrations/core/m14048.py";
const EXTS: &[&str] = &["ts", "tsx", "rs", "py", "go", "md"];
const DIRS: &[&str] = &[
    "src",
    "lib",
    "api",
    "db",
    "components",
    "utils",
    "migrations",
    "core",
    "docs",
];

struct Mem {
    fs: MemFs,
    ctx: Context,
    /// Each conditional rule's globs, for the matcher benches.
    rule_globs: Vec<Vec<String>>,
}

/// 300 rules in `/repo/.claude/rules`, a quarter unconditional. `shared`: every glob is one of the
/// generator's 14 (so a deep file matches about a third of the rules); otherwise every rule has its
/// own globs (package-, directory- and extension-specific), and a deep file matches a handful.
fn mem_tree(shared: bool) -> Mem {
    let fs = MemFs::new();
    fs.mkdir(format!("{MEM_ROOT}/.git"));
    fs.write(
        format!("{MEM_ROOT}/CLAUDE.md"),
        "# Repo\n\n- keep it short.\n",
    );
    let mut rule_globs = Vec::new();
    // A fixed linear congruential sequence: deterministic, no rand dependency.
    let mut seed: u64 = 7;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    for r in 0..300 {
        let body = format!(
            "# Rule {r}\n\n- always handle errors in module {r}.\n- prefer small functions.\n"
        );
        let count = if r % 4 == 0 { 0 } else { 1 + next(3) };
        let globs: Vec<String> = (0..count)
            .map(|_| {
                if shared {
                    return GLOBS[next(GLOBS.len())].to_string();
                }
                let (pkg, ext, dir) = (next(30), EXTS[next(EXTS.len())], DIRS[next(DIRS.len())]);
                match next(5) {
                    0 => format!("packages/pkg{pkg:03}/**/*.{ext}"),
                    1 => format!("packages/pkg{pkg:03}/{dir}{}/**", next(100)),
                    2 => format!("**/{dir}/**/*.{ext}"),
                    3 => format!("**/*_{dir}{}.{ext}", next(100)),
                    _ => format!("packages/pkg{pkg:03}/**/{dir}/*.{{{ext},md}}"),
                }
            })
            .collect();
        let text = if globs.is_empty() {
            body
        } else {
            let list: String = globs.iter().map(|g| format!("  - \"{g}\"\n")).collect();
            format!("---\npaths:\n{list}---\n{body}")
        };
        fs.write(format!("{MEM_ROOT}/.claude/rules/rule{r:04}.md"), text);
        if !globs.is_empty() {
            rule_globs.push(globs);
        }
    }
    fs.write(MEM_DEEP, "def f(x):\n    return x\n");
    let ctx = context::build(&fs, &mem_options());
    let mut attacher = Attacher::new(&ctx);
    let attached = attacher.touch(&fs, &ctx, Path::new(MEM_DEEP));
    assert!(attached > 0, "the in-memory deep file attaches nothing");
    eprintln!(
        "in-memory tree ({}): {} conditional rules, {} attachments for {MEM_DEEP}",
        if shared {
            "14 shared globs"
        } else {
            "distinct globs"
        },
        ctx.conditional_rules().count(),
        attached
    );
    Mem {
        fs,
        ctx,
        rule_globs,
    }
}

fn mem_options() -> Options {
    Options {
        cwd: PathBuf::from(MEM_ROOT),
        managed_dir: PathBuf::from("/etc/claude-code"),
        ..Options::default()
    }
}

static MEM: LazyLock<Mem> = LazyLock::new(|| mem_tree(false));
static MEM_SHARED: LazyLock<Mem> = LazyLock::new(|| mem_tree(true));

fn touch_mem(bencher: Bencher, m: &Mem) {
    let deep = Path::new(MEM_DEEP);
    bencher.bench(|| {
        let mut attacher = Attacher::new(&m.ctx);
        black_box(attacher.touch(&m.fs, &m.ctx, black_box(deep)));
        attacher
    });
}

/// P4 without disk IO: 300 rules (225 conditional, distinct globs) in one directory, a new
/// session's attacher, a deep file touched.
#[divan::bench]
fn p4_touch_deep_file_memfs_300_rules(bencher: Bencher) {
    touch_mem(bencher, &MEM);
}

/// The same with the generator's 14 shared globs: about a third of the rules attach.
#[divan::bench]
fn touch_deep_file_memfs_300_rules_shared_globs(bencher: Bencher) {
    touch_mem(bencher, &MEM_SHARED);
}

/// The walk over the in-memory tree: 300 rules read and parsed, one glob set compiled.
#[divan::bench]
fn walk_build_memfs_300_rules(bencher: Bencher) {
    let m = &*MEM;
    let opts = mem_options();
    bencher.bench(|| context::build(&m.fs, black_box(&opts)));
}

/// Compiling the glob set of the 225 conditional rules (done once per rules directory).
#[divan::bench(args = [false, true])]
fn glob_compile_225_rules(bencher: Bencher, shared: bool) {
    let m = if shared { &*MEM_SHARED } else { &*MEM };
    bencher.bench(|| globs::RuleMatcher::new(m.rule_globs.iter().map(|g| &g[..])));
}

/// One match call against the compiled set: which of the 225 rules apply to a path.
#[divan::bench(args = [false, true])]
fn glob_match_225_rules(bencher: Bencher, shared: bool) {
    let m = if shared { &*MEM_SHARED } else { &*MEM };
    let matcher = globs::RuleMatcher::new(m.rule_globs.iter().map(|g| &g[..]));
    let rel = Path::new(MEM_DEEP)
        .strip_prefix(MEM_ROOT)
        .expect("below root");
    assert!(!matcher.matches(rel).is_empty());
    bencher.bench(|| matcher.matches(black_box(rel)));
}
