//! The command line's side of the warm path: `preview` and `check` ask the running server of a
//! workspace folder holding `--cwd` over the local socket ([`crate::rpc::local`]) for the answer
//! it keeps current ([`crate::features::warm`]), and compute it themselves when there is none,
//! it declines, or anything goes wrong (silently: the answer is the same either way).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::features::warm::{Answer, Request};
use crate::host::Host;
use crate::rpc::local;

/// How long a client waits for a server (connecting, asking and reading the answer) before
/// computing the answer itself. A server answers from kept state in milliseconds or declines at
/// once; this bounds one that hangs, at a small fraction of what a cold walk of a large tree
/// costs.
pub const ASK_LIMIT: Duration = Duration::from_millis(200);

/// Asks the running servers of the folders holding `cwd` (a real path), innermost first.
pub fn ask(host: &Host, cwd: &Path, req: &Request) -> Option<Answer> {
    let dir = local::socket_dir(host.var("XDG_RUNTIME_DIR"), host.state_dir().as_deref())?;
    let sockets = local::candidates(&dir, cwd);
    if sockets.is_empty() {
        return None;
    }
    let bytes = serde_json::to_vec(req).ok()?;
    let deadline = Instant::now() + ASK_LIMIT;
    for sock in sockets {
        let Some(raw) = local::ask(&sock, &bytes, deadline) else {
            continue;
        };
        match serde_json::from_slice::<Answer>(&raw) {
            Ok(Answer::Declined { why }) => {
                crate::log_debug!("the server at {} declined: {why}", sock.display());
            }
            Ok(a) => {
                crate::log_debug!("answered by the running server at {}", sock.display());
                return Some(a);
            }
            Err(e) => crate::log_debug!("the server at {} answered garbage: {e}", sock.display()),
        }
    }
    None
}
