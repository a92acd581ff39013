//! Transcript resume benchmark (`cargo bench --bench transcript`).
//!
//! P7 (`../shared/spec/quality.md`): resume of a 50 MB transcript in ≤ 300 ms. `resume` reads
//! the file, parses every record and rebuilds the history (the whole 50 MB is one chain with no
//! compaction: the worst case, every message is replayed). Baselines in the same run:
//! `read_only` (the file into memory: the IO floor, page cache warm) and `parse_as_value` (every
//! line parsed into a `serde_json::Value`: what a generic JSON parse of the same bytes costs).
//!
//! The transcript is generated once per run (deterministic): prompts, answers with tool calls,
//! tool results of 2-24 KB of source text with the escapes real files have (newlines, tabs,
//! quotes, non-ASCII), a masking record, in our record format.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::sync::LazyLock;

use claude_context::conversation::{Block, Message, StopReason, ToolUse, Usage};
use claude_context::session::transcript::{Record, Transcript};
use serde_json::json;

fn main() {
    LazyLock::force(&FILE);
    divan::main();
}

const TARGET_BYTES: usize = 50 << 20;

struct Generated {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

static FILE: LazyLock<Generated> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench-session.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut written = 0usize;
    let mut parent: Option<String> = None;
    let mut n = 0u64;
    let mut masked = Vec::new();
    while written < TARGET_BYTES {
        n += 1;
        let tool_id = format!("toolu_{n:020}");
        let messages = [
            Message::user(format!(
                "Step {n}: look at module {} and tell me what \"run\" does.",
                next() % 500
            )),
            {
                let mut m = Message::assistant(vec![
                    Block::text(format!("I'll read src/module_{}.rs first.", next() % 500)),
                    Block::ToolUse(ToolUse {
                        id: tool_id.clone(),
                        name: "Read".into(),
                        input: json!({"file_path": format!("/home/me/project/src/module_{}.rs", next() % 500)}),
                    }),
                ]);
                m.id = Some(format!("msg_{n:016}a"));
                m.stop_reason = Some(StopReason::ToolUse);
                m.usage = Some(Usage {
                    input_tokens: 3,
                    output_tokens: 80,
                    cache_creation_input_tokens: 900,
                    cache_read_input_tokens: 40_000,
                });
                m
            },
            Message::user_blocks(vec![Block::tool_result(
                &tool_id,
                source_text(&mut next),
                false,
            )]),
            {
                let mut m = Message::assistant(vec![Block::text(format!(
                    "`run` starts the worker loop: it reads jobs from the queue, retries failures {} times and logs \"done\" — café ✓.\n",
                    next() % 9
                ))]);
                m.id = Some(format!("msg_{n:016}b"));
                m.stop_reason = Some(StopReason::EndTurn);
                m.usage = Some(Usage {
                    input_tokens: 3,
                    output_tokens: 120,
                    cache_creation_input_tokens: 5000,
                    cache_read_input_tokens: 41_000,
                });
                m
            },
        ];
        for m in messages {
            let uuid = format!("00000000-0000-4000-8000-{:012}", written);
            let r = Record {
                kind: if m.role == claude_context::conversation::Role::User {
                    "user"
                } else {
                    "assistant"
                }
                .into(),
                uuid: Some(uuid.clone()),
                parent_uuid: parent.replace(uuid),
                timestamp: Some("2026-01-20T11:57:18.001Z".into()),
                session_id: Some("bench".into()),
                cwd: Some("/home/me/project".into()),
                git_branch: Some("main".into()),
                version: Some("claude-context 0.1.0".into()),
                message: Some(m),
                ..Record::default()
            };
            let line = serde_json::to_string(&r).expect("serialize");
            out.write_all(line.as_bytes()).expect("write");
            out.write_all(b"\n").expect("write");
            written += line.len() + 1;
        }
        masked.push(tool_id);
        if n.is_multiple_of(200) {
            let uuid = format!("00000000-0000-4000-8000-{:012}", written);
            let r = Record {
                kind: "system".into(),
                subtype: Some("microcompact".into()),
                uuid: Some(uuid.clone()),
                parent_uuid: parent.replace(uuid),
                tool_use_ids: std::mem::take(&mut masked).into_iter().take(150).collect(),
                tokens_freed: Some(100_000),
                ..Record::default()
            };
            let line = serde_json::to_string(&r).expect("serialize");
            out.write_all(line.as_bytes()).expect("write");
            out.write_all(b"\n").expect("write");
            written += line.len() + 1;
        }
    }
    out.flush().expect("flush");
    drop(out);
    let t = Transcript::read(&path).expect("read");
    eprintln!(
        "transcript bench: {} ({:.1} MB, {} records, {} messages in the history)",
        path.display(),
        written as f64 / 1048576.0,
        t.records.len(),
        t.replay().history.len()
    );
    Generated { _dir: dir, path }
});

/// Source text of 2-24 KB with line numbers, tabs, quotes and some non-ASCII.
fn source_text(next: &mut impl FnMut() -> u64) -> String {
    let lines = 40 + next() % 500;
    let mut s = String::new();
    for i in 1..=lines {
        let indent = "    ".repeat((next() % 4) as usize);
        s.push_str(&format!(
            "{i:>6}\t{indent}let value_{i} = compute(\"key-{}\", {}); // naïve — see “notes”\n",
            next() % 10_000,
            next() % 100
        ));
    }
    s
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn resume() -> usize {
    let t = Transcript::read(&FILE.path).expect("read");
    black_box(t.replay().history.len())
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn read_only() -> usize {
    black_box(std::fs::read(&FILE.path).expect("read").len())
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn parse_as_value() -> usize {
    let bytes = std::fs::read(&FILE.path).expect("read");
    let mut n = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).expect("json");
        n += usize::from(v.is_object());
    }
    black_box(n)
}
