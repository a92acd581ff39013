//! The session against a scripted provider (no network): what reaches the transcript and the
//! history, in what order, for a plain turn, a cancel, a cut stream, a failure, a tool call
//! the session cannot run, and resume.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::conversation::{Block, Message, Origin, StopReason, ToolUse, Usage};
use crate::fs::RealFs;
use crate::host::Host;
use crate::llm::{
    self, BlockKind, CancellationToken, ErrorKind, Event, EventStream, Provider, Request,
};

/// One scripted answer.
enum Step {
    /// These events, then the answer.
    Answer(Vec<Event>, Message),
    /// Text deltas, then wait for the cancel (the error carries what arrived).
    UntilCancel(Vec<String>),
    /// A failure after these deltas.
    Fail(Vec<String>, ErrorKind),
}

#[derive(Default)]
struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    /// The requests' encoded bodies.
    seen: Mutex<Vec<serde_json::Value>>,
}

fn answer(text: &str, usage: Usage) -> Message {
    let mut m = Message::assistant(vec![Block::text(text)]);
    m.id = Some("msg_1".into());
    m.stop_reason = Some(StopReason::EndTurn);
    m.usage = Some(usage);
    m
}

fn deltas(text: &[String]) -> Vec<Event> {
    let mut v = vec![Event::BlockStart {
        index: 0,
        kind: BlockKind::Text,
    }];
    v.extend(text.iter().map(|t| Event::TextDelta {
        index: 0,
        text: t.clone(),
    }));
    v
}

fn partial(text: &[String]) -> Option<Box<Message>> {
    (!text.is_empty()).then(|| Box::new(Message::assistant(vec![Block::text(text.concat())])))
}

