//! The Messages API dialect: configuration from the environment, the request body (cache
//! breakpoints, what is left out), and the decoding of a recorded stream.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::conversation::{Block, Image, Message, Origin, StopReason, Thinking, ToolUse, Usage};
use crate::llm::http::Decoded;
use crate::llm::{Accumulator, BlockKind, ErrorKind, Event, SystemBlock, ToolSpec};

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn config_reads_the_reference_cli_variables() {
    let c = Config::from_env(env(&[("ANTHROPIC_API_KEY", " sk-ant-xyz-123456 ")]), None).unwrap();
    assert_eq!(c.base_url, "https://api.anthropic.com");
    assert_eq!(
        c.credential,
        Credential::ApiKey(Secret::new("sk-ant-xyz-123456"))
    );

    let c = Config::from_env(
        env(&[
            ("ANTHROPIC_AUTH_TOKEN", "tok-abcdefgh"),
            ("ANTHROPIC_BASE_URL", "https://gw.example.com/anthropic/"),
        ]),
        None,
    )
    .unwrap();
    assert_eq!(
        c.credential,
        Credential::AuthToken(Secret::new("tok-abcdefgh"))
    );
    assert_eq!(
        Anthropic::new(c).url(),
        "https://gw.example.com/anthropic/v1/messages"
    );
}

