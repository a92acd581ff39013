//! Compaction with real parts: tier 3 and tier 2 against the fake Anthropic server over HTTP on
//! 127.0.0.1, a session loop over a small window driven through the API a session uses
//! (`Compactor`, `Writer`), resumed from its transcript, and `claude-context compact` run as a
//! user runs it, on our transcripts and the reference CLI's.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use crate::fake_anthropic;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use chrono::Utc;
use claude_context::compact::{
    Compactor, Decision, FailureKind, MaskTrigger, ModelInfo, ModelSpec, Overrides, Policy,
    Reinject, Settings, Summariser, Trigger, Turn, summary, tokens,
};
use claude_context::conversation::{Block, Message, Origin, Role, StopReason, ToolUse, Usage};
use claude_context::llm::{
    AppliedEdit, CancellationToken, Event, HttpProvider, Provider, Request, RetryPolicy,
    SystemBlock, ToolSpec, anthropic,
};
use claude_context::session::transcript::{CompactMetadata, SessionMeta, Transcript, Writer};
use fake_anthropic::{FakeAnthropic, Reply, Turn as FakeTurn};
use futures::StreamExt;
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-compact-0000-fake";

fn client(server: &FakeAnthropic) -> HttpProvider {
    let base = server.base_url();
    let config = anthropic::Config::from_env(
        |k| match k {
            "ANTHROPIC_API_KEY" => Some(KEY.to_string()),
            "ANTHROPIC_BASE_URL" => Some(base.clone()),
            _ => None,
        },
        None,
    )
    .unwrap();
    anthropic::provider(
        config,
        RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
        },
    )
    .unwrap()
}

fn system() -> Vec<SystemBlock> {
    vec![
        SystemBlock {
            text: "You are an assistant in an editor.".into(),
            cache: true,
        },
        SystemBlock {
            text: "Environment: /w".into(),
            cache: true,
        },
    ]
}

fn tools() -> Vec<ToolSpec> {
    ["Read", "Bash", "TodoWrite", "mcp__db__query"]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: format!("the {n} tool"),
            input_schema: json!({"type": "object"}),
            defer_loading: false,
        })
        .collect()
}

fn spec<'a>(p: &'a dyn Provider) -> Summariser<'a> {
    Summariser::Model(ModelSpec {
        provider: p,
        model: "claude-fake-1".into(),
        system: system(),
        tools: tools(),
        max_tokens: 2_000,
        thinking: None,
        betas: vec![],
        cancel: CancellationToken::new(),
    })
}

fn call(id: &str, name: &str) -> Block {
    Block::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({"file_path": format!("/w/{id}.rs")}),
    })
}

fn answer(id: &str, blocks: Vec<Block>) -> Message {
    let mut m = Message::assistant(blocks);
    m.id = Some(id.into());
    m.stop_reason = Some(StopReason::ToolUse);
    m
}

/// A prompt, then `n` rounds of a Read call and a result of `size` bytes.
fn history(n: usize, size: usize) -> Vec<Message> {
    history_of("Read", n, size)
}

/// The same with another tool.
fn history_of(tool: &str, n: usize, size: usize) -> Vec<Message> {
    let mut h = vec![Message::user_blocks(vec![
        Block::injected(Origin::Instructions, "Contents of /w/CLAUDE.md: tabs"),
        Block::text("Find the coupon bug."),
    ])];
    for i in 0..n {
        let id = format!("t{i}");
        h.push(answer(&format!("m{i}"), vec![call(&id, tool)]));
        h.push(Message::user_blocks(vec![Block::tool_result(
            &id,
            "x".repeat(size),
            false,
        )]));
        if i == n / 2 {
            h.push(Message::user("Also check the tax code, please."));
            h.push(answer(&format!("m{i}b"), vec![Block::text("Will do.")]));
        }
    }
    h
}

