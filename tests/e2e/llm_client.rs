//! The model client against the fake Anthropic server over real HTTP on 127.0.0.1: a streamed
//! answer, what is sent, and every fault kind of quality R4 (429 with retry-after, 529, 500, a
//! reset mid-stream, malformed SSE, a stall, 401/400), each retried or reported clearly, with
//! nothing that arrived lost. Also cancellation, and that the key shows up nowhere (R6).
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use crate::fake_anthropic;
use std::time::{Duration, Instant};

use claude_context::conversation::{Block, Message, StopReason};
use claude_context::llm::{
    self, CancellationToken, ErrorKind, Event, HttpProvider, Provider, Request, RetryPolicy,
    SystemBlock, anthropic,
};
use fake_anthropic::{FakeAnthropic, Reply, Turn};
use futures::StreamExt;
use serde_json::json;

const KEY: &str = "sk-ant-test-R6-0000-known-fake-key-never-to-be-seen";

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
    }
}

fn client_at(base_url: &str, policy: RetryPolicy) -> HttpProvider {
    let base_url = base_url.to_string();
    let config = anthropic::Config::from_env(
        |k| match k {
            "ANTHROPIC_API_KEY" => Some(KEY.to_string()),
            "ANTHROPIC_BASE_URL" => Some(base_url.clone()),
            _ => None,
        },
        None,
    )
    .unwrap();
    anthropic::provider(config, policy).unwrap()
}

fn client(server: &FakeAnthropic) -> HttpProvider {
    client_at(&server.base_url(), policy())
}

/// Runs one turn to its end: every event, and the final message or error.
async fn run(p: &dyn Provider, messages: &[Message]) -> (Vec<Event>, Result<Message, llm::Error>) {
    run_with(p, messages, CancellationToken::new()).await
}

async fn run_with(
    p: &dyn Provider,
    messages: &[Message],
    cancel: CancellationToken,
) -> (Vec<Event>, Result<Message, llm::Error>) {
    let mut stream = p.stream(&Request::new("claude-fake-1", 1024, messages), cancel);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::Done(m)) => {
                assert!(stream.next().await.is_none(), "Done is the last item");
                return (events, Ok(m));
            }
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(stream.next().await.is_none(), "an error is the last item");
                return (events, Err(e));
            }
        }
    }
    panic!("the stream ended without Done or an error");
}

fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[Event]) -> Vec<(u32, Duration)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Retrying { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect()
}

fn hello() -> Vec<Message> {
    vec![Message::user("Say hello")]
}

#[tokio::test]
async fn a_turn_streams_text_and_ends_with_the_whole_message() {
    let server = FakeAnthropic::start().await;
    server.push(
        Turn::new()
            .text("Hello! How can I help with your project today?")
            .usage(30, 12, 100, 2000),
    );
    let (events, done) = run(&client(&server), &hello()).await;
    let m = done.unwrap();
    assert_eq!(m.text(), "Hello! How can I help with your project today?");
    assert_eq!(
        streamed_text(&events),
        m.text(),
        "the deltas add up to the message"
    );
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TextDelta { .. }))
            .count()
            > 3,
        "streamed in pieces"
    );
    assert!(events.contains(&Event::Ping));
    assert_eq!(m.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(m.id.as_deref(), Some("msg_fake_01"));
    let usage = m.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_input_tokens
        ),
        (30, 12, 2000)
    );
    assert!(retries(&events).is_empty());

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.header("anthropic-beta"),
        None,
        "no beta unless a feature needs it"
    );
    assert!(
        r.header("user-agent")
            .unwrap()
            .starts_with("claude-context/")
    );
    let body = r.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "claude-fake-1");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}}]}])
    );
}