#[test]
fn a_setting_names_the_key_variable_and_never_holds_the_key() {
    let get = env(&[
        ("WORK_KEY", "sk-ant-work-12345678"),
        ("ANTHROPIC_API_KEY", "sk-ant-home-12345678"),
    ]);
    let c = Config::from_env(&get, Some("WORK_KEY")).unwrap();
    assert_eq!(c.credential.secret().expose(), "sk-ant-work-12345678");

    let e = Config::from_env(
        &get,
        Some("sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(e.message.contains("not hold the key"), "{e}");
    assert!(
        !e.to_string().contains("AAAA"),
        "the refused value is not echoed: {e}"
    );

    let e = Config::from_env(&get, Some("MY KEY")).unwrap_err();
    assert!(e.message.contains("not a variable name"), "{e}");
}

#[test]
fn missing_key_and_bad_base_url_are_clear_errors() {
    let e = Config::from_env(env(&[]), None).unwrap_err();
    assert!(e.to_string().contains("set ANTHROPIC_API_KEY"), "{e}");
    let e = Config::from_env(env(&[("WORK_KEY", "")]), Some("WORK_KEY")).unwrap_err();
    assert!(e.to_string().contains("set WORK_KEY"), "{e}");
    for bad in ["ftp://x", "not a url", "https://h/?a=1"] {
        let e = Config::from_env(
            env(&[
                ("ANTHROPIC_API_KEY", "sk-1234567890"),
                ("ANTHROPIC_BASE_URL", bad),
            ]),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("ANTHROPIC_BASE_URL"), "{bad}: {e}");
    }
}

fn body(request: &Request<'_>) -> Value {
    serde_json::from_slice(&encode(request)).unwrap()
}

#[test]
fn the_request_carries_system_blocks_tools_and_moving_breakpoint() {
    let history = vec![
        Message::user_blocks(vec![
            Block::injected(Origin::Instructions, "Contents of /p/CLAUDE.md"),
            Block::injected(Origin::Git, "gitStatus: clean"),
            Block::text("read main.rs"),
        ]),
        Message::assistant(vec![
            Block::Thinking(Thinking {
                thinking: "ok".into(),
                signature: "sig".into(),
            }),
            Block::ToolUse(ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({"file_path": "main.rs"}),
            }),
        ]),
        Message::user_blocks(vec![
            Block::tool_result("t1", "     1\tfn main() {}", false),
            Block::injected(
                Origin::Attachment,
                "<system-reminder>rule</system-reminder>",
            ),
        ]),
    ];
    let mut r = Request::new("claude-sonnet-4-5", 4096, &history);
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
        description: "Reads a file".into(),
        input_schema: json!({"type": "object"}),
        defer_loading: false,
    }];
    r.thinking = Some(2048);
    let b = body(&r);
    assert_eq!(b["stream"], true);
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        b["system"],
        json!([
            {"type": "text", "text": "static", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "dynamic", "cache_control": {"type": "ephemeral"}}
        ])
    );
    assert_eq!(b["tools"][0]["input_schema"], json!({"type": "object"}));
    let m = &b["messages"];
    assert_eq!(
        m[0]["content"].as_array().unwrap().len(),
        3,
        "instructions, git, the user's text"
    );
    assert_eq!(
        m[0]["content"][0].get("origin"),
        None,
        "our origin never reaches the wire"
    );
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "thinking", "thinking": "ok", "signature": "sig"})
    );
    assert_eq!(
        m[2]["content"][0]["content"],
        json!([{"type": "text", "text": "     1\tfn main() {}"}])
    );
    assert_eq!(
        m[2]["content"][1]["cache_control"],
        json!({"type": "ephemeral"}),
        "the newest block"
    );
    let breakpoints = serde_json::to_string(&b)
        .unwrap()
        .matches("ephemeral")
        .count();
    assert_eq!(breakpoints, 3);

    // Next turn: the breakpoint moves to the new last block.
    let mut longer = history.clone();
    longer.push(Message::assistant(vec![Block::text("Done.")]));
    longer.push(Message::user("thanks"));
    let b = body(&Request::new("m", 10, &longer));
    assert_eq!(b["messages"][2]["content"][1].get("cache_control"), None);
    assert_eq!(
        b["messages"][4]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn at_most_four_breakpoints_the_earliest_system_ones_go() {
    let history = vec![Message::user("hi")];
    let mut r = Request::new("m", 10, &history);
    r.system = (0..5)
        .map(|i| SystemBlock {
            text: format!("s{i}"),
            cache: true,
        })
        .collect();
    let b = body(&r);
    let flags: Vec<bool> = b["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.get("cache_control").is_some())
        .collect();
    assert_eq!(flags, vec![false, false, true, true, true]);
    assert!(
        b["messages"][0]["content"][0]
            .get("cache_control")
            .is_some()
    );
}

fn kept_image(w: u32, h: u32) -> Image {
    use base64::Engine;
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    v.extend_from_slice(&w.to_be_bytes());
    v.extend_from_slice(&h.to_be_bytes());
    v.extend_from_slice(&[8, 6, 0, 0, 0]);
    let data = base64::engine::general_purpose::STANDARD.encode(v);
    Image::from_base64("image/png", &data).unwrap()
}

#[test]
fn a_kept_image_is_sent_as_an_image_block_before_the_text() {
    let img = kept_image(10, 10);
    let history = vec![Message::user_blocks(vec![
        Block::Image(img.clone()),
        Block::text("what is this?"),
    ])];
    let r = Request::new("m", 10, &history);
    let b = body(&r);
    let content = &b["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": &*img.data.clone().unwrap()
        }})
    );
    assert_eq!(content[1]["type"], "text");
    assert_eq!(content[1]["cache_control"]["type"], "ephemeral");
    // An image as the message's last block carries the breakpoint itself.
    let history = vec![Message::user_blocks(vec![Block::Image(img)])];
    let b = body(&Request::new("m", 10, &history));
    assert_eq!(
        b["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn a_request_sends_the_newest_images_whole_within_the_api_limits() {
    let img = kept_image(10, 10);
    let history: Vec<Message> = (0..wire::MAX_REQUEST_IMAGES + 3)
        .flat_map(|i| {
            [
                Message::user_blocks(vec![Block::Image(img.clone()), Block::text(format!("{i}"))]),
                Message::assistant(vec![Block::text("ok")]),
            ]
        })
        .collect();
    let b = body(&Request::new("m", 10, &history));
    let firsts: Vec<&str> = b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .step_by(2)
        .map(|m| m["content"][0]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        firsts.iter().filter(|t| **t == "image").count(),
        wire::MAX_REQUEST_IMAGES
    );
    assert_eq!(&firsts[..3], ["text"; 3], "the oldest three are left out");
    assert!(
        b["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("left out of this request")
    );
    assert_eq!(firsts[3], "image");
}

#[test]
fn what_the_api_would_refuse_is_left_out() {
    let history = vec![
        Message::user_blocks(vec![
            Block::text(""),
            Block::Image(Image::placeholder("image/png", Some(35_000))),
        ]),
        Message::assistant(vec![
            Block::Thinking(Thinking {
                thinking: "cut".into(),
                signature: String::new(),
            }),
            Block::Unsupported,
        ]),
        Message::assistant(vec![
            Block::text("partial"),
            Block::ToolUse(ToolUse {
                id: "t".into(),
                name: "Read".into(),
                input: json!("{\"file"),
            }),
        ]),
    ];
    let mut r = Request::new("m", 10, &history);
    r.cache_last_message = false;
    let b = body(&r);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2, "the message left empty is dropped: {b}");
    assert_eq!(m[0]["content"].as_array().unwrap().len(), 1);
    assert_eq!(
        m[0]["content"][0]["text"],
        "[An image (image/png, 35 KB) was here; its content is not available.]"
    );
    assert_eq!(m[1]["content"][1]["input"], json!({}));
    assert!(!serde_json::to_string(&b).unwrap().contains("ephemeral"));
}

#[test]
fn headers_name_betas_only_when_used_and_mark_the_key_sensitive() {
    let d = Anthropic::new(Config {
        base_url: DEFAULT_BASE_URL.into(),
        credential: Credential::ApiKey(Secret::new("sk-ant-test-abcdef")),
        proxy: Default::default(),
    });
    let history = vec![Message::user("hi")];
    let mut r = Request::new("m", 10, &history);
    let h = d.headers(&r);
    assert!(h.iter().all(|h| h.name != "anthropic-beta"));
    let key = h.iter().find(|h| h.name == "x-api-key").unwrap();
    assert!(key.sensitive);
    assert!(
        h.iter()
            .any(|h| h.name == "anthropic-version" && h.value == "2023-06-01")
    );
    r.betas = vec![
        "context-management-2025-06-27".into(),
        "interleaved-thinking-2025-05-14".into(),
    ];
    let h = d.headers(&r);
    let beta = h.iter().find(|h| h.name == "anthropic-beta").unwrap();
    assert_eq!(
        beta.value,
        "context-management-2025-06-27,interleaved-thinking-2025-05-14"
    );
    assert!(!format!("{d:?}").contains("sk-ant-test-abcdef"));
}

const RECORDED: &[u8] = include_bytes!("../testdata/anthropic_tool_use.sse");

fn decode_all(chunks: &[&[u8]]) -> Vec<Decoded> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.push(c, &mut out).unwrap();
    }
    d.finish(&mut out).unwrap();
    out
}

