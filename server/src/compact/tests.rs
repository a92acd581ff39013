//! Unit tests of compaction: budgets at their boundaries, each tier's selection, the summary's
//! section 6, the new history, the decision and the manual entry.

use std::sync::Mutex;

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::budget::{self, Budget, Level, ModelInfo, Overrides, Policy, Settings};
use super::full::{self, FailureKind, Inputs, Reinject, Summariser, Trigger};
use super::mask::{self, MaskTrigger};
use super::summary;
use super::tokens::{self, Tally};
use super::*;
use crate::conversation::{
    Block, CLEARED_TEXT, Message, Origin, ResultPart, StopReason, ToolResult, ToolUse, Usage,
};
use crate::llm::{self, CancellationToken, Event, EventStream, Provider, Request, ToolSpec};

// ---- helpers ------------------------------------------------------------------------------

fn call(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn answer(id: &str, blocks: Vec<Block>) -> Message {
    let mut m = Message::assistant(blocks);
    m.id = Some(id.into());
    m.stop_reason = Some(StopReason::EndTurn);
    m.usage = Some(Usage {
        input_tokens: 10,
        output_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
    });
    m
}

fn results(parts: &[(&str, &str, bool)]) -> Message {
    Message::user_blocks(
        parts
            .iter()
            .map(|(id, text, err)| Block::tool_result(*id, *text, *err))
            .collect(),
    )
}

fn result_of<'a>(history: &'a [Message], id: &str) -> &'a ToolResult {
    history
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            Block::ToolResult(r) if r.tool_use_id == id => Some(r),
            _ => None,
        })
        .unwrap()
}

/// A session: a prompt, then for each `(tool, size)` a call and its result of `size` bytes.
fn tool_session(tools: &[(&str, usize)]) -> Vec<Message> {
    let mut h = vec![Message::user_blocks(vec![
        Block::injected(Origin::Instructions, "Contents of CLAUDE.md: be brief"),
        Block::injected(Origin::Git, "gitStatus: clean"),
        Block::text("Fix the coupon bug."),
    ])];
    for (i, (tool, size)) in tools.iter().enumerate() {
        let id = format!("t{i}");
        h.push(answer(
            &format!("m{i}"),
            vec![call(
                &id,
                tool,
                json!({"file_path": format!("/w/src/f{i}.rs"), "command": "x"}),
            )],
        ));
        h.push(results(&[(&id, &"x".repeat(*size), false)]));
    }
    h
}

