//! `fake-anthropic`: the tests' fake Anthropic Messages API (`tests/fake_anthropic/`) as a
//! program, so the editor clients' tests (Neovim's busted specs, the VS Code extension's
//! `node --test` and end-to-end runs) drive the real `claude-context` binary against the same
//! wire protocol and faults as the Rust suite.
//!
//! ```text
//! fake-anthropic [--script FILE|-] [--port N] [--watch-stdin]
//! ```
//!
//! It listens on 127.0.0.1 (`--port`, default a free one), prints one line of JSON,
//! `{"port":N,"baseUrl":"http://127.0.0.1:N"}`, and serves until it is killed, asked
//! `POST /_fake/quit`, or (with `--watch-stdin`) its standard input ends. The script (a JSON
//! array of replies) and the control routes are documented in `docs/fake-anthropic.md`.

#[path = "../../fake_anthropic/mod.rs"]
mod fake_anthropic;

use std::process::ExitCode;

use fake_anthropic::{FakeAnthropic, parse_script};
use tokio::io::AsyncReadExt;

struct Args {
    script: Option<String>,
    port: u16,
    watch_stdin: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        script: None,
        port: 0,
        watch_stdin: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--script" => args.script = Some(it.next().ok_or("--script needs a file (or -)")?),
            "--port" => {
                args.port = it
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?
            }
            "--watch-stdin" => args.watch_stdin = true,
            "-h" | "--help" => {
                return Err(
                    "usage: fake-anthropic [--script FILE|-] [--port N] [--watch-stdin]".into(),
                );
            }
            other => return Err(format!("unknown argument `{other}` (see --help)")),
        }
    }
    if args.watch_stdin && args.script.as_deref() == Some("-") {
        return Err("--watch-stdin and --script - both want standard input".into());
    }
    Ok(args)
}

fn read_script(from: &str) -> Result<Vec<fake_anthropic::Reply>, String> {
    let text = if from == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("reading stdin: {e}"))?
    } else {
        std::fs::read_to_string(from).map_err(|e| format!("reading {from}: {e}"))?
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("the script is not JSON: {e}"))?;
    parse_script(&value)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fake-anthropic: {e}");
            return ExitCode::from(2);
        }
    };
    let replies = match args.script.as_deref().map(read_script).transpose() {
        Ok(r) => r.unwrap_or_default(),
        Err(e) => {
            eprintln!("fake-anthropic: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match FakeAnthropic::start_on(args.port).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "fake-anthropic: cannot listen on 127.0.0.1:{}: {e}",
                args.port
            );
            return ExitCode::from(1);
        }
    };
    for r in replies {
        server.push(r);
    }
    // Before the line: a caller may kill it as soon as it has read the line.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    let line = serde_json::json!({"port": server.port(), "baseUrl": server.base_url()});
    #[allow(clippy::print_stdout)] // reason: the one line the caller reads to find the port.
    {
        println!("{line}");
    }
    let stdin_closed = async {
        if args.watch_stdin {
            let mut buf = [0u8; 256];
            let mut stdin = tokio::io::stdin();
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = server.quit_requested() => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = stdin_closed => {}
    }
    // Not a return: the runtime's drop would wait for the blocking read of a stdin the caller
    // still holds open, and a killed fake would never end.
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::fake_anthropic::{FakeAnthropic, parse_script, realistic_usage};
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One HTTP/1.1 exchange on a fresh connection; the whole response as text.
    async fn http(port: u16, method: &str, path: &str, body: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        // Read until the response is complete: a chunked stream's terminator, or the length.
        loop {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&out);
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                if head.contains("chunked") {
                    if rest.ends_with("0\r\n\r\n") {
                        break;
                    }
                } else if let Some(len) = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|l| l.trim().parse::<usize>().ok())
                    && rest.len() >= len
                {
                    break;
                }
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn json_body(response: &str) -> Value {
        serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap()
    }

    #[test]
    fn a_typo_in_a_script_is_an_error_naming_the_key() {
        let e = parse_script(&json!([{"text": "hi"}, {"txt": "hi"}]))
            .err()
            .unwrap();
        assert!(e.contains("reply 1") && e.contains("`txt`"), "{e}");
        let e = parse_script(&json!([{"text": "a", "fault": {"after": 1, "kind": "boom"}}]))
            .err()
            .unwrap();
        assert!(e.contains("boom"), "{e}");
    }

    #[test]
    fn usage_reads_what_an_earlier_request_cached() {
        let system = json!([{"type": "text", "text": "x".repeat(10_000),
                             "cache_control": {"type": "ephemeral"}}]);
        let first = json!({"system": system, "messages": [{"role": "user", "content": "hi"}]});
        let second = json!({"system": system, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"},
            {"role": "user", "content": "and then"}]});
        let (first, second) = (first.to_string(), second.to_string());
        let (input, created, read) = realistic_usage(first.as_bytes(), &[]);
        assert!(
            created > 2000 && read == 0 && input < 10,
            "{input} {created} {read}"
        );
        let (input, created, read) = realistic_usage(second.as_bytes(), &[first.as_bytes()]);
        assert!(
            read > 2000 && created == 0 && input < 20,
            "{input} {created} {read}"
        );
        let small = json!({"system": "short", "messages": []}).to_string();
        let (input, created, read) = realistic_usage(small.as_bytes(), &[]);
        assert!(
            input > 0 && created == 0 && read == 0,
            "nothing cached under 1,024 tokens"
        );
    }

    #[tokio::test]
    async fn replies_are_queued_served_and_recorded_through_the_control_routes() {
        let server = FakeAnthropic::start_on(0).await.unwrap();
        let port = server.port();
        let queued = http(
            port,
            "POST",
            "/_fake/replies",
            &json!([{"text": "Hello there", "piece": 3},
                    {"status": 429, "retryAfter": 1}])
            .to_string(),
        )
        .await;
        assert_eq!(json_body(&queued)["queued"], 2, "{queued}");

        let big = "y".repeat(20_000);
        let request = json!({"model": "m", "system": [{"type": "text", "text": big,
                             "cache_control": {"type": "ephemeral"}}], "messages": []});
        let stream = http(port, "POST", "/v1/messages", &request.to_string()).await;
        assert!(stream.contains("text/event-stream"), "{stream}");
        assert!(
            stream.contains("\"text\":\"Hel\""),
            "deltas of 3 characters"
        );
        assert!(
            stream.contains("\"cache_creation_input_tokens\":50"),
            "a new 20 KB prefix is written to the cache: {stream}"
        );
        let limited = http(port, "POST", "/v1/messages", "{}").await;
        assert!(limited.starts_with("HTTP/1.1 429"), "{limited}");
        assert!(limited.contains("retry-after: 1") && limited.contains("rate_limit_error"));

        let recorded = json_body(&http(port, "GET", "/_fake/requests", "").await);
        assert_eq!(
            recorded.as_array().unwrap().len(),
            2,
            "control calls are not recorded"
        );
        assert_eq!(recorded[0]["body"]["model"], "m");
        let state = json_body(&http(port, "GET", "/_fake/state", "").await);
        assert_eq!(state["remaining"], 0);

        let bad = http(port, "POST", "/_fake/replies", "{\"status\": 99}").await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    }
}