#[tokio::test]
async fn a_tool_call_arrives_whole_and_the_next_turn_sends_its_result() {
    let server = FakeAnthropic::start().await;
    let input = json!({"file_path": "/work/project/src/main.rs", "offset": 10, "limit": 40});
    server.push(
        Turn::new()
            .thinking("Look at main first.", "sig-abc")
            .text("Let me read it.")
            .tool_use("toolu_01", "Read", input.clone())
            .piece(5),
    );
    server.push(Turn::new().id("msg_fake_02").text("main() only prints."));
    let p = client(&server);
    let mut history = vec![Message::user("What does main do?")];
    let (events, first) = run(&p, &history).await;
    let first = first.unwrap();
    assert_eq!(first.stop_reason, Some(StopReason::ToolUse));
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ToolInputDelta { .. }))
            .count()
            > 5,
        "the input came in input_json_delta pieces"
    );
    let call = first.tool_uses().next().unwrap().clone();
    assert_eq!(
        (call.id.as_str(), call.name.as_str(), &call.input),
        ("toolu_01", "Read", &input)
    );
    let Block::Thinking(t) = &first.content[0] else {
        panic!("{first:?}")
    };
    assert_eq!(t.signature, "sig-abc");

    history.push(first);
    history.push(Message::user_blocks(vec![Block::tool_result(
        "toolu_01",
        "    10\tfn main() {}",
        false,
    )]));
    let mut request = Request::new("claude-fake-1", 1024, &history);
    request.system = vec![SystemBlock {
        text: "You are a coding assistant.".into(),
        cache: true,
    }];
    let mut stream = p.stream(&request, CancellationToken::new());
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item.unwrap());
    }
    let Some(Event::Done(second)) = last else {
        panic!()
    };
    assert_eq!(second.text(), "main() only prints.");

    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][0]["type"], "thinking",
        "signed thinking goes back"
    );
    assert_eq!(messages[1]["content"][2]["input"], input);
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_01");
    assert_eq!(
        messages[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn rate_limited_waits_as_long_as_retry_after_says() {
    let server = FakeAnthropic::start().await;
    server.push(
        Reply::error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        )
        .retry_after("1"),
    );
    server.push(Turn::new().text("Hi"));
    let started = Instant::now();
    let (events, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap().text(), "Hi");
    assert_eq!(retries(&events), vec![(2, Duration::from_secs(1))]);
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let gap = sent[1].at - sent[0].at;
    assert!(gap >= Duration::from_millis(950), "waited {gap:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    let Event::Retrying { cause, .. } = events
        .iter()
        .find(|e| matches!(e, Event::Retrying { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert!(cause.contains("429 rate_limit_error"), "{cause}");
}

#[tokio::test]
async fn retry_after_ms_is_honoured_too() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(429, "rate_limit_error", "slow down").header("retry-after-ms", "300"));
    server.push(Turn::new().text("Hi"));
    let (events, done) = run(&client(&server), &hello()).await;
    assert!(done.is_ok());
    assert_eq!(retries(&events), vec![(2, Duration::from_millis(300))]);
}

#[tokio::test]
async fn overloaded_and_server_errors_are_retried_with_backoff() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(529, "overloaded_error", "Overloaded"));
    server.push(Reply::error(500, "api_error", "Internal server error"));
    server.push(Reply::raw(502, "text/html", "<html>Bad Gateway</html>"));
    server.push(Turn::new().text("Finally"));
    let (events, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap().text(), "Finally");
    let r = retries(&events);
    assert_eq!(r.iter().map(|(a, _)| *a).collect::<Vec<_>>(), vec![2, 3, 4]);
    for (i, (_, delay)) in r.iter().enumerate() {
        let base = Duration::from_millis(10 * (1 << i)).min(Duration::from_millis(40));
        assert!(
            *delay >= base && *delay <= base.mul_f64(1.25),
            "try {i}: {delay:?}"
        );
    }
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn overloaded_on_every_try_is_a_clear_error_after_five() {
    let server = FakeAnthropic::start().await;
    for _ in 0..5 {
        server.push(Reply::error(529, "overloaded_error", "Overloaded"));
    }
    let (events, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Overloaded);
    assert_eq!(e.attempts, 5);
    assert_eq!(e.status, Some(529));
    assert_eq!(
        e.to_string(),
        "the model API is overloaded (529 overloaded_error): Overloaded (after 5 tries) [request req_fake_529]"
    );
    assert_eq!(retries(&events).len(), 4);
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test]
async fn a_refused_request_is_not_retried_and_says_what_the_api_said() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    let (events, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Rejected);
    assert!(e.is_auth());
    assert_eq!(e.message, "invalid x-api-key");
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), 1);

    server.push(Reply::error(
        400,
        "invalid_request_error",
        "max_tokens: 100000 > 64000, which is the maximum",
    ));
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the model API refused the request (400 invalid_request_error): max_tokens: 100000 > 64000, which is the maximum [request req_fake_400]"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    let server = FakeAnthropic::start().await;
    server.push(
        Reply::error(500, "api_error", "do not retry this").header("x-should-retry", "false"),
    );
    let (_, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap_err().attempts, 1);
    server.push(
        Reply::error(400, "invalid_request_error", "transient").header("x-should-retry", "true"),
    );
    server.push(Turn::new().text("ok"));
    let (_, done) = run(&client(&server), &hello()).await;
    assert!(done.is_ok());
}