fn policy(window: u64, max_out: u64) -> Policy {
    Policy::resolve(
        ModelInfo {
            id: "claude-test",
            window: Some(window),
            max_output_tokens: max_out,
        },
        &Settings::default(),
        &Overrides::default(),
    )
    .0
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// A provider that answers from a script and records the requests (messages as JSON).
struct Scripted {
    replies: Mutex<Vec<Result<String, llm::Error>>>,
    requests: Mutex<Vec<Vec<Message>>>,
}

impl Scripted {
    fn new(replies: Vec<Result<String, llm::Error>>) -> Scripted {
        Scripted {
            replies: Mutex::new(replies.into_iter().rev().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: &Request<'_>, _cancel: CancellationToken) -> EventStream {
        self.requests
            .lock()
            .unwrap()
            .push(request.messages.to_vec());
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop()
            .expect("a scripted reply");
        let item = reply.map(|text| Event::Done(answer("msg_summary", vec![Block::text(text)])));
        Box::pin(futures::stream::iter(vec![item]))
    }
}

fn rejected(message: &str) -> llm::Error {
    llm::Error {
        kind: llm::ErrorKind::Rejected,
        message: message.into(),
        status: Some(400),
        api_type: Some("invalid_request_error".into()),
        request_id: None,
        attempts: 1,
        partial: None,
    }
}

fn model<'a>(p: &'a Scripted) -> Summariser<'a> {
    Summariser::Model(ModelSpec {
        provider: p,
        model: "claude-test".into(),
        system: vec![llm::SystemBlock {
            text: "You are a coding assistant.".into(),
            cache: true,
        }],
        tools: vec![],
        max_tokens: 20_000,
        thinking: None,
        betas: vec![],
        cancel: CancellationToken::new(),
    })
}

fn nine_sections(messages: &[&str]) -> String {
    let mut s = String::from("<analysis>notes</analysis>\n<summary>\n");
    for (i, title) in summary::SECTIONS.iter().enumerate() {
        s.push_str(&format!("{}. {title}:\n", i + 1));
        if i == 5 {
            for m in messages {
                s.push_str(&format!("   - {m}\n"));
            }
        } else {
            s.push_str("   something\n");
        }
    }
    s.push_str("</summary>");
    s
}

// ---- budgets ------------------------------------------------------------------------------

#[test]
fn budget_follows_the_spec_formulas() {
    let b = Budget::new(200_000, 32_000, None);
    assert_eq!(
        b,
        Budget {
            window: 200_000,
            reserved: 20_000,
            effective: 180_000,
            auto_threshold: 167_000,
            warning: 160_000,
            blocking: 177_000,
        }
    );
    // A small max output reserves only that.
    let b = Budget::new(200_000, 8_000, None);
    assert_eq!(
        (b.reserved, b.effective, b.auto_threshold),
        (8_000, 192_000, 179_000)
    );
    // The percentage lowers the threshold only when smaller.
    assert_eq!(
        Budget::new(200_000, 32_000, Some(50)).auto_threshold,
        90_000
    );
    assert_eq!(
        Budget::new(200_000, 32_000, Some(99)).auto_threshold,
        167_000
    );
    assert_eq!(
        Budget::new(200_000, 32_000, Some(100)).auto_threshold,
        167_000
    );
    // Too small a window saturates at zero rather than wrapping.
    let b = Budget::new(10_000, 32_000, None);
    assert_eq!((b.effective, b.auto_threshold, b.blocking), (0, 0, 0));
}

#[test]
fn levels_are_strictly_above_their_thresholds() {
    let b = Budget::new(200_000, 32_000, None);
    assert_eq!(b.level(160_000), Level::Normal);
    assert_eq!(b.level(160_001), Level::Warning);
    assert_eq!(b.level(167_000), Level::Warning);
    assert_eq!(b.level(167_001), Level::Compact);
    assert_eq!(b.level(177_000), Level::Compact);
    assert_eq!(b.level(177_001), Level::Blocked);
}

#[test]
fn overrides_and_settings_resolve_environment_first() {
    let model = ModelInfo {
        id: "claude-sonnet-4-5",
        window: None,
        max_output_tokens: 32_000,
    };
    let env = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Overrides::from_env(move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    };
    let (p, notes) = Policy::resolve(model, &Settings::default(), &Overrides::default());
    assert_eq!(p.budget.window, 200_000);
    assert!(p.auto && !p.api_editing && notes.is_empty());
    assert_eq!((p.keep_recent, p.gap_minutes), (5, 60));

    let settings = Settings {
        window: Some(60_000),
        auto_compact_percent: Some(80),
        auto_compact: Some(false),
        ..Settings::default()
    };
    let (p, _) = Policy::resolve(model, &settings, &Overrides::default());
    assert_eq!(p.budget.window, 60_000);
    assert_eq!(p.budget.auto_threshold, 27_000); // min(40,000 - 13,000, 40,000 * 80%)
    assert!(!p.auto);

    let (p, notes) = Policy::resolve(
        model,
        &settings,
        &env(&[
            (budget::WINDOW_VARIABLE, "50000"),
            (budget::PERCENT_VARIABLE, "50"),
            (budget::DISABLE_VARIABLE, "0"),
        ]),
    );
    assert_eq!(p.budget.window, 50_000);
    assert_eq!(p.budget.auto_threshold, 15_000); // min(30,000 - 13,000, 30,000 * 50%)
    assert!(p.auto, "DISABLE_AUTO_COMPACT=0 wins over the setting");
    assert!(notes.is_empty(), "{notes:?}");

    let (p, notes) = Policy::resolve(
        model,
        &Settings::default(),
        &env(&[
            (budget::WINDOW_VARIABLE, "lots"),
            (budget::PERCENT_VARIABLE, "0"),
            (budget::DISABLE_VARIABLE, "1"),
        ]),
    );
    assert_eq!(p.budget, Budget::new(200_000, 32_000, None));
    assert!(!p.auto);
    let sources: Vec<&str> = notes.iter().map(|n| n.source.as_str()).collect();
    assert_eq!(sources, [budget::WINDOW_VARIABLE, budget::PERCENT_VARIABLE]);

    // The provider's window is an upper bound; a 1M model id without metadata is 1M.
    let (p, notes) = Policy::resolve(
        ModelInfo {
            window: Some(100_000),
            ..model
        },
        &Settings {
            window: Some(150_000),
            ..Settings::default()
        },
        &Overrides::default(),
    );
    assert_eq!(p.budget.window, 100_000);
    assert!(notes[0].message.contains("larger than the model's window"));
    let (p, _) = Policy::resolve(
        ModelInfo {
            id: "claude-sonnet-4-5[1m]",
            ..model
        },
        &Settings::default(),
        &Overrides::default(),
    );
    assert_eq!(p.budget.window, 1_000_000);

    // keep_recent never below 1.
    let (p, notes) = Policy::resolve(
        model,
        &Settings {
            keep_recent: Some(0),
            ..Settings::default()
        },
        &Overrides::default(),
    );
    assert_eq!(p.keep_recent, 1);
    assert_eq!(notes[0].source, "compaction.keepRecent");
}

// ---- tokens -------------------------------------------------------------------------------

#[test]
fn estimates_and_the_count() {
    assert_eq!(tokens::text_tokens(""), 0);
    assert_eq!(tokens::text_tokens("abcd"), 1);
    assert_eq!(tokens::text_tokens("abcde"), 2);
    assert_eq!(tokens::padded(3), 4);
    assert_eq!(tokens::padded(4), 6);
    let img = Message::user_blocks(vec![Block::Image(crate::conversation::Image::placeholder(
        "image/png",
        Some(1 << 20),
    ))]);
    assert_eq!(tokens::message_tokens(&img), tokens::IMAGE_TOKENS);
    // An image whose dimensions are known counts the API's figure: 300 × 200 / 750.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&[0, 0, 1, 44, 0, 0, 0, 200, 8, 6, 0, 0, 0]);
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let kept = Message::user_blocks(vec![Block::Image(
        crate::conversation::Image::from_base64("image/png", &data).unwrap(),
    )]);
    assert_eq!(tokens::message_tokens(&kept), 80);

    let mut h = vec![Message::user("x".repeat(400))]; // 100 tokens
    let mut t = Tally::default();
    assert_eq!(
        t.count(&h, 50),
        tokens::padded(150),
        "before any usage: padded estimate"
    );
    let mut a = answer("m1", vec![Block::text("ok")]);
    a.usage = Some(Usage {
        input_tokens: 5,
        output_tokens: 20,
        cache_creation_input_tokens: 1_000,
        cache_read_input_tokens: 30_000,
    });
    h.push(a.clone());
    t.observe(&a, h.len(), &[]);
    assert_eq!(
        t.count(&h, 50),
        31_025,
        "the usage alone, overhead included in it"
    );
    h.push(Message::user("y".repeat(300))); // 75 tokens, padded 100
    assert_eq!(t.count(&h, 50), 31_125);
    t.masked(1_000);
    assert_eq!(t.count(&h, 50), 30_125);
    // A resumed session counts the same, given what masking freed after the usage.
    assert_eq!(Tally::resumed(&h, 1_000).count(&h, 50), 30_125);
    t.reset();
    assert!(!t.is_observed());
    // The API's own clearing is kept for reports; its usage already counts the edited prompt.
    t.observe(
        &a,
        2,
        &[llm::AppliedEdit {
            kind: "clear_tool_uses_20250919".into(),
            cleared_input_tokens: 9_000,
            ..Default::default()
        }],
    );
    assert_eq!(t.server_cleared(), 9_000);
    assert_eq!(t.count(&h, 50), 31_125);
}

// ---- tier 1 -------------------------------------------------------------------------------

#[test]
fn masking_keeps_the_newest_and_never_touches_other_tools() {
    let mut h = tool_session(&[
        ("Read", 4000),
        ("TodoWrite", 4000),
        ("Bash", 4000),
        ("mcp__db__query", 4000),
        ("Grep", 4000),
        ("Read", 4000),
        ("Edit", 4000),
    ]);
    // A result whose call is not in the history: never cleared.
    h.push(results(&[("orphan", &"z".repeat(4000), false)]));
    let plan = mask::plan(&h, 2, MaskTrigger::Size);
    let ids: Vec<&str> = plan
        .cleared
        .iter()
        .map(|c| c.tool_use_id.as_str())
        .collect();
    // Compactable: t0 Read, t2 Bash, t4 Grep, t5 Read, t6 Edit; the newest 2 (t5, t6) stay.
    assert_eq!(ids, ["t0", "t2", "t4"], "oldest first");
    assert_eq!(plan.cleared[1].tool, "Bash");
    let each = 1000 - tokens::text_tokens(CLEARED_TEXT);
    assert!(plan.cleared.iter().all(|c| c.tokens == each));
    assert_eq!(plan.tokens_freed, 3 * each);

    assert_eq!(plan.apply(&mut h), 3);
    for id in ["t0", "t2", "t4"] {
        let r = result_of(&h, id);
        assert!(r.cleared && r.text() == CLEARED_TEXT && !r.is_error);
    }
    for id in ["t1", "t3", "t5", "t6", "orphan"] {
        assert!(!result_of(&h, id).cleared, "{id}");
    }
    // Structure kept: the calls are all there.
    assert_eq!(h.iter().flat_map(Message::tool_uses).count(), 7);
    // Already cleared results are not planned again.
    assert!(mask::plan(&h, 2, MaskTrigger::Size).is_empty());
    // keep_recent 0 means 1: the newest result always stays.
    let h = tool_session(&[("Read", 100), ("Read", 100)]);
    let ids = mask::plan(&h, 0, MaskTrigger::Manual).ids();
    assert_eq!(ids, ["t0"]);
}

#[test]
fn a_masking_plan_and_its_replay_agree() {
    let mut h = tool_session(&[("Read", 800), ("Bash", 900), ("Glob", 50), ("Read", 10)]);
    let plan = mask::plan(&h, 1, MaskTrigger::Manual);
    let mut replayed = h.clone();
    let ids: std::collections::HashSet<&str> = plan
        .cleared
        .iter()
        .map(|c| c.tool_use_id.as_str())
        .collect();
    crate::conversation::mask_tool_results(&mut replayed, &ids);
    plan.apply(&mut h);
    assert_eq!(h, replayed);
}

#[test]
fn the_time_trigger_is_strictly_after_the_gap() {
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
    let at = |s: i64| t0 + chrono::Duration::seconds(s);
    assert!(!mask::gap_passed(Some(t0), at(3600), 60));
    assert!(mask::gap_passed(Some(t0), at(3601), 60));
    assert!(!mask::gap_passed(None, at(99_999), 60));
    assert_eq!(
        mask::parse_time("2026-01-01T12:00:00.000Z"),
        Some(t0),
        "the transcript's timestamps"
    );
}

// ---- tier 2 -------------------------------------------------------------------------------

#[test]
fn api_editing_is_asked_for_only_when_enabled_and_for_anthropic() {
    let tools: Vec<ToolSpec> = ["Read", "Bash", "TodoWrite", "mcp__db__query"]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            input_schema: json!({}),
            defer_loading: false,
        })
        .collect();
    let mut p = policy(200_000, 32_000);
    assert_eq!(
        edits::context_management(&p, "anthropic", &tools, true),
        None
    );
    p.api_editing = true;
    assert_eq!(edits::context_management(&p, "openai", &tools, true), None);
    let c = edits::context_management(&p, "anthropic", &tools, true).unwrap();
    assert_eq!(c.thinking, Some(llm::KeepThinking::All));
    let t = c.clear_tool_uses.unwrap();
    assert_eq!(t.trigger_input_tokens, 160_000, "the warning level");
    assert_eq!(t.keep_tool_uses, 5);
    assert_eq!(t.clear_at_least_input_tokens, Some(18_000));
    assert_eq!(t.exclude_tools, ["TodoWrite", "mcp__db__query"]);
    let c = edits::context_management(&p, "anthropic", &tools, false).unwrap();
    assert_eq!(c.thinking, None);
}

