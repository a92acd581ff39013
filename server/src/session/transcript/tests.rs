//! Transcripts on real files in temp dirs: what a record holds, resume rebuilding exactly the
//! history a running session would send (partials, masking, compaction), torn and damaged
//! lines, and where files go.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::conversation::{self, Block, Message, Origin, StopReason, Thinking, ToolUse, Usage};
use crate::llm::Secret;

fn meta(id: &str) -> SessionMeta {
    SessionMeta {
        session_id: id.to_string(),
        cwd: "/home/me/project".to_string(),
        git_branch: "main".to_string(),
    }
}

fn answer(text: &str, id: &str) -> Message {
    let mut m = Message::assistant(vec![Block::text(text)]);
    m.id = Some(id.to_string());
    m.model = Some("claude-fake-1".to_string());
    m.stop_reason = Some(StopReason::EndTurn);
    m.usage = Some(Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 1000,
    });
    m
}

fn tool_call(id: &str, name: &str) -> Message {
    let mut m = Message::assistant(vec![
        Block::Thinking(Thinking {
            thinking: "need the file".into(),
            signature: "sig".into(),
        }),
        Block::ToolUse(ToolUse {
            id: id.into(),
            name: name.into(),
            input: json!({"file_path": "/home/me/project/a.rs"}),
        }),
    ]);
    m.id = Some(format!("msg_{id}"));
    m.stop_reason = Some(StopReason::ToolUse);
    m
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A session as a running one would drive it; returns its history as it would send it next.
fn drive(w: &mut Writer) -> Vec<Message> {
    let mut history = Vec::new();
    let first = Message::user_blocks(vec![
        Block::injected(
            Origin::Instructions,
            "Contents of /home/me/project/CLAUDE.md: use tabs",
        ),
        Block::injected(Origin::Git, "gitStatus: clean"),
        Block::text("read a.rs"),
    ]);
    w.user(&first).unwrap();
    history.push(first);
    let call = tool_call("t1", "Read");
    w.assistant(&call).unwrap();
    history.push(call);
    let result = Message::user_blocks(vec![
        Block::tool_result("t1", "     1\tfn a() {}\n".repeat(50), false),
        Block::injected(
            Origin::Attachment,
            "<system-reminder>rule for *.rs</system-reminder>",
        ),
    ]);
    w.user(&result).unwrap();
    history.push(result);
    // A stream cut and retried: the partial stays off the history.
    let mut cut = Message::assistant(vec![Block::text("a() does noth")]);
    cut.id = Some("msg_cut".into());
    w.partial(&cut, PartialReason::Retried, "the stream was cut")
        .unwrap();
    let done = answer("a() does nothing.", "msg_2");
    w.assistant(&done).unwrap();
    history.push(done);
    // Masking the old result.
    w.microcompact(&["t1".to_string()], 400).unwrap();
    conversation::mask_tool_results(&mut history, &HashSet::from(["t1"]));
    let ask = Message::user("now explain b");
    w.user(&ask).unwrap();
    history.push(ask);
    // The user cancels mid-answer: the sendable part stays.
    let mut cancelled = Message::assistant(vec![
        Block::text("b() is"),
        Block::ToolUse(ToolUse {
            id: "t2".into(),
            name: "Grep".into(),
            input: json!("{\"pat"),
        }),
    ]);
    cancelled.id = Some("msg_3".into());
    w.partial(
        &cancelled,
        PartialReason::Cancelled,
        "cancelled by the user",
    )
    .unwrap();
    history.push(cancelled.sendable_partial().unwrap());
    let again = Message::user("never mind");
    w.user(&again).unwrap();
    history.push(again);
    history
}

#[test]
fn records_have_the_reference_shape_and_chain() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(&dir.path().join("projects/-home-me-project"), meta("s-1")).unwrap();
    drive(&mut w);
    let path = w.path().to_path_buf();
    assert_eq!(path, dir.path().join("projects/-home-me-project/s-1.jsonl"));
    let records = lines(&path);
    assert_eq!(records.len(), 9);
    for (i, r) in records.iter().enumerate() {
        for field in [
            "type",
            "uuid",
            "timestamp",
            "sessionId",
            "cwd",
            "gitBranch",
            "version",
        ] {
            assert!(r.get(field).is_some(), "record {i} lacks {field}: {r}");
        }
        assert!(
            r.get("parentUuid").is_some(),
            "parentUuid is always written (null at a start)"
        );
        assert_eq!(r["sessionId"], "s-1");
        assert!(r["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(records[0]["parentUuid"], Value::Null);
    assert_eq!(records[1]["parentUuid"], records[0]["uuid"]);
    assert_eq!(
        records[0]["message"]["content"][0]["origin"],
        "instructions"
    );
    assert_eq!(
        records[0]["message"]["content"][2],
        json!({"type": "text", "text": "read a.rs"})
    );
    assert_eq!(
        records[3]["partial"],
        json!({"reason": "retried", "cause": "the stream was cut"})
    );
    assert_eq!(
        records[4]["parentUuid"], records[2]["uuid"],
        "the retry's answer replaces the partial"
    );
    assert_eq!(records[5]["type"], "system");
    assert_eq!(records[5]["subtype"], "microcompact");
    assert_eq!(records[5]["toolUseIds"], json!(["t1"]));
    assert_eq!(records[7]["partial"]["reason"], "cancelled");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let d = std::fs::metadata(path.parent().unwrap()).unwrap();
        assert_eq!(d.permissions().mode() & 0o777, 0o700);
    }
}

#[test]
fn resume_rebuilds_exactly_the_history_a_running_session_would_send() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-2")).unwrap();
    let expected = drive(&mut w);
    let leaf = w.leaf().map(str::to_string);
    let t = Transcript::read(w.path()).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let replay = t.replay();
    assert_eq!(replay.history, expected);
    assert_eq!(replay.leaf, leaf);
    assert_eq!(replay.last_usage.unwrap().cache_read_input_tokens, 1000);
    let Block::ToolResult(r) = &replay.history[2].content[0] else {
        panic!()
    };
    assert_eq!(
        r.text(),
        conversation::CLEARED_TEXT,
        "the masking is replayed"
    );
    assert_eq!(
        conversation::user_authored_texts(&replay.history),
        vec!["read a.rs", "now explain b", "never mind"]
    );

    // Continuing the transcript chains onto the same history (one writer at a time).
    let path = w.path().to_path_buf();
    drop(w);
    let mut w = Writer::append(&path, &t, meta("s-2")).unwrap();
    let more = Message::user("one more");
    let id = w.user(&more).unwrap();
    let replay = Transcript::read(w.path()).unwrap().replay();
    assert_eq!(replay.history.len(), expected.len() + 1);
    assert_eq!(replay.history.last(), Some(&more));
    assert_eq!(replay.leaf.as_deref(), Some(id.as_str()));
}

#[test]
fn a_compaction_starts_the_history_over_from_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-3")).unwrap();
    drive(&mut w);
    let before = w.leaf().unwrap().to_string();
    w.compact_boundary("auto", 155_000).unwrap();
    let summary = Message::user_blocks(vec![Block::injected(
        Origin::Summary,
        "This session continues an earlier conversation. Summary:\n1. Primary Request…",
    )]);
    w.compact_summary(&summary).unwrap();
    let last = answer("a() does nothing.", "msg_2");
    w.assistant(&last).unwrap();
    let next = Message::user("go on");
    w.user(&next).unwrap();

    let records = lines(w.path());
    let boundary = &records[9];
    assert_eq!(boundary["subtype"], "compact_boundary");
    assert_eq!(boundary["parentUuid"], Value::Null);
    assert_eq!(boundary["logicalParentUuid"], before.as_str());
    assert_eq!(
        boundary["compactMetadata"],
        json!({"trigger": "auto", "preTokens": 155000})
    );
    assert_eq!(records[10]["isCompactSummary"], true);

    let replay = Transcript::read(w.path()).unwrap().replay();
    assert_eq!(replay.history, vec![summary, last, next]);
}

