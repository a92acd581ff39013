//! The conversation model: its transcript form (the reference CLI's shapes), masking, the
//! sendable part of a cut answer, and what counts as user-authored.

use std::collections::HashSet;

use serde_json::json;

use super::*;

fn parse(v: serde_json::Value) -> Message {
    serde_json::from_value(v).expect("a valid message")
}

#[test]
fn reads_the_reference_cli_user_prompt_as_one_authored_block() {
    let m = parse(json!({"role": "user", "content": "add a config file"}));
    assert_eq!(m.role, Role::User);
    assert_eq!(m.content, vec![Block::text("add a config file")]);
    assert_eq!(m.authored_text().as_deref(), Some("add a config file"));
}

#[test]
fn reads_a_reference_cli_assistant_message_with_metadata() {
    let m = parse(json!({
        "id": "msg_01Gv", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [
            {"type": "thinking", "thinking": "look first", "signature": "sig=="},
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "/p/a.rs"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 3, "cache_creation_input_tokens": null, "cache_read_input_tokens": 19024,
                  "output_tokens": 25, "service_tier": "standard"}
    }));
    assert_eq!(m.id.as_deref(), Some("msg_01Gv"));
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(m.usage.unwrap().context_tokens(), 3 + 19024 + 25);
    assert_eq!(
        m.tool_uses().next().unwrap().input,
        json!({"file_path": "/p/a.rs"})
    );
    assert_eq!(
        m.authored_text(),
        None,
        "assistant text is not user-authored"
    );
}

#[test]
fn tool_result_content_may_be_a_string_an_array_or_absent() {
    let m = parse(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "     1→fn main() {}"},
        {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}], "is_error": true},
        {"type": "tool_result", "tool_use_id": "c"}
    ]}));
    let results: Vec<&ToolResult> = m
        .content
        .iter()
        .map(|b| match b {
            Block::ToolResult(r) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(results[0].text(), "     1→fn main() {}");
    assert_eq!(results[1].text(), "xy");
    assert!(results[1].is_error);
    assert!(results[2].content.is_empty());
    assert_eq!(
        m.authored_text(),
        None,
        "tool results are not user-authored"
    );
}

/// A PNG's signature and header, base64: a real image as far as the checks can tell.
fn png_b64(w: u32, h: u32) -> String {
    use base64::Engine;
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    v.extend_from_slice(&w.to_be_bytes());
    v.extend_from_slice(&h.to_be_bytes());
    v.extend_from_slice(&[8, 6, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(v)
}

#[test]
fn a_real_image_is_kept_whole_and_written_as_the_reference_cli_writes_it() {
    let data = png_b64(64, 48);
    let line = json!({"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "what is this?"}
    ]});
    let m = parse(line.clone());
    let Block::Image(img) = &m.content[0] else {
        panic!()
    };
    assert_eq!(img.data.as_deref(), Some(data.as_str()));
    assert_eq!(img.dims, Some((64, 48)));
    assert_eq!(img.size, Some(29));
    // Written back byte for byte in the reference CLI's shape: a resumed session sends it again.
    let written = serde_json::to_value(&m).unwrap();
    assert_eq!(written["content"][0], line["content"][0]);
    assert_eq!(parse(written), m);
}

#[test]
fn images_keep_their_type_and_size_not_their_bytes() {
    // Not an image (its bytes are no PNG): kept as a placeholder, never sent as one.
    let data = "QUJD".repeat(1000); // 4,000 base64 characters: 3,000 bytes
    let m = parse(json!({"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    ]}));
    let Block::Image(img) = &m.content[0] else {
        panic!()
    };
    assert_eq!(img.media_type, "image/png");
    assert_eq!(img.size, Some(3000));
    let written = serde_json::to_string(&m).unwrap();
    assert!(!written.contains("QUJD"), "{written}");
    assert_eq!(
        parse(serde_json::from_str(&written).unwrap()),
        m,
        "the placeholder reads back"
    );
}

#[test]
fn an_unknown_block_kind_is_kept_as_unsupported() {
    let m = parse(json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "text", "text": "found"}
    ]}));
    assert_eq!(m.content[0], Block::Unsupported);
    assert_eq!(m.text(), "found");
}

#[test]
fn origins_round_trip_and_authored_is_the_default() {
    let m = Message::user_blocks(vec![
        Block::injected(Origin::Instructions, "Contents of CLAUDE.md"),
        Block::injected(Origin::Git, "gitStatus: clean"),
        Block::text("fix the bug"),
    ]);
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["content"][0]["origin"], "instructions");
    assert_eq!(
        v["content"][2].get("origin"),
        None,
        "authored is not written"
    );
    assert_eq!(parse(v), m);
    assert_eq!(m.authored_text().as_deref(), Some("fix the bug"));
}

