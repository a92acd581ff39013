//! The fake API's script as JSON: what the standalone program (`tests/fake-api`, for the editor
//! clients' tests) reads from its `--script` file and takes on `POST /_fake/replies`, and the
//! realistic `usage` figures a reply gets when its script gives none.
//!
//! The format is documented in `docs/fake-anthropic.md`; every key is checked, so a typo in a
//! test's script is an error naming it, never a silently different reply.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Fault, Frame, Reply, Turn};

/// A script: an array of replies, or `{"replies": [...]}`.
pub fn parse_script(v: &Value) -> Result<Vec<Reply>, String> {
    let list = match v {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("replies") {
            Some(Value::Array(items)) if o.len() == 1 => items,
            _ => return Err("a script is an array of replies or {\"replies\": [...]}".into()),
        },
        _ => return Err("a script is an array of replies or {\"replies\": [...]}".into()),
    };
    list.iter()
        .enumerate()
        .map(|(i, r)| parse_reply(r).map_err(|e| format!("reply {i}: {e}")))
        .collect()
}

/// One reply: a turn (`text`, `thinking`, `toolUses` or `blocks`), an error status, or a hang.
pub fn parse_reply(v: &Value) -> Result<Reply, String> {
    let o = v.as_object().ok_or("a reply is an object")?;
    if o.get("hang") == Some(&Value::Bool(true)) {
        only(o, &["hang"])?;
        return Ok(Reply::Hang);
    }
    if let Some(status) = o.get("status") {
        only(
            o,
            &[
                "status",
                "error",
                "body",
                "contentType",
                "retryAfter",
                "headers",
            ],
        )?;
        let status = status
            .as_u64()
            .filter(|s| (100..600).contains(s))
            .ok_or("`status` is an HTTP status number")? as u16;
        let mut reply = if let Some(body) = o.get("body") {
            let body = body.as_str().ok_or("`body` is a string")?;
            let ct = str_field(o, "contentType")?.unwrap_or("application/json");
            Reply::raw(status, ct, body)
        } else {
            let e = o.get("error").and_then(Value::as_object);
            let kind = e
                .and_then(|e| e.get("type"))
                .and_then(Value::as_str)
                .unwrap_or(default_kind(status));
            let message = e
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("fake error");
            Reply::error(status, kind, message)
        };
        if let Some(after) = str_or_number(o, "retryAfter")? {
            reply = reply.retry_after(&after);
        }
        reply = with_headers(reply, o)?;
        return Ok(reply);
    }
    only(
        o,
        &[
            "id",
            "text",
            "thinking",
            "signature",
            "toolUses",
            "blocks",
            "stop",
            "usage",
            "piece",
            "paceMs",
            "splitEvery",
            "fault",
            "headers",
        ],
    )?;
    let mut turn = Turn::new();
    if let Some(id) = str_field(o, "id")? {
        turn = turn.id(id);
    }
    if o.contains_key("blocks") {
        for k in ["text", "thinking", "toolUses"] {
            if o.contains_key(k) {
                return Err(format!("`{k}` and `blocks` cannot be used together"));
            }
        }
        let blocks = o
            .get("blocks")
            .and_then(Value::as_array)
            .ok_or("`blocks` is an array")?;
        for (i, b) in blocks.iter().enumerate() {
            turn = block(turn, b).map_err(|e| format!("block {i}: {e}"))?;
        }
    } else {
        if let Some(t) = str_field(o, "thinking")? {
            turn = turn.thinking(t, str_field(o, "signature")?.unwrap_or("sig_fake"));
        }
        if let Some(t) = str_field(o, "text")? {
            turn = turn.text(t);
        }
        if let Some(uses) = o.get("toolUses") {
            let uses = uses.as_array().ok_or("`toolUses` is an array")?;
            for (i, u) in uses.iter().enumerate() {
                turn = tool_use(turn, u).map_err(|e| format!("toolUses[{i}]: {e}"))?;
            }
        }
    }
    if let Some(stop) = str_field(o, "stop")? {
        turn = turn.stop(stop);
    }
    if let Some(piece) = o.get("piece") {
        let n = piece
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or("`piece` is a positive number")?;
        turn = turn.piece(n as usize);
    }
    let explicit_usage = match o.get("usage") {
        None => None,
        Some(u) => Some(usage(u)?),
    };
    if let Some((i, out, cc, cr)) = explicit_usage {
        turn = turn.usage(i, out, cc, cr);
    }
    let mut reply: Reply = turn.into();
    if explicit_usage.is_none() {
        reply = reply.auto_usage();
    }
    if let Some(ms) = o.get("paceMs") {
        let ms = ms.as_u64().ok_or("`paceMs` is a number")?;
        reply = reply.pace(Duration::from_millis(ms));
    }
    if let Some(n) = o.get("splitEvery") {
        let n = n
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or("`splitEvery` is a positive number")?;
        reply = reply.split_every(n as usize);
    }
    if let Some(f) = o.get("fault") {
        let (after, fault) = fault(f)?;
        reply = reply.fault_after(after, fault);
    }
    with_headers(reply, o)
}

