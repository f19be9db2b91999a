//! Typed access to a command's arguments: maps (literal, bound name or nested command),
//! flags, `key=value` options, tuples.

use super::Session;
use crate::map::IndexingMap;
use crate::syntax::{Arg, ArgGroup, CommandCall, Diagnostic, Span};
use crate::value::Value;

pub struct Args<'a> {
    pub call: &'a CommandCall,
}

impl<'a> Args<'a> {
    pub fn new(call: &'a CommandCall) -> Args<'a> {
        Args { call }
    }
    pub fn span(&self) -> Span {
        self.call.span
    }
    /// Where an error about `key=` points: its value, else the whole command.
    pub fn kv_span(&self, key: &str) -> Span {
        self.kv(key).map_or(self.span(), Arg::span)
    }
    pub fn groups(&self) -> &'a [ArgGroup] {
        &self.call.groups
    }
    /// Every argument, across groups.
    pub fn items(&self) -> impl Iterator<Item = &'a Arg> {
        self.call.groups.iter().flat_map(|g| g.items.iter())
    }
    /// Fails unless there are exactly `n` comma-separated groups.
    pub fn expect_groups(&self, n: usize, usage: &str) -> Result<(), Diagnostic> {
        if self.call.groups.len() != n {
            let span = self.call.groups.get(n).map_or(self.call.span, |g| g.span);
            return Err(Diagnostic::at(
                format!(
                    "`{}` takes {n} argument{}",
                    self.call.name,
                    if n == 1 { "" } else { "s" }
                ),
                span,
            )
            .with_help(format!("usage: {usage}")));
        }
        Ok(())
    }
    /// Whether a bare word such as `explain` or `raw` appears.
    pub fn flag(&self, word: &str) -> bool {
        self.items()
            .any(|a| matches!(a, Arg::Word(w, _) if w == word))
    }
    /// Where the bare word `word` stands, if given.
    pub fn flag_span(&self, word: &str) -> Option<Span> {
        self.items().find_map(|a| match a {
            Arg::Word(w, sp) if w == word => Some(*sp),
            _ => None,
        })
    }
    /// The value of `key=value`, if given.
    pub fn kv(&self, key: &str) -> Option<&'a Arg> {
        self.items().find_map(|a| match a {
            Arg::Kv(k, v, _) if k == key => Some(v.as_ref()),
            _ => None,
        })
    }
    pub fn kv_int(&self, key: &str) -> Result<Option<i64>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Int(v, _)) => Ok(Some(*v)),
            Some(a) => Err(Diagnostic::at(
                format!("`{key}=` takes an integer"),
                a.span(),
            )),
        }
    }
    pub fn kv_word(&self, key: &str) -> Result<Option<String>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Word(w, _)) | Some(Arg::Str(w, _)) => Ok(Some(w.clone())),
            Some(Arg::Int(v, _)) => Ok(Some(v.to_string())),
            Some(a) => Err(Diagnostic::at(format!("`{key}=` takes a word"), a.span())),
        }
    }
    pub fn kv_tuple(&self, key: &str) -> Result<Option<Vec<i64>>, Diagnostic> {
        match self.kv(key) {
            None => Ok(None),
            Some(Arg::Int(v, _)) => Ok(Some(vec![*v])),
            Some(Arg::Tuple(items, _)) => items
                .iter()
                .map(|a| match a {
                    Arg::Int(v, _) => Ok(*v),
                    a => Err(Diagnostic::at(format!("`{key}=` takes integers"), a.span())),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(a) => Err(Diagnostic::at(
                format!("`{key}=` takes a tuple like (1, 2)"),
                a.span(),
            )),
        }
    }
    /// Where entry `i` of `key=(...)` stands (the value itself for a single integer), else
    /// the value, else the whole command.
    pub fn kv_item_span(&self, key: &str, i: usize) -> Span {
        match self.kv(key) {
            Some(Arg::Tuple(items, sp)) => items.get(i).map_or(*sp, Arg::span),
            Some(a) => a.span(),
            None => self.span(),
        }
    }
    /// `key=N` within `lo..=hi`: an error at the value otherwise, naming the range.
    pub fn kv_int_in(&self, key: &str, lo: i64, hi: i64) -> Result<Option<i64>, Diagnostic> {
        match self.kv_int(key)? {
            Some(v) if v < lo || v > hi => Err(Diagnostic::at(
                format!("`{key}=` takes {lo} to {hi}, not {v}"),
                self.kv(key).map_or(self.span(), Arg::span),
            )),
            v => Ok(v),
        }
    }
    /// `key=(n, ...)` whose every entry is at least 1 (sizes, extents): an error at the
    /// first entry that is not.
    pub fn kv_tuple_positive(&self, key: &str) -> Result<Option<Vec<i64>>, Diagnostic> {
        let t = self.kv_tuple(key)?;
        if let Some(v) = &t {
            if let Some(i) = v.iter().position(|&z| z < 1) {
                return Err(Diagnostic::at(
                    format!("`{key}=` takes positive sizes, not {}", v[i]),
                    self.kv_item_span(key, i),
                ));
            }
        }
        Ok(t)
    }
    /// The word after `word` (as in `show m as mlir`, `plot m to f.svg`).
    pub fn after(&self, word: &str) -> Option<&'a Arg> {
        let items: Vec<&Arg> = self.items().collect();
        items
            .iter()
            .position(|a| matches!(a, Arg::Word(w, _) if w == word))
            .and_then(|i| items.get(i + 1).copied())
    }

    /// Evaluates group `i` (its leading items) to a value: a map literal, a bound name, or a
    /// nested command (`simplify m`).
    pub fn value(&self, session: &mut Session, i: usize) -> Result<Value, Diagnostic> {
        let Some(group) = self.call.groups.get(i) else {
            return Err(Diagnostic::at(
                format!("`{}` needs an argument here", self.call.name),
                self.call.span,
            ));
        };
        group_value(session, group)
    }

    /// Group `i` as a map.
    pub fn map(&self, session: &mut Session, i: usize) -> Result<IndexingMap, Diagnostic> {
        let span = self.call.groups.get(i).map_or(self.call.span, |g| g.span);
        match self.value(session, i)? {
            Value::Map(m) => Ok(m),
            Value::Layout(l) => Ok(l.map),
            Value::Explained { map, .. } => Ok(map),
            Value::Maps(ms) if ms.len() == 1 => Ok(ms.into_iter().next().expect("one map")),
            v => Err(Diagnostic::at(
                format!("expected an indexing map, found a {}", v.kind()),
                span,
            )),
        }
    }
}