// ---- the summary --------------------------------------------------------------------------

#[test]
fn only_the_summary_of_a_reply_is_kept() {
    use summary::{ReplyError, parse_reply};
    assert_eq!(
        parse_reply("<analysis>a <summary> b</analysis>\n<summary>\nS\n</summary> after"),
        Ok("S".into())
    );
    assert_eq!(parse_reply("no tags"), Err(ReplyError::Missing));
    assert_eq!(parse_reply("<summary>cut off"), Err(ReplyError::Unfinished));
    assert_eq!(parse_reply("<summary> </summary>"), Err(ReplyError::Empty));
    // A quoted user message holding the end tag does not cut the summary short.
    assert_eq!(
        parse_reply("<summary>6. All User Messages:\n- type </summary> here\n</summary>"),
        Ok("6. All User Messages:\n- type </summary> here".into())
    );
    let p = summary::prompt(Some("  the parser only "));
    assert!(p.ends_with("\n\nAdditional Instructions:\nthe parser only"));
    assert!(p.contains("<summary>") && p.contains("6. All User Messages"));
    assert!(!summary::prompt(Some(" ")).contains("Additional Instructions"));
}

#[test]
fn section_six_gets_every_missing_message_verbatim() {
    let required: Vec<String> = [
        "Fix the coupon bug.",
        "use vitest, please\nnot jest",
        "7. do not touch\n8. fix later",
        "yes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let s = nine_sections(&["Fix the coupon bug.", "yes"]);
    let body = summary::parse_reply(&s).unwrap();
    let e = summary::enforce_user_messages(&body, &required);
    assert_eq!(e.appended, 2);
    let six = summary::section6(&e.text);
    for m in &required {
        assert!(six.contains(m.as_str()), "{m:?} not in section 6:\n{six}");
    }
    // The other sections are untouched and in order.
    let seven = e.text.find("7. Pending Tasks:").unwrap();
    assert!(e.text.find("6. All User Messages:").unwrap() < seven);
    assert!(e.text[seven..].starts_with("7. Pending Tasks:\n   something"));
    // Nothing to add: unchanged.
    let again = summary::enforce_user_messages(&e.text, &required);
    assert_eq!(again.appended, 0);
    assert_eq!(again.text, e.text);

    // Headings in other styles.
    let styled = "## 1. Primary Request and Intent\nx\n## 6. All user messages\n- yes\n**7. Pending Tasks:**\n- none";
    let e = summary::enforce_user_messages(styled, &required);
    assert!(summary::section6(&e.text).contains("use vitest, please\nnot jest"));
    assert!(e.text.ends_with("**7. Pending Tasks:**\n- none"));

    // No section 6 at all: one is created before section 7, or at the end.
    let e = summary::enforce_user_messages(
        "1. Primary Request and Intent:\nx\n7. Pending Tasks:\ny",
        &required,
    );
    assert_eq!(e.appended, 4);
    assert!(
        e.text
            .contains("6. All User Messages:\n   - Fix the coupon bug.")
    );
    assert!(e.text.ends_with("7. Pending Tasks:\ny"));
    let e = summary::enforce_user_messages("just prose", &required[..1]);
    assert_eq!(
        e.text,
        "just prose\n\n6. All User Messages:\n   - Fix the coupon bug.\n"
    );
}

#[test]
fn the_extractive_summary_has_the_nine_sections_from_the_records() {
    let h = vec![
        Message::user("Fix the coupon bug in src/cart.ts."),
        answer(
            "m1",
            vec![
                Block::text("Reading it."),
                call("r1", "Read", json!({"file_path": "/w/src/cart.ts"})),
                call("b1", "Bash", json!({"command": "npm test"})),
            ],
        ),
        results(&[
            ("r1", "     1\tcode", false),
            ("b1", "FAIL cart.test.ts\nexpected 10", true),
        ]),
        answer(
            "m2",
            vec![
                call(
                    "e1",
                    "Edit",
                    json!({"file_path": "/w/src/cart.ts", "old_string": "a"}),
                ),
                call(
                    "td",
                    "TodoWrite",
                    json!({"todos": [
                        {"content": "fix the bug", "status": "completed"},
                        {"content": "add a test", "status": "in_progress"},
                        {"content": "update docs", "status": "pending"}
                    ]}),
                ),
            ],
        ),
        results(&[("e1", "ok", false), ("td", "ok", false)]),
        Message::user("Also add a test, please."),
        answer("m3", vec![Block::text("Adding the test now.")]),
    ];
    let required = summary::required_user_messages(
        &["An earlier request.".to_string()],
        crate::conversation::user_authored_texts(&h),
    );
    let s = extractive::summarise(&h, &required, Some("the cart"));
    let positions: Vec<usize> = summary::SECTIONS
        .iter()
        .enumerate()
        .map(|(i, t)| s.find(&format!("{}. {t}:", i + 1)).expect(t))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{s}");
    let six = summary::section6(&s);
    for m in &required {
        assert!(six.contains(m.as_str()));
    }
    assert!(s.contains("Focus asked for when compacting: the cart"));
    assert!(s.contains("   - /w/src/cart.ts (read, edited)"));
    assert!(s.contains("   - Bash npm test: FAIL cart.test.ts\n     expected 10"));
    assert!(s.contains("   - [in progress] add a test\n   - [pending] update docs\n"));
    assert!(
        !s.contains("fix the bug"),
        "completed todos are not pending"
    );
    assert!(s.contains("8. Current Work:\n   Adding the test now."));
    assert!(s.contains("Go on with the latest request: Also add a test, please."));
    // Deterministic.
    assert_eq!(s, extractive::summarise(&h, &required, Some("the cart")));
}

// ---- tier 3 -------------------------------------------------------------------------------

fn inputs<'a>(history: &'a [Message], reinject: &'a Reinject<'a>) -> Inputs<'a> {
    Inputs {
        history,
        earlier_user_messages: &[],
        focus: None,
        trigger: Trigger::Auto,
        tokens_before: 150_000,
        overhead_tokens: 1_000,
        auto_threshold: 100_000,
        reinject,
    }
}

