//! The reading side of ACP's stdio transport: one JSON-RPC message per line (newline-delimited
//! JSON, `\n` or `\r\n`), cut from the byte stream with a cap.
//!
//! A line longer than [`MAX_LINE`] is read and dropped as it streams in (never held whole), then
//! reported so the loop can answer `-32600`; blank lines are skipped; reading never stops before
//! the end of the input. What a line holds is [`crate::rpc::classify`]'s business.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Lines longer than this are dropped (answered with `-32600`). An answer to `fs/read_text_file`
/// is one line: the agent asks the client only for regular files of at most 10 MB (`client.rs`),
/// which JSON escaping can at most multiply by six.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// What the reader cut.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// One message's bytes (without the line end).
    Message(Vec<u8>),
    /// A line over [`MAX_LINE`], dropped; its length in bytes.
    TooLong(usize),
}

/// Cuts lines out of a byte stream.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unread bytes in `buf`.
    pos: usize,
    /// Dropping an over-long line: bytes dropped so far.
    dropping: Option<usize>,
    eof: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> LineReader<R> {
        LineReader::with_limit(inner, MAX_LINE)
    }

    /// A reader with another cap (tests).
    pub fn with_limit(inner: R, max: usize) -> LineReader<R> {
        LineReader {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            dropping: None,
            eof: false,
            max,
        }
    }

    async fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = [0u8; 64 * 1024];
        let n = self.inner.read(&mut chunk).await?;
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(true)
    }

    /// The next non-blank line, an over-long one reported, or `None` at the end of the input (a
    /// last line without its line end counts).
    pub async fn next(&mut self) -> Option<Line> {
        loop {
            let data = &self.buf[self.pos..];
            match memchr::memchr(b'\n', data) {
                Some(i) => {
                    let line = &data[..i];
                    self.pos += i + 1;
                    if let Some(dropped) = self.dropping.take() {
                        return Some(Line::TooLong(dropped + i));
                    }
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    if line.len() > self.max {
                        return Some(Line::TooLong(line.len()));
                    }
                    return Some(Line::Message(line.to_vec()));
                }
                None => {
                    let pending = data.len();
                    if self.dropping.is_some() || pending > self.max {
                        // No line end in sight past the cap: drop what we have, keep dropping.
                        *self.dropping.get_or_insert(0) += pending;
                        self.pos += pending;
                    }
                    if !self.fill().await.unwrap_or(false) {
                        let rest = &self.buf[self.pos..];
                        if let Some(dropped) = self.dropping.take() {
                            self.pos = self.buf.len();
                            return Some(Line::TooLong(dropped + rest.len()));
                        }
                        if rest.iter().all(u8::is_ascii_whitespace) {
                            return None;
                        }
                        let line = rest.to_vec();
                        self.pos = self.buf.len();
                        return Some(Line::Message(line));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = LineReader::with_limit(input, max);
        let mut out = Vec::new();
        while let Some(l) = r.next().await {
            out.push(l);
        }
        out
    }

    fn msg(s: &str) -> Line {
        Line::Message(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_blank_lines_crlf_and_a_last_line_without_its_end() {
        let got = lines(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 100).await;
        assert_eq!(got, [msg("{\"a\":1}"), msg("{\"b\":2}"), msg("{\"c\":3}")]);
    }

    #[tokio::test]
    async fn an_over_long_line_is_dropped_and_reading_goes_on() {
        let long = "x".repeat(250);
        let input = format!("{{}}\n{long}\n[1]\n{long}");
        let got = lines(input.as_bytes(), 100).await;
        assert_eq!(
            got,
            [
                msg("{}"),
                Line::TooLong(250),
                msg("[1]"),
                Line::TooLong(250)
            ]
        );
    }

    #[tokio::test]
    async fn a_huge_line_is_never_held_whole() {
        // 3 MB without a line end through a 1 KB cap: the buffer stays near one read's size.
        let mut input = vec![b'y'; 3 << 20];
        input.extend_from_slice(b"\n{}\n");
        let mut r = LineReader::with_limit(&input[..], 1024);
        assert_eq!(r.next().await, Some(Line::TooLong(3 << 20)));
        assert!(r.buf.capacity() < 1 << 20, "{}", r.buf.capacity());
        assert_eq!(r.next().await, Some(msg("{}")));
        assert_eq!(r.next().await, None);
    }
}
