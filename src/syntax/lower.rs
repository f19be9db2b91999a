//! pest pairs to the syntax tree, one function per grammar rule. The Pratt precedence
//! table lives here.

use super::ast::*;
use super::diagnostic::Diagnostic;
use super::grammar::{IxParser, Rule};
use crate::expr::Op;
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op as POp, PrattParser};
use pest::Parser;
use std::sync::LazyLock;

/// Lowest to highest; all binary operators left-associative (SPEC §2). Unary minus binds
/// tightest, as in MLIR's affine parser and XLA's printer: `-x floordiv 11` is
/// `(-x) floordiv 11`, and `-d0 mod 3` at d0 = 1 is 2.
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(POp::infix(Rule::add, Assoc::Left) | POp::infix(Rule::sub, Assoc::Left))
        .op(POp::infix(Rule::mul, Assoc::Left)
            | POp::infix(Rule::floordiv, Assoc::Left)
            | POp::infix(Rule::ceildiv, Assoc::Left)
            | POp::infix(Rule::modulo, Assoc::Left))
        .op(POp::prefix(Rule::neg))
});

/// A friendly name for what the parser expected, when pest names a rule rather than a token.
fn describe(rule: &Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "the end of the statement",
        Rule::expr
        | Rule::var_ref
        | Rule::scaled
        | Rule::primary
        | Rule::neg
        | Rule::minmax
        | Rule::minmax_fn => "an expression",
        Rule::int | Rule::uint => "an integer",
        Rule::add | Rule::sub | Rule::mul | Rule::floordiv | Rule::ceildiv | Rule::modulo => {
            "an operator"
        }
        Rule::map_lit | Rule::xla_map | Rule::affine_map => "an indexing map",
        Rule::dim_list => "`(`",
        Rule::range_list => "`[`",
        Rule::runtime_list => "`{`",
        Rule::result_list => "`(`",
        Rule::domain => "`domain:`",
        Rule::domain_item => "`EXPR in [lo, hi]`",
        Rule::interval => "an interval `[lo, hi]`",
        Rule::simplified => "`is_simplified: true|false`",
        Rule::boolean => "`true` or `false`",
        Rule::var_decl => "a variable name",
        Rule::name | Rule::word => "a name",
        Rule::arg_group | Rule::kv | Rule::tuple | Rule::string | Rule::path => "an argument",
        Rule::command => "a command",
        Rule::binding => "a binding",
        _ => return None,
    })
}

