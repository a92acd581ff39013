//! A Bash command line, parsed into the simple commands it runs, on brush's bash parser
//! (`brush-parser`: the parser of brush, a maintained bash-compatible shell).
//!
//! What the judgement needs from the syntax (`../shared/spec/permissions-trust.md` section 4):
//! the parts a list joins (`&&`, `||`, `;`, `&`, newlines, pipes, subshells and brace groups),
//! each part's words as written (for the rules) and as the shell would read them when nothing
//! expands (for the paths), its redirections, and whether anything in it runs or expands before
//! the command does (`$(…)`, backquotes, process substitutions, `$VAR`, `$((…))`, a here-document
//! that expands). Loops, conditionals and function definitions are kept as one opaque part.
//!
//! A line brush cannot read (or one too long or too deeply nested to read safely on a small
//! stack) is [`Parsed::Unreadable`]; [`rough_parts`] then cuts it at every operator-like
//! character, for deny rules only (more parts than the shell would see: a deny can only match
//! more).

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};

/// Longest command line parsed (a model's command is rarely 1 KB).
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Deepest nesting of brackets and quotes parsed (the parser recurses).
const MAX_DEPTH: usize = 48;

/// One word of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// As written (quotes included).
    pub raw: String,
    /// The text the shell gives it when nothing expands (quotes removed, `~` kept as `~`);
    /// `None` when it has an expansion or a substitution.
    pub literal: Option<String>,
    /// It starts with an unquoted `~` or `~/`.
    pub tilde: bool,
    /// It has unquoted `*`, `?` or `[`: the shell expands it to file names.
    pub glob: bool,
}

/// Where a redirection goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// `>`, `>>`, `>|`, `<>`, `&>`: a file written.
    Out(Word),
    /// `<`: a file read.
    In(Word),
}

/// One simple command of the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Simple {
    /// The command as the rules see it: its assignments and words as written, one space apart,
    /// without its redirections.
    pub text: String,
    /// `FOO=1 cmd`: assignments before the command word.
    pub assignments: bool,
    /// The command word and its arguments.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Scripts of `$(…)`, backquotes and `<(…)` in it (run before it).
    pub nested: Vec<String>,
    /// `$VAR`, `${…}`, `$((…))`, or a here-document that expands.
    pub variable: bool,
}

/// A part of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Simple(Simple),
    /// A loop, conditional, function definition, `[[ … ]]` or `(( … ))`: its text.
    Opaque(String),
}

/// What a command line is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Parts(Vec<Part>),
    Unreadable,
}

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions {
        enable_extended_globbing: false,
        ..Default::default()
    }
}

/// Parses a command line.
pub fn parse(command: &str) -> Parsed {
    if command.len() > MAX_COMMAND_BYTES || depth(command) > MAX_DEPTH {
        return Parsed::Unreadable;
    }
    let opts = options();
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(command.as_bytes()), &opts);
    let Ok(program) = parser.parse_program() else {
        return Parsed::Unreadable;
    };
    let mut parts = Vec::new();
    for list in &program.complete_commands {
        if !compound_list(list, &mut parts, 0) {
            return Parsed::Unreadable;
        }
    }
    Parsed::Parts(parts)
}

/// The deepest nesting of `(`, `{`, `[` and quotes (a bound before the parser recurses).
fn depth(s: &str) -> usize {
    let (mut d, mut max) = (0usize, 0usize);
    let (mut single, mut double, mut back) = (false, false, false);
    for c in s.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '`' if !single => back = !back,
            '(' | '{' | '[' if !single => d += 1,
            ')' | '}' | ']' if !single => d = d.saturating_sub(1),
            _ => {}
        }
        max = max.max(d + usize::from(double) + usize::from(back));
    }
    max
}

fn compound_list(list: &CompoundList, out: &mut Vec<Part>, level: usize) -> bool {
    if level > MAX_DEPTH {
        return false;
    }
    for ast::CompoundListItem(and_or, _) in &list.0 {
        for pipeline in
            std::iter::once(&and_or.first).chain(and_or.additional.iter().map(|a| match a {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
            }))
        {
            for cmd in &pipeline.seq {
                if !command(cmd, out, level) {
                    return false;
                }
            }
        }
    }
    true
}

fn command(cmd: &Command, out: &mut Vec<Part>, level: usize) -> bool {
    match cmd {
        Command::Simple(s) => {
            out.push(Part::Simple(simple(s)));
            true
        }
        Command::Compound(CompoundCommand::Subshell(s), redirects)
            if redirects.is_none() || redirects.as_ref().is_some_and(|r| r.0.is_empty()) =>
        {
            compound_list(&s.list, out, level + 1)
        }
        Command::Compound(CompoundCommand::BraceGroup(b), redirects)
            if redirects.is_none() || redirects.as_ref().is_some_and(|r| r.0.is_empty()) =>
        {
            compound_list(&b.list, out, level + 1)
        }
        other => {
            out.push(Part::Opaque(other.to_string()));
            true
        }
    }
}

