//! Classification of one JSON-RPC message (a frame's body, a line): a request, a notification,
//! a response, or an error to answer. Invalid JSON is `-32700`; valid JSON that is not a JSON-RPC
//! 2.0 message is `-32600` (with the message's `id` when it has a usable one, else `null`, as
//! JSON-RPC 2.0 §5 asks). Both front ends use it after their own framing (`Content-Length` for
//! LSP, one line per message for ACP).

use serde_json::Value;

use super::jsonrpc::{Id, Notification, Request, Response, ResponseError, code};

/// One decoded frame.
#[derive(Debug)]
pub enum Incoming {
    Request(Request),
    Notification(Notification),
    Response(Response),
    /// Answer this error (to `id`, `null` when unknown).
    Invalid(Id, ResponseError),
    /// A message that needs no answer and cannot be used (e.g. a malformed response); logged.
    Ignore(String),
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array (batches are not part of LSP nor ACP)",
        Value::Object(_) => "an object",
    }
}

/// Decodes one frame body.
pub fn classify(body: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Invalid(
                Id::Null,
                ResponseError::new(code::PARSE_ERROR, format!("Parse error: {e}")),
            );
        }
    };
    let Value::Object(mut map) = value else {
        return Incoming::Invalid(
            Id::Null,
            ResponseError::invalid_request(format!(
                "a message must be a JSON object, got {}",
                kind_of(&value)
            )),
        );
    };
    let has_id = map.contains_key("id");
    let id = match map.get("id") {
        None | Some(Value::Null) => Ok(Id::Null),
        Some(Value::String(s)) => Ok(Id::String(s.clone())),
        Some(Value::Number(n)) => n.as_i64().map(Id::Number).ok_or(()),
        Some(_) => Err(()),
    };
    let answer_id = id.clone().unwrap_or(Id::Null);
    match map.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return Incoming::Invalid(
                answer_id,
                ResponseError::invalid_request(format!("\"jsonrpc\" must be \"2.0\", got {other}")),
            );
        }
        None => {
            return Incoming::Invalid(
                answer_id,
                ResponseError::invalid_request("missing \"jsonrpc\": \"2.0\""),
            );
        }
    }
    let Ok(id) = id else {
        return Incoming::Invalid(
            Id::Null,
            ResponseError::invalid_request(format!(
                "\"id\" must be an integer or a string, got {}",
                map.get("id").map_or("nothing", kind_of)
            )),
        );
    };
    if let Some(method) = map.remove("method") {
        let Value::String(method) = method else {
            return Incoming::Invalid(
                answer_id,
                ResponseError::invalid_request(format!(
                    "\"method\" must be a string, got {}",
                    kind_of(&method)
                )),
            );
        };
        let params = map.remove("params");
        if let Some(p) = &params
            && !matches!(p, Value::Object(_) | Value::Array(_) | Value::Null)
        {
            let msg = format!(
                "\"params\" must be an object or an array, got {}",
                kind_of(p)
            );
            if has_id {
                return Incoming::Invalid(answer_id, ResponseError::invalid_params(msg));
            }
            return Incoming::Ignore(format!("notification {method}: {msg}"));
        }
        return if has_id {
            Incoming::Request(Request { id, method, params })
        } else {
            Incoming::Notification(Notification { method, params })
        };
    }
    if has_id && (map.contains_key("result") || map.contains_key("error")) {
        let result = match (map.remove("result"), map.remove("error")) {
            (_, Some(e)) => match serde_json::from_value::<ResponseError>(e) {
                Ok(e) => Err(e),
                Err(e) => {
                    return Incoming::Ignore(format!("malformed response from the client: {e}"));
                }
            },
            (Some(r), None) => Ok(r),
            (None, None) => Ok(Value::Null),
        };
        return Incoming::Response(Response { id, result });
    }
    Incoming::Invalid(
        answer_id,
        ResponseError::invalid_request(
            "a message needs a \"method\" (request or notification) or a \"result\"/\"error\" (response)",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> (Id, i64) {
        match classify(body.as_bytes()) {
            Incoming::Invalid(id, e) => (id, e.code),
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn classification() {
        assert_eq!(code("{not json"), (Id::Null, -32700));
        assert_eq!(code("true"), (Id::Null, -32600));
        assert_eq!(code("[]"), (Id::Null, -32600));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#),
            (Id::Number(3), -32600)
        );
        assert_eq!(
            code(r#"{"id":"a","method":"x"}"#),
            (Id::String("a".into()), -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            (Id::Null, -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":4,"method":7}"#),
            (Id::Number(4), -32600)
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":5}"#), (Id::Number(5), -32600));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":6,"method":"x","params":3}"#),
            (Id::Number(6), -32602)
        );
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"x","params":3}"#),
            Incoming::Ignore(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}"#),
            Incoming::Request(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            Incoming::Response(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"initialized"}"#),
            Incoming::Notification(_)
        ));
    }
}