fn err(kind: ErrorKind, partial: Option<Box<Message>>) -> llm::Error {
    llm::Error {
        kind,
        message: "scripted".into(),
        status: Some(500),
        api_type: None,
        request_id: None,
        attempts: 1,
        partial,
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: &Request<'_>, cancel: CancellationToken) -> EventStream {
        self.seen
            .lock()
            .unwrap()
            .push(serde_json::from_slice(&llm::anthropic::encode(request)).unwrap());
        let step = self
            .steps
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted step");
        match step {
            Step::Answer(mut events, m) => {
                events.push(Event::Done(m));
                futures::stream::iter(events.into_iter().map(Ok)).boxed()
            }
            Step::UntilCancel(text) => {
                let events = deltas(&text);
                let p = partial(&text);
                futures::stream::iter(events.into_iter().map(Ok))
                    .chain(futures::stream::once(async move {
                        cancel.cancelled().await;
                        Err(err(ErrorKind::Cancelled, p))
                    }))
                    .boxed()
            }
            Step::Fail(text, kind) => {
                let p = partial(&text);
                futures::stream::iter(deltas(&text).into_iter().map(Ok))
                    .chain(futures::stream::once(async move { Err(err(kind, p)) }))
                    .boxed()
            }
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    host: Host,
    store: Store,
    provider: Arc<Scripted>,
    model: Model,
    tools: Option<Box<dyn ToolRunner>>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("p");
    std::fs::create_dir_all(root.join(".claude/rules")).unwrap();
    std::fs::write(root.join("CLAUDE.md"), "Be brief.\n").unwrap();
    std::fs::write(
        root.join(".claude/rules/ts.md"),
        "---\npaths: \"**/*.ts\"\n---\nTS rule.\n",
    )
    .unwrap();
    std::fs::write(root.join("a.ts"), "let a = 1;\n").unwrap();
    let host = Host::for_tests(&base.join("home"));
    let store = Store {
        state_dir: base.join("state"),
        claude_dir: Some(base.join("home/.claude")),
    };
    let provider = Arc::new(Scripted::default());
    let model = Model {
        provider: provider.clone(),
        config: ModelConfig::default(),
        secret: Some(llm::Secret::new("sk-test-secret-value-0123456789")),
    };
    Fixture {
        _dir: dir,
        root,
        host,
        store,
        provider,
        model,
        tools: None,
    }
}

impl Fixture {
    fn session(&self) -> Session {
        let opts = self.host.context_options(&self.root, &[], None).unwrap();
        let ctx = Arc::new(crate::context::build(&RealFs, &opts));
        self.store
            .start(&self.host, ctx, None, &self.model, 200_000)
    }

    fn push(&self, step: Step) {
        self.provider.steps.lock().unwrap().push_back(step);
    }

    async fn turn(&self, s: &Session, out: Outgoing) -> (Outcome, Vec<ChatEvent>) {
        let prepared = s.prepare(&RealFs, out).unwrap();
        self.run(s, prepared).await
    }

    async fn run(&self, s: &Session, prepared: Prepared) -> (Outcome, Vec<ChatEvent>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let deps = Deps {
            model: &self.model,
            tools: self.tools.as_deref(),
            hook: None,
            fs: &RealFs,
        };
        let outcome = s.run(prepared, deps, &tx).await;
        drop(tx);
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        (outcome, events)
    }
}

fn text(s: &str) -> Outgoing {
    Outgoing {
        text: s.into(),
        ..Outgoing::default()
    }
}

fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn usage(input: u64, read: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: read,
    }
}

#[tokio::test]
async fn a_turn_writes_the_message_before_the_request_and_streams_the_answer() {
    let f = fixture();
    let s = f.session();
    assert!(!s.journal().exists(), "no file before the first message");
    let prepared = s.prepare(&RealFs, text("Hello")).unwrap();
    // The message is on disk before any request exists.
    let r = records(&s.journal().path());
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["type"], "user");
    assert!(f.provider.seen.lock().unwrap().is_empty());
    // One turn at a time.
    assert!(matches!(
        s.prepare(&RealFs, text("again")),
        Err(SendError::Busy { .. })
    ));

    f.push(Step::Answer(
        deltas(&["Hi ".into(), "there".into()]),
        answer("Hi there", usage(5, 1000)),
    ));
    let (outcome, events) = f.run(&s, prepared).await;
    assert_eq!(outcome, Outcome::Completed);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hi there");
    assert!(
        matches!(events.last(), Some(ChatEvent::Done { outcome: Outcome::Completed, stop_reason: Some(r) }) if r == "end_turn")
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Usage(u) if u.context_tokens == 1015))
    );

    // The first request: two cached system blocks, instructions block, text.
    let body = f.provider.seen.lock().unwrap()[0].clone();
    assert_eq!(body["system"].as_array().unwrap().len(), 2);
    let content = body["messages"][0]["content"].as_array().unwrap();
    assert!(content[0]["text"].as_str().unwrap().contains("Be brief."));
    assert_eq!(content.last().unwrap()["text"], "Hello");
    assert_eq!(
        content.last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );

    let r = records(&s.journal().path());
    assert_eq!(
        r.iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["user", "assistant"]
    );
    assert_eq!(s.history().len(), 2);
    assert!(s.running().is_none(), "idle again");
    // The count is the usage plus an estimate of what came since.
    let v = s.view();
    assert_eq!(v.count.tokens, 1015);
    assert_eq!(v.count.last_usage.unwrap().cache_read_input_tokens, 1000);
    // The key never reaches the transcript.
    let raw = std::fs::read_to_string(s.journal().path()).unwrap();
    assert!(!raw.contains("sk-test-secret-value"));
}