fn block(turn: Turn, b: &Value) -> Result<Turn, String> {
    let o = b.as_object().ok_or("a block is an object")?;
    if let Some(t) = o.get("text") {
        only(o, &["text"])?;
        return Ok(turn.text(t.as_str().ok_or("`text` is a string")?));
    }
    if let Some(t) = o.get("thinking") {
        only(o, &["thinking", "signature"])?;
        let sig = str_field(o, "signature")?.unwrap_or("sig_fake");
        return Ok(turn.thinking(t.as_str().ok_or("`thinking` is a string")?, sig));
    }
    if let Some(u) = o.get("toolUse") {
        only(o, &["toolUse"])?;
        return tool_use(turn, u);
    }
    Err("a block has `text`, `thinking` or `toolUse`".into())
}

fn tool_use(turn: Turn, u: &Value) -> Result<Turn, String> {
    let o = u.as_object().ok_or("a tool use is an object")?;
    only(o, &["id", "name", "input"])?;
    let name = str_field(o, "name")?.ok_or("a tool use needs `name`")?;
    let id = str_field(o, "id")?.ok_or("a tool use needs `id`")?;
    let input = o.get("input").cloned().unwrap_or_else(|| json!({}));
    Ok(turn.tool_use(id, name, input))
}

fn usage(u: &Value) -> Result<(u64, u64, u64, u64), String> {
    let o = u.as_object().ok_or("`usage` is an object")?;
    only(o, &["input", "output", "cacheCreation", "cacheRead"])?;
    let n = |k: &str| -> Result<u64, String> {
        match o.get(k) {
            None => Ok(0),
            Some(v) => v.as_u64().ok_or(format!("`usage.{k}` is a number")),
        }
    };
    Ok((
        n("input")?,
        n("output")?,
        n("cacheCreation")?,
        n("cacheRead")?,
    ))
}

fn fault(f: &Value) -> Result<(usize, Fault), String> {
    let o = f.as_object().ok_or("`fault` is an object")?;
    only(o, &["after", "kind", "ms", "type", "message"])?;
    let after =
        o.get("after")
            .and_then(Value::as_u64)
            .ok_or("`fault.after` (events sent before the fault) is a number")? as usize;
    let kind = str_field(o, "kind")?.ok_or("`fault.kind` is required")?;
    let fault = match kind {
        "reset" => Fault::Reset,
        "stall" => Fault::Stall(Duration::from_millis(
            o.get("ms").and_then(Value::as_u64).unwrap_or(600_000),
        )),
        "garbage" => Fault::Garbage,
        "end" => Fault::End,
        "error" => Fault::ErrorEvent(
            str_field(o, "type")?.unwrap_or("overloaded_error").into(),
            str_field(o, "message")?.unwrap_or("Overloaded").into(),
        ),
        other => {
            return Err(format!(
                "unknown fault kind `{other}` (reset, stall, garbage, end, error)"
            ));
        }
    };
    Ok((after, fault))
}