#[test]
fn a_torn_last_line_is_skipped_at_every_cut_and_every_earlier_record_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-4")).unwrap();
    drive(&mut w);
    let full = std::fs::read(w.path()).unwrap();
    let whole = Transcript::parse(&full);
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    for cut in last_start + 1..full.len() - 1 {
        let t = Transcript::parse(&full[..cut]);
        assert_eq!(t.records.len(), whole.records.len() - 1, "cut at {cut}");
        assert_eq!(t.records[..], whole.records[..whole.records.len() - 1]);
        assert!(t.torn_tail);
        assert_eq!(t.warnings.len(), 1, "cut at {cut}");
        assert_eq!(t.warnings[0].line, 9);
        assert!(
            t.warnings[0].message.contains("incomplete last record"),
            "{:?}",
            t.warnings
        );
    }
}

#[test]
fn a_crash_at_any_byte_loses_at_most_the_record_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-5")).unwrap();
    drive(&mut w);
    let full = std::fs::read(w.path()).unwrap();
    let ends: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    for cut in 0..=full.len() {
        let t = Transcript::parse(&full[..cut]);
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert!(
            t.records.len() == complete || t.records.len() == complete + 1,
            "cut at {cut}: {} records of {complete} complete lines",
            t.records.len()
        );
        // The history is that of the complete lines, or, when the last line's JSON was whole
        // and only its line break missing, that of the lines up to its end.
        let upto = if t.records.len() == complete {
            ends.iter().rev().find(|&&e| e <= cut).copied().unwrap_or(0)
        } else {
            ends.iter().find(|&&e| e > cut).copied().unwrap()
        };
        assert_eq!(
            t.replay().history,
            Transcript::parse(&full[..upto]).replay().history,
            "cut at {cut}"
        );
    }
}