fn summary_text(messages: &[&str]) -> String {
    let mut s = String::from("<analysis>\nThe user asked; I read.\n</analysis>\n\n<summary>\n");
    for (i, title) in summary::SECTIONS.iter().enumerate() {
        s.push_str(&format!("{}. {title}:\n", i + 1));
        if i == 5 {
            for m in messages {
                s.push_str(&format!("   - {m}\n"));
            }
        } else {
            s.push_str("   The coupon is applied twice in src/cart.ts.\n");
        }
        s.push('\n');
    }
    s.push_str("</summary>");
    s
}

fn inputs<'a>(h: &'a [Message], reinject: &'a Reinject<'a>) -> claude_context::compact::Inputs<'a> {
    claude_context::compact::Inputs {
        history: h,
        earlier_user_messages: &[],
        focus: None,
        trigger: Trigger::Auto,
        tokens_before: 150_000,
        overhead_tokens: 500,
        auto_threshold: 100_000,
        reinject,
    }
}

#[tokio::test]
async fn a_summary_over_http_shares_the_session_prefix_and_keeps_only_the_summary() {
    let server = FakeAnthropic::start().await;
    // The model leaves the second user message out of section 6.
    server.push(FakeTurn::new().text(&summary_text(&["Find the coupon bug."])));
    let p = client(&server);
    let h = history(6, 2_000);
    let reinject = Reinject::default();
    let mut i = inputs(&h, &reinject);
    i.focus = Some("the tax code");
    let c = claude_context::compact::full::full(&i, &spec(&p))
        .await
        .unwrap();

    assert!(!c.summary.contains("<analysis>") && !c.summary.contains("The user asked; I read."));
    assert_eq!(c.appended_user_messages, 1);
    let six = summary::section6(&c.summary);
    assert!(
        six.contains("Find the coupon bug.") && six.contains("Also check the tax code, please.")
    );
    assert_eq!(c.user_messages.len(), 2);

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let body = sent[0].json();
    // The session's system prompt and tools, as sent in its own requests.
    let mut own = Request::new("claude-fake-1", 2_000, &h);
    own.system = system();
    own.tools = tools();
    let own: Value = serde_json::from_slice(&anthropic::encode(&own)).unwrap();
    assert_eq!(body["system"], own["system"]);
    assert_eq!(body["tools"], own["tools"]);
    // The conversation, then our request as the last user text, with the focus hint.
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), own["messages"].as_array().unwrap().len());
    assert_eq!(
        messages[..messages.len() - 1],
        own["messages"].as_array().unwrap()[..messages.len() - 1]
    );
    let last = messages.last().unwrap()["content"].as_array().unwrap();
    let ask = last.last().unwrap()["text"].as_str().unwrap();
    assert!(ask.contains("<summary>") && ask.contains("6. All User Messages"));
    assert!(ask.ends_with("Additional Instructions:\nthe tax code"));
    assert!(body.get("context_management").is_none());
}

#[tokio::test]
async fn replies_without_a_summary_fail_and_the_third_in_a_row_stops_automatic_compaction() {
    let server = FakeAnthropic::start().await;
    let p = client(&server);
    // Results of a tool masking never clears: above the threshold, only a summary helps.
    let h = history_of("mcp__db__query", 12, 4_000);
    let mut compactor = Compactor::new(small_policy());
    let reinject = Reinject::default();
    let turn = Turn {
        history: &h,
        overhead_tokens: 0,
        now: Utc::now(),
        last_assistant_at: None,
    };
    let mut notices = Vec::new();
    for k in 0..3 {
        server.push(FakeTurn::new().text("I have summarised the conversation in my head."));
        assert!(compactor.breaker.allows_auto(), "before failure {k}");
        let e = compactor
            .full(&turn, Trigger::Auto, None, &reinject, &spec(&p))
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::NoSummary);
        notices.extend(compactor.failed(&e));
    }
    assert_eq!(notices.len(), 1, "told once, on the third");
    assert!(notices[0].contains("3 times") && notices[0].contains("no <summary>"));
    assert!(!compactor.breaker.allows_auto());
    assert_eq!(server.requests().len(), 3);
    // Above the threshold, automatic compaction no longer runs.
    assert!(compactor.count(&h, 0) > compactor.policy.budget.auto_threshold);
    assert_eq!(
        Compactor::new(small_policy()).before_request(&turn),
        Decision::Full { mask: None }
    );
    assert_eq!(compactor.before_request(&turn), Decision::Send);
    // An API error counts too; a success resets the count.
    let mut c2 = Compactor::new(small_policy());
    server.push(Reply::error(529, "overloaded_error", "Overloaded"));
    server.push(Reply::error(529, "overloaded_error", "Overloaded"));
    let e = c2
        .full(&turn, Trigger::Auto, None, &reinject, &spec(&p))
        .await
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Api);
    assert!(e.message.contains("overloaded"), "{e}");
    c2.failed(&e);
    server.push(FakeTurn::new().text(&summary_text(&[])));
    let done = c2
        .full(&turn, Trigger::Auto, None, &reinject, &spec(&p))
        .await
        .unwrap();
    c2.committed(&done);
    assert_eq!(c2.breaker.failures(), 0);
}

