//! What hooks cost a turn: the same turn (a prompt, one `Read`, an answer) through the release
//! server in two sessions side by side, one in a project with a no-op hook (`true`) on every
//! event a turn fires (UserPromptSubmit, PreToolUse, PostToolUse, Stop; SessionStart on the
//! first turn), one in the same project without hooks (the baseline). Rounds alternate between
//! the two, so machine noise hits both alike. Reported: the median and p90 of each, the median
//! added per turn, and per hook event (four events per turn).
//!
//! Each hook is a process: the reaper, the shell, `true`; so the cost is about four process starts
//! per turn, in parallel with nothing (the events are sequential by nature). Run:
//! `cargo bench --bench hooks` (`CC_HOOKS_ROUNDS`, default 40 turns each way).
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.
#![allow(clippy::print_stdout)] // reason: a harness=false bench reports on stdout.

#[path = "../../tests/fake_anthropic/mod.rs"]
mod fake_anthropic;
#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_anthropic::{FakeAnthropic, Turn};
use harness::{Server, Workspace};
use serde_json::json;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-context"))
}

/// A project, its fake API and a chat session; with `hooks`, a no-op hook on every event of a
/// turn, in a folder its user trusts.
struct Side {
    ws: Workspace,
    api: FakeAnthropic,
    s: Server,
    id: String,
}

impl Side {
    fn new(hooks: bool) -> Side {
        let ws = Workspace::new();
        ws.write("CLAUDE.md", "Bench project.\n");
        ws.write("src/a.ts", "export const a = 1;\n");
        if hooks {
            let noop = json!([{"hooks": [{"type": "command", "command": "true"}]}]);
            let mut events = serde_json::Map::new();
            for e in [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "Stop",
            ] {
                events.insert(e.into(), noop.clone());
            }
            ws.write(
                ".claude/settings.json",
                &json!({ "hooks": events }).to_string(),
            );
            std::fs::create_dir_all(&ws.home).unwrap();
            std::fs::write(
                ws.home.join(".claude.json"),
                json!({"projects": {ws.root.display().to_string(): {"hasTrustDialogAccepted": true}}})
                    .to_string(),
            )
            .unwrap();
        }
        let api = FakeAnthropic::spawn();
        let state = ws.dir.path().join("state");
        let base = api.base_url();
        let mut s = ws.spawn_with(
            &bin(),
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
        Side { ws, api, s, id }
    }

    /// One turn: the prompt, a `Read`, the answer. Its wall time, `chat/send` to `done`.
    fn turn(&mut self) -> Duration {
        let file = self.ws.root.join("src/a.ts");
        self.api
            .push(Turn::new().tool_use("toolu_1", "Read", json!({"file_path": file})));
        self.api.push(Turn::new().text("It exports a."));
        let started = Instant::now();
        let events = self.s.chat_send(&self.id, "What does a.ts export?");
        let took = started.elapsed();
        assert_eq!(
            events.last().unwrap()["outcome"],
            "completed",
            "{events:#?}"
        );
        took
    }
}

fn pct(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rounds = std::env::var("CC_HOOKS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40usize);
    let mut base = Side::new(false);
    let mut hooked = Side::new(true);
    // Warm-up (and the hooked session's SessionStart): connections, pages, caches.
    for _ in 0..3 {
        base.turn();
        hooked.turn();
    }
    let (mut b, mut h) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        // Alternate which goes first.
        if i % 2 == 0 {
            b.push(base.turn());
            h.push(hooked.turn());
        } else {
            h.push(hooked.turn());
            b.push(base.turn());
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "hooks: {rounds} turns each way (a prompt, one Read, an answer), interleaved (load {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("{:<44} {:>9} {:>9} {:>9}", "", "p50 ms", "p90 ms", "min ms");
    let (b50, b90, bmin) = (pct(&mut b, 0.5), pct(&mut b, 0.9), pct(&mut b, 0.0));
    let (h50, h90, hmin) = (pct(&mut h, 0.5), pct(&mut h, 0.9), pct(&mut h, 0.0));
    println!(
        "{:<44} {:>9.2} {:>9.2} {:>9.2}",
        "no hooks (baseline)",
        ms(b50),
        ms(b90),
        ms(bmin)
    );
    println!(
        "{:<44} {:>9.2} {:>9.2} {:>9.2}",
        "a no-op hook on each of the turn's 4 events",
        ms(h50),
        ms(h90),
        ms(hmin)
    );
    let added = ms(h50) - ms(b50);
    println!(
        "added per turn (median): {added:.2} ms; per hook event: {:.2} ms",
        added / 4.0
    );
    base.s.shutdown();
    hooked.s.shutdown();
}
