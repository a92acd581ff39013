//! The skills listing and its budget (`../shared/spec/skills-mcp.md` sections 3 and 4).
//!
//! ```text
//! The following skills are available for use with the Skill tool:\n\n- <name>: <description>\n...
//! ```
//!
//! The entries and the newlines between them have a budget in display width (a CJK ideograph
//! counts 2): `SLASH_COMMAND_TOOL_CHAR_BUDGET` when set, else the window × the model's characters
//! per token × `skillListingBudgetFraction` (0.01). Over budget, the entries keep their order;
//! pinned ones (the reference CLI's bundled skills; claude-context has none) keep their full
//! text, every other is reduced to `- <name>`, then, most used first (`skillUsage`; the unused in
//! listing order), each gets its full text back if it still fits. No note is added.

use unicode_width::UnicodeWidthStr;

/// The listing's first line and the blank line after it.
pub const HEADER: &str = "The following skills are available for use with the Skill tool:\n\n";
/// The listing budget's share of the window when no setting says otherwise.
pub const DEFAULT_FRACTION: f64 = 0.01;
/// The environment variable that sets the budget in characters.
pub const BUDGET_VARIABLE: &str = "SLASH_COMMAND_TOOL_CHAR_BUDGET";

/// One entry of the listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name the usage record knows it by (the listing name).
    pub name: String,
    /// The full line, `- <name>: <description>` (or `- <name>` for a `name-only` override).
    pub full: String,
    /// The reduced line, `- <name>`.
    pub short: String,
    /// Keeps its full line whatever the budget (the reference CLI's bundled skills).
    pub pinned: bool,
}

/// The listing as it goes to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The whole text, header included; `None` when there is no entry.
    pub text: Option<String>,
    /// The budget, in display width.
    pub budget: u64,
    /// Display width of the entries and their newlines (the budgeted part).
    pub width: u64,
    /// Per entry, in order: does it keep its full line?
    pub full: Vec<bool>,
}

/// Display width: a CJK ideograph counts 2.
pub fn width(s: &str) -> u64 {
    UnicodeWidthStr::width(s) as u64
}

/// The budget: `SLASH_COMMAND_TOOL_CHAR_BUDGET` when it is a number, else
/// `window × chars_per_token × fraction` (rounded down).
pub fn budget(
    variable: Option<&str>,
    window: u64,
    chars_per_token: u32,
    fraction: Option<f64>,
) -> u64 {
    if let Some(n) = variable.and_then(|v| v.trim().parse::<u64>().ok()) {
        return n;
    }
    let fraction = fraction.unwrap_or(DEFAULT_FRACTION);
    (window as f64 * f64::from(chars_per_token) * fraction + 1e-9).floor() as u64
}