#[test]
fn appending_after_a_torn_line_keeps_the_fragment_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-6")).unwrap();
    w.user(&Message::user("first")).unwrap();
    w.assistant(&answer("ok", "m1")).unwrap();
    let path = w.path().to_path_buf();
    drop(w);
    // A crash in the middle of the third record.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, b"{\"type\":\"user\",\"uuid\":\"x\",\"mess")
        })
        .unwrap();
    let t = Transcript::read(&path).unwrap();
    assert!(t.torn_tail);
    let mut w = Writer::append(&path, &t, meta("s-6")).unwrap();
    w.user(&Message::user("second")).unwrap();
    let t = Transcript::read(&path).unwrap();
    assert_eq!(t.records.len(), 3);
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert_eq!(t.warnings[0].line, 3);
    assert!(!t.torn_tail);
    let texts: Vec<String> = t.replay().history.iter().map(Message::text).collect();
    assert_eq!(texts, vec!["first", "ok", "second"]);
}

#[test]
fn a_damaged_middle_line_is_bridged_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-7")).unwrap();
    w.user(&Message::user("one")).unwrap();
    w.assistant(&answer("two", "m1")).unwrap();
    w.user(&Message::user("three")).unwrap();
    w.assistant(&answer("four", "m2")).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{\"type\":\"assistant\",\"uuid\": garbage";
    let damaged = lines.join("\n") + "\n";
    let t = Transcript::parse(damaged.as_bytes());
    assert_eq!(t.warnings.len(), 1);
    assert!(
        t.warnings[0]
            .message
            .starts_with("record skipped: not valid"),
        "{:?}",
        t.warnings
    );
    let replay = t.replay();
    let texts: Vec<String> = replay.history.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        vec!["one", "three", "four"],
        "every readable record kept"
    );
    assert!(
        replay.warnings[0]
            .message
            .contains("continuing in file order"),
        "{:?}",
        replay.warnings
    );
}

#[test]
fn a_secret_never_reaches_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-ant-test-R6-transcript-key-0000";
    let mut w = Writer::create(dir.path(), meta("s-8")).unwrap();
    w.scrub(Secret::new(key));
    w.user(&Message::user("run env")).unwrap();
    w.user(&Message::user_blocks(vec![Block::tool_result(
        "t",
        format!("HOME=/home/me\nANTHROPIC_API_KEY={key}\n"),
        false,
    )]))
    .unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert!(!text.contains(key));
    assert!(text.contains("ANTHROPIC_API_KEY=[redacted]"));
}

#[test]
fn session_ids_cannot_name_other_paths() {
    let dir = Path::new("/state/projects/p");
    assert_eq!(
        session_path(dir, "abc-123_x").unwrap(),
        dir.join("abc-123_x.jsonl")
    );
    for bad in ["../../etc/passwd", "a/b", "", "x.jsonl", "a\0b"] {
        assert!(session_path(dir, bad).is_err(), "{bad:?}");
    }
    let id = new_session_id();
    assert_eq!(id.len(), 36);
    assert!(session_path(dir, &id).is_ok());
}

#[test]
fn state_and_project_directories() {
    let home = Path::new("/home/me");
    assert_eq!(
        state_dir(None, home),
        Path::new("/home/me/.local/state/claude-context")
    );
    assert_eq!(
        state_dir(Some("/xdg".as_ref()), home),
        Path::new("/xdg/claude-context")
    );
    assert_eq!(
        state_dir(Some("relative".as_ref()), home),
        Path::new("/home/me/.local/state/claude-context"),
        "a relative XDG path is ignored"
    );
    assert_eq!(
        project_dir(
            Path::new("/xdg/claude-context"),
            Path::new("/home/me/My Repo_v2.x")
        ),
        Path::new("/xdg/claude-context/projects/-home-me-My-Repo-v2-x")
    );
    assert_eq!(
        reference_project_dir(Path::new("/home/me/.claude"), Path::new("/home/me/p")),
        Path::new("/home/me/.claude/projects/-home-me-p")
    );
}

