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
    /// These events, one at a time with a pause before each (as a paced stream arrives).
    /// The events one at a time, this long apart.
    Paced(std::time::Duration, Vec<Event>, Message),
}

#[derive(Default)]
struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    /// The requests' encoded bodies.
    seen: Mutex<Vec<serde_json::Value>>,
    /// When set, every summary request (compaction) gets this answer, out of the script.
    summary: Mutex<Option<Message>>,
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
        let is_summary = request
            .messages
            .last()
            .is_some_and(|m| m.text().contains("All User Messages"));
        if is_summary && let Some(m) = self.summary.lock().unwrap().clone() {
            return futures::stream::iter([Ok(Event::Done(m))]).boxed();
        }
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
            Step::Paced(gap, events, m) => futures::stream::iter(events)
                .then(move |e| async move {
                    tokio::time::sleep(gap).await;
                    Ok(e)
                })
                .chain(futures::stream::iter([Ok(Event::Done(m))]))
                .boxed(),
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
            defer_loading: false,
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
            ..ToolOutput::default()
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
    // Their first message now starts with the instructions block (as the reference CLI's own
    // --resume sends it again), then their text.
    let texts: Vec<&str> = ours
        .iter()
        .map(|r| {
            let c = r["message"]["content"].as_array().unwrap();
            c.last().unwrap()["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(texts, ["Their question", "Their answer", "Mine", "Ours"]);
    let first = ours[0]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(first.contains("Be brief."), "{first}");
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

// ---- compaction in the session ------------------------------------------------------------

/// A tool runner whose `Read` and `Query` results are 6,000 bytes (1,500 tokens, 2,000 padded).
/// `Read` is compactable; `Query` (any other tool) is not.
struct BigRunner;

impl ToolRunner for BigRunner {
    fn specs(&self) -> Vec<llm::ToolSpec> {
        ["Read", "Query"]
            .iter()
            .map(|n| llm::ToolSpec {
                name: n.to_string(),
                description: format!("{n}."),
                input_schema: json!({"type": "object"}),
                defer_loading: false,
            })
            .collect()
    }

    fn run<'a>(
        &'a self,
        call: &'a ToolUse,
        _cx: ToolContext<'a>,
    ) -> futures::future::BoxFuture<'a, ToolOutput> {
        let out = ToolOutput {
            content: format!("{}: {}", call.name, "y".repeat(6_000)),
            is_error: false,
            touched: Vec::new(),
            ..ToolOutput::default()
        };
        Box::pin(async move { out })
    }
}

fn call(id: &str, name: &str) -> Message {
    let mut m = Message::assistant(vec![Block::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({"file_path": "a.ts"}),
    })]);
    m.stop_reason = Some(StopReason::ToolUse);
    m
}

/// A nine-section summary whose section 6 lists `users` (the model "forgot" the others).
fn summary(users: &[&str]) -> Message {
    let six: String = users.iter().map(|u| format!("- {u}\n")).collect();
    answer(
        &format!(
            "<analysis>thinking</analysis>\n<summary>\n1. Primary Request and Intent:\n   Fix the coupon bug.\n2. Key Technical Concepts:\n   - TypeScript\n3. Files and Code Sections:\n   - a.ts\n4. Errors and fixes:\n   - none\n5. Problem Solving:\n   Reading.\n6. All user messages:\n{six}7. Pending Tasks:\n   - fix it\n8. Current Work:\n   Reading a.ts.\n9. Optional Next Step:\n   Read more.\n</summary>"
        ),
        usage(1, 1),
    )
}

/// A window of 30,000 with 2,000 kept for the answer (threshold 15,000, blocking 25,000);
/// masking keeps the newest result.
fn small_policy() -> crate::compact::Policy {
    let config = ModelConfig {
        max_tokens: 2_000,
        ..ModelConfig::default()
    };
    compaction::policy(
        &Host::for_tests(Path::new("/h")),
        &config,
        &crate::compact::Settings {
            window: Some(30_000),
            keep_recent: Some(1),
            ..crate::compact::Settings::default()
        },
    )
    .0
}