#[tokio::test]
async fn an_over_long_summary_request_is_retried_without_the_oldest_messages() {
    let server = FakeAnthropic::start().await;
    let p = client(&server);
    let h = history(30, 8_000);
    server.push(Reply::error(
        400,
        "invalid_request_error",
        "prompt is too long: 215000 tokens > 200000 maximum",
    ));
    server.push(FakeTurn::new().text(&summary_text(&["Find the coupon bug."])));
    let reinject = Reinject::default();
    let c = claude_context::compact::full::full(&inputs(&h, &reinject), &spec(&p))
        .await
        .unwrap();
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let first = sent[0].json()["messages"].as_array().unwrap().clone();
    let second = sent[1].json()["messages"].as_array().unwrap().clone();
    assert!(second.len() < first.len());
    assert_eq!(second[0], first[0], "the first user message is kept");
    assert_eq!(second[1]["role"], "assistant");
    assert!(c.left_out_for_length > 0);
    // Left out of the request, still guaranteed: the middle message is in section 6.
    assert!(summary::section6(&c.summary).contains("Also check the tax code, please."));

    // Too long every time: at most two retries, then a clear failure.
    for _ in 0..3 {
        server.push(Reply::error(
            400,
            "invalid_request_error",
            "prompt is too long: 215000 tokens > 200000 maximum",
        ));
    }
    let e = claude_context::compact::full::full(&inputs(&h, &reinject), &spec(&p))
        .await
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::TooLong);
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test]
async fn a_compaction_that_frees_less_than_five_percent_fails() {
    let server = FakeAnthropic::start().await;
    let p = client(&server);
    let h = history(3, 400);
    // A summary as long as the conversation.
    let long = summary_text(&["Find the coupon bug.", &"padding ".repeat(600)]);
    server.push(FakeTurn::new().text(&long));
    let reinject = Reinject::default();
    let mut i = inputs(&h, &reinject);
    i.tokens_before = tokens::padded(tokens::history_tokens(&h) + 500);
    let e = claude_context::compact::full::full(&i, &spec(&p))
        .await
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Stalled);
    assert!(e.counts());
}

