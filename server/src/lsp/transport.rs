//! The tolerant reading side of the wire: framing and classification.
//!
//! A reader that stops after the first undecodable message (tower-lsp-server 0.23's did) lets one
//! stray `true` on stdin kill the server. Here:
//!
//! * [`FrameReader`] splits the byte stream into `Content-Length` frames and never gives up: a
//!   header block without a usable `Content-Length` is skipped (up to its blank line), an oversized
//!   body is read and dropped, junk before a header is skipped, and reading goes on.
//! * [`classify`] (shared with the ACP front end, [`crate::rpc`]) turns one frame into a
//!   request, a notification, a response, or an error to answer.
//!
//! What happens next (ordering, the outbound queue, shutdown) is [`super::main_loop`]'s.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::jsonrpc::{ResponseError, code};
pub use crate::rpc::{Incoming, classify};

/// Bodies larger than this are read and dropped (answered with `-32600`).
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// A header block longer than this without its blank line is junk.
const MAX_HEADER: usize = 8 * 1024;

/// Why a frame could not be cut from the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A header block without a usable `Content-Length`.
    BadHeader(String),
    /// A body over [`MAX_BODY`].
    TooLarge(usize),
}

impl FrameError {
    pub fn to_jsonrpc(&self) -> ResponseError {
        match self {
            FrameError::BadHeader(why) => ResponseError::new(
                code::PARSE_ERROR,
                format!("Parse error: bad message header: {why}"),
            ),
            FrameError::TooLarge(n) => ResponseError::invalid_request(format!(
                "message of {n} bytes is over the {MAX_BODY}-byte limit"
            )),
        }
    }
}

/// Cuts `Content-Length` frames out of a byte stream, skipping what cannot be framed.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unread bytes in `buf`.
    pos: usize,
    /// Bytes of an oversized body still to drop.
    discard: usize,
    eof: bool,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .rposition(|w| w.eq_ignore_ascii_case(needle))
}

/// `Name: value` (with an optional trailing `\r`).
fn is_header_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.iter().position(|&b| b == b':') {
        Some(colon) if colon > 0 => {
            line[..colon]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                && line[colon + 1..]
                    .iter()
                    .all(|b| !b.is_ascii_control() || *b == b'\t')
        }
        _ => false,
    }
}

