//! One glob compiled to a small automaton, and the index that picks which globs of a rules
//! directory can match a path at all.
//!
//! The grammar is globset's (with `literal_separator` and `backslash_escape`: `*` and `?` stop at
//! `/`, `**` crosses directories where globset allows it, `[...]` classes, `{a,b}` alternates,
//! `\` escapes), parsed the way globset parses it; whether a glob is valid is still decided by
//! globset itself ([`super::check`]). Matching differs from globset's in what it costs, not in
//! what it answers: a glob is a list of instructions run as a Thompson automaton over the
//! path's characters (time: path length × glob length, never exponential; memory: a few bytes per
//! glob character), instead of a regular expression per glob. Measured on 10,000 globs like
//! `src/dN/**/*.ts`: globset's set took 15.6 KB per glob (1.26 s to build), and a set of 10,000
//! `src/dN/**/*.ts/**` globs failed to build at all ("error building NFA"), after which no rule
//! of that directory ever matched; regex-automata's PikeVM took 1.6 KB per glob one by one, and
//! its many-pattern cache grows with patterns × states (40 GB for 10,000).
//!
//! Two deliberate differences from globset, both on paths no rule names in practice: `?` and
//! classes match one *character* (globset: one byte; Claude Code, in JavaScript, one UTF-16 unit),
//! and `**` also crosses a newline in a file name (globset's `.` does not).
//!
//! Gitignore semantics are built in: a glob matches a path when it matches the whole path *or*
//! one of its ancestor directories (`src` matches `src/a/b.ts`), which the automaton sees as
//! "in an accepting state right before a `/`".

use std::collections::HashMap;
use std::iter::Peekable;
use std::str::Chars;

/// A token of globset's grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`: one character that is not `/`.
    Any,
    /// `*`: any run of characters without `/`.
    ZeroOrMore,
    /// `**/` at the start: nothing, or anything ending with `/`.
    RecursivePrefix,
    /// `/**` at the end: `/` and anything after it.
    RecursiveSuffix,
    /// `/**/` inside: `/`, or `/` anything `/`.
    RecursiveZeroOrMore,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Alternates(Vec<Vec<Token>>),
}

/// globset's parser (`glob.rs`, `Parser`), for globs it accepts; `None` for the others (they
/// are reported by [`super::check`] and never compiled).
struct Parser<'a> {
    chars: Peekable<Chars<'a>>,
    prev: Option<char>,
    cur: Option<char>,
    alternates_stack: Vec<usize>,
    branches: Vec<Vec<Token>>,
}