/// Records what the compaction observer heard.
#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl compaction::Observer for Heard {
    fn started<'a>(&'a self, title: &'a str) -> futures::future::BoxFuture<'a, ()> {
        self.0.lock().unwrap().push(format!("started: {title}"));
        Box::pin(async {})
    }
    fn finished(&self) -> futures::future::BoxFuture<'_, ()> {
        self.0.lock().unwrap().push("finished".into());
        Box::pin(async {})
    }
    fn breaker_tripped<'a>(&'a self, message: &'a str) -> futures::future::BoxFuture<'a, ()> {
        self.0.lock().unwrap().push(format!("breaker: {message}"));
        Box::pin(async {})
    }
}

/// A session with compaction under `policy`, instructions re-read as "Re-read." and the
/// observer `heard`.
fn compacting(f: &Fixture, policy: crate::compact::Policy, heard: Arc<Heard>) -> Session {
    let s = f.session();
    let c = compaction::AutoCompact::new(policy, f.root.clone(), Arc::new(RealFs), {
        let host = f.host.clone();
        Arc::new(move || host.now())
    })
    .with_reread(Arc::new(|| compaction::Blocks {
        instructions: Some("<system-reminder>\nRe-read.\n</system-reminder>".into()),
        git: None,
    }))
    .with_observer(heard);
    s.set_compaction(Arc::new(c));
    s
}

fn is_summary_request(body: &serde_json::Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m.to_string().contains("All User Messages"))
}

#[tokio::test]
async fn a_session_over_a_small_window_masks_first_then_summarises_once_and_loses_no_user_message()
{
    let mut f = fixture();
    f.model.config.max_tokens = 2_000;
    f.tools = Some(Box::new(BigRunner));
    let heard = Arc::new(Heard::default());
    let s = compacting(&f, small_policy(), heard.clone());
    let typed: Vec<String> = (0..12)
        .map(|i| format!("Message {i}: look at part {i} of the coupon code."))
        .collect();
    let mut events = Vec::new();
    let mut sent = 0;
    // Each turn: two tool calls (a compactable Read, a Query that is never cleared), then text,
    // until the turn after the first summary.
    for (i, t) in typed.iter().enumerate() {
        f.push(Step::Answer(Vec::new(), call(&format!("r{i}"), "Read")));
        f.push(Step::Answer(Vec::new(), call(&format!("q{i}"), "Query")));
        // No usage: the count is the padded estimate of everything.
        let mut done = answer(&format!("Turn {i} done."), usage(1, 1));
        done.usage = None;
        f.push(Step::Answer(Vec::new(), done));
        let summarised_before = events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { mode, .. } if mode == "full"));
        // Wherever the summary request falls, it gets a summary that lists only the first
        // message (section 6 is completed by the session).
        let (outcome, ev) = run_with_summaries(&f, &s, text(t), &[&typed[0]]).await;
        assert_eq!(outcome, Outcome::Completed, "turn {i}: {ev:?}");
        events.extend(ev);
        sent = i + 1;
        if summarised_before {
            break;
        }
    }
    let typed = &typed[..sent];
    let modes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Compacted { mode, .. } => Some(mode.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        modes.first().map(String::as_str),
        Some("micro"),
        "{modes:?}"
    );
    assert_eq!(
        modes.iter().filter(|m| *m == "full").count(),
        1,
        "one summary: {modes:?}"
    );
    let seen = f.provider.seen.lock().unwrap().clone();
    let summaries: Vec<&serde_json::Value> =
        seen.iter().filter(|b| is_summary_request(b)).collect();
    assert_eq!(summaries.len(), 1);
    // The summary request shares the session's system blocks and tools.
    assert_eq!(summaries[0]["system"], seen[0]["system"]);
    assert_eq!(summaries[0]["tools"], seen[0]["tools"]);
    // Every user message is in the history the next request sends: verbatim, or in section 6.
    let history = s.history();
    let all = serde_json::to_string(&history).unwrap();
    for t in typed {
        assert!(all.contains(t.as_str()), "{t:?} lost");
    }
    assert!(all.contains("Re-read."), "the instructions were re-read");
    assert!(
        heard
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.starts_with("started")),
        "{:?}",
        heard.0.lock().unwrap()
    );
    // The transcript resumes to the same history (once the running session let go of it).
    let (id, ctx) = (s.id().to_string(), s.snapshot().ctx.clone());
    let preserved = s.compaction().unwrap().compactor().preserved.len();
    drop(s);
    let resumed = f.store.resume(&f.host, ctx, &id, &f.model, 30_000).unwrap();
    assert_eq!(resumed.session.history(), history);
    assert_eq!(resumed.compaction.preserved.len(), preserved);
}