/// What the parser would have accepted, as a reader would say it. Literal tokens come first
/// (closing brackets, then `,`, then the rest), then classes of tokens (`an operator`).
fn expected_from_tokens(tokens: &[String], prev: Option<char>) -> Vec<String> {
    let continuing_word = prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let (mut letters, mut digits, mut lparen, mut minus, mut operator) =
        (false, false, false, false, false);
    let mut literals: Vec<String> = Vec::new();
    for t in tokens {
        // pest names a character class `a..z`; every other token is literal text.
        let class = t.len() == 4 && &t[1..3] == "..";
        match t.as_str() {
            _ if class && t.starts_with(|c: char| c.is_ascii_digit()) => digits = true,
            _ if class => letters = true,
            " " | "\t" | "\n" | "\r" | "BUILTIN_RULE" => {}
            // `min(` and `max(` start an expression as any name does.
            "_" | "min" | "max" => letters = true,
            "(" => lparen = true,
            "-" => minus = true,
            "+" | "*" | "floordiv" | "ceildiv" | "mod" | "floorDiv" | "ceilDiv" => operator = true,
            other => literals.push(other.to_string()),
        }
    }
    // The start of a command argument, or of a statement's map: say so in one phrase.
    if literals.iter().any(|t| t == "\"") {
        return vec!["a map, a name or a command".into()];
    }
    if literals.iter().any(|t| t == "UNDEFINED") {
        // The starts of HLO text (`HloModule`, `ENTRY`, `ROOT`, `%name`, `name.1`) are one
        // alternative to a reader, not five.
        let hlo = literals
            .iter()
            .any(|t| matches!(t.as_str(), "HloModule" | "ENTRY" | "ROOT"));
        // The stack-frame tables' names start HLO text too.
        literals.retain(|t| {
            !matches!(
                t.as_str(),
                "KNOWN"
                    | "UNDEFINED"
                    | "affine_map"
                    | "HloModule"
                    | "ENTRY"
                    | "ROOT"
                    | "%"
                    | "."
                    | "FileNames"
                    | "FunctionNames"
                    | "FileLocations"
                    | "StackFrames"
            )
        });
        let mut out: Vec<String> = literals.iter().map(|t| format!("`{t}`")).collect();
        out.push("an indexing map".into());
        if letters {
            out.push("a command".into());
        }
        if hlo {
            out.push("HLO text".into());
        }
        return out;
    }
    // Letters or digits that would only extend the word before the error are not news,
    // unless an expression may start here (`d0 mod )`).
    let expression_start = lparen && minus && !operator;
    if expression_start {
        literals.sort();
        let mut out: Vec<String> = literals.iter().map(|t| format!("`{t}`")).collect();
        out.push("an expression".into());
        return out;
    }
    if continuing_word {
        letters = false;
        digits = false;
    }
    let rank = |t: &str| match t {
        ")" | "]" | "}" | ">" => 0,
        "," => 1,
        _ => 2,
    };
    literals.sort_by_key(|t| rank(t));
    literals.dedup();
    let mut out: Vec<String> = literals.iter().map(|t| format!("`{t}`")).collect();
    if operator {
        out.push("an operator".into());
        if lparen && (letters || digits) {
            out.push("an expression".into());
        }
    } else if lparen && (letters || digits) {
        out.push("an expression".into());
    } else {
        if lparen {
            out.insert(0, "`(`".into());
        }
        if minus && digits && !letters {
            out.push("an integer".into());
        } else {
            if minus {
                out.push("`-`".into());
            }
            if digits && letters {
                out.push("a name or an integer".into());
            } else if digits {
                out.push("an integer".into());
            } else if letters {
                out.push("a name".into());
            }
        }
    }
    out
}

/// The token at `pos`, as the user would name it: a word, a number, `->`, or one character.
fn token_at(text: &str, pos: usize) -> Option<&str> {
    let rest = text.get(pos..)?;
    let c = rest.chars().next()?;
    let len = if c.is_ascii_alphanumeric() || c == '_' {
        rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .unwrap_or(rest.len())
    } else if rest.starts_with("->") {
        2
    } else {
        c.len_utf8()
    };
    Some(&rest[..len])
}

/// Brackets that do not pair up: a closer with no opener or the wrong opener (an error at
/// the closer), and the innermost opener still open at the end (`Ok(Some(..))`).
fn bracket_check(text: &str) -> Result<Option<(usize, char)>, Diagnostic> {
    let mut stack: Vec<(usize, char)> = Vec::new();
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_str {
            // `\"` inside a string (HLO's escaped backend configs) does not end it.
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else {
                in_str = c != '"';
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '[' | '{' => {
                stack.push((i, c));
                if stack.len() > MAX_DEPTH {
                    return Err(Diagnostic::at(
                        format!("brackets nested more than {MAX_DEPTH} deep"),
                        Span::new(i, i + 1),
                    )
                    .with_label("too deep"));
                }
            }
            ')' | ']' | '}' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match stack.pop() {
                    Some((_, open)) if open == want => {}
                    Some((at, open)) => {
                        return Err(Diagnostic::at(
                            format!("`{c}` does not close `{open}`"),
                            Span::new(i, i + 1),
                        )
                        .with_label(format!("expected `{}` here", closer(open)))
                        .with_help_at(format!("the `{open}` at {{at}} is still open"), at));
                    }
                    None => {
                        return Err(
                            Diagnostic::at(format!("unmatched `{c}`"), Span::new(i, i + 1))
                                .with_label("no bracket to close"),
                        )
                    }
                }
            }
            _ => {}
        }
    }
    Ok(stack.pop())
}