fn simple(s: &ast::SimpleCommand) -> Simple {
    let mut out = Simple::default();
    let mut text: Vec<String> = Vec::new();
    for i in s.prefix.iter().flat_map(|p| p.0.iter()) {
        item(i, true, &mut out, &mut text);
    }
    if let Some(name) = &s.word_or_name {
        text.push(name.value.clone());
        let w = analyse(&name.value, &mut out);
        out.words.push(w);
    }
    for i in s.suffix.iter().flat_map(|p| p.0.iter()) {
        item(i, false, &mut out, &mut text);
    }
    out.text = text.join(" ");
    out
}

fn item(i: &CommandPrefixOrSuffixItem, in_prefix: bool, out: &mut Simple, text: &mut Vec<String>) {
    match i {
        CommandPrefixOrSuffixItem::Word(w) => {
            text.push(w.value.clone());
            let w = analyse(&w.value, out);
            out.words.push(w);
        }
        CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
            if in_prefix && out.words.is_empty() {
                out.assignments = true;
            }
            text.push(w.value.clone());
            // `FOO=$(cmd)` runs cmd; `FOO=$X` expands.
            let _ = analyse(&w.value, out);
        }
        CommandPrefixOrSuffixItem::IoRedirect(r) => redirect(r, out),
        CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
            out.nested.push(sub.list.to_string());
        }
    }
}

fn redirect(r: &IoRedirect, out: &mut Simple) {
    match r {
        IoRedirect::File(_, kind, IoFileRedirectTarget::Filename(w)) => {
            let word = analyse(&w.value, out);
            match kind {
                IoFileRedirectKind::Read => out.redirects.push(Redirect::In(word)),
                IoFileRedirectKind::Write
                | IoFileRedirectKind::Append
                | IoFileRedirectKind::Clobber
                | IoFileRedirectKind::ReadAndWrite => out.redirects.push(Redirect::Out(word)),
                IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => {}
            }
        }
        IoRedirect::File(_, kind, IoFileRedirectTarget::Duplicate(w)) => {
            // `>&file` (not a descriptor) writes a file.
            let word = analyse(&w.value, out);
            let is_fd = word
                .literal
                .as_deref()
                .is_some_and(|l| l == "-" || l.trim_end_matches('-').parse::<u32>().is_ok());
            if !is_fd {
                match kind {
                    IoFileRedirectKind::DuplicateInput => out.redirects.push(Redirect::In(word)),
                    _ => out.redirects.push(Redirect::Out(word)),
                }
            }
        }
        IoRedirect::File(_, _, IoFileRedirectTarget::Fd(_)) => {}
        IoRedirect::File(_, _, IoFileRedirectTarget::ProcessSubstitution(_, sub)) => {
            out.nested.push(sub.list.to_string());
        }
        IoRedirect::OutputAndError(w, _) => {
            let word = analyse(&w.value, out);
            out.redirects.push(Redirect::Out(word));
        }
        IoRedirect::HereString(_, w) => {
            let _ = analyse(&w.value, out);
        }
        IoRedirect::HereDocument(_, doc) => {
            if doc.requires_expansion {
                let body = &doc.doc.value;
                if body.contains("$(") || body.contains('`') {
                    out.nested.push(body.clone());
                } else if body.contains('$') {
                    out.variable = true;
                }
            }
        }
    }
}

/// A word's literal text, and what in it runs or expands (recorded on `out`).
fn analyse(raw: &str, out: &mut Simple) -> Word {
    let mut w = Word {
        raw: raw.to_string(),
        literal: Some(String::new()),
        tilde: false,
        glob: false,
    };
    match word::parse(raw, &options()) {
        Ok(pieces) => {
            for (i, p) in pieces.iter().enumerate() {
                piece(p, i == 0, &mut w, out, false);
            }
        }
        Err(_) => {
            w.literal = None;
            out.variable = true;
        }
    }
    w
}

fn piece(p: &WordPieceWithSource, first: bool, w: &mut Word, out: &mut Simple, quoted: bool) {
    let push = |w: &mut Word, s: &str| {
        if let Some(l) = w.literal.as_mut() {
            l.push_str(s);
        }
    };
    match &p.piece {
        WordPiece::Text(t) => {
            if !quoted && t.contains(['*', '?', '[']) {
                w.glob = true;
            }
            push(w, t);
        }
        WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => push(w, t),
        WordPiece::EscapeSequence(e) => push(w, e.strip_prefix('\\').unwrap_or(e)),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            for q in inner {
                piece(q, false, w, out, true);
            }
        }
        WordPiece::TildeExpansion(t) => {
            if first && matches!(t, word::TildeExpr::Home) {
                w.tilde = true;
                push(w, "~");
            } else {
                w.literal = None;
                out.variable = true;
            }
        }
        WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
            w.literal = None;
            out.variable = true;
        }
        WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
            w.literal = None;
            out.nested.push(s.clone());
        }
    }
}