#[test]
fn the_new_history_keeps_the_last_answer_the_tail_and_reinjects_files() {
    let mut h = tool_session(&[("Read", 100), ("Edit", 100)]);
    // The last answer calls a tool; its result is the pending tail.
    let mut last = answer(
        "m_last",
        vec![
            Block::text("Now the tests."),
            call("t_last", "Bash", json!({"command": "npm test"})),
        ],
    );
    last.usage = Some(Usage {
        input_tokens: 1,
        output_tokens: 1,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 140_000,
    });
    h.push(last.clone());
    h.push(results(&[("t_last", "ok", false)]));
    let read = |p: &str| -> Option<String> {
        match p {
            "/w/src/f1.rs" => Some("     1\tfn edited() {}\n".into()),
            "/w/src/f0.rs" => Some("     1\tlong line of code\n".repeat(2_000)),
            _ => None,
        }
    };
    let reinject = Reinject {
        read_file: Some(&read),
        instructions: Some("Contents of CLAUDE.md: be brief (edited)".into()),
        plan: Some("1. fix\n2. test".into()),
        transcript_path: Some("/state/s.jsonl".into()),
        ..Reinject::default()
    };
    let c = block_on(full::full(&inputs(&h, &reinject), &Summariser::Extractive)).unwrap();
    let n = c.history.len();
    assert_eq!(n, 5, "{:#?}", c.history);
    // 1. Instructions re-read, git carried over, then the continuation.
    let first = &c.history[0].content;
    let texts: Vec<(Origin, &str)> = first
        .iter()
        .map(|b| match b {
            Block::Text(t) => (t.origin, t.text.as_str()),
            _ => panic!("text only"),
        })
        .collect();
    assert_eq!(
        texts[0],
        (
            Origin::Instructions,
            "Contents of CLAUDE.md: be brief (edited)"
        )
    );
    assert_eq!(texts[1], (Origin::Git, "gitStatus: clean"));
    assert_eq!(texts[2].0, Origin::Summary);
    assert!(
        texts[2]
            .1
            .contains("\n\nSummary:\n1. Primary Request and Intent:")
    );
    assert!(texts[2].1.contains("/state/s.jsonl"));
    // 2. Files newest first as Read pairs; the long one cut to 5,000 tokens with a limit.
    let calls: Vec<&ToolUse> = c.history[1].tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].input, json!({"file_path": "/w/src/f1.rs"}));
    assert_eq!(calls[1].input["file_path"], "/w/src/f0.rs");
    let limit = calls[1].input["limit"].as_u64().unwrap() as usize;
    let cut = result_of(&c.history, &calls[1].id).text();
    assert_eq!(cut.lines().count(), limit);
    assert!(cut.len() <= 20_000 && cut.len() > 19_000);
    assert_eq!(c.reinjected_files, ["/w/src/f1.rs", "/w/src/f0.rs"]);
    let plan_block = c.history[2].content.last().unwrap();
    assert!(
        matches!(plan_block, Block::Text(t) if t.origin == Origin::Reinjected && t.text.ends_with("1. fix\n2. test"))
    );
    // 3. The last answer verbatim, without its usage; 4. the pending result.
    let mut expected = last;
    expected.usage = None;
    assert_eq!(c.history[3], expected);
    assert_eq!(c.history[4], h[h.len() - 1]);
    assert_eq!(c.summarised_messages, h.len() - 2);
    assert_eq!(c.user_messages, ["Fix the coupon bug."]);
    assert!(c.tokens_after < 100_000);
}

