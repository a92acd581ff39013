//! The summary: the request's text (our own words), reading the reply, and the guarantee of
//! section 6.
//!
//! The request asks for text only, an `<analysis>` scratchpad, then a `<summary>` in nine
//! numbered sections with fixed titles ([`SECTIONS`]). A focus hint from the user follows as
//! `Additional Instructions:`. Of the reply only the `<summary>` is kept ([`parse_reply`]); a
//! reply without one is a failure.
//!
//! Section 6 ("All User Messages") must hold every user-authored message verbatim. The model is
//! asked; [`enforce_user_messages`] checks each message is a substring of section 6 and appends
//! the missing ones, verbatim, at its end (creating the section before section 7 when the
//! model left it out). Section boundaries are heading lines: a number, a dot and the section's
//! title (`6. All User Messages`, `## 7. Pending Tasks`, `**8. Current Work:**`), so a quoted
//! message with a line like `7. fix the tests` does not end the section. The one text that
//! defeats it is a user message containing a line that reads as a section 7–9 heading with its
//! title; such a message is still appended verbatim, though a reader parsing headings would cut
//! the section inside it.

/// The nine sections' titles, in order.
pub const SECTIONS: [&str; 9] = [
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All User Messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
];

/// The final user text of a summary request.
pub fn prompt(focus: Option<&str>) -> String {
    let mut p = String::from(PROMPT);
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        p.push_str("\n\nAdditional Instructions:\n");
        p.push_str(focus);
    }
    p
}

const PROMPT: &str = "\
Stop here and write a summary of the conversation so far. It replaces the messages above, which \
will be removed, so it must let the work go on without them: keep what was asked, what was \
done, the code that matters and what is still open.

Answer with text only. Do not call any tool: none will run for this answer.

First, inside <analysis> tags, go through the conversation in order. For each part, note what \
the user asked for and how they wanted it done, what you did about it, the files, functions and \
code involved, every error and how it was fixed, and what the user said about your work, \
corrections above all. This part is only for your own thinking and will be discarded.

Then, inside <summary> tags, write the summary in exactly these nine numbered sections, with \
these titles:

1. Primary Request and Intent: everything the user asked for, in detail, and what they want to \
achieve.
2. Key Technical Concepts: the technologies, frameworks, conventions and ideas the work relies on.
3. Files and Code Sections: every file read, created or changed, why it matters, and the code \
that matters (whole snippets for changes that were made).
4. Errors and fixes: every error met and how it was fixed, with anything the user said about it.
5. Problem Solving: the problems solved and any investigation still under way.
6. All User Messages: every message the user wrote (not tool results), in order, each quoted \
exactly as written, word for word. Leave none out: they are how the user's intent survives.
7. Pending Tasks: what the user asked for that is not done yet.
8. Current Work: precisely what was being worked on just before this summary, with file names \
and code.
9. Optional Next Step: the next step, only if it follows directly from the user's latest \
request; quote that request word for word so the task is not misread. Leave it empty when the \
last task was finished.

The answer looks like this:

<analysis>
[your notes, in order]
</analysis>

<summary>
1. Primary Request and Intent:
   [...]

2. Key Technical Concepts:
   - [...]

3. Files and Code Sections:
   - [file]
     - [why it matters, what changed]
     - [code]

4. Errors and fixes:
   - [error]: [fix; what the user said]

5. Problem Solving:
   [...]

6. All User Messages:
   - [first message, verbatim]
   - [...]

7. Pending Tasks:
   - [...]

8. Current Work:
   [...]

9. Optional Next Step:
   [...]
</summary>";

/// Why a reply is not a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// No `<summary>` at all.
    Missing,
    /// `<summary>` without its end (the answer was cut off).
    Unfinished,
    /// `<summary></summary>` with nothing inside.
    Empty,
}

impl ReplyError {
    pub fn message(self) -> &'static str {
        match self {
            ReplyError::Missing => "the model's reply has no <summary>",
            ReplyError::Unfinished => "the model's summary was cut off before </summary>",
            ReplyError::Empty => "the model's summary is empty",
        }
    }
}

/// The `<summary>` of a reply, without `<analysis>`. The summary starts at the first
/// `<summary>` after the analysis (the analysis may quote the tag) and ends at the last
/// `</summary>` (the summary may quote a user message holding the tag).
pub fn parse_reply(reply: &str) -> Result<String, ReplyError> {
    let after_analysis = reply
        .find("</analysis>")
        .map_or(0, |i| i + "</analysis>".len());
    let open = reply[after_analysis..]
        .find("<summary>")
        .map(|i| after_analysis + i)
        .or_else(|| reply.find("<summary>"))
        .ok_or(ReplyError::Missing)?;
    let body_start = open + "<summary>".len();
    let close = reply
        .rfind("</summary>")
        .filter(|&c| c >= body_start)
        .ok_or(ReplyError::Unfinished)?;
    let body = reply[body_start..close].trim();
    if body.is_empty() {
        return Err(ReplyError::Empty);
    }
    Ok(body.to_string())
}