fn shorten(s: &str) -> String {
    let t = s.trim();
    let mut out: String = t.chars().take(40).collect();
    if t.chars().count() > 40 {
        out.push('…');
    }
    format!("{out:?}")
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            discard: 0,
            eof: false,
        }
    }

    /// The unread bytes.
    fn data(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Marks `n` bytes read; compacts the buffer now and then (not per frame: a burst of small
    /// frames would otherwise move the rest of the buffer once per frame).
    fn consume(&mut self, n: usize) {
        self.pos += n;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    async fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
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

    /// The next frame's body, a framing error (after which reading can go on), or `None` at the
    /// end of the stream.
    pub async fn next(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        loop {
            if self.discard > 0 {
                let n = self.discard.min(self.data().len());
                self.consume(n);
                self.discard -= n;
                if self.discard > 0 {
                    if !self.fill().await.unwrap_or(false) {
                        return None;
                    }
                    continue;
                }
            }
            let Some(end) = find(self.data(), b"\r\n\r\n") else {
                if self.data().len() > MAX_HEADER {
                    // No header end in sight: drop all but a tail that may start a header.
                    let keep = match rfind_ci(self.data(), b"content-length") {
                        Some(p) => self.data().len() - p,
                        None => 16.min(self.data().len()),
                    };
                    let n = self.data().len() - keep;
                    self.consume(n);
                    if n > 0 {
                        return Some(Err(FrameError::BadHeader(
                            "no Content-Length header".into(),
                        )));
                    }
                }
                match self.fill().await {
                    Ok(true) => continue,
                    // The end of input, possibly inside a message: nothing left to answer.
                    _ => return None,
                }
            };
            let Some(p) = rfind_ci(&self.data()[..end], b"content-length") else {
                let junk = String::from_utf8_lossy(&self.data()[..end]).into_owned();
                self.consume(end + 4);
                if junk.trim().is_empty() {
                    continue;
                }
                return Some(Err(FrameError::BadHeader(format!(
                    "no Content-Length header in {}",
                    shorten(&junk)
                ))));
            };
            // Junk before the header block (e.g. the tail of a frame whose Content-Length was too
            // small): drop it and report it, then read the frame that follows.
            let line_start = self.data()[..p]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let junk_end = if line_start != p {
                p
            } else if self.data()[..line_start]
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty() && *l != b"\r")
                .all(is_header_line)
            {
                0
            } else {
                line_start
            };
            if junk_end > 0 {
                let junk = String::from_utf8_lossy(&self.data()[..junk_end]).into_owned();
                self.consume(junk_end);
                if junk.trim().is_empty() {
                    continue;
                }
                return Some(Err(FrameError::BadHeader(format!(
                    "unexpected bytes before Content-Length: {}",
                    shorten(&junk)
                ))));
            }
            let header = String::from_utf8_lossy(&self.data()[..end]).into_owned();
            self.consume(end + 4);
            let mut length: Option<Result<usize, String>> = None;
            for line in header.split("\r\n") {
                if let Some((name, value)) = line.split_once(':')
                    && name.trim().eq_ignore_ascii_case("content-length")
                {
                    length =
                        Some(value.trim().parse::<usize>().map_err(|_| {
                            format!("Content-Length {:?} is not a number", value.trim())
                        }));
                }
            }
            let length = match length {
                None => {
                    return Some(Err(FrameError::BadHeader(
                        "no Content-Length header".into(),
                    )));
                }
                Some(Err(e)) => return Some(Err(FrameError::BadHeader(e))),
                Some(Ok(n)) => n,
            };
            if length > MAX_BODY {
                self.discard = length;
                return Some(Err(FrameError::TooLarge(length)));
            }
            while self.data().len() < length {
                if !self.fill().await.unwrap_or(false) {
                    return None;
                }
            }
            let body = self.data()[..length].to_vec();
            self.consume(length);
            return Some(Ok(body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    async fn frames(input: &str) -> Vec<Result<String, FrameError>> {
        let mut r = FrameReader::new(input.as_bytes());
        let mut out = Vec::new();
        while let Some(f) = r.next().await {
            out.push(f.map(|b| String::from_utf8(b).unwrap()));
        }
        out
    }

    #[tokio::test]
    async fn framing_survives_junk() {
        let input = format!(
            "{}garbage\r\n{}Content-Length: x\r\n\r\n{}Content-Type: a\r\n\r\n{}Content-Type: utf8\r\ncontent-length: 2\r\n\r\n{{}}",
            frame("{\"a\":1}"),
            frame("true"),
            frame("[1]"),
            frame("{\"b\":2}"),
        );
        let got = frames(&input).await;
        let ok = |s: &str| Ok::<String, FrameError>(s.to_string());
        let bad = |r: &Result<String, FrameError>| matches!(r, Err(FrameError::BadHeader(_)));
        assert_eq!(got.len(), 8, "{got:?}");
        assert_eq!(got[0], ok("{\"a\":1}"));
        assert!(bad(&got[1]), "{:?}", got[1]);
        assert_eq!(got[2], ok("true"));
        assert!(bad(&got[3]), "{:?}", got[3]);
        assert_eq!(got[4], ok("[1]"));
        assert!(bad(&got[5]), "{:?}", got[5]);
        assert_eq!(got[6], ok("{\"b\":2}"));
        assert_eq!(got[7], ok("{}"));
        // A Content-Length that is too small leaves the frame's tail as junk before the next one.
        let input = format!("Content-Length: 3\r\n\r\n{{\"x\":1}}{}", frame("{}"));
        let got = frames(&input).await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], ok("{\"x"));
        assert!(bad(&got[1]));
        assert_eq!(got[2], ok("{}"));
    }

    #[tokio::test]
    async fn oversized_bodies_are_dropped() {
        let big = MAX_BODY + 1;
        let input = format!("Content-Length: {big}\r\n\r\n");
        let mut r = FrameReader::new(input.as_bytes());
        assert_eq!(r.next().await, Some(Err(FrameError::TooLarge(big))));
        assert_eq!(r.next().await, None);
    }
}
