//! What a session calls: the state it keeps ([`Compactor`]), the decision before each request
//! ([`Compactor::before_request`]) and the manual entry ([`Compactor::run`], `compact/run`).
//!
//! The decision, in the spec's order:
//! 1. The count passes `auto_threshold`: plan masking of every old compactable result; if the
//!    count falls to the threshold or below, mask and stop there.
//! 2. Still above: a full compaction (with the masking first, so the summary request is
//!    smaller), when automatic compaction is on and the breaker allows it.
//! 3. Below the threshold but the last answer is older than `gap_minutes`: mask (the prompt
//!    cache is cold; clearing costs no cache).
//! 4. Above `blocking` with nothing that can run: blocked, with why and what to do.
//!
//! The session applies a decision in this order: write the transcript record, then change the
//! history it sends ([`MaskPlan::apply`], or the [`Compacted`] history once
//! `Writer::compaction` returned), then tell this state ([`Compactor::masked`],
//! [`Compactor::committed`], [`Compactor::failed`]).

use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::breaker::Breaker;
use super::budget::{Level, Policy};
use super::edits;
use super::extractive;
use super::full::{self, Compacted, Failure, Inputs, Reinject, Summariser, Trigger};
use super::mask::{self, Cleared, MaskPlan, MaskTrigger};
use super::tokens::Tally;
use crate::conversation::{Message, Role};
use crate::llm::{AppliedEdit, ContextManagement, ToolSpec};

/// What a session keeps for compaction between requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Compactor {
    pub policy: Policy,
    pub tally: Tally,
    pub breaker: Breaker,
    /// The user messages the newest summary preserves, verbatim (none before a compaction).
    pub preserved: Vec<String>,
}

/// The history as the next request would send it, and the time.
#[derive(Clone, Copy, Debug)]
pub struct Turn<'a> {
    pub history: &'a [Message],
    /// Estimate of the system prompt and tools.
    pub overhead_tokens: u64,
    pub now: DateTime<Utc>,
    /// When the newest answer arrived (the transcript's timestamp on resume).
    pub last_assistant_at: Option<DateTime<Utc>>,
}

/// What to do before a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Send as is.
    Send,
    /// Record and apply this masking, then send.
    Mask(MaskPlan),
    /// Record and apply the masking if any, then compact fully ([`Compactor::full`]), then send.
    Full { mask: Option<MaskPlan> },
    /// Send nothing: the count is above `blocking` and nothing automatic can bring it down.
    Blocked { count: u64, message: String },
}

/// `compact/run`'s `mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The decision before a request (ignoring the breaker and the automatic switch).
    #[default]
    Auto,
    /// Masking of every old compactable result.
    Micro,
    /// A full compaction.
    Full,
}

/// What a manual run did (or would do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ran {
    None,
    Micro,
    Full,
}

/// A manual request.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunRequest<'a> {
    pub mode: Mode,
    /// A focus hint for the summary (`Additional Instructions:`).
    pub focus: Option<&'a str>,
    /// Report what would happen; change nothing, call no model.
    pub dry_run: bool,
}

/// The result of `compact/run`, without protocol types (the LSP layer converts it).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub mode: Ran,
    /// The whole request now (system prompt, tools, messages): the newest usage and the plain
    /// estimate of what came since.
    pub tokens_before: u64,
    /// The whole request after the change, on the same basis (a plain estimate). For a dry run
    /// of a full compaction with a model, the extractive summary stands in for the model's.
    pub tokens_after: u64,
    pub cleared: Vec<Cleared>,
    /// The summary as kept. `None` for masking, and for a dry run with a model (no model call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// User messages the history keeps, verbatim or in the summary's section 6 (all of them).
    pub preserved_user_messages: usize,
    pub duration_ms: u64,
    pub dry_run: bool,
    /// Messages a full compaction replaces with the summary.
    pub summarised_messages: usize,
    /// Files a full compaction re-injects.
    pub reinjected_files: Vec<String>,
    /// What a person should know about the outcome: it would not (or did not) reduce the
    /// conversation, it would be refused and why, the next message would be refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What the session must record and apply after a run that was not a dry run.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    None,
    Mask(MaskPlan),
    Full {
        /// Masking applied before the summary, if any (record it first).
        mask: Option<MaskPlan>,
        compacted: Box<Compacted>,
    },
}