/// The line cut at every character that can start another command (`;`, `&`, `|`, newlines,
/// brackets, backquotes, `$(`), each piece trimmed and without leading reserved words: what a
/// deny rule is matched against when the line cannot be parsed.
pub fn rough_parts(command: &str) -> Vec<String> {
    const RESERVED: [&str; 12] = [
        "do", "then", "else", "elif", "if", "while", "until", "!", "time", "{", "(", "exec",
    ];
    command
        .split([';', '&', '|', '\n', '(', ')', '{', '}', '`'])
        .map(|p| {
            let mut p = p.trim().trim_start_matches('$').trim();
            while let Some(first) = p.split_whitespace().next()
                && RESERVED.contains(&first)
            {
                p = p[first.len()..].trim_start();
            }
            p.to_string()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Vec<String> {
        match parse(command) {
            Parsed::Parts(parts) => parts
                .into_iter()
                .map(|p| match p {
                    Part::Simple(s) => s.text,
                    Part::Opaque(t) => format!("opaque: {t}"),
                })
                .collect(),
            Parsed::Unreadable => vec!["unreadable".into()],
        }
    }

    fn only(command: &str) -> Simple {
        match parse(command) {
            Parsed::Parts(mut p) if p.len() == 1 => match p.remove(0) {
                Part::Simple(s) => s,
                o => panic!("{o:?}"),
            },
            o => panic!("{command}: {o:?}"),
        }
    }

    #[test]
    fn lists_pipes_and_groups_split_into_parts() {
        assert_eq!(texts("touch t2 && touch t3"), ["touch t2", "touch t3"]);
        assert_eq!(texts("touch t10 || touch t11"), ["touch t10", "touch t11"]);
        assert_eq!(texts("touch t5; mkdir d5"), ["touch t5", "mkdir d5"]);
        assert_eq!(texts("touch t15\nmkdir d15"), ["touch t15", "mkdir d15"]);
        assert_eq!(texts("touch t6 | cat"), ["touch t6", "cat"]);
        assert_eq!(texts("touch   t8"), ["touch t8"]);
        assert_eq!(texts("a & b"), ["a", "b"]);
        assert_eq!(texts("(a && b) ; { c; }"), ["a", "b", "c"]);
        assert_eq!(texts("FOO=1 touch t13"), ["FOO=1 touch t13"]);
        assert!(texts("for f in *; do rm $f; done")[0].starts_with("opaque: "));
        assert_eq!(texts("echo 'a && b'"), ["echo 'a && b'"]);
        assert_eq!(texts("echo hi > out.txt"), ["echo hi"]);
    }

    #[test]
    fn words_redirections_and_expansions() {
        let s = only("cat .env");
        assert_eq!(s.words[1].literal.as_deref(), Some(".env"));
        let s = only("cat 'a b' \"c\"d ~/x *.rs");
        let lit: Vec<_> = s.words.iter().map(|w| w.literal.clone()).collect();
        assert_eq!(
            lit,
            [
                Some("cat".into()),
                Some("a b".into()),
                Some("cd".into()),
                Some("~/x".into()),
                Some("*.rs".into())
            ]
        );
        assert!(s.words[3].tilde && s.words[4].glob && !s.words[1].glob);
        let s = only("echo hi > out.txt 2>&1");
        assert_eq!(s.redirects.len(), 1);
        assert!(
            matches!(&s.redirects[0], Redirect::Out(w) if w.literal.as_deref() == Some("out.txt"))
        );
        let s = only("wc -l < in.txt");
        assert!(matches!(&s.redirects[0], Redirect::In(_)));
        let s = only("echo $(touch t12)");
        assert_eq!(s.nested, ["touch t12"]);
        let s = only("echo `rm x`");
        assert_eq!(s.nested, ["rm x"]);
        let s = only("echo ENV=$PPT_PROJECT_ENV");
        assert!(s.variable && s.nested.is_empty());
        let s = only("diff <(cat a) b");
        assert_eq!(s.nested.len(), 1);
        assert!(only("FOO=1 touch t13").assignments);
        assert!(!only("touch t13").assignments);
    }

    #[test]
    fn unreadable_lines_are_cut_roughly_for_deny_rules() {
        assert_eq!(parse("echo 'unterminated"), Parsed::Unreadable);
        assert_eq!(parse(&"(".repeat(200)), Parsed::Unreadable);
        assert_eq!(
            parse(&"x".repeat(MAX_COMMAND_BYTES + 1)),
            Parsed::Unreadable
        );
        assert_eq!(
            rough_parts("ls; if true; then rm -rf x; fi && $(sudo y) | z"),
            ["ls", "true", "rm -rf x", "fi", "sudo y", "z"]
        );
    }

    #[test]
    fn a_long_chain_parses_without_exhausting_the_stack() {
        let line = vec!["true"; 3000].join(" && ");
        match parse(&line) {
            Parsed::Parts(p) => assert_eq!(p.len(), 3000),
            Parsed::Unreadable => {}
        }
    }
}
