//! Compaction benchmark (`cargo bench --bench compact`).
//!
//! P7 (`../shared/spec/quality.md`): masking of a 10,000-message (~2M token) history in ≤ 10 ms.
//! The history is generated once (deterministic): 5,000 rounds of an answer calling Read, Bash,
//! Grep or a tool masking never clears, and its result of 200 B to 3 KB of source-like text
//! (about 1,600 B on average, so ~8 MB and ~2M estimated tokens), a typed message every 50
//! rounds.
//!
//! - `mask_plan`: choosing what to clear (one pass, ids to tool names, estimates).
//! - `mask_plan_and_apply`: the plan, then clearing it in the history (what a session does
//!   before sending); the history is a fresh copy each time, made outside the timing.
//! - `before_request`: the whole decision, the count of the history included.
//! - `clone_baseline`: copying the history, the floor of anything that touches all of it.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::hint::black_box;
use std::sync::LazyLock;

use chrono::Utc;
use claude_context::compact::{
    Compactor, MaskTrigger, ModelInfo, Overrides, Policy, Settings, Turn, mask,
};
use claude_context::conversation::{Block, Message, StopReason, ToolUse};
use serde_json::json;

fn main() {
    let h = &*HISTORY;
    let bytes: usize = h
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::ToolResult(r) => r.content_bytes(),
            Block::Text(t) => t.text.len(),
            _ => 0,
        })
        .sum();
    eprintln!(
        "history: {} messages, {:.1} MB of text, {} estimated tokens",
        h.len(),
        bytes as f64 / 1e6,
        claude_context::compact::tokens::history_tokens(h)
    );
    divan::main();
}

static HISTORY: LazyLock<Vec<Message>> = LazyLock::new(|| {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let line =
        "    let total = cart.items.iter().map(|i| i.price * i.qty).sum::<u64>(); // \"ok\"\n";
    let mut h = vec![Message::user("Find why the checkout total is wrong.")];
    for n in 0..5_000 {
        let id = format!("toolu_{n:020}");
        let tool = ["Read", "Bash", "Grep", "mcp__db__query"][(next() % 4) as usize];
        let mut a = Message::assistant(vec![
            Block::text(format!("Step {n}: checking module {}.", next() % 500)),
            Block::ToolUse(ToolUse {
                id: id.clone(),
                name: tool.into(),
                input: json!({"file_path": format!("/home/me/shop/src/m{}.rs", next() % 500)}),
            }),
        ]);
        a.id = Some(format!("msg_{n:016}"));
        a.stop_reason = Some(StopReason::ToolUse);
        h.push(a);
        let size = 200 + (next() % 2_800) as usize;
        let text: String = line.chars().cycle().take(size).collect();
        let mut results = vec![Block::tool_result(id, text, next() % 20 == 0)];
        if n % 50 == 49 {
            results.push(Block::text(format!("Keep going, look at module {n} too.")));
        }
        h.push(Message::user_blocks(results));
    }
    h.pop();
    h
});

fn policy() -> Policy {
    Policy::resolve(
        ModelInfo {
            id: "claude-sonnet-4-5",
            window: None,
            max_output_tokens: 32_000,
        },
        &Settings::default(),
        &Overrides::default(),
    )
    .0
}

#[divan::bench]
fn clone_baseline(b: divan::Bencher) {
    let h = &*HISTORY;
    b.bench(|| black_box(h.clone()));
}

#[divan::bench]
fn mask_plan(b: divan::Bencher) {
    let h = &*HISTORY;
    b.bench(|| black_box(mask::plan(h, 5, MaskTrigger::Size)));
}

#[divan::bench]
fn mask_plan_and_apply(b: divan::Bencher) {
    b.with_inputs(|| HISTORY.clone()).bench_local_refs(|h| {
        let plan = mask::plan(h, 5, MaskTrigger::Size);
        black_box(plan.apply(h))
    });
}

#[divan::bench]
fn before_request(b: divan::Bencher) {
    let h = &*HISTORY;
    let c = Compactor::new(policy());
    let turn = Turn {
        history: h,
        overhead_tokens: 3_000,
        now: Utc::now(),
        last_assistant_at: None,
    };
    b.bench(|| black_box(c.before_request(&turn)));
}
