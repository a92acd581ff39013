//! Saving what a memory extraction found (session.md section 5): the model's answer parsed into
//! typed memories, each written as a topic file `<memory dir>/<name>.md` (frontmatter `name`,
//! `description`, `type`, then the content) with exactly one index line
//! `- [<name>](<name>.md) — <description>` in MEMORY.md.
//!
//! Pure text functions plus [`save`], which reads through [`Fs`] and writes through [`WriteFs`]:
//! no other IO. Nothing here fails the caller's session: a malformed answer is an `Err` with
//! the reason (the caller logs it and tries again after the next turn), a bad entry is skipped
//! with its reason, a file that cannot be written is reported.
//!
//! **Invariant:** a write never leaves the memory directory: a name is reduced to ASCII
//! letters, digits, `-` and `_` (no separator, no `.`, so no `..`), `MEMORY` is refused, and a
//! topic file that is a symbolic link is refused rather than followed.
//!
//! **Names that clean to the same file are told apart.** The file keeps the model's name as it
//! gave it (frontmatter `name`); a memory updates the file whose name is its own (or whose file
//! name it gave), and any other of the same cleaned name gets the next free `<stem>-2.md`,
//! `<stem>-3.md`, ... (`Prefers Tabs` and `prefers.tabs` are two memories, never one overwriting
//! the other; on a case-insensitive disk `Tabs` and `tabs` too).
//!
//! **Two processes at once** (two sessions of one project: the editor's and an ACP client's)
//! lose nothing: [`save`] reads and rewrites MEMORY.md and picks file names under an exclusive
//! lock on `.MEMORY.md.lock` in the memory directory ([`WriteFs::lock`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::INDEX_FILE;
use crate::fs::{Fs, WriteFs};

/// Longest name kept (characters); longer names are cut.
pub const MAX_NAME: usize = 64;
/// An index line is kept under this many characters (the description is shortened).
pub const MAX_INDEX_LINE: usize = 150;
/// What the extraction prompt shows of the existing topic files, in bytes.
pub const MAX_EXISTING: usize = 16 * 1024;
/// Memories kept from one answer; the rest are dropped with a reason.
pub const MAX_ENTRIES: usize = 20;

/// The four kinds of memory (context.md section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    User,
    Feedback,
    Project,
    Reference,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "user" => Some(Kind::User),
            "feedback" => Some(Kind::Feedback),
            "project" => Some(Kind::Project),
            "reference" => Some(Kind::Reference),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Feedback => "feedback",
            Kind::Project => "project",
            Kind::Reference => "reference",
        }
    }
}

/// The lock file [`save`] holds while it updates the directory.
pub const LOCK_FILE: &str = ".MEMORY.md.lock";
/// Files of one cleaned name at most (`<stem>.md`, `<stem>-2.md`, ...).
pub const MAX_SAME_STEM: usize = 50;

/// One memory the model asked to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memory {
    pub kind: Kind,
    /// A safe file stem (see [`file_stem`]); [`save`] may add `-2`, `-3`, ... to tell it apart.
    pub name: String,
    /// The name as the model gave it (one line): what tells two memories apart.
    pub title: String,
    /// One line.
    pub description: String,
    pub content: String,
}

/// The parsed answer: the memories, and the entries that were dropped with why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub memories: Vec<Memory>,
    pub dropped: Vec<String>,
}