/// A manual run's report and change.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub report: Report,
    pub change: Change,
}

impl Compactor {
    pub fn new(policy: Policy) -> Compactor {
        Compactor {
            policy,
            tally: Tally::default(),
            breaker: Breaker::default(),
            preserved: Vec::new(),
        }
    }

    /// The state of a resumed session: from the replayed history, what masking freed since its
    /// last usage, and the user messages of the compaction it starts from
    /// (`Replay::compaction`'s `user_messages`).
    pub fn resumed(
        policy: Policy,
        history: &[Message],
        tokens_freed_since_usage: u64,
        preserved: Vec<String>,
    ) -> Compactor {
        Compactor {
            policy,
            tally: Tally::resumed(history, tokens_freed_since_usage),
            breaker: Breaker::default(),
            preserved,
        }
    }

    /// The session's count for decisions.
    pub fn count(&self, history: &[Message], overhead_tokens: u64) -> u64 {
        self.tally.count(history, overhead_tokens)
    }

    /// Where the count stands (for a client's warning).
    pub fn level(&self, history: &[Message], overhead_tokens: u64) -> Level {
        self.policy
            .budget
            .level(self.count(history, overhead_tokens))
    }

    /// Tier 2's request field for a request to `provider` with these tools.
    pub fn context_management(
        &self,
        provider: &str,
        tools: &[ToolSpec],
        thinking: bool,
    ) -> Option<ContextManagement> {
        edits::context_management(&self.policy, provider, tools, thinking)
    }

    /// An answer arrived and was appended: `history_len` counts it. `edits` are the API's
    /// applied edits (`Event::ContextEdited`) of that request.
    pub fn answered(&mut self, answer: &Message, history_len: usize, edits: &[AppliedEdit]) {
        self.tally.observe(answer, history_len, edits);
    }

    /// A masking plan was recorded and applied.
    pub fn masked(&mut self, plan: &MaskPlan) {
        self.tally.masked(plan.tokens_freed);
    }

    /// A full compaction was written to the transcript and its history is now the session's.
    pub fn committed(&mut self, c: &Compacted) {
        self.tally.reset();
        self.preserved = c.user_messages.clone();
        self.breaker.success();
    }

    /// A compaction failed (the history is unchanged). Returns the message for the user when
    /// this failure stops automatic compaction.
    pub fn failed(&mut self, failure: &Failure) -> Option<String> {
        self.breaker.failure(failure)
    }

    /// The decision before a request.
    pub fn before_request(&self, turn: &Turn<'_>) -> Decision {
        self.decide(turn, false)
    }

    fn decide(&self, turn: &Turn<'_>, manual: bool) -> Decision {
        let b = &self.policy.budget;
        let count = self.count(turn.history, turn.overhead_tokens);
        if count > b.auto_threshold {
            let plan = mask::plan(turn.history, self.policy.keep_recent, MaskTrigger::Size);
            let after = count.saturating_sub(plan.tokens_freed);
            if !plan.is_empty() && after <= b.auto_threshold {
                return Decision::Mask(plan);
            }
            let mask = (!plan.is_empty()).then_some(plan);
            let answered = turn.history.iter().any(|m| m.role == Role::Assistant);
            let allowed = manual || (self.policy.auto && self.breaker.allows_auto());
            if allowed && answered {
                return Decision::Full { mask };
            }
            if after > b.blocking {
                let why = if !answered {
                    "there is no answer to summarise yet: shorten the message or start a new session"
                } else if !self.policy.auto {
                    "automatic compaction is turned off: compact by hand (a focus hint helps) or start a new session"
                } else {
                    "automatic compaction stopped after repeated failures: compact by hand with a focus hint, or start a new session"
                };
                return Decision::Blocked {
                    count: after,
                    message: format!(
                        "Not sent: the conversation holds about {after} tokens, more than the {} a request may hold; {why}.",
                        b.blocking
                    ),
                };
            }
            return mask.map_or(Decision::Send, Decision::Mask);
        }
        if mask::gap_passed(turn.last_assistant_at, turn.now, self.policy.gap_minutes) {
            let plan = mask::plan(turn.history, self.policy.keep_recent, MaskTrigger::Time);
            if !plan.is_empty() {
                return Decision::Mask(plan);
            }
        }
        Decision::Send
    }

