//! JSON-RPC 2.0 messages as the server sees them: ids, requests, notifications, responses,
//! errors with JSON-RPC's codes (and the few LSP and ACP add), and how each is written.
//!
//! Results are written from bytes already serialised by the handler ([`response_ok`]), so a large
//! cached result (a preview) goes to the output without an intermediate `Value`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: an integer, a string, or `null` for answers to messages whose id was unusable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    String(String),
    Null,
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
            Id::Null => f.write_str("null"),
        }
    }
}

impl Id {
    /// The id of a `$/cancelRequest`'s params.
    pub fn from_value(v: &Value) -> Option<Id> {
        match v {
            Value::Number(n) => n.as_i64().map(Id::Number),
            Value::String(s) => Some(Id::String(s.clone())),
            _ => None,
        }
    }
}

/// JSON-RPC error codes, and those LSP and ACP add.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// LSP: a request before `initialize`.
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// LSP and ACP: the request was cancelled.
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// ACP: authentication is required first (no API key).
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: the resource (a session) does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// The `error` member of a response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ResponseError {
    pub fn new(code: i64, message: impl Into<String>) -> ResponseError {
        ResponseError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32602`, the message starting with `Invalid params: ` once.
    pub fn invalid_params(msg: impl AsRef<str>) -> ResponseError {
        let msg = msg.as_ref();
        let msg = msg.strip_prefix("Invalid params: ").unwrap_or(msg);
        ResponseError::new(code::INVALID_PARAMS, format!("Invalid params: {msg}"))
    }

    pub fn invalid_request(msg: impl AsRef<str>) -> ResponseError {
        ResponseError::new(
            code::INVALID_REQUEST,
            format!("Invalid request: {}", msg.as_ref()),
        )
    }

    pub fn method_not_found(method: &str) -> ResponseError {
        ResponseError::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    pub fn internal(msg: impl Into<String>) -> ResponseError {
        ResponseError::new(code::INTERNAL_ERROR, msg)
    }
}

/// A request from the client.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    pub params: Option<Value>,
}

/// A notification from the client.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// The client's answer to a server → client request.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub id: Id,
    pub result: Result<Value, ResponseError>,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    error: &'a ResponseError,
}

#[derive(Serialize)]
struct OutMessage<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    method: &'a str,
    params: &'a P,
}

/// A success response whose result is already serialised JSON.
pub fn response_ok(id: &Id, result_json: &[u8]) -> Vec<u8> {
    let id = serde_json::to_vec(id).unwrap_or_else(|_| b"null".to_vec());
    let mut out = Vec::with_capacity(result_json.len() + id.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(&id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result_json);
    out.push(b'}');
    out
}

/// An error response.
pub fn response_err(id: &Id, error: &ResponseError) -> Vec<u8> {
    serde_json::to_vec(&OutError {
        jsonrpc: "2.0",
        id,
        error,
    })
    .unwrap_or_default()
}

/// A notification (no id) or a request (with an id) from the server.
pub fn message<P: Serialize>(id: Option<&Id>, method: &str, params: &P) -> Vec<u8> {
    serde_json::to_vec(&OutMessage {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shapes() {
        assert_eq!(
            String::from_utf8(response_ok(&Id::Number(3), b"null")).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#
        );
        assert_eq!(
            String::from_utf8(response_err(
                &Id::String("a".into()),
                &ResponseError::invalid_params("Invalid params: x")
            ))
            .unwrap(),
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Invalid params: x"}}"#
        );
        assert_eq!(
            String::from_utf8(message(None, "m/x", &serde_json::json!({"a": 1}))).unwrap(),
            r#"{"jsonrpc":"2.0","method":"m/x","params":{"a":1}}"#
        );
    }
}
