//! What hooks' runs mean, event by event, with the exact texts the model gets
//! (`hooks-agents-styles.md` sections 1, 3–7). Runs come in the order the hooks finished, and
//! their texts keep that order.
//!
//! Common rules, as measured:
//! - exit 0: standard output counts. Output that parses as a JSON object is read as JSON
//!   (`hookSpecificOutput.additionalContext`, `decision`, `continue`, …); anything else is plain
//!   text, whose trailing newline is removed. Non-JSON output where JSON decides (PreToolUse) is
//!   ignored.
//! - exit 2: a blocking error; standard output is ignored and standard error is used as written
//!   (its final newline kept).
//! - any other exit, a hook killed at its timeout or by a cancel, one that did not start: it said
//!   nothing.
//! - `systemMessage` never reaches the model (it is shown to the user: [`notices`]).

use serde_json::{Map, Value};

use super::persist::{Kind, Persist};
use super::run::{End, Ran};
use super::{Event, Hook};

/// A run's JSON answer: exit 0 and an object on standard output.
fn json(ran: &Ran) -> Option<Map<String, Value>> {
    if ran.code() != Some(0) {
        return None;
    }
    let t = ran.stdout.trim();
    if !t.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// A run's plain answer: exit 0, not JSON, not empty; its trailing newlines removed.
fn plain(ran: &Ran) -> Option<&str> {
    if ran.code() != Some(0) || json(ran).is_some() {
        return None;
    }
    let t = ran.stdout.trim_end_matches(['\n', '\r']);
    (!t.is_empty()).then_some(t)
}

fn specific<'a>(json: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    json.get("hookSpecificOutput").and_then(|h| h.get(key))
}

fn context(json: &Map<String, Value>) -> Option<&str> {
    specific(json, "additionalContext")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
}

fn string<'a>(json: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    json.get(key).and_then(Value::as_str)
}

/// `continue: false`: its `stopReason` (empty when none).
fn stopped(json: &Map<String, Value>) -> Option<String> {
    (json.get("continue") == Some(&Value::Bool(false)))
        .then(|| string(json, "stopReason").unwrap_or_default().to_string())
}

/// `[<cmd>]: <stderr>`, the form exit-2 errors take.
fn bracketed(ran: &Ran) -> String {
    format!("[{}]: {}", ran.hook.command, ran.stderr_text())
}

/// What the model gets of SessionStart hooks: one part per hook that said something.
pub fn session_start(runs: &[Ran], source: &str, persist: &Persist) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        if let Some(j) = json(r) {
            if let Some(c) = context(&j) {
                let c = persist.cap(c, Kind::Context("SessionStart"), None);
                out.push(format!("SessionStart hook additional context: {c}"));
            }
        } else if let Some(p) = plain(r) {
            let p = persist.cap(p, Kind::Stdout, None);
            out.push(format!("SessionStart:{source} hook success: {p}"));
        }
    }
    out
}

/// What the subagent gets of SubagentStart hooks: each JSON `additionalContext` (measured,
/// a1/reviewer); plain stdout was not measured and goes nowhere here.
pub fn subagent_start(runs: &[Ran], persist: &Persist) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        if let Some(j) = json(r)
            && let Some(c) = context(&j)
        {
            let c = persist.cap(c, Kind::Context("SubagentStart"), None);
            out.push(format!("SubagentStart hook additional context: {c}"));
        }
    }
    out
}

/// What UserPromptSubmit hooks decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// The prompt goes on, with these texts (one part per hook).
    Go(Vec<String>),
    /// Exit 2 or `decision: "block"`: no request; the prompt is not kept; the user reads this.
    Blocked(String),
    /// `continue: false`: no request; the user reads this.
    Stopped(String),
}

/// UserPromptSubmit: the first hook (in finishing order) that blocks or stops decides.
pub fn user_prompt_submit(runs: &[Ran], prompt: &str, persist: &Persist) -> Prompt {
    let blocked = |why: &str| {
        Prompt::Blocked(format!(
            "UserPromptSubmit operation blocked by hook:\n{why}\n\nOriginal prompt: {prompt}"
        ))
    };
    let mut texts = Vec::new();
    for r in runs {
        if r.code() == Some(2) {
            return blocked(&bracketed(r));
        }
        if let Some(j) = json(r) {
            if let Some(reason) = stopped(&j) {
                return Prompt::Stopped(format!("Operation stopped by hook: {reason}"));
            }
            if string(&j, "decision") == Some("block") {
                return blocked(string(&j, "reason").unwrap_or_default());
            }
            if let Some(c) = context(&j) {
                let c = persist.cap(c, Kind::Context("UserPromptSubmit"), None);
                texts.push(format!("UserPromptSubmit hook additional context: {c}"));
            }
        } else if let Some(p) = plain(r) {
            let p = persist.cap(p, Kind::Stdout, None);
            texts.push(format!("UserPromptSubmit hook success: {p}"));
        }
    }
    Prompt::Go(texts)
}