#[test]
fn a_message_of_the_wrong_role_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-9")).unwrap();
    assert!(w.user(&answer("x", "m")).is_err());
    assert!(w.assistant(&Message::user("x")).is_err());
    assert!(
        Writer::create(dir.path(), meta("s-9")).is_err(),
        "an existing transcript is never overwritten"
    );
}

#[test]
fn a_large_transcript_parses_in_pieces_to_the_same_records_and_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-big")).unwrap();
    let big = "x\ty \"z\"\n".repeat(2000);
    for i in 0..400 {
        w.user(&Message::user(format!("question {i}"))).unwrap();
        w.assistant(&answer(&format!("{i}: {big}"), &format!("m{i}")))
            .unwrap();
    }
    let mut bytes = std::fs::read(w.path()).unwrap();
    assert!(
        bytes.len() > 2 * super::replay::PARALLEL_FROM,
        "{} bytes",
        bytes.len()
    );
    // A damaged line in the second half and a torn last line.
    let damaged_at = bytes.len() * 3 / 4;
    let line_start = bytes[..damaged_at]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    bytes[line_start] = b'#';
    let damaged_line = bytes[..line_start].iter().filter(|&&b| b == b'\n').count() + 1;
    bytes.extend_from_slice(b"{\"type\":\"user\",\"mess");
    let t = Transcript::parse(&bytes);
    let one = super::replay::parse_piece(&bytes, 0, true, false);
    assert_eq!(t.records, one.records);
    assert_eq!(t.lines, one.lines);
    assert_eq!(t.warnings, one.warnings);
    assert_eq!(t.records.len(), 799);
    assert_eq!(t.warnings.len(), 2);
    assert_eq!(t.warnings[0].line, damaged_line);
    assert_eq!(t.warnings[1].line, 801);
    assert!(t.warnings[1].message.contains("incomplete last record"));
    assert!(t.torn_tail);
}

/// A compacted history as `compact` builds it: continuation, last answer, pending message.
fn compacted_history() -> Vec<Message> {
    vec![
        Message::user_blocks(vec![
            Block::injected(Origin::Instructions, "Contents of CLAUDE.md: use tabs"),
            Block::injected(Origin::Git, "gitStatus: clean"),
            Block::injected(
                Origin::Summary,
                "This session continues an earlier conversation…\n\nSummary:\n6. All User Messages:\n   - read a.rs",
            ),
        ]),
        Message::assistant(vec![Block::text("b() is")]),
        Message::user("never mind"),
    ]
}

fn metadata() -> CompactMetadata {
    CompactMetadata {
        trigger: "auto".into(),
        pre_tokens: 155_000,
        post_tokens: Some(2_000),
        records: None,
        user_messages: vec![
            "read a.rs".into(),
            "now explain b".into(),
            "never mind".into(),
        ],
    }
}

#[test]
fn a_compaction_is_one_unit_the_history_before_it_survives_a_crash_at_any_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-c1")).unwrap();
    let old = drive(&mut w);
    let old_leaf = w.leaf().unwrap().to_string();
    let start = std::fs::metadata(w.path()).unwrap().len() as usize;
    let new = compacted_history();
    w.compaction(metadata(), &new).unwrap();
    let full = std::fs::read(w.path()).unwrap();

    let records = lines(w.path());
    let boundary = &records[records.len() - 4];
    assert_eq!(boundary["compactMetadata"]["records"], 3);
    assert_eq!(boundary["compactMetadata"]["userMessages"][2], "never mind");
    assert_eq!(boundary["logicalParentUuid"], old_leaf.as_str());
    assert_eq!(records[records.len() - 3]["isCompactSummary"], true);
    assert!(records[records.len() - 2].get("isCompactSummary").is_none());

    let done = Transcript::parse(&full).replay();
    assert_eq!(done.history, new);
    assert_eq!(
        done.compaction.unwrap().user_messages,
        metadata().user_messages
    );
    assert_eq!(
        done.last_usage, None,
        "the kept answer measured the old context"
    );

    // A crash anywhere before the last record's line is complete: the old history, and the
    // next record continues it.
    let last_end = full.len();
    for cut in start..last_end - 1 {
        let t = Transcript::parse(&full[..cut]);
        let r = t.replay();
        assert_eq!(r.history, old, "cut at {cut}");
        assert_eq!(r.leaf.as_deref(), Some(old_leaf.as_str()), "cut at {cut}");
        assert!(r.compaction.is_none());
        if cut > start {
            assert!(
                r.warnings.iter().any(|w| w.message.contains("interrupted"))
                    || t.warnings.iter().any(|w| w.message.contains("incomplete")),
                "cut at {cut}: {:?} {:?}",
                r.warnings,
                t.warnings
            );
        }
    }
    // Only the line break of the last record missing: its JSON is whole, the compaction done.
    assert_eq!(
        Transcript::parse(&full[..last_end - 1]).replay().history,
        new
    );
}