#[tokio::test]
async fn a_stream_reset_mid_answer_is_retried_and_the_partial_kept() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new()
        .text("The answer has several parts that stream slowly.")
        .piece(6);
    // message_start, block start, 4 deltas (and a ping), then a reset.
    server.push(Reply::from(turn.clone()).reset_after(7));
    server.push(turn);
    let (events, done) = run(&client(&server), &hello()).await;
    let m = done.unwrap();
    assert_eq!(m.text(), "The answer has several parts that stream slowly.");
    let restarted: Vec<&Message> = events
        .iter()
        .filter_map(|e| match e {
            Event::Restarted { partial, .. } => Some(partial),
            _ => None,
        })
        .collect();
    assert_eq!(restarted.len(), 1);
    assert_eq!(
        restarted[0].text(),
        "The answer has several p",
        "what arrived before the cut"
    );
    assert_eq!(
        restarted[0].stop_reason, None,
        "marked partial: no stop reason"
    );
    let after_restart = events
        .iter()
        .position(|e| matches!(e, Event::Restarted { .. }))
        .unwrap();
    assert_eq!(
        streamed_text(&events[after_restart..]),
        m.text(),
        "the retry streams the whole answer"
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.requests()[0].body,
        server.requests()[1].body,
        "retried from the same request"
    );
}

#[tokio::test]
async fn a_clean_end_without_message_stop_is_a_cut_too() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new().text("Complete answer.");
    server.push(Reply::from(turn.clone()).end_after(4));
    server.push(turn);
    let (events, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap().text(), "Complete answer.");
    assert!(events.iter().any(|e| matches!(e, Event::Restarted { .. })));
}

#[tokio::test]
async fn malformed_events_are_retried_then_a_clear_error() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new().text("Fine.");
    server.push(Reply::from(turn.clone()).garbage_after(3));
    server.push(turn);
    let (events, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap().text(), "Fine.");
    assert_eq!(retries(&events).len(), 1);

    for _ in 0..5 {
        server.push(Reply::from(Turn::new().text("x")).garbage_after(1));
    }
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(
        e.message
            .starts_with("malformed event stream: event `content_block_delta` is not valid"),
        "{e}"
    );
}

#[tokio::test]
async fn a_stalled_stream_is_detected_by_the_idle_timeout_and_retried() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new().text("Slow then fast.");
    server.push(Reply::from(turn.clone()).stall_after(4, Duration::from_secs(30)));
    server.push(turn);
    let p = client_at(
        &server.base_url(),
        RetryPolicy {
            idle_timeout: Duration::from_millis(400),
            ..policy()
        },
    );
    let started = Instant::now();
    let (events, done) = run(&p, &hello()).await;
    assert_eq!(done.unwrap().text(), "Slow then fast.");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let Some(Event::Restarted { cause, partial }) =
        events.iter().find(|e| matches!(e, Event::Restarted { .. }))
    else {
        panic!("{events:?}")
    };
    assert!(cause.contains("stalled"), "{cause}");
    assert_eq!(partial.text(), "Slow the");
}