#[tokio::test]
async fn context_editing_goes_out_under_its_beta_and_the_applied_edits_come_back() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::with_applied_edits(
        FakeTurn::new().text("Done.").usage(60_000, 12, 0, 0),
        json!([{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 6, "cleared_input_tokens": 41_000}]),
    ));
    let p = client(&server);

    let mut policy = small_policy();
    policy.api_editing = true;
    let mut compactor = Compactor::new(policy);
    let h = history(2, 100);
    let mut request = Request::new("claude-fake-1", 2_000, &h);
    request.tools = tools();
    request.context_management = compactor.context_management(p.name(), &request.tools, false);
    let mut stream = p.stream(&request, CancellationToken::new());
    let (mut edits, mut done) = (Vec::<AppliedEdit>::new(), None);
    while let Some(e) = stream.next().await {
        match e.unwrap() {
            Event::ContextEdited { edits: e } => edits.extend(e),
            Event::Done(m) => done = Some(m),
            _ => {}
        }
    }
    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("anthropic-beta"),
        Some(anthropic::CONTEXT_MANAGEMENT_BETA)
    );
    let cm = &sent.json()["context_management"]["edits"][0];
    assert_eq!(cm["type"], "clear_tool_uses_20250919");
    assert_eq!(cm["exclude_tools"], json!(["TodoWrite", "mcp__db__query"]));
    assert_eq!(cm["keep"], json!({"type": "tool_uses", "value": 2}));
    assert_eq!(edits.len(), 1);
    assert_eq!(
        (edits[0].cleared_tool_uses, edits[0].cleared_input_tokens),
        (6, 41_000)
    );
    let answer = done.unwrap();
    let mut h2 = h.clone();
    h2.push(answer.clone());
    compactor.answered(&answer, h2.len(), &edits);
    assert_eq!(compactor.tally.server_cleared(), 41_000);
    assert_eq!(
        compactor.count(&h2, 0),
        60_012,
        "the usage counts the edited prompt"
    );
}

/// A window of 30,000 with 2,000 kept for the answer: effective 28,000, automatic threshold
/// 15,000, blocking 25,000; masking keeps the 2 newest results.
fn small_policy() -> Policy {
    Policy::resolve(
        ModelInfo {
            id: "claude-fake-1",
            window: Some(30_000),
            max_output_tokens: 2_000,
        },
        &Settings {
            keep_recent: Some(2),
            ..Settings::default()
        },
        &Overrides::default(),
    )
    .0
}

/// A session as the chat session will run it, reduced to what compaction touches.
struct Session {
    history: Vec<Message>,
    compactor: Compactor,
    writer: Writer,
    provider: HttpProvider,
    masked: Vec<MaskTrigger>,
    compactions: usize,
}

impl Session {
    /// Sends the history (after the decision) and appends the answer.
    async fn request(&mut self, server: &FakeAnthropic, reply: FakeTurn) -> Message {
        let turn = Turn {
            history: &self.history,
            overhead_tokens: 300,
            now: Utc::now(),
            last_assistant_at: None,
        };
        match self.compactor.before_request(&turn) {
            Decision::Send => {}
            Decision::Mask(plan) => {
                self.writer.masking(&plan).unwrap();
                plan.apply(&mut self.history);
                self.compactor.masked(&plan);
                self.masked.push(plan.trigger);
            }
            Decision::Full { mask } => {
                if let Some(plan) = mask {
                    self.writer.masking(&plan).unwrap();
                    plan.apply(&mut self.history);
                    self.compactor.masked(&plan);
                    self.masked.push(plan.trigger);
                }
                let preserved: Vec<String> =
                    claude_context::conversation::user_authored_texts(&self.history);
                server.push(FakeTurn::new().text(&summary_text(
                    &preserved.iter().map(String::as_str).collect::<Vec<_>>(),
                )));
                let turn = Turn {
                    history: &self.history,
                    overhead_tokens: 300,
                    now: Utc::now(),
                    last_assistant_at: None,
                };
                let path = self.writer.path().display().to_string();
                let reinject = Reinject {
                    transcript_path: Some(path),
                    ..Reinject::default()
                };
                let c = self
                    .compactor
                    .full(&turn, Trigger::Auto, None, &reinject, &spec(&self.provider))
                    .await
                    .unwrap();
                self.writer
                    .compaction(
                        CompactMetadata {
                            trigger: c.trigger.as_str().into(),
                            pre_tokens: c.tokens_before,
                            post_tokens: Some(c.tokens_after),
                            user_messages: c.user_messages.clone(),
                            ..CompactMetadata::default()
                        },
                        &c.history,
                    )
                    .unwrap();
                self.history = c.history.clone();
                self.compactor.committed(&c);
                self.compactions += 1;
            }
            Decision::Blocked { message, .. } => panic!("{message}"),
        }
        // The fake's usage: what this request holds, as the API would count it.
        let input = tokens::history_tokens(&self.history) + 300;
        server.push(reply.usage(input, 10, 0, 0));
        let request = {
            let mut r = Request::new("claude-fake-1", 2_000, &self.history);
            r.system = system();
            r.tools = tools();
            r
        };
        let mut stream = self.provider.stream(&request, CancellationToken::new());
        let mut answer = None;
        while let Some(e) = stream.next().await {
            if let Event::Done(m) = e.unwrap() {
                answer = Some(m);
            }
        }
        drop(stream);
        let answer = answer.unwrap();
        self.writer.assistant(&answer).unwrap();
        self.history.push(answer.clone());
        self.compactor.answered(&answer, self.history.len(), &[]);
        answer
    }