fn closer(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

/// Deepest bracket nesting a statement may use (deeper input would exhaust the stack of
/// the recursive passes over expressions).
const MAX_DEPTH: usize = 200;

/// Most operators one statement may hold, for the same reason.
const MAX_OPERATORS: usize = 4000;

fn pest_error(e: pest::error::Error<Rule>, offset: usize, text: &str) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let loc = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let attempts = e.parse_attempts();
    let pos = attempts
        .as_ref()
        .map_or(loc, |a| a.max_position.max(loc))
        .min(text.len());
    let prev = text[..pos].chars().next_back();
    let mut names: Vec<String> = match &attempts {
        Some(a) if a.max_position >= loc => expected_from_tokens(
            &a.expected_tokens()
                .iter()
                .map(|t| t.to_string())
                // The HLO grammar's `/* ... */` comments may start anywhere; listing
                // them as expected would only distract.
                .filter(|t| t.trim_matches(|c| c == '`' || c == '"') != "/*")
                .collect::<Vec<_>>(),
            prev,
        ),
        _ => Vec::new(),
    };
    if let ErrorVariant::ParsingError { positives, .. } = &e.variant {
        if names.is_empty() {
            for r in positives {
                if let Some(d) = describe(r) {
                    if !names.iter().any(|n| n == d) {
                        names.push(d.to_string());
                    }
                }
            }
        }
    }
    let mut message = match &e.variant {
        ErrorVariant::CustomError { message } => message.clone(),
        ErrorVariant::ParsingError { .. } if names.is_empty() => "unexpected input".to_string(),
        ErrorVariant::ParsingError { .. } => {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            format!("expected {}", join_or(&refs))
        }
    };
    let found = token_at(text, pos);
    let label = match found {
        Some(t) => {
            message += &format!(", found `{t}`");
            "unexpected here".to_string()
        }
        None => {
            message += ", found the end of the input";
            "input ends here".to_string()
        }
    };
    let end = pos + found.map_or(0, str::len);
    let mut d = Diagnostic::at(message, Span::new(offset + pos, offset + end)).with_label(label);
    if found.is_none() {
        if let Ok(Some((at, open))) = bracket_check(text) {
            d = d.with_help_at(
                format!("the `{open}` at {{at}} is never closed"),
                offset + at,
            );
        }
    }
    d
}

/// Parses `text` again with pest's error detail on (the tokens it expected, at the farthest
/// position), which costs about ten times a plain parse, so only failures pay it. The
/// switch is global to pest: a lock keeps every detailed parse detailed.
fn detailed_error(text: &str) -> Option<pest::error::Error<Rule>> {
    static DETAIL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = DETAIL.lock().unwrap_or_else(|e| e.into_inner());
    pest::set_error_detail(true);
    let r = IxParser::parse(Rule::stmt, text).err();
    pest::set_error_detail(false);
    r
}

/// Errors found before the grammar runs: unbalanced brackets, input too deep or too long.
fn precheck(text: &str, offset: usize) -> Result<(), Diagnostic> {
    let shift = |d: Diagnostic| Diagnostic {
        span: d.span.map(|s| Span::new(s.start + offset, s.end + offset)),
        help_at: d.help_at.map(|at| at + offset),
        ..d
    };
    bracket_check(text).map_err(shift)?;
    let ops = text
        .bytes()
        .filter(|b| matches!(b, b'+' | b'-' | b'*'))
        .count()
        + text.matches("div").count()
        + text.matches("mod").count();
    if ops > MAX_OPERATORS {
        return Err(Diagnostic::at(
            format!("statement too long: more than {MAX_OPERATORS} operators"),
            Span::new(offset, offset + text.len()),
        )
        .with_help("split it into several statements"));
    }
    Ok(())
}

fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => a.to_string(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

struct Lower {
    offset: usize,
}

impl Lower {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.offset + s.start(), self.offset + s.end())
    }
}