#[tokio::test]
async fn a_request_never_answered_times_out_and_is_retried() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::Hang);
    server.push(Turn::new().text("Here now."));
    let p = client_at(
        &server.base_url(),
        RetryPolicy {
            idle_timeout: Duration::from_millis(300),
            ..policy()
        },
    );
    let (events, done) = run(&p, &hello()).await;
    assert_eq!(done.unwrap().text(), "Here now.");
    assert_eq!(retries(&events).len(), 1);
}

#[tokio::test]
async fn an_error_event_inside_the_stream() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new().text("Partly there.");
    server.push(Reply::from(turn.clone()).error_event_after(4, "overloaded_error", "Overloaded"));
    server.push(turn);
    let (events, done) = run(&client(&server), &hello()).await;
    assert_eq!(done.unwrap().text(), "Partly there.");
    assert!(
        events.iter().any(|e| matches!(e, Event::Restarted { .. })),
        "the partial is reported"
    );

    server.push(Reply::from(Turn::new().text("x")).error_event_after(
        2,
        "invalid_request_error",
        "prompt is too long",
    ));
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Rejected, 1));
    assert_eq!(e.message, "prompt is too long");
}

#[tokio::test]
async fn a_stream_cut_on_every_try_fails_with_the_last_partial() {
    let server = FakeAnthropic::start().await;
    for _ in 0..3 {
        server.push(
            Reply::from(Turn::new().text("Always cut here and there.").piece(4)).reset_after(4),
        );
    }
    let p = client_at(
        &server.base_url(),
        RetryPolicy {
            max_attempts: 3,
            ..policy()
        },
    );
    let (events, done) = run(&p, &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Connection);
    assert_eq!(e.attempts, 3);
    assert_eq!(
        e.partial.as_ref().map(|m| m.text()).as_deref(),
        Some("Alwa")
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Restarted { .. }))
            .count(),
        2
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_we_wait_fails_at_once_with_the_figure() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(429, "rate_limit_error", "Daily limit reached").retry_after("3600"));
    let started = Instant::now();
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert!(e.message.contains("wait 3600 s"), "{e}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn not_an_event_stream_is_a_clear_error() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::raw(
        200,
        "text/html",
        "<html>Captive portal: log in first</html>",
    ));
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(
        e.message.contains("text/html") && e.message.contains("Captive portal"),
        "{e}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error_after_every_try() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = client_at(
        &format!("http://127.0.0.1:{port}"),
        RetryPolicy {
            max_attempts: 3,
            ..policy()
        },
    );
    let (events, done) = run(&p, &hello()).await;
    let e = done.unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Connection, 3));
    assert!(
        e.message.starts_with("cannot connect: connection failed"),
        "{e}"
    );
    assert!(
        !e.message.contains("127.0.0.1"),
        "no URL in the message: {e}"
    );
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn cancel_mid_stream_stops_at_once_with_what_arrived() {
    let server = FakeAnthropic::start().await;
    server.push(
        Reply::from(
            Turn::new()
                .text("This answer is long and slow, one piece every 50 ms.")
                .piece(4),
        )
        .pace(Duration::from_millis(50)),
    );
    let p = client(&server);
    let history = hello();
    let cancel = CancellationToken::new();
    let mut stream = p.stream(&Request::new("m", 100, &history), cancel.clone());
    let mut seen = String::new();
    let mut cancelled_at = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::TextDelta { text, .. }) => {
                seen.push_str(&text);
                if seen.len() >= 8 && cancelled_at.is_none() {
                    cancel.cancel();
                    cancelled_at = Some(Instant::now());
                }
            }
            Ok(_) => {}
            Err(e) => {
                let waited = cancelled_at.unwrap().elapsed();
                assert!(
                    waited < Duration::from_millis(250),
                    "cancel took {waited:?}"
                );
                assert_eq!(e.kind, ErrorKind::Cancelled);
                assert_eq!(
                    e.partial.unwrap().text(),
                    seen,
                    "the partial is what was shown"
                );
                break;
            }
        }
    }
    assert!(stream.next().await.is_none());
    drop(stream);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.client_gone(),
        1,
        "the connection was dropped, not read to the end"
    );
}