#[test]
fn resuming_after_an_interrupted_compaction_continues_the_old_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), meta("s-c2")).unwrap();
    let mut old = drive(&mut w);
    let path = w.path().to_path_buf();
    w.compaction(metadata(), &compacted_history()).unwrap();
    drop(w);
    // The crash came after the boundary and the summary record: cut the last two lines.
    let full = std::fs::read(&path).unwrap();
    let ends: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    std::fs::write(&path, &full[..ends[ends.len() - 3]]).unwrap();

    let t = Transcript::read(&path).unwrap();
    assert_eq!(t.replay().history, old);
    let mut w = Writer::append(&path, &t, meta("s-c2")).unwrap();
    let more = Message::user("what about c?");
    w.user(&more).unwrap();
    old.push(more);
    let r = Transcript::read(&path).unwrap().replay();
    assert_eq!(r.history, old);
    assert!(
        r.warnings.is_empty(),
        "the dead branch is off the chain: {:?}",
        r.warnings
    );

    // A later compaction that completes is the history from then on.
    drop(w);
    let mut w = Writer::append(&path, &Transcript::read(&path).unwrap(), meta("s-c2")).unwrap();
    w.compaction(metadata(), &compacted_history()).unwrap();
    assert_eq!(
        Transcript::read(&path).unwrap().replay().history,
        compacted_history()
    );
}

#[test]
fn a_masking_record_replays_to_the_masked_history() {
    use crate::compact::{MaskTrigger, mask};
    let dir = tempfile::tempdir().unwrap();
    let mut history = vec![Message::user("read all three")];
    for id in ["a", "b", "c"] {
        history.push(tool_call(id, "Read"));
        history.push(Message::user_blocks(vec![Block::tool_result(
            id,
            "x".repeat(800),
            false,
        )]));
    }
    let mut w2 = Writer::create(dir.path(), meta("s-c4")).unwrap();
    for m in &history {
        match m.role {
            crate::conversation::Role::User => w2.user(m).unwrap(),
            crate::conversation::Role::Assistant => w2.assistant(m).unwrap(),
        };
    }
    let mut done = answer("done", "m9");
    done.usage = Some(Usage {
        input_tokens: 1,
        output_tokens: 1,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 5_000,
    });
    w2.assistant(&done).unwrap();
    history.push(done);
    let plan = mask::plan(&history, 1, MaskTrigger::Size);
    assert_eq!(plan.ids(), ["a", "b"]);
    w2.masking(&plan).unwrap();
    plan.apply(&mut history);
    let r = Transcript::read(w2.path()).unwrap().replay();
    assert_eq!(r.history, history);
    assert_eq!(r.tokens_freed_since_usage, plan.tokens_freed);
    let records = lines(w2.path());
    let last = records.last().unwrap();
    assert_eq!(last["subtype"], "microcompact");
    assert_eq!(last["toolUseIds"], json!(["a", "b"]));
    assert_eq!(last["tokensFreed"], plan.tokens_freed);
}

#[test]
fn the_reference_clis_system_role_records_and_attachments_are_read_without_warnings() {
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","version":"2.1.12","message":{"role":"user","content":"Hi"}}"#,
        r#"{"type":"api-request-blob","uuid":"b1","parentUuid":"u1","sessionId":"s","version":"2.1.12","message":{"role":"system","content":"You are Claude Code."}}"#,
        r#"{"type":"attachment","uuid":"t1","parentUuid":"u1","sessionId":"s","version":"2.1.12","attachment":{"type":"nested_memory","path":"/p/src/CLAUDE.md","content":{"path":"/p/src/CLAUDE.md","type":"Project","content":"Cents."}}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","version":"2.1.12","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}}"#,
    ];
    let t = Transcript::parse((lines.join("\n") + "\n").as_bytes());
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let texts: Vec<String> = t.replay().history.iter().map(Message::text).collect();
    assert_eq!(texts, ["Hi", "Hello"]);
    assert_eq!(t.attached_paths(), [Path::new("/p/src/CLAUDE.md")]);
}
