//! Pure: the user messages a session sends and the request built from its history
//! (`../shared/spec/session.md` §2, `context.md` §4 and §9).
//!
//! The first user message, block by block (each its own text block):
//! 1. the attachments of the files the user mentioned or had open when sending (conditional
//!    rules, nested instruction files), *before* the instructions block;
//! 2. the instructions block, then the git snapshot block (frozen at the session's start);
//! 3. the contents of the files the user mentioned explicitly;
//! 4. the user's text.
//!
//! A later user message is the same without 2. An attachment block that is not the last block of
//! its message ends with `\n` (as attachments after tool results do; here none is ever last).
//!
//! The request: `system` is the snapshot's static block then its dynamic block, each a cache
//! breakpoint; the messages are the history as it is; the last content block of the newest
//! message is the moving breakpoint (set by the provider's encoder, `cache_last_message`).

use std::path::{Path, PathBuf};

use super::config::ModelConfig;
use super::snapshot::Snapshot;
use crate::assembly::BlockKind;
use crate::conversation::{Block, Image, Message, Origin, ResultPart, Role};
use crate::llm::{Request, SystemBlock, ToolSpec};

/// A file attached to a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    pub path: PathBuf,
    /// The touched file that caused it.
    pub trigger: PathBuf,
    /// `<system-reminder>\nContents of <path>:\n\n<content>\n</system-reminder>`.
    pub text: String,
    pub tokens: u64,
}

/// A file the user mentioned, with the block that carries its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mentioned {
    pub path: PathBuf,
    pub text: String,
}

/// How much of a mentioned file is sent.
pub const MENTION_LIMIT: usize = 256 * 1024;

/// The block of a mentioned file: its contents as read when the message was sent, cut (and
/// saying so) past [`MENTION_LIMIT`] bytes.
pub fn mention_block(path: &Path, content: &str) -> String {
    let (shown, note) = if content.len() > MENTION_LIMIT {
        let mut end = MENTION_LIMIT;
        while !content.is_char_boundary(end) {
            end -= 1;
        }
        (
            &content[..end],
            format!(
                "\n[Only the first {end} of {} bytes are shown.]",
                content.len()
            ),
        )
    } else {
        (content, String::new())
    };
    format!(
        "<system-reminder>\nThe user mentioned the file {}. Its contents when the message was sent:\n\n{shown}{note}\n</system-reminder>",
        path.display()
    )
}

/// The user message for `text`. `first` carries the frozen instructions and git blocks when
/// this is the session's first message. The user's images come right before the text, in the
/// order given (the reference CLI sends a pasted image before the prompt's text).
pub fn user_message(
    first: Option<&Snapshot>,
    attachments: &[Attached],
    mentions: &[Mentioned],
    images: &[Image],
    text: &str,
) -> Message {
    let mut content = Vec::with_capacity(attachments.len() + mentions.len() + images.len() + 3);
    for a in attachments {
        // Never the last block: the user's text follows.
        content.push(Block::attachment(
            format!("{}\n", a.text),
            a.trigger.to_string_lossy(),
        ));
    }
    if let Some(s) = first {
        if let Some(t) = s.text(BlockKind::Instructions) {
            content.push(Block::injected(Origin::Instructions, t));
        }
        if let Some(t) = s.text(BlockKind::GitStatus) {
            content.push(Block::injected(Origin::Git, t));
        }
    }
    for m in mentions {
        content.push(Block::injected(Origin::Mention, m.text.clone()));
    }
    content.extend(images.iter().cloned().map(Block::Image));
    content.push(Block::text(text));
    Message::user_blocks(content)
}

/// The request for the next answer.
pub fn request<'a>(
    system: Vec<SystemBlock>,
    config: &ModelConfig,
    history: &'a [Message],
    tools: Vec<ToolSpec>,
) -> Request<'a> {
    let mut r = Request::new(config.model.clone(), config.max_tokens, history);
    r.system = system;
    r.tools = tools;
    r.cache_last_message = true;
    r
}

/// `ceil(bytes / 4)` of a message's content, plus each image's estimate (`Image::tokens`).
pub fn estimate_message(m: &Message) -> u64 {
    let mut bytes = 0usize;
    let mut images = 0u64;
    for b in &m.content {
        match b {
            Block::Text(t) => bytes += t.text.len(),
            Block::ToolUse(t) => bytes += t.name.len() + t.input.to_string().len(),
            Block::ToolResult(r) => {
                for p in &r.content {
                    match p {
                        ResultPart::Text { text } => bytes += text.len(),
                        ResultPart::Image(i) => images += i.tokens(),
                        ResultPart::ToolReference { tool_name } => bytes += tool_name.len(),
                        ResultPart::Unsupported => {}
                    }
                }
            }
            Block::Thinking(t) => bytes += t.thinking.len(),
            Block::RedactedThinking { data } => bytes += data.len(),
            Block::Image(i) => images += i.tokens(),
            Block::Unsupported => {}
        }
    }
    bytes.div_ceil(4) as u64 + images
}

