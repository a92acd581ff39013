//! Streaming latency benchmark (`cargo bench --bench sse`).
//!
//! P9 (`../shared/spec/quality.md`): SSE bytes in → typed event out adds ≤ 1 ms per delta (p99).
//!
//! - `decode`: the pure path, per delta: SSE framing, the Messages API event parsed into an
//!   [`Event`], folded into the answer ([`Accumulator`]). Fed one network chunk per event, as the
//!   API sends them. Baseline in the same run: `json_value_only`, parsing each event's data as
//!   a `serde_json::Value` and nothing else.
//! - `round_trip`: one delta over real HTTP on 127.0.0.1 through [`HttpProvider`] (hyper, the
//!   decoder, the retry driver), from "server, write the next event" to the typed event in hand.
//!   Baseline in the same run: `round_trip_raw_tcp`, the same bytes read from a bare socket:
//!   the loopback and wake-up floor. The difference is what the client adds.
//!
//! divan reports the slowest sample: with `sample_size = 1` every delta is a sample, so the
//! slowest bounds p99 from above.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive real processes and set their own environment.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::LazyLock;

use claude_context::conversation::Message;
use claude_context::llm::anthropic::{self, Config, Credential};
use claude_context::llm::{
    Accumulator, CancellationToken, Decoded, Event, EventStream, Provider, Request, RetryPolicy,
    Secret, StreamDecoder,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

fn main() {
    percentiles();
    divan::main();
}

const DELTAS: usize = 1000;

fn frame(event: &str, data: &str) -> Vec<u8> {
    format!("event: {event}\ndata: {data}\n\n").into_bytes()
}

fn delta_frame(i: usize) -> Vec<u8> {
    frame(
        "content_block_delta",
        &format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"word {i} of the answer, with \"quotes\" and é "}}}}"#
        ),
    )
}

const START: &str = r#"{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":5000,"output_tokens":1}}}"#;
const BLOCK: &str =
    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;

/// One chunk per event: message start, block start, then `DELTAS` text deltas.
static CHUNKS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let mut v = vec![
        frame("message_start", START),
        frame("content_block_start", BLOCK),
    ];
    v.extend((0..DELTAS).map(delta_frame));
    v
});

#[divan::bench]
fn decode(b: Bencher) {
    b.counter(ItemsCount::new(DELTAS)).bench(|| {
        let mut d = anthropic::Decoder::new();
        let mut acc = Accumulator::new();
        let mut out = Vec::with_capacity(4);
        for chunk in CHUNKS.iter() {
            d.push(chunk, &mut out).expect("valid");
            for item in out.drain(..) {
                if let Decoded::Event(e) = item {
                    acc.apply(&e);
                    black_box(&e);
                }
            }
        }
        black_box(acc.has_content())
    });
}

#[divan::bench]
fn json_value_only(b: Bencher) {
    b.counter(ItemsCount::new(DELTAS)).bench(|| {
        let mut n = 0;
        for chunk in CHUNKS.iter() {
            let text = std::str::from_utf8(chunk).expect("utf-8");
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            let v: serde_json::Value = serde_json::from_str(data).expect("json");
            n += usize::from(v.is_object());
        }
        black_box(n)
    });
}

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
});

/// A server that answers one request with an SSE head and then writes one delta per signal.
async fn paced_server(http: bool) -> (String, mpsc::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, mut rx) = mpsc::channel::<()>(1);
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.expect("accept");
        s.set_nodelay(true).expect("nodelay");
        if http {
            // Read the request head and body (the client sends Content-Length).
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = s.read(&mut chunk).await.expect("read");
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().expect("length"));
                    if buf.len() >= i + 4 + len {
                        break;
                    }
                }
            }
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .expect("head");
        }
        let write = |bytes: Vec<u8>| {
            let mut out = Vec::new();
            if http {
                out.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                out.extend_from_slice(&bytes);
                out.extend_from_slice(b"\r\n");
            } else {
                out = bytes;
            }
            out
        };
        let first = [
            write(frame("message_start", START)),
            write(frame("content_block_start", BLOCK)),
        ]
        .concat();
        s.write_all(&first).await.expect("write");
        let mut i = 0;
        while rx.recv().await.is_some() {
            let bytes = write(delta_frame(i));
            i += 1;
            if s.write_all(&bytes).await.is_err() {
                return;
            }
        }
    });
    (format!("http://{addr}"), tx)
}

