//! Transcripts across the two programs: the reference CLI's sessions (a realistic sample in
//! `tests/data/reference-cli/`, written in its record format: split assistant records, meta
//! messages, an attachment, a subagent's records, an image, a compaction, a rewound branch)
//! are listed beside ours, read into the same history model, and never written to.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::path::{Path, PathBuf};

use claude_context::conversation::{self, Block, Message, Origin, Role, StopReason};
use claude_context::session::transcript::{self, SessionMeta, Source, Transcript, Writer};

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/reference-cli")
}

/// The sample copied into a temp `~/.claude`, so a test can check nothing was written.
fn claude_home() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join(".claude");
    copy_dir(&sample_dir(), &claude);
    (tmp, claude)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

const PROJECT: &str = "/home/me/work/shop";
const TOOL_FLOW: &str = "7f3c2a10-5d2e-4b7a-9c61-2f0e8d4b1a77";
const COMPACTED: &str = "c14ea43d-a0b3-40b1-bf31-93b87f46f303";

fn texts(history: &[Message]) -> Vec<(Role, String)> {
    history.iter().map(|m| (m.role, m.text())).collect()
}

#[test]
fn a_reference_session_reads_into_the_history_it_sent() {
    let (_tmp, claude) = claude_home();
    let dir = transcript::reference_project_dir(&claude, Path::new(PROJECT));
    let t = Transcript::read(&dir.join(format!("{TOOL_FLOW}.jsonl"))).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.session_id(), Some(TOOL_FLOW));
    let replay = t.replay();
    assert!(replay.warnings.is_empty(), "{:?}", replay.warnings);
    let h = &replay.history;
    assert_eq!(h.len(), 12, "{:#?}", texts(h));

    // Meta messages (the caveat, a slash command and its output) are sent, as injected text.
    for m in &h[..3] {
        let Block::Text(t) = &m.content[0] else {
            panic!()
        };
        assert_eq!(t.origin, Origin::Meta, "{}", t.text);
    }
    // The assistant's one-record-per-block answer is one message again.
    assert_eq!(h[4].role, Role::Assistant);
    assert_eq!(h[4].content.len(), 3);
    assert!(matches!(&h[4].content[0], Block::Thinking(t) if !t.signature.is_empty()));
    assert_eq!(h[4].tool_uses().next().unwrap().name, "Grep");
    assert_eq!(h[4].stop_reason, Some(StopReason::ToolUse));
    // The attachment record and the subagent's records are not messages of the conversation.
    assert_eq!(h[6].tool_uses().next().unwrap().name, "Read");
    assert!(h.iter().all(|m| !m.text().contains("Search the tests")));
    // The image is a placeholder with its size; its base64 is gone.
    let Block::Image(img) = &h[9].content[1] else {
        panic!("{:?}", h[9])
    };
    assert_eq!((img.media_type.as_str(), img.size), ("image/png", Some(70)));
    assert_eq!(
        h[11].content[0],
        Block::injected(Origin::Interruption, "[Request interrupted by user]")
    );
    assert_eq!(
        conversation::user_authored_texts(h),
        vec![
            "The checkout total is wrong when a coupon is applied twice. Find out why.",
            "Here is the screenshot of the bug.",
        ]
    );
    assert_eq!(replay.last_usage.unwrap().cache_read_input_tokens, 15500);
    assert_eq!(
        replay.last_assistant_at.as_deref(),
        Some("2026-01-20T11:58:12.000Z")
    );
}

#[test]
fn a_compacted_and_rewound_reference_session_resumes_on_its_latest_branch() {
    let (_tmp, claude) = claude_home();
    let dir = transcript::reference_project_dir(&claude, Path::new(PROJECT));
    let replay = Transcript::read(&dir.join(format!("{COMPACTED}.jsonl")))
        .unwrap()
        .replay();
    assert_eq!(
        texts(&replay.history),
        vec![
            (
                Role::User,
                "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nSummary:\n1. Primary Request and Intent: fix the double coupon bug.\n6. All user messages:\n- Fix the double coupon bug in src/cart.ts.".to_string()
            ),
            (Role::User, "Now add a test for it.".to_string()),
            (Role::Assistant, "Which test runner: jest or vitest?".to_string()),
            (Role::User, "vitest, please".to_string()),
            (Role::Assistant, "Added tests/cart.test.ts with vitest.".to_string()),
        ]
    );
    let Block::Text(summary) = &replay.history[0].content[0] else {
        panic!()
    };
    assert_eq!(
        summary.origin,
        Origin::Summary,
        "the summary is not a user-authored message"
    );
    assert_eq!(
        replay.leaf.as_deref(),
        Some("b0000001-0000-4000-8000-00000000000a")
    );
}

