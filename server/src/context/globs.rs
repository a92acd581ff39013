//! Gitignore-style globs for conditional rules, compiled once per rules directory.
//!
//! A pattern is matched against the path relative to a base directory (the one holding the
//! `.claude/` folder). Without a `/` it matches a name at any depth (`*.txt`, `app.ts`); with one
//! it is anchored at the base (`src/**/*.ts`); a leading `/` anchors too; a trailing `/` means a
//! directory. As in gitignore, a pattern that matches a directory matches everything below it.

use std::collections::HashMap;
use std::path::{Component, Path};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The globset patterns that implement one gitignore-style pattern.
pub fn translate(pattern: &str) -> Result<Vec<String>, String> {
    let p = pattern.trim();
    if p.is_empty() {
        return Err("empty pattern".into());
    }
    if p.starts_with('!') {
        return Err("negated patterns (`!`) are not supported in paths".into());
    }
    let p = p.strip_prefix("./").unwrap_or(p);
    let (p, anchored) = match p.strip_prefix('/') {
        Some(rest) => (rest, true),
        None => (p, false),
    };
    let p = p.trim_end_matches('/');
    if p.is_empty() {
        return Err("pattern names no file".into());
    }
    let base = if anchored || p.contains('/') {
        p.to_string()
    } else {
        format!("**/{p}")
    };
    let mut out = vec![base.clone()];
    if !base.ends_with("/**") {
        out.push(format!("{base}/**"));
    }
    Ok(out)
}

fn build(glob: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// Checks one pattern; `Err` carries a message fit for a diagnostic.
pub fn check(pattern: &str) -> Result<(), String> {
    for g in translate(pattern)? {
        build(&g)?;
    }
    Ok(())
}

/// Many rules' patterns in one automaton: one match call answers "which rules apply".
#[derive(Clone, Debug, Default)]
pub struct RuleMatcher {
    set: GlobSet,
    /// For each compiled glob: every (rule index, pattern index within the rule) that wrote it.
    /// A glob several rules share (`**/*.ts`) is compiled and matched once.
    owners: Vec<Vec<(usize, usize)>>,
}

impl RuleMatcher {
    /// `rules[i]` is rule i's pattern list. Invalid patterns are left out; [`check`] reports them.
    pub fn new<'a>(rules: impl IntoIterator<Item = &'a [String]>) -> RuleMatcher {
        let mut builder = GlobSetBuilder::new();
        let mut owners: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (rule, patterns) in rules.into_iter().enumerate() {
            for (pi, pattern) in patterns.iter().enumerate() {
                let Ok(globs) = translate(pattern) else {
                    continue;
                };
                let Ok(built) = globs
                    .iter()
                    .map(|g| build(g))
                    .collect::<Result<Vec<_>, _>>()
                else {
                    continue;
                };
                for (text, g) in globs.into_iter().zip(built) {
                    let i = *index.entry(text).or_insert_with(|| {
                        builder.add(g);
                        owners.push(Vec::new());
                        owners.len() - 1
                    });
                    owners[i].push((rule, pi));
                }
            }
        }
        let set = builder.build().unwrap_or_default();
        RuleMatcher { set, owners }
    }

    /// For every matching rule, in rule order: (rule index, index of the first matching pattern).
    pub fn matches(&self, rel: &Path) -> Vec<(usize, usize)> {
        if self.owners.is_empty() {
            return Vec::new();
        }
        let mut hits: Vec<(usize, usize)> = self
            .set
            .matches(rel)
            .into_iter()
            .flat_map(|i| self.owners[i].iter().copied())
            .collect();
        hits.sort_unstable();
        hits.dedup_by_key(|h| h.0);
        hits
    }
}

/// `path` relative to `base`, when it lies below it.
pub fn relative_to<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
    let rel = path.strip_prefix(base).ok()?;
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(rel)
}

/// The directory holding the `.claude/` folder of a rule file.
pub fn rules_base(rule: &Path) -> Option<std::path::PathBuf> {
    rule.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".claude"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// Does one pattern match `rel`? (Used for hovers and examples; rule activation uses [`RuleMatcher`].)
pub fn pattern_matches(pattern: &str, rel: &Path) -> bool {
    let patterns = [pattern.to_string()];
    !RuleMatcher::new([&patterns[..]]).matches(rel).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, &str, bool)] = &[
            ("app.ts", "src/x/app.ts", true),
            ("app.ts", "app.ts", true),
            ("*.txt", "inner/mod.txt", true),
            ("*.txt", "inner/mod.txt.bak", false),
            ("src/**", "src/a/b.rs", true),
            ("src/**", "lib/src/a.rs", false),
            ("src/**/*.ts", "src/app.ts", true),
            ("src/**/*.ts", "src/a/b/app.ts", true),
            ("src/*.ts", "src/a/app.ts", false),
            ("**/*.test.ts", "src/app.test.ts", true),
            ("**/*.test.ts", "src/app.ts", false),
            ("src/{x,y}/*.ts", "src/x/app.ts", true),
            ("src/{x,y}/*.ts", "src/z/app.ts", false),
            ("/top.md", "top.md", true),
            ("/top.md", "a/top.md", false),
            ("docs/", "docs/a/b.md", true),
            ("api", "x/api/handler.ts", true),
            ("**/api/**", "pkg/api/v1/x.go", true),
            ("docs/**", "src/x/app.ts", false),
        ];
        for (pattern, path, want) in cases {
            assert_eq!(
                pattern_matches(pattern, Path::new(path)),
                *want,
                "{pattern} vs {path}"
            );
        }
    }

    #[test]
    fn invalid_patterns_are_reported() {
        assert!(check("src/[unclosed").is_err());
        assert!(check("{a,b").is_err());
        assert!(check("!neg").is_err());
        assert!(check("").is_err());
        assert!(check("src/**/*.ts").is_ok());
    }

    #[test]
    fn matcher_reports_rules_in_order_once() {
        let r0 = ["*.py".to_string()];
        let r1 = ["src/**".to_string(), "**/*.ts".to_string()];
        let r2 = ["[bad".to_string(), "app.ts".to_string()];
        let m = RuleMatcher::new([&r0[..], &r1[..], &r2[..]]);
        assert_eq!(m.matches(Path::new("src/app.ts")), vec![(1, 0), (2, 1)]);
        assert_eq!(m.matches(Path::new("x.py")), vec![(0, 0)]);
    }

    #[test]
    fn a_glob_shared_by_rules_matches_for_each() {
        let r0 = ["**/*.ts".to_string()];
        let r1 = ["docs/**".to_string(), "**/*.ts".to_string()];
        let r2 = ["*.ts".to_string()];
        let m = RuleMatcher::new([&r0[..], &r1[..], &r0[..], &r2[..]]);
        assert_eq!(
            m.matches(Path::new("src/app.ts")),
            vec![(0, 0), (1, 1), (2, 0), (3, 0)]
        );
        assert_eq!(
            m.matches(Path::new("docs/app.ts")),
            vec![(0, 0), (1, 0), (2, 0), (3, 0)]
        );
        assert!(m.matches(Path::new("src/app.rs")).is_empty());
    }

    #[test]
    fn relative_to_requires_a_descendant() {
        assert_eq!(
            relative_to(Path::new("/r/src/a.ts"), Path::new("/r")),
            Some(Path::new("src/a.ts"))
        );
        assert_eq!(relative_to(Path::new("/other/a.ts"), Path::new("/r")), None);
        assert_eq!(relative_to(Path::new("/r"), Path::new("/r")), None);
    }
}
