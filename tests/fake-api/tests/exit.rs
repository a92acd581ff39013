//! The program ends when asked to, even while its standard input is held open: a harness that
//! kills it (SIGTERM) with the pipe still open must not be left waiting on it.
#![allow(clippy::disallowed_methods)] // reason: the test starts the program and signals it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_ends_it_while_stdin_is_open() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-anthropic"))
        .arg("--watch-stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("baseUrl"), "{line}");
    let _stdin = child.stdin.take(); // held open until the end of the test
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Generous: a loaded machine; before the fix it never ended (its runtime waited for the read).
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success(), "{s:?}");
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let _ = child.wait();
    panic!("still running 20 s after SIGTERM with its stdin open");
}