#[tokio::test]
async fn an_open_file_attaches_its_rule_before_the_instructions_once() {
    let f = fixture();
    let s = f.session();
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    let out = Outgoing {
        text: "Look".into(),
        open: vec![f.root.join("a.ts")],
        ..Outgoing::default()
    };
    let (_, events) = f.turn(&s, out.clone()).await;
    assert!(matches!(&events[0], ChatEvent::Attachment { path, .. } if path.ends_with("ts.md")));
    let body = f.provider.seen.lock().unwrap()[0].clone();
    let content = body["messages"][0]["content"].as_array().unwrap();
    let first = content[0]["text"].as_str().unwrap();
    assert!(
        first.starts_with("<system-reminder>\nContents of "),
        "{first}"
    );
    assert!(
        first.ends_with("TS rule.\n\n</system-reminder>\n"),
        "{first:?}"
    );
    assert!(content[1]["text"].as_str().unwrap().contains("Be brief."));
    // Open again in the next message: nothing attaches twice.
    let (_, events) = f.turn(&s, out).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ChatEvent::Attachment { .. }))
    );
    let body = f.provider.seen.lock().unwrap()[1].clone();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_cancel_keeps_the_partial_answer_marked_and_tells_the_model() {
    let f = fixture();
    let s = Arc::new(f.session());
    f.push(Step::UntilCancel(vec!["Part".into(), "ial".into()]));
    let prepared = s.prepare(&RealFs, text("Long please")).unwrap();
    let cancel = prepared.cancel.clone();
    let s2 = s.clone();
    let canceller = tokio::spawn(async move {
        while s2.running().is_none() {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let (outcome, events) = f.run(&s, prepared).await;
    canceller.await.unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    assert!(matches!(
        events.last(),
        Some(ChatEvent::Done {
            outcome: Outcome::Cancelled,
            ..
        })
    ));
    let r = records(&s.journal().path());
    assert_eq!(r[1]["partial"]["reason"], "cancelled");
    assert_eq!(r[1]["message"]["content"][0]["text"], "Partial");
    let h = s.history();
    assert_eq!(h[1].text(), "Partial");
    assert_eq!(
        h[2].content,
        [Block::injected(Origin::Interruption, chat::INTERRUPTED)]
    );
    // The session goes on.
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    let (outcome, _) = f.turn(&s, text("Next")).await;
    assert_eq!(outcome, Outcome::Completed);
}

#[tokio::test]
async fn a_failure_is_reported_kept_and_the_session_goes_on() {
    let f = fixture();
    let s = f.session();
    f.push(Step::Fail(vec!["Half".into()], ErrorKind::Server));
    let (outcome, events) = f.turn(&s, text("Q")).await;
    assert_eq!(outcome, Outcome::Failed);
    let e = events
        .iter()
        .find_map(|e| match e {
            ChatEvent::Error(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((e.error_kind.as_str(), e.status), ("server", Some(500)));
    assert!(e.message.contains("scripted"));
    let r = records(&s.journal().path());
    assert_eq!(r[1]["partial"]["reason"], "failed");
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    assert_eq!(f.turn(&s, text("Again")).await.0, Outcome::Completed);
}

#[tokio::test]
async fn a_cut_stream_keeps_its_partial_off_the_history() {
    let f = fixture();
    let s = f.session();
    let cut = Message::assistant(vec![Block::text("Fir")]);
    f.push(Step::Answer(
        vec![
            Event::TextDelta {
                index: 0,
                text: "Fir".into(),
            },
            Event::Restarted {
                partial: cut,
                cause: "connection reset".into(),
            },
            Event::TextDelta {
                index: 0,
                text: "First".into(),
            },
        ],
        answer("First", usage(1, 1)),
    ));
    let (outcome, events) = f.turn(&s, text("Q")).await;
    assert_eq!(outcome, Outcome::Completed);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Error(r) if r.restart))
    );
    let r = records(&s.journal().path());
    assert_eq!(r[1]["partial"]["reason"], "retried");
    assert_eq!(r[2]["message"]["content"][0]["text"], "First");
    assert_eq!(s.history().len(), 2);
    assert_eq!(s.history()[1].text(), "First");
}

/// A runner that answers every call with the file name it was given (for the loop's sake).
struct EchoRunner;

impl ToolRunner for EchoRunner {
    fn specs(&self) -> Vec<llm::ToolSpec> {
        vec![llm::ToolSpec {
            name: "Echo".into(),
            description: "Echoes.".into(),
            input_schema: json!({"type": "object"}),
        }]
    }

    fn run<'a>(
        &'a self,
        call: &'a ToolUse,
        cx: ToolContext<'a>,
    ) -> futures::future::BoxFuture<'a, ToolOutput> {
        let file = call.input["file_path"].as_str().unwrap_or_default();
        let out = ToolOutput {
            content: format!("echo {file}"),
            is_error: false,
            touched: vec![cx.root.join(file)],
        };
        Box::pin(async move { out })
    }
}

fn tool_call() -> Message {
    let mut call = Message::assistant(vec![Block::ToolUse(ToolUse {
        id: "toolu_1".into(),
        name: "Read".into(),
        input: json!({"file_path": "a.ts"}),
    })]);
    call.stop_reason = Some(StopReason::ToolUse);
    call
}

#[tokio::test]
async fn without_a_runner_no_tool_is_offered_and_a_call_is_never_answered_with_a_made_up_result() {
    let f = fixture();
    let s = f.session();
    f.push(Step::Answer(Vec::new(), tool_call()));
    let (outcome, events) = f.turn(&s, text("Read it")).await;
    assert_eq!(outcome, Outcome::Completed);
    let first = f.provider.seen.lock().unwrap()[0].clone();
    assert!(first.get("tools").is_none(), "no tools offered: {first}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::ToolUse { name, .. } if name == "Read"))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ChatEvent::ToolResult { .. }))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Error(r) if r.message.contains("offers no tools")))
    );
    assert_eq!(
        f.provider.seen.lock().unwrap().len(),
        1,
        "no second request"
    );
    // The next message first closes the open call, saying it did not run.
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    f.turn(&s, text("Never mind")).await;
    let second = f.provider.seen.lock().unwrap()[1].clone();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["is_error"], true);
    assert!(
        msgs[2]["content"][0]["content"]
            .to_string()
            .contains("did not run")
    );
}