/// The value of one argument group.
pub fn group_value(session: &mut Session, group: &ArgGroup) -> Result<Value, Diagnostic> {
    match group.items.first() {
        Some(Arg::Map(lit)) => Ok(Value::Map(super::build::build_map(lit)?)),
        Some(Arg::Command(call)) => session.call(call),
        Some(Arg::Word(w, span)) => {
            if let Some(v) = session.values.get(w) {
                return Ok(v.clone());
            }
            if super::commands::find(w).is_some() {
                let call = CommandCall {
                    name: w.clone(),
                    name_span: *span,
                    groups: if group.items.len() > 1 {
                        vec![ArgGroup {
                            items: group.items[1..].to_vec(),
                            span: group.span,
                        }]
                    } else {
                        vec![]
                    },
                    span: group.span,
                };
                return session.call(&call);
            }
            Err(session.unknown_name(w, *span))
        }
        Some(a) => Err(Diagnostic::at(
            "expected a map, a name or a command",
            a.span(),
        )),
        None => Err(Diagnostic::at("missing argument", group.span)),
    }
}

// ---------------------------------------------------------------------------------------
// Declarations: a command's usage string is its declaration. `Signature::parse` reads it,
// `check` enforces it before the command runs (every word and `key=` not declared is an
// error at its column), and the completers offer what it declares.
// ---------------------------------------------------------------------------------------