#[test]
fn a_recorded_stream_becomes_events_and_one_message() {
    let items = decode_all(&[RECORDED]);
    assert_eq!(items.last(), Some(&Decoded::Stop));
    let events: Vec<&Event> = items
        .iter()
        .filter_map(|d| match d {
            Decoded::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        events[0],
        &Event::MessageStart {
            id: "msg_01XFDUDYJgAACzvnptvVoYEL".into(),
            model: "claude-sonnet-4-5-20250929".into(),
            usage: Usage {
                input_tokens: 12,
                output_tokens: 1,
                cache_creation_input_tokens: 2051,
                cache_read_input_tokens: 17890
            },
        }
    );
    assert!(events.contains(&&Event::Ping));
    assert!(events.contains(&&Event::BlockStart {
        index: 2,
        kind: BlockKind::ToolUse {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "Read".into()
        }
    }));
    let mut acc = Accumulator::new();
    for e in &events {
        acc.apply(e);
    }
    let m = acc.message();
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(m.usage.unwrap().output_tokens, 89);
    assert_eq!(
        m.usage.unwrap().cache_read_input_tokens,
        17890,
        "kept from message_start"
    );
    let Block::Thinking(t) = &m.content[0] else {
        panic!("{m:?}")
    };
    assert_eq!(
        t.thinking,
        "The user wants the config loader; read src/config.rs first."
    );
    assert_eq!(t.signature, "EqQBCkgIARABGAIiQL2vmRk3gYw==");
    assert_eq!(
        m.content[1],
        Block::text("I'll read the loader — “config.rs” — first.\n")
    );
    let Block::ToolUse(call) = &m.content[2] else {
        panic!()
    };
    assert_eq!(
        call.input,
        json!({"file_path": "/home/me/project/src/config.rs", "limit": 200})
    );

    for i in 0..RECORDED.len() {
        assert_eq!(
            decode_all(&[&RECORDED[..i], &RECORDED[i..]]),
            items,
            "split at {i}"
        );
    }
}

#[test]
fn errors_unknown_events_and_malformed_data() {
    let text = "event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}\n\n\
                event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}\n\n\
                event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    assert_eq!(
        decode_all(&[text.as_bytes()]),
        vec![Decoded::Error {
            api_type: "overloaded_error".into(),
            message: "Overloaded".into()
        }]
    );
    let mut d = Decoder::new();
    let e = d.push(
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\n\n",
        &mut Vec::new(),
    );
    assert!(e.unwrap_err().contains("content_block_delta"));
}

