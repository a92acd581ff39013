//! The one place that writes to stdout (the LSP layer never does), and the command line's notes
//! on stderr (redacted like the log: no key reaches a terminal).

use std::io::Write;

pub use crate::features::format::thousands;

/// Writes `text` to stdout; a closed pipe (`| head`) is not an error worth a panic.
#[allow(clippy::disallowed_methods)] // reason: the one writer of stdout under the CLI.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes a note for the person at the terminal to stderr, redacted as the log is.
pub fn note(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(crate::log::redact(text).as_bytes());
    let _ = e.flush();
}