#[test]
fn reinjection_stays_within_its_limits() {
    // Seven files read, each about 4,000 tokens: five fit one by one, and 50,000 in all is
    // never passed.
    let tools: Vec<(&str, usize)> = (0..7).map(|_| ("Read", 10)).collect();
    let h = tool_session(&tools);
    let read = |_: &str| Some("x".repeat(16_000));
    let reinject = Reinject {
        read_file: Some(&read),
        ..Reinject::default()
    };
    let c = full::assemble(&inputs(&h, &reinject), &[], "S");
    // f6.rs was read by the last answer: its result is kept in the tail, not re-injected.
    assert_eq!(
        c.reinjected_files,
        [
            "/w/src/f5.rs",
            "/w/src/f4.rs",
            "/w/src/f3.rs",
            "/w/src/f2.rs",
            "/w/src/f1.rs"
        ]
    );
    // 12 files of 4,800 tokens: ten would pass 50,000; five is the cap anyway. With bigger
    // files (cut to 5,000 each), the total stops at 50,000.
    let read = |_: &str| Some("y\n".repeat(30_000));
    let reinject = Reinject {
        read_file: Some(&read),
        ..Reinject::default()
    };
    let c = full::assemble(&inputs(&h, &reinject), &[], "S");
    let total: u64 = c.history[2].content.iter().map(tokens::block_tokens).sum();
    assert!(total <= 25_000 && c.reinjected_files.len() == 5);
}

#[test]
fn calls_without_kept_results_are_left_out_of_the_last_answer() {
    let mut h = tool_session(&[("Read", 10)]);
    h.push(answer(
        "m9",
        vec![
            Block::text("I will run it."),
            call("pending", "Bash", json!({})),
        ],
    ));
    let reinject = Reinject::default();
    let c = full::assemble(&inputs(&h, &reinject), &[], "S");
    let last = c.history.last().unwrap();
    assert_eq!(last.content, vec![Block::text("I will run it.")]);
}

#[test]
fn the_stall_guard_and_the_threshold_fail_a_compaction() {
    let h = tool_session(&[("Read", 400)]);
    let reinject = Reinject::default();
    let mut i = inputs(&h, &reinject);
    // The count was barely above what the result holds: less than 5% freed.
    let c = full::assemble(&i, &[], "S");
    i.tokens_before = c.tokens_after + c.tokens_after / 25;
    let e = block_on(full::full(&i, &Summariser::Extractive)).unwrap_err();
    assert_eq!(e.kind, FailureKind::Stalled);
    assert!(e.message.contains("less than 5%"), "{e}");
    i.tokens_before = 150_000;
    i.auto_threshold = 10;
    let e = block_on(full::full(&i, &Summariser::Extractive)).unwrap_err();
    assert_eq!(e.kind, FailureKind::StillAboveThreshold);
    let only_user = vec![Message::user("hello")];
    let e = block_on(full::full(
        &inputs(&only_user, &reinject),
        &Summariser::Extractive,
    ))
    .unwrap_err();
    assert_eq!(e.kind, FailureKind::NothingToCompact);
    assert!(!e.counts());
}