#[test]
fn masking_keeps_structure_and_counts_once() {
    let mut history = vec![
        Message::user("read both"),
        Message::assistant(vec![
            Block::ToolUse(ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({}),
            }),
            Block::ToolUse(ToolUse {
                id: "t2".into(),
                name: "Bash".into(),
                input: json!({}),
            }),
        ]),
        Message::user_blocks(vec![
            Block::tool_result("t1", "a".repeat(100), false),
            Block::tool_result("t2", "boom", true),
        ]),
    ];
    let ids: HashSet<&str> = ["t1", "t2"].into_iter().collect();
    assert_eq!(mask_tool_results(&mut history, &ids), (2, 104));
    let Block::ToolResult(r2) = &history[2].content[1] else {
        panic!()
    };
    assert_eq!(r2.tool_use_id, "t2");
    assert!(r2.is_error, "the error flag stays");
    assert!(r2.cleared);
    assert_eq!(r2.text(), CLEARED_TEXT);
    assert_eq!(
        mask_tool_results(&mut history, &ids),
        (0, 0),
        "masking twice clears nothing more"
    );
    assert_eq!(tool_name(&history, "t2"), Some("Bash"));
    assert_eq!(user_authored_texts(&history), vec!["read both".to_string()]);
}

#[test]
fn a_cut_answer_sends_its_text_and_signed_thinking_only() {
    let partial = Message::assistant(vec![
        Block::Thinking(Thinking {
            thinking: "plan".into(),
            signature: "s".into(),
        }),
        Block::text("Here is the"),
        Block::ToolUse(ToolUse {
            id: "t".into(),
            name: "Read".into(),
            input: json!("{\"file_pa"),
        }),
    ]);
    let sent = partial.sendable_partial().unwrap();
    assert_eq!(sent.content.len(), 2);
    assert!(matches!(sent.content[1], Block::Text(_)));

    let unsigned = Message::assistant(vec![Block::Thinking(Thinking {
        thinking: "pl".into(),
        signature: String::new(),
    })]);
    assert_eq!(
        unsigned.sendable_partial(),
        None,
        "unsigned thinking cannot be sent back"
    );
    let tool_only = Message::assistant(vec![Block::ToolUse(ToolUse {
        id: "t".into(),
        name: "Read".into(),
        input: json!({}),
    })]);
    assert_eq!(tool_only.sendable_partial(), None);
}

#[test]
fn stop_reasons_unknown_to_us_are_kept_verbatim() {
    let m = parse(json!({"role": "assistant", "content": [], "stop_reason": "brand_new"}));
    assert_eq!(m.stop_reason, Some(StopReason::Other("brand_new".into())));
    assert_eq!(
        serde_json::to_value(&m).unwrap()["stop_reason"],
        "brand_new"
    );
}

/// A ToolSearch result as the reference CLI writes it (and as we do): `tool_reference` parts,
/// read back the same, and the loaded set a resumed session rebuilds from them.
#[test]
fn tool_references_round_trip_and_give_the_loaded_tools() {
    let m = parse(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "tool_reference", "tool_name": "mcp__demo__add"},
            {"type": "tool_reference", "tool_name": "mcp__demo__echo"}
        ]},
        {"type": "text", "text": "Tool loaded."}
    ]}));
    let Block::ToolResult(r) = &m.content[0] else {
        panic!("{m:?}")
    };
    assert_eq!(
        r.references().collect::<Vec<_>>(),
        ["mcp__demo__add", "mcp__demo__echo"]
    );
    let again: Message = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(again, m);
    let later = parse(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
            {"type": "tool_reference", "tool_name": "mcp__demo__echo"},
            {"type": "tool_reference", "tool_name": "mcp__web__fetch"}
        ]}
    ]}));
    assert_eq!(
        loaded_tools(&[m, Message::assistant(vec![]), later]),
        ["mcp__demo__add", "mcp__demo__echo", "mcp__web__fetch"]
    );
}
