//! `ToolSearch`'s query language and ranking, pure (`../shared/spec/skills-mcp.md` section 6).
//!
//! - `select:<name>[,<name>…]` loads exactly those deferred tools (unknown names are left out;
//!   none known: [`NO_MATCH`]).
//! - Anything else is keywords: each word (lower-cased) scores a tool by its name (a whole part
//!   of `mcp__<server>__<tool>` split at `_` and `-`: 10; inside the name: 5) and its
//!   description (2); a word written `+word` must be in the name. The best [`DEFAULT_MAX`] (or
//!   `max_results`) with a score, highest first, then by name. The reference CLI's own ranking
//!   was not measured; this one is ours.
//!
//! The answer as measured: the `tool_result` holds one `tool_reference` per tool and the same
//! user message a text block [`LOADED`]; nothing found is the string [`NO_MATCH`].

/// The tool's name.
pub const TOOL: &str = "ToolSearch";
/// The result when nothing matched.
pub const NO_MATCH: &str = "No matching deferred tools found";
/// The text block that follows a result that loaded tools.
pub const LOADED: &str = "Tool loaded.";
/// Tools a keyword query loads unless it asks for another number.
pub const DEFAULT_MAX: usize = 5;
/// The most one query loads.
pub const MAX_RESULTS: usize = 50;
/// Characters of a query read (a longer one is cut).
pub const MAX_QUERY: usize = 4_096;

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// `select:a,b`: these names, in order, each once.
    Select(Vec<String>),
    /// Keywords, lower-cased; `required` must appear in the tool's name.
    Keywords {
        terms: Vec<String>,
        required: Vec<String>,
    },
}

/// Reads a query.
pub fn parse(query: &str) -> Query {
    let query = match query.char_indices().nth(MAX_QUERY) {
        Some((i, _)) => &query[..i],
        None => query,
    };
    let q = query.trim();
    if let Some(rest) = q.strip_prefix("select:") {
        let mut names: Vec<String> = Vec::new();
        for n in rest.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_string());
            }
        }
        return Query::Select(names);
    }
    let mut terms = Vec::new();
    let mut required = Vec::new();
    for w in q.split_whitespace().take(64) {
        let lower = w.to_lowercase();
        match lower.strip_prefix('+') {
            Some(r) if !r.is_empty() => required.push(r.to_string()),
            Some(_) => {}
            None => terms.push(lower),
        }
    }
    Query::Keywords { terms, required }
}

/// A deferred tool a query may find.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub description: &'a str,
}

/// The names of the best `max` candidates for keywords, best first.
pub fn rank(
    candidates: &[Candidate<'_>],
    terms: &[String],
    required: &[String],
    max: usize,
) -> Vec<String> {
    let mut scored: Vec<(u32, &str)> = candidates
        .iter()
        .filter_map(|c| {
            let name = c.name.to_lowercase();
            if !required.iter().all(|r| name.contains(r.as_str())) {
                return None;
            }
            let parts: Vec<&str> = name.split(['_', '-']).filter(|p| !p.is_empty()).collect();
            let description = c.description.to_lowercase();
            let mut score = required.len() as u32 * 10;
            for t in terms {
                if parts.iter().any(|p| p == t) {
                    score += 10;
                } else if name.contains(t.as_str()) {
                    score += 5;
                }
                if description.contains(t.as_str()) {
                    score += 2;
                }
            }
            (score > 0).then_some((score, c.name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(max.clamp(1, MAX_RESULTS))
        .map(|(_, n)| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_and_keywords() {
        assert_eq!(
            parse(" select:mcp__demo__add, mcp__demo__echo,mcp__demo__add,"),
            Query::Select(vec!["mcp__demo__add".into(), "mcp__demo__echo".into()])
        );
        assert_eq!(
            parse("Echo +demo text"),
            Query::Keywords {
                terms: vec!["echo".into(), "text".into()],
                required: vec!["demo".into()],
            }
        );
        let long = "x".repeat(10 * MAX_QUERY);
        let Query::Keywords { terms, .. } = parse(&long) else {
            panic!()
        };
        assert_eq!(terms[0].len(), MAX_QUERY, "a query is read up to its cap");
    }

    #[test]
    fn keywords_rank_names_before_descriptions() {
        let c = [
            Candidate {
                name: "mcp__demo__add",
                description: "Add two numbers.",
            },
            Candidate {
                name: "mcp__demo__echo",
                description: "Echo text back.",
            },
            Candidate {
                name: "mcp__other__say",
                description: "Say some text aloud; an echo of sorts.",
            },
            Candidate {
                name: "mcp__other__echoes",
                description: "",
            },
        ];
        let r = |q: &str, max| match parse(q) {
            Query::Keywords { terms, required } => rank(&c, &terms, &required, max),
            Query::Select(_) => panic!(),
        };
        assert_eq!(
            r("echo text", 5),
            ["mcp__demo__echo", "mcp__other__echoes", "mcp__other__say"]
        );
        assert_eq!(r("echo", 1), ["mcp__demo__echo"]);
        assert_eq!(
            r("+other echo", 5),
            ["mcp__other__echoes", "mcp__other__say"]
        );
        assert!(r("nothing-like-it", 5).is_empty());
        assert!(r("", 5).is_empty(), "no word, no match");
    }
}