#[test]
fn a_model_summary_is_asked_with_the_prompt_and_enforced() {
    let h = tool_session(&[("Read", 100), ("Bash", 100)]);
    let p = Scripted::new(vec![Ok(nine_sections(&[]))]);
    let reinject = Reinject::default();
    let mut i = inputs(&h, &reinject);
    i.focus = Some("the parser");
    i.earlier_user_messages = &[];
    let c = block_on(full::full(&i, &model(&p))).unwrap();
    assert_eq!(c.appended_user_messages, 1);
    assert!(summary::section6(&c.summary).contains("Fix the coupon bug."));
    assert!(!c.summary.contains("<analysis>") && !c.summary.contains("notes"));
    let sent = p.requests.lock().unwrap();
    let last = sent[0].last().unwrap();
    // The history ended with tool results: the prompt joins that user message.
    assert_eq!(sent[0].len(), h.len());
    let Block::Text(t) = last.content.last().unwrap() else {
        panic!()
    };
    assert!(t.text.ends_with("Additional Instructions:\nthe parser"));
}

#[test]
fn the_summary_request_carries_images_as_a_mark() {
    // A PNG's signature and header: a kept image, with its bytes.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 8, 8, 6, 0, 0, 0]);
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let image = crate::conversation::Image::from_base64("image/png", &data).unwrap();
    let mut h = tool_session(&[("Read", 100), ("Bash", 100)]);
    h[0].content.insert(2, Block::Image(image.clone()));
    let Block::ToolResult(r) = &mut h[2].content[0] else {
        panic!()
    };
    r.content.push(ResultPart::Image(image));
    let p = Scripted::new(vec![Ok(nine_sections(&[]))]);
    let reinject = Reinject::default();
    let mut i = inputs(&h, &reinject);
    i.earlier_user_messages = &[];
    block_on(full::full(&i, &model(&p))).unwrap();
    let sent = p.requests.lock().unwrap();
    let json = serde_json::to_string(&sent[0]).unwrap();
    assert!(!json.contains(&data), "no image bytes reach the summariser");
    let Block::Text(t) = &sent[0][0].content[2] else {
        panic!("{:?}", sent[0][0].content)
    };
    assert_eq!(t.text, "[image]");
    let Block::ToolResult(r) = &sent[0][2].content[0] else {
        panic!()
    };
    assert_eq!(
        r.content.last(),
        Some(&ResultPart::Text {
            text: "[image]".into()
        })
    );
    // The history itself keeps them.
    assert!(matches!(h[0].content[2], Block::Image(_)));
}

#[test]
fn a_too_long_request_is_retried_without_the_oldest_messages_at_most_twice() {
    let tools: Vec<(&str, usize)> = (0..20).map(|_| ("Read", 8_000)).collect();
    let h = tool_session(&tools);
    let reinject = Reinject::default();
    let p = Scripted::new(vec![
        Err(rejected(
            "prompt is too long: 212000 tokens > 200000 maximum",
        )),
        Err(rejected(
            "prompt is too long: 203000 tokens > 200000 maximum",
        )),
        Ok(nine_sections(&["Fix the coupon bug."])),
    ]);
    let c = block_on(full::full(&inputs(&h, &reinject), &model(&p))).unwrap();
    let sent = p.requests.lock().unwrap();
    assert_eq!(sent.len(), 3);
    assert!(sent[1].len() < sent[0].len() && sent[2].len() < sent[1].len());
    for r in sent.iter() {
        assert_eq!(r[0], h[0], "the first user message is always sent");
        assert_eq!(r[1].role, crate::conversation::Role::Assistant);
    }
    assert_eq!(c.left_out_for_length, h.len() - sent[2].len());
    assert_eq!(c.user_messages, ["Fix the coupon bug."]);

    let p = Scripted::new(vec![
        Err(rejected(
            "prompt is too long: 212000 tokens > 200000 maximum",
        )),
        Err(rejected(
            "prompt is too long: 212000 tokens > 200000 maximum",
        )),
        Err(rejected(
            "prompt is too long: 212000 tokens > 200000 maximum",
        )),
    ]);
    let e = block_on(full::full(&inputs(&h, &reinject), &model(&p))).unwrap_err();
    assert_eq!(e.kind, FailureKind::TooLong);
    assert_eq!(p.requests.lock().unwrap().len(), 3);
    assert_eq!(
        full::overage("prompt is too long: 212000 tokens > 200000 maximum"),
        Some(12_000)
    );
}

#[test]
fn api_errors_and_replies_without_summary_are_failures() {
    let h = tool_session(&[("Read", 100)]);
    let reinject = Reinject::default();
    let p = Scripted::new(vec![Ok("Sure! Here is what we did.".into())]);
    let e = block_on(full::full(&inputs(&h, &reinject), &model(&p))).unwrap_err();
    assert_eq!(e.kind, FailureKind::NoSummary);
    let mut overloaded = rejected("Overloaded");
    overloaded.kind = llm::ErrorKind::Overloaded;
    overloaded.status = Some(529);
    let p = Scripted::new(vec![Err(overloaded)]);
    let e = block_on(full::full(&inputs(&h, &reinject), &model(&p))).unwrap_err();
    assert_eq!(e.kind, FailureKind::Api);
    assert!(e.message.contains("overloaded"), "{e}");
}

// ---- the breaker ---------------------------------------------------------------------------