fn with_headers(mut reply: Reply, o: &Map<String, Value>) -> Result<Reply, String> {
    if let Some(h) = o.get("headers") {
        let h = h.as_object().ok_or("`headers` is an object of strings")?;
        for (k, v) in h {
            let v = v.as_str().ok_or("`headers` is an object of strings")?;
            reply = reply.header(&k.to_ascii_lowercase(), v);
        }
    }
    Ok(reply)
}

fn only(o: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(format!(
            "unknown key `{k}` here (allowed: {})",
            allowed.join(", ")
        )),
    }
}

fn str_field<'a>(o: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, String> {
    match o.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{k}` is a string")),
    }
}

fn str_or_number(o: &Map<String, Value>, k: &str) -> Result<Option<String>, String> {
    match o.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("`{k}` is a string or a number")),
    }
}

fn default_kind(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Figures the real API would report for `body` (a Messages request), given the bodies the
/// server saw before it. The request is read in the API's cache order (tools, system blocks,
/// then each message's content blocks); the units up to the last one carrying `cache_control`
/// are the cacheable prefix. The leading units an earlier request had too are read from the
/// cache, the rest of the prefix is written, and what follows is plain input. A prefix under
/// 1,024 tokens is not cached (as the API does for most models). Tokens are bytes / 4 of each
/// unit's JSON, the ratio the project's own estimates use. Returns (input, creation, read).
pub fn realistic_usage(body: &[u8], earlier: &[&[u8]]) -> (u64, u64, u64) {
    let units = cache_units(body);
    let tokens = |us: &[String]| us.iter().map(|u| u.len().div_ceil(4) as u64).sum::<u64>();
    let cacheable = units
        .iter()
        .rposition(|u| u.contains("\"cache_control\""))
        .map_or(0, |i| i + 1);
    let shared = earlier
        .iter()
        .map(|e| {
            let other = cache_units(e);
            units.iter().zip(&other).take_while(|(a, b)| a == b).count()
        })
        .max()
        .unwrap_or(0)
        .min(cacheable);
    let rest = tokens(&units[cacheable..]).max(1);
    if tokens(&units[..cacheable]) < 1024 {
        return (rest + tokens(&units[..cacheable]), 0, 0);
    }
    let read = if tokens(&units[..shared]) >= 1024 {
        tokens(&units[..shared])
    } else {
        0
    };
    let creation = tokens(&units[..cacheable]) - read;
    (rest, creation, read)
}

/// The request's parts in the order the API caches them, each as its JSON text.
fn cache_units(body: &[u8]) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return vec![String::from_utf8_lossy(body).into_owned()];
    };
    let mut units = Vec::new();
    for t in v["tools"].as_array().into_iter().flatten() {
        units.push(t.to_string());
    }
    match &v["system"] {
        Value::String(s) => units.push(s.clone()),
        Value::Array(blocks) => units.extend(blocks.iter().map(Value::to_string)),
        _ => {}
    }
    for m in v["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::Array(blocks) => units.extend(blocks.iter().map(Value::to_string)),
            other => units.push(other.to_string()),
        }
    }
    units
}

/// Rewrites a stream's `message_start` usage and `message_delta` output tokens with the
/// realistic figures for `body` (see [`realistic_usage`]).
pub fn apply_usage(frames: &mut [Frame], body: &[u8], earlier: &[&[u8]]) {
    let (input, creation, read) = realistic_usage(body, earlier);
    let mut output_chars = 0usize;
    for f in frames.iter_mut() {
        let Ok(mut data) = serde_json::from_str::<Value>(&f.data) else {
            continue;
        };
        match f.event.as_str() {
            "message_start" => {
                data["message"]["usage"] = json!({
                    "input_tokens": input, "cache_creation_input_tokens": creation,
                    "cache_read_input_tokens": read, "output_tokens": 1});
            }
            "content_block_delta" => {
                let d = &data["delta"];
                for k in ["text", "thinking", "partial_json"] {
                    if let Some(s) = d.get(k).and_then(Value::as_str) {
                        output_chars += s.len();
                    }
                }
                continue;
            }
            "message_delta" => {
                data["usage"] = json!({"output_tokens": (output_chars.div_ceil(4) as u64).max(1)});
            }
            _ => continue,
        }
        *f = Frame::new(&f.event.clone(), data);
    }
}