/// A tool call's permission, as PreToolUse hooks decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Run without asking (never past a deny rule).
    Allow,
    /// Do not run; this is the tool result (`is_error`).
    Deny(String),
    /// Ask the user, with this reason; denied, the reason alone is the tool result.
    Ask(String),
}

/// What PreToolUse hooks decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pre {
    /// `None`: the tool's own permission check decides.
    pub permission: Option<Permission>,
    /// The input the tool runs with instead of the model's.
    pub updated_input: Option<Value>,
    /// `PreToolUse:<tool> hook additional context: …`, one per hook.
    pub texts: Vec<String>,
    /// `continue: false`: the turn ends after this round, and the next prompt is told this.
    pub stop: Option<String>,
}

/// PreToolUse: a deny (exit 2, `permissionDecision: "deny"`, legacy `decision: "block"`) beats an
/// ask, which beats an allow; the first of each kind in finishing order gives its text.
pub fn pre_tool_use(runs: &[Ran], tool: &str, tool_use_id: &str, persist: &Persist) -> Pre {
    let mut out = Pre::default();
    let mut deny = None;
    let mut ask = None;
    let mut allow = false;
    for r in runs {
        if r.code() == Some(2) {
            deny.get_or_insert_with(|| format!("PreToolUse:{tool} hook error: {}", bracketed(r)));
            continue;
        }
        // A guard that could not run here (no sandbox, and commands without it not allowed)
        // might have said no: the user is asked instead of the call running unguarded. Our
        // own case (Claude Code runs hooks outside any sandbox); a deny of another hook still
        // wins.
        if let End::Skipped(why) = &r.end {
            ask.get_or_insert_with(|| {
                format!(
                    "The PreToolUse hook `{}` that checks this call could not run: {why}",
                    r.hook.command
                )
            });
            continue;
        }
        let Some(j) = json(r) else { continue };
        if out.stop.is_none()
            && let Some(reason) = stopped(&j)
        {
            out.stop = Some(format!(
                "PreToolUse:{tool} hook stopped continuation: {reason}"
            ));
        }
        let reason = specific(&j, "permissionDecisionReason")
            .and_then(Value::as_str)
            .or_else(|| string(&j, "reason"))
            .unwrap_or_default();
        let decision = specific(&j, "permissionDecision")
            .and_then(Value::as_str)
            .or(match string(&j, "decision") {
                Some("block") => Some("deny"),
                Some("approve") => Some("allow"),
                _ => None,
            });
        match decision {
            Some("deny") => {
                deny.get_or_insert_with(|| format!("PreToolUse:{tool} hook error: {reason}"));
            }
            Some("ask") => {
                ask.get_or_insert_with(|| reason.to_string());
            }
            Some("allow") => {
                allow = true;
                if out.updated_input.is_none()
                    && let Some(u) = specific(&j, "updatedInput").filter(|u| u.is_object())
                {
                    out.updated_input = Some(u.clone());
                }
            }
            _ => {}
        }
        if let Some(c) = context(&j) {
            let c = persist.cap(c, Kind::Context("PreToolUse"), Some(tool_use_id));
            out.texts
                .push(format!("PreToolUse:{tool} hook additional context: {c}"));
        }
    }
    out.permission = match (deny, ask, allow) {
        (Some(d), _, _) => Some(Permission::Deny(d)),
        (None, Some(a), _) => Some(Permission::Ask(a)),
        (None, None, true) => Some(Permission::Allow),
        _ => None,
    };
    if !matches!(out.permission, Some(Permission::Allow)) {
        out.updated_input = None;
    }
    out
}

/// What PostToolUse hooks said (the tool result is never changed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Post {
    /// Blocking errors and additional contexts, hook by hook in finishing order.
    pub texts: Vec<String>,
    /// `continue: false`: the turn ends after this round.
    pub stop: Option<String>,
}

