//! gitignore rules (pure): a `.gitignore`-format file compiled with globset, following git's wildmatch rules (globset
//! matches bytes, as wildmatch does: `?` is one byte). A pattern the translation cannot express (POSIX character
//! classes, escapes or non-ASCII inside brackets, bytes that are not UTF-8) marks the file as exotic, and the native
//! engine declines: the git CLI answers.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::bytes_to_path;

/// One rule of a gitignore-format file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IgnoreRule {
    negated: bool,
    dir_only: bool,
}

/// A gitignore-format file (`.gitignore`, `info/exclude`, `core.excludesFile`) compiled with git's rules: the last
/// matching pattern decides, `!` re-includes, a trailing `/` matches directories only, a pattern without a slash
/// matches the name at any depth, one with a slash matches the path from the file's directory (`*` never crosses
/// `/`, `**` does as a whole component).
#[derive(Debug, Default)]
pub(super) struct IgnoreFile {
    /// Patterns without a slash, matched against the name.
    names: GlobSet,
    name_rules: Vec<usize>,
    /// Patterns with a slash, matched against the path relative to the file's directory.
    paths: GlobSet,
    path_rules: Vec<usize>,
    rules: Vec<IgnoreRule>,
    /// A pattern this translation does not reproduce (POSIX classes, bad syntax, bytes that are not UTF-8): the
    /// native engine declines.
    pub(super) exotic: bool,
    /// The first such line, for the reason given.
    pub(super) exotic_line: Option<String>,
}