/// Parses the model's answer. Accepted: a JSON list of `{type, name, description, content}`, or
/// an object holding one under `memories`; `[]`, `{"memories": []}` and a bare `none` mean
/// nothing to keep. The JSON may sit in a code fence or among prose (the outermost `[...]` or
/// `{...}` is tried). `Err` when no such JSON is found: the caller retries after the next turn.
pub fn parse(answer: &str) -> Result<Parsed, String> {
    let text = answer.trim();
    let bare = text
        .trim_matches(|c: char| c == '`' || c == '.' || c.is_whitespace())
        .to_ascii_lowercase();
    if bare == "none" || bare.is_empty() {
        return Ok(Parsed::default());
    }
    let value = json_in(text).ok_or_else(|| {
        let shown: String = text.chars().take(80).collect();
        format!("the answer holds no JSON list of memories (it starts {shown:?})")
    })?;
    let list = match value {
        Value::Array(a) => a,
        Value::Object(mut o) => match o.remove("memories") {
            Some(Value::Array(a)) => a,
            Some(Value::Null) | None if o.is_empty() => Vec::new(),
            _ => return Err("the answer's JSON object has no `memories` list".into()),
        },
        _ => return Err("the answer's JSON is not a list of memories".into()),
    };
    let mut out = Parsed::default();
    if list.len() > MAX_ENTRIES {
        out.dropped.push(format!(
            "entries {MAX_ENTRIES} to {}: one answer keeps at most {MAX_ENTRIES} memories",
            list.len() - 1
        ));
    }
    for (i, item) in list.iter().take(MAX_ENTRIES).enumerate() {
        match entry(item) {
            Ok(m) => {
                // A later entry of the same name replaces an earlier one: one file, one line.
                // (Another name that cleans to the same file is another memory.)
                out.memories.retain(|x| x.title != m.title);
                out.memories.push(m);
            }
            Err(why) => out.dropped.push(format!("entry {i}: {why}")),
        }
    }
    Ok(out)
}

fn json_in(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    // A fenced block: the text between the first ``` line and the next ```.
    if let Some(start) = text.find("```") {
        let after = &text[start + 3..];
        let body = after.split_once('\n').map_or("", |(_, b)| b);
        if let Some(end) = body.find("```")
            && let Ok(v) = serde_json::from_str::<Value>(body[..end].trim())
        {
            return Some(v);
        }
    }
    for (open, close) in [('[', ']'), ('{', '}')] {
        if let (Some(a), Some(b)) = (text.find(open), text.rfind(close))
            && a < b
            && let Ok(v) = serde_json::from_str::<Value>(&text[a..=b])
        {
            return Some(v);
        }
    }
    None
}