pub fn post_tool_use(runs: &[Ran], tool: &str, tool_use_id: &str, persist: &Persist) -> Post {
    let mut out = Post::default();
    for r in runs {
        let from = |why: &str| {
            format!(
                "PostToolUse:{tool} hook blocking error from command: \"{}\": {why}",
                r.hook.command
            )
        };
        if r.code() == Some(2) {
            out.texts.push(from(&bracketed(r)));
            continue;
        }
        let Some(j) = json(r) else { continue };
        if out.stop.is_none()
            && let Some(reason) = stopped(&j)
        {
            out.stop = Some(format!(
                "PostToolUse:{tool} hook stopped continuation: {reason}"
            ));
        }
        if string(&j, "decision") == Some("block") {
            out.texts
                .push(from(string(&j, "reason").unwrap_or_default()));
        }
        if let Some(c) = context(&j) {
            let c = persist.cap(c, Kind::Context("PostToolUse"), Some(tool_use_id));
            out.texts
                .push(format!("PostToolUse:{tool} hook additional context: {c}"));
        }
    }
    out
}

/// What Stop (or SubagentStop) hooks decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The turn ends.
    Done,
    /// The model continues: a user message with `feedback` (one text per blocking hook), and
    /// after it `system` texts (the JSON blocks' "blocking error" lines).
    Continue {
        feedback: Vec<String>,
        system: Vec<String>,
    },
}

/// Stop: exit 2 gives `Stop hook feedback:\n[<cmd>]: <stderr>`; `decision: "block"` gives
/// `Stop hook feedback:\n<reason>` and the system text
/// `Stop hook blocking error from command: "<cmd>": <reason>`. `continue: false` ends the turn
/// whatever the others said.
pub fn stop(runs: &[Ran], event: Event) -> Stop {
    let name = event.name();
    let mut feedback = Vec::new();
    let mut system = Vec::new();
    for r in runs {
        if r.code() == Some(2) {
            feedback.push(format!("{name} hook feedback:\n{}", bracketed(r)));
            continue;
        }
        let Some(j) = json(r) else { continue };
        if stopped(&j).is_some() {
            return Stop::Done;
        }
        if string(&j, "decision") == Some("block") {
            let reason = string(&j, "reason").unwrap_or_default();
            feedback.push(format!("{name} hook feedback:\n{reason}"));
            system.push(format!(
                "{name} hook blocking error from command: \"{}\": {reason}",
                r.hook.command
            ));
        }
    }
    if feedback.is_empty() {
        Stop::Done
    } else {
        Stop::Continue { feedback, system }
    }
}

/// What PreCompact or PostCompact hooks said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compact {
    /// PreCompact exit 2: the compaction does not happen; the user reads this.
    pub blocked: Option<String>,
    /// `<Event> [<cmd>] completed successfully: <stdout>`, for the compaction's output.
    pub lines: Vec<String>,
}

pub fn compact(runs: &[Ran], event: Event) -> Compact {
    let mut out = Compact::default();
    for r in runs {
        if r.code() == Some(2) && event == Event::PreCompact {
            out.blocked.get_or_insert_with(|| {
                format!("Compaction blocked by PreCompact hook: {}", bracketed(r))
            });
            continue;
        }
        if r.code() == Some(0) {
            let t = r.stdout.trim_end_matches(['\n', '\r']);
            if !t.is_empty() {
                out.lines.push(format!(
                    "{} [{}] completed successfully: {t}",
                    event.name(),
                    r.hook.command
                ));
            }
        }
    }
    out
}

/// What a PermissionRequest hook decided (`hookSpecificOutput.decision.behavior`).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Allow {
        updated_input: Option<Value>,
    },
    /// The message is the tool result (`is_error`).
    Deny(String),
}

/// The text a deny without a message gives.
pub const DENIED_BY_HOOK: &str =
    "Permission to use this tool was denied by a PermissionRequest hook.";