/// A heading line of section `n` (1–9): optional `#`s, `*`s or spaces, the number, `.` or `)`,
/// then the section's title (case-insensitive; `**` and `:` around it allowed).
fn heading(line: &str, n: usize) -> bool {
    let t = line.trim_start().trim_start_matches(['#', '*', ' ', '\t']);
    let Some(rest) = t.strip_prefix(&n.to_string()) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(['.', ')']) else {
        return false;
    };
    let rest = rest.trim_start().trim_start_matches('*').trim_start();
    let title = SECTIONS[n - 1];
    rest.len() >= title.len()
        && rest.is_char_boundary(title.len())
        && rest[..title.len()].eq_ignore_ascii_case(title)
}

/// Byte offsets of each line's start, and of the end.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    starts
}

/// Section 6 of a summary: from its heading line to the next section 7–9 heading (or the end),
/// as a byte range. `None` when there is no section-6 heading.
pub fn section6_range(summary: &str) -> Option<(usize, usize)> {
    let starts = line_starts(summary);
    let line = |k: usize| {
        let end = starts.get(k + 1).map_or(summary.len(), |&e| e);
        &summary[starts[k]..end]
    };
    let first = (0..starts.len()).find(|&k| heading(line(k), 6))?;
    let end = (first + 1..starts.len())
        .find(|&k| (7..=9).any(|n| heading(line(k), n)))
        .map_or(summary.len(), |k| starts[k]);
    Some((starts[first], end))
}

/// Section 6's text (heading included), or `""` when there is none.
pub fn section6(summary: &str) -> &str {
    section6_range(summary).map_or("", |(a, b)| &summary[a..b])
}

/// A summary with section 6 made complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enforced {
    pub text: String,
    /// How many messages had to be added.
    pub appended: usize,
}

/// Checks that every message of `required` (trimmed; empty ones skipped) appears verbatim in
/// section 6 and appends the missing ones there, in order, each on a `- ` line of its own.
pub fn enforce_user_messages(summary: &str, required: &[String]) -> Enforced {
    let (range, created) = match section6_range(summary) {
        Some(r) => (r, false),
        None => {
            // Before section 7 (or 8, 9) when there is one, else at the end.
            let starts = line_starts(summary);
            let at = (0..starts.len())
                .find(|&k| {
                    let end = starts.get(k + 1).map_or(summary.len(), |&e| e);
                    (7..=9).any(|n| heading(&summary[starts[k]..end], n))
                })
                .map_or(summary.len(), |k| starts[k]);
            ((at, at), true)
        }
    };
    let section = &summary[range.0..range.1];
    let missing: Vec<&str> = required
        .iter()
        .map(|m| m.trim())
        .filter(|m| !m.is_empty() && !section.contains(m))
        .collect();
    if missing.is_empty() && !created {
        return Enforced {
            text: summary.to_string(),
            appended: 0,
        };
    }
    let mut insert = String::new();
    let before = &summary[..range.1];
    if !before.is_empty() && !before.ends_with('\n') {
        insert.push('\n');
    }
    if created {
        if !before.is_empty() && !before.ends_with("\n\n") {
            insert.push('\n');
        }
        insert.push_str("6. All User Messages:\n");
    }
    if !missing.is_empty() {
        if !created {
            insert.push_str(
                "   Also written by the user (added verbatim, the summary above left them out):\n",
            );
        }
        for m in &missing {
            insert.push_str("   - ");
            insert.push_str(m);
            insert.push('\n');
        }
    } else {
        insert.push_str("   (none)\n");
    }
    if range.1 < summary.len() {
        insert.push('\n');
    }
    let mut text = String::with_capacity(summary.len() + insert.len());
    text.push_str(before);
    text.push_str(&insert);
    text.push_str(&summary[range.1..]);
    Enforced {
        text,
        appended: missing.len(),
    }
}

/// The user messages to guarantee: those an earlier summary preserved, then those authored in
/// the history, each once (a repeated text is one requirement: it is present or not).
pub fn required_user_messages(earlier: &[String], authored: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    earlier
        .iter()
        .cloned()
        .chain(authored)
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && seen.insert(m.clone()))
        .collect()
}