/// What an option or a keyword takes, read from its placeholder in the usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `N`, `K`, `v`: an integer.
    Int,
    /// `NAME`, `FILE.svg`, `VAR[/N]`, `INSTR`: a word or a quoted string.
    Word,
    /// `(n, ...)`: a tuple (a single integer or name is a tuple of one).
    Tuple,
    /// `auto|gpu|cpu`, `true|false`: one of these words.
    Enum(Vec<String>),
    /// `NAME,...`: names, continuing over the following comma-separated groups.
    List,
}

impl Kind {
    fn of(spec: &str) -> Kind {
        let spec = spec.trim();
        if spec.starts_with('(') {
            return Kind::Tuple;
        }
        if spec.ends_with(",...") || spec.ends_with(", ...") {
            return Kind::List;
        }
        if spec == "true" || spec == "false" {
            return Kind::Enum(vec!["true".into(), "false".into()]);
        }
        let lower = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        };
        if spec.contains('|') && spec.split('|').all(lower) {
            return Kind::Enum(spec.split('|').map(str::to_string).collect());
        }
        if matches!(spec, "N" | "K" | "v") || spec.starts_with(|c: char| c.is_ascii_digit()) {
            return Kind::Int;
        }
        Kind::Word
    }
    /// What the completers offer after `key=`.
    pub fn values(&self) -> Vec<String> {
        match self {
            Kind::Enum(v) => v.clone(),
            _ => Vec::new(),
        }
    }
    fn describe(&self) -> String {
        match self {
            Kind::Int => "an integer".into(),
            Kind::Word => "a name".into(),
            Kind::Tuple => "a tuple like (16, 8)".into(),
            Kind::List => "names".into(),
            Kind::Enum(v) => one_of(v),
        }
    }
}

fn one_of(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A positional argument: `MAP`, `[FUSION]`, `A, B`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub name: String,
    pub optional: bool,
    /// Whether it is evaluated (a map, a fusion...: a nested command may stand in for it),
    /// as opposed to a file or a command name.
    pub evaluated: bool,
}

/// A command's declaration, read from its usage string (see [`Signature::parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub slots: Vec<Slot>,
    /// Bare words: `explain`, `raw`, `naive`, `every`.
    pub flags: Vec<String>,
    /// Words followed by a value: `from K`, `at (i, ...)`, `as mlir|xla`, `to FILE.svg`.
    pub keywords: Vec<(String, Kind)>,
    /// `key=VALUE` options.
    pub options: Vec<(String, Kind)>,
    /// `DIM=v`, `RVAR=INSTR`: an upper-case key stands for any key.
    pub any_key: Option<Kind>,
    /// `[FILE ...]`, `[SYMBOL, ...]`: any number of further values.
    pub rest: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Comma,
    Bar,
    Ellipsis,
    Paren(String),
    Word(String),
}

