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
/// looser than `*`-level operators: `-x floordiv 11` is `-(x floordiv 11)`.
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(POp::infix(Rule::add, Assoc::Left) | POp::infix(Rule::sub, Assoc::Left))
        .op(POp::prefix(Rule::neg))
        .op(POp::infix(Rule::mul, Assoc::Left)
            | POp::infix(Rule::floordiv, Assoc::Left)
            | POp::infix(Rule::ceildiv, Assoc::Left)
            | POp::infix(Rule::modulo, Assoc::Left))
});

/// A friendly name for what the parser expected.
fn describe(rule: &Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of statement",
        Rule::expr | Rule::var_ref | Rule::scaled | Rule::primary => "an expression",
        Rule::int | Rule::uint => "an integer",
        Rule::add | Rule::sub | Rule::mul | Rule::floordiv | Rule::ceildiv | Rule::modulo => {
            "an operator"
        }
        Rule::neg => "`-`",
        Rule::map_lit | Rule::xla_map | Rule::affine_map => "an indexing map",
        Rule::dim_list => "`(` and the dimensions",
        Rule::range_list => "`[` and the range variables",
        Rule::runtime_list => "`{` and the runtime variables",
        Rule::result_list => "`(` and the results",
        Rule::domain => "`domain:`",
        Rule::domain_item => "`EXPR in [lo, hi]`",
        Rule::interval => "an interval `[lo, hi]`",
        Rule::simplified => "`is_simplified: true|false`",
        Rule::var_decl => "a variable name",
        Rule::name | Rule::word => "a name",
        Rule::arg_group | Rule::kv | Rule::tuple | Rule::string | Rule::path => "an argument",
        Rule::command => "a command",
        Rule::binding => "a binding",
        Rule::hlo_stmt => "an HLO instruction",
        _ => "something else",
    }
}

fn pest_error(e: pest::error::Error<Rule>, offset: usize, text: &str) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let mut message = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let mut names: Vec<&str> = positives.iter().map(describe).collect();
            names.sort();
            names.dedup();
            names.retain(|n| *n != "something else");
            if names.is_empty() {
                "unexpected input".to_string()
            } else {
                format!("expected {}", join_or(&names))
            }
        }
        ErrorVariant::CustomError { message } => message.clone(),
    };
    let found = text[pos.min(text.len())..].chars().next();
    let label = match found {
        Some(c) => {
            message += &format!(", found `{c}`");
            "here".to_string()
        }
        None => {
            message += ", found the end of the input";
            "input ends here".to_string()
        }
    };
    let end = pos + found.map_or(0, |c| c.len_utf8());
    Diagnostic::at(message, Span::new(offset + pos, offset + end)).with_label(label)
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
    let mut pairs = IxParser::parse(Rule::stmt, text).map_err(|e| pest_error(e, offset, text))?;
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
        Rule::hlo_stmt => StmtKind::Hlo(HloText { text: body.as_str().to_string(), span: lw.span(&body) }),
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
            let items = g.into_inner().map(|a| self.arg(a)).collect::<Result<Vec<_>, _>>()?;
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
                let inner = p.into_inner().next().expect("grammar: paren_cmd holds a command");
                Arg::Command(Box::new(self.command(inner)?))
            }
            Rule::word | Rule::path | Rule::bare | Rule::name => Arg::Word(p.as_str().to_string(), span),
            Rule::int => Arg::Int(self.int(&p)?, span),
            Rule::string => {
                let s = p.as_str();
                Arg::Str(s[1..s.len() - 1].to_string(), span)
            }
            Rule::tuple => {
                let items = p.into_inner().map(|a| self.arg(a)).collect::<Result<Vec<_>, _>>()?;
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
            Diagnostic::at(format!("integer `{}` does not fit in 64 bits", p.as_str()), self.span(p))
                .with_label("out of range")
                .with_help(format!("integers are between {} and {}", i64::MIN, i64::MAX))
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
            Rule::undefined_lit => return Ok(MapLit { form: MapForm::Undefined, ..m }),
            Rule::known_empty => return Ok(MapLit { form: MapForm::KnownEmpty, ..m }),
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
                    m.results = part.into_inner().map(|e| self.expr(e)).collect::<Result<_, _>>()?
                }
                Rule::domain => {
                    for item in part.into_inner() {
                        match item.as_rule() {
                            Rule::known_empty => m.domain_known_empty = true,
                            Rule::simplified => {
                                let b = item.into_inner().next().expect("grammar: flag has a value");
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
        p.into_inner().map(|v| (v.as_str().to_string(), self.span(&v))).collect()
    }

    fn domain_item(&self, p: Pair<Rule>) -> Result<DomainItem, Diagnostic> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let expr = self.expr(it.next().expect("grammar: domain item has an expression"))?;
        let iv = it.next().expect("grammar: domain item has an interval");
        let ivspan = self.span(&iv);
        let mut bounds = iv.into_inner();
        let lo = self.int(&bounds.next().expect("grammar: interval has lo"))?;
        let hi = self.int(&bounds.next().expect("grammar: interval has hi"))?;
        if lo > hi {
            return Err(Diagnostic::at(format!("empty interval [{lo}, {hi}]"), ivspan)
                .with_label("lower bound above upper bound")
                .with_help("write an interval as [lo, hi] with lo <= hi; an empty domain is `domain: KNOWN EMPTY`"));
        }
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
                Ok(ExprLit::Neg(Box::new(rhs), span))
            })
            .map_infix(|lhs, op, rhs| {
                let (lhs, rhs) = (lhs?, rhs?);
                let o = match op.as_rule() {
                    Rule::add => Op::Add,
                    Rule::sub => {
                        let span = lhs.span().join(rhs.span());
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
