//! Conditional rules' globs: Claude Code's normalisation of `paths`, then gitignore-style
//! matching, compiled once per rules directory.
//!
//! Normalising ([`normalize`]): each written glob (already split at commas outside braces and
//! trimmed, see [`super::frontmatter::split_commas`]) has its braces expanded
//! (`src/*.{ts,tsx}` gives two patterns), then one trailing `/**` removed (`src/**` → `src`,
//! `**/**/**` → `**/**`, `/**` → nothing); empty patterns are dropped. A rule left with no
//! pattern, or with `**` only, is unconditional.
//!
//! Matching: a pattern is matched against the path relative to a base directory (the one
//! holding the `.claude/` folder; cwd for user and managed rules). Without a `/` it matches a
//! name at any depth (`*.txt`, `app.ts`, and `src` from `src/**`); with one it is anchored at the
//! base (`src/**/*.ts`); a leading `/` anchors too; a trailing `/` means a directory. As in
//! gitignore, a pattern that matches a directory matches everything below it. A pattern that
//! starts with `./` never matches (paths are never written that way), nor does `.`, a negation
//! (`!x`, alone in its set) or a gitignore comment (`#x`).

use std::collections::HashMap;
use std::path::{Component, Path};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// One normalised pattern of a rule, with the index of the written glob it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub text: String,
    pub source: usize,
}