/// PermissionRequest: a deny beats an allow; exit 2 denies with its standard error (inferred:
/// not measured). `None`: no hook decided, the user is asked.
pub fn permission_request(runs: &[Ran]) -> Option<Decision> {
    let mut allow = None;
    for r in runs {
        if r.code() == Some(2) {
            let e = r.stderr_text();
            return Some(Decision::Deny(if e.trim().is_empty() {
                DENIED_BY_HOOK.to_string()
            } else {
                e
            }));
        }
        let Some(j) = json(r) else { continue };
        let Some(d) = specific(&j, "decision") else {
            continue;
        };
        match d.get("behavior").and_then(Value::as_str) {
            Some("deny") => {
                let m = d.get("message").and_then(Value::as_str).unwrap_or_default();
                return Some(Decision::Deny(if m.is_empty() {
                    DENIED_BY_HOOK.to_string()
                } else {
                    m.to_string()
                }));
            }
            Some("allow") if allow.is_none() => {
                allow = Some(Decision::Allow {
                    updated_input: d.get("updatedInput").filter(|u| u.is_object()).cloned(),
                });
            }
            _ => {}
        }
    }
    allow
}

/// What the user is shown of a run, besides what the model gets: its `systemMessage`, and why a
/// hook said nothing (it failed, timed out, did not start).
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub hook: Hook,
    /// `message` (a `systemMessage`), `error` (a non-blocking failure), `timeout`.
    pub kind: &'static str,
    pub text: String,
}

