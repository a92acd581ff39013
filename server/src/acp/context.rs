//! `/context`: a session's preview ([`crate::features::preview::of_session`]) as the Markdown
//! message ACP clients render: the next request's tokens against the window and the
//! auto-compaction threshold, part by part; every instruction file with its status and why; the
//! files attached so far and what made them apply; edits a new session would see; findings.

use std::path::Path;

use crate::features::preview::Preview;
use crate::session::Attached;

/// A table cell: one line, no `|` breaking the row.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn shown(p: &Path, root: &Path) -> String {
    p.strip_prefix(root)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The message.
pub fn markdown(p: &Preview, attached: &[Attached]) -> String {
    let t = &p.totals;
    let root = p.cwd.as_path();
    let mut out = format!(
        "**Context: {} of {} tokens ({}%)**; automatic compaction at {}.\n\n",
        thousands(t.tokens),
        thousands(t.window),
        t.percent,
        thousands(t.auto_compact_threshold)
    );
    out.push_str("| part | tokens |\n|---|---:|\n");
    for (name, n) in [
        ("system prompt", t.system),
        ("tools", t.tools),
        ("instruction files", t.instructions),
        ("git snapshot", t.git),
        ("attachments of the next message", t.attachments),
        ("conversation", t.conversation),
    ] {
        out.push_str(&format!("| {name} | {} |\n", thousands(n)));
    }
    out.push_str("\n**Instruction files**\n\n| file | scope | status | why | tokens |\n|---|---|---|---|---:|\n");
    for f in &p.files {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            cell(&shown(&f.path, root)),
            cell(&f.scope),
            cell(&f.status),
            cell(f.reason.as_deref().unwrap_or(&f.description)),
            thousands(f.tokens)
        ));
    }
    if !attached.is_empty() {
        out.push_str("\n**Attached in this session**\n\n");
        for a in attached {
            out.push_str(&format!(
                "- `{}` applies because of `{}` ({} tokens)\n",
                cell(&shown(&a.path, root)),
                cell(&shown(&a.trigger, root)),
                thousands(a.tokens)
            ));
        }
    }
    if !p.pending.is_empty() {
        out.push_str("\n**Changed since the session started** (a new session sees these)\n\n");
        for e in &p.pending {
            out.push_str(&format!(
                "- `{}`: {}\n",
                cell(&shown(&e.path, root)),
                cell(&e.message)
            ));
        }
    }
    if !p.findings.is_empty() {
        out.push_str("\n**Findings**\n\n");
        for f in &p.findings {
            let at = match f.line {
                Some(l) => format!("{}:{l}", shown(&f.path, root)),
                None => shown(&f.path, root),
            };
            out.push_str(&format!(
                "- {:?} `{}` ({}): {}\n",
                f.severity,
                cell(&at),
                cell(&f.code),
                cell(&f.message)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(167000), "167,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
