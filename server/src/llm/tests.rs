//! The provider-neutral parts: what an error tells a person, and how events fold into a message
//! when a stream is cut.

use serde_json::json;

use super::*;
use crate::conversation::Block;

fn error(kind: ErrorKind) -> Error {
    Error {
        kind,
        message: "Overloaded".into(),
        status: Some(529),
        api_type: Some("overloaded_error".into()),
        request_id: Some("req_01".into()),
        attempts: 5,
        partial: None,
    }
}

#[test]
fn an_error_says_what_where_and_how_often() {
    assert_eq!(
        error(ErrorKind::Overloaded).to_string(),
        "the model API is overloaded (529 overloaded_error): Overloaded (after 5 tries) [request req_01]"
    );
    let mut e = error(ErrorKind::Rejected);
    e.status = Some(401);
    e.api_type = Some("authentication_error".into());
    e.message = "invalid x-api-key".into();
    e.attempts = 1;
    assert_eq!(
        e.to_string(),
        "the model API refused the request (401 authentication_error): invalid x-api-key [request req_01]"
    );
    assert!(e.is_auth());
    assert_eq!(error(ErrorKind::Cancelled).to_string(), "cancelled");
}

#[test]
fn a_cut_tool_call_keeps_its_raw_input() {
    let mut acc = Accumulator::new();
    for e in [
        Event::MessageStart {
            id: "m".into(),
            model: "x".into(),
            usage: Default::default(),
        },
        Event::BlockStart {
            index: 0,
            kind: BlockKind::Text,
        },
        Event::TextDelta {
            index: 0,
            text: "Reading".into(),
        },
        Event::BlockStop { index: 0 },
        Event::BlockStart {
            index: 1,
            kind: BlockKind::ToolUse {
                id: "t".into(),
                name: "Read".into(),
            },
        },
        Event::ToolInputDelta {
            index: 1,
            json: "{\"file_path\": \"/a".into(),
        },
    ] {
        acc.apply(&e);
    }
    assert!(acc.has_content());
    let m = acc.message();
    assert_eq!(m.stop_reason, None, "a partial answer has no stop reason");
    assert_eq!(m.content[0], Block::text("Reading"));
    let Block::ToolUse(t) = &m.content[1] else {
        panic!()
    };
    assert_eq!(t.input, json!("{\"file_path\": \"/a"));
    acc.reset();
    assert!(!acc.has_content());
}

#[test]
fn a_tool_call_without_arguments_has_an_empty_object() {
    let mut acc = Accumulator::new();
    acc.apply(&Event::BlockStart {
        index: 0,
        kind: BlockKind::ToolUse {
            id: "t".into(),
            name: "TodoRead".into(),
        },
    });
    acc.apply(&Event::BlockStop { index: 0 });
    let Block::ToolUse(t) = &acc.message().content[0] else {
        panic!()
    };
    assert_eq!(t.input, json!({}));
}
