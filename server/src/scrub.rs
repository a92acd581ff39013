//! The one scrubber of secrets: what replaces the API key (and any other [`Secret`]
//! value) with `[redacted]` in everything that leaves the process's trust: tool results for the
//! model, every chat event and ACP update, permission prompts, log lines.
//!
//! A [`Scrubber`] knows each secret in the forms a command or a model can turn it into and the
//! scrub can still recognise:
//! - the value itself, and reversed (`rev`);
//! - hexadecimal, lower and upper case (`xxd -p`, `od`-like dumps without spaces);
//! - base64 in the standard and the URL-safe alphabet (`base64`, `openssl base64`), at each of
//!   the three alignments the value can have in the encoded stream: the part of the encoding
//!   made of the value's bytes alone (all but at most two bytes at either end) is the pattern,
//!   so the key is found wherever it sat in what was encoded.
//!
//! Hexadecimal and base64 are also found across line breaks (`base64` wraps at 76 columns,
//! `xxd -p` at 60). Transformed forms are only made for values of 16 bytes or more (no real key
//! is shorter; short ones would match ordinary words), the value itself for 8 bytes or more.
//!
//! Text that streams in pieces (an answer's deltas) goes through a [`Stream`]: it holds back
//! the end of what it was given for as long as that end could be the beginning of a secret, so
//! a key split across two pieces is still caught; [`Stream::flush`] gives the rest.
//!
//! What it cannot know: an encoding it does not list (rot13, a key split into words, an
//! encryption). That is why the key is kept out of reach in the first place (the environment,
//! the sandbox); this is the second line.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";
/// Values shorter than this are not scrubbed at all.
pub const MIN_SECRET: usize = 8;
/// Values shorter than this are scrubbed as they are only (no transformed forms).
pub const MIN_TRANSFORMED: usize = 16;

/// The forms of a set of secrets, ready to search for.
#[derive(Clone, Default)]
pub struct Scrubber {
    /// Searched in the text as it is.
    plain: Option<AhoCorasick>,
    /// Searched with line breaks (`\n`, `\r`) left out.
    wrapped: Option<AhoCorasick>,
    plain_forms: Vec<String>,
    wrapped_forms: Vec<String>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Scrubber({} forms)",
            self.plain_forms.len() + self.wrapped_forms.len()
        )
    }
}