#[tokio::test]
async fn a_runner_gets_the_calls_and_its_results_go_back_with_the_touched_files_rules() {
    let mut f = fixture();
    f.tools = Some(Box::new(EchoRunner));
    let s = f.session();
    f.push(Step::Answer(Vec::new(), tool_call()));
    f.push(Step::Answer(Vec::new(), answer("Done", usage(1, 1))));
    let (outcome, events) = f.turn(&s, text("Read it")).await;
    assert_eq!(outcome, Outcome::Completed);
    assert!(events.iter().any(|e| matches!(e, ChatEvent::ToolResult { content, is_error: false, .. } if content == "echo a.ts")));
    let seen = f.provider.seen.lock().unwrap();
    assert_eq!(seen[0]["tools"][0]["name"], "Echo");
    let results = &seen[1]["messages"].as_array().unwrap()[2]["content"];
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    // a.ts was touched by the tool: its rule follows the result.
    assert!(
        results[1]["text"].as_str().unwrap().contains("TS rule."),
        "{results}"
    );
    assert_eq!(s.history().len(), 4);
}

#[tokio::test]
async fn resume_rebuilds_the_history_and_a_reference_session_continues_in_a_new_file() {
    let f = fixture();
    let s = f.session();
    f.push(Step::Answer(Vec::new(), answer("A1", usage(3, 4))));
    f.turn(&s, text("Q1")).await;
    let history = s.history();
    let id = s.id().to_string();
    drop(s);

    let opts = f.host.context_options(&f.root, &[], None).unwrap();
    let ctx = Arc::new(crate::context::build(&RealFs, &opts));
    let r = f
        .store
        .resume(&f.host, ctx.clone(), &id, &f.model, 200_000)
        .unwrap();
    assert_eq!(r.session.history(), history);
    assert!(r.session.snapshot().resumed);
    assert_eq!(r.session.view().count.last_usage.unwrap().input_tokens, 3);
    f.push(Step::Answer(Vec::new(), answer("A2", usage(1, 1))));
    f.turn(&r.session, text("Q2")).await;
    // The second request continues the first, with no second instructions block.
    let body = f.provider.seen.lock().unwrap()[1].clone();
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 1);
    assert_eq!(records(&r.session.journal().path()).len(), 4);

    // A reference CLI session: read, continued under a new id, its file untouched.
    let reference = f.store.reference(&ctx.cwd).unwrap();
    std::fs::create_dir_all(&reference).unwrap();
    let theirs = reference.join("0b9d1f3e-1111-2222-3333-444455556666.jsonl");
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        json!({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "0b9d1f3e-1111-2222-3333-444455556666",
               "version": "2.1.12", "timestamp": "2025-07-01T12:00:00.000Z",
               "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let raw = format!(
        "{}\n{}\n",
        line("u1", None, "user", "Their question"),
        line("a1", Some("u1"), "assistant", "Their answer")
    );
    std::fs::write(&theirs, &raw).unwrap();
    let r = f
        .store
        .resume(
            &f.host,
            ctx,
            "0b9d1f3e-1111-2222-3333-444455556666",
            &f.model,
            200_000,
        )
        .unwrap();
    assert_ne!(r.session.id(), "0b9d1f3e-1111-2222-3333-444455556666");
    assert_eq!(
        r.continues.as_deref(),
        Some("0b9d1f3e-1111-2222-3333-444455556666")
    );
    assert_eq!(r.session.history().len(), 2);
    f.push(Step::Answer(Vec::new(), answer("Ours", usage(1, 1))));
    f.turn(&r.session, text("Mine")).await;
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        raw,
        "never written"
    );
    let ours = records(&r.session.journal().path());
    let texts: Vec<&str> = ours
        .iter()
        .map(|r| r["message"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Their question", "Their answer", "Mine", "Ours"]);
    assert!(
        ours.iter()
            .all(|r| r["version"].as_str().unwrap().starts_with("claude-context"))
    );
}

/// Records whether the session was idle when `done` went out.
struct IdleAtDone(Arc<Session>, Mutex<Option<bool>>);

impl Events for IdleAtDone {
    fn emit(&self, event: ChatEvent) -> futures::future::BoxFuture<'_, ()> {
        if matches!(event, ChatEvent::Done { .. }) {
            *self.1.lock().unwrap() = Some(self.0.running().is_none());
        }
        Box::pin(async {})
    }
}

