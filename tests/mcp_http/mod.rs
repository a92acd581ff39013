//! The MCP servers of the tests that listen on 127.0.0.1 (`tests/data/mcp/demo_server.py
//! --http` or `--sse`, `hostile_http_server.py`): started on a free port, waited for, killed when dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/mcp")
        .join(name)
        .display()
        .to_string()
}

/// The PyPI `mcp` SDK that `.ci/run` installs in `${XDG_CACHE_HOME:-$HOME/.cache}/claude-context-ci`
/// when `python3` has none of its own.
fn python_sdk_dir() -> Option<String> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("claude-context-ci/python-mcp");
    dir.join("mcp").is_dir().then(|| dir.display().to_string())
}

/// A Python HTTP server of the tests on 127.0.0.1, killed when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub port: u16,
    /// Its stderr (the hostile server says there how much it sent).
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    /// `script` with `args`, `{port}` in them replaced by a free port; waits (up to 60 s, a
    /// loaded machine) until it accepts connections.
    pub fn start(script: &str, args: &[&str]) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(data(script))
            .args(args.iter().map(|a| a.replace("{port}", &port.to_string())))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap());
        if let Some(d) = python_sdk_dir() {
            cmd.env("PYTHONPATH", d);
        }
        let child = cmd.spawn().unwrap();
        let mut server = HttpServer {
            child,
            port,
            stderr,
            _dir: dir,
        };
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "{script} exited ({status}): {} (is PyPI `mcp` installed? .ci/run installs it)",
                    server.stderr()
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{script} never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The event stream of an HTTP+SSE server (`demo_server.py --sse`, the `sse-` modes).
    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
