//! Hover texts (markdown): the effective instructions for a file, an `@include`'s target, and
//! what a `paths:` glob matches.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::context::globs::{self, RuleMatcher, relative_to};
use crate::context::{
    Attacher, Context, FileRecord, Finding, LintOptions, Status, estimate_tokens, frontmatter,
    lint_file,
};
use crate::features::files::FileList;
use crate::features::links::IncludeLink;
use crate::features::preview::PendingEdit;
use crate::fs::Fs;

pub use super::format::{display_path, file_url, thousands};

fn md_escape(s: &str) -> String {
    super::format::escape_text(s)
        .replace('|', "\\|")
        .replace('[', "\\[")
        .replace(']', "\\]")
}

fn link(path: &Path, base: &Path, home: Option<&Path>) -> String {
    format!(
        "[{}]({})",
        md_escape(&display_path(path, base, home)),
        file_url(path)
    )
}

/// The directory an instruction file speaks for: a rule's `.claude/` parent, else its own.
pub fn owner_dir(path: &Path) -> PathBuf {
    if crate::features::check::is_rule_path(path)
        && let Some(base) = crate::features::check::rules_base(path)
    {
        return base;
    }
    match path.parent() {
        Some(d) if d.ends_with(".claude") => d.parent().unwrap_or(d).to_path_buf(),
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("/"),
    }
}

/// What a file hover needs.
pub struct FileHover<'a> {
    pub ctx: &'a Context,
    /// What touching `file` alone attaches.
    pub attacher: &'a Attacher,
    /// What the other open files attach (shown apart); may include `file` itself.
    pub others: Option<&'a Attacher>,
    pub file: &'a Path,
    pub home: Option<&'a Path>,
    pub pending: &'a [PendingEdit],
}

struct Row {
    scope: &'static str,
    file: String,
    why: String,
}

/// Top-level records of `records` with the names of the loaded includes that follow each.
fn with_includes<'r>(
    records: impl Iterator<Item = &'r FileRecord>,
    base: &Path,
    home: Option<&Path>,
) -> Vec<(&'r FileRecord, Vec<String>)> {
    let mut out: Vec<(&FileRecord, Vec<String>)> = Vec::new();
    for r in records {
        if r.depth == 0 {
            out.push((r, Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push(display_path(&r.path, base, home));
        }
    }
    out
}

/// The effective instructions for a file: every contributing file with its scope and why it
/// applies, links to open them, the total, and pending edits.
pub fn file_hover(h: &FileHover<'_>) -> String {
    let base = h.ctx.cwd.as_path();
    let home = h.home;
    let mut rows = Vec::new();
    let loaded = h.ctx.files.iter().filter(|r| r.status == Status::Loaded);
    for (r, incs) in with_includes(loaded, base, home) {
        let mut file = link(&r.path, base, home);
        if !incs.is_empty() {
            let _ = write!(file, " (+ {})", md_escape(&incs.join(", ")));
        }
        let why = match &r.reason {
            Some(reason) => format!("always; {reason}"),
            None => "always".to_string(),
        };
        rows.push(Row {
            scope: r.scope.label(),
            file,
            why,
        });
    }
    let mine = h
        .attacher
        .attachments
        .iter()
        .filter(|a| a.trigger == h.file)
        .map(|a| &a.record);
    for (r, incs) in with_includes(mine, base, home) {
        let mut file = link(&r.path, base, home);
        if !incs.is_empty() {
            let _ = write!(file, " (+ {})", md_escape(&incs.join(", ")));
        }
        let why = match &r.matched {
            Some(m) => format!("`{}`", md_escape(&m.glob)),
            None => {
                let dir = owner_dir(&r.path);
                if h.file.parent() == Some(dir.as_path()) {
                    "nested: directory of this file".to_string()
                } else {
                    format!(
                        "nested: this file is below {}",
                        md_escape(&display_path(&dir, base, home))
                    )
                }
            }
        };
        rows.push(Row {
            scope: r.scope.label(),
            file,
            why,
        });
    }
    let instructions = h
        .ctx
        .instructions_block()
        .map_or(0, |t| estimate_tokens(&t));
    let attached: usize = h
        .attacher
        .attachments
        .iter()
        .filter(|a| a.trigger == h.file)
        .map(|a| estimate_tokens(&a.text()))
        .sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "**Claude instructions for `{}`** · ≈ {} tokens\n",
        md_escape(&display_path(h.file, base, home)),
        thousands((instructions + attached) as u64)
    );
    if rows.is_empty() {
        s.push_str("No instruction file applies to this file.\n");
    } else {
        s.push_str("| | file | why |\n|---|---|---|\n");
        for r in rows {
            let _ = writeln!(s, "| {} | {} | {} |", r.scope, r.file, r.why);
        }
    }
    let own: std::collections::HashSet<&Path> = h
        .attacher
        .attachments
        .iter()
        .map(|a| a.record.path.as_path())
        .collect();
    let others: Vec<String> = h
        .others
        .map(|o| o.attachments.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|a| {
            a.trigger != h.file && a.record.depth == 0 && !own.contains(a.record.path.as_path())
        })
        .map(|a| {
            format!(
                "{} (for `{}`)",
                link(&a.record.path, base, home),
                md_escape(&display_path(&a.trigger, base, home))
            )
        })
        .collect();
    if !others.is_empty() {
        let _ = write!(
            s,
            "\nAlso attached because of other open files: {}.\n",
            others.join(", ")
        );
    }
    for p in h.pending {
        let _ = write!(
            s,
            "\nPending: `{}` {}\n",
            md_escape(&display_path(&p.path, base, home)),
            p.message
        );
    }
    s
}

/// What an include hover needs.
pub struct IncludeHover<'a> {
    pub link: &'a IncludeLink,
    /// The including file: its findings ([`crate::context::lint_file`] with `lint`) say why a
    /// target does not load.
    pub file: &'a Path,
    pub lint: &'a LintOptions,
    pub preview_lines: usize,
    pub base: &'a Path,
    pub home: Option<&'a Path>,
    /// The `claudeMdExcludes` pattern that leaves the target out, if one does.
    pub exclusion: Option<&'a crate::context::settings::Exclusion>,
}