fn tokens(usage: &str) -> Result<Vec<Tok>, String> {
    let cs: Vec<char> = usage.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        match c {
            ' ' | '\t' => i += 1,
            '[' => {
                out.push(Tok::Open);
                i += 1
            }
            ']' => {
                out.push(Tok::Close);
                i += 1
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1
            }
            '|' => {
                out.push(Tok::Bar);
                i += 1
            }
            '.' => {
                while i < cs.len() && cs[i] == '.' {
                    i += 1
                }
                out.push(Tok::Ellipsis)
            }
            '(' => {
                let start = i;
                let mut depth = 0;
                while i < cs.len() {
                    match cs[i] {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
                if depth != 0 {
                    return Err(format!("unbalanced `(` at {start}"));
                }
                out.push(Tok::Paren(cs[start..i].iter().collect()))
            }
            _ => {
                let start = i;
                let mut depth = 0i32;
                while i < cs.len() {
                    let c = cs[i];
                    match c {
                        '(' | '[' => depth += 1,
                        ')' => depth -= 1,
                        ']' if depth > 0 => depth -= 1,
                        ']' => break,
                        ' ' | '\t' if depth == 0 => break,
                        ',' if depth == 0 => {
                            // `NAME,...`: a list, one token
                            let rest: String = cs[i..].iter().collect();
                            if rest.starts_with(",...") {
                                i += 4;
                            }
                            break;
                        }
                        _ => {}
                    }
                    i += 1;
                }
                if depth != 0 {
                    return Err(format!("unbalanced bracket in `{}`", &usage[start..]));
                }
                out.push(Tok::Word(cs[start..i].iter().collect()))
            }
        }
    }
    Ok(out)
}

/// `MAP`, `DIR|FILE`, `FILE.svg`: upper case (up to an extension).
fn is_placeholder(w: &str) -> bool {
    let stem = w.split('.').next().unwrap_or("");
    stem.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && stem
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || "_|".contains(c))
}

fn is_literal(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && w.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c))
}

/// Placeholders for things that are not evaluated: a file, a command, a variable's name.
const UNEVALUATED: &[&str] = &["FILE", "DIR", "COMMAND", "TOPIC", "SYMBOL", "NAME"];

