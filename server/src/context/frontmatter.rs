//! YAML frontmatter, read the way Claude Code reads it.
//!
//! - Ignoring one leading U+FEFF, a file has frontmatter when it starts with `---`, optional
//!   whitespace and a newline. The frontmatter runs up to the *first* `---` after that line,
//!   wherever it is (mid-line, inside a block scalar, glued to the text after it). That `---` and
//!   every JavaScript whitespace character after it go with the frontmatter: the content starts
//!   at the first non-whitespace character. Without a later `---` there is no frontmatter.
//! - The YAML is parsed with tabs accepted as indentation and a repeated key keeping its last
//!   value. When it is invalid, Claude Code rewrites each top-level `key: value` line whose value
//!   holds a YAML special character into `key: "value"` and parses once more
//!   ([`Parse::Retried`]); `paths: **/*.ts` then reads as the glob `**/*.ts`, and
//!   `paths: g/** # note` as `g/** # note`. When that fails too, the file has no fields.
//!
//! Nothing here fails: broken YAML is a [`FrontmatterError`] for the diagnostics.

use serde_json::{Map, Value};

use crate::js;

/// A glob from `paths:` as written (one comma-separated piece, trimmed), with where it was
/// written (0-based line in the file, 0-based byte column). [`super::globs::normalize`] turns
/// these into the patterns that are matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathGlob {
    pub glob: String,
    pub line: usize,
    pub col: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FrontmatterError {
    /// 0-based line in the file.
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// The globs of `paths` past [`super::globs::MAX_PATTERNS`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathsOverflow {
    /// How many globs `paths` holds in all.
    pub total: usize,
    /// Where the first one left out is (0-based line in the file, byte column).
    pub line: usize,
    pub col: usize,
}

/// How the fields were obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Parse {
    /// Valid YAML (or none at all).
    #[default]
    Clean,
    /// Invalid YAML; the quote-and-parse-again retry gave the fields.
    Retried,
    /// Invalid YAML, and the retry failed too: no fields.
    Failed,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frontmatter {
    /// Every field, for display.
    pub fields: Map<String, Value>,
    /// `Some` when `paths` gave at least one glob string (null, empty and non-string items are
    /// dropped). Whether the rule is conditional is decided on the normalised patterns.
    pub paths: Option<Vec<PathGlob>>,
    /// The first parse's YAML error (set for [`Parse::Retried`] and [`Parse::Failed`]).
    pub error: Option<FrontmatterError>,
    pub parse: Parse,
    /// `paths` is present but is not a glob or a list of globs (a number, a mapping...), or some
    /// of its items were dropped: the rule is then (partly) unconditional, which surprises.
    pub paths_problem: Option<FrontmatterError>,
    /// Valid YAML that is not a mapping (a bare string, a list): no fields.
    pub not_fields: Option<FrontmatterError>,
    /// `paths` had more than [`super::globs::MAX_PATTERNS`] globs: the others are dropped.
    pub paths_overflow: Option<PathsOverflow>,
    /// 0-based line of the file on which the content starts.
    pub lines: usize,
    /// Byte offset of the content in the file's text.
    pub content_start: usize,
}

/// Splits `text` into its frontmatter (if any) and the content after it.
pub fn split(text: &str) -> (Option<Frontmatter>, &str) {
    let Some((yaml_start, yaml_end, content_start)) = locate_block(text) else {
        return (None, text);
    };
    let yaml = &text[yaml_start..yaml_end];
    let yaml_line = text[..yaml_start].matches('\n').count();
    let mut fm = parse(yaml, yaml_line);
    fm.content_start = content_start;
    fm.lines = text[..content_start].matches('\n').count();
    (Some(fm), &text[content_start..])
}