impl Parser<'_> {
    fn parse(glob: &str) -> Option<Vec<Token>> {
        let mut p = Parser {
            chars: glob.chars().peekable(),
            prev: None,
            cur: None,
            alternates_stack: Vec::new(),
            branches: vec![Vec::new()],
        };
        while let Some(c) = p.bump() {
            match c {
                '?' => p.push(Token::Any)?,
                '*' => p.star()?,
                '[' => p.class()?,
                '{' => {
                    p.alternates_stack.push(p.branches.len());
                    p.branches.push(Vec::new());
                }
                '}' => {
                    let start = p.alternates_stack.pop()?;
                    let alts = p.branches.drain(start..).collect();
                    p.push(Token::Alternates(alts))?;
                }
                ',' if !p.alternates_stack.is_empty() => p.branches.push(Vec::new()),
                '\\' => {
                    let c = p.bump()?;
                    p.push(Token::Literal(c))?;
                }
                c => p.push(Token::Literal(c))?,
            }
        }
        if p.branches.len() != 1 {
            return None;
        }
        p.branches.pop()
    }

    fn bump(&mut self) -> Option<char> {
        self.prev = self.cur;
        self.cur = self.chars.next();
        self.cur
    }

    fn push(&mut self, t: Token) -> Option<()> {
        self.branches.last_mut()?.push(t);
        Some(())
    }

    fn pop(&mut self) -> Option<Token> {
        self.branches.last_mut()?.pop()
    }

    /// globset's `parse_star`, step for step.
    fn star(&mut self) -> Option<()> {
        let prev = self.prev;
        if self.chars.peek() != Some(&'*') {
            return self.push(Token::ZeroOrMore);
        }
        self.bump();
        if self.branches.last()?.is_empty() {
            if self.chars.peek().is_some_and(|&c| c != '/') {
                self.push(Token::ZeroOrMore)?;
                return self.push(Token::ZeroOrMore);
            }
            self.push(Token::RecursivePrefix)?;
            self.bump();
            return Some(());
        }
        if prev != Some('/')
            && (self.branches.len() <= 1 || (prev != Some(',') && prev != Some('{')))
        {
            self.push(Token::ZeroOrMore)?;
            return self.push(Token::ZeroOrMore);
        }
        let is_suffix = match self.chars.peek() {
            None => true,
            Some(',' | '}') if self.branches.len() >= 2 => true,
            Some('/') => {
                self.bump();
                false
            }
            Some(_) => {
                self.push(Token::ZeroOrMore)?;
                return self.push(Token::ZeroOrMore);
            }
        };
        match self.pop()? {
            Token::RecursivePrefix => self.push(Token::RecursivePrefix),
            Token::RecursiveSuffix => self.push(Token::RecursiveSuffix),
            _ if is_suffix => self.push(Token::RecursiveSuffix),
            _ => self.push(Token::RecursiveZeroOrMore),
        }
    }

    /// globset's `parse_class`: `[!...]` or `[^...]` negates, `]` first is literal, `-` first
    /// or last is literal, `a-z` is a range.
    fn class(&mut self) -> Option<()> {
        let mut ranges: Vec<(char, char)> = Vec::new();
        let negated = matches!(self.chars.peek(), Some('!' | '^'));
        if negated {
            self.bump();
        }
        let (mut first, mut in_range) = (true, false);
        loop {
            let c = self.bump()?; // Unclosed: invalid.
            match c {
                ']' if !first => break,
                ']' => ranges.push((']', ']')),
                '-' if first => ranges.push(('-', '-')),
                '-' if in_range => {
                    let r = ranges.last_mut()?;
                    r.1 = '-';
                    if r.1 < r.0 {
                        return None;
                    }
                    in_range = false;
                }
                '-' => in_range = true,
                c => {
                    if in_range {
                        let r = ranges.last_mut()?;
                        r.1 = c;
                        if r.1 < r.0 {
                            return None;
                        }
                    } else {
                        ranges.push((c, c));
                    }
                    in_range = false;
                }
            }
            first = false;
        }
        if in_range {
            ranges.push(('-', '-'));
        }
        self.push(Token::Class { negated, ranges })
    }
}

/// One instruction of the automaton.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inst {
    Char(char),
    /// Any character but `/`.
    NotSlash,
    /// Any character.
    Any,
    /// A character of class `n`.
    Class(u32),
    /// Go on at both.
    Split(u32, u32),
    Jump(u32),
    Match,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Class {
    negated: bool,
    ranges: Box<[(char, char)]>,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= c && c <= b) != self.negated
    }
}

/// One glob, compiled.
#[derive(Clone, Debug)]
pub struct Program {
    insts: Box<[Inst]>,
    classes: Box<[Class]>,
    /// The glob is `**` alone: it matches everything.
    all: bool,
}

impl Program {
    /// Compiles a glob globset accepts; `None` for one it rejects.
    pub fn new(glob: &str) -> Option<Program> {
        let tokens = Parser::parse(glob)?;
        Some(Program::from_tokens(&tokens))
    }

    fn from_tokens(tokens: &[Token]) -> Program {
        let mut c = Compiler::default();
        let all = tokens == [Token::RecursivePrefix];
        if !all {
            c.tokens(tokens);
        }
        c.insts.push(Inst::Match);
        Program {
            insts: c.insts.into(),
            classes: c.classes.into(),
            all,
        }
    }

    /// Does the glob match `path`, or one of its ancestor directories (gitignore semantics)?
    pub fn matches(&self, path: &str) -> bool {
        if self.all {
            return true;
        }
        let n = self.insts.len();
        let mut cur = States::new(n);
        let mut next = States::new(n);
        self.add(&mut cur, 0);
        for c in path.chars() {
            if c == '/' && cur.matched {
                return true; // An ancestor directory matched.
            }
            next.clear();
            for i in 0..cur.list.len() {
                let pc = cur.list[i] as usize;
                let ok = match self.insts[pc] {
                    Inst::Char(x) => x == c,
                    Inst::NotSlash => c != '/',
                    Inst::Any => true,
                    Inst::Class(k) => self.classes[k as usize].contains(c),
                    _ => false,
                };
                if ok {
                    self.add(&mut next, pc as u32 + 1);
                }
            }
            std::mem::swap(&mut cur, &mut next);
            if cur.list.is_empty() && !cur.matched {
                return false;
            }
        }
        cur.matched
    }