/// Runs a turn, answering every summary request (whenever it comes) with a summary listing
/// `listed`; other requests take the scripted steps in order.
async fn run_with_summaries(
    f: &Fixture,
    s: &Session,
    out: Outgoing,
    listed: &[&str],
) -> (Outcome, Vec<ChatEvent>) {
    *f.provider.summary.lock().unwrap() = Some(summary(listed));
    let r = f.turn(s, out).await;
    *f.provider.summary.lock().unwrap() = None;
    r
}

#[tokio::test]
async fn three_summaries_in_a_row_without_a_summary_stop_automatic_compaction_and_say_so() {
    let mut f = fixture();
    f.model.config.max_tokens = 2_000;
    f.tools = Some(Box::new(BigRunner));
    let heard = Arc::new(Heard::default());
    let s = compacting(&f, small_policy(), heard.clone());
    let mut failed_summary = answer("I would rather not summarise.", usage(1, 1));
    failed_summary.usage = None;
    let summaries = || {
        f.provider
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|b| is_summary_request(b))
            .count()
    };
    // Query results are never cleared: the count climbs past the threshold and stays there.
    let mut tripped_at = None;
    for i in 0..14 {
        f.push(Step::Answer(Vec::new(), call(&format!("q{i}"), "Query")));
        let mut done = answer("ok", usage(1, 1));
        done.usage = None;
        f.push(Step::Answer(Vec::new(), done));
        *f.provider.summary.lock().unwrap() = Some(failed_summary.clone());
        let (outcome, ev) = f.turn(&s, text(&format!("Query part {i}."))).await;
        assert_eq!(outcome, Outcome::Completed, "turn {i}: {ev:?}");
        if tripped_at.is_none()
            && heard
                .0
                .lock()
                .unwrap()
                .iter()
                .any(|h| h.starts_with("breaker"))
        {
            tripped_at = Some(i);
        }
        if tripped_at.is_some_and(|t| i >= t + 2) {
            break;
        }
    }
    assert!(
        tripped_at.is_some(),
        "the breaker never tripped: {:?}",
        heard.0.lock().unwrap()
    );
    assert_eq!(summaries(), 3, "three tries, then none");
    let heard = heard.0.lock().unwrap().clone();
    let breaker: Vec<&String> = heard.iter().filter(|h| h.starts_with("breaker")).collect();
    assert_eq!(breaker.len(), 1, "{heard:?}");
    assert!(breaker[0].contains("Automatic compaction is off for this session"));
    assert!(
        breaker[0].contains("focus hint"),
        "says what to do: {}",
        breaker[0]
    );
    assert_eq!(s.compaction().unwrap().compactor().breaker.failures(), 3);
}