/// A git wildmatch pattern in globset's syntax (`None` when there is no faithful translation).
fn translate_pattern(p: &str) -> Option<String> {
    let chars: Vec<char> = p.chars().collect();
    let n = chars.len();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    while i < n {
        match chars[i] {
            '\\' => {
                out.push('\\');
                out.push(*chars.get(i + 1)?);
                i += 2;
            }
            '[' => {
                out.push('[');
                i += 1;
                if matches!(chars.get(i), Some('!' | '^')) {
                    out.push('!');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push(']');
                    i += 1;
                }
                loop {
                    match chars.get(i)? {
                        ']' => break,
                        '\\' => return None,
                        '[' if chars.get(i + 1) == Some(&':') => return None, // [[:alpha:]]
                        c if !c.is_ascii() => return None, // a class of bytes in git
                        c => out.push(*c),
                    }
                    i += 1;
                }
                out.push(']');
                i += 1;
            }
            '*' => {
                let run = chars[i..].iter().take_while(|c| **c == '*').count();
                let starts = i == 0 || chars[i - 1] == '/';
                let ends = i + run == n || chars[i + run] == '/';
                out.push_str(if run >= 2 && starts && ends {
                    "**"
                } else {
                    "*"
                });
                i += run;
            }
            c @ ('{' | '}') => {
                out.push('\\'); // literal in git
                out.push(c);
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// git's `trim_trailing_spaces`: unescaped trailing spaces go.
fn trim_trailing_spaces(line: &[u8]) -> &[u8] {
    let mut last_space = None;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' => {
                last_space.get_or_insert(i);
            }
            b'\\' => {
                i += 1;
                if i >= line.len() {
                    return line;
                }
                last_space = None;
            }
            _ => last_space = None,
        }
        i += 1;
    }
    &line[..last_space.unwrap_or(line.len())]
}

impl IgnoreFile {
    #[cfg(test)]
    pub(super) fn parse(text: &[u8]) -> Self {
        Self::parse_with(text, false)
    }

    /// With `core.ignorecase`: patterns match ignoring ASCII case, as git's `WM_CASEFOLD` (bytes, ASCII only).
    pub(super) fn parse_with(text: &[u8], ignore_case: bool) -> Self {
        let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        let mut file = IgnoreFile::default();
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let mut p = trim_trailing_spaces(line);
            let negated = p.first() == Some(&b'!');
            if negated {
                p = &p[1..];
            }
            let dir_only = p.last() == Some(&b'/');
            if dir_only {
                p = &p[..p.len() - 1];
            }
            if p.is_empty() {
                continue;
            }
            let has_slash = p.contains(&b'/');
            let p = if has_slash {
                p.strip_prefix(b"/").unwrap_or(p)
            } else {
                p
            };
            let glob = std::str::from_utf8(p)
                .ok()
                .and_then(translate_pattern)
                .and_then(|g| {
                    GlobBuilder::new(&g)
                        .literal_separator(true)
                        .case_insensitive(ignore_case)
                        .backslash_escape(true)
                        .build()
                        .ok()
                });
            let Some(glob) = glob else {
                file.exotic = true;
                file.exotic_line
                    .get_or_insert_with(|| String::from_utf8_lossy(line).into_owned());
                continue;
            };
            let rule = file.rules.len();
            file.rules.push(IgnoreRule { negated, dir_only });
            if has_slash {
                paths.add(glob);
                file.path_rules.push(rule);
            } else {
                names.add(glob);
                file.name_rules.push(rule);
            }
        }
        match (names.build(), paths.build()) {
            (Ok(n), Ok(p)) => {
                file.names = n;
                file.paths = p;
            }
            _ => {
                file.exotic = true;
                file.exotic_line
                    .get_or_insert_with(|| "(the set does not compile)".into());
            }
        }
        file
    }

    /// The last rule matching `rel` (relative to the file's directory, no trailing slash): `Some(true)` ignored,
    /// `Some(false)` re-included, `None` no rule matches.
    pub(super) fn matched(&self, rel: &[u8], is_dir: bool) -> Option<bool> {
        if self.rules.is_empty() {
            return None;
        }
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        let by_name = self
            .names
            .matches(bytes_to_path(name))
            .into_iter()
            .map(|k| self.name_rules[k]);
        let by_path = self
            .paths
            .matches(bytes_to_path(rel))
            .into_iter()
            .map(|k| self.path_rules[k]);
        by_name
            .chain(by_path)
            .filter(|&r| is_dir || !self.rules[r].dir_only)
            .max()
            .map(|r| !self.rules[r].negated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_support::Fixture;
    use std::fs;

    #[test]
    fn ignore_file_rules() {
        let f = IgnoreFile::parse(b"*.log\n!keep.log\nbuild/\n/top\na/**/b\n# c\n\n  \nsp\\ \n");
        assert!(!f.exotic);
        assert_eq!(f.matched(b"x.log", false), Some(true));
        assert_eq!(f.matched(b"d/x.log", false), Some(true));
        assert_eq!(f.matched(b"keep.log", false), Some(false));
        assert_eq!(f.matched(b"build", true), Some(true));
        assert_eq!(f.matched(b"build", false), None);
        assert_eq!(f.matched(b"top", false), Some(true));
        assert_eq!(f.matched(b"d/top", false), None);
        assert_eq!(f.matched(b"a/b", false), Some(true));
        assert_eq!(f.matched(b"a/x/y/b", false), Some(true));
        assert_eq!(f.matched(b"sp ", false), Some(true));
        assert_eq!(f.matched(b"other", false), None);
        assert!(IgnoreFile::parse(b"[[:alpha:]]\n").exotic);
        assert!(IgnoreFile::parse(b"[unclosed\n").exotic);
        assert_eq!(trim_trailing_spaces(b"a  "), b"a");
        assert_eq!(trim_trailing_spaces(b"a\\  "), b"a\\ ");
        assert_eq!(
            translate_pattern("a**b/**/c{d}").as_deref(),
            Some("a*b/**/c\\{d\\}")
        );
    }

    #[test]
    fn gitignore_patterns_like_git() {
        let f = Fixture::repo("main", Some("U"));
        f.write(
            ".gitignore",
            "# comment\n*.log\n!important.log\n/anchored.txt\ndocs/*.md\ndeep/**/x.txt\n**/any/y.txt\ntrail/\n\
             space\\ \nnoescape   \n*.[oa]\n[!k]eep.bin\na?c.txt\n{brace}.txt\nsub/**\n\\#hash\n\\!bang\ndir*/\n\
             crlf.txt\r\nmid/**/end\nx**y\n",
        );
        f.write("n/.gitignore", "*.tmp\n!keep.tmp\n/root-in-n.txt\n");
        f.write(".git/info/exclude", "from-exclude.txt\n");
        let global = f.home.join("global-ignore");
        fs::write(&global, "from-global.txt\n").expect("write");
        let cfg = format!("[core]\n\texcludesFile = {}\n", global.display());
        fs::write(f.home.join(".gitconfig"), cfg).expect("write");
        f.write("tracked.txt", "t\n");
        f.commit("init");
        for p in [
            "a.log",
            "important.log",
            "deeper/b.log",
            "deeper/important.log",
            "anchored.txt",
            "n/anchored.txt",
            "docs/a.md",
            "docs/sub/b.md",
            "other/docs/a.md",
            "deep/x.txt",
            "deep/1/2/x.txt",
            "any/y.txt",
            "q/any/y.txt",
            "trail/f",
            "trail",
            "t2/trail/f",
            "space ",
            "noescape",
            "m.o",
            "m.a",
            "m.c",
            "keep.bin",
            "reep.bin",
            "abc.txt",
            "a/c.txt",
            "{brace}.txt",
            "brace.txt",
            "sub/s.txt",
            "sub/d/s.txt",
            "#hash",
            "!bang",
            "dirx/f",
            "dirfile",
            "crlf.txt",
            "mid/end",
            "mid/a/b/end",
            "xay",
            "x/y",
            "n/a.tmp",
            "n/keep.tmp",
            "n/root-in-n.txt",
            "n/deeper/root-in-n.txt",
            "root-in-n.txt",
            "from-exclude.txt",
            "from-global.txt",
            "plain.txt",
        ] {
            if p == "trail" {
                continue; // a file named like a directory-only pattern: below
            }
            f.write(p, "x\n");
        }
        f.write("trail-file/trail", "x\n");
        f.assert_status(&f.root);
        f.git(&f.root, &["config", "status.showUntrackedFiles", "all"]);
        let status = f.assert_status(&f.root);
        for shown in [
            "?? important.log",
            "?? n/keep.tmp",
            "?? plain.txt",
            "?? trail-file/trail",
            "?? m.c",
        ] {
            assert!(status.contains(&shown.to_owned()), "{shown} in {status:?}");
        }
        for hidden in [
            "a.log",
            "from-exclude.txt",
            "from-global.txt",
            "n/a.tmp",
            "sub/s.txt",
            "deep/1/2/x.txt",
        ] {
            assert!(
                !status.iter().any(|l| l.ends_with(hidden)),
                "{hidden} in {status:?}"
            );
        }
        // Without core.excludesFile, git reads ~/.config/git/ignore (from the GitEnv's home).
        fs::remove_file(f.home.join(".gitconfig")).expect("rm");
        f.write("../home/.config/git/ignore", "plain.txt\n");
        let status = f.assert_status(&f.root);
        assert!(!status.contains(&"?? plain.txt".to_owned()), "{status:?}");
        assert!(
            status.contains(&"?? from-global.txt".to_owned()),
            "{status:?}"
        );
    }

    #[test]
    fn ignored_and_empty_directories() {
        let f = Fixture::repo("main", Some("U"));
        f.write(".gitignore", "*.log\nbuild/\n!keep.log\n/rootonly\n");
        f.write("src/a.txt", "a\n");
        f.write("build/tracked.txt", "t\n");
        f.git(&f.root, &["add", "-f", "build/tracked.txt"]);
        f.commit("init");
        f.write("x.log", "l\n");
        f.write("keep.log", "k\n");
        f.write("only-ignored/a.log", "l\n");
        f.write("only-ignored/deeper/b.log", "l\n");
        fs::create_dir_all(f.root.join("empty/inner")).expect("mkdir");
        f.write("mixed/a.log", "l\n");
        f.write("mixed/deep/real.txt", "r\n");
        f.write("build/new.txt", "n\n");
        f.write("src/build/x.txt", "x\n");
        f.write("src/new.txt", "n\n");
        f.write("src/rootonly", "r\n");
        f.write("rootonly", "r\n");
        f.write("sub/.gitignore", "*.tmp\n");
        f.write("sub/a.tmp", "t\n");
        f.write("sub/b.txt", "b\n");
        let status = f.assert_status(&f.root);
        assert!(status.contains(&"?? keep.log".to_owned()), "{status:?}");
        assert!(status.contains(&"?? mixed/".to_owned()), "{status:?}");
        assert!(
            !status
                .iter()
                .any(|l| l.contains("only-ignored") || l.contains("empty")),
            "{status:?}"
        );
    }
}
