//! YAML frontmatter: a first line `---`, up to the next line `---`.
//!
//! The body keeps everything after the closing line. Broken YAML is a finding, not a failure:
//! the file then loads as if its frontmatter had no fields (which is what the reference CLI does).

use serde_json::{Map, Value};

/// A glob from `paths:` with where it was written (0-based line in the file, 0-based byte column).
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

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frontmatter {
    /// Every field, for display.
    pub fields: Map<String, Value>,
    /// `Some` when the file has a `paths` field that gave at least one glob.
    pub paths: Option<Vec<PathGlob>>,
    pub error: Option<FrontmatterError>,
    /// Number of lines the frontmatter takes, delimiters included.
    pub lines: usize,
}

fn is_delimiter(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Splits `text` into its frontmatter (if any) and the body after it.
pub fn split(text: &str) -> (Option<Frontmatter>, &str) {
    let Some(first_end) = text.find('\n') else {
        return (None, text);
    };
    if !is_delimiter(&text[..first_end]) {
        return (None, text);
    }
    let yaml_start = first_end + 1;
    let mut pos = yaml_start;
    let mut line_no = 1;
    while pos <= text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        if is_delimiter(&text[pos..end]) {
            let yaml = &text[yaml_start..pos];
            let body = if end < text.len() {
                &text[end + 1..]
            } else {
                ""
            };
            let mut fm = parse(yaml);
            fm.lines = line_no + 1;
            return (Some(fm), body);
        }
        if end >= text.len() {
            break;
        }
        pos = end + 1;
        line_no += 1;
    }
    // No closing line: not frontmatter, the whole text is the body.
    (None, text)
}

/// Parses the YAML between the delimiters (`yaml` starts on file line 1).
fn parse(yaml: &str) -> Frontmatter {
    let mut fm = Frontmatter::default();
    if yaml.trim().is_empty() {
        return fm;
    }
    let value: Value = match serde_saphyr::from_str(yaml) {
        Ok(v) => v,
        Err(e) => {
            let (line, col) = error_position(&e.to_string());
            let (line, col) = file_position(yaml, line, col);
            fm.error = Some(FrontmatterError {
                line: line + 1,
                col,
                message: clean_message(&e.to_string()),
            });
            return fm;
        }
    };
    let map = match value {
        Value::Object(m) => m,
        Value::Null => return fm,
        other => {
            fm.error = Some(FrontmatterError {
                line: 1,
                col: 0,
                message: format!("expected key: value pairs, found {}", type_name(&other)),
            });
            return fm;
        }
    };
    if let Some(paths) = map.get("paths") {
        match globs_of(paths) {
            Ok(globs) => {
                let globs: Vec<PathGlob> = globs
                    .into_iter()
                    .map(|g| {
                        let (line, col) = locate(yaml, &g);
                        PathGlob {
                            glob: g,
                            line: line + 1,
                            col,
                        }
                    })
                    .collect();
                if !globs.is_empty() {
                    fm.paths = Some(globs);
                }
            }
            Err(msg) => {
                let (line, col) = locate(yaml, "paths");
                fm.error = Some(FrontmatterError {
                    line: line + 1,
                    col,
                    message: msg,
                });
            }
        }
    }
    fm.fields = map;
    fm
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

/// `paths` as a list of globs, a single glob, or a comma-separated string; each item trimmed.
fn globs_of(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(split_commas(s)),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => out.extend(split_commas(s)),
                    other => {
                        return Err(format!(
                            "paths: every item must be a glob string, found {}",
                            type_name(other)
                        ));
                    }
                }
            }
            Ok(out)
        }
        Value::Null => Ok(Vec::new()),
        other => Err(format!(
            "paths must be a glob or a list of globs, found {}",
            type_name(other)
        )),
    }
}

/// Splits on commas outside `{...}` so `src/{x,y}/*.ts` stays one glob.
pub fn split_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim().to_string());
    out.retain(|g| !g.is_empty());
    out
}

/// 0-based (line, byte column) of the first occurrence of `needle` in `yaml`, or (0, 0).
fn locate(yaml: &str, needle: &str) -> (usize, usize) {
    for (i, line) in yaml.lines().enumerate() {
        if let Some(col) = line.find(needle) {
            return (i, col);
        }
    }
    (0, 0)
}

/// The parser's message without its own prefix and position (the finding carries the position,
/// in file coordinates): `error: line 1 column 8: unclosed bracket '['` → `unclosed bracket '['`.
fn clean_message(s: &str) -> String {
    let first = s.lines().next().unwrap_or(s).trim();
    let first = first.strip_prefix("error:").unwrap_or(first).trim_start();
    if first.starts_with("line ")
        && let Some((_, rest)) = first.split_once(": ")
    {
        return rest.trim().to_string();
    }
    first.to_string()
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
    fn table_of_forms() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("no frontmatter\n", &[], "no frontmatter\n"),
            ("---\npaths: src/**\n---\nbody\n", &["src/**"], "body\n"),
            (
                "---\npaths: \"**/*.test.ts\"\n---\nB\n",
                &["**/*.test.ts"],
                "B\n",
            ),
            (
                "---\npaths:\n  - \"src/**/*.ts\"\n  - lib/*.js\n---\nB\n",
                &["src/**/*.ts", "lib/*.js"],
                "B\n",
            ),
            (
                "---\npaths: \"docs/**, src/**/*.ts\"\n---\nB",
                &["docs/**", "src/**/*.ts"],
                "B",
            ),
            (
                "---\npaths: \"src/{x,y}/*.ts\"\n---\n",
                &["src/{x,y}/*.ts"],
                "",
            ),
            ("---\ndescription: d\n---\nB\n", &[], "B\n"),
            ("---  \n---\nB\n", &[], "B\n"),
            // Unclosed: not frontmatter.
            ("---\npaths: x\nB\n", &[], "---\npaths: x\nB\n"),
            // `---` later in the file is a thematic break, not frontmatter.
            ("A\n---\nB\n---\n", &[], "A\n---\nB\n---\n"),
        ];
        for (text, want_globs, want_body) in cases {
            assert_eq!(globs(text), *want_globs, "globs of {text:?}");
            assert_eq!(split(text).1, *want_body, "body of {text:?}");
        }
    }

    #[test]
    fn broken_yaml_is_a_finding_with_a_position() {
        let (fm, body) = split("---\ndescription: ok\npaths: [unclosed\n---\nbody\n");
        let fm = fm.unwrap();
        let err = fm.error.expect("an error");
        assert!(err.line >= 1, "{err:?}");
        assert_eq!(fm.paths, None);
        assert_eq!(body, "body\n");
    }

    #[test]
    fn wrong_paths_type_is_a_finding() {
        let (fm, _) = split("---\npaths: 3\n---\nB\n");
        let fm = fm.unwrap();
        assert!(fm.error.unwrap().message.contains("paths must be"));
        assert_eq!(fm.paths, None);
    }

    #[test]
    fn glob_positions_point_at_the_glob() {
        let (fm, _) = split("---\npaths:\n  - \"**/*.py\"\n---\nB\n");
        let g = &fm.unwrap().paths.unwrap()[0];
        assert_eq!((g.line, g.col), (2, 5));
    }
}