#[test]
fn sessions_of_a_project_ours_and_the_reference_cli_s_newest_first() {
    let (tmp, claude) = claude_home();
    let before = snapshot(&claude);
    let state = transcript::state_dir(Some(tmp.path().join("state").as_os_str()), tmp.path());
    let ours_dir = transcript::project_dir(&state, Path::new(PROJECT));
    let id = transcript::new_session_id();
    let mut w = Writer::create(
        &ours_dir,
        SessionMeta {
            session_id: id.clone(),
            cwd: PROJECT.into(),
            git_branch: "fix/coupons".into(),
        },
    )
    .unwrap();
    w.user(&Message::user_blocks(vec![
        Block::injected(
            Origin::Instructions,
            "Contents of /home/me/work/shop/CLAUDE.md",
        ),
        Block::text("Refactor checkout into smaller functions\nand keep the behaviour."),
    ]))
    .unwrap();

    let reference = transcript::reference_project_dir(&claude, Path::new(PROJECT));
    let list = transcript::list_project(&ours_dir, Some(&reference));
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![id.as_str(), COMPACTED, TOOL_FLOW],
        "newest first; the subagent file is not a session"
    );

    let ours = &list[0];
    assert_eq!((ours.source, ours.read_only), (Source::Ours, false));
    assert_eq!(
        ours.first_prompt.as_deref(),
        Some("Refactor checkout into smaller functions\nand keep the behaviour.")
    );
    assert_eq!(
        ours.title.as_deref(),
        Some("Refactor checkout into smaller functions…")
    );
    assert!(
        ours.path.starts_with(
            tmp.path()
                .join("state/claude-context/projects/-home-me-work-shop")
        )
    );

    let flow = &list[2];
    assert_eq!((flow.source, flow.read_only), (Source::Reference, true));
    assert_eq!(flow.title.as_deref(), Some("Checkout coupon applied twice"));
    assert_eq!(
        flow.first_prompt.as_deref(),
        Some("The checkout total is wrong when a coupon is applied twice. Find out why."),
        "the caveat and the slash command are not the first prompt"
    );
    assert_eq!(flow.started_at.as_deref(), Some("2026-01-20T11:57:17.716Z"));
    assert_eq!(flow.updated_at.as_deref(), Some("2026-01-20T11:58:20.000Z"));
    assert_eq!(list[1].title.as_deref(), Some("Coupon fix and tests"));

    for s in &list[1..] {
        Transcript::read(&s.path).unwrap().replay();
    }
    assert_eq!(
        snapshot(&claude),
        before,
        "the reference CLI's files are never written"
    );
}

#[test]
fn a_reference_transcript_cut_mid_line_keeps_every_earlier_record() {
    let text =
        std::fs::read(sample_dir().join(format!("projects/-home-me-work-shop/{TOOL_FLOW}.jsonl")))
            .unwrap();
    // Without its final title record, and with the interruption record cut in half.
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let kept = lines[..lines.len() - 1].join(&b'\n');
    let whole = Transcript::parse(&kept);
    let last_start = kept.len() - lines[lines.len() - 2].len();
    let cut = &kept[..last_start + lines[lines.len() - 2].len() / 2];
    let t = Transcript::parse(cut);
    assert_eq!(t.records.len(), whole.records.len() - 1);
    assert_eq!(t.warnings.len(), 1);
    assert!(t.warnings[0].message.contains("incomplete last record"));
    assert_eq!(t.replay().history.len(), 11);
}

#[test]
fn no_sessions_yet_is_an_empty_list() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(
        transcript::list_project(&tmp.path().join("none"), Some(&tmp.path().join("nothing")))
            .is_empty()
    );
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}
