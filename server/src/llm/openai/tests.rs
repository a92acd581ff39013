//! The OpenAI-compatible dialect: the conversation as chat messages, and a recorded stream
//! (thinking, text, two tool calls in pieces, usage with cached tokens, `[DONE]`).

use serde_json::json;

use super::*;
use crate::conversation::{Origin, Thinking, ToolUse};
use crate::llm::{Accumulator, SystemBlock, ToolSpec};

fn dialect(key: Option<&str>) -> OpenAi {
    OpenAi::new(Config {
        base_url: "http://localhost:11434/v1/".into(),
        api_key: key.map(Secret::new),
        proxy: Default::default(),
    })
    .unwrap()
}

#[test]
fn the_url_and_an_optional_key() {
    let d = dialect(None);
    assert_eq!(d.url(), "http://localhost:11434/v1/chat/completions");
    let history = vec![Message::user("hi")];
    let r = Request::new("m", 10, &history);
    assert!(
        d.headers(&r).iter().all(|h| h.name != "authorization"),
        "a local server needs no key"
    );
    let h = dialect(Some("sk-local-12345678")).headers(&r);
    let auth = h.iter().find(|h| h.name == "authorization").unwrap();
    assert_eq!(auth.value, "Bearer sk-local-12345678");
    assert!(auth.sensitive);
    assert!(
        OpenAi::new(Config {
            base_url: "localhost:8080".into(),
            api_key: None,
            proxy: Default::default(),
        })
        .is_err()
    );
}

#[test]
fn the_conversation_as_chat_messages() {
    let history = vec![
        Message::user_blocks(vec![
            Block::injected(Origin::Instructions, "Contents of CLAUDE.md"),
            Block::text("read main.rs"),
        ]),
        Message::assistant(vec![
            Block::Thinking(Thinking {
                thinking: "hmm".into(),
                signature: "s".into(),
            }),
            Block::text("Reading."),
            Block::ToolUse(ToolUse {
                id: "call_1".into(),
                name: "Read".into(),
                input: json!({"file_path": "main.rs"}),
            }),
        ]),
        Message::user_blocks(vec![
            Block::tool_result("call_1", "fn main() {}", false),
            Block::injected(
                Origin::Attachment,
                "<system-reminder>rule</system-reminder>",
            ),
        ]),
    ];
    let mut r = Request::new("qwen", 512, &history);
    r.system = vec![
        SystemBlock {
            text: "static".into(),
            cache: true,
        },
        SystemBlock {
            text: "dynamic".into(),
            cache: true,
        },
    ];
    r.tools = vec![ToolSpec {
        name: "Read".into(),
        description: "Reads".into(),
        input_schema: json!({"type": "object"}),
        defer_loading: false,
    }];
    let body: Value = serde_json::from_slice(&encode(&r)).unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "static\n\ndynamic"},
            {"role": "user", "content": "Contents of CLAUDE.md\n\nread main.rs"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"main.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
            {"role": "user", "content": "<system-reminder>rule</system-reminder>"}
        ])
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "Read", "description": "Reads", "parameters": {"type": "object"}}})
    );
    assert!(
        !serde_json::to_string(&body)
            .unwrap()
            .contains("cache_control")
    );
}

const RECORDED: &[u8] = include_bytes!("../testdata/openai_tool_calls.sse");

fn decode(chunks: &[&[u8]]) -> Vec<Decoded> {
    let mut d = Decoder::default();
    let mut out = Vec::new();
    for c in chunks {
        d.push(c, &mut out).unwrap();
    }
    d.finish(&mut out).unwrap();
    out
}

#[test]
fn a_recorded_stream_becomes_one_message() {
    let items = decode(&[RECORDED]);
    assert_eq!(items.last(), Some(&Decoded::Stop));
    let mut acc = Accumulator::new();
    for i in &items {
        if let Decoded::Event(e) = i {
            acc.apply(e);
        }
    }
    let m = acc.message();
    assert_eq!(m.id.as_deref(), Some("chatcmpl-9xKq2"));
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    let Block::Thinking(t) = &m.content[0] else {
        panic!("{m:?}")
    };
    assert_eq!(t.thinking, "The user wants main.rs; read it.");
    assert_eq!(m.content[1], Block::text("Reading `main.rs` – “now”.\n"));
    let calls: Vec<(&str, &str, &Value)> = m
        .tool_uses()
        .map(|t| (t.id.as_str(), t.name.as_str(), &t.input))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a1b2c3", "Read", &json!({"file_path": "src/main.rs"})),
            ("call_d4e5f6", "Glob", &json!({"pattern": "**/*.toml"}))
        ]
    );
    let u = m.usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.cache_read_input_tokens, u.output_tokens),
        (176, 1024, 48)
    );
    for i in 0..RECORDED.len() {
        assert_eq!(
            decode(&[&RECORDED[..i], &RECORDED[i..]]),
            items,
            "split at {i}"
        );
    }
}

#[test]
fn a_stream_without_done_ends_at_its_finish_reason_and_errors_are_reported() {
    let text = b"data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n";
    let items = decode(&[text]);
    assert_eq!(items.last(), Some(&Decoded::Stop));
    let cut = b"data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
    assert!(
        !decode(&[cut]).contains(&Decoded::Stop),
        "no finish reason: the stream was cut"
    );
    let err = b"data: {\"error\":{\"message\":\"model not loaded\",\"type\":\"server_error\"}}\n\n";
    assert_eq!(
        decode(&[err]),
        vec![Decoded::Error {
            api_type: "server_error".into(),
            message: "model not loaded".into()
        }]
    );
    assert_eq!(
        dialect(None).error_body(
            br#"{"error":{"message":"Invalid model","type":"invalid_request_error","code":null}}"#
        ),
        (
            Some("invalid_request_error".into()),
            Some("Invalid model".into())
        )
    );
}

/// The chat format has no deferred tools: a ToolSearch result names the tool it loaded, and the
/// loaded tool is an ordinary function tool.
#[test]
fn tool_references_and_loaded_tools_become_plain_text_and_tools() {
    use crate::conversation::{ResultPart, ToolResult};
    let history = vec![
        Message::assistant(vec![Block::ToolUse(ToolUse {
            id: "t1".into(),
            name: "ToolSearch".into(),
            input: json!({"query": "select:mcp__demo__add"}),
        })]),
        Message::user_blocks(vec![Block::ToolResult(ToolResult {
            tool_use_id: "t1".into(),
            content: vec![ResultPart::ToolReference {
                tool_name: "mcp__demo__add".into(),
            }],
            is_error: false,
            cleared: false,
        })]),
    ];
    let mut r = Request::new("m", 10, &history);
    r.tools = vec![ToolSpec {
        name: "mcp__demo__add".into(),
        description: "Add.".into(),
        input_schema: json!({"type": "object"}),
        defer_loading: true,
    }];
    let body: Value = serde_json::from_slice(&encode(&r)).unwrap();
    assert_eq!(body["messages"][1]["role"], "tool");
    assert_eq!(
        body["messages"][1]["content"],
        "Loaded the tool mcp__demo__add"
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "mcp__demo__add", "description": "Add.", "parameters": {"type": "object"}}})
    );
}