/// The target of an `@include`: whether it loads (and if not, why), its tokens, its first lines.
pub fn include_hover(fs: &dyn Fs, h: &IncludeHover<'_>) -> String {
    let l = h.link;
    let mut s = String::new();
    let Some(target) = &l.target else {
        let _ = write!(
            s,
            "**`@{}`** is not loaded: `~/` needs a home directory and HOME is not set.",
            l.written
        );
        return s;
    };
    let _ = writeln!(
        s,
        "**`@{}`** → {}\n",
        md_escape(&l.written),
        link(target, h.base, h.home)
    );
    // A finding on this `@`: most say why it is not loaded; a duplicate or a note about
    // sessions started elsewhere still loads.
    let findings = lint_file(fs, h.file, h.lint);
    let problem = findings.iter().find(|f| {
        f.line == Some(l.line) && f.start_col == l.start_col && f.code.starts_with("include-")
    });
    let loads_anyway = |f: &Finding| {
        matches!(
            f.code.as_str(),
            "include-duplicate" | "include-subdirectory-sessions"
        )
    };
    if let Some(f) = problem
        && !loads_anyway(f)
    {
        let _ = writeln!(s, "**Not loaded**: {}", f.message);
        return s;
    }
    if let Some(ex) = h.exclusion {
        let _ = writeln!(
            s,
            "**Not loaded**: excluded by the claudeMdExcludes pattern `{}` of {}",
            md_escape(&ex.pattern),
            link(&ex.settings, h.base, h.home)
        );
        return s;
    }
    match fs.read_text(target) {
        Ok(text) => {
            let tokens = estimate_tokens(&text);
            match problem {
                Some(f) if f.code == "include-duplicate" => {
                    let _ = writeln!(s, "Loaded once per session: {}", f.message);
                }
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "Loads · ≈ {} tokens\n\n{}",
                        thousands(tokens as u64),
                        f.message
                    );
                }
                None => {
                    let _ = writeln!(s, "Loads · ≈ {} tokens", thousands(tokens as u64));
                }
            }
            let lines: Vec<&str> = text.lines().take(h.preview_lines).collect();
            if !lines.is_empty() {
                let fence = if text.contains("```") { "~~~~" } else { "```" };
                let _ = write!(s, "\n{fence}markdown\n{}\n{fence}\n", lines.join("\n"));
                let total = text.lines().count();
                if total > lines.len() {
                    let _ = writeln!(s, "… {} more lines", total - lines.len());
                }
            }
        }
        Err(e) => {
            let _ = writeln!(s, "**Not loaded**: {e}");
        }
    }
    s
}