    fn user(&mut self, m: Message) {
        self.writer.user(&m).unwrap();
        self.history.push(m);
    }
}

#[tokio::test]
async fn a_session_over_a_small_window_masks_first_then_compacts_once_and_resumes_compacted() {
    let server = FakeAnthropic::start().await;
    let dir = tempfile::tempdir().unwrap();
    let meta = SessionMeta {
        session_id: "compact-e2e".into(),
        cwd: "/w".into(),
        git_branch: "main".into(),
    };
    let mut s = Session {
        history: Vec::new(),
        compactor: Compactor::new(small_policy()),
        writer: Writer::create(dir.path(), meta.clone()).unwrap(),
        provider: client(&server),
        masked: Vec::new(),
        compactions: 0,
    };
    let mut typed = vec!["Find the coupon bug.".to_string()];
    s.user(Message::user_blocks(vec![
        Block::injected(Origin::Instructions, "Contents of /w/CLAUDE.md: tabs"),
        Block::text(&typed[0]),
    ]));
    // Each round: the model calls a tool, the result is 6,000 bytes (1,500 tokens). Reads can
    // be masked; the database tool's results cannot, so they end up needing a summary.
    for round in 0..16 {
        let (tool, id) = if round % 2 == 0 {
            ("Read", format!("r{round}"))
        } else {
            ("mcp__db__query", format!("q{round}"))
        };
        s.request(
            &server,
            FakeTurn::new().id(&format!("msg_{round}")).tool_use(
                &id,
                tool,
                json!({"file_path": "/w/src/cart.ts"}),
            ),
        )
        .await;
        let mut result = vec![Block::tool_result(&id, "y".repeat(6_000), false)];
        if round == 7 {
            typed.push("Keep the public API unchanged.".into());
            result.push(Block::text(typed.last().unwrap()));
        }
        s.user(Message::user_blocks(result));
        if s.compactions == 0 {
            assert!(
                s.compactor.count(&s.history, 300) <= s.compactor.policy.budget.blocking,
                "round {round}: never near blocking"
            );
        }
    }
    s.request(
        &server,
        FakeTurn::new()
            .id("msg_end")
            .text("The bug is in applyCoupon."),
    )
    .await;

    assert_eq!(s.compactions, 1, "compacted once");
    assert_eq!(
        s.masked.first(),
        Some(&MaskTrigger::Size),
        "masked before compacting"
    );
    let first_compaction = server
        .requests()
        .iter()
        .position(|r| {
            r.json()["messages"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .to_string()
                .contains("6. All User Messages")
        })
        .unwrap();
    assert!(first_compaction > 0);
    // Every user message survived, verbatim, in the summary or the kept messages.
    let summary_block = s.history[0]
        .content
        .iter()
        .find_map(|b| match b {
            Block::Text(t) if t.origin == Origin::Summary => Some(t.text.clone()),
            _ => None,
        })
        .unwrap();
    let kept = claude_context::conversation::user_authored_texts(&s.history);
    for m in &typed {
        assert!(
            summary::section6(&summary_block).contains(m.as_str()) || kept.contains(m),
            "{m:?} lost"
        );
    }
    // The continuation names the transcript.
    assert!(summary_block.contains(&s.writer.path().display().to_string()));

    // Resume: the history from the transcript is the one the running session had, and the next
    // request sends exactly that.
    let path = s.writer.path().to_path_buf();
    let t = Transcript::read(&path).unwrap();
    let replay = t.replay();
    assert_eq!(replay.history, s.history);
    let resumed = Compactor::resumed(
        small_policy(),
        &replay.history,
        replay.tokens_freed_since_usage,
        replay.compaction.clone().unwrap().user_messages,
    );
    assert_eq!(
        resumed.count(&replay.history, 300),
        s.compactor.count(&s.history, 300)
    );
    assert_eq!(resumed.preserved, s.compactor.preserved);
    // One writer per transcript: the first session's goes before the resumed one opens it.
    drop(s);
    let mut r = Session {
        history: replay.history.clone(),
        compactor: resumed,
        writer: Writer::append(&path, &t, meta).unwrap(),
        provider: client(&server),
        masked: Vec::new(),
        compactions: 0,
    };
    r.user(Message::user("Now fix it."));
    let before = server.requests().len();
    r.request(&server, FakeTurn::new().id("msg_resumed").text("Fixed."))
        .await;
    let sent = &server.requests()[before];
    let mut expected = Request::new("claude-fake-1", 2_000, &r.history[..r.history.len() - 1]);
    expected.system = system();
    expected.tools = tools();
    let expected: Value = serde_json::from_slice(&anthropic::encode(&expected)).unwrap();
    assert_eq!(sent.json()["messages"], expected["messages"]);
    assert_eq!(
        sent.json()["messages"][0]["content"][1]["text"]
            .as_str()
            .unwrap()
            .split_once("\n\nSummary:\n")
            .map(|(a, _)| a.starts_with("This session continues")),
        Some(true)
    );
}

// ---- the command line ---------------------------------------------------------------------

/// `claude-context`, as a command to give arguments.
fn bin() -> Command {
    Command::new(crate::harness::bin())
}

/// A transcript of ours with large tool results, in a project holding the files it read.
fn our_transcript(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("src/cart.ts"),
        "export function applyCoupon() {}\n",
    )
    .unwrap();
    std::fs::write(dir.join("secret.txt"), "not for the model\n").unwrap();
    let mut w = Writer::create(
        &dir.join("state"),
        SessionMeta {
            session_id: "cli-session".into(),
            cwd: project.display().to_string(),
            git_branch: "main".into(),
        },
    )
    .unwrap();
    w.user(&Message::user("Find the coupon bug.")).unwrap();
    for (i, file) in ["src/cart.ts", "../secret.txt", "src/cart.ts"]
        .iter()
        .enumerate()
    {
        let id = format!("t{i}");
        let mut a = Message::assistant(vec![Block::ToolUse(ToolUse {
            id: id.clone(),
            name: "Read".into(),
            input: json!({"file_path": project.join(file).display().to_string()}),
        })]);
        a.id = Some(format!("m{i}"));
        a.stop_reason = Some(StopReason::ToolUse);
        a.usage = Some(Usage::default());
        w.assistant(&a).unwrap();
        w.user(&Message::user_blocks(vec![Block::tool_result(
            &id,
            "z".repeat(20_000),
            i == 1,
        )]))
        .unwrap();
    }
    w.user(&Message::user("Is it \u{1b}[31mfixed\u{1b}[0m?"))
        .unwrap();
    let mut done = Message::assistant(vec![Block::text("Not yet: applyCoupon runs twice.")]);
    done.id = Some("m9".into());
    done.stop_reason = Some(StopReason::EndTurn);
    w.assistant(&done).unwrap();
    w.path().to_path_buf()
}