#[tokio::test]
async fn cancel_during_a_backoff_wait_is_immediate() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(429, "rate_limit_error", "wait").retry_after("4"));
    let p = client(&server);
    let history = hello();
    let cancel = CancellationToken::new();
    let mut stream = p.stream(&Request::new("m", 100, &history), cancel.clone());
    let Some(Ok(Event::Retrying { delay, .. })) = stream.next().await else {
        panic!()
    };
    assert_eq!(delay, Duration::from_secs(4));
    let started = Instant::now();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let Some(Err(e)) = stream.next().await else {
        panic!()
    };
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn bytes_cut_anywhere_decode_the_same() {
    let server = FakeAnthropic::start().await;
    let turn = Turn::new()
        .thinking("héllo 🌍 thinking", "sig")
        .text("Ünïcödé answer 🚀 done.")
        .piece(3);
    for n in [1, 2, 3, 7, 64] {
        server.push(Reply::from(turn.clone()).split_every(n));
    }
    let p = client(&server);
    for _ in 0..5 {
        let (_, done) = run(&p, &hello()).await;
        assert_eq!(done.unwrap().text(), "Ünïcödé answer 🚀 done.");
    }
}

#[tokio::test]
async fn the_connection_is_reused_for_the_next_turn() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::new().text("one"));
    server.push(Turn::new().text("two"));
    let p = client(&server);
    run(&p, &hello()).await.1.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    run(&p, &hello()).await.1.unwrap();
    assert_eq!(
        server.connections(),
        1,
        "no new connection (and no new TLS handshake) per turn"
    );
}

/// R6 groundwork: a proxy that echoes the key in an error body, every fault kind, and every
/// event and error printed: the key appears nowhere but in the one header that carries it.
#[tokio::test]
async fn the_key_appears_nowhere_but_its_header() {
    let server = FakeAnthropic::start().await;
    server.push(Reply::raw(
        502,
        "text/plain",
        &format!("proxy: upstream refused x-api-key: {KEY}"),
    ));
    server.push(Reply::error(
        403,
        "permission_error",
        &format!("key {KEY} is not allowed"),
    ));
    let p = client_at(
        &server.base_url(),
        RetryPolicy {
            max_attempts: 2,
            ..policy()
        },
    );
    let (events, done) = run(&p, &hello()).await;
    let e = done.unwrap_err();
    let mut printed = format!("{e}\n{e:?}\n{events:?}\n{p:?}\n");
    assert!(e.message.contains("[redacted]"), "{e}");

    for reply in [
        Reply::from(Turn::new().text("cut")).reset_after(3),
        Reply::from(Turn::new().text("bad")).garbage_after(2),
        Reply::error(429, "rate_limit_error", "slow").retry_after("999"),
    ] {
        server.push(reply);
        let (events, done) = run(
            &client_at(
                &server.base_url(),
                RetryPolicy {
                    max_attempts: 1,
                    ..policy()
                },
            ),
            &hello(),
        )
        .await;
        printed.push_str(&format!("{events:?}\n{done:?}\n"));
    }
    let config = anthropic::Config::from_env(
        |k| (k == "ANTHROPIC_API_KEY").then(|| KEY.to_string()),
        None,
    )
    .unwrap();
    printed.push_str(&format!("{config:?}\n"));
    assert!(!printed.contains(KEY), "the key leaked:\n{printed}");
    assert!(
        !printed.contains("known-fake-key"),
        "part of the key leaked:\n{printed}"
    );
    for r in server.requests() {
        let raw = r.raw_text();
        assert_eq!(
            raw.matches(KEY).count(),
            1,
            "only the x-api-key header carries it"
        );
        assert_eq!(r.header("x-api-key"), Some(KEY));
    }
}

