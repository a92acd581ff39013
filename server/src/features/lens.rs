//! The code lens at the top of an instruction file: its tokens and where it applies
//! ("always", "active for 3 open files", "inactive: no open file matches ...").

use std::path::{Path, PathBuf};

use crate::context::globs::{RuleMatcher, relative_to};
use crate::context::{Context, FileKind, Status, comments, estimate_tokens, frontmatter};
use crate::features::check::is_rule_path;
use crate::features::hover::{display_path, owner_dir, thousands};
use crate::fs::Fs;

/// Names of at most this many open files are listed.
const NAMED_FILES: usize = 3;

fn names(files: &[&PathBuf]) -> String {
    let mut shown: Vec<String> = files
        .iter()
        .take(NAMED_FILES)
        .map(|f| {
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if files.len() > NAMED_FILES {
        shown.push(format!("+{}", files.len() - NAMED_FILES));
    }
    shown.join(", ")
}

fn count(n: usize) -> String {
    format!("{n} open file{}", if n == 1 { "" } else { "s" })
}

/// The lens title for `file`, given the walk of its project and the open files.
pub fn lens_title(fs: &dyn Fs, ctx: &Context, file: &Path, open: &[PathBuf]) -> String {
    let record = ctx
        .files
        .iter()
        .find(|r| r.path == file || (r.real == file && r.depth == 0));
    let text = fs.read_text(file).unwrap_or_default();
    let (fm, body) = frontmatter::split(&text);
    let own_tokens = record.filter(|r| r.tokens > 0).map_or_else(
        || estimate_tokens(&comments::strip_html_comments(body)),
        |r| r.tokens,
    );
    let tokens = format!("≈ {} tokens", thousands(own_tokens as u64));
    let base = ctx.cwd.as_path();
    // A rule is conditional when its globs, normalised as Claude Code does, are not all `**`
    // (the YAML retry included: `paths: **/*.ts` is conditional).
    let globs: Vec<String> = if is_rule_path(file) {
        fm.and_then(|f| f.paths)
            .map(|g| g.into_iter().map(|g| g.glob).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let patterns = crate::context::globs::normalize(&globs).unwrap_or_default();
    let globs = if patterns.is_empty() {
        Vec::new()
    } else {
        globs
    };
    // Excluded by a `claudeMdExcludes` pattern: in the walk, or (a nested file, attached on a
    // touch) by the same patterns.
    let exclusion = match record {
        Some(r) if r.status == Status::Excluded => r.excluded.clone(),
        None => ctx.exclusion(file),
        Some(_) => None,
    };
    let where_ = match record {
        _ if exclusion.is_some() => {
            let ex = exclusion.expect("checked");
            format!(
                "excluded: not loaded, by the claudeMdExcludes pattern {} of {}",
                crate::context::message::quoted(&ex.pattern),
                display_path(&ex.settings, base, None)
            )
        }
        Some(r) if r.status == Status::Loaded && r.depth == 0 => {
            if r.kind == FileKind::Memory {
                match &r.reason {
                    Some(reason) => format!("always loaded (auto-memory; {reason})"),
                    None => "always loaded (auto-memory)".to_string(),
                }
            } else {
                "always loaded".to_string()
            }
        }
        Some(r) if r.status == Status::Loaded => match &r.included_from {
            Some(site) => format!(
                "loaded: included from {}:{}",
                display_path(&site.path, base, None),
                site.line + 1
            ),
            None => "loaded".to_string(),
        },
        Some(r) if r.status == Status::Skipped || r.status == Status::Empty => {
            format!("not loaded: {}", r.reason.as_deref().unwrap_or("skipped"))
        }
        Some(r) if r.status == Status::Inactive && r.globs.is_empty() => {
            format!("not loaded: {}", r.reason.as_deref().unwrap_or("inactive"))
        }
        _ if !globs.is_empty() => {
            // A conditional rule: which open files activate it.
            let rule_base = ctx.rule_base(file);
            let matcher = RuleMatcher::new([&patterns[..]]);
            let active: Vec<&PathBuf> = open
                .iter()
                .filter(|f| {
                    relative_to(f, &rule_base).is_some_and(|rel| !matcher.matches(rel).is_empty())
                })
                .collect();
            if active.is_empty() {
                format!("inactive: no open file matches {}", globs.join(", "))
            } else {
                format!("active for {} ({})", count(active.len()), names(&active))
            }
        }
        _ => {
            // Nested below the session's directory: attached when a file below it is touched.
            let dir = owner_dir(file);
            if dir.starts_with(&ctx.cwd) && dir != ctx.cwd {
                let active: Vec<&PathBuf> = open
                    .iter()
                    .filter(|f| f.starts_with(&dir) && f.as_path() != file)
                    .collect();
                let shown = display_path(&dir, base, None);
                if active.is_empty() {
                    format!("inactive: no open file under {shown}/")
                } else {
                    format!(
                        "nested: active for {} under {shown}/ ({})",
                        count(active.len()),
                        names(&active)
                    )
                }
            } else {
                format!("not loaded in sessions started in {}", ctx.cwd.display())
            }
        }
    };
    format!("{tokens} · {where_}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Options, build};
    use crate::fs::MemFs;

    #[test]
    fn titles() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", "Project rules, forty characters long...."),
            (
                "/p/.claude/rules/ts.md",
                "---\npaths: \"**/*.ts\"\n---\nTS rule.\n",
            ),
            (
                "/p/.claude/rules/py.md",
                "---\npaths: \"**/*.py\"\n---\nPython rule.\n",
            ),
            // Invalid YAML that Claude Code repairs: still a conditional rule.
            (
                "/p/.claude/rules/unquoted.md",
                "---\npaths: **/*.ts\n---\nTS too.\n",
            ),
            ("/p/.claude/rules/all.md", "---\npaths: \"**\"\n---\nAll.\n"),
            ("/p/src/api/CLAUDE.md", "API rules."),
            ("/p/src/api/handler.ts", "x"),
            ("/p/src/cart.ts", "x"),
        ]);
        let ctx = build(
            &fs,
            &Options {
                cwd: "/p".into(),
                managed_dir: "/m".into(),
                ..Options::default()
            },
        );
        let open = vec![
            PathBuf::from("/p/src/api/handler.ts"),
            PathBuf::from("/p/src/cart.ts"),
        ];
        let t = |p: &str| lens_title(&fs, &ctx, Path::new(p), &open);
        assert_eq!(t("/p/CLAUDE.md"), "≈ 10 tokens · always loaded");
        assert_eq!(
            t("/p/.claude/rules/ts.md"),
            "≈ 3 tokens · active for 2 open files (handler.ts, cart.ts)"
        );
        assert_eq!(
            t("/p/.claude/rules/py.md"),
            "≈ 4 tokens · inactive: no open file matches **/*.py"
        );
        assert_eq!(
            t("/p/.claude/rules/unquoted.md"),
            "≈ 2 tokens · active for 2 open files (handler.ts, cart.ts)"
        );
        assert_eq!(t("/p/.claude/rules/all.md"), "≈ 2 tokens · always loaded");
        assert_eq!(
            t("/p/src/api/CLAUDE.md"),
            "≈ 3 tokens · nested: active for 1 open file under src/api/ (handler.ts)"
        );
    }

    /// A file a `claudeMdExcludes` pattern leaves out says so, in the walk and below cwd; the
    /// managed CLAUDE.md never is.
    #[test]
    fn an_excluded_file_says_so() {
        let fs = MemFs::with_files([
            ("/p/CLAUDE.md", "Project rules."),
            ("/p/CLAUDE.local.md", "Mine."),
            ("/p/.claude/rules/r.md", "Rule."),
            ("/p/src/api/CLAUDE.md", "API rules."),
            ("/m/CLAUDE.md", "Managed."),
            (
                "/h/.claude/settings.json",
                r#"{"claudeMdExcludes": ["**/CLAUDE.local.md", "/p/src/**", "**/rules/*.md", "/m/**"]}"#,
            ),
        ]);
        let ctx = build(
            &fs,
            &Options {
                cwd: "/p".into(),
                home: Some("/h".into()),
                managed_dir: "/m".into(),
                ..Options::default()
            },
        );
        let t = |p: &str| lens_title(&fs, &ctx, Path::new(p), &[]);
        assert_eq!(t("/p/CLAUDE.md"), "≈ 4 tokens · always loaded");
        assert_eq!(
            t("/p/CLAUDE.local.md"),
            "≈ 2 tokens · excluded: not loaded, by the claudeMdExcludes pattern \"**/CLAUDE.local.md\" of /h/.claude/settings.json"
        );
        assert!(
            t("/p/.claude/rules/r.md")
                .ends_with("pattern \"**/rules/*.md\" of /h/.claude/settings.json"),
            "{}",
            t("/p/.claude/rules/r.md")
        );
        assert!(
            t("/p/src/api/CLAUDE.md")
                .contains("excluded: not loaded, by the claudeMdExcludes pattern \"/p/src/**\""),
            "{}",
            t("/p/src/api/CLAUDE.md")
        );
        assert_eq!(t("/m/CLAUDE.md"), "≈ 2 tokens · always loaded");
    }
}
