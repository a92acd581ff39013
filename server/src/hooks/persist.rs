//! The 10,000-character cap on what a hook adds to the model's context (`hooks-agents-styles.md`
//! section 8, h14/*): a plain output or an `additionalContext` of up to 10,000 characters is sent
//! whole; a longer one is saved to a file and replaced by
//!
//! ```text
//! <persisted-output>\nOutput too large (9.8KB). Full output saved to: <file>\n\nPreview (first 2KB):\n<first 2,000 characters>\n...\n</persisted-output>
//! ```
//!
//! Characters are counted as the reference counts them (UTF-16 code units); the size is bytes /
//! 1024 with one decimal. The file is `hook-<id>-<hash>-stdout.txt` for a plain output and
//! `hook-<id>-<Event>-<hash>-additionalContext.txt` for an `additionalContext`, in the session's
//! `tool-results` folder beside its transcript; `<id>` is the tool call's id for tool events (only
//! its letters, digits, `-` and `_`: the model chose it) and a random id otherwise. Standard
//! error is not capped here (the reference sends 100,000 characters of it whole).

use std::path::PathBuf;

/// Characters sent whole.
pub const MAX_CHARS: usize = 10_000;
/// Characters of the preview.
pub const PREVIEW_CHARS: usize = 2_000;

/// Where capped texts are saved.
#[derive(Clone, Debug, Default)]
pub struct Persist {
    /// The session's `tool-results` folder; `None`: nothing can be saved (the text is cut).
    pub dir: Option<PathBuf>,
}

/// What a capped text is.
#[derive(Clone, Copy, Debug)]
pub enum Kind<'a> {
    /// A hook's plain standard output.
    Stdout,
    /// An `additionalContext` of this event.
    Context(&'a str),
}

impl Persist {
    /// `text` as the model gets it: whole up to [`MAX_CHARS`], else saved and replaced by the
    /// persisted-output text. `id` names the file (a tool call's id; `None`: a random one).
    pub fn cap(&self, text: &str, kind: Kind<'_>, id: Option<&str>) -> String {
        if utf16_len(text) <= MAX_CHARS {
            return text.to_string();
        }
        let size = size(text.len());
        let preview = prefix_utf16(text, PREVIEW_CHARS);
        let id: String = match id {
            Some(id) => id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .take(128)
                .collect(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let hash = &sha1_smol::Sha1::from(text.as_bytes()).digest().to_string()[..8];
        let name = match kind {
            Kind::Stdout => format!("hook-{id}-{hash}-stdout.txt"),
            Kind::Context(event) => format!("hook-{id}-{event}-{hash}-additionalContext.txt"),
        };
        let saved = match &self.dir {
            Some(dir) => std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(dir.join(&name), text))
                .map(|()| dir.join(&name))
                .map_err(|e| e.to_string()),
            None => Err("the session has no folder for it".to_string()),
        };
        let head = match saved {
            Ok(path) => format!(
                "Output too large ({size}). Full output saved to: {}",
                path.display()
            ),
            Err(e) => {
                format!("Output too large ({size}). The full output could not be saved: {e}.")
            }
        };
        format!(
            "<persisted-output>\n{head}\n\nPreview (first 2KB):\n{preview}\n...\n</persisted-output>"
        )
    }
}

/// The length JavaScript gives a string.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` of at most `n` UTF-16 units (never half a character).
fn prefix_utf16(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// `9.8KB` for 10,001 bytes, `976.6KB` for 1,000,000; `MB` from 1,024 KB on.
fn size(bytes: usize) -> String {
    let kb = bytes as f64 / 1024.0;
    if kb < 1024.0 {
        format!("{kb:.1}KB")
    } else {
        format!("{:.1}MB", kb / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_characters_pass_and_one_more_is_saved() {
        let dir = tempfile::tempdir().unwrap();
        let p = Persist {
            dir: Some(dir.path().join("tool-results")),
        };
        let whole = "x".repeat(10_000);
        assert_eq!(p.cap(&whole, Kind::Stdout, None), whole);
        let big = format!("{}{}", "a".repeat(2_000), "b".repeat(8_001));
        let sent = p.cap(&big, Kind::Context("PreToolUse"), Some("toolu_01/../x"));
        let prefix = "<persisted-output>\nOutput too large (9.8KB). Full output saved to: ";
        assert!(sent.starts_with(prefix), "{sent}");
        let path = &sent[prefix.len()..sent.find("\n\nPreview").unwrap()];
        assert!(
            path.starts_with(&format!(
                "{}/hook-toolu_01x-PreToolUse-",
                dir.path().join("tool-results").display()
            )) && path.ends_with("-additionalContext.txt"),
            "{path}"
        );
        assert_eq!(std::fs::read_to_string(path).unwrap(), big);
        assert!(sent.ends_with(&format!(
            "\n\nPreview (first 2KB):\n{}\n...\n</persisted-output>",
            "a".repeat(2_000)
        )));
        assert_eq!(size(50_000), "48.8KB");
        assert_eq!(size(1_000_000), "976.6KB");
        // Counted in UTF-16 units, never cut inside a character.
        assert_eq!(utf16_len("é😀"), 3);
        assert_eq!(prefix_utf16("a😀", 2), "a");
    }
}