/// The OpenAI-compatible provider shares the HTTP side: streaming, a retried 503, what is sent.
#[tokio::test]
async fn an_openai_compatible_server_streams_through_the_same_client() {
    use fake_anthropic::Frame;
    use llm::openai;
    let server = FakeAnthropic::start().await;
    server.push(Reply::error(503, "server_error", "model is loading"));
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        Frame::data(&json!({"id": "chatcmpl-1", "model": "qwen", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
    };
    server.push(Reply::frames(vec![
        chunk(json!({"role": "assistant", "content": "Hel"}), json!(null)),
        chunk(json!({"content": "lo!"}), json!(null)),
        chunk(json!({}), json!("stop")),
        Frame::data(&json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}).to_string()),
        Frame::data("[DONE]"),
    ]));
    let p = openai::provider(
        openai::Config {
            base_url: format!("{}/v1", server.base_url()),
            api_key: None,
            proxy: Default::default(),
        },
        policy(),
    )
    .unwrap();
    let (events, done) = run(&p, &hello()).await;
    let m = done.unwrap();
    assert_eq!(m.text(), "Hello!");
    assert_eq!(m.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(m.usage.unwrap().output_tokens, 2);
    assert_eq!(retries(&events).len(), 1);
    let sent = server.requests();
    assert_eq!(sent[1].path, "/v1/chat/completions");
    assert_eq!(sent[1].header("authorization"), None);
    assert_eq!(
        sent[1].json()["messages"],
        json!([{"role": "user", "content": "Say hello"}])
    );
}

/// The TLS stack (rustls with ring, the platform's roots) starts and fails cleanly: an https
/// address whose server answers in plain text is a connection error that names the TLS failure.
#[tokio::test]
async fn https_to_a_server_that_does_not_speak_tls_is_a_clear_connection_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let p = client_at(
        &format!("https://{addr}"),
        RetryPolicy {
            max_attempts: 2,
            ..policy()
        },
    );
    let (_, done) = run(&p, &hello()).await;
    let e = done.unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Connection, 2), "{e}");
    assert!(
        e.message.contains("received corrupt message"),
        "the TLS failure is named: {e}"
    );
}