/// (start of the YAML, its end = the closing `---`, start of the content).
fn locate_block(text: &str) -> Option<(usize, usize, usize)> {
    let open = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    if !text[open..].starts_with("---") {
        return None;
    }
    let after = open + 3;
    let run_end = text[after..]
        .find(|c: char| !js::is_space(c))
        .map_or(text.len(), |i| after + i);
    // `^---\s*\n`: the whitespace after the opening dashes must hold a newline; the YAML starts
    // after the last one.
    let yaml_start = after + text[after..run_end].rfind('\n')? + 1;
    let yaml_end = yaml_start + text[yaml_start..].find("---")?;
    let content_start =
        yaml_end + 3 + (text[yaml_end + 3..].len() - js::trim_start(&text[yaml_end + 3..]).len());
    Some((yaml_start, yaml_end, content_start))
}

/// Parses the YAML of a frontmatter block that starts on file line `first_line`.
fn parse(yaml: &str, first_line: usize) -> Frontmatter {
    let mut fm = Frontmatter::default();
    if js::is_blank(yaml) {
        return fm;
    }
    let value = match parse_yaml(yaml) {
        Ok(v) => v,
        Err(e) => {
            let (line, col) = error_position(&e);
            let (line, col) = file_position(yaml, line, col);
            fm.error = Some(FrontmatterError {
                line: first_line + line,
                col,
                message: clean_message(&e),
            });
            match quote_values(yaml).map(|q| parse_yaml(&q)) {
                Some(Ok(v)) => {
                    fm.parse = Parse::Retried;
                    v
                }
                _ => {
                    fm.parse = Parse::Failed;
                    return fm;
                }
            }
        }
    };
    let map = match value {
        Value::Object(m) => m,
        Value::Null => return fm,
        other => {
            fm.not_fields = Some(FrontmatterError {
                line: first_line,
                col: 0,
                message: format!(
                    "frontmatter is {}, not `key: value` fields; Claude Code ignores it",
                    type_name(&other)
                ),
            });
            return fm;
        }
    };
    if let Some(paths) = map.get("paths") {
        let (line, col) = key_position(yaml, "paths");
        let at = |message: String| FrontmatterError {
            line: first_line + line,
            col,
            message,
        };
        let mut pieces = Vec::new();
        match paths {
            Value::String(s) => pieces.extend(split_commas(s)),
            Value::Array(items) => {
                let mut dropped = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) => pieces.extend(split_commas(s)),
                        Value::Null => {}
                        other => dropped.push(other.to_string()),
                    }
                }
                if !dropped.is_empty() {
                    fm.paths_problem = Some(at(format!(
                        "paths items {} are not glob strings and are ignored; quote them",
                        dropped.join(", ")
                    )));
                }
            }
            Value::Null => {}
            other => {
                fm.paths_problem = Some(at(format!(
                    "paths is {}, not a glob or a list of globs, so it is ignored and the rule always loads; write paths: \"<glob>\"",
                    type_name(other)
                )));
            }
        }
        if !pieces.is_empty() {
            // Each glob is looked for after the previous one: one pass over the lines.
            let lines: Vec<&str> = yaml.split('\n').collect();
            let mut cursor = (line, 0);
            let mut locate = |g: &str| match locate_from(&lines, cursor, g) {
                Some(at) => {
                    cursor = (at.0, at.1 + g.len());
                    (first_line + at.0, at.1)
                }
                None => (first_line + cursor.0, 0),
            };
            let total = pieces.len();
            let mut kept: Vec<PathGlob> = Vec::new();
            for g in pieces {
                let (line, col) = locate(&g);
                if kept.len() == super::globs::MAX_PATTERNS {
                    fm.paths_overflow = Some(PathsOverflow { total, line, col });
                    break;
                }
                kept.push(PathGlob { glob: g, line, col });
            }
            fm.paths = Some(kept);
        }
    }
    fm.fields = map;
    fm
}

