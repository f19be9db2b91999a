//! Map literals (syntax) to indexing maps: names resolved, bounds attached, constraints
//! collected, all errors pointing at the user's text.

use crate::expr::{Expr, Op};
use crate::interval::Interval;
use crate::map::{IndexingMap, Status, Variable};
use crate::syntax::{suggest, Diagnostic, DomainItem, ExprLit, MapForm, MapLit, Span};
use std::collections::HashMap;

pub fn build_map(lit: &MapLit) -> Result<IndexingMap, Diagnostic> {
    match lit.form {
        MapForm::Undefined => return Ok(IndexingMap::undefined()),
        MapForm::KnownEmpty => {
            let mut m = IndexingMap::new(vec![], vec![], vec![], vec![], vec![]);
            m.status = Status::KnownEmpty;
            return Ok(m);
        }
        MapForm::Xla | MapForm::Affine => {}
    }
    let mut index: HashMap<&str, u32> = HashMap::new();
    let mut all: Vec<&(String, Span)> = Vec::new();
    for v in lit.dims.iter().chain(&lit.ranges).chain(&lit.runtimes) {
        if index.insert(v.0.as_str(), all.len() as u32).is_some() {
            return Err(
                Diagnostic::at(format!("variable `{}` is declared twice", v.0), v.1)
                    .with_label("second declaration")
                    .with_help("every dimension, range and runtime variable needs its own name"),
            );
        }
        all.push(v);
    }
    let names: Vec<&str> = all.iter().map(|v| v.0.as_str()).collect();
    let results = lit
        .results
        .iter()
        .map(|e| lower_expr(e, &index, &names))
        .collect::<Result<Vec<_>, _>>()?;
    let mut bounds: Vec<Option<Interval>> = vec![None; all.len()];
    let mut constraints: Vec<(Expr, Interval)> = Vec::new();
    for item in &lit.domain {
        domain_item(item, &index, &names, &mut bounds, &mut constraints)?;
    }
    let var = |(name, _): &(String, Span), i: usize| Variable {
        name: name.clone(),
        bounds: bounds[i].unwrap_or(Interval::FULL),
    };
    let nd = lit.dims.len();
    let nr = lit.ranges.len();
    let dims = lit
        .dims
        .iter()
        .enumerate()
        .map(|(i, v)| var(v, i))
        .collect();
    let ranges = lit
        .ranges
        .iter()
        .enumerate()
        .map(|(i, v)| var(v, nd + i))
        .collect();
    let runtimes = lit
        .runtimes
        .iter()
        .enumerate()
        .map(|(i, v)| var(v, nd + nr + i))
        .collect();
    let mut m = IndexingMap::new(dims, ranges, runtimes, results, constraints);
    if lit.domain_known_empty {
        m.status = Status::KnownEmpty;
    }
    m.is_simplified = lit.is_simplified.unwrap_or(false);
    Ok(m)
}

fn domain_item(
    item: &DomainItem,
    index: &HashMap<&str, u32>,
    names: &[&str],
    bounds: &mut [Option<Interval>],
    constraints: &mut Vec<(Expr, Interval)>,
) -> Result<(), Diagnostic> {
    let iv = Interval::new(item.lo, item.hi);
    if let ExprLit::Var(name, span) = &item.expr {
        let Some(&v) = index.get(name.as_str()) else {
            return Err(unknown(name, *span, names));
        };
        // The first `VAR in [lo, hi]` is the variable's bound; a second one is a constraint
        // on it, as XLA's parser reads it (canonical form folds it into the bound).
        if bounds[v as usize].is_none() {
            bounds[v as usize] = Some(iv);
            return Ok(());
        }
    }
    constraints.push((lower_expr(&item.expr, index, names)?, iv));
    Ok(())
}

fn unknown(name: &str, span: Span, names: &[&str]) -> Diagnostic {
    let known = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    let mut d = Diagnostic::at(format!("unknown variable `{name}`"), span)
        .with_label(format!("not among the variables ({known})"));
    if let Some(s) = suggest(name, names.iter().copied()) {
        d = d.with_help(format!("did you mean `{s}`?"));
    }
    d
}

pub fn lower_expr(
    e: &ExprLit,
    index: &HashMap<&str, u32>,
    names: &[&str],
) -> Result<Expr, Diagnostic> {
    Ok(match e {
        ExprLit::Int(v, _) => Expr::constant(*v),
        ExprLit::Var(name, span) => match index.get(name.as_str()) {
            Some(&v) => Expr::var(v),
            None => return Err(unknown(name, *span, names)),
        },
        ExprLit::Neg(x, _) => Expr::bin(Op::Mul, lower_expr(x, index, names)?, Expr::constant(-1)),
        ExprLit::Bin(op, a, b, span) => {
            let a = lower_expr(a, index, names)?;
            let b = lower_expr(b, index, names)?;
            // A negative constant divisor is valid (floor and ceiling division, and
            // `a mod b = a - b * (a floordiv b)`); a zero one never is.
            if op.is_div_like() && crate::expr::canonical(b).as_const() == Some(0) {
                return Err(Diagnostic::at(
                    format!("the divisor of `{}` is zero", op.symbol()),
                    *span,
                )
                .with_label("division by zero"));
            }
            Expr::bin(*op, a, b)
        }
    })
}