#[test]
fn the_cli_compacts_our_transcript_and_a_resume_continues_from_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let path = our_transcript(dir.path());
    let before = std::fs::read(&path).unwrap();

    let dry = bin()
        .args(["compact", path.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let text = String::from_utf8(dry.stdout).unwrap();
    assert!(text.starts_with("Would compact "), "{text}");
    assert!(text.contains("dry run: nothing written"));
    assert!(text.contains("   - Find the coupon bug.\n"));
    assert!(
        text.contains("Is it \u{fffd}[31mfixed"),
        "escape sequences are not sent to the terminal"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a dry run writes nothing"
    );

    let out = bin()
        .args([
            "compact",
            path.to_str().unwrap(),
            "--focus",
            "applyCoupon",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mode"], "full");
    assert_eq!(v["written"], true);
    assert_eq!(v["preservedUserMessages"], 2);
    assert!(v["tokensAfter"].as_u64().unwrap() < v["tokensBefore"].as_u64().unwrap() / 3);
    // Only the file inside the project was read back in.
    assert_eq!(
        v["reinjectedFiles"],
        json!([dir.path().join("project/src/cart.ts").display().to_string()])
    );

    let replay = Transcript::read(&path).unwrap().replay();
    let first = &replay.history[0];
    let Block::Text(t) = &first.content[0] else {
        panic!()
    };
    assert_eq!(t.origin, Origin::Summary);
    assert!(
        t.text
            .contains("Focus asked for when compacting: applyCoupon")
    );
    assert!(
        !serde_json::to_string(&replay.history)
            .unwrap()
            .contains("not for the model")
    );
    assert_eq!(
        replay.compaction.unwrap().user_messages,
        ["Find the coupon bug.", "Is it \u{1b}[31mfixed\u{1b}[0m?"]
    );
    assert_eq!(replay.history.last().unwrap().role, Role::Assistant);
    assert_eq!(
        replay.history.last().unwrap().text(),
        "Not yet: applyCoupon runs twice."
    );
    // The file grew by the compaction only: what was there is untouched.
    assert_eq!(std::fs::read(&path).unwrap()[..before.len()], before[..]);
}

#[test]
fn the_cli_reads_the_reference_cli_transcripts_and_never_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/reference-cli/projects/-home-me-work-shop");
    for name in [
        "7f3c2a10-5d2e-4b7a-9c61-2f0e8d4b1a77.jsonl",
        "c14ea43d-a0b3-40b1-bf31-93b87f46f303.jsonl",
    ] {
        let path = dir.path().join(name);
        std::fs::copy(sample.join(name), &path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let out = bin()
            .args(["compact", path.to_str().unwrap(), "--json", "--dry-run"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["readOnly"], true);
        assert_eq!(v["written"], false);
        let summary = v["summary"].as_str().unwrap();
        let six = summary::section6(summary);
        if name.starts_with("7f3c") {
            assert!(six.contains(
                "The checkout total is wrong when a coupon is applied twice. Find out why."
            ));
            assert!(
                !six.contains("Search the tests for coupon cases."),
                "a subagent's prompt is not the user's"
            );
        } else {
            // What the reference CLI's own summary kept is carried forward, and the messages
            // after it; the rewound branch ("jest") is not part of the history.
            assert!(six.contains("Fix the double coupon bug in src/cart.ts."));
            assert!(six.contains("vitest, please") && !six.contains("   - jest"));
        }
        // Without --dry-run: shown, still not written.
        let out = bin()
            .args(["compact", path.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.code() == Some(0) {
            assert!(
                text.contains("not written: the reference CLI's transcripts are read-only"),
                "{text}"
            );
        } else {
            assert_eq!(out.status.code(), Some(1));
            assert!(String::from_utf8_lossy(&out.stderr).contains("compaction failed"));
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} untouched");
    }
}

#[test]
fn the_cli_says_what_is_wrong_with_its_arguments() {
    let out = bin().args(["compact"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("which transcript"));
    let out = bin()
        .args(["compact", "/nonexistent/x.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.jsonl"));
    let out = bin().args(["compact", "a", "b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