impl Scrubber {
    /// A scrubber for `secrets` (empty and short ones are left out).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Scrubber {
        let mut plain: Vec<String> = Vec::new();
        let mut wrapped: Vec<String> = Vec::new();
        let add = |v: &mut Vec<String>, s: String| {
            if s.len() >= MIN_SECRET && !v.contains(&s) {
                v.push(s);
            }
        };
        for s in secrets {
            let s = s.trim();
            if s.len() < MIN_SECRET {
                continue;
            }
            add(&mut plain, s.to_string());
            if s.len() < MIN_TRANSFORMED {
                continue;
            }
            add(&mut plain, s.chars().rev().collect());
            let b = s.as_bytes();
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            add(&mut wrapped, hex.to_ascii_uppercase());
            add(&mut wrapped, hex);
            for start in 0..3 {
                let rest = &b[start..];
                let whole = &rest[..rest.len() / 3 * 3];
                for engine in [
                    &base64::engine::general_purpose::STANDARD_NO_PAD,
                    &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                ] {
                    let form = engine.encode(whole);
                    if form.len() >= MIN_TRANSFORMED {
                        add(&mut wrapped, form);
                    }
                }
            }
        }
        let build = |forms: &[String]| {
            (!forms.is_empty()).then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(forms)
                    .expect("plain strings make an automaton")
            })
        };
        Scrubber {
            plain: build(&plain),
            wrapped: build(&wrapped),
            plain_forms: plain,
            wrapped_forms: wrapped,
        }
    }

    /// No secret to look for.
    pub fn is_empty(&self) -> bool {
        self.plain.is_none() && self.wrapped.is_none()
    }

    /// Does `text` hold a secret in any known form?
    pub fn holds(&self, text: &str) -> bool {
        !self.spans(text).is_empty()
    }

    /// `text` with every secret, in every known form, replaced by `[redacted]`.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e) in spans {
            out.push_str(&text[at..s]);
            out.push_str(REDACTED);
            at = e;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Every string in `v` scrubbed (keys and values).
    pub fn scrub_json(&self, v: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        if self.is_empty() {
            return v.clone();
        }
        match v {
            Value::String(s) => Value::String(self.scrub(s).into_owned()),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.scrub_json(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (self.scrub(k).into_owned(), self.scrub_json(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The byte ranges of `text` to replace, sorted, not overlapping.
    fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if let Some(ac) = &self.plain {
            spans.extend(ac.find_iter(text).map(|m| (m.start(), m.end())));
        }
        if let Some(ac) = &self.wrapped {
            let (stripped, map) = without_breaks(text);
            for m in ac.find_iter(stripped.as_ref()) {
                spans.push((map[m.start()], map[m.end() - 1] + 1));
            }
        }
        if spans.len() > 1 {
            spans.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
            for (s, e) in spans {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            spans = merged;
        }
        spans
    }

    /// Where the end of `text` could be the beginning of a secret (in any form): the byte index
    /// from which it must be held back, or `text.len()`.
    fn hold_from(&self, text: &str) -> usize {
        let longest = self
            .plain_forms
            .iter()
            .chain(&self.wrapped_forms)
            .map(String::len)
            .max()
            .unwrap_or(0);
        let bytes = text.as_bytes();
        // Wrapped forms may have line breaks inside: look back further (one break per 60).
        let window = longest + longest / 50 + 2;
        let from = text.len().saturating_sub(window);
        for i in from..text.len() {
            if !text.is_char_boundary(i) {
                continue;
            }
            let tail = &text[i..];
            let first = bytes[i];
            if self
                .plain_forms
                .iter()
                .any(|f| f.as_bytes()[0] == first && f.len() > tail.len() && f.starts_with(tail))
            {
                return i;
            }
            if first != b'\n' && first != b'\r' {
                let stripped: String = tail.chars().filter(|c| *c != '\n' && *c != '\r').collect();
                if self.wrapped_forms.iter().any(|f| {
                    f.as_bytes()[0] == first && f.len() > stripped.len() && f.starts_with(&stripped)
                }) {
                    return i;
                }
            }
        }
        text.len()
    }

    /// A scrubber for text that arrives in pieces.
    pub fn stream(self: &std::sync::Arc<Self>) -> Stream {
        Stream {
            scrubber: self.clone(),
            held: String::new(),
        }
    }
}

/// `text` without `\n` and `\r`, and for each byte of it the byte of `text` it came from.
fn without_breaks(text: &str) -> (Cow<'_, str>, Vec<usize>) {
    if !text.contains(['\n', '\r']) {
        return (Cow::Borrowed(text), (0..text.len()).collect());
    }
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if c == '\n' || c == '\r' {
            continue;
        }
        out.push(c);
        map.extend(i..i + c.len_utf8());
    }
    (Cow::Owned(out), map)
}

/// Scrubs text given in pieces (see the module doc).
pub struct Stream {
    scrubber: std::sync::Arc<Scrubber>,
    held: String,
}

impl Stream {
    /// The scrubbed text that can go out now, `piece` included; the rest is held.
    pub fn push(&mut self, piece: &str) -> String {
        if self.scrubber.is_empty() {
            return piece.to_string();
        }
        self.held.push_str(piece);
        let text = self.scrubber.scrub(&self.held).into_owned();
        let at = self.scrubber.hold_from(&text);
        self.held = text[at..].to_string();
        let mut out = text;
        out.truncate(at);
        out
    }

    /// What is held, scrubbed (the text ended).
    pub fn flush(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        self.scrubber.scrub(&held).into_owned()
    }

    /// Is anything held?
    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    const KEY: &str = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789abcdef";

    fn b64(engine: &base64::engine::GeneralPurpose, s: &[u8]) -> String {
        engine.encode(s)
    }

    #[test]
    fn the_key_is_found_as_it_is_reversed_in_hex_and_in_base64_at_every_alignment() {
        let s = Scrubber::new([KEY]);
        let reversed: String = KEY.chars().rev().collect();
        let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(s.scrub(&format!("key={KEY}.")), "key=[redacted].");
        assert_eq!(s.scrub(&format!("<{reversed}>")), "<[redacted]>");
        assert!(!s.scrub(&hex).contains(&hex[4..40]));
        assert!(
            !s.scrub(&hex.to_uppercase())
                .contains(&hex.to_uppercase()[4..40])
        );
        for prefix in ["", "A", "AB", "ANTHROPIC_API_KEY=", "x=12"] {
            let line = format!("{prefix}{KEY}\n");
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let enc = b64(engine, line.as_bytes());
                let out = s.scrub(&enc);
                assert!(out.contains(REDACTED), "{prefix:?}: {enc}");
                // What is left of the encoding decodes to at most a few bytes of the key.
                assert!(out.len() < 40, "{prefix:?}: {out}");
                // Wrapped at 76 columns, as `base64` prints it.
                let wrapped: String = enc
                    .as_bytes()
                    .chunks(20)
                    .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
                    .collect();
                assert!(s.scrub(&wrapped).contains(REDACTED), "{wrapped}");
            }
        }
        assert_eq!(s.scrub("nothing here"), "nothing here");
        assert!(matches!(s.scrub("nothing"), Cow::Borrowed(_)));
        // Short values: only themselves; tiny ones not at all.
        let short = Scrubber::new(["abcdefghij"]);
        assert_eq!(
            short.scrub("abcdefghij jihgfedcba"),
            "[redacted] jihgfedcba"
        );
        assert!(Scrubber::new(["abc", ""]).is_empty());
        let json = serde_json::json!({"command": format!("echo {KEY}"), "n": 1, KEY: [KEY]});
        let clean = s.scrub_json(&json).to_string();
        assert!(!clean.contains(KEY), "{clean}");
    }

    #[test]
    fn a_key_split_across_pieces_is_held_back_until_it_can_be_judged() {
        let s = std::sync::Arc::new(Scrubber::new([KEY]));
        for cut in [1, 5, 20, KEY.len() - 1] {
            let mut st = s.stream();
            let mut out = String::new();
            out.push_str(&st.push("Your key is "));
            out.push_str(&st.push(&KEY[..cut]));
            assert!(!out.contains(&KEY[..cut.min(3)]) || cut < 3, "{out}");
            out.push_str(&st.push(&KEY[cut..]));
            out.push_str(&st.push(" ok"));
            out.push_str(&st.flush());
            assert_eq!(out, "Your key is [redacted] ok", "cut at {cut}");
        }
        // Ordinary text flows at once; a held beginning that turns out not to be the key goes on.
        let mut st = s.stream();
        assert_eq!(st.push("hello "), "hello ");
        let a = st.push("see sk-");
        assert_eq!(a, "see ");
        assert!(st.is_holding());
        assert_eq!(st.push("learn more"), "sk-learn more");
        assert_eq!(st.flush(), "");
        // Base64 split across pieces, with a line break.
        let enc = base64::engine::general_purpose::STANDARD.encode(KEY);
        let mut st = s.stream();
        let mut out = st.push(&enc[..30]);
        out.push_str(&st.push("\n"));
        out.push_str(&st.push(&enc[30..]));
        out.push_str(&st.flush());
        assert!(
            out.contains(REDACTED) && !out.contains(&enc[8..30]),
            "{out}"
        );
    }
}