pub fn notices(runs: &[Ran]) -> Vec<Notice> {
    let mut out = Vec::new();
    for r in runs {
        let notice = |kind, text: String| Notice {
            hook: r.hook.clone(),
            kind,
            text,
        };
        match &r.end {
            End::Exit(0) => {
                if let Some(j) = json(r)
                    && let Some(m) = string(&j, "systemMessage").filter(|m| !m.is_empty())
                {
                    out.push(notice("message", m.to_string()));
                }
            }
            // Exit 2 is a decision the event reports itself.
            End::Exit(2) => {}
            End::Exit(c) => {
                let first = r.stderr.lines().next().unwrap_or_default();
                out.push(notice(
                    "error",
                    format!(
                        "exited with code {c}{}",
                        if first.is_empty() {
                            String::new()
                        } else {
                            format!(": {first}")
                        }
                    ),
                ));
            }
            End::Signal(s) => out.push(notice("error", format!("killed by signal {s}"))),
            End::TimedOut(t) => out.push(notice(
                "timeout",
                format!(
                    "did not finish within its {:.0} s and was killed; it said nothing",
                    t.as_secs_f64()
                ),
            )),
            End::Cancelled => {}
            End::NotStarted(e) => out.push(notice("error", format!("could not start: {e}"))),
            End::Skipped(why) => out.push(notice("error", why.clone())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::Source;
    use crate::hooks::matcher::Matcher;
    use std::time::Duration;

    const CMD: &str = "/usr/bin/python3 /fx/bin/hk.py PRE";

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            hook: Hook {
                event: Event::PreToolUse,
                source: Source::Project,
                file: "/p/.claude/settings.json".into(),
                line: None,
                matcher: Matcher::parse(None),
                command: CMD.into(),
                timeout: None,
                kind: "command".into(),
            },
            end: End::Exit(code),
            stdout: stdout.into(),
            stdout_bytes: stdout.len() as u64,
            stderr: stderr.into(),
            stderr_bytes: stderr.len() as u64,
            elapsed: Duration::ZERO,
        }
    }

    fn p() -> Persist {
        Persist::default()
    }

    #[test]
    fn session_start_texts_plain_and_json() {
        let runs = [
            ran(0, "SS-STDOUT-MARKER line1\nline2\n", ""),
            ran(
                0,
                r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"SS-JSON-CTX-MARKER"},"systemMessage":"SYSMSG"}"#,
                "",
            ),
            ran(1, "ignored", "x"),
            ran(2, "ignored", "x"),
            ran(0, "", ""),
        ];
        assert_eq!(
            session_start(&runs, "startup", &p()),
            [
                "SessionStart:startup hook success: SS-STDOUT-MARKER line1\nline2",
                "SessionStart hook additional context: SS-JSON-CTX-MARKER"
            ]
        );
        let n = notices(&runs);
        assert_eq!(n.len(), 2, "{n:?}");
        assert_eq!((n[0].kind, n[0].text.as_str()), ("message", "SYSMSG"));
        assert_eq!(n[1].text, "exited with code 1: x");
    }

    /// h6/*: the measured texts of a blocked prompt.
    #[test]
    fn user_prompt_submit_blocks_and_stops() {
        assert_eq!(
            user_prompt_submit(&[ran(2, "out", "UPS-EXIT2-STDERR-MARKER\n")], "hello", &p()),
            Prompt::Blocked(format!(
                "UserPromptSubmit operation blocked by hook:\n[{CMD}]: UPS-EXIT2-STDERR-MARKER\n\n\nOriginal prompt: hello"
            ))
        );
        assert_eq!(
            user_prompt_submit(
                &[ran(0, r#"{"decision":"block","reason":"UPS-BLOCK-REASON-MARKER"}"#, "")],
                "hello",
                &p()
            ),
            Prompt::Blocked(
                "UserPromptSubmit operation blocked by hook:\nUPS-BLOCK-REASON-MARKER\n\nOriginal prompt: hello".into()
            )
        );
        assert_eq!(
            user_prompt_submit(
                &[ran(
                    0,
                    r#"{"continue":false,"stopReason":"UPS-STOPREASON-MARKER"}"#,
                    ""
                )],
                "hello",
                &p()
            ),
            Prompt::Stopped("Operation stopped by hook: UPS-STOPREASON-MARKER".into())
        );
        assert_eq!(
            user_prompt_submit(&[ran(1, "x", "y"), ran(0, "UPS\n", "")], "hello", &p()),
            Prompt::Go(vec!["UserPromptSubmit hook success: UPS".into()])
        );
    }

    /// Issue 25: a PreToolUse hook skipped for want of a sandbox denied nothing, and the call
    /// it guards ran unchecked.
    #[test]
    fn a_guard_that_could_not_run_asks_the_user_and_a_deny_still_wins() {
        let mut skipped = ran(0, "", "");
        skipped.end = End::Skipped("not run: no sandbox".into());
        let pre = pre_tool_use(std::slice::from_ref(&skipped), "Bash", "t1", &p());
        let Some(Permission::Ask(why)) = &pre.permission else {
            panic!("{pre:?}");
        };
        assert!(
            why.contains(CMD) && why.contains("not run: no sandbox"),
            "{why}"
        );
        let deny = ran(2, "", "NO\n");
        let pre = pre_tool_use(&[skipped, deny], "Bash", "t1", &p());
        assert!(
            matches!(pre.permission, Some(Permission::Deny(_))),
            "{pre:?}"
        );
    }

    /// h2/json, h3/*: PreToolUse decisions and their texts.
    #[test]
    fn pre_tool_use_decisions() {
        let allow = ran(
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok","updatedInput":{"command":"echo UPDATED-INPUT-MARKER"},"additionalContext":"PRE-CTX-MARKER"}}"#,
            "",
        );
        let pre = pre_tool_use(&[allow], "Bash", "t1", &p());
        assert_eq!(pre.permission, Some(Permission::Allow));
        assert_eq!(
            pre.updated_input,
            Some(serde_json::json!({"command": "echo UPDATED-INPUT-MARKER"}))
        );
        assert_eq!(
            pre.texts,
            ["PreToolUse:Bash hook additional context: PRE-CTX-MARKER"]
        );
        let deny = ran(
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"PRE-DENY-REASON-MARKER"}}"#,
            "",
        );
        assert_eq!(
            pre_tool_use(&[deny], "Bash", "t1", &p()).permission,
            Some(Permission::Deny(
                "PreToolUse:Bash hook error: PRE-DENY-REASON-MARKER".into()
            ))
        );
        let legacy = ran(
            0,
            r#"{"decision":"block","reason":"PRE-LEGACY-BLOCK-REASON-MARKER"}"#,
            "",
        );
        assert_eq!(
            pre_tool_use(&[legacy], "Bash", "t1", &p()).permission,
            Some(Permission::Deny(
                "PreToolUse:Bash hook error: PRE-LEGACY-BLOCK-REASON-MARKER".into()
            ))
        );
        let ask = ran(
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"PRE-ASK-REASON-MARKER"}}"#,
            "",
        );
        assert_eq!(
            pre_tool_use(std::slice::from_ref(&ask), "Bash", "t1", &p()).permission,
            Some(Permission::Ask("PRE-ASK-REASON-MARKER".into()))
        );
        let exit2 = ran(2, "ignored", "PRE-EXIT2-STDERR-MARKER line1\nline2\n");
        let pre = pre_tool_use(&[ask, exit2], "Bash", "t1", &p());
        assert_eq!(
            pre.permission,
            Some(Permission::Deny(format!(
                "PreToolUse:Bash hook error: [{CMD}]: PRE-EXIT2-STDERR-MARKER line1\nline2\n"
            ))),
            "a deny beats an ask"
        );
        // Exit 1 and output that is not JSON: nothing decided.
        assert_eq!(
            pre_tool_use(
                &[ran(1, "{}", "e"), ran(0, "not json {", "")],
                "Bash",
                "t1",
                &p()
            ),
            Pre::default()
        );
        let cont = ran(
            0,
            r#"{"continue":false,"stopReason":"PRE-STOPREASON-MARKER"}"#,
            "",
        );
        assert_eq!(
            pre_tool_use(&[cont], "Bash", "t1", &p()).stop.as_deref(),
            Some("PreToolUse:Bash hook stopped continuation: PRE-STOPREASON-MARKER")
        );
    }

    /// h4/*: PostToolUse blocks and contexts.
    #[test]
    fn post_tool_use_texts() {
        let block = ran(
            0,
            r#"{"decision":"block","reason":"POST-BLOCK-REASON-MARKER","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"POST-CTX2-MARKER"}}"#,
            "",
        );
        assert_eq!(
            post_tool_use(&[block], "Bash", "t1", &p()).texts,
            [
                format!(
                    "PostToolUse:Bash hook blocking error from command: \"{CMD}\": POST-BLOCK-REASON-MARKER"
                ),
                "PostToolUse:Bash hook additional context: POST-CTX2-MARKER".to_string()
            ]
        );
        assert_eq!(
            post_tool_use(
                &[
                    ran(2, "x", "POST-EXIT2-STDERR-MARKER\n"),
                    ran(0, "plain\n", "")
                ],
                "Bash",
                "t1",
                &p()
            )
            .texts,
            [format!(
                "PostToolUse:Bash hook blocking error from command: \"{CMD}\": [{CMD}]: POST-EXIT2-STDERR-MARKER\n"
            )]
        );
    }

    /// h5/*: Stop feedback.
    #[test]
    fn stop_feedback() {
        assert_eq!(
            stop(&[ran(2, "", "STOP-EXIT2-STDERR-MARKER\n")], Event::Stop),
            Stop::Continue {
                feedback: vec![format!(
                    "Stop hook feedback:\n[{CMD}]: STOP-EXIT2-STDERR-MARKER\n"
                )],
                system: Vec::new()
            }
        );
        assert_eq!(
            stop(
                &[ran(
                    0,
                    r#"{"decision":"block","reason":"STOP-BLOCK-REASON-MARKER"}"#,
                    ""
                )],
                Event::Stop
            ),
            Stop::Continue {
                feedback: vec!["Stop hook feedback:\nSTOP-BLOCK-REASON-MARKER".into()],
                system: vec![format!(
                    "Stop hook blocking error from command: \"{CMD}\": STOP-BLOCK-REASON-MARKER"
                )]
            }
        );
        assert_eq!(
            stop(&[ran(1, "", "x"), ran(0, "plain", "")], Event::Stop),
            Stop::Done
        );
    }

    #[test]
    fn compaction_and_permission_requests() {
        let c = compact(
            &[ran(0, "PC-STDOUT-MARKER\n", ""), ran(1, "x", "")],
            Event::PreCompact,
        );
        assert_eq!(
            c.lines,
            [format!(
                "PreCompact [{CMD}] completed successfully: PC-STDOUT-MARKER"
            )]
        );
        let c = compact(&[ran(2, "", "PC-EXIT2-STDERR-MARKER\n")], Event::PreCompact);
        assert_eq!(
            c.blocked.as_deref(),
            Some(
                format!("Compaction blocked by PreCompact hook: [{CMD}]: PC-EXIT2-STDERR-MARKER\n")
                    .as_str()
            )
        );
        let allow = ran(
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#,
            "",
        );
        let deny = ran(
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"PERM-DENY-MESSAGE-MARKER"}}}"#,
            "",
        );
        assert_eq!(
            permission_request(std::slice::from_ref(&allow)),
            Some(Decision::Allow {
                updated_input: None
            })
        );
        assert_eq!(
            permission_request(&[allow, deny]),
            Some(Decision::Deny("PERM-DENY-MESSAGE-MARKER".into()))
        );
        assert_eq!(permission_request(&[ran(0, "{}", "")]), None);
    }
}