/// The `paths:` glob under a cursor at (`line`, byte `col`) of a rule's text.
pub fn glob_at(text: &str, line: usize, col: usize) -> Option<frontmatter::PathGlob> {
    let globs = frontmatter::split(text).0?.paths?;
    globs
        .into_iter()
        .find(|g| g.line == line && g.col <= col && col <= g.col + g.glob.len())
}

/// How many workspace files a glob matches, with examples. `files` are absolute; `None` while the
/// workspace's file list is being read.
pub fn glob_hover(glob: &str, base: &Path, files: Option<&FileList>, examples: usize) -> String {
    let mut s = format!(
        "**paths `{}`** (relative to `{}`)\n\n",
        md_escape(glob),
        base.display()
    );
    let Some(patterns) = globs::normalize(&[glob]) else {
        s.push_str("Matches everything: a rule whose globs are all `**` loads in every session, like a rule without `paths`.\n");
        return s;
    };
    if let Some(stripped) = glob.strip_prefix("./") {
        let _ = writeln!(
            s,
            "Never matches: Claude Code matches paths written without a leading `./`. Write `{}`.",
            md_escape(stripped)
        );
        return s;
    }
    for p in &patterns {
        if let Err(e) = globs::check(&p.text) {
            let _ = writeln!(s, "Invalid glob: {e}. It matches nothing.");
            return s;
        }
        if let Some(why) = globs::never_matches(&p.text) {
            let _ = writeln!(s, "Never matches: {why}.");
            return s;
        }
    }
    let Some(files) = files else {
        s.push_str("Counting matching files… (the workspace file list is being read)\n");
        return s;
    };
    let matcher = RuleMatcher::new([&patterns[..]]);
    let mut count = 0usize;
    let mut shown = Vec::new();
    files.for_each(|f| {
        if let Some(rel) = relative_to(f, base)
            && !matcher.matches(rel).is_empty()
        {
            count += 1;
            if shown.len() < examples {
                shown.push(rel.display().to_string());
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    match count {
        0 => s.push_str("Matches **no file** in this workspace: the rule never applies.\n"),
        n => {
            let _ = writeln!(
                s,
                "Matches **{}** workspace file{}, e.g.:\n",
                thousands(n as u64),
                if n == 1 { "" } else { "s" }
            );
            for e in shown {
                let _ = writeln!(s, "- `{}`", md_escape(&e));
            }
        }
    }
    s
}

/// Whether `path` configures MCP servers (`.mcp.json`, `~/.claude.json`): its hover is
/// [`mcp_hover`].
pub fn is_mcp_config(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == crate::mcp::config::MCP_FILE || n == ".claude.json")
}

/// Whether `path` is a skill's `SKILL.md` or a legacy command (`.claude/commands/**.md`): its
/// hover is [`skill_hover`].
pub fn is_skill_or_command(path: &Path) -> bool {
    crate::features::check::is_skill_file(path)
        || (path.extension().is_some_and(|e| e == "md")
            && path.ancestors().any(|a| a.ends_with(".claude/commands")))
}

/// The hover of a `SKILL.md` (or a legacy command): how the session lists it, what it costs,
/// what hides it, the commands it runs. `None` when the file is not one of the session's skills.
pub fn skill_hover(
    ext: &crate::extensions::Extensions,
    file: &Path,
    base: &Path,
    home: Option<&Path>,
) -> Option<String> {
    use crate::skills::Listed;
    let sl = &ext.skills;
    let mut md = String::new();
    if let Some(sh) = sl.skills.shadowed.iter().find(|s| s.skill.file == file) {
        md.push_str(&format!(
            "**Skill `{}`**: hidden by {} of the same name: the model never sees this one.\n",
            md_escape(&sh.skill.name),
            md_escape(&display_path(&sh.by, base, home))
        ));
        return Some(md);
    }
    let i = sl.skills.skills.iter().position(|s| s.file == file)?;
    let sk = &sl.skills.skills[i];
    md.push_str(&format!(
        "**Skill `{}`** ({})",
        md_escape(&sk.display_name()),
        match sk.source {
            crate::skills::Source::AddDir => "an --add-dir folder",
            other => other.label(),
        }
    ));
    let tokens = crate::context::estimate_tokens(&sl.entries[i]);
    let state = match sl.listed[i] {
        Listed::Full => format!("listed in full ({tokens} tokens)"),
        Listed::Reduced => format!(
            "cut to its name by the listing budget ({} of {} characters used): the model sees only `- {}`",
            sl.listing.width,
            sl.listing.budget,
            md_escape(&sk.display_name())
        ),
        Listed::NameOnly => "listed by name only (skillOverrides)".into(),
        Listed::Hidden => {
            "not listed: `disable-model-invocation: true` (the user runs it; the Skill tool refuses it)".into()
        }
        Listed::Off => "not listed (skillOverrides)".into(),
        Listed::Conditional => format!(
            "not in the startup listing: `paths: {}`; listed after the first tool result that touches a matching file",
            md_escape(&sk.paths.as_deref().unwrap_or_default().join(", "))
        ),
    };
    md.push_str(&format!(": {state}.\n\n"));
    if matches!(sl.listed[i], Listed::Full | Listed::NameOnly) {
        md.push_str(&format!("```\n{}\n```\n\n", sl.entries[i]));
    }
    md.push_str(&format!(
        "Invoking it adds its body: about {} tokens.\n",
        sk.bytes.div_ceil(4)
    ));
    if sk.description_cut {
        md.push_str("\nIts description is longer than the listing keeps: it is cut with `…`.\n");
    }
    if !sk.shell.is_empty() {
        md.push_str(&format!(
            "\n⚠ Runs shell commands when invoked (never to preview): {}.\n",
            sk.shell
                .iter()
                .map(|c| format!("`{}`", md_escape(c)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(md)
}

/// The hover of an `.mcp.json` (or `~/.claude.json`): each server it configures, its status,
/// tools and what they cost now and once loaded.
pub fn mcp_hover(ext: &crate::extensions::Extensions, file: &Path) -> String {
    let mut md = String::from(
        "**MCP servers**\n\n| server | status | tools | tokens now | once loaded |\n|---|---|---|---|---|\n",
    );
    let mut any = false;
    for st in ext.servers.iter().filter(|s| s.server.source == file) {
        any = true;
        let known = st.listing.is_some();
        let now = (st.names_chars() + st.instructions_chars()).div_ceil(4);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            md_escape(&st.server.name),
            st.status.label(),
            if known {
                st.tool_names().len().to_string()
            } else {
                "unknown".into()
            },
            if known { now.to_string() } else { "—".into() },
            if known {
                st.definitions_bytes().div_ceil(4).to_string()
            } else {
                "—".into()
            },
        ));
    }
    if !any {
        return "**MCP servers**: none configured here (or the file is not valid JSON).".into();
    }
    md.push_str("\nA project's servers start only once you approve them; their tools come from the last connection (`claude-context preview --mcp-connect` lists them now).\n");
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Options, build};
    use crate::features::links::include_links;
    use crate::fs::MemFs;

    fn tree() -> MemFs {
        MemFs::with_files([
            ("/h/.claude/CLAUDE.md", "User rules."),
            (
                "/p/CLAUDE.md",
                "Project rules. @docs/style.md\n@docs/missing.md\n",
            ),
            ("/p/docs/style.md", "Style line 1\nStyle line 2\n"),
            (
                "/p/.claude/rules/ts.md",
                "---\npaths: \"src/**/*.ts\"\n---\nTypeScript rule.\n",
            ),
            (
                "/p/.claude/rules/py.md",
                "---\npaths: \"**/*.py\"\n---\nPython rule.\n",
            ),
            // Invalid YAML, repaired by Claude Code's retry: conditional, not loaded at start.
            (
                "/p/.claude/rules/api.md",
                "---\npaths: src/api/**\n---\nAPI rule.\n",
            ),
            ("/p/src/api/CLAUDE.md", "API rules."),
            ("/p/src/api/handler.ts", "x"),
            ("/p/src/cart.py", "x"),
        ])
    }

    fn ctx(fs: &MemFs) -> Context {
        build(
            fs,
            &Options {
                cwd: "/p".into(),
                home: Some("/h".into()),
                managed_dir: "/m".into(),
                auto_memory: false,
                ..Options::default()
            },
        )
    }

    #[test]
    fn file_hover_lists_provenance() {
        let fs = tree();
        let ctx = ctx(&fs);
        let file = Path::new("/p/src/api/handler.ts");
        let mut att = Attacher::new(&ctx);
        att.touch(&fs, &ctx, file);
        let mut others = Attacher::new(&ctx);
        others.touch(&fs, &ctx, Path::new("/p/src/cart.py"));
        others.touch(&fs, &ctx, file);
        let md = file_hover(&FileHover {
            ctx: &ctx,
            attacher: &att,
            others: Some(&others),
            file,
            home: Some(Path::new("/h")),
            pending: &[],
        });
        assert!(
            md.starts_with("**Claude instructions for `src/api/handler.ts`** · ≈ "),
            "{md}"
        );
        assert!(
            md.contains("| user | [~/.claude/CLAUDE.md](file:///h/.claude/CLAUDE.md) | always |"),
            "{md}"
        );
        assert!(
            md.contains("[CLAUDE.md](file:///p/CLAUDE.md) (+ docs/style.md) | always |"),
            "{md}"
        );
        assert!(
            md.contains("[.claude/rules/ts.md](file:///p/.claude/rules/ts.md) | `src/**/*.ts` |"),
            "{md}"
        );
        assert!(md.contains("[src/api/CLAUDE.md](file:///p/src/api/CLAUDE.md) | nested: directory of this file |"), "{md}");
        assert!(
            md.contains("[.claude/rules/api.md](file:///p/.claude/rules/api.md) | `src/api/**` |"),
            "a rule whose YAML needed the retry is conditional: {md}"
        );
        assert!(
            md.contains("Also attached because of other open files: [.claude/rules/py.md]"),
            "{md}"
        );
        assert!(
            !md.contains("missing.md"),
            "skipped includes are not contributors: {md}"
        );
    }

    #[test]
    fn include_hover_shows_target_or_reason() {
        let fs = tree();
        let text = fs.read_text(Path::new("/p/CLAUDE.md")).unwrap();
        let file = Path::new("/p/CLAUDE.md");
        let links = include_links(&text, file, Some(Path::new("/h")));
        let lint = crate::context::LintOptions {
            cwd: "/p".into(),
            home: Some("/h".into()),
            config_dir: None,
            ..Default::default()
        };
        let h = |l| {
            include_hover(
                &fs,
                &IncludeHover {
                    link: l,
                    file,
                    lint: &lint,
                    preview_lines: 1,
                    base: Path::new("/p"),
                    home: None,
                    exclusion: None,
                },
            )
        };
        let ok = h(&links[0]);
        assert!(ok.contains("Loads · ≈ 7 tokens"), "{ok}");
        assert!(
            ok.contains("Style line 1") && !ok.contains("Style line 2"),
            "{ok}"
        );
        assert!(ok.contains("… 1 more lines"), "{ok}");
        let missing = h(&links[1]);
        assert!(
            missing.contains("**Not loaded**: include not found: docs/missing.md"),
            "{missing}"
        );
    }

    #[test]
    fn glob_hover_counts_matches() {
        let files =
            FileList::from_paths(Path::new("/p"), ["/p/src/a.ts", "/p/src/b/c.ts", "/p/x.py"]);
        let s = glob_hover("src/**/*.ts", Path::new("/p"), Some(&files), 1);
        assert!(s.contains("Matches **2** workspace files"), "{s}");
        assert!(s.contains("- `src/a.ts`") && !s.contains("c.ts"), "{s}");
        assert!(glob_hover("*.go", Path::new("/p"), Some(&files), 5).contains("**no file**"));
        assert!(glob_hover("[bad", Path::new("/p"), Some(&files), 5).contains("Invalid glob"));
        // Normalised as Claude Code does: `src/**` is `src`, a name matched at any depth.
        let files = FileList::from_paths(Path::new("/p"), ["/p/lib/src/x.ts", "/p/src/a.ts"]);
        assert!(
            glob_hover("src/**", Path::new("/p"), Some(&files), 5)
                .contains("**2** workspace files")
        );
        assert!(
            glob_hover("./src/*.ts", Path::new("/p"), Some(&files), 5).contains("Never matches")
        );
        assert!(glob_hover("**", Path::new("/p"), Some(&files), 5).contains("Matches everything"));
        let text = "---\npaths:\n  - \"src/**/*.ts\"\n---\n";
        assert_eq!(glob_at(text, 2, 6).unwrap().glob, "src/**/*.ts");
        assert!(glob_at(text, 1, 0).is_none());
    }

    #[test]
    fn urls_and_numbers() {
        assert_eq!(file_url(Path::new("/a b/c#.md")), "file:///a%20b/c%23.md");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