impl AsRef<str> for Pattern {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// A rule's `paths` after Claude Code's normalisation: `None` when the rule is unconditional
/// (no pattern left, or every pattern is `**`), else its patterns.
pub fn normalize<S: AsRef<str>>(written: &[S]) -> Option<Vec<Pattern>> {
    let mut out = Vec::new();
    for (source, glob) in written.iter().enumerate() {
        for expanded in expand_braces(glob.as_ref()) {
            let text = match expanded.strip_suffix("/**") {
                Some(rest) => rest.to_string(),
                None => expanded,
            };
            if !text.is_empty() {
                out.push(Pattern { text, source });
            }
        }
    }
    if out.iter().all(|p| p.text == "**") {
        return None;
    }
    Some(out)
}

/// Brace expansion as shells and minimatch do it: `a{b,c}d` → `abd`, `acd`; nested groups
/// expand too; a group without a comma, or an unbalanced brace, stays as written.
pub fn expand_braces(glob: &str) -> Vec<String> {
    let bytes = glob.as_bytes();
    let mut stack = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => stack.push(i),
            b'}' => {
                if let Some(open) = stack.pop()
                    && stack.is_empty()
                {
                    let parts = split_top_level(&glob[open + 1..i]);
                    if parts.len() >= 2 {
                        let (head, tail) = (&glob[..open], &glob[i + 1..]);
                        return parts
                            .into_iter()
                            .flat_map(|part| expand_braces(&format!("{head}{part}{tail}")))
                            .collect();
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    vec![glob.to_string()]
}

/// Splits a brace group's inside at commas that are not in a nested group.
fn split_top_level(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

/// Why a (normalised) pattern can never match, in words for a diagnostic.
pub fn never_matches(pattern: &str) -> Option<&'static str> {
    if pattern.starts_with("./") || pattern == "." {
        Some("a path is never written with a leading `./`")
    } else if pattern.starts_with('!') {
        Some("a negation (`!`) excludes from nothing")
    } else if pattern.starts_with('#') {
        Some("a pattern starting with `#` is a comment in gitignore syntax")
    } else {
        None
    }
}

/// The globset patterns that implement one normalised gitignore-style pattern; empty when the
/// pattern never matches.
pub fn translate(pattern: &str) -> Result<Vec<String>, String> {
    let p = pattern;
    if p.is_empty() {
        return Err("empty pattern".into());
    }
    if never_matches(p).is_some() {
        return Ok(Vec::new());
    }
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
    /// `rules[i]` is rule i's list of normalised patterns ([`normalize`]). Invalid patterns are
    /// left out ([`check`] reports them), and so are those that never match.
    pub fn new<'a, P: AsRef<str> + 'a>(rules: impl IntoIterator<Item = &'a [P]>) -> RuleMatcher {
        let mut builder = GlobSetBuilder::new();
        let mut owners: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (rule, patterns) in rules.into_iter().enumerate() {
            for (pi, pattern) in patterns.iter().enumerate() {
                let Ok(globs) = translate(pattern.as_ref()) else {
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

/// Does one written glob match `rel` once normalised? (Used for hovers and examples; rule
/// activation uses [`RuleMatcher`].) A glob that alone would make a rule unconditional (`**`)
/// matches everything.
pub fn glob_matches(glob: &str, rel: &Path) -> bool {
    match normalize(&[glob]) {
        None => true,
        Some(patterns) => !RuleMatcher::new([&patterns[..]]).matches(rel).is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("app.ts", "src/x/app.ts", true),
            ("app.ts", "app.ts", true),
            ("*.txt", "inner/mod.txt", true),
            ("*.txt", "inner/mod.txt.bak", false),
            ("src/**", "src/a/b.rs", true),
            // `src/**` is `src` once normalised: a name, matched at any depth.
            ("src/**", "lib/src/a.rs", true),
            ("src/**/*.ts", "src/app.ts", true),
            ("src/**/*.ts", "src/a/b/app.ts", true),
            ("src/*.ts", "src/a/app.ts", false),
            ("src/*.ts", "lib/src/a.ts", false),
            ("**/*.test.ts", "src/app.test.ts", true),
            ("**/*.test.ts", "src/app.ts", false),
            ("src/{x,y}/*.ts", "src/x/app.ts", true),
            ("src/{x,y}/*.ts", "src/z/app.ts", false),
            ("lib/*.{md,txt}", "lib/n.txt", true),
            ("/top.md", "top.md", true),
            ("/top.md", "a/top.md", false),
            ("/src/*.ts", "src/a.ts", true),
            ("docs/", "docs/a/b.md", true),
            ("api", "x/api/handler.ts", true),
            ("**/api/**", "pkg/api/v1/x.go", true),
            ("docs/**", "src/x/app.ts", false),
            ("**/*", "a.ts", true),
            ("**/**/**", "a.ts", true),
            ("a", "a", true),
            ("a", "a---b", false),
            // Never: `./`, `.`, and what the YAML retry made of broken values.
            ("./src/*.ts", "src/a.ts", false),
            ("./**", "a.ts", false),
            ("[src/**", "src/a.ts", false),
            ("\"src/**", "src/a.ts", false),
            ("g/** # note", "g/x.txt", false),
        ];
        for (glob, path, want) in cases {
            assert_eq!(
                glob_matches(glob, Path::new(path)),
                *want,
                "{glob} vs {path}"
            );
        }
    }

    #[test]
    fn normalisation_decides_conditional() {
        let texts =
            |g: &[&str]| normalize(g).map(|p| p.into_iter().map(|p| p.text).collect::<Vec<_>>());
        for unconditional in [
            &["**"][..],
            &["**/**"],
            &["**", ""],
            &["**", "**"],
            &["/**"],
            &["{**,**/**}"],
            &[],
        ] {
            assert_eq!(texts(unconditional), None, "{unconditional:?}");
        }
        assert_eq!(texts(&["**", "src/**"]).unwrap(), ["**", "src"]);
        assert_eq!(texts(&["**/*"]).unwrap(), ["**/*"]);
        assert_eq!(texts(&["**/**/**"]).unwrap(), ["**/**"]);
        assert_eq!(texts(&["./**"]).unwrap(), ["."]);
        assert_eq!(
            texts(&["src/*.{ts,tsx}", "a/{b,{c,d}}/**"]).unwrap(),
            ["src/*.ts", "src/*.tsx", "a/b", "a/c", "a/d"]
        );
        let sources: Vec<usize> = normalize(&["x", "{a,b}"])
            .unwrap()
            .iter()
            .map(|p| p.source)
            .collect();
        assert_eq!(sources, [0, 1, 1]);
    }

    #[test]
    fn braces() {
        assert_eq!(expand_braces("{a}"), ["{a}"]);
        assert_eq!(expand_braces("{a,b"), ["{a,b"]);
        assert_eq!(
            expand_braces("x{a,b}y{1,2}"),
            ["xay1", "xay2", "xby1", "xby2"]
        );
        assert_eq!(expand_braces("\\{a,b}"), ["\\{a,b}"]);
    }

    #[test]
    fn invalid_and_never_matching_patterns() {
        assert!(check("src/[unclosed").is_err());
        assert!(check("{a,b").is_err());
        assert!(check("").is_err());
        assert!(check("src/**/*.ts").is_ok());
        for never in ["./src/*.ts", ".", "!neg", "#x"] {
            assert!(never_matches(never).is_some(), "{never}");
            assert!(
                check(never).is_ok(),
                "{never} is valid, it just never matches"
            );
        }
        assert_eq!(never_matches("src/./a"), None);
    }

    #[test]
    fn matcher_reports_rules_in_order_once() {
        let r0 = ["*.py".to_string()];
        let r1 = ["src".to_string(), "**/*.ts".to_string()];
        let r2 = ["[bad".to_string(), "app.ts".to_string()];
        let m = RuleMatcher::new([&r0[..], &r1[..], &r2[..]]);
        assert_eq!(m.matches(Path::new("src/app.ts")), vec![(1, 0), (2, 1)]);
        assert_eq!(m.matches(Path::new("x.py")), vec![(0, 0)]);
    }

    #[test]
    fn a_glob_shared_by_rules_matches_for_each() {
        let r0 = ["**/*.ts".to_string()];
        let r1 = ["docs".to_string(), "**/*.ts".to_string()];
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