impl Signature {
    /// Reads a usage string. The format (every command's `usage` follows it):
    ///
    /// - the first word is the command's name; `| NAME ...` at the top level starts another
    ///   form of the same command (the forms' arguments are merged);
    /// - an UPPER-CASE word is a positional argument (`MAP`, `FUSION`, `A, B`; `DIR|FILE`);
    ///   comma-separated positionals are comma-separated arguments; in `[...]` it is
    ///   optional; followed by `...` (`[FILE ...]`, `[SYMBOL, ...]`) any number may follow;
    /// - `key=VALUE` is an option; VALUE says what it takes: `N`/`K` an integer, `a|b|c`
    ///   one of these words (validated and completed), `(n, ...)` a tuple, `NAME,...`
    ///   names over the following groups, any other upper-case word a name; an UPPER-CASE
    ///   key (`DIM=v`, `RVAR=INSTR`) accepts any key;
    /// - a lower-case word followed by a value (`from K`, `at (i, ...)`, `as mlir|xla`,
    ///   `to FILE.svg`) is a keyword taking that value; any other lower-case word (`explain`,
    ///   `[raw]`, `over`) is a flag; `|` inside brackets separates alternatives.
    pub fn parse(usage: &str) -> Result<Signature, String> {
        let toks = tokens(usage)?;
        let mut sig = Signature::default();
        let Some(Tok::Word(name)) = toks.first() else {
            return Err("a usage starts with the command's name".into());
        };
        sig.name = name.clone();
        let mut depth = 0usize;
        // positional index within the current form (forms share their slots)
        let mut slot = 0usize;
        let mut i = 1;
        while i < toks.len() {
            let next = toks.get(i + 1);
            match &toks[i] {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("unbalanced `]` in `{usage}`"))?
                }
                Tok::Comma | Tok::Paren(_) => {}
                Tok::Bar => {
                    if depth == 0 && next == Some(&Tok::Word(sig.name.clone())) {
                        slot = 0;
                        i += 1;
                    }
                }
                Tok::Ellipsis => {
                    let prev = toks[..i]
                        .iter()
                        .rev()
                        .find(|t| !matches!(t, Tok::Comma | Tok::Close | Tok::Open));
                    if let Some(Tok::Word(w)) = prev {
                        if is_placeholder(w) {
                            sig.rest = true;
                        }
                    }
                }
                Tok::Word(w) => {
                    if let Some((k, v)) = w.split_once('=') {
                        if k.is_empty() {
                            return Err(format!("`{w}`: an option needs a key"));
                        }
                        let kind = Kind::of(v);
                        if is_placeholder(k) {
                            sig.any_key = Some(kind);
                        } else if !sig.options.iter().any(|(x, _)| x == k) {
                            sig.options.push((k.to_string(), kind));
                        }
                    } else if is_placeholder(w) {
                        let evaluated = !w.split(['|', '.']).any(|p| UNEVALUATED.contains(&p));
                        if slot >= sig.slots.len() {
                            sig.slots.push(Slot {
                                name: w.clone(),
                                optional: depth > 0,
                                evaluated,
                            });
                        }
                        slot += 1;
                    } else if is_literal(w) {
                        let value = match next {
                            Some(Tok::Paren(p)) => Some(Kind::of(p)),
                            Some(Tok::Word(v)) if is_placeholder(v) => Some(Kind::of(v)),
                            Some(Tok::Word(v)) if v.contains('|') && !v.contains('=') => {
                                Some(Kind::of(v))
                            }
                            _ => None,
                        };
                        match value {
                            Some(kind) => {
                                sig.keywords.push((w.clone(), kind));
                                i += 1;
                            }
                            None => {
                                if !sig.flags.contains(w) {
                                    sig.flags.push(w.clone())
                                }
                            }
                        }
                    } else if w.contains('|') && w.split('|').all(is_literal) {
                        for f in w.split('|') {
                            if !sig.flags.iter().any(|x| x == f) {
                                sig.flags.push(f.to_string())
                            }
                        }
                    } else {
                        return Err(format!("`{w}` in `{usage}` is neither a placeholder (upper case), a word (lower case) nor key=VALUE"));
                    }
                }
            }
            i += 1;
        }
        if depth != 0 {
            return Err(format!("unbalanced `[` in `{usage}`"));
        }
        Ok(sig)
    }

    pub fn option(&self, key: &str) -> Option<&Kind> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .or(self.any_key.as_ref())
    }
    pub fn keyword(&self, w: &str) -> Option<&Kind> {
        self.keywords.iter().find(|(k, _)| k == w).map(|(_, v)| v)
    }
    /// The words and `key=`s that may follow the command (for completion and suggestions).
    pub fn words(&self) -> Vec<String> {
        let mut v: Vec<String> = self.flags.clone();
        v.extend(self.keywords.iter().map(|(k, _)| k.clone()));
        v.extend(self.options.iter().map(|(k, _)| format!("{k}=")));
        v.sort();
        v.dedup();
        v
    }
    /// The values completion offers after `word` (`key=` or a keyword such as `as`).
    pub fn values_after(&self, word: &str) -> Vec<String> {
        match word.strip_suffix('=') {
            Some(k) => self.option(k).map(Kind::values).unwrap_or_default(),
            None => self.keyword(word).map(Kind::values).unwrap_or_default(),
        }
    }

    /// Checks a call against the declaration: every `key=` declared, with a value of its
    /// kind; every word a declared flag, keyword or positional; no more arguments than
    /// declared. `is_bound` says whether a word is a bound name (so a word naming a
    /// command stands for a nested command only when it is not).
    pub fn check(
        &self,
        call: &CommandCall,
        usage: &str,
        is_bound: &dyn Fn(&str) -> bool,
    ) -> Result<(), Diagnostic> {
        let name = &self.name;
        let usage_help = || format!("usage: {usage}");
        let mut slot = 0usize;
        let mut list_open = false;
        // Each key once: with two, one would be silently dropped.
        let mut seen: Vec<&str> = Vec::new();
        for item in call.groups.iter().flat_map(|g| g.items.iter()) {
            if let Arg::Kv(k, _, sp) = item {
                if seen.contains(&k.as_str()) {
                    let key_span = Span::new(sp.start, sp.start + k.len());
                    return Err(Diagnostic::at(format!("`{k}=` is given twice"), key_span)
                        .with_label("given again here")
                        .with_help(format!("keep one `{k}=`: the command reads one value")));
                }
                seen.push(k.as_str());
            }
        }
        for (gi, group) in call.groups.iter().enumerate() {
            let mut positional_here = false;
            let mut items = group.items.iter().enumerate();
            while let Some((ii, item)) = items.next() {
                if let Arg::Kv(k, v, sp) = item {
                    // with `DIM=v`, a key one typo away from a declared option is that typo
                    let declared = self.options.iter().any(|(x, _)| x == k);
                    let typo = !declared
                        && crate::syntax::suggest(k, self.options.iter().map(|(x, _)| x.as_str()))
                            .is_some();
                    let kind = if typo { None } else { self.option(k) };
                    let Some(kind) = kind else {
                        let key_span = Span::new(sp.start, sp.start + k.len());
                        let mut d =
                            Diagnostic::at(format!("`{name}` has no option `{k}=`"), key_span)
                                .with_label(format!("not an option of `{name}`"));
                        let cands: Vec<&str> =
                            self.options.iter().map(|(k, _)| k.as_str()).collect();
                        let elsewhere: Vec<String> = super::commands::all()
                            .filter(|c| c.name != name.as_str())
                            .filter(|c| {
                                Signature::parse(c.usage)
                                    .is_ok_and(|s| s.options.iter().any(|(x, _)| x == k))
                            })
                            .map(|c| format!("`{}`", c.name))
                            .collect();
                        let elsewhere = if elsewhere.is_empty() {
                            String::new()
                        } else {
                            format!("`{k}=` is an option of {}", elsewhere.join(", "))
                        };
                        d = match crate::syntax::suggest(k, cands) {
                            Some(s) if elsewhere.is_empty() => {
                                d.with_help(format!("did you mean `{s}=`?"))
                            }
                            Some(s) => d.with_help(format!("did you mean `{s}=`? ({elsewhere})")),
                            None if !elsewhere.is_empty() => {
                                d.with_help(format!("{}; {elsewhere}", usage_help()))
                            }
                            None if self.options.is_empty() => {
                                d.with_help(format!("`{name}` takes no options; {}", usage_help()))
                            }
                            None => d.with_help(usage_help()),
                        };
                        return Err(d);
                    };
                    check_value(&format!("`{k}=`"), kind, v)?;
                    list_open = *kind == Kind::List;
                    continue;
                }
                let word = match item {
                    Arg::Word(w, _) => Some(w.as_str()),
                    _ => None,
                };
                // a list option's names continue over the following groups
                if list_open && ii == 0 && gi > 0 && word.is_some() {
                    continue;
                }
                list_open = false;
                let declared_word = word.is_some_and(|w| {
                    self.flags.iter().any(|f| f == w) || self.keyword(w).is_some()
                });
                let slot_open = slot < self.slots.len();
                let takes_positional =
                    !positional_here && slot_open && !(declared_word && self.slots[slot].optional);
                if takes_positional {
                    positional_here = true;
                    let evaluated = self.slots[slot].evaluated;
                    slot += 1;
                    // `equal m, simplify m`: the rest of the group is the nested command's
                    // (checked when it runs)
                    if let Some(w) = word {
                        if evaluated && !is_bound(w) && super::commands::find(w).is_some() {
                            break;
                        }
                    }
                    continue;
                }
                if let Some(w) = word {
                    if self.flags.iter().any(|f| f == w) {
                        continue;
                    }
                    if let Some(kind) = self.keyword(w) {
                        match items.next() {
                            Some((_, v)) => check_value(&format!("`{w}`"), kind, v)?,
                            None => {
                                return Err(Diagnostic::at(
                                    format!("`{w}` needs {} after it", kind.describe()),
                                    item.span(),
                                )
                                .with_help(usage_help()))
                            }
                        }
                        continue;
                    }
                }
                if self.rest {
                    continue;
                }
                return Err(self.unexpected(item, word, gi, ii, usage));
            }
        }
        // a missing positional is the command's to report, in its own words
        Ok(())
    }

    fn unexpected(
        &self,
        item: &Arg,
        word: Option<&str>,
        gi: usize,
        ii: usize,
        usage: &str,
    ) -> Diagnostic {
        let name = &self.name;
        let usage_help = format!("usage: {usage}");
        let n = self.slots.len();
        if self.flags.is_empty() && self.keywords.is_empty() && self.options.is_empty() && n == 0 {
            return Diagnostic::at(format!("`{name}` takes no arguments"), item.span())
                .with_label("unexpected");
        }
        if ii == 0 && gi > 0 {
            return Diagnostic::at(
                format!(
                    "`{name}` takes {n} argument{}",
                    if n == 1 { "" } else { "s" }
                ),
                item.span(),
            )
            .with_label("one too many")
            .with_help(usage_help);
        }
        if let Some(w) = word {
            let cands = self.words();
            let mut d = Diagnostic::at(format!("`{name}` has no option `{w}`"), item.span())
                .with_label(format!("not a word `{name}` takes"));
            d = match crate::syntax::suggest(
                w,
                cands
                    .iter()
                    .map(|c| c.as_str())
                    .chain(self.options.iter().map(|(k, _)| k.as_str())),
            ) {
                Some(s) if self.option(&s).is_some() && !s.ends_with('=') => {
                    d.with_help(format!("did you mean `{s}=`?"))
                }
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(usage_help),
            };
            return d;
        }
        Diagnostic::at(format!("unexpected argument to `{name}`"), item.span())
            .with_label("unexpected")
            .with_help(usage_help)
    }
}