#[test]
fn error_bodies_give_the_api_s_own_words() {
    let d = Anthropic::new(Config {
        base_url: DEFAULT_BASE_URL.into(),
        credential: Credential::ApiKey(Secret::new("sk-ant-test-abcdef")),
        proxy: Default::default(),
    });
    let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be at most 64000"},"request_id":"req_011"}"#;
    assert_eq!(
        d.error_body(body),
        (
            Some("invalid_request_error".into()),
            Some("max_tokens: must be at most 64000".into())
        )
    );
    assert_eq!(d.error_body(b"<html>502 Bad Gateway</html>"), (None, None));
}

#[test]
fn context_editing_is_sent_under_its_beta_thinking_edit_first() {
    let d = Anthropic::new(Config {
        base_url: DEFAULT_BASE_URL.into(),
        credential: Credential::ApiKey(Secret::new("sk-ant-test-abcdef")),
        proxy: Default::default(),
    });
    let history = vec![Message::user("hi")];
    let mut r = Request::new("m", 10, &history);
    assert!(body(&r).get("context_management").is_none());
    r.context_management = Some(crate::llm::ContextManagement {
        thinking: Some(crate::llm::KeepThinking::All),
        clear_tool_uses: Some(crate::llm::ClearToolUses {
            trigger_input_tokens: 140_000,
            keep_tool_uses: 5,
            clear_at_least_input_tokens: Some(16_000),
            exclude_tools: vec!["TodoWrite".into()],
        }),
    });
    assert_eq!(
        body(&r)["context_management"],
        json!({"edits": [
            {"type": "clear_thinking_20251015", "keep": "all"},
            {"type": "clear_tool_uses_20250919",
             "trigger": {"type": "input_tokens", "value": 140_000},
             "keep": {"type": "tool_uses", "value": 5},
             "clear_at_least": {"type": "input_tokens", "value": 16_000},
             "exclude_tools": ["TodoWrite"]}
        ]})
    );
    let beta = |r: &Request<'_>| {
        d.headers(r)
            .into_iter()
            .find(|h| h.name == "anthropic-beta")
            .map(|h| h.value)
    };
    assert_eq!(beta(&r).as_deref(), Some(CONTEXT_MANAGEMENT_BETA));
    // Named once, even when the caller names it too.
    r.betas = vec![
        "interleaved-thinking-2025-05-14".into(),
        CONTEXT_MANAGEMENT_BETA.into(),
    ];
    assert_eq!(
        beta(&r).as_deref(),
        Some("interleaved-thinking-2025-05-14,context-management-2025-06-27")
    );
    // Tool clearing alone, thinking kept per turn, nothing optional.
    r.context_management = Some(crate::llm::ContextManagement {
        thinking: Some(crate::llm::KeepThinking::Turns(2)),
        clear_tool_uses: Some(crate::llm::ClearToolUses {
            trigger_input_tokens: 1000,
            keep_tool_uses: 1,
            clear_at_least_input_tokens: None,
            exclude_tools: vec![],
        }),
    });
    assert_eq!(
        body(&r)["context_management"]["edits"],
        json!([
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
            {"type": "clear_tool_uses_20250919",
             "trigger": {"type": "input_tokens", "value": 1000},
             "keep": {"type": "tool_uses", "value": 1}}
        ])
    );
}