fn entry(item: &Value) -> Result<Memory, String> {
    let field = |k: &str| item.get(k).and_then(Value::as_str).map(str::trim);
    let kind_text = field("type").ok_or("no `type`")?;
    let kind = Kind::parse(kind_text).ok_or_else(|| {
        format!("type {kind_text:?} is not one of user, feedback, project, reference")
    })?;
    let raw_name = field("name").ok_or("no `name`")?;
    let name = file_stem(raw_name)?;
    let title: String = one_line(
        raw_name
            .strip_suffix(".md")
            .or_else(|| raw_name.strip_suffix(".MD"))
            .unwrap_or(raw_name),
    )
    .chars()
    .take(2 * MAX_NAME)
    .collect();
    let content = field("content").unwrap_or_default();
    if content.is_empty() {
        return Err(format!("{name}: empty `content`"));
    }
    let description = one_line(field("description").unwrap_or_default());
    let description = if description.is_empty() {
        one_line(content)
    } else {
        description
    };
    Ok(Memory {
        kind,
        name,
        title,
        description,
        content: content.to_string(),
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A safe file stem from the model's name: ASCII letters and digits kept, `-` and `_` kept,
/// every other run of characters (spaces, `/`, `\`, `.`, …) becomes one `-`, trimmed of `-` and
/// `_`, cut to [`MAX_NAME`]. A trailing `.md` is dropped first. Refused: nothing left, and
/// `MEMORY` (the index itself).
pub fn file_stem(name: &str) -> Result<String, String> {
    let raw = name.trim();
    let raw = raw
        .strip_suffix(".md")
        .or_else(|| raw.strip_suffix(".MD"))
        .unwrap_or(raw);
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out
        .trim_matches(|c| c == '-' || c == '_')
        .chars()
        .take(MAX_NAME)
        .collect();
    let out = out.trim_end_matches(['-', '_']).to_string();
    if out.is_empty() {
        return Err(format!("name {name:?} has no usable characters"));
    }
    if out.eq_ignore_ascii_case("MEMORY") {
        return Err(format!("name {name:?} is the index's own name"));
    }
    Ok(out)
}

/// The topic file's text: frontmatter, a blank line, the content, a final newline. The
/// description is a JSON string, which YAML reads as a double-quoted scalar (any `:` or `#` in
/// it stays text).
pub fn topic_text(m: &Memory) -> String {
    let description = serde_json::to_string(&m.description).unwrap_or_else(|_| "\"\"".into());
    let title = if m.title.is_empty() {
        &m.name
    } else {
        &m.title
    };
    // Plain when YAML reads it as it is; a JSON string (a YAML double-quoted scalar) otherwise.
    let name = if !title.is_empty()
        && title
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ' '))
        && !title.starts_with(' ')
        && !title.ends_with(' ')
    {
        title.clone()
    } else {
        serde_json::to_string(title).unwrap_or_else(|_| m.name.clone())
    };
    format!(
        "---\nname: {name}\ndescription: {description}\ntype: {}\n---\n\n{}\n",
        m.kind.as_str(),
        m.content.trim_end()
    )
}

/// `- [<name>](<name>.md) — <description>`, kept under [`MAX_INDEX_LINE`] characters by
/// shortening the description (ending it with `…`).
pub fn index_line(name: &str, description: &str) -> String {
    let head = format!("- [{name}]({name}.md)");
    let description = one_line(description);
    if description.is_empty() {
        return head;
    }
    let full = format!("{head} — {description}");
    if full.chars().count() < MAX_INDEX_LINE {
        return full;
    }
    let room = MAX_INDEX_LINE.saturating_sub(head.chars().count() + 3 + 2);
    let cut: String = description.chars().take(room).collect();
    format!("{head} — {}…", cut.trim_end())
}

/// Is `line` the index line of `name` (whatever its description)? Judged by the line's own
/// link only, `- [label](name.md)` at its start: a description that mentions `](other.md)`
/// belongs to its own line, not to `other`'s.
fn is_index_of(line: &str, name: &str) -> bool {
    let t = line.trim_start();
    let Some(rest) = t.strip_prefix("- [").or_else(|| t.strip_prefix("* [")) else {
        return false;
    };
    let Some(end) = rest.find("](") else {
        return false;
    };
    let target = &rest[end + 2..];
    target
        .strip_prefix(name)
        .and_then(|t| t.strip_prefix(".md)"))
        .is_some()
}

/// MEMORY.md with exactly one index line for `name`: the first existing line for it is replaced
/// in place, any further ones removed, or the line is appended. Everything else is kept as is.
pub fn upsert_index(existing: &str, name: &str, description: &str) -> String {
    let line = index_line(name, description);
    let mut out = String::with_capacity(existing.len() + line.len() + 1);
    let mut placed = false;
    for l in existing.split_inclusive('\n') {
        let body = l.trim_end_matches(['\n', '\r']);
        if is_index_of(body, name) {
            if !placed {
                out.push_str(&line);
                out.push_str(&l[body.len()..]);
                if !l.ends_with('\n') {
                    out.push('\n');
                }
                placed = true;
            }
            continue;
        }
        out.push_str(l);
    }
    if !placed {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// What [`save`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Saved {
    /// Topic files written (created or updated), then MEMORY.md if it changed.
    pub written: Vec<PathBuf>,
    /// Memories not written, with why.
    pub failed: Vec<String>,
}

/// The frontmatter `name` of a topic file's text, as written ([`topic_text`]).
fn name_in(text: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let line = rest
        .lines()
        .take_while(|l| *l != "---")
        .find_map(|l| l.strip_prefix("name:"))?
        .trim();
    if line.starts_with('"') {
        serde_json::from_str(line).ok()
    } else {
        Some(line.to_string())
    }
}

/// The file stem `m` is saved under: the first of `<stem>`, `<stem>-2`, ... that is free or
/// already `m`'s own (its name, or the file name the model gave), and not `taken` by another
/// memory of this save. `Err` when every one is another memory's.
fn stem_for(fs: &dyn Fs, dir: &Path, m: &Memory, taken: &[String]) -> Result<String, String> {
    let title = if m.title.is_empty() {
        &m.name
    } else {
        &m.title
    };
    for k in 1..=MAX_SAME_STEM {
        let stem = if k == 1 {
            m.name.clone()
        } else {
            format!("{}-{k}", m.name)
        };
        if taken.contains(&stem) {
            continue;
        }
        let path = dir.join(format!("{stem}.md"));
        match fs.read_text(&path) {
            Err(crate::fs::ReadError::NotFound) => return Ok(stem),
            Ok(text) => {
                let name = name_in(&text);
                if name.as_deref() == Some(title.as_str()) || stem == *title {
                    return Ok(stem);
                }
            }
            // A link, a folder, an unreadable file: someone else's; the next name.
            Err(_) => {}
        }
    }
    Err(format!(
        "{title}: {MAX_SAME_STEM} memories already have names that clean to {}.md; not saved",
        m.name
    ))
}

/// Writes each memory's topic file (replacing its own, never another's: see the module doc)
/// and its index line, under the directory's lock. `scrub` is applied to every text before it
/// is written (the API key never reaches a file).
pub fn save(
    fs: &dyn Fs,
    w: &dyn WriteFs,
    dir: &Path,
    memories: &[Memory],
    scrub: &dyn Fn(&str) -> String,
) -> Saved {
    let mut saved = Saved::default();
    if memories.is_empty() {
        return saved;
    }
    if let Err(e) = w.create_dir_all(dir) {
        saved.failed.push(format!("{}: {e}", dir.display()));
        return saved;
    }
    // Another process's save (another session of the project) waits for this one, and this one
    // reads MEMORY.md only once it holds the lock. Best effort: a disk that cannot lock still
    // gets the memories.
    let _lock = w.lock(&dir.join(LOCK_FILE));
    let index_path = dir.join(INDEX_FILE);
    let before = fs.read_text(&index_path).unwrap_or_default();
    let mut index = before.clone();
    let mut taken: Vec<String> = Vec::new();
    for m in memories {
        let stem = match stem_for(fs, dir, m, &taken) {
            Ok(s) => s,
            Err(why) => {
                saved.failed.push(why);
                continue;
            }
        };
        taken.push(stem.clone());
        // MEMORY.md loads its first 200 lines: a memory whose index line would fall past them
        // would never be seen, and would push nothing else out either. Not saved.
        if !index.lines().any(|l| is_index_of(l, &stem))
            && (index.lines().count() >= super::MAX_LINES
                || index.encode_utf16().count() + MAX_INDEX_LINE + 1 > super::MAX_UNITS)
        {
            saved.failed.push(format!(
                "{stem}: MEMORY.md is as long as what loads ({} lines, {} UTF-16 units); not saved",
                super::MAX_LINES,
                super::MAX_UNITS
            ));
            continue;
        }
        let path = dir.join(format!("{stem}.md"));
        if fs.is_symlink(&path).unwrap_or(false) {
            saved.failed.push(format!(
                "{}: is a symbolic link; not followed",
                path.display()
            ));
            continue;
        }
        let m = Memory {
            name: stem.clone(),
            description: scrub(&m.description),
            content: scrub(&m.content),
            title: scrub(&m.title),
            ..m.clone()
        };
        match w.replace(&path, topic_text(&m).as_bytes()) {
            Ok(()) => {
                index = upsert_index(&index, &stem, &m.description);
                saved.written.push(path);
            }
            Err(e) => saved.failed.push(format!("{}: {e}", path.display())),
        }
    }
    if index != before {
        if fs.is_symlink(&index_path).unwrap_or(false) {
            saved.failed.push(format!(
                "{}: is a symbolic link; not followed",
                index_path.display()
            ));
        } else {
            match w.replace(&index_path, index.as_bytes()) {
                Ok(()) => saved.written.push(index_path),
                Err(e) => saved.failed.push(format!("{}: {e}", index_path.display())),
            }
        }
    }
    saved
}

/// What the extraction prompt shows of the memory kept so far: MEMORY.md, then the topic files
/// (name order), within [`MAX_EXISTING`] bytes.
pub fn existing(fs: &dyn Fs, dir: &Path) -> String {
    let mut out = String::new();
    if let Ok(index) = fs.read_text(&dir.join(INDEX_FILE)) {
        out.push_str(&format!("MEMORY.md:\n{}\n", index.trim_end()));
    }
    let mut names: Vec<String> = fs
        .read_dir(dir)
        .map(|v| {
            v.into_iter()
                .filter(|e| !e.link && e.name.ends_with(".md") && e.name != INDEX_FILE)
                .map(|e| e.name)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names {
        let Ok(text) = fs.read_text(&dir.join(&n)) else {
            continue;
        };
        let piece = format!("\n{n}:\n{}\n", text.trim_end());
        if out.len() + piece.len() > MAX_EXISTING {
            out.push_str("\n(more topic files not shown)\n");
            break;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn m(kind: Kind, name: &str, description: &str, content: &str) -> Memory {
        Memory {
            kind,
            name: name.into(),
            title: name.into(),
            description: description.into(),
            content: content.into(),
        }
    }

    #[test]
    fn parses_a_list_in_a_fence_among_prose_and_drops_bad_entries() {
        let answer = "Here is what I found:\n```json\n[\n {\"type\":\"feedback\",\"name\":\"tabs\",\"description\":\"Use tabs\",\"content\":\"The user wants tabs.\"},\n {\"type\":\"opinion\",\"name\":\"x\",\"description\":\"d\",\"content\":\"c\"},\n {\"type\":\"user\",\"name\":\"../..\",\"description\":\"d\",\"content\":\"c\"},\n {\"type\":\"user\",\"name\":\"role\",\"description\":\"d\",\"content\":\"\"}\n]\n```\nDone.";
        let p = parse(answer).unwrap();
        assert_eq!(
            p.memories,
            vec![m(
                Kind::Feedback,
                "tabs",
                "Use tabs",
                "The user wants tabs."
            )]
        );
        assert_eq!(p.dropped.len(), 3, "{:?}", p.dropped);
        assert!(p.dropped[0].contains("opinion"));
        assert!(p.dropped[1].contains("no usable characters"));
        assert!(p.dropped[2].contains("empty `content`"));
    }

    #[test]
    fn none_and_empty_lists_mean_nothing_and_garbage_is_an_error() {
        for a in [
            "none",
            "None.",
            "[]",
            "{\"memories\": []}",
            "```json\n[]\n```",
            "",
        ] {
            assert_eq!(parse(a).unwrap(), Parsed::default(), "{a:?}");
        }
        for a in [
            "I think the user likes tabs",
            "[{\"type\": ",
            "{\"other\": 1}",
            "42",
        ] {
            assert!(parse(a).is_err(), "{a:?}");
        }
        let p = parse(r#"{"memories":[{"type":"USER","name":"role","description":"","content":"Senior  Rust\nengineer"}]}"#).unwrap();
        assert_eq!(p.memories[0].kind, Kind::User);
        assert_eq!(p.memories[0].description, "Senior Rust engineer");
    }

    #[test]
    fn a_repeated_name_in_one_answer_keeps_the_last() {
        let p = parse(r#"[{"type":"user","name":"a","description":"1","content":"one"},{"type":"user","name":"a.md","description":"2","content":"two"}]"#).unwrap();
        assert_eq!(p.memories.len(), 1);
        assert_eq!(p.memories[0].content, "two");
    }

    #[test]
    fn names_that_clean_to_one_file_are_told_apart_never_overwritten() {
        let fs = MemFs::new();
        let dir = Path::new("/mem");
        let keep = |s: &str| s.to_string();
        let p = parse(r#"[{"type":"user","name":"Prefers Tabs","description":"one","content":"tabs"},
                         {"type":"user","name":"Prefers.Tabs","description":"two","content":"dots"}]"#)
        .unwrap();
        assert_eq!(p.memories.len(), 2, "two names, two memories: {p:?}");
        let saved = save(&fs, &fs, dir, &p.memories, &keep);
        assert!(saved.failed.is_empty(), "{saved:?}");
        let read = |f: &str| fs.read_text(&dir.join(f)).unwrap();
        assert!(read("Prefers-Tabs.md").starts_with("---\nname: Prefers Tabs\n"));
        assert!(read("Prefers-Tabs-2.md").starts_with("---\nname: \"Prefers.Tabs\"\n"));
        assert!(read("Prefers-Tabs-2.md").contains("dots"));
        // A later session: each name updates its own file; a third name gets a third file.
        let p = parse(r#"[{"type":"user","name":"Prefers.Tabs","description":"two","content":"dots, updated"},
                         {"type":"user","name":"prefers tabs!","description":"three","content":"bang"},
                         {"type":"user","name":"Prefers-Tabs","description":"one","content":"by file name"}]"#)
        .unwrap();
        let saved = save(&fs, &fs, dir, &p.memories, &keep);
        assert!(saved.failed.is_empty(), "{saved:?}");
        assert!(read("Prefers-Tabs-2.md").contains("dots, updated"));
        assert!(read("prefers-tabs.md").contains("bang"));
        assert!(read("Prefers-Tabs.md").contains("by file name"));
        let index = read("MEMORY.md");
        assert_eq!(index.lines().count(), 3, "{index}");
        for stem in ["Prefers-Tabs", "Prefers-Tabs-2", "prefers-tabs"] {
            assert!(index.contains(&format!("]({stem}.md)")), "{index}");
        }
    }

    #[test]
    fn file_stems_stay_inside_the_directory() {
        assert_eq!(file_stem("user_role").unwrap(), "user_role");
        assert_eq!(file_stem("Prefers Tabs.md").unwrap(), "Prefers-Tabs");
        assert_eq!(file_stem("../../etc/passwd").unwrap(), "etc-passwd");
        assert_eq!(file_stem("a\\b/c").unwrap(), "a-b-c");
        assert_eq!(
            file_stem("..").unwrap_err(),
            "name \"..\" has no usable characters"
        );
        assert!(file_stem("/").is_err());
        assert!(file_stem("memory.md").is_err());
        assert!(file_stem("MEMORY").is_err());
        assert_eq!(file_stem("ünïcode").unwrap(), "n-code");
        assert_eq!(file_stem(&"x".repeat(200)).unwrap().len(), MAX_NAME);
    }

    #[test]
    fn the_topic_file_has_frontmatter_then_content() {
        let t = topic_text(&m(
            Kind::Feedback,
            "tabs",
            "Tabs: always # really",
            "Use tabs.\n",
        ));
        assert_eq!(
            t,
            "---\nname: tabs\ndescription: \"Tabs: always # really\"\ntype: feedback\n---\n\nUse tabs.\n"
        );
    }

    #[test]
    fn an_index_line_is_found_by_its_own_link_only() {
        let index = "- [alpha](alpha.md) — see ](beta.md) for more\n- [beta](beta.md) — b\n";
        let out = upsert_index(index, "beta", "new b");
        assert!(
            out.contains("- [alpha](alpha.md) — see ](beta.md) for more\n"),
            "{out}"
        );
        assert!(out.contains("- [beta](beta.md) — new b\n"), "{out}");
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(!is_index_of("- [betamax](betamax.md)", "beta"));
    }

    #[test]
    fn one_answer_keeps_a_bounded_number_and_the_index_stays_within_what_loads() {
        let many: Vec<Value> = (0..3000)
            .map(|i| serde_json::json!({"type": "user", "name": format!("m{i}"), "description": "d", "content": "c"}))
            .collect();
        let parsed = parse(&Value::Array(many).to_string()).unwrap();
        assert_eq!(parsed.memories.len(), MAX_ENTRIES);
        assert!(!parsed.dropped.is_empty());
        let fs = crate::fs::MemFs::new();
        let full: String = (0..super::super::MAX_LINES)
            .map(|i| format!("- [old{i}](old{i}.md) — x\n"))
            .collect();
        fs.write("/m/MEMORY.md", &full);
        let saved = save(&fs, &fs, Path::new("/m"), &parsed.memories, &|s| {
            s.to_string()
        });
        assert!(saved.written.is_empty(), "{saved:?}");
        assert_eq!(saved.failed.len(), MAX_ENTRIES);
        assert_eq!(fs.read_text(Path::new("/m/MEMORY.md")).unwrap(), full);
    }

    #[test]
    fn index_lines_are_short_and_unique() {
        assert_eq!(
            index_line("tabs", "Use tabs"),
            "- [tabs](tabs.md) — Use tabs"
        );
        let long = index_line("tabs", &"word ".repeat(100));
        assert!(long.chars().count() <= MAX_INDEX_LINE, "{long}");
        assert!(long.ends_with('…'));

        let before = "# Memory\n\n- [a](a.md) — old a\n- [tabs](tabs.md) — old\n* [tabs](tabs.md) — dup\nfree text\n";
        let after = upsert_index(before, "tabs", "new");
        assert_eq!(
            after,
            "# Memory\n\n- [a](a.md) — old a\n- [tabs](tabs.md) — new\nfree text\n"
        );
        assert_eq!(upsert_index(&after, "tabs", "new"), after);
        assert_eq!(upsert_index("", "b", "d"), "- [b](b.md) — d\n");
        assert_eq!(upsert_index("x", "b", "d"), "x\n- [b](b.md) — d\n");
        // `[tabs2](tabs2.md)` is another topic.
        assert_eq!(
            upsert_index("- [tabs2](tabs2.md) — x\n", "tabs", "y"),
            "- [tabs2](tabs2.md) — x\n- [tabs](tabs.md) — y\n"
        );
    }

    #[test]
    fn saving_twice_updates_instead_of_duplicating() {
        let fs = MemFs::new();
        let dir = Path::new("/home/me/.claude/projects/p/memory");
        let scrub = |s: &str| s.replace("SECRET", "[redacted]");
        let first = save(
            &fs,
            &fs,
            dir,
            &[m(
                Kind::User,
                "role",
                "Rust engineer",
                "Writes Rust. SECRET",
            )],
            &scrub,
        );
        assert_eq!(
            first.written,
            vec![dir.join("role.md"), dir.join("MEMORY.md")]
        );
        let second = save(
            &fs,
            &fs,
            dir,
            &[m(
                Kind::User,
                "role",
                "Senior Rust engineer",
                "Writes Rust daily.",
            )],
            &scrub,
        );
        assert!(second.failed.is_empty(), "{:?}", second.failed);
        let index = fs.read_text(&dir.join("MEMORY.md")).unwrap();
        assert_eq!(index, "- [role](role.md) — Senior Rust engineer\n");
        let topic = fs.read_text(&dir.join("role.md")).unwrap();
        assert!(topic.ends_with("\n\nWrites Rust daily.\n"), "{topic}");
        let names: Vec<String> = fs
            .read_dir(dir)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["role.md", "MEMORY.md"]);
    }

    #[test]
    fn the_scrub_reaches_every_written_text() {
        let fs = MemFs::new();
        let dir = Path::new("/m/memory");
        let scrub = |s: &str| s.replace("SECRET", "[redacted]");
        save(
            &fs,
            &fs,
            dir,
            &[m(Kind::Reference, "api", "key SECRET", "the key is SECRET")],
            &scrub,
        );
        for f in ["api.md", "MEMORY.md"] {
            let t = fs.read_text(&dir.join(f)).unwrap();
            assert!(
                !t.contains("SECRET") && t.contains("[redacted]"),
                "{f}: {t}"
            );
        }
    }

    #[test]
    fn a_topic_file_that_is_a_link_is_not_followed() {
        let fs = MemFs::new();
        fs.write("/outside/target.md", "keep me");
        fs.symlink("/m/memory/evil.md", "/outside/target.md");
        let saved = save(
            &fs,
            &fs,
            Path::new("/m/memory"),
            &[m(Kind::User, "evil", "d", "overwrite")],
            &|s: &str| s.to_string(),
        );
        assert!(saved.written.is_empty(), "{saved:?}");
        assert!(saved.failed[0].contains("symbolic link"));
        assert_eq!(
            fs.read_text(Path::new("/outside/target.md")).unwrap(),
            "keep me"
        );
    }

    #[test]
    fn existing_memory_is_shown_to_the_model_within_a_bound() {
        let fs = MemFs::new();
        fs.write("/m/MEMORY.md", "- [a](a.md) — A\n");
        fs.write("/m/a.md", "---\nname: a\n---\n\nA body\n");
        fs.write("/m/big.md", "x".repeat(MAX_EXISTING));
        let e = existing(&fs, Path::new("/m"));
        assert!(e.starts_with("MEMORY.md:\n- [a](a.md) — A\n"), "{e}");
        assert!(e.contains("a.md:\n---\nname: a"), "{e}");
        assert!(e.ends_with("(more topic files not shown)\n"), "{e}");
        assert!(e.len() < MAX_EXISTING);
    }
}
