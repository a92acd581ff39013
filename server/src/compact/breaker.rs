//! The circuit breaker: after 3 consecutive failed compactions, automatic compaction stops for
//! the session, and the user is told why and what to do. A success resets the count.
//!
//! A failure is an API error, a reply without a summary, a result still above the automatic
//! threshold, or one that freed less than 5% (the stall guard). A cancelled compaction, or one
//! with nothing to compact, is not a failure. Manual compaction always runs; its outcome counts
//! like any other, so a manual success turns automatic compaction back on. The count is the
//! running session's: a resumed session starts at zero.

use super::full::Failure;

/// Consecutive failures that stop automatic compaction.
pub const LIMIT: u32 = 3;

/// The session's count of consecutive failures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Breaker {
    failures: u32,
}

impl Breaker {
    /// Whether automatic compaction may run.
    pub fn allows_auto(&self) -> bool {
        self.failures < LIMIT
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    pub fn success(&mut self) {
        self.failures = 0;
    }

    /// Counts a failure. Returns the message for the user when this one stops automatic
    /// compaction.
    pub fn failure(&mut self, failure: &Failure) -> Option<String> {
        if !failure.counts() {
            return None;
        }
        self.failures += 1;
        (self.failures == LIMIT).then(|| tripped_message(failure))
    }
}

/// What the user is told when automatic compaction stops.
pub fn tripped_message(last: &Failure) -> String {
    format!(
        "Automatic compaction is off for this session: it failed {LIMIT} times in a row (last: {}). \
         Compact by hand with a focus hint saying what to keep (for example \"the current task and its files\"), \
         or start a new session; the transcript keeps the whole conversation either way.",
        last.message
    )
}