/// One YAML parse: a repeated key keeps its last value; tabs in indentation are accepted (the
/// text is parsed again with them as spaces when the parser rejects them).
fn parse_yaml(yaml: &str) -> Result<Value, String> {
    let options = || {
        serde_saphyr::options! {
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
        }
    };
    match serde_saphyr::from_str_with_options::<Value>(yaml, options()) {
        Ok(v) => Ok(v),
        Err(e) => {
            let detabbed = detab(yaml);
            if detabbed != yaml
                && let Ok(v) = serde_saphyr::from_str_with_options::<Value>(&detabbed, options())
            {
                return Ok(v);
            }
            Err(e.to_string())
        }
    }
}

/// Tabs in a line's indentation become spaces (one each), so `\t- glob` is a list item.
fn detab(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len());
    for line in yaml.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        out.extend(line[..indent].chars().map(|_| ' '));
        out.push_str(&line[indent..]);
    }
    out
}

/// Claude Code's retry: every line `key: value` (the key at the start of the line, of letters,
/// digits, `_` and `-`) whose value holds a YAML special character and is not already a complete
/// quoted string or `[...]` list gets its value wrapped in double quotes. `None` when no line
/// changes (the retry would fail the same way).
fn quote_values(yaml: &str) -> Option<String> {
    let mut out = String::with_capacity(yaml.len() + 16);
    let mut changed = false;
    for line in yaml.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let ending = &line[body.len()..];
        match key_value(body) {
            Some((key, value)) if needs_quotes(value) => {
                changed = true;
                out.push_str(key);
                out.push_str(": \"");
                for c in value.chars() {
                    if matches!(c, '\\' | '"') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
                out.push_str(ending);
            }
            _ => out.push_str(line),
        }
    }
    changed.then_some(out)
}