/// A synchronous test (like one driving the binary over stdio) gets a server on its own runtime.
#[test]
fn the_fake_server_runs_without_the_test_s_runtime() {
    use std::io::{Read, Write};
    let server = FakeAnthropic::spawn();
    server.push(Turn::new().text("sync"));
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let body = r#"{"model":"m","messages":[]}"#;
    write!(s, "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut reply = String::new();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 4096];
    while !reply.contains("message_stop") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{reply}");
        reply.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(reply.contains("content-type: text/event-stream"));
    assert!(reply.contains("event: content_block_delta\ndata: {"));
    assert_eq!(server.requests()[0].json()["model"], "m");
}

/// R6 over a whole turn: the key reaches neither the transcript (even when a tool result prints
/// the environment) nor any event or error.
#[tokio::test]
async fn a_session_s_transcript_never_holds_the_key() {
    use claude_context::session::transcript::{PartialReason, SessionMeta, Writer};
    let server = FakeAnthropic::start().await;
    server.push(
        Reply::from(Turn::new().text("Let me check the environment.").tool_use(
            "t1",
            "Bash",
            json!({"command": "env"}),
        ))
        .reset_after(4),
    );
    server.push(Turn::new().text("Let me check the environment.").tool_use(
        "t1",
        "Bash",
        json!({"command": "env"}),
    ));
    server.push(Reply::error(
        400,
        "invalid_request_error",
        &format!("bad header {KEY}"),
    ));
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(
        dir.path(),
        SessionMeta {
            session_id: "r6".into(),
            cwd: "/p".into(),
            git_branch: "main".into(),
        },
    )
    .unwrap();
    w.scrub(llm::Secret::new(KEY));
    let p = client(&server);
    let mut history = vec![Message::user("what is in my environment?")];
    w.user(&history[0]).unwrap();
    let mut printed = String::new();
    let mut stream = p.stream(&Request::new("m", 100, &history), CancellationToken::new());
    while let Some(item) = stream.next().await {
        printed.push_str(&format!("{item:?}\n"));
        match item.unwrap() {
            Event::Restarted { partial, cause } => {
                w.partial(&partial, PartialReason::Retried, &cause).unwrap();
            }
            Event::Done(m) => {
                w.assistant(&m).unwrap();
                history.push(m);
            }
            _ => {}
        }
    }
    let result = Message::user_blocks(vec![Block::tool_result(
        "t1",
        format!("HOME=/home/me\nANTHROPIC_API_KEY={KEY}\n"),
        false,
    )]);
    w.user(&result).unwrap();
    history.push(result);
    let (events, done) = run(&p, &history).await;
    let e = done.unwrap_err();
    printed.push_str(&format!("{events:?}\n{e}\n{e:?}\n"));
    let transcript = std::fs::read_to_string(w.path()).unwrap();
    assert!(
        transcript.contains("\"partial\":{\"reason\":\"retried\""),
        "the cut answer is kept"
    );
    assert!(transcript.contains("ANTHROPIC_API_KEY=[redacted]"));
    assert!(!transcript.contains(KEY), "{transcript}");
    assert!(!printed.contains(KEY), "{printed}");
}

/// Proxies come from the caller: a request to an address that does not resolve goes through the
/// HTTP proxy it names (here the fake server, which sees the absolute URL), and a turn streams.
#[tokio::test]
async fn an_http_proxy_given_by_the_caller_is_used() {
    let server = FakeAnthropic::start().await;
    server.push(Turn::new().text("via proxy"));
    let proxy = server.base_url();
    let config = anthropic::Config::from_env(
        |k| match k {
            "ANTHROPIC_API_KEY" => Some(KEY.to_string()),
            "ANTHROPIC_BASE_URL" => Some("http://api.example.invalid".to_string()),
            "http_proxy" => Some(proxy.clone()),
            _ => None,
        },
        None,
    )
    .unwrap();
    let p = anthropic::provider(config, policy()).unwrap();
    assert!(!format!("{p:?}").contains(KEY));
    let (_, done) = run(&p, &hello()).await;
    assert_eq!(done.unwrap().text(), "via proxy");
    assert_eq!(
        server.requests()[0].path,
        "http://api.example.invalid/v1/messages"
    );
}

/// Issue 16, finding 6: a server that ignores `max_tokens` and streams without end (an answer,
/// a memory review, a summary: every request goes through here) is stopped at the answer's cap,
/// with an error that says so and the partial answer bounded; it is not retried.
#[tokio::test]
async fn an_endless_stream_stops_at_the_answers_cap() {
    let server = FakeAnthropic::start().await;
    let delta = fake_anthropic::Frame::new(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "z".repeat(4096)}}),
    );
    server.push(Reply::frames(Turn::new().text("a").frames()).endless_after(2, delta));
    let (_, done) = run(&client(&server), &hello()).await;
    let e = done.unwrap_err();
    assert!(e.message.contains("max_tokens"), "{e}");
    let partial = e.partial.expect("what arrived is kept").text();
    let cap = claude_context::llm::answer_cap(1024);
    assert!(
        partial.len() > cap / 2 && partial.len() <= cap + 4096,
        "{}",
        partial.len()
    );
    assert_eq!(server.requests().len(), 1, "not retried");
}