#[test]
fn the_breaker_trips_after_three_failures_and_a_success_resets_it() {
    let fail = |kind| full::Failure {
        kind,
        message: "the model's reply has no <summary>".into(),
    };
    let mut b = Breaker::default();
    assert_eq!(b.failure(&fail(FailureKind::NoSummary)), None);
    assert_eq!(b.failure(&fail(FailureKind::Cancelled)), None);
    assert_eq!(b.failure(&fail(FailureKind::NothingToCompact)), None);
    assert_eq!(b.failure(&fail(FailureKind::Api)), None);
    assert!(b.allows_auto());
    b.success();
    assert_eq!(b.failures(), 0);
    b.failure(&fail(FailureKind::NoSummary));
    b.failure(&fail(FailureKind::Stalled));
    let msg = b
        .failure(&fail(FailureKind::NoSummary))
        .expect("the third trips it");
    assert!(!b.allows_auto());
    assert!(msg.contains("failed 3 times in a row"));
    assert!(msg.contains("has no <summary>"), "says why: {msg}");
    assert!(
        msg.contains("focus hint") && msg.contains("new session"),
        "says what to do"
    );
    assert_eq!(b.failure(&fail(FailureKind::NoSummary)), None, "told once");
}

// ---- the decision and the manual entry ----------------------------------------------------

fn turn(history: &[Message]) -> Turn<'_> {
    Turn {
        history,
        overhead_tokens: 0,
        now: Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap(),
        last_assistant_at: None,
    }
}

/// A window of 50,000 with 2,000 for output: effective 48,000, threshold 35,000, blocking 45,000.
fn small() -> Compactor {
    Compactor::new(policy(50_000, 2_000))
}