    /// Adds `pc` and every instruction reachable from it without reading a character.
    fn add(&self, set: &mut States, pc: u32) {
        let mut stack = vec![pc];
        while let Some(pc) = stack.pop() {
            if !set.insert(pc) {
                continue;
            }
            match self.insts[pc as usize] {
                Inst::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Inst::Jump(a) => stack.push(a),
                Inst::Match => set.matched = true,
                _ => set.list.push(pc),
            }
        }
    }
}

/// A set of instructions (sparse: insertion and clearing in constant time).
struct States {
    seen: Vec<u32>,
    stamp: u32,
    /// Instructions that read a character.
    list: Vec<u32>,
    matched: bool,
}

impl States {
    fn new(n: usize) -> States {
        States {
            seen: vec![0; n],
            stamp: 1,
            list: Vec::new(),
            matched: false,
        }
    }

    fn insert(&mut self, pc: u32) -> bool {
        let slot = &mut self.seen[pc as usize];
        if *slot == self.stamp {
            return false;
        }
        *slot = self.stamp;
        true
    }

    fn clear(&mut self) {
        self.stamp += 1;
        self.list.clear();
        self.matched = false;
    }
}

#[derive(Default)]
struct Compiler {
    insts: Vec<Inst>,
    classes: Vec<Class>,
}

impl Compiler {
    fn here(&self) -> u32 {
        self.insts.len() as u32
    }

    fn push(&mut self, i: Inst) -> usize {
        self.insts.push(i);
        self.insts.len() - 1
    }

    /// `inst*`: a loop over one reading instruction.
    fn star(&mut self, inst: Inst) {
        let split = self.push(Inst::Split(0, 0));
        self.push(inst);
        self.push(Inst::Jump(split as u32));
        self.insts[split] = Inst::Split(split as u32 + 1, self.here());
    }

    fn tokens(&mut self, tokens: &[Token]) {
        for t in tokens {
            match t {
                Token::Literal(c) => {
                    self.push(Inst::Char(*c));
                }
                Token::Any => {
                    self.push(Inst::NotSlash);
                }
                Token::ZeroOrMore => self.star(Inst::NotSlash),
                // (?:/?|.*/): nothing, or anything then `/` (which covers `/` alone).
                Token::RecursivePrefix => {
                    let split = self.push(Inst::Split(0, 0));
                    let body = self.here();
                    self.star(Inst::Any);
                    self.push(Inst::Char('/'));
                    self.insts[split] = Inst::Split(self.here(), body);
                }
                // /.*
                Token::RecursiveSuffix => {
                    self.push(Inst::Char('/'));
                    self.star(Inst::Any);
                }
                // (?:/|/.*/)
                Token::RecursiveZeroOrMore => {
                    self.push(Inst::Char('/'));
                    let split = self.push(Inst::Split(0, 0));
                    let body = self.here();
                    self.star(Inst::Any);
                    self.push(Inst::Char('/'));
                    self.insts[split] = Inst::Split(self.here(), body);
                }
                Token::Class { negated, ranges } => {
                    self.classes.push(Class {
                        negated: *negated,
                        ranges: ranges.clone().into(),
                    });
                    self.push(Inst::Class(self.classes.len() as u32 - 1));
                }
                // globset drops empty alternatives (`{,a}` is `(?:a)`); with none left, the
                // group matches nothing extra (an empty regex).
                Token::Alternates(alts) => {
                    let alts: Vec<&Vec<Token>> = alts.iter().filter(|a| !a.is_empty()).collect();
                    let mut jumps = Vec::new();
                    for (i, alt) in alts.iter().enumerate() {
                        if i + 1 < alts.len() {
                            let split = self.push(Inst::Split(0, 0));
                            self.tokens(alt);
                            jumps.push(self.push(Inst::Jump(0)));
                            self.insts[split] = Inst::Split(split as u32 + 1, self.here());
                        } else {
                            self.tokens(alt);
                        }
                    }
                    let end = self.here();
                    for j in jumps {
                        self.insts[j] = Inst::Jump(end);
                    }
                }
            }
        }
    }
}