/// Parses `text` (one statement); spans are offset by `offset`.
pub fn statement(text: &str, offset: usize) -> Result<Stmt, Diagnostic> {
    let pre = precheck(text, offset);
    if let Err(d) = &pre {
        if d.label.as_deref() == Some("too deep") || d.message.starts_with("statement too long") {
            return Err(d.clone());
        }
    }
    let mut pairs = match IxParser::parse(Rule::stmt, text) {
        Ok(p) => {
            pre?;
            p
        }
        Err(e) => {
            let e = detailed_error(text).unwrap_or(e);
            // A stray or mismatched closing bracket before the error explains it better.
            let d = pest_error(e, offset, text);
            if let Err(b) = pre {
                let bpos = b.span.map_or(0, |s| s.start);
                if bpos <= d.span.map_or(0, |s| s.start) {
                    return Err(b);
                }
            }
            return Err(d);
        }
    };
    let lw = Lower { offset };
    let stmt = pairs.next().expect("grammar: stmt matched");
    let span = lw.span(&stmt);
    let body = stmt.into_inner().find(|p| p.as_rule() != Rule::EOI);
    let Some(body) = body else {
        return Err(Diagnostic::at("empty statement", span));
    };
    let kind = match body.as_rule() {
        Rule::binding => {
            let mut it = body.into_inner();
            let name = it.next().expect("grammar: binding has a name");
            let value = it.next().expect("grammar: binding has a value");
            StmtKind::Bind {
                name: name.as_str().to_string(),
                name_span: lw.span(&name),
                value: lw.rhs(value)?,
            }
        }
        Rule::map_lit | Rule::command => StmtKind::Eval(lw.rhs(body)?),
        Rule::hlo_stmt => StmtKind::Hlo(HloText {
            text: body.as_str().to_string(),
            span: lw.span(&body),
        }),
        r => unreachable!("grammar: stmt_body cannot be {r:?}"),
    };
    Ok(Stmt { kind, span })
}

impl Lower {
    fn rhs(&self, p: Pair<Rule>) -> Result<Rhs, Diagnostic> {
        match p.as_rule() {
            Rule::map_lit => Ok(Rhs::Map(self.map_lit(p)?)),
            Rule::command => Ok(Rhs::Command(self.command(p)?)),
            r => unreachable!("grammar: a right-hand side cannot be {r:?}"),
        }
    }