/// Estimate of a whole request: system, tools and messages.
pub fn estimate_request(system: &[SystemBlock], tools: &[ToolSpec], history: &[Message]) -> u64 {
    let sys: usize = system.iter().map(|b| b.text.len()).sum::<usize>()
        + tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
            .sum::<usize>();
    sys.div_ceil(4) as u64 + history.iter().map(estimate_message).sum::<u64>()
}

/// The last message is an assistant's with tool calls that got no results (a cancel between
/// the answer and the tools): the user message that closes them, every call answered with an
/// error, so the history stays valid for the API.
pub fn close_open_tool_calls(history: &[Message], why: &str) -> Option<Message> {
    let last = history.last()?;
    if last.role != Role::Assistant {
        return None;
    }
    let results: Vec<Block> = last
        .tool_uses()
        .map(|t| Block::tool_result(t.id.clone(), why, true))
        .collect();
    (!results.is_empty()).then(|| Message::user_blocks(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::{GitPart, GitSummary};
    use crate::fs::MemFs;
    use crate::host::Host;
    use std::sync::Arc;

    fn snapshot() -> Snapshot {
        let fs = MemFs::with_files([("/p/CLAUDE.md", "Be brief.\n")]);
        let host = Host::for_tests(Path::new("/h"));
        let opts = host.context_options(Path::new("/p"), &[], None).unwrap();
        let ctx = Arc::new(crate::context::build(&fs, &opts));
        let git = GitPart {
            block: "<system-reminder>\ngit\n</system-reminder>".into(),
            summary: GitSummary {
                branch: "main".into(),
                changed: 0,
            },
        };
        Snapshot::start(&host, ctx, Some(&git), "claude-sonnet-4-5")
    }

    fn texts(m: &Message) -> Vec<(Origin, String)> {
        m.content
            .iter()
            .map(|b| match b {
                Block::Text(t) => (t.origin, t.text.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_first_message_puts_attachments_before_the_instructions() {
        let s = snapshot();
        let att = Attached {
            path: "/p/.claude/rules/ts.md".into(),
            trigger: "/p/a.ts".into(),
            text: "<system-reminder>\nContents of /p/.claude/rules/ts.md:\n\nTS.\n\n</system-reminder>"
                .into(),
            tokens: 20,
        };
        let men = Mentioned {
            path: "/p/a.ts".into(),
            text: mention_block(Path::new("/p/a.ts"), "let x = 1;\n"),
        };
        let m = user_message(Some(&s), std::slice::from_ref(&att), &[men], &[], "Hi");
        let t = texts(&m);
        assert_eq!(
            t.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
            [
                Origin::Attachment,
                Origin::Instructions,
                Origin::Git,
                Origin::Mention,
                Origin::Authored
            ]
        );
        assert_eq!(t[0].1, format!("{}\n", att.text));
        assert!(t[1].1.contains("Be brief."));
        assert!(t[3].1.contains("The user mentioned the file /p/a.ts."));
        assert!(t[3].1.contains("let x = 1;\n"));
        assert_eq!(m.authored_text().as_deref(), Some("Hi"));

        let later = user_message(None, &[att], &[], &[], "Again");
        assert_eq!(
            texts(&later).iter().map(|(o, _)| *o).collect::<Vec<_>>(),
            [Origin::Attachment, Origin::Authored]
        );
    }

    #[test]
    fn the_request_carries_both_system_blocks_cached_and_the_settings() {
        let s = snapshot();
        let history = vec![user_message(Some(&s), &[], &[], &[], "Hi")];
        let cfg = ModelConfig {
            model: "claude-test".into(),
            max_tokens: 1234,
            ..ModelConfig::default()
        };
        let r = request(s.system(), &cfg, &history, Vec::new());
        assert_eq!((r.model.as_str(), r.max_tokens), ("claude-test", 1234));
        assert_eq!(r.system.len(), 2);
        assert!(r.system.iter().all(|b| b.cache));
        assert!(r.cache_last_message);
        let body: serde_json::Value =
            serde_json::from_slice(&crate::llm::anthropic::encode(&r)).unwrap();
        let content = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(content.len(), 3, "instructions, git, text");
        assert_eq!(content[2]["cache_control"]["type"], "ephemeral");
        assert!(content[0].get("cache_control").is_none());
    }

    #[test]
    fn a_long_mention_says_it_was_cut() {
        let big = "é".repeat(MENTION_LIMIT);
        let b = mention_block(Path::new("/p/big.txt"), &big);
        assert!(b.contains(&format!("of {} bytes are shown", big.len())));
        assert!(b.len() < big.len());
    }

    #[test]
    fn open_tool_calls_are_closed_with_errors() {
        let mut a = Message::assistant(vec![Block::ToolUse(crate::conversation::ToolUse {
            id: "t1".into(),
            name: "Read".into(),
            input: serde_json::json!({}),
        })]);
        a.stop_reason = Some(crate::conversation::StopReason::ToolUse);
        let closing = close_open_tool_calls(&[a], "cancelled").unwrap();
        let Block::ToolResult(r) = &closing.content[0] else {
            panic!()
        };
        assert!(r.is_error && r.tool_use_id == "t1");
        assert!(close_open_tool_calls(&[Message::user("x")], "c").is_none());
    }
}