    /// The inputs of a full compaction of `history`.
    pub fn inputs<'a>(
        &'a self,
        history: &'a [Message],
        turn: &Turn<'_>,
        trigger: Trigger,
        focus: Option<&'a str>,
        reinject: &'a Reinject<'a>,
    ) -> Inputs<'a> {
        Inputs {
            history,
            earlier_user_messages: &self.preserved,
            focus,
            trigger,
            tokens_before: self.count(history, turn.overhead_tokens),
            overhead_tokens: turn.overhead_tokens,
            auto_threshold: self.policy.budget.auto_threshold,
            reinject,
        }
    }

    /// A full compaction of the turn's history (tier 3). Changes nothing: on `Ok`, write it
    /// (`Writer::compaction`), use its history, then call [`Compactor::committed`]; on `Err`,
    /// call [`Compactor::failed`].
    pub async fn full(
        &self,
        turn: &Turn<'_>,
        trigger: Trigger,
        focus: Option<&str>,
        reinject: &Reinject<'_>,
        summariser: &Summariser<'_>,
    ) -> Result<Compacted, Failure> {
        full::full(
            &self.inputs(turn.history, turn, trigger, focus, reinject),
            summariser,
        )
        .await
    }

    /// `compact/run`: any tier on demand, or a dry run that changes nothing and calls no
    /// model. The breaker and the automatic switch do not stop a manual run.
    pub async fn run(
        &self,
        request: &RunRequest<'_>,
        turn: &Turn<'_>,
        reinject: &Reinject<'_>,
        summariser: &Summariser<'_>,
    ) -> Result<Run, Failure> {
        let started = Instant::now();
        let history = turn.history;
        let count = self.count(history, turn.overhead_tokens);
        // The figures shown: the whole request, as the API would count it (no decision margin).
        let shown = self.tally.measure(history, turn.overhead_tokens);
        let b = &self.policy.budget;
        let (would, does) = if request.dry_run {
            ("would", "would")
        } else {
            ("did", "does")
        };
        // Above blocking, the next message is refused until the conversation is compacted.
        let blocking_note = (count > b.blocking).then(|| {
            format!(
                "the conversation is above the blocking limit ({} tokens with the 4/3 margin of \
                 the decisions, more than {}): the next message will be refused until it is compacted",
                count, b.blocking
            )
        });
        let join = |a: Option<String>, b: Option<String>| match (a, b) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let preserved = |h: &[Message]| full::required(h, &self.preserved).len();
        let masked_report = |plan: MaskPlan, dry_run: bool| {
            let after = shown.saturating_sub(plan.tokens_freed);
            let note = plan.is_empty().then(|| {
                format!("{would} not reduce the conversation: no old tool result to clear")
            });
            Run {
                report: Report {
                    mode: Ran::Micro,
                    tokens_before: shown,
                    tokens_after: after,
                    cleared: plan.cleared.clone(),
                    summary: None,
                    preserved_user_messages: preserved(history),
                    duration_ms: elapsed(started),
                    dry_run,
                    summarised_messages: 0,
                    reinjected_files: Vec::new(),
                    note: join(note, blocking_note.clone()),
                },
                change: if dry_run {
                    Change::None
                } else {
                    Change::Mask(plan)
                },
            }
        };
        let mask = match request.mode {
            Mode::Micro => {
                let plan = mask::plan(history, self.policy.keep_recent, MaskTrigger::Manual);
                return Ok(masked_report(plan, request.dry_run));
            }
            Mode::Full => None,
            Mode::Auto => match self.decide(turn, true) {
                d @ (Decision::Send | Decision::Blocked { .. }) => {
                    let note = match d {
                        Decision::Blocked { message, .. } => {
                            format!("{would} be refused, because: {message}")
                        }
                        _ => format!(
                            "{would} not reduce the conversation: it is below the automatic \
                             threshold ({} tokens), so nothing {does} compact",
                            b.auto_threshold
                        ),
                    };
                    return Ok(Run {
                        report: Report {
                            mode: Ran::None,
                            tokens_before: shown,
                            tokens_after: shown,
                            cleared: Vec::new(),
                            summary: None,
                            preserved_user_messages: preserved(history),
                            duration_ms: elapsed(started),
                            dry_run: request.dry_run,
                            summarised_messages: 0,
                            reinjected_files: Vec::new(),
                            note: join(Some(note), blocking_note),
                        },
                        change: Change::None,
                    });
                }
                Decision::Mask(plan) => return Ok(masked_report(plan, request.dry_run)),
                Decision::Full { mask } => mask,
            },
        };

        // A full compaction, after the masking when the decision asked for one.
        let masked_history;
        let target: &[Message] = match &mask {
            Some(plan) => {
                let mut h = history.to_vec();
                plan.apply(&mut h);
                masked_history = h;
                &masked_history
            }
            None => history,
        };
        let mut inputs = self.inputs(target, turn, Trigger::Manual, request.focus, reinject);
        // The count before is the session's, masking included.
        inputs.tokens_before = count;
        let cleared = mask.as_ref().map(|m| m.cleared.clone()).unwrap_or_default();
        let mut note = None;
        let compacted = if request.dry_run {
            if let Err(f) = full::last_answer(target) {
                return Ok(Run {
                    report: Report {
                        mode: Ran::None,
                        tokens_before: shown,
                        tokens_after: shown,
                        cleared: Vec::new(),
                        summary: None,
                        preserved_user_messages: preserved(history),
                        duration_ms: elapsed(started),
                        dry_run: true,
                        summarised_messages: 0,
                        reinjected_files: Vec::new(),
                        note: join(
                            Some(format!("would be refused, because {}", f.message)),
                            blocking_note,
                        ),
                    },
                    change: Change::None,
                });
            }
            let required = full::required(target, &self.preserved);
            let raw = extractive::summarise(target, &required, request.focus);
            let mut c = full::assemble(&inputs, &required, &raw);
            c.extractive = true;
            // The real run is judged on its result: say now when it would be refused.
            if let Err(f) = full::judge(&c, &inputs) {
                note = Some(format!("would be refused, because {}", f.message));
            }
            c
        } else {
            full::full(&inputs, summariser).await?
        };
        let after =
            super::tokens::history_tokens(&compacted.history).saturating_add(turn.overhead_tokens);
        if note.is_none() && after >= shown {
            note = Some(format!(
                "{would} not reduce the conversation (about {shown} tokens before, {after} after)"
            ));
        }
        let show_summary = !request.dry_run || matches!(summariser, Summariser::Extractive);
        Ok(Run {
            report: Report {
                mode: Ran::Full,
                tokens_before: shown,
                tokens_after: after,
                cleared,
                summary: show_summary.then(|| compacted.summary.clone()),
                preserved_user_messages: compacted.user_messages.len(),
                duration_ms: elapsed(started),
                dry_run: request.dry_run,
                summarised_messages: compacted.summarised_messages,
                reinjected_files: compacted.reinjected_files.clone(),
                note: join(note, blocking_note.filter(|_| request.dry_run)),
            },
            change: if request.dry_run {
                Change::None
            } else {
                Change::Full {
                    mask,
                    compacted: Box::new(compacted),
                }
            },
        })
    }
}

fn elapsed(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
