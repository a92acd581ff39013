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

mod program;

use std::collections::HashMap;
use std::path::{Component, Path};

use globset::GlobBuilder;

use super::message;
use program::{Index, Program};

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

/// Patterns one rule is matched with, after brace expansion: a real rule has a handful, so a
/// rule with 10,000 globs (or braces that expand to a million) is cut here, with a finding
/// ([`expand_braces_capped`] says when).
pub const MAX_PATTERNS: usize = 1_000;

/// A rule's `paths` after Claude Code's normalisation: `None` when the rule is unconditional
/// (no pattern left, or every pattern is `**`), else its patterns. At most [`MAX_PATTERNS`]; a
/// glob over [`MAX_GLOB_LEN`] is kept unexpanded and never matches (the rule stays conditional,
/// as in Claude Code).
pub fn normalize<S: AsRef<str>>(written: &[S]) -> Option<Vec<Pattern>> {
    let mut out = Vec::new();
    let mut left = MAX_PATTERNS;
    for (source, glob) in written.iter().enumerate() {
        let glob = glob.as_ref();
        if left == 0 {
            break;
        }
        if glob.len() > MAX_GLOB_LEN {
            // Cut to just over the cap: still refused by `translate`, without a copy of megabytes.
            let mut end = MAX_GLOB_LEN + 1;
            while !glob.is_char_boundary(end) {
                end += 1;
            }
            out.push(Pattern {
                text: glob[..end].to_string(),
                source,
            });
            left -= 1;
            continue;
        }
        let (expanded, _) = expand_braces_capped(glob, left);
        left -= expanded.len();
        for expanded in expanded {
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
/// expand too; a group without a comma, or an unbalanced brace, stays as written. At most
/// [`MAX_PATTERNS`] results.
pub fn expand_braces(glob: &str) -> Vec<String> {
    expand_braces_capped(glob, MAX_PATTERNS).0
}

/// [`expand_braces`], at most `limit` results (in order); `true` when some were left out.
/// Iterative, so a glob of a thousand groups needs no deep recursion.
pub fn expand_braces_capped(glob: &str, limit: usize) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut stack = vec![glob.to_string()];
    while let Some(g) = stack.pop() {
        match first_group(&g) {
            Some((open, close, parts)) => {
                let (head, tail) = (&g[..open], &g[close + 1..]);
                for part in parts.iter().rev() {
                    stack.push(format!("{head}{part}{tail}"));
                }
            }
            None => {
                if out.len() == limit {
                    return (out, true);
                }
                out.push(g);
            }
        }
    }
    (out, false)
}

/// The first top-level `{...}` group of `glob` that holds a comma: (its `{`, its `}`, its parts).
fn first_group(glob: &str) -> Option<(usize, usize, Vec<&str>)> {
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
                        return Some((open, i, parts));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
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

/// Globs longer than this (in bytes) are not matched: a real glob is a few dozen characters, and
/// a glob of megabytes is a hostile input (a finding says it is not used; Claude Code would
/// match it).
pub const MAX_GLOB_LEN: usize = 4_096;

/// The glob (in globset's grammar, matched with gitignore's "or an ancestor directory") that
/// implements one normalised gitignore-style pattern; `None` when the pattern never matches.
pub fn translate(pattern: &str) -> Result<Option<String>, String> {
    let p = pattern;
    if p.is_empty() {
        return Err("empty pattern".into());
    }
    if p.len() > MAX_GLOB_LEN {
        return Err(format!(
            "longer than {} characters",
            message::thousands(MAX_GLOB_LEN as u64)
        ));
    }
    if never_matches(p).is_some() {
        return Ok(None);
    }
    let (p, anchored) = match p.strip_prefix('/') {
        Some(rest) => (rest, true),
        None => (p, false),
    };
    let p = p.trim_end_matches('/');
    if p.is_empty() {
        return Err("pattern names no file".into());
    }
    Ok(Some(if anchored || p.contains('/') {
        p.to_string()
    } else {
        format!("**/{p}")
    }))
}

fn build(glob: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// Checks one pattern (with globset, which decides what is a valid glob); `Err` carries a
/// message fit for a diagnostic.
pub fn check(pattern: &str) -> Result<(), String> {
    if let Some(g) = translate(pattern)? {
        build(&g)?;
        build(&format!("{g}/**"))?;
    }
    Ok(())
}

/// Many rules' patterns, compiled once each and indexed: one match call answers "which rules
/// apply", trying only the globs whose literal parts the path holds.
#[derive(Clone, Debug, Default)]
pub struct RuleMatcher {
    programs: Vec<Program>,
    index: Index,
    /// For each compiled glob: every (rule index, pattern index within the rule) that wrote it.
    /// A glob several rules share (`**/*.ts`) is compiled and matched once.
    owners: Vec<Vec<(usize, usize)>>,
}

impl RuleMatcher {
    /// `rules[i]` is rule i's list of normalised patterns ([`normalize`]). Invalid patterns are
    /// left out ([`check`] reports them), and so are those that never match.
    pub fn new<'a, P: AsRef<str> + 'a>(rules: impl IntoIterator<Item = &'a [P]>) -> RuleMatcher {
        let mut m = RuleMatcher::default();
        let mut ids: HashMap<String, usize> = HashMap::new();
        for (rule, patterns) in rules.into_iter().enumerate() {
            for (pi, pattern) in patterns.iter().enumerate() {
                let Ok(Some(glob)) = translate(pattern.as_ref()) else {
                    continue;
                };
                let id = match ids.get(&glob) {
                    Some(&id) => id,
                    None => {
                        // globset decides validity; the program runs what it accepts.
                        if check(pattern.as_ref()).is_err() {
                            continue;
                        }
                        let Some(program) = Program::new(&glob) else {
                            continue;
                        };
                        let id = m.programs.len();
                        m.index.add(id as u32, program::key(&glob));
                        m.programs.push(program);
                        m.owners.push(Vec::new());
                        ids.insert(glob, id);
                        id
                    }
                };
                m.owners[id].push((rule, pi));
            }
        }
        m
    }

    /// For every matching rule, in rule order: (rule index, index of the first matching pattern).
    pub fn matches(&self, rel: &Path) -> Vec<(usize, usize)> {
        if self.owners.is_empty() {
            return Vec::new();
        }
        let path = rel.to_string_lossy();
        #[cfg(windows)]
        let path = std::borrow::Cow::<str>::Owned(path.replace('\\', "/"));
        let mut hits: Vec<(usize, usize)> = self
            .index
            .candidates(&path)
            .into_iter()
            .filter(|&id| self.programs[id as usize].matches(&path))
            .flat_map(|id| self.owners[id as usize].iter().copied())
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
    fn brace_expansion_is_capped() {
        let glob = "{a,b}".repeat(12); // 4,096 expansions
        let (some, cut) = expand_braces_capped(&glob, 1_000);
        assert!(cut);
        assert_eq!(some.len(), 1_000);
        assert_eq!(some[0], "a".repeat(12));
        let written: Vec<String> = (0..3).map(|_| glob.clone()).collect();
        let patterns = normalize(&written).expect("conditional");
        assert_eq!(patterns.len(), MAX_PATTERNS);
        assert!(patterns.iter().all(|p| p.source == 0));
        // A glob over the length cap stays (never matching): the rule is still conditional.
        let long = format!("src/{}", "x".repeat(MAX_GLOB_LEN));
        let patterns = normalize(&[long.as_str()]).expect("conditional");
        assert_eq!(patterns[0].text.len(), MAX_GLOB_LEN + 1);
        assert!(translate(&patterns[0].text).is_err());
        assert!(
            RuleMatcher::new([&patterns[..]])
                .matches(Path::new("src/a"))
                .is_empty()
        );
    }

    /// globset could not build a set of these (its automaton grew past its limit), and the
    /// matcher then matched nothing at all; each glob now costs its own few bytes.
    #[test]
    fn ten_thousand_distinct_rules_still_match() {
        let rules: Vec<Vec<String>> = (0..10_000)
            .map(|i| vec![format!("src/d{i}/**/*.ts"), format!("lib/x{i}")])
            .collect();
        let m = RuleMatcher::new(rules.iter().map(|r| &r[..]));
        assert_eq!(m.matches(Path::new("src/d9999/a/b.ts")), [(9_999, 0)]);
        assert_eq!(m.matches(Path::new("lib/x42/y.md")), [(42, 1)]);
        assert!(m.matches(Path::new("src/d10000/a.ts")).is_empty());
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