#[test]
fn applied_edits_are_read_back() {
    let stream = b"event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":90000,\"output_tokens\":1},\"context_management\":null}}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7},\"context_management\":{\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\",\"cleared_tool_uses\":8,\"cleared_input_tokens\":50000},{\"type\":\"clear_thinking_20251015\",\"cleared_thinking_turns\":3,\"cleared_input_tokens\":1200}]}}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":{\"output_tokens\":7},\"context_management\":{\"applied_edits\":[]}}\n\n";
    let items = decode_all(&[stream]);
    let edits: Vec<&Event> = items
        .iter()
        .filter_map(|d| match d {
            Decoded::Event(e @ Event::ContextEdited { .. }) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        edits,
        vec![&Event::ContextEdited {
            edits: vec![
                crate::llm::AppliedEdit {
                    kind: "clear_tool_uses_20250919".into(),
                    cleared_tool_uses: 8,
                    cleared_thinking_turns: 0,
                    cleared_input_tokens: 50_000,
                },
                crate::llm::AppliedEdit {
                    kind: "clear_thinking_20251015".into(),
                    cleared_tool_uses: 0,
                    cleared_thinking_turns: 3,
                    cleared_input_tokens: 1200,
                },
            ]
        }],
        "one event for the edits applied; none for null or an empty list"
    );
    // The answer itself is unaffected.
    let mut acc = Accumulator::new();
    for d in &items {
        if let Decoded::Event(e) = d {
            acc.apply(e);
        }
    }
    assert_eq!(acc.message().usage.unwrap().input_tokens, 90_000);
}

/// skills-mcp.md check 8: a ToolSearch result is `tool_reference` parts; a loaded tool is sent
/// with `defer_loading` and its schema's `type` first; both under the tool search beta.
#[test]
fn loaded_deferred_tools_and_tool_references_as_the_api_takes_them() {
    use crate::conversation::{ResultPart, ToolResult};
    let history = vec![
        Message::user("add"),
        Message::assistant(vec![Block::ToolUse(ToolUse {
            id: "t1".into(),
            name: "ToolSearch".into(),
            input: json!({"query": "select:mcp__demo__add"}),
        })]),
        Message::user_blocks(vec![
            Block::ToolResult(ToolResult {
                tool_use_id: "t1".into(),
                content: vec![ResultPart::ToolReference {
                    tool_name: "mcp__demo__add".into(),
                }],
                is_error: false,
                cleared: false,
            }),
            Block::injected(Origin::Reminder, "Tool loaded."),
        ]),
    ];
    let mut r = Request::new("claude-opus-5-5", 100, &history);
    let schema = json!({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "title": "addArguments", "type": "object"});
    r.tools = vec![ToolSpec {
        name: "mcp__demo__add".into(),
        description: "Add two numbers.".into(),
        input_schema: schema,
        defer_loading: true,
    }];
    let text = String::from_utf8(encode(&r)).unwrap();
    assert!(
        text.contains("{\"name\":\"mcp__demo__add\",\"description\":\"Add two numbers.\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},\"required\":[\"a\",\"b\"],\"title\":\"addArguments\"},\"defer_loading\":true}"),
        "{text}"
    );
    let b = body(&r);
    assert_eq!(
        b["messages"][2]["content"][0]["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__demo__add"}])
    );
    assert_eq!(b["messages"][2]["content"][1]["text"], "Tool loaded.");
    let beta = Anthropic::new(
        Config::from_env(env(&[("ANTHROPIC_API_KEY", "sk-ant-x-12345678")]), None).unwrap(),
    )
    .headers(&r)
    .into_iter()
    .find(|h| h.name == "anthropic-beta")
    .map(|h| h.value);
    assert_eq!(beta.as_deref(), Some(TOOL_SEARCH_BETA));
    // A plain tool keeps its schema as it is, without the flag; no beta without deferred tools.
    r.tools[0].defer_loading = false;
    let b = body(&r);
    assert!(b["tools"][0].get("defer_loading").is_none());
    let plain = vec![Message::user("x")];
    let r2 = Request::new("m", 1, &plain);
    assert!(
        Anthropic::new(
            Config::from_env(env(&[("ANTHROPIC_API_KEY", "sk-ant-x-12345678")]), None).unwrap()
        )
        .headers(&r2)
        .iter()
        .all(|h| h.name != "anthropic-beta")
    );
}