    fn command(&self, p: Pair<Rule>) -> Result<CommandCall, Diagnostic> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = it.next().expect("grammar: command has a name");
        let mut groups = Vec::new();
        for g in it {
            let gspan = self.span(&g);
            let items = g
                .into_inner()
                .map(|a| self.arg(a))
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(ArgGroup { items, span: gspan });
        }
        Ok(CommandCall {
            name: name.as_str().to_string(),
            name_span: self.span(&name),
            groups,
            span,
        })
    }

    fn arg(&self, p: Pair<Rule>) -> Result<Arg, Diagnostic> {
        let span = self.span(&p);
        Ok(match p.as_rule() {
            Rule::map_lit => Arg::Map(self.map_lit(p)?),
            Rule::paren_cmd => {
                let inner = p
                    .into_inner()
                    .next()
                    .expect("grammar: paren_cmd holds a command");
                Arg::Command(Box::new(self.command(inner)?))
            }
            Rule::word | Rule::path | Rule::bare | Rule::name => {
                Arg::Word(p.as_str().to_string(), span)
            }
            Rule::int => Arg::Int(self.int(&p)?, span),
            Rule::string => {
                let s = p.as_str();
                Arg::Str(s[1..s.len() - 1].to_string(), span)
            }
            Rule::tuple => {
                let items = p
                    .into_inner()
                    .map(|a| self.arg(a))
                    .collect::<Result<Vec<_>, _>>()?;
                Arg::Tuple(items, span)
            }
            Rule::kv => {
                let mut it = p.into_inner();
                let key = it.next().expect("grammar: kv has a key");
                let value = it.next().expect("grammar: kv has a value");
                let v = match value.as_rule() {
                    Rule::bare => match value.as_str().parse::<i64>() {
                        Ok(i) => Arg::Int(i, self.span(&value)),
                        Err(_) => Arg::Word(value.as_str().to_string(), self.span(&value)),
                    },
                    _ => self.arg(value)?,
                };
                Arg::Kv(key.as_str().to_string(), Box::new(v), span)
            }
            r => unreachable!("grammar: an argument cannot be {r:?}"),
        })
    }

    fn int(&self, p: &Pair<Rule>) -> Result<i64, Diagnostic> {
        p.as_str().parse::<i64>().map_err(|_| {
            Diagnostic::at(
                format!("integer `{}` does not fit in 64 bits", p.as_str()),
                self.span(p),
            )
            .with_label("out of range")
            .with_help(format!(
                "integers are between {} and {}",
                i64::MIN,
                i64::MAX
            ))
        })
    }

    fn map_lit(&self, p: Pair<Rule>) -> Result<MapLit, Diagnostic> {
        let span = self.span(&p);
        let inner = p.into_inner().next().expect("grammar: map_lit has a form");
        let mut m = MapLit {
            form: MapForm::Xla,
            dims: vec![],
            ranges: vec![],
            runtimes: vec![],
            results: vec![],
            domain: vec![],
            domain_known_empty: false,
            is_simplified: None,
            span,
        };
        m.form = match inner.as_rule() {
            Rule::undefined_lit => {
                return Ok(MapLit {
                    form: MapForm::Undefined,
                    ..m
                })
            }
            Rule::known_empty => {
                return Ok(MapLit {
                    form: MapForm::KnownEmpty,
                    ..m
                })
            }
            Rule::affine_map => MapForm::Affine,
            Rule::xla_map => MapForm::Xla,
            r => unreachable!("grammar: map_lit cannot be {r:?}"),
        };
        for part in inner.into_inner() {
            match part.as_rule() {
                Rule::dim_list => m.dims = self.var_list(part),
                Rule::range_list => m.ranges = self.var_list(part),
                Rule::runtime_list => m.runtimes = self.var_list(part),
                Rule::result_list => {
                    m.results = part
                        .into_inner()
                        .map(|e| self.expr(e))
                        .collect::<Result<_, _>>()?
                }
                Rule::domain => {
                    for item in part.into_inner() {
                        match item.as_rule() {
                            Rule::known_empty => m.domain_known_empty = true,
                            Rule::simplified => {
                                let b =
                                    item.into_inner().next().expect("grammar: flag has a value");
                                m.is_simplified = Some(b.as_str() == "true");
                            }
                            Rule::domain_item => m.domain.push(self.domain_item(item)?),
                            r => unreachable!("grammar: domain cannot contain {r:?}"),
                        }
                    }
                }
                r => unreachable!("grammar: a map cannot contain {r:?}"),
            }
        }
        Ok(m)
    }

    fn var_list(&self, p: Pair<Rule>) -> Vec<(String, Span)> {
        p.into_inner()
            .map(|v| (v.as_str().to_string(), self.span(&v)))
            .collect()
    }

    fn domain_item(&self, p: Pair<Rule>) -> Result<DomainItem, Diagnostic> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let expr = self.expr(it.next().expect("grammar: domain item has an expression"))?;
        let iv = it.next().expect("grammar: domain item has an interval");
        let mut bounds = iv.into_inner();
        let lo = self.int(&bounds.next().expect("grammar: interval has lo"))?;
        let hi = self.int(&bounds.next().expect("grammar: interval has hi"))?;
        // An empty interval (`[5, 2]`) is valid: the map is KNOWN EMPTY, as in XLA.
        Ok(DomainItem { expr, lo, hi, span })
    }

    fn expr(&self, p: Pair<Rule>) -> Result<ExprLit, Diagnostic> {
        self.pratt(p.into_inner())
    }

    fn pratt(&self, pairs: Pairs<Rule>) -> Result<ExprLit, Diagnostic> {
        PRATT
            .map_primary(|p| self.primary(p))
            .map_prefix(|op, rhs| {
                let rhs = rhs?;
                let span = self.span(&op).join(rhs.span());
                Ok(negate(rhs, span))
            })
            .map_infix(|lhs, op, rhs| {
                let (lhs, rhs) = (lhs?, rhs?);
                let o = match op.as_rule() {
                    Rule::add => Op::Add,
                    Rule::sub => {
                        let span = lhs.span().join(rhs.span());
                        if let ExprLit::Int(c, s) = rhs {
                            if c != i64::MIN {
                                // a - c = a + (-c): a constant, as printed, so a sum that
                                // overflows (and stays as written) reads back as itself
                                let neg = Box::new(ExprLit::Int(-c, s));
                                return Ok(ExprLit::Bin(Op::Add, Box::new(lhs), neg, span));
                            }
                            // a - (-2^63) = (a + (2^63 - 1)) + 1: no product by -1 that
                            // overflows (SPEC §2)
                            let max = Box::new(ExprLit::Int(i64::MAX, s));
                            let sum = ExprLit::Bin(Op::Add, Box::new(lhs), max, span);
                            let one = Box::new(ExprLit::Int(1, s));
                            return Ok(ExprLit::Bin(Op::Add, Box::new(sum), one, span));
                        }
                        // a - x * c = a + x * (-c): the term as the printer wrote it
                        // (x not a constant: the printer writes a product of two
                        // constants as itself, `- (c1 * c2)` without parentheses)
                        if let ExprLit::Bin(Op::Mul, x, k, ms) = rhs {
                            if let (ExprLit::Int(c, s), false) =
                                (&*k, matches!(*x, ExprLit::Int(..)))
                            {
                                let (c, s) = (*c, *s);
                                if c != i64::MIN {
                                    let term =
                                        ExprLit::Bin(Op::Mul, x, Box::new(ExprLit::Int(-c, s)), ms);
                                    return Ok(ExprLit::Bin(
                                        Op::Add,
                                        Box::new(lhs),
                                        Box::new(term),
                                        span,
                                    ));
                                }
                            }
                            let rhs = ExprLit::Bin(Op::Mul, x, k, ms);
                            let neg = ExprLit::Neg(Box::new(rhs), span);
                            return Ok(ExprLit::Bin(Op::Add, Box::new(lhs), Box::new(neg), span));
                        }
                        let neg = ExprLit::Neg(Box::new(rhs), span);
                        return Ok(ExprLit::Bin(Op::Add, Box::new(lhs), Box::new(neg), span));
                    }
                    Rule::mul => Op::Mul,
                    Rule::floordiv => Op::FloorDiv,
                    Rule::ceildiv => Op::CeilDiv,
                    Rule::modulo => Op::Mod,
                    r => unreachable!("grammar: infix operator cannot be {r:?}"),
                };
                let span = lhs.span().join(rhs.span());
                Ok(ExprLit::Bin(o, Box::new(lhs), Box::new(rhs), span))
            })
            .parse(pairs)
    }

    fn primary(&self, p: Pair<Rule>) -> Result<ExprLit, Diagnostic> {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::int => Ok(ExprLit::Int(self.int(&p)?, span)),
            Rule::var_ref => Ok(ExprLit::Var(p.as_str().to_string(), span)),
            Rule::expr => self.expr(p),
            Rule::minmax => {
                let mut it = p.into_inner();
                let f = it.next().expect("grammar: min/max has a name");
                let op = if f.as_str() == "min" {
                    Op::Min
                } else {
                    Op::Max
                };
                let a = self.expr(it.next().expect("grammar: min/max has two operands"))?;
                let b = self.expr(it.next().expect("grammar: min/max has two operands"))?;
                Ok(ExprLit::Bin(op, Box::new(a), Box::new(b), span))
            }
            Rule::scaled => {
                let mut it = p.into_inner();
                let k = it.next().expect("grammar: scaled has a coefficient");
                let v = it.next().expect("grammar: scaled has a variable");
                let k = ExprLit::Int(self.int(&k)?, self.span(&k));
                let v = ExprLit::Var(v.as_str().to_string(), self.span(&v));
                Ok(ExprLit::Bin(Op::Mul, Box::new(k), Box::new(v), span))
            }
            r => unreachable!("grammar: primary cannot be {r:?}"),
        }
    }
}

/// `-x`; the negation of the constant -2^63 is `9223372036854775807 + 1` (2^63 fits no
/// 64-bit constant, and a product by -1 would overflow wherever it is evaluated).
fn negate(x: ExprLit, span: Span) -> ExprLit {
    match x {
        ExprLit::Int(i64::MIN, s) => ExprLit::Bin(
            Op::Add,
            Box::new(ExprLit::Int(i64::MAX, s)),
            Box::new(ExprLit::Int(1, s)),
            span,
        ),
        x => ExprLit::Neg(Box::new(x), span),
    }
}