/// What a path must hold for a glob to have a chance to match it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// The path starts with these whole components (`src/d0` for `src/d0/**/*.ts`).
    Prefix(String),
    /// Some component of the path is exactly this (`api` for `**/api/**/*.ts`).
    Component(String),
    /// Some component's extension is this (`ts` for `**/*.test.ts`).
    Extension(String),
    /// Nothing cheap to tell: tried on every path.
    None,
}

/// The cheapest sure [`Key`] of a glob.
pub fn key(glob: &str) -> Key {
    let Some(tokens) = Parser::parse(glob) else {
        return Key::None;
    };
    if tokens == [Token::RecursivePrefix] {
        return Key::None;
    }
    // Literal components at the start: the path must start with them.
    let mut prefix = String::new();
    let mut whole = String::new();
    let mut all_literal = true;
    for t in &tokens {
        match t {
            Token::Literal('/') => {
                whole.clone_from(&prefix);
                prefix.push('/');
            }
            Token::Literal(c) => prefix.push(*c),
            // `/**/` and `/**` start with a separator: what came before is a whole component.
            Token::RecursiveZeroOrMore | Token::RecursiveSuffix => {
                whole.clone_from(&prefix);
                all_literal = false;
                break;
            }
            _ => {
                all_literal = false;
                break;
            }
        }
    }
    if all_literal {
        return Key::Prefix(prefix);
    }
    if !whole.is_empty() {
        return Key::Prefix(whole);
    }
    // Components align with the path's only when nothing but a separator can match `/`.
    let crosses = |t: &Token| match t {
        Token::Class { negated, ranges } => {
            *negated || ranges.iter().any(|&(a, b)| a <= '/' && '/' <= b)
        }
        Token::Alternates(_) => true,
        _ => false,
    };
    if tokens.iter().any(crosses) {
        return Key::None;
    }
    let separator = |t: &Token| {
        matches!(
            t,
            Token::Literal('/')
                | Token::RecursivePrefix
                | Token::RecursiveSuffix
                | Token::RecursiveZeroOrMore
        )
    };
    let components: Vec<&[Token]> = tokens.split(separator).filter(|c| !c.is_empty()).collect();
    let literal = |c: &[Token]| -> Option<String> {
        c.iter()
            .map(|t| match t {
                Token::Literal(ch) => Some(*ch),
                _ => None,
            })
            .collect()
    };
    if let Some(name) = components
        .iter()
        .filter_map(|c| literal(c))
        .max_by_key(String::len)
    {
        return Key::Component(name);
    }
    // A component ending with a literal that holds a dot: its extension is known.
    for c in components.iter().rev() {
        let suffix: String = c
            .iter()
            .rev()
            .map_while(|t| match t {
                Token::Literal(ch) => Some(*ch),
                _ => None,
            })
            .collect::<Vec<char>>()
            .into_iter()
            .rev()
            .collect();
        if let Some((_, ext)) = suffix.rsplit_once('.') {
            return Key::Extension(ext.to_string());
        }
    }
    Key::None
}

/// Globs indexed by [`Key`]: `candidates` gives the globs that may match a path, a small part
/// of them in a directory of many rules, each checked once.
#[derive(Clone, Debug, Default)]
pub struct Index {
    prefix: HashMap<Box<str>, Vec<u32>>,
    component: HashMap<Box<str>, Vec<u32>>,
    extension: HashMap<Box<str>, Vec<u32>>,
    always: Vec<u32>,
}

impl Index {
    pub fn add(&mut self, id: u32, key: Key) {
        match key {
            Key::Prefix(p) => self.prefix.entry(p.into()).or_default().push(id),
            Key::Component(c) => self.component.entry(c.into()).or_default().push(id),
            Key::Extension(e) => self.extension.entry(e.into()).or_default().push(id),
            Key::None => self.always.push(id),
        }
    }