/// A stream through the real client, positioned after the block start.
fn client_stream() -> (mpsc::Sender<()>, EventStream) {
    static HISTORY: LazyLock<Vec<Message>> = LazyLock::new(|| vec![Message::user("go")]);
    RT.block_on(async {
        let (url, tx) = paced_server(true).await;
        let provider = anthropic::provider(
            Config {
                base_url: url,
                credential: Credential::ApiKey(Secret::new("sk-bench-0000000000")),
                proxy: Default::default(),
            },
            RetryPolicy::default(),
        )
        .expect("provider");
        let mut stream = provider.stream(
            &Request::new("claude-bench", 100, &HISTORY),
            CancellationToken::new(),
        );
        for _ in 0..2 {
            stream.next().await.expect("event").expect("ok");
        }
        (tx, stream)
    })
}

/// One delta through the client.
fn client_delta(tx: &mpsc::Sender<()>, stream: &mut EventStream) -> usize {
    RT.block_on(async {
        tx.send(()).await.expect("signal");
        loop {
            match stream.next().await {
                Some(Ok(Event::TextDelta { text, .. })) => break text.len(),
                Some(Ok(_)) => continue,
                other => panic!("{other:?}"),
            }
        }
    })
}

/// A bare socket to the same kind of server, positioned after the two opening events.
fn raw_socket() -> (mpsc::Sender<()>, tokio::net::TcpStream) {
    RT.block_on(async {
        let (url, tx) = paced_server(false).await;
        let addr = url.trim_start_matches("http://");
        let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
        sock.set_nodelay(true).expect("nodelay");
        let mut buf = Vec::new();
        while buf.windows(2).filter(|w| w == b"\n\n").count() < 2 {
            let mut chunk = [0u8; 4096];
            let n = sock.read(&mut chunk).await.expect("read");
            buf.extend_from_slice(&chunk[..n]);
        }
        (tx, sock)
    })
}

/// One event's bytes from the bare socket.
fn raw_delta(tx: &mpsc::Sender<()>, sock: &mut tokio::net::TcpStream) -> usize {
    RT.block_on(async {
        tx.send(()).await.expect("signal");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.ends_with(b"\n\n") {
            let n = sock.read(&mut chunk).await.expect("read");
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.len()
    })
}

#[divan::bench(sample_count = 2000, sample_size = 1)]
fn round_trip(b: Bencher) {
    let (tx, stream) = client_stream();
    let stream = RefCell::new(stream);
    b.bench_local(|| black_box(client_delta(&tx, &mut stream.borrow_mut())));
}

#[divan::bench(sample_count = 2000, sample_size = 1)]
fn round_trip_raw_tcp(b: Bencher) {
    let (tx, sock) = raw_socket();
    let sock = RefCell::new(sock);
    b.bench_local(|| black_box(raw_delta(&tx, &mut sock.borrow_mut())));
}

/// p50, p99 and p99.9 of both round trips, alternating deltas so both see the same load.
fn percentiles() {
    const N: usize = 20_000;
    let (ctx, mut stream) = client_stream();
    let (rtx, mut sock) = raw_socket();
    let (mut ours, mut raw) = (Vec::with_capacity(N), Vec::with_capacity(N));
    for _ in 0..N {
        let t = std::time::Instant::now();
        black_box(client_delta(&ctx, &mut stream));
        ours.push(t.elapsed());
        let t = std::time::Instant::now();
        black_box(raw_delta(&rtx, &mut sock));
        raw.push(t.elapsed());
    }
    ours.sort();
    raw.sort();
    let at =
        |v: &[std::time::Duration], p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    eprintln!(
        "sse bench: {N} deltas each, alternating (client through HttpProvider | bare socket | difference)"
    );
    for (name, p) in [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)] {
        let (a, b) = (at(&ours, p), at(&raw, p));
        eprintln!(
            "  {name:>5}: {a:>10.1?} | {b:>10.1?} | {:>10.1?}",
            a.saturating_sub(b)
        );
    }
}