#[tokio::test]
async fn a_dry_run_changes_nothing_and_a_manual_run_summarises_with_the_focus_hint() {
    let mut f = fixture();
    f.model.config.max_tokens = 2_000;
    f.tools = Some(Box::new(BigRunner));
    let heard = Arc::new(Heard::default());
    let s = compacting(&f, small_policy(), heard.clone());
    for i in 0..2 {
        f.push(Step::Answer(Vec::new(), call(&format!("r{i}"), "Read")));
        let mut read = answer("read", usage(1, 1));
        read.usage = None;
        f.push(Step::Answer(Vec::new(), read));
        f.turn(&s, text(&format!("Read part {i}."))).await;
    }
    let c = s.compaction().unwrap().clone();
    let specs = BigRunner.specs();
    let before = s.history();
    // Far below the threshold: the session sends without handing the hook a copy.
    assert!(!c.needed(&before, &s.snapshot().system(), &specs));
    let transcript = std::fs::read(s.journal().path()).unwrap();
    let requests = f.provider.seen.lock().unwrap().len();

    for mode in [crate::compact::Mode::Micro, crate::compact::Mode::Full] {
        let report = c
            .run(
                &s,
                &f.model,
                &specs,
                crate::compact::RunRequest {
                    mode,
                    focus: None,
                    dry_run: true,
                },
                None,
            )
            .await
            .unwrap();
        assert!(report.dry_run);
        assert!(report.tokens_after < report.tokens_before, "{report:?}");
        assert_eq!(report.preserved_user_messages, 2);
        if mode == crate::compact::Mode::Micro {
            assert_eq!(report.cleared.len(), 1, "the newest result is kept");
        }
    }
    assert_eq!(s.history(), before, "the history is unchanged");
    assert_eq!(std::fs::read(s.journal().path()).unwrap(), transcript);
    assert_eq!(
        f.provider.seen.lock().unwrap().len(),
        requests,
        "no model call"
    );

    // A message cannot be sent while a compaction holds the session.
    {
        let _busy = s.exclusive("compact").unwrap();
        assert!(matches!(
            s.prepare(&RealFs, text("hello")),
            Err(SendError::Busy { turn_id }) if turn_id.starts_with("compact-")
        ));
    }

    *f.provider.summary.lock().unwrap() = Some(summary(&["Read part 0."]));
    let report = c
        .run(
            &s,
            &f.model,
            &specs,
            crate::compact::RunRequest {
                mode: crate::compact::Mode::Full,
                focus: Some("keep the coupon API"),
                dry_run: false,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(report.mode, crate::compact::Ran::Full);
    assert!(
        report.summary.as_deref().unwrap().contains("Read part 1."),
        "section 6 completed"
    );
    let seen = f.provider.seen.lock().unwrap().clone();
    let ask = seen.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(ask.contains("Additional Instructions:") && ask.contains("keep the coupon API"));
    assert_eq!(
        heard.0.lock().unwrap().as_slice(),
        ["started: Compacting the conversation", "finished"]
    );
    // The history now starts from the summary; the transcript has the boundary first.
    let history = s.history();
    assert!(
        history[0]
            .content
            .iter()
            .any(|b| matches!(b, Block::Text(t) if t.origin == Origin::Summary))
    );
    let records = records(&s.journal().path());
    assert!(records.iter().any(|r| r["subtype"] == "compact_boundary"));
    // The next request sends that history.
    f.push(Step::Answer(Vec::new(), answer("Continuing.", usage(1, 1))));
    f.turn(&s, text("Go on.")).await;
    let last = f.provider.seen.lock().unwrap().last().unwrap().clone();
    assert!(
        last["messages"][0]
            .to_string()
            .contains("This session continues"),
        "{}",
        last["messages"][0]
    );
}

/// The text events of a turn, in order, as (block, text).
fn text_events(events: &[ChatEvent]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Text { index, text } => Some((*index, text.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn deltas_that_arrived_together_go_out_as_one_event_and_a_paced_stream_waits_for_nothing() {
    let f = fixture();
    let s = f.session();
    // A burst: 2,000 deltas ready at once (one network read), then a second block.
    let pieces: Vec<String> = (0..2000).map(|i| format!("w{i} ")).collect();
    let mut burst = deltas(&pieces);
    burst.push(Event::ThinkingDelta {
        index: 1,
        text: "hm".into(),
    });
    burst.push(Event::TextDelta {
        index: 2,
        text: "tail".into(),
    });
    f.push(Step::Answer(burst, answer(&pieces.concat(), usage(5, 0))));
    let (outcome, events) = f.turn(&s, text("burst")).await;
    assert_eq!(outcome, Outcome::Completed);
    let texts = text_events(&events);
    assert_eq!(
        texts.len(),
        2,
        "one event per block: {} events",
        texts.len()
    );
    assert_eq!(texts[0], (0, pieces.concat()), "nothing lost, in order");
    assert_eq!(texts[1], (2, "tail".to_string()), "blocks are never merged");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Thinking { index: 1, text } if text == "hm"))
    );

    // A paced stream, no interval asked (the default): every delta goes out as it comes, none
    // waits for the next (the server adds no latency: the spec's P9).
    let paced: Vec<String> = (0..20).map(|i| format!("p{i} ")).collect();
    f.push(Step::Paced(
        std::time::Duration::from_millis(2),
        deltas(&paced),
        answer(&paced.concat(), usage(5, 0)),
    ));
    let (_, events) = f.turn(&s, text("paced")).await;
    let texts = text_events(&events);
    assert_eq!(texts.len(), 20);
    assert_eq!(
        texts.into_iter().map(|(_, t)| t).collect::<String>(),
        paced.concat()
    );
}

/// `chat.deltaIntervalMs` (an editor that redraws once a frame asks for 16): a fast stream goes
/// out at most once per interval, the first piece at once; a piece after a quiet spell at once.
#[tokio::test]
async fn with_an_interval_deltas_go_out_at_most_once_per_interval() {
    let mut f = fixture();
    f.model.config.delta_interval = std::time::Duration::from_millis(16);
    let s = f.session();
    let paced: Vec<String> = (0..20).map(|i| format!("p{i} ")).collect();
    f.push(Step::Paced(
        std::time::Duration::from_millis(2),
        deltas(&paced),
        answer(&paced.concat(), usage(5, 0)),
    ));
    let (_, events) = f.turn(&s, text("paced")).await;
    let texts = text_events(&events);
    assert_eq!(texts[0].1, "p0 ", "the first delta waits for nothing");
    assert!(
        texts.len() <= 10,
        "{} events for 20 deltas in ~40 ms",
        texts.len()
    );
    assert_eq!(
        texts.into_iter().map(|(_, t)| t).collect::<String>(),
        paced.concat()
    );

    // A slow stream (a delta every 40 ms, longer than the interval): each goes out as it comes.
    let slow: Vec<String> = (0..6).map(|i| format!("s{i} ")).collect();
    f.push(Step::Paced(
        std::time::Duration::from_millis(40),
        deltas(&slow),
        answer(&slow.concat(), usage(5, 0)),
    ));
    let (_, events) = f.turn(&s, text("slow")).await;
    let texts = text_events(&events);
    assert_eq!(
        texts.into_iter().map(|(_, t)| t).collect::<Vec<_>>(),
        slow,
        "no delta is held back for one that comes after the interval"
    );
}

#[tokio::test]
async fn a_merged_event_stays_under_its_cap() {
    let f = fixture();
    let s = f.session();
    let pieces: Vec<String> = (0..40).map(|_| "x".repeat(4096)).collect();
    f.push(Step::Answer(
        deltas(&pieces),
        answer(&pieces.concat(), usage(5, 0)),
    ));
    let (_, events) = f.turn(&s, text("big")).await;
    let texts = text_events(&events);
    assert!(texts.len() >= 3, "{} events", texts.len());
    assert!(texts.iter().all(|(_, t)| t.len() <= 64 * 1024 + 4096));
    assert_eq!(
        texts.into_iter().map(|(_, t)| t).collect::<String>(),
        pieces.concat()
    );
}