fn check_value(what: &str, kind: &Kind, v: &Arg) -> Result<(), Diagnostic> {
    let ok = match (kind, v) {
        (Kind::Int, Arg::Int(..)) => true,
        (Kind::Word, Arg::Word(..) | Arg::Str(..) | Arg::Int(..)) => true,
        (Kind::Tuple, Arg::Tuple(..) | Arg::Int(..) | Arg::Word(..)) => true,
        (Kind::List, Arg::Word(..) | Arg::Str(..) | Arg::Tuple(..)) => true,
        (Kind::Enum(alts), Arg::Word(w, _) | Arg::Str(w, _)) => {
            if alts.iter().any(|a| a == w) {
                true
            } else {
                let mut d = Diagnostic::at(
                    format!("{what} takes {}, not `{w}`", one_of(alts)),
                    v.span(),
                );
                if let Some(s) = crate::syntax::suggest(w, alts.iter().map(|a| a.as_str())) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                return Err(d);
            }
        }
        (Kind::Enum(alts), Arg::Int(i, _)) => alts.iter().any(|a| *a == i.to_string()),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Diagnostic::at(
            format!("{what} takes {}", kind.describe()),
            v.span(),
        ))
    }
}

/// The declaration of command `name` (its usage, parsed), if it is a command.
pub fn signature(name: &str) -> Option<Signature> {
    let c = super::commands::find(name)?;
    Signature::parse(c.usage).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_usage_is_a_declaration() {
        for c in super::super::commands::all() {
            let sig = Signature::parse(c.usage)
                .unwrap_or_else(|e| panic!("usage of `{}` does not parse: {e}", c.name));
            assert_eq!(sig.name, c.name, "{}", c.usage);
        }
    }

    #[test]
    fn usages_read_as_slots_flags_keywords_and_options() {
        let s = Signature::parse("show MAP as mlir|xla").unwrap();
        assert_eq!(s.slots.len(), 1);
        assert_eq!(
            s.keyword("as"),
            Some(&Kind::Enum(vec!["mlir".into(), "xla".into()]))
        );
        let s = Signature::parse(
            "tile MAP|FUSION sizes=(n|NAME, ...) [k=(n, ...)] [from K | at INSTR | every]",
        )
        .unwrap();
        assert_eq!(s.option("sizes"), Some(&Kind::Tuple));
        assert_eq!(s.keyword("from"), Some(&Kind::Int));
        assert_eq!(s.keyword("at"), Some(&Kind::Word));
        assert_eq!(s.flags, vec!["every".to_string()]);
        let s = Signature::parse("bench FUSION [device=auto|gpu|cpu] [naive] [reps=N]").unwrap();
        assert_eq!(s.values_after("device="), vec!["auto", "gpu", "cpu"]);
        assert_eq!(s.option("reps"), Some(&Kind::Int));
        assert!(s.flags.contains(&"naive".to_string()));
        let s = Signature::parse("plot MAP|OP [DIM=v ...] [color=VAR[/N]] [to FILE.svg]").unwrap();
        assert_eq!(s.option("d0"), Some(&Kind::Int));
        assert_eq!(s.option("color"), Some(&Kind::Word));
        let s = Signature::parse("dump [DIR|FILE ...] [emit=false] [bench]").unwrap();
        assert!(s.rest && s.slots[0].optional && !s.slots[0].evaluated);
        assert_eq!(s.values_after("emit="), vec!["true", "false"]);
        let s =
            Signature::parse("coalescing FUSION [block=N] | coalescing FUSION tile=(T0, .., Tn)")
                .unwrap();
        assert_eq!(s.slots.len(), 1);
        assert_eq!(s.option("tile"), Some(&Kind::Tuple));
        assert!(Signature::parse("x [a").is_err());
        assert!(Signature::parse("x a]").is_err());
    }

    fn check(src: &str) -> Result<(), Diagnostic> {
        let stmt = crate::syntax::parse(src).remove(0).unwrap();
        let crate::syntax::StmtKind::Eval(crate::syntax::Rhs::Command(call)) = stmt.kind else {
            panic!("{src} is not a command")
        };
        let c = super::super::commands::find(&call.name).unwrap();
        Signature::parse(c.usage)
            .unwrap()
            .check(&call, c.usage, &|w| w == "m")
    }

    #[test]
    fn undeclared_words_and_keys_are_errors_at_their_column() {
        let d = check("bench b devce=gpu").unwrap_err();
        assert_eq!(d.span, Some(Span::new(8, 13)));
        assert_eq!(d.help.as_deref(), Some("did you mean `device=`?"));
        let d = check("simplify m explian").unwrap_err();
        assert_eq!(d.span, Some(Span::new(11, 18)));
        assert_eq!(d.help.as_deref(), Some("did you mean `explain`?"));
        let d = check("bench b device=gpus").unwrap_err();
        assert!(d.message.contains("auto, gpu or cpu"), "{}", d.message);
        assert_eq!(d.help.as_deref(), Some("did you mean `gpu`?"));
        let d = check("compose m, m, m").unwrap_err();
        assert_eq!(d.message, "`compose` takes 2 arguments");
        assert_eq!(d.span, Some(Span::new(14, 15)));
        let d = check("eval m at").unwrap_err();
        assert!(d.message.contains("`at` needs a tuple"), "{}", d.message);
        let d = check("bench b reps=many").unwrap_err();
        assert_eq!(d.message, "`reps=` takes an integer");
        assert!(check("vars m")
            .unwrap_err()
            .message
            .contains("takes no arguments"));
    }

    #[test]
    fn declared_forms_pass() {
        for ok in [
            "simplify m explain",
            "equal m, simplify m explain",
            "compose m, m raw",
            "eval m at (1, 2)",
            "show m as mlir",
            "bench b device=cpu naive reps=3 threads=2",
            "tune t device=cpu over tile=(32) reps=1",
            "tile m sizes=(4, ts) from 0",
            "tile m sizes=(4) every",
            "partition c roots=a, b",
            "convert_symbols m s0, s1",
            "fold m r0=x, r1=y",
            "plot m d0=1 color=th_x/32 to f.svg",
            "dump a b bench emit=false",
            "dump",
            "mapping block=128",
            "help simplify",
            "indexing x from 0 physical",
        ] {
            if let Err(d) = check(ok) {
                panic!("{ok}: {}", d.render(ok));
            }
        }
    }
}