/// `key: value` with the key at the start of the line; the value trimmed, not empty. As Claude
/// Code's `^([\w-]+):\s+(.+)$` (no `m` flag, lines split at `\n` only): the value may hold no
/// line terminator, so the line of a CRLF file (`paths: **/*.py\r`) is never rewritten and its
/// invalid YAML stays invalid: no fields, an unconditional rule (class K34).
fn key_value(line: &str) -> Option<(&str, &str)> {
    let key_end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))?;
    if key_end == 0 || !line[key_end..].starts_with(':') {
        return None;
    }
    let rest = &line[key_end + 1..];
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    if js::trim_start(rest).contains(['\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    let value = js::trim(rest);
    (!value.is_empty()).then_some((&line[..key_end], value))
}

/// The special characters measured on Claude Code: `*`, `{`, `[`, `#`, `!`, `&`, `: `, and a
/// quote that is not closed. A complete `"..."`, `'...'` or `[...]` is left alone.
fn needs_quotes(value: &str) -> bool {
    let complete = |open: char, close: char| {
        value.len() >= 2 && value.starts_with(open) && value.ends_with(close)
    };
    if complete('"', '"') || complete('\'', '\'') || complete('[', ']') {
        return false;
    }
    value.contains(['*', '{', '[', '#', '!', '&'])
        || value.contains(": ")
        || value.starts_with(['"', '\''])
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Splits on commas outside `{...}` so `src/{x,y}/*.ts` stays one glob; pieces are trimmed and
/// empty ones dropped.
pub fn split_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(js::trim(&s[start..i]).to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(js::trim(&s[start..]).to_string());
    out.retain(|g| !g.is_empty());
    out
}

/// 0-based (line, column) of the value of the last top-level `key:` line (the one a repeated
/// key keeps), or (0, 0).
fn key_position(yaml: &str, key: &str) -> (usize, usize) {
    let mut found = (0, 0);
    for (i, line) in yaml.split('\n').enumerate() {
        if let Some(rest) = line.strip_prefix(key)
            && js::trim_start(rest).starts_with(':')
        {
            found = (i, 0);
        }
    }
    found
}

/// How many lines past the previous glob the next one is looked for (a glob is on the line
/// after the previous one, or a few lines down after a comment): bounded, so that globs whose
/// written form differs from their value (escapes in quoted strings) cannot make this quadratic.
const LOCATE_WINDOW: usize = 64;

/// 0-based (line, byte column) of the first `needle` at or after `from` (line, column), within
/// [`LOCATE_WINDOW`] lines.
fn locate_from(lines: &[&str], from: (usize, usize), needle: &str) -> Option<(usize, usize)> {
    let (line, col) = from;
    for (i, text) in lines.iter().enumerate().skip(line).take(LOCATE_WINDOW) {
        let start = if i == line { col.min(text.len()) } else { 0 };
        if let Some(rest) = text.get(start..)
            && let Some(at) = rest.find(needle)
        {
            return Some((i, start + at));
        }
    }
    None
}

/// The parser's message without its own prefix and position (the finding carries the position,
/// in file coordinates), in words a person can act on: `error: line 1 column 8: unclosed
/// bracket '['` → `unclosed bracket '['`; the parser's resource limits (a YAML bomb) and its
/// advice to Rust programmers are rewritten ([`in_words`]).
fn clean_message(s: &str) -> String {
    let first = s.lines().next().unwrap_or(s).trim();
    let first = first.strip_prefix("error:").unwrap_or(first).trim_start();
    if first.starts_with("line ")
        && let Some((_, rest)) = first.split_once(": ")
    {
        return in_words(rest.trim());
    }
    in_words(first)
}

/// serde-saphyr words some errors for Rust programmers: `budget breached: Nodes { nodes:
/// 250001 }` (its limits against YAML bombs), `recursion limit exceeded`, `...; use
/// from_str_multiple`. Those become sentences; every other message is the parser's own.
fn in_words(message: &str) -> String {
    if let Some(breach) = message.strip_prefix("budget breached:") {
        let breach = breach.trim();
        let kind = breach.split([' ', '{']).next().unwrap_or_default();
        let count: Option<u64> = breach
            .split(|c: char| !c.is_ascii_digit())
            .find(|d| !d.is_empty())
            .and_then(|d| d.parse().ok());
        let over = |n: Option<u64>| {
            n.map_or_else(
                || "too many".to_string(),
                |n| {
                    format!(
                        "more than {}",
                        super::message::thousands(n.saturating_sub(1))
                    )
                },
            )
        };
        return match kind {
            "Nodes" => format!(
                "it expands to {} values once its aliases (*name) are replaced by what they name, which the parser refuses as a YAML bomb",
                over(count)
            ),
            "Aliases" => format!("it uses {} aliases (*name)", over(count)),
            "Anchors" => format!("it defines {} anchors (&name)", over(count)),
            "Depth" => format!("it nests lists and mappings {} levels deep", over(count)),
            "Documents" => "it holds more than one YAML document".to_string(),
            "ScalarBytes" => format!("its values hold {} bytes", over(count)),
            "Events" => "it is too long for the YAML parser".to_string(),
            _ => "it is too large or too repetitive for the YAML parser".to_string(),
        };
    }
    if message.starts_with("recursion limit exceeded") {
        return "it nests lists and mappings too deeply for the YAML parser".to_string();
    }
    match message.find("; use from_str") {
        Some(cut) => message[..cut].to_string(),
        None => message.to_string(),
    }
}

/// Maps a 0-based YAML (line, column) to the (line, byte column) in `yaml` split on `\n`, which
/// is how the file's lines are counted everywhere else. YAML also breaks lines at a lone `\r`,
/// so without this a file with bare CRs gets a position past its frontmatter (found by fuzzing).
/// A position past the end is clamped to the end.
fn file_position(yaml: &str, line: usize, col: usize) -> (usize, usize) {
    let bytes = yaml.as_bytes();
    let (mut yaml_line, mut start) = (0, 0);
    for (i, &b) in bytes.iter().enumerate() {
        if yaml_line == line {
            break;
        }
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            yaml_line += 1;
            start = i + 1;
        }
    }
    let segment_end = yaml[start..]
        .find(['\n', '\r'])
        .map_or(yaml.len(), |j| start + j);
    let line_start = yaml[..start].rfind('\n').map_or(0, |j| j + 1);
    let offset = start.saturating_add(col).min(segment_end);
    let offset = (0..=offset)
        .rev()
        .find(|&o| yaml.is_char_boundary(o))
        .unwrap_or(0);
    (yaml[..start].matches('\n').count(), offset - line_start)
}

/// Pulls "line L column C" (1-based) out of a YAML error message; 0-based result.
fn error_position(msg: &str) -> (usize, usize) {
    let num_after = |key: &str| -> Option<usize> {
        let i = msg.find(key)? + key.len();
        let digits: String = msg[i..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    let line = num_after("line").unwrap_or(1).saturating_sub(1);
    let col = num_after("column").unwrap_or(1).saturating_sub(1);
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(text: &str) -> Vec<String> {
        split(text)
            .0
            .and_then(|f| f.paths)
            .unwrap_or_default()
            .into_iter()
            .map(|g| g.glob)
            .collect()
    }

    #[test]
    fn where_the_frontmatter_ends() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("no frontmatter\n", &[], "no frontmatter\n"),
            ("---\npaths: src/**\n---\nbody\n", &["src/**"], "body\n"),
            // Every whitespace character after the closing dashes goes.
            ("---\npaths: a\n---\n\n\n    BODY\nX\n", &["a"], "BODY\nX\n"),
            ("---\nx: 1\n---\n\t<!-- c -->\n", &[], "<!-- c -->\n"),
            ("---\nx: 1\n---\u{3000}\u{A0}\u{FEFF}B", &[], "B"),
            // The first `---` anywhere closes it: mid-line, in a block scalar, glued to text.
            ("---\ntitle: a---b\n---\nBODY\n", &[], "b\n---\nBODY\n"),
            ("---\npaths: a---b\n---\nRULE\n", &["a"], "b\n---\nRULE\n"),
            ("---\nk: |\n  x\n  ---\n  y\n---\nD\n", &[], "y\n---\nD\n"),
            ("---\ntitle: x\n---LOCAL\n", &[], "LOCAL\n"),
            // Opening: `---`, optional whitespace, a newline; a BOM before it is allowed.
            ("---  \n---\nB\n", &[], "B\n"),
            ("--- \r\npaths: a\r\n---\r\nB\r\n", &["a"], "B\r\n"),
            (
                "\u{FEFF}---\npaths: src/**\n---\nBOMRULE\n",
                &["src/**"],
                "BOMRULE\n",
            ),
            ("\u{FEFF}BOM\n", &[], "\u{FEFF}BOM\n"),
            (
                "\n---\npaths: a\n---\nB\n",
                &[],
                "\n---\npaths: a\n---\nB\n",
            ),
            (" ---\npaths: a\n---\nB\n", &[], " ---\npaths: a\n---\nB\n"),
            ("----\npaths: a\n---\nB\n", &[], "----\npaths: a\n---\nB\n"),
            ("---x\npaths: a\n---\nB\n", &[], "---x\npaths: a\n---\nB\n"),
            // Unclosed: not frontmatter.
            ("---\npaths: x\nB\n", &[], "---\npaths: x\nB\n"),
            ("A\n---\nB\n---\n", &[], "A\n---\nB\n---\n"),
        ];
        for (text, want_globs, want_body) in cases {
            assert_eq!(globs(text), *want_globs, "globs of {text:?}");
            assert_eq!(split(text).1, *want_body, "body of {text:?}");
        }
    }

    #[test]
    fn paths_forms() {
        let cases: &[(&str, &[&str])] = &[
            ("paths: \"**/*.test.ts\"", &["**/*.test.ts"]),
            (
                "paths:\n  - \"src/**/*.ts\"\n  - lib/*.js",
                &["src/**/*.ts", "lib/*.js"],
            ),
            (
                "paths: \"docs/**, src/**/*.ts\"",
                &["docs/**", "src/**/*.ts"],
            ),
            ("paths: \"src/{x,y}/*.ts\"", &["src/{x,y}/*.ts"]),
            ("paths:\n  - src/**\n  -\n  - ''", &["src/**"]),
            ("paths: [\"**\", \"\"]", &["**"]),
            ("description: d", &[]),
            ("paths: 42", &[]),
            ("paths: ''", &[]),
            ("paths: []", &[]),
            ("paths:", &[]),
            ("paths: {a: b}", &[]),
            // Repeated keys: the last one wins.
            ("paths: h/**\npaths: i/**", &["i/**"]),
            // Tabs as indentation are accepted.
            ("paths:\n\t- k/**", &["k/**"]),
        ];
        for (yaml, want) in cases {
            let text = format!("---\n{yaml}\n---\nB\n");
            assert_eq!(globs(&text), *want, "{yaml:?}");
            let fm = split(&text).0.unwrap();
            assert_eq!(fm.parse, Parse::Clean, "{yaml:?}: {:?}", fm.error);
        }
        let fm = split("---\npaths: 42\n---\nB").0.unwrap();
        assert!(fm.paths_problem.unwrap().message.contains("a number"));
    }

    #[test]
    fn the_yaml_retry() {
        // (yaml, globs after the retry, how it parsed)
        let cases: &[(&str, &[&str], Parse)] = &[
            ("paths: **/*.ts", &["**/*.ts"], Parse::Retried),
            (
                "paths: {docs,lib}/*.md",
                &["{docs,lib}/*.md"],
                Parse::Retried,
            ),
            (
                "description: [draft\npaths: a/**, b/**",
                &["a/**", "b/**"],
                Parse::Retried,
            ),
            (
                "description: [draft\npaths: [c/**, d/**]",
                &["c/**", "d/**"],
                Parse::Retried,
            ),
            (
                "description: [draft\npaths: g/** # note",
                &["g/** # note"],
                Parse::Retried,
            ),
            (
                "description: [draft\npaths:\n  - \"e/**\"\n  - 'f/**'",
                &["e/**", "f/**"],
                Parse::Retried,
            ),
            (
                "description: see: notes\npaths: j/**",
                &["j/**"],
                Parse::Retried,
            ),
            ("paths: [src/**", &["[src/**"], Parse::Retried),
            ("paths: \"src/**", &["\"src/**"], Parse::Retried),
            (
                "description: [x\npaths: a\\b \"q\" *",
                &["a\\b \"q\" *"],
                Parse::Retried,
            ),
            // List items are never rewritten; neither are indented lines.
            ("paths:\n  - **/*.ts", &[], Parse::Failed),
            ("tags:\n  - *draft\npaths: src/**", &[], Parse::Failed),
            // No special character: not quoted, stays a number.
            ("description: [draft\npaths: 42", &[], Parse::Retried),
        ];
        for (yaml, want, parse) in cases {
            let text = format!("---\n{yaml}\n---\nB\n");
            let (fm, body) = split(&text);
            let fm = fm.unwrap();
            assert_eq!(body, "B\n");
            assert_eq!(fm.parse, *parse, "{yaml:?}");
            assert!(
                fm.error.is_some(),
                "{yaml:?}: the first parse's error is kept"
            );
            assert_eq!(globs(&text), *want, "{yaml:?}");
        }
    }

    /// Class K34 (`../shared/spec/skills-mcp.md` section 12): with CRLF line ends the retry's
    /// line pattern never matches (its `.` stops at the `\r`), so invalid YAML stays invalid and
    /// the rule has no `paths`: it loads at startup. A valid CRLF value and a CRLF list item
    /// are unaffected.
    #[test]
    fn crlf_lines_are_never_quoted_by_the_retry() {
        for yaml in ["paths: **/*.py", "paths: {src,lib}/**", "paths: \"src/**"] {
            let text = format!("---\r\n{yaml}\r\n---\r\nBODY N\r\n");
            let (fm, body) = split(&text);
            let fm = fm.unwrap();
            assert_eq!(fm.parse, Parse::Failed, "{yaml:?}");
            assert_eq!(globs(&text), &[] as &[&str], "{yaml:?}");
            assert_eq!(body, "BODY N\r\n");
            // The same line with LF ends is quoted and read as a glob.
            assert_eq!(
                split(&format!("---\n{yaml}\n---\nB\n")).0.unwrap().parse,
                Parse::Retried
            );
        }
        assert_eq!(
            globs("---\r\npaths: \"**/*.py\"\r\n---\r\nB\r\n"),
            ["**/*.py"]
        );
        assert_eq!(
            globs("---\r\npaths:\r\n  - \"src/**\"\r\n---\r\nB\r\n"),
            ["src/**"]
        );
    }
    #[test]
    fn quoting_rewrites_only_top_level_values_with_special_characters() {
        assert_eq!(
            quote_values("a: **\n  b: *x\nmy.key: *y\nc: plain\nd: \"ok\"\ne: [x]\n").unwrap(),
            "a: \"**\"\n  b: *x\nmy.key: *y\nc: plain\nd: \"ok\"\ne: [x]\n"
        );
        assert_eq!(quote_values("a: b\n"), None);
    }

    #[test]
    fn parser_limits_are_said_in_words() {
        // A YAML bomb: each list holds ten aliases of the previous one.
        let mut yaml =
            String::from("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
        let mut prev = 'a';
        for n in ['b', 'c', 'd', 'e', 'f', 'g'] {
            let refs = vec![format!("*{prev}"); 10].join(",");
            yaml.push_str(&format!("{n}: &{n} [{refs}]\n"));
            prev = n;
        }
        let (fm, _) = split(&format!("---\n{yaml}---\nB\n"));
        let err = fm.unwrap().error.expect("an error");
        assert!(
            err.message
                .starts_with("it expands to more than 250,000 values once its aliases"),
            "{err:?}"
        );
        assert!(err.line >= 1);
        let deep = format!(
            "---\na: {}{}\n---\nB\n",
            "[".repeat(2_000),
            "]".repeat(2_000)
        );
        let err = split(&deep).0.unwrap().error.expect("an error");
        assert_eq!(
            err.message,
            "it nests lists and mappings too deeply for the YAML parser"
        );
        assert_eq!(
            in_words("budget breached: Aliases { aliases: 1001 }"),
            "it uses more than 1,000 aliases (*name)"
        );
        assert_eq!(
            in_words("budget breached: Mystery { x: 1 }"),
            "it is too large or too repetitive for the YAML parser"
        );
        assert_eq!(
            in_words(
                "multiple YAML documents detected; use from_str_multiple or from_str_multiple_with_options"
            ),
            "multiple YAML documents detected"
        );
        assert_eq!(in_words("unclosed bracket '['"), "unclosed bracket '['");
    }

    #[test]
    fn broken_yaml_is_a_finding_with_a_position() {
        let (fm, body) = split("---\ndescription: ok\npaths:\n  - [unclosed\n---\nbody\n");
        let fm = fm.unwrap();
        let err = fm.error.expect("an error");
        assert!(err.line >= 1, "{err:?}");
        assert_eq!(fm.parse, Parse::Failed);
        assert_eq!(fm.paths, None);
        assert_eq!(body, "body\n");
    }

    #[test]
    fn positions_point_at_the_glob_and_the_content() {
        let (fm, _) = split("---\npaths:\n  - \"**/*.py\"\n---\nB\n");
        let fm = fm.unwrap();
        let g = &fm.paths.unwrap()[0];
        assert_eq!((g.line, g.col), (2, 5));
        assert_eq!(fm.lines, 4);
        let (fm, _) = split("---\ndescription: x\npaths: **/*.ts\n---\nB\n");
        let g = &fm.unwrap().paths.unwrap()[0];
        assert_eq!((g.line, g.col), (2, 7));
        let (fm, body) = split("---\nx: 1\n---\n\n  two\n");
        let fm = fm.unwrap();
        assert_eq!((fm.lines, fm.content_start), (4, 16));
        assert_eq!(body, "two\n");
    }
}