#[tokio::test]
async fn the_session_takes_the_next_message_as_soon_as_done_goes_out() {
    let f = fixture();
    let s = Arc::new(f.session());
    f.push(Step::Answer(Vec::new(), answer("ok", usage(1, 1))));
    let prepared = s.prepare(&RealFs, text("Q")).unwrap();
    let events = IdleAtDone(s.clone(), Mutex::new(None));
    let deps = Deps {
        model: &f.model,
        tools: None,
        hook: None,
        fs: &RealFs,
    };
    s.run(prepared, deps, &events).await;
    assert_eq!(*events.1.lock().unwrap(), Some(true));
}

/// A session with a memory directory and the extractor as its after-turn hook.
fn with_memory(f: &Fixture) -> (Session, Arc<super::memory::Extractor>, std::path::PathBuf) {
    let dir = f
        .root
        .parent()
        .unwrap()
        .join("home/.claude/projects/p/memory");
    let mut opts = f.host.context_options(&f.root, &[], None).unwrap();
    opts.auto_memory = true;
    opts.memory_dir = Some(dir.clone());
    let ctx = Arc::new(crate::context::build(&RealFs, &opts));
    let s = f.store.start(&f.host, ctx, None, &f.model, 200_000);
    let e = Arc::new(super::memory::Extractor::new(crate::tasks::Tasks::new(
        tokio::runtime::Handle::current(),
    )));
    s.set_after_turn(e.clone());
    (s, e, dir)
}

#[tokio::test]
async fn a_turn_that_wrote_memory_itself_is_not_reviewed_and_the_next_one_is() {
    let mut f = fixture();
    f.tools = Some(Box::new(EchoRunner));
    let (s, extractor, dir) = with_memory(&f);
    let settle = || extractor.settle(s.id(), std::time::Duration::from_secs(10));
    // Turn 1: the model saves a memory itself (a tool call naming the memory directory).
    let mut call = tool_call();
    if let Block::ToolUse(t) = &mut call.content[0] {
        t.input = json!({"file_path": dir.join("user_role.md")});
    }
    f.push(Step::Answer(Vec::new(), call));
    f.push(Step::Answer(Vec::new(), answer("Saved.", usage(1, 1))));
    let (outcome, _) = f.turn(&s, text("Remember that I review every PR.")).await;
    assert_eq!(outcome, Outcome::Completed);
    settle().await;
    assert_eq!(
        f.provider.seen.lock().unwrap().len(),
        2,
        "no extraction request"
    );

    // Turn 2: reviewed, and only its own two messages are new.
    f.push(Step::Answer(Vec::new(), answer("Sure.", usage(1, 1))));
    f.push(Step::Answer(
        Vec::new(),
        answer(
            r#"[{"type":"user","name":"reviewer","description":"Reviews every PR","content":"The user reviews every pull request."}]"#,
            usage(1, 1),
        ),
    ));
    f.turn(&s, text("I also merge them.")).await;
    settle().await;
    let seen = f.provider.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    let ask = seen[3]["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("the last 2 messages"), "{ask}");
    // The same system blocks and tools as the session's own requests.
    assert_eq!(seen[3]["system"], seen[2]["system"]);
    assert_eq!(seen[3]["tools"], seen[2]["tools"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        "- [reviewer](reviewer.md) — Reviews every PR\n"
    );
}

#[tokio::test]
async fn a_turn_that_ends_on_a_pending_tool_call_or_a_failure_is_not_reviewed() {
    let f = fixture();
    let (s, extractor, _dir) = with_memory(&f);
    // No runner: the model's call stays pending.
    f.push(Step::Answer(Vec::new(), tool_call()));
    f.turn(&s, text("Read it")).await;
    f.push(Step::Fail(vec!["par".into()], ErrorKind::Server));
    let (outcome, _) = f.turn(&s, text("again")).await;
    assert_eq!(outcome, Outcome::Failed);
    extractor
        .settle(s.id(), std::time::Duration::from_secs(10))
        .await;
    assert_eq!(f.provider.seen.lock().unwrap().len(), 2);
}
