//! P9 (quality.md): the latency the language server adds to each streamed delta, from the SSE
//! bytes leaving the (fake) API to the `chat/event` reaching the editor, p99 ≤ 1 ms.
//!
//! Both sides run in this process: the fake Anthropic API on 127.0.0.1 records when it wrote
//! each frame (after the socket write and flush); the release binary runs `claude-context lsp`,
//! driven over stdio by the e2e harness, which timestamps each `chat/event` as the test thread
//! takes it. The baseline, measured in the same run and interleaved round by round, is the fake
//! API's own: a plain client reading the same stream on a blocking socket in a reader thread
//! that parses each frame and hands it over a channel (as the harness does with the server's
//! frames), timestamped as this thread takes it. Added latency = the LSP's figure − the
//! baseline's, per percentile.
//!
//! Deltas are paced (`CC_P9_PACE_US`, default 2,000 µs apart) so the figure is latency, not
//! queueing. Run: `cargo bench --bench chat_latency` (`CC_P9_ROUNDS`, default 4 rounds of
//! `CC_P9_DELTAS`, default 500 deltas, each way).
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.
#![allow(clippy::print_stdout)] // reason: a harness=false bench reports on stdout.

#[path = "../../tests/fake_anthropic/mod.rs"]
mod fake_anthropic;
#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Reply, Turn};
use harness::{Server, Workspace};
use serde_json::{Value, json};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `000123;` tokens, 7 characters each: one per delta.
fn answer(deltas: usize) -> String {
    (0..deltas).map(|i| format!("{i:06};")).collect()
}

fn reply(deltas: usize, pace: Duration) -> Reply {
    Reply::from(Turn::new().text(&answer(deltas)).piece(7)).pace(pace)
}

/// The text delta a frame's data carries, if any.
fn delta_text(data: &str) -> Option<String> {
    let v: Value = serde_json::from_str(data).ok()?;
    (v["delta"]["type"] == "text_delta").then(|| v["delta"]["text"].as_str().unwrap().to_string())
}

/// When each delta text was written by the fake API, from `from` on in its record.
fn sent_times(api: &FakeAnthropic, from: usize) -> HashMap<String, Instant> {
    api.frames_sent()[from..]
        .iter()
        .filter_map(|(at, d)| delta_text(d).map(|t| (t, *at)))
        .collect()
}

/// One turn through the language server: per-delta latency.
fn lsp_round(
    s: &mut Server,
    api: &FakeAnthropic,
    id: &str,
    deltas: usize,
    pace: Duration,
) -> Vec<Duration> {
    let from = api.frames_sent().len();
    api.push(reply(deltas, pace));
    let turn = s.call("chat/send", json!({"sessionId": id, "text": "Count."}))["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut got: Vec<(String, Instant)> = Vec::with_capacity(deltas);
    loop {
        let e = s
            .notification("chat/event", |p| p["turnId"] == turn.as_str())
            .expect("an event");
        let at = Instant::now();
        match e["kind"].as_str() {
            Some("text") => got.push((e["text"].as_str().unwrap().to_string(), at)),
            Some("done") => break,
            _ => {}
        }
    }
    let sent = sent_times(api, from);
    got.iter()
        .filter_map(|(t, at)| sent.get(t).map(|s| at.saturating_duration_since(*s)))
        .collect()
}

/// The same stream read straight from the fake API by a plain HTTP client, built like the
/// harness's side of the LSP measurement (a reader thread that parses, a channel, the
/// timestamp taken by this thread), so the difference is the server alone.
fn baseline_round(api: &FakeAnthropic, deltas: usize, pace: Duration) -> Vec<Duration> {
    let from = api.frames_sent().len();
    api.push(reply(deltas, pace));
    let addr = api.base_url().trim_start_matches("http://").to_string();
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    sock.set_nodelay(true).unwrap();
    let body = br#"{"model":"m","max_tokens":1,"stream":true,"messages":[]}"#;
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).unwrap();
    sock.write_all(body).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Option<String>>();
    let reader = std::thread::spawn(move || {
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 16384];
        while let Ok(n) = sock.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            while let Some(i) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=i).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(data) = line.trim_end().strip_prefix("data: ") {
                    if let Some(t) = delta_text(data) {
                        let _ = tx.send(Some(t));
                    }
                    if data.contains("message_stop") {
                        let _ = tx.send(None);
                        return;
                    }
                }
            }
        }
        let _ = tx.send(None);
    });
    let mut got: Vec<(String, Instant)> = Vec::with_capacity(deltas);
    while let Ok(Some(t)) = rx.recv() {
        got.push((t, Instant::now()));
    }
    reader.join().unwrap();
    let sent = sent_times(api, from);
    got.iter()
        .filter_map(|(t, at)| sent.get(t).map(|s| at.saturating_duration_since(*s)))
        .collect()
}

fn pct(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let rounds = env_num("CC_P9_ROUNDS", 4) as usize;
    let deltas = env_num("CC_P9_DELTAS", 500) as usize;
    let pace = Duration::from_micros(env_num("CC_P9_PACE_US", 2_000));
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Bench project.\n");
    let api = FakeAnthropic::spawn();
    let state = ws.dir.path().join("state");
    let base = api.base_url();
    let mut s = Server::spawn_with(
        &bin(),
        &ws.home,
        &ws.managed,
        ws.dir.path(),
        &[
            ("ANTHROPIC_BASE_URL", &base),
            (
                "ANTHROPIC_API_KEY",
                "sk-ant-api03-bench-key-000000000000000000",
            ),
            ("XDG_STATE_HOME", &state.to_string_lossy()),
        ],
    );
    s.initialize(&ws.root, json!({"git": {"enabled": false}}));
    let id = s.call("chat/new", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // Warm-up: connection, pages, caches.
    lsp_round(&mut s, &api, &id, 50, pace);
    baseline_round(&api, 50, pace);
    let (mut lsp, mut base_l) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        lsp.extend(lsp_round(&mut s, &api, &id, deltas, pace));
        base_l.extend(baseline_round(&api, deltas, pace));
    }
    s.shutdown();
    assert!(
        lsp.len() >= rounds * deltas * 9 / 10,
        "deltas matched: {}",
        lsp.len()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "P9: {} deltas each way, {} µs apart, {rounds} interleaved rounds (load {})",
        lsp.len(),
        pace.as_micros(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "", "p50 µs", "p90 µs", "p95 µs", "p99 µs", "max µs"
    );
    let ps = [0.5, 0.9, 0.95, 0.99, 1.0];
    let b: Vec<Duration> = ps.iter().map(|p| pct(&mut base_l, *p)).collect();
    let l: Vec<Duration> = ps.iter().map(|p| pct(&mut lsp, *p)).collect();
    let row = |name: &str, v: &[f64]| {
        println!(
            "{name:<34} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.0}",
            v[0], v[1], v[2], v[3], v[4]
        )
    };
    row(
        "fake API → plain client (baseline)",
        &b.iter().map(|d| us(*d)).collect::<Vec<_>>(),
    );
    row(
        "fake API → server → chat/event",
        &l.iter().map(|d| us(*d)).collect::<Vec<_>>(),
    );
    row(
        "added by the server",
        &l.iter()
            .zip(&b)
            .map(|(l, b)| us(*l) - us(*b))
            .collect::<Vec<_>>(),
    );
    let (l99, b99) = (l[3], b[3]);
    let added_p99 = l99.saturating_sub(b99);
    println!(
        "P9 target p99 added ≤ 1000 µs: {}",
        if added_p99 <= Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
}