#[test]
fn the_decision_masks_first_then_compacts() {
    let c = small();
    assert_eq!(c.policy.budget.auto_threshold, 35_000);
    // 10 Read results of 3,600 bytes (900 tokens, 1,200 padded) and a few small things.
    let tools: Vec<(&str, usize)> = (0..10).map(|_| ("Read", 3_600)).collect();
    let h = tool_session(&tools);
    assert_eq!(c.before_request(&turn(&h)), Decision::Send);

    // Passing the threshold by a little: masking is enough.
    let tools: Vec<(&str, usize)> = (0..30).map(|_| ("Read", 3_600)).collect();
    let h = tool_session(&tools);
    assert!(c.count(&h, 0) > 35_000);
    let Decision::Mask(plan) = c.before_request(&turn(&h)) else {
        panic!("masking first")
    };
    assert_eq!(plan.trigger, MaskTrigger::Size);
    assert_eq!(plan.cleared.len(), 25);

    // Results of a tool that is never cleared: masking cannot help, so compact fully.
    let tools: Vec<(&str, usize)> = (0..30).map(|_| ("mcp__db__query", 3_600)).collect();
    let h = tool_session(&tools);
    assert_eq!(c.before_request(&turn(&h)), Decision::Full { mask: None });

    // Both: mask what can be masked, then compact.
    let mut tools: Vec<(&str, usize)> = (0..30).map(|_| ("mcp__db__query", 3_600)).collect();
    tools.extend((0..8).map(|_| ("Bash", 3_600)));
    let h = tool_session(&tools);
    match c.before_request(&turn(&h)) {
        Decision::Full { mask: Some(plan) } => assert_eq!(plan.cleared.len(), 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tripped_breaker_or_auto_off_blocks_only_above_blocking() {
    let mut c = small();
    let fail = full::Failure {
        kind: FailureKind::NoSummary,
        message: "no summary".into(),
    };
    for _ in 0..3 {
        c.failed(&fail);
    }
    // Above the threshold, below blocking (45,000): sent as is.
    let tools: Vec<(&str, usize)> = (0..32).map(|_| ("mcp__q", 3_600)).collect();
    let h = tool_session(&tools);
    let count = c.count(&h, 0);
    assert!(count > 35_000 && count <= 45_000, "{count}");
    assert_eq!(c.before_request(&turn(&h)), Decision::Send);
    // Above blocking: blocked, saying why and what to do.
    let tools: Vec<(&str, usize)> = (0..40).map(|_| ("mcp__q", 3_600)).collect();
    let h = tool_session(&tools);
    let Decision::Blocked { message, .. } = c.before_request(&turn(&h)) else {
        panic!()
    };
    assert!(
        message.contains("repeated failures") && message.contains("focus hint"),
        "{message}"
    );
    // A manual success turns it back on.
    c.breaker.success();
    assert_eq!(c.before_request(&turn(&h)), Decision::Full { mask: None });
    c.policy.auto = false;
    let Decision::Blocked { message, .. } = c.before_request(&turn(&h)) else {
        panic!()
    };
    assert!(message.contains("turned off"), "{message}");
}

#[test]
fn an_old_last_answer_masks_below_the_threshold() {
    let c = small();
    let h = tool_session(&[
        ("Read", 400),
        ("Read", 400),
        ("Read", 400),
        ("Read", 400),
        ("Read", 400),
        ("Read", 400),
    ]);
    let mut t = turn(&h);
    t.last_assistant_at = Some(t.now - chrono::Duration::minutes(59));
    assert_eq!(c.before_request(&t), Decision::Send);
    t.last_assistant_at = Some(t.now - chrono::Duration::minutes(61));
    let Decision::Mask(plan) = c.before_request(&t) else {
        panic!()
    };
    assert_eq!(
        (plan.trigger, plan.ids()),
        (MaskTrigger::Time, vec!["t0".to_string()])
    );
}

/// A provider that must not be called.
struct NoCalls;

impl Provider for NoCalls {
    fn name(&self) -> &str {
        "none"
    }
    fn stream(&self, _: &Request<'_>, _: CancellationToken) -> EventStream {
        panic!("a dry run calls no model")
    }
}

#[test]
fn dry_runs_report_and_change_nothing() {
    let c = small();
    let tools: Vec<(&str, usize)> = (0..8).map(|_| ("Read", 3_600)).collect();
    let h = tool_session(&tools);
    let reinject = Reinject::default();
    let no_model = NoCalls;
    let summariser = Summariser::Model(ModelSpec {
        provider: &no_model,
        model: "m".into(),
        system: vec![],
        tools: vec![],
        max_tokens: 1000,
        thinking: None,
        betas: vec![],
        cancel: CancellationToken::new(),
    });
    let run = |mode, dry_run| {
        block_on(c.run(
            &RunRequest {
                mode,
                focus: None,
                dry_run,
            },
            &turn(&h),
            &reinject,
            &summariser,
        ))
        .unwrap()
    };
    let micro = run(Mode::Micro, true);
    assert_eq!(micro.change, Change::None);
    assert_eq!(micro.report.mode, Ran::Micro);
    assert_eq!(micro.report.cleared.len(), 3);
    assert_eq!(
        micro.report.tokens_after,
        micro.report.tokens_before - micro.report.cleared.iter().map(|c| c.tokens).sum::<u64>()
    );
    assert!(micro.report.dry_run);
    let full = run(Mode::Full, true);
    assert_eq!(full.change, Change::None);
    assert_eq!(full.report.mode, Ran::Full);
    assert_eq!(full.report.summary, None, "no model call, no summary");
    assert!(full.report.tokens_after < full.report.tokens_before);
    assert_eq!(full.report.preserved_user_messages, 1);
    assert_eq!(full.report.summarised_messages, h.len() - 2);
    let auto = run(Mode::Auto, true);
    assert_eq!(
        auto.report.mode,
        Ran::None,
        "below the threshold nothing is due"
    );
    // Not a dry run: the change to record and apply.
    let micro = run(Mode::Micro, false);
    let Change::Mask(plan) = micro.change else {
        panic!()
    };
    assert_eq!(plan.trigger, MaskTrigger::Manual);
    // The report has the protocol's field names.
    let v = serde_json::to_value(&full.report).unwrap();
    for k in [
        "mode",
        "tokensBefore",
        "tokensAfter",
        "cleared",
        "preservedUserMessages",
        "durationMs",
    ] {
        assert!(v.get(k).is_some(), "{k} in {v}");
    }
    assert_eq!(
        serde_json::to_value(&micro.report).unwrap()["cleared"][0]["toolUseId"],
        "t0"
    );
}

#[test]
fn a_manual_full_run_offline_gives_the_summary_and_the_change() {
    let mut c = small();
    let tools: Vec<(&str, usize)> = (0..8).map(|_| ("Read", 3_600)).collect();
    let h = tool_session(&tools);
    let reinject = Reinject::default();
    let r = block_on(c.run(
        &RunRequest {
            mode: Mode::Full,
            focus: Some("the cart"),
            dry_run: false,
        },
        &turn(&h),
        &reinject,
        &Summariser::Extractive,
    ))
    .unwrap();
    let Change::Full {
        mask: None,
        compacted,
    } = r.change
    else {
        panic!()
    };
    assert_eq!(
        r.report.summary.as_deref(),
        Some(compacted.summary.as_str())
    );
    assert!(
        compacted
            .summary
            .contains("Focus asked for when compacting: the cart")
    );
    assert_eq!(compacted.trigger, Trigger::Manual);
    c.committed(&compacted);
    assert_eq!(c.preserved, ["Fix the coupon bug."]);
    assert!(!c.tally.is_observed());
}

#[test]
fn a_file_whose_read_the_tail_keeps_is_not_reinjected() {
    let mut h = tool_session(&[("Read", 100)]);
    h.push(answer(
        "m_last",
        vec![call("t_big", "Read", json!({"file_path": "/w/src/big.rs"}))],
    ));
    h.push(results(&[("t_big", "     1\tfn big() {}\n", false)]));
    let read = |p: &str| -> Option<String> {
        match p {
            "/w/src/f0.rs" | "/w/src/big.rs" => Some(format!("     1\t// {p}\n")),
            _ => None,
        }
    };
    let reinject = Reinject {
        read_file: Some(&read),
        ..Reinject::default()
    };
    let c = full::assemble(&inputs(&h, &reinject), &[], "S");
    assert_eq!(
        c.reinjected_files,
        ["/w/src/f0.rs"],
        "big.rs is in the tail already"
    );
    let reads = c
        .history
        .iter()
        .flat_map(|m| m.tool_uses())
        .filter(|t| t.input["file_path"] == "/w/src/big.rs")
        .count();
    assert_eq!(reads, 1, "{:#?}", c.history);
}

#[test]
fn a_summary_bound_to_fail_the_judge_is_not_asked_for() {
    let h = tool_session(&[("Read", 400), ("Read", 40_000)]);
    let p = Scripted::new(vec![Ok(nine_sections(&[]))]);
    let reinject = Reinject::default();
    // What is kept (the last answer and its 40 KB result) is above the threshold already.
    let mut i = inputs(&h, &reinject);
    i.auto_threshold = 5_000;
    let e = block_on(full::full(&i, &model(&p))).unwrap_err();
    assert_eq!(e.kind, FailureKind::StillAboveThreshold, "{e}");
    assert!(
        p.requests.lock().unwrap().is_empty(),
        "no summary was asked for"
    );
    // Freeing less than 5% whatever the summary: not asked either.
    let mut i = inputs(&h, &reinject);
    let kept = full::assemble(&i, &[], "").tokens_after;
    i.tokens_before = kept + kept / 50;
    let e = block_on(full::full(&i, &model(&p))).unwrap_err();
    assert_eq!(e.kind, FailureKind::Stalled, "{e}");
    assert!(
        p.requests.lock().unwrap().is_empty(),
        "no summary was asked for"
    );
    // One that can succeed is asked for.
    let c = block_on(full::full(&inputs(&h, &reinject), &model(&p))).unwrap();
    assert_eq!(p.requests.lock().unwrap().len(), 1);
    assert!(c.tokens_after < 100_000);
}
