//! Server-sent events, decoded incrementally: bytes in, events out, no IO.
//!
//! Follows the WHATWG "event stream interpretation": lines end with CRLF, LF or CR (a CR at the
//! end of one chunk and an LF at the start of the next are one line end); a leading BOM is
//! dropped; `:` starts a comment; `field: value` loses one space after the colon; `data` lines
//! join with `\n`; a blank line dispatches the event, unless it has no data; an event left
//! without its blank line when the stream ends is dropped ([`SseDecoder::finish`] says so).
//!
//! Hand-written rather than taken from `eventsource-stream`: that crate is a `Stream` adapter
//! (it needs an async byte stream, which makes "every split of the bytes" tests and a pure
//! per-delta benchmark awkward), it has no size limit on a line, and its last release is from
//! 2022. `benches/sse.rs` measures both on the same bytes.

use std::fmt;

/// The most one line or one event's data may hold. A stream that exceeds it is broken (the API's
/// largest events are a few kilobytes); failing beats growing without bound.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, or `message` when there was none.
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The `id` field when the event had one.
    pub id: Option<String>,
    /// The `retry` field (milliseconds) when the event had a valid one.
    pub retry: Option<u64>,
}

/// A stream that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseError {
    /// A line or an event's data grew past [`MAX_EVENT_BYTES`].
    TooLarge,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::TooLarge => {
                write!(f, "an event stream line exceeded {MAX_EVENT_BYTES} bytes")
            }
        }
    }
}

impl std::error::Error for SseError {}

/// The decoder's state between chunks.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The current line, when a chunk ended inside it.
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF at the start of the next one ends no new line.
    after_cr: bool,
    /// No line was processed yet (a BOM may lead the first one).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    retry: Option<u64>,
}

impl SseDecoder {
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Feeds a chunk; complete events are appended to `out` in order.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if input.is_empty() {
            return Ok(());
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = input.strip_prefix(b"\n") {
                input = rest;
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', input) {
            if self.line.is_empty() {
                self.process_line(&input[..i], out)?;
            } else {
                self.line.extend_from_slice(&input[..i]);
                let line = std::mem::take(&mut self.line);
                let result = self.process_line(&line, out);
                self.line = line;
                self.line.clear();
                result?;
            }
            let mut next = i + 1;
            if input[i] == b'\r' {
                match input.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            input = &input[next..];
        }
        if self.line.len() + input.len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLarge);
        }
        self.line.extend_from_slice(input);
        Ok(())
    }

    /// The stream ended. Returns `true` when bytes of an unfinished event were dropped (a stream
    /// that was cut), `false` when it ended cleanly between events.
    pub fn finish(&mut self) -> bool {
        let unfinished = !self.line.is_empty() || self.has_data || !self.event.is_empty();
        *self = SseDecoder::default();
        unfinished
    }

    fn process_line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix("\u{feff}".as_bytes()) {
                line = rest;
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(SseError::TooLarge);
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            return;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the last `\n`
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data,
            id: self.id.clone(),
            retry: self.retry.take(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.push(c, &mut out).unwrap();
        }
        let cut = d.finish();
        (out, cut)
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
            retry: None,
        }
    }

    /// A stream as the Messages API sends it.
    const RECORDED: &[u8] = include_bytes!("testdata/anthropic_tool_use.sse");

    #[test]
    fn decodes_a_recorded_stream_identically_at_every_split() {
        let (whole, cut) = decode_chunks(&[RECORDED]);
        assert!(!cut);
        let names: Vec<&str> = whole.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(names.last(), Some(&"message_stop"));
        assert!(names.contains(&"ping"));
        for e in &whole {
            let v: serde_json::Value =
                serde_json::from_str(&e.data).expect("each data is one JSON document");
            assert_eq!(v["type"], e.event.as_str());
        }
        for i in 0..=RECORDED.len() {
            let (split, _) = decode_chunks(&[&RECORDED[..i], &RECORDED[i..]]);
            assert_eq!(split, whole, "split at byte {i}");
        }
        let bytes: Vec<&[u8]> = RECORDED.chunks(1).collect();
        assert_eq!(decode_chunks(&bytes).0, whole, "one byte at a time");
    }

    #[test]
    fn every_line_ending_and_every_split_of_a_crlf() {
        let text = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n";
        let want = vec![ev("a", "1"), ev("b", "2"), ev("message", "3")];
        for i in 0..=text.len() {
            for j in i..=text.len() {
                let (got, cut) = decode_chunks(&[&text[..i], &text[i..j], &text[j..]]);
                assert_eq!(got, want, "split at {i} and {j}");
                assert!(!cut);
            }
        }
    }

    #[test]
    fn fields_comments_and_multi_line_data() {
        let text = "\u{feff}: a comment\ndata\ndata:x\ndata:  two spaces\nunknown: field\nid: 7\nretry: 1500\n\n";
        let (got, _) = decode_chunks(&[text.as_bytes()]);
        assert_eq!(
            got,
            vec![SseEvent {
                event: "message".into(),
                data: "\nx\n two spaces".into(),
                id: Some("7".into()),
                retry: Some(1500),
            }]
        );
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_a_cut_is_reported() {
        let (got, cut) =
            decode_chunks(&[b"event: ping\n\nevent: content_block_delta\ndata: {\"ty"]);
        assert!(got.is_empty());
        assert!(cut, "the stream ended inside an event");
    }

    #[test]
    fn multi_byte_text_split_inside_a_character() {
        let text = "data: {\"text\":\"héllo 🌍\"}\n\n".as_bytes();
        for i in 0..=text.len() {
            let (got, _) = decode_chunks(&[&text[..i], &text[i..]]);
            assert_eq!(got[0].data, "{\"text\":\"héllo 🌍\"}", "split at {i}");
        }
    }

    #[test]
    fn an_endless_line_is_an_error_not_a_leak() {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        let chunk = vec![b'a'; 1 << 20];
        let mut failed = false;
        for _ in 0..20 {
            if d.push(&chunk, &mut out).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }
}