    /// The globs that may match `path` (`/`-separated, relative), sorted, each once.
    pub fn candidates(&self, path: &str) -> Vec<u32> {
        let mut out = self.always.clone();
        let mut end = 0;
        for comp in path.split('/') {
            end += comp.len();
            if !self.prefix.is_empty()
                && let Some(ids) = self.prefix.get(&path[..end])
            {
                out.extend_from_slice(ids);
            }
            end += 1;
            if let Some(ids) = self.component.get(comp) {
                out.extend_from_slice(ids);
            }
            if let Some((_, ext)) = comp.rsplit_once('.')
                && let Some(ids) = self.extension.get(ext)
            {
                out.extend_from_slice(ids);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        Program::new(glob).expect("valid").matches(path)
    }

    #[test]
    fn matching_with_ancestors() {
        let cases: &[(&str, &str, bool)] = &[
            ("src", "src", true),
            ("src", "src/a/b.ts", true),
            ("src", "srcx/a", false),
            ("**/src", "lib/src/x.ts", true),
            ("**/*.ts", "a.ts", true),
            ("**/*.ts", "a/b/c.ts", true),
            ("**/*.ts", "a.ts/b", true),
            ("**/*.ts", "a.tsx", false),
            ("src/*.ts", "src/a.ts", true),
            ("src/*.ts", "src/a/b.ts", false),
            ("src/**/*.ts", "src/a.ts", true),
            ("src/**/*.ts", "src/a/b/c.ts", true),
            ("a/**", "a/b", true),
            ("a/**", "a", false),
            ("a/**/b", "a/b", true),
            ("a/**/b", "a/x/y/b/c", true),
            ("?.ts", "é.ts", true),
            ("[ab].md", "b.md", true),
            ("[!ab].md", "c.md", true),
            ("[!ab].md", "a.md", false),
            ("x{a,b}", "xb", true),
            ("x{a,b}", "xc", false),
            ("x{,a}", "x", false),
            ("x{,a}", "xa", true),
            ("**", "anything/at/all", true),
            ("a**b", "axxb", true),
            ("a**b", "ax/xb", false),
            ("\\*", "*", true),
            ("\\*", "a", false),
        ];
        for (glob, path, want) in cases {
            assert_eq!(m(glob, path), *want, "{glob} vs {path}");
        }
    }

    #[test]
    fn keys() {
        assert_eq!(key("src/d0/**/*.ts"), Key::Prefix("src/d0".into()));
        assert_eq!(key("src/d0"), Key::Prefix("src/d0".into()));
        assert_eq!(key("**/api/**/*.ts"), Key::Component("api".into()));
        assert_eq!(key("**/*.test.ts"), Key::Extension("ts".into()));
        assert_eq!(key("**/*_test.go"), Key::Extension("go".into()));
        assert_eq!(key("**/*"), Key::None);
        assert_eq!(key("**"), Key::None);
        assert_eq!(key("**/[!a]b/x.ts"), Key::None);
        let mut index = Index::default();
        index.add(0, key("src/d0/**/*.ts"));
        index.add(1, key("**/api/**/*.ts"));
        index.add(2, key("**/*.py"));
        index.add(3, key("**/*"));
        assert_eq!(index.candidates("src/d0/api/x.py"), [0, 1, 2, 3]);
        assert_eq!(index.candidates("src/d1/x.ts"), [3]);
    }

    /// The same answers as globset (with `G` and `G/**`, as the matcher compiled before), on
    /// every glob and path built from a small alphabet.
    #[test]
    fn agrees_with_globset() {
        use globset::GlobBuilder;
        let atoms = [
            "a", "b", "/", "*", "**", "?", ".", "[ab]", "[!a]", "{a,b/}", "\\*",
        ];
        let paths = [
            "a", "b", "ab", "a/b", "b/a", "a/b/a", "a.b", "a/a.b", "aa/bb/ab", "*", "a/*", "ba.a",
            "b/b/b/b", "a/b.a/b",
        ];
        let build = |g: &str| {
            GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
        };
        let mut seed: u64 = 11;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        let mut checked = 0;
        for _ in 0..6_000 {
            let glob: String = (0..1 + next(5)).map(|_| atoms[next(atoms.len())]).collect();
            let (Ok(g), Ok(g_all)) = (build(&glob), build(&format!("{glob}/**"))) else {
                assert!(
                    Program::new(&glob).is_none() || build(&glob).is_ok(),
                    "{glob}"
                );
                continue;
            };
            let p = Program::new(&glob).unwrap_or_else(|| panic!("globset accepts {glob:?}"));
            let k = key(&glob);
            for path in paths {
                let want = g.is_match(path) || g_all.is_match(path);
                assert_eq!(p.matches(path), want, "{glob:?} vs {path:?}");
                if want {
                    let mut index = Index::default();
                    index.add(7, k.clone());
                    assert_eq!(
                        index.candidates(path),
                        [7],
                        "{glob:?} key {k:?} vs {path:?}"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 30_000, "{checked}");
    }
}