/// Lays `entries` out under `budget`; `usage` names skills most used first.
pub fn lay_out(entries: &[Entry], budget: u64, usage: &[String]) -> Listing {
    let n = entries.len();
    if n == 0 {
        return Listing {
            text: None,
            budget,
            width: 0,
            full: Vec::new(),
        };
    }
    let newlines = n as u64 - 1;
    let full_width: u64 = entries.iter().map(|e| width(&e.full)).sum::<u64>() + newlines;
    let mut full = vec![true; n];
    let mut used = full_width;
    if full_width > budget {
        for (i, e) in entries.iter().enumerate() {
            full[i] = e.pinned;
        }
        used = entries
            .iter()
            .zip(&full)
            .map(|(e, f)| width(if *f { &e.full } else { &e.short }))
            .sum::<u64>()
            + newlines;
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut taken = vec![false; n];
        for name in usage {
            if let Some(i) = entries.iter().position(|e| &e.name == name)
                && !taken[i]
            {
                taken[i] = true;
                order.push(i);
            }
        }
        order.extend((0..n).filter(|i| !taken[*i]));
        for i in order {
            if full[i] {
                continue;
            }
            let grow = width(&entries[i].full).saturating_sub(width(&entries[i].short));
            if used + grow <= budget {
                full[i] = true;
                used += grow;
            }
        }
    }
    let lines: Vec<&str> = entries
        .iter()
        .zip(&full)
        .map(|(e, f)| {
            if *f {
                e.full.as_str()
            } else {
                e.short.as_str()
            }
        })
        .collect();
    Listing {
        text: Some(format!("{HEADER}{}", lines.join("\n"))),
        budget,
        width: used,
        full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, desc: &str) -> Entry {
        Entry {
            name: name.into(),
            full: format!("- {name}: {desc}"),
            short: format!("- {name}"),
            pinned: false,
        }
    }

    /// The s3 fixture: `sk-001` … `sk-200` with 200-character descriptions, then `zz-long` with
    /// its 2,000-character description cut to 1,536.
    fn s3() -> Vec<Entry> {
        let mut e: Vec<Entry> = (1..=200)
            .map(|i| entry(&format!("sk-{i:03}"), &"d".repeat(200)))
            .collect();
        e.push(entry(
            "zz-long",
            &crate::skills::describe::cap(&"z".repeat(2_000), 1_536).0,
        ));
        e
    }

    /// The reference CLI's bundled skills as they weigh on the budget: the eleven it keeps full
    /// and `init`, 6,108 characters in all (derived from s3/many200: 29,965 characters listed,
    /// less what the measured entries and the 213 newlines take; modelled as twelve pinned
    /// entries of 509), then `security-review`, reduced.
    fn bundled() -> Vec<Entry> {
        let mut e: Vec<Entry> = (0..12)
            .map(|i| {
                let mut x = entry(&format!("bundled-{i:02}"), &"b".repeat(509 - 14));
                x.pinned = true;
                x
            })
            .collect();
        e.push(entry("security-review", &"s".repeat(90)));
        e
    }

    fn full_names(entries: &[Entry], l: &Listing) -> Vec<String> {
        entries
            .iter()
            .zip(&l.full)
            .filter(|(_, f)| **f)
            .map(|(e, _)| e.name.clone())
            .filter(|n| n.starts_with("sk-") || n == "zz-long")
            .collect()
    }

    fn sk(range: std::ops::RangeInclusive<usize>) -> Vec<String> {
        range.map(|i| format!("sk-{i:03}")).collect()
    }

    /// Section 4's measurements, with the bundled skills' weight derived from one of them: the
    /// other two are predictions.
    #[test]
    fn the_measured_budgets_with_the_reference_clis_bundled_skills() {
        let mut entries = s3();
        entries.extend(bundled());
        let l = lay_out(&entries, budget(None, 1_000_000, 3, None), &[]);
        assert_eq!(l.budget, 30_000);
        assert_eq!(full_names(&entries, &l), sk(1..=109));
        assert_eq!(l.width, 29_965, "s3/many200: 29,965 characters fit");
        // Bundled entries kept full; security-review and zz-long reduced.
        assert!(l.full[201..213].iter().all(|f| *f));
        assert!(!l.full[213] && !l.full[200]);
        let l = lay_out(&entries, budget(Some("10000"), 1_000_000, 3, None), &[]);
        assert_eq!(full_names(&entries, &l), sk(1..=10), "s3/budget10000");
        let usage = ["sk-200".to_string(), "sk-150".to_string()];
        let l = lay_out(&entries, 10_000, &usage);
        let mut want = sk(1..=8);
        want.extend(["sk-150".to_string(), "sk-200".to_string()]);
        assert_eq!(full_names(&entries, &l), want, "s3/usage10000");
    }

    /// Our listing has no bundled skills: the whole budget is the user's.
    #[test]
    fn without_bundled_skills_more_descriptions_fit() {
        let entries = s3();
        let l = lay_out(&entries, 30_000, &[]);
        // 201 reduced entries and 200 newlines take 1,809; each restore adds 202: 139 fit.
        assert_eq!(full_names(&entries, &l), sk(1..=139));
        let l = lay_out(&entries, 10_000, &[]);
        assert_eq!(full_names(&entries, &l), sk(1..=40));
        let text = l.text.unwrap();
        assert!(text.starts_with(HEADER));
        assert!(text.ends_with("\n- sk-200\n- zz-long"));
        assert!(text.contains(&format!("- sk-040: {}\n- sk-041\n", "d".repeat(200))));
    }

    #[test]
    fn budgets_follow_the_model_the_fraction_and_the_variable() {
        assert_eq!(budget(None, 200_000, 4, None), 8_000);
        assert_eq!(budget(None, 1_000_000, 3, Some(0.005)), 15_000);
        assert_eq!(budget(Some("10000"), 1_000_000, 3, Some(0.5)), 10_000);
        assert_eq!(budget(Some("lots"), 200_000, 4, None), 8_000);
    }

    #[test]
    fn under_budget_everything_is_full_and_cjk_counts_double() {
        let cjk = "漢".repeat(100);
        assert_eq!(width(&cjk), 200);
        let entries: Vec<Entry> = (0..16).map(|i| entry(&format!("c{i:02}"), &cjk)).collect();
        let l = lay_out(&entries, 10_000, &[]);
        assert!(l.full.iter().all(|f| *f));
        assert_eq!(l.width, 16 * ("- c00: ".len() as u64 + 200) + 15);
        // A later, shorter entry fits after a longer one did not.
        let entries = vec![entry("a", &"x".repeat(50)), entry("b", &"x".repeat(5))];
        let l = lay_out(&entries, 20, &[]);
        assert_eq!(l.full, [false, true]);
        assert_eq!(lay_out(&[], 10, &[]).text, None);
    }
}
