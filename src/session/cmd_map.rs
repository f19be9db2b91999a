//! Commands on indexing maps: simplify, compose, equal, inverse, eval, show, predicates.

use super::commands::Command;
use super::{Args, Session};
use crate::map::{self, IndexingMap, Limits};
use crate::simplify::{simplify as run_simplify, SimplifyLimits};
use crate::syntax::{Arg, Diagnostic};
use crate::value::Value;
use crate::MapError;

pub static COMMANDS: [Command; 14] = [
    Command {
        name: "simplify",
        usage: "simplify MAP [explain]",
        summary: "the map simplified under its domain; `explain` lists each rewrite and the fact that allowed it",
        example: "simplify (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]",
        run: simplify,
    },
    Command {
        name: "compose",
        usage: "compose A, B [raw]",
        summary: "A then B: if A maps X to Y and B maps Y to Z, the map X to Z (simplified unless `raw`)",
        example: "compose (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4], (d0, d1) -> (d0 * 5 + d1), domain: d0 in [0, 4], d1 in [0, 3]",
        run: compose,
    },
    Command {
        name: "equal",
        usage: "equal A, B",
        summary: "true when A and B relate the same points to the same results on their domains",
        example: "equal (d0) -> (d0 mod 8), domain: d0 in [0, 7], (d0) -> (d0), domain: d0 in [0, 7]",
        run: equal,
    },
    Command {
        name: "inverse",
        usage: "inverse MAP",
        summary: "the inverse of a bijection, or an error that says why MAP is not one",
        example: "inverse (d0, d1) -> (d0 + d1, d0), domain: d0 in [0, 3], d1 in [0, 4]",
        run: inverse,
    },
    Command {
        name: "eval",
        usage: "eval MAP at (i, j, ...)",
        summary: "the result tuple(s) at a point of the dimensions (one per value of the symbols)",
        example: "eval (d0, d1)[s0] -> (d0 * 4 + s0, d1), domain: d0 in [0, 3], d1 in [0, 3], s0 in [0, 1] at (1, 2)",
        run: eval,
    },
    Command {
        name: "show",
        usage: "show MAP as mlir|xla|cute|linear_layout",
        summary: "the map as MLIR's affine_map<...>, or in XLA's multi-line form",
        example: "show (d0, d1)[s0] -> (d1, d0 + s0), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 1] as mlir",
        run: show,
    },
    Command {
        name: "is_permutation",
        usage: "is_permutation MAP",
        summary: "true when the results are the dimensions in some order, each once",
        example: "is_permutation (d0, d1, d2) -> (d2, d0, d1)",
        run: is_permutation,
    },
    Command {
        name: "is_bijection",
        usage: "is_bijection MAP",
        summary: "true when MAP maps its domain one-to-one onto its image (decided exactly: by a closed-form inverse, or point by point); an empty domain is a bijection (the empty function), and `inverse` gives the empty inverse",
        example: "is_bijection (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]",
        run: is_bijection,
    },
    Command {
        name: "is_empty",
        usage: "is_empty MAP",
        summary: "true when no point satisfies the domain",
        example: "is_empty (d0) -> (d0), domain: d0 in [0, 9], d0 mod 4 in [5, 6]",
        run: is_empty,
    },
    Command {
        name: "unused",
        usage: "unused MAP [dims]",
        summary: "the map without the range and runtime variables (and with `dims`, the dimensions) that no result uses, and which went",
        example: "unused (d0)[s0, s1] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 1], s1 in [0, 7]",
        run: unused,
    },
    Command {
        name: "ranges",
        usage: "ranges MAP",
        summary: "the interval of every result and constraint: from the bounds, using the constraints, and exactly",
        example: "ranges (d0, d1) -> (d0 + d1, d0 * 4), domain: d0 in [0, 9], d1 in [0, 9], d0 + d1 in [0, 5]",
        run: ranges,
    },
    Command {
        name: "convert_symbols",
        usage: "convert_symbols MAP [SYMBOL, ...]",
        summary: "range and runtime variables (all, or the named ones) turned into trailing dimensions",
        example: "convert_symbols (d0)[s0]{r0} -> (d0 * 4 + s0 + r0), domain: d0 in [0, 3], s0 in [0, 3], r0 in [0, 1]",
        run: convert_symbols,
    },
    Command {
        name: "fold",
        usage: "fold MAP RVAR=INSTR, ... [clamp]",
        summary: "a runtime variable replaced by what an HLO instruction of the session computes there, as the HLO analysis folds it; a constant outside its bounds stays the variable (XLA's rule) unless `clamp` says the op reading it clamps it (dynamic-slice, gather)",
        example: "c = s32[] constant(2); fold (d0){r0} -> (d0 + r0), domain: d0 in [0, 3], r0 in [0, 9] r0=c",
        run: fold,
    },
    Command {
        name: "simplify_file",
        usage: "simplify_file FILE [times]",
        summary: "simplifies every map of FILE (one a line: MAP, or KIND<TAB>MAP as in benches/data/simplify-corpus.txt; `#` lines and blank lines skipped) and prints each result by line number; `times`: also each map's time, and the median, max and total",
        example: "simplify_file benches/data/simplify-small.txt",
        run: simplify_file,
    },
];

/// Errors of the map library, placed at the command.
pub fn map_err(e: MapError, args: &Args) -> Diagnostic {
    let help = match &e {
        MapError::TooLarge { .. } => Some("shrink the domain, or compare on a smaller instance"),
        MapError::Unbounded(_) => Some("give every variable a bound in `domain:`"),
        _ => None,
    };
    let d = Diagnostic::at(e.to_string(), args.span());
    match help {
        Some(h) => d.with_help(h),
        None => d,
    }
}

fn simplify(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    if a.flag("explain") {
        let out = crate::simplify::simplify_explained(&m, &SimplifyLimits::default());
        return Ok(Value::Explained {
            map: out.map,
            steps: out.steps,
            limit_hit: out.limit_hit,
        });
    }
    Ok(Value::Map(run_simplify(&m, &SimplifyLimits::default()).map))
}

/// Simplifies a computed map unless the user asked for `raw`.
pub fn finish(m: IndexingMap, a: &Args) -> IndexingMap {
    if a.flag("raw") {
        m
    } else {
        run_simplify(&m, &SimplifyLimits::default()).map
    }
}

fn compose(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(2, "compose A, B")?;
    let x = a.map(s, 0)?;
    let y = a.map(s, 1)?;
    let m = map::compose(&x, &y).map_err(|e| map_err(e, a))?;
    Ok(Value::Map(finish(m, a)))
}

fn equal(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(2, "equal A, B")?;
    let x = a.map(s, 0)?;
    let y = a.map(s, 1)?;
    map::equal(&x, &y, &Limits::default())
        .map(Value::Bool)
        .map_err(|e| map_err(e, a))
}

/// The map simplified first (the same relation, with what the simplifier can remove
/// gone: `s0 floordiv 2` for `s0 in [0, 1]` is 0), for the exact commands.
fn simplified_input(m: IndexingMap) -> IndexingMap {
    if m.status != crate::map::Status::Defined {
        return m;
    }
    run_simplify(&m, &SimplifyLimits::default()).map
}

fn inverse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(1, "inverse MAP")?;
    let m = simplified_input(a.map(s, 0)?);
    let inv = map::inverse(&m, &Limits::default()).map_err(|e| map_err(e, a))?;
    Ok(Value::Map(finish(inv, a)))
}

fn eval(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    let Some(Arg::Tuple(items, tspan)) = a.after("at") else {
        return Err(Diagnostic::at(
            "`eval` needs a point: eval MAP at (i, j, ...)",
            a.span(),
        ));
    };
    let mut point = Vec::new();
    for it in items {
        match it {
            Arg::Int(v, _) => point.push(*v),
            other => {
                return Err(Diagnostic::at(
                    "a point is a tuple of integers",
                    other.span(),
                ))
            }
        }
    }
    // what is wrong with the map is said at the map
    let map_span = a
        .groups()
        .first()
        .and_then(|g| g.items.first())
        .map_or(a.span(), Arg::span);
    if m.is_undefined() {
        return Err(Diagnostic::at("the map is UNDEFINED", map_span));
    }
    if point.len() != m.dims.len() {
        return Err(Diagnostic::at(
            format!(
                "the map has {} dimension{} but the point has {} coordinate{}",
                m.dims.len(),
                if m.dims.len() == 1 { "" } else { "s" },
                point.len(),
                if point.len() == 1 { "" } else { "s" }
            ),
            *tspan,
        ));
    }
    // (an empty domain is named as such, not as a point outside `[5, 4]`)
    if m.is_known_empty() {
        return Err(Diagnostic::at(
            "the map's domain is empty (KNOWN EMPTY): no point has a value",
            map_span,
        ));
    }
    for (d, &v) in m.dims.iter().zip(&point) {
        if !d.bounds.contains(v) {
            return Err(Diagnostic::at(
                format!(
                    "the point is outside the domain: {} = {v} is not in {}",
                    d.name, d.bounds
                ),
                *tspan,
            ));
        }
    }
    // Fix the dims, enumerate the symbols.
    let mut fixed = m.clone();
    for (d, &v) in fixed.dims.iter_mut().zip(&point) {
        d.bounds = crate::interval::Interval::point(v);
    }
    let mut tuples = std::collections::BTreeSet::new();
    map::DomainPoints::for_each(&fixed, &Limits::default(), &mut |_, r| {
        tuples.insert(r.to_vec());
        Ok(true)
    })
    .map_err(|e| match e {
        MapError::Eval(_) => no_value_at(a, &fixed).unwrap_or_else(|| map_err(e, a)),
        // what the map's domain lacks (bounds, a small enough box) is said at the map
        e @ (MapError::Unbounded(_) | MapError::TooLarge { .. }) => Diagnostic {
            span: Some(map_span),
            ..map_err(e, a)
        },
        e => map_err(e, a),
    })?;
    if tuples.is_empty() {
        return Err(Diagnostic::at(
            "the point violates the map's constraints: no result there",
            *tspan,
        ));
    }
    Ok(Value::Points(tuples.into_iter().collect()))
}

/// Why `eval` found no value, as precisely as the statement allows: the first point (in
/// enumeration order) where a result overflows or divides by zero, and the operation that
/// does, as written. With the map written in the statement the caret is on that operation
/// (`d0 floordiv -1` at d0 = -2^63 is an overflow of `floordiv`, though the map holds it as
/// `-d0`); with a bound name, on the name, quoting the result. None when no result fails
/// at a point of the domain (a constraint's own evaluation failed).
fn no_value_at(a: &Args, m: &IndexingMap) -> Option<Diagnostic> {
    use crate::expr::arith;
    let bounds = map::enumerate::narrowed_bounds(m);
    let mut found = None;
    map::enumerate::for_each_in_box(&bounds, &mut |p| {
        if !m.contains_point(p).unwrap_or(false) {
            return Ok(true);
        }
        match m.results.iter().position(|&r| arith::eval(r, p).is_err()) {
            Some(j) => {
                found = Some((j, p.to_vec()));
                Ok(false)
            }
            None => Ok(true),
        }
    })
    .ok()?;
    let (j, point) = found?;
    let at = m
        .vars()
        .zip(&point)
        .map(|(v, x)| format!("{} = {x}", v.name))
        .collect::<Vec<_>>()
        .join(", ");
    // the map's own text: the literal, or the name (not the rest of its group, `at (..)`)
    let group = a
        .groups()
        .first()
        .map_or(a.span(), |g| g.items.first().map_or(g.span, Arg::span));
    // The map as written: its variables in the map's order, the result's tree with spans.
    if let Some(Arg::Map(lit)) = a.groups().first().and_then(|g| g.items.first()) {
        let names: Vec<&str> = lit
            .dims
            .iter()
            .chain(&lit.ranges)
            .chain(&lit.runtimes)
            .map(|v| v.0.as_str())
            .collect();
        if names.len() == point.len() && lit.results.len() == m.results.len() {
            let env: std::collections::HashMap<&str, i64> =
                names.iter().copied().zip(point.iter().copied()).collect();
            match written_value(&lit.results[j], &env) {
                Err(Some(d)) => return Some(d.message_at(&at)),
                Ok(v) if i64::try_from(v).is_err() => {
                    let e = &lit.results[j];
                    return Some(
                        Diagnostic::at(
                            format!(
                                "integer overflow in {} at {at}: the value {v} does not fit in 64 bits",
                                written_op(e)
                            ),
                            e.span(),
                        )
                        .with_label(format!("{v} here")),
                    );
                }
                _ => {}
            }
        }
    }
    // A bound name (or a map the statement did not write): the result as the map holds it.
    let r = m.results[j];
    let whose = match a.groups().first().and_then(|g| g.items.first()) {
        Some(Arg::Word(w, _)) => format!("result {j} of `{w}`"),
        _ => format!("result {j} of the map"),
    };
    let shown = crate::expr::display(r, &m.names()).to_string();
    Some(Diagnostic::at(
        match arith::eval_wide(r, &point) {
            Ok(v) => format!(
                "integer overflow in {} at {at}: {whose}, `{shown}`, is {v}, past 64 bits",
                held_op(r)
            ),
            Err(crate::expr::EvalError::DivisionByZero) => {
                format!("division by zero at {at}: in {whose}, `{shown}`")
            }
            Err(e) => {
                format!("{e} at {at}: in {whose}, `{shown}` (an intermediate value past 128 bits)")
            }
        },
        group,
    ))
}

/// Why a written expression has no value, before the point is known to the message.
struct NoValue {
    message: String,
    span: crate::syntax::Span,
    label: String,
}

impl NoValue {
    fn message_at(self, at: &str) -> Diagnostic {
        Diagnostic::at(self.message.replace("{at}", at), self.span).with_label(self.label)
    }
}

/// The exact value of `e` as written, at `env`: Err(Some) names the operation that has none
/// (a division by zero, or an intermediate past 128 bits); Err(None) when a variable is
/// missing from `env`.
fn written_value(
    e: &crate::syntax::ExprLit,
    env: &std::collections::HashMap<&str, i64>,
) -> Result<i128, Option<NoValue>> {
    use crate::expr::{arith, EvalError};
    use crate::syntax::ExprLit;
    Ok(match e {
        ExprLit::Int(v, _) => i128::from(*v),
        ExprLit::Var(n, _) => i128::from(*env.get(n.as_str()).ok_or(None)?),
        ExprLit::Neg(x, sp) => written_value(x, env)?.checked_neg().ok_or_else(|| {
            Some(NoValue {
                message: "integer overflow in the negation at {at}: past 128 bits".into(),
                span: *sp,
                label: "here".into(),
            })
        })?,
        ExprLit::Bin(op, x, y, sp) => {
            let (x, y) = (written_value(x, env)?, written_value(y, env)?);
            arith::apply_wide(*op, x, y).map_err(|err| {
                Some(match err {
                    EvalError::DivisionByZero => NoValue {
                        message: format!("division by zero in `{}` at {{at}}", op.symbol()),
                        span: *sp,
                        label: "the divisor is 0 here".into(),
                    },
                    _ => NoValue {
                        message: format!(
                            "integer overflow in {} at {{at}}: an intermediate value past 128 bits",
                            op_words(*op)
                        ),
                        span: *sp,
                        label: "here".into(),
                    },
                })
            })?
        }
    })
}

/// The operation at the top of a written expression, as a message names it: a sum, as
/// the parser keeps it, may be written `a - b`.
fn written_op(e: &crate::syntax::ExprLit) -> String {
    use crate::syntax::ExprLit;
    match e {
        ExprLit::Bin(op, ..) => op_words(*op),
        ExprLit::Neg(..) => "the negation".to_string(),
        ExprLit::Int(..) | ExprLit::Var(..) => "the result".to_string(),
    }
}

/// The operation at the top of an expression as a map holds it (`-x` is `x * -1`).
fn held_op(e: crate::expr::Expr) -> String {
    use crate::expr::{ExprKind, Op};
    match e.kind() {
        ExprKind::Bin(Op::Mul, a, b) if a.as_const() == Some(-1) || b.as_const() == Some(-1) => {
            "the negation".to_string()
        }
        ExprKind::Bin(op, ..) => op_words(op),
        _ => "the result".to_string(),
    }
}

fn op_words(op: crate::expr::Op) -> String {
    use crate::expr::Op;
    match op {
        Op::Add => "the sum".to_string(),
        Op::Mul => "the product".to_string(),
        op => format!("`{}`", op.symbol()),
    }
}

fn show(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    match a.after("as") {
        Some(Arg::Word(w, _)) if w == "mlir" => Ok(Value::Shown(crate::value::Shown {
            map: m,
            syntax: crate::value::Syntax::Mlir,
        })),
        Some(Arg::Word(w, _)) if w == "xla" => Ok(Value::Shown(crate::value::Shown {
            map: m,
            syntax: crate::value::Syntax::Xla,
        })),
        Some(Arg::Word(w, sp)) if w == "cute" || w == "linear_layout" => {
            super::cmd_layout::show_as(m, w, *sp)
        }
        Some(other) => Err(Diagnostic::at(
            "`show` prints `as mlir`, `as xla`, `as cute` or `as linear_layout`",
            other.span(),
        )),
        None => Ok(Value::Map(m)),
    }
}

fn is_permutation(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    Ok(Value::Bool(map::is_permutation(&a.map(s, 0)?)))
}

fn is_bijection(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = simplified_input(a.map(s, 0)?);
    map::is_bijection(&m, &Limits::default())
        .map(Value::Bool)
        .map_err(|e| map_err(e, a))
}

fn is_empty(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    if m.is_known_empty() {
        return Ok(Value::Bool(true));
    }
    if m.is_undefined() {
        return Err(Diagnostic::at("the map is UNDEFINED", a.span()));
    }
    // A box is empty exactly when one of its bounds is: no enumeration.
    if m.constraints.is_empty() {
        return Ok(Value::Bool(m.vars().any(|v| v.bounds.is_empty())));
    }
    let simplified = run_simplify(&m, &SimplifyLimits::default()).map;
    if simplified.is_known_empty() {
        return Ok(Value::Bool(true));
    }
    if simplified.constraints.is_empty() {
        return Ok(Value::Bool(simplified.vars().any(|v| v.bounds.is_empty())));
    }
    let mut any = false;
    map::DomainPoints::for_each(&simplified, &Limits::default(), &mut |_, _| {
        any = true;
        Ok(false)
    })
    .map_err(|e| map_err(e, a))?;
    Ok(Value::Bool(!any))
}

/// `unused M [dims]`: the map, then one step per variable that went.
fn unused(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    let (out, removed) = map::remove_unused_vars(&m, a.flag("dims"));
    let steps = removed
        .iter()
        .map(|&v| {
            let var = m.var(v);
            let kind = m.var_kind(v);
            let mut constrained = false;
            for &(e, _) in &m.constraints {
                constrained |= e.uses_var(v as u32);
            }
            crate::simplify::Step {
                rule: format!("unused-{}", kind.describe().replace(' ', "-")),
                before: format!("{} in {}", var.name, var.bounds),
                after: "(removed)".into(),
                why: if constrained {
                    "no result uses it, and its constraints involve only removed variables and can be met".into()
                } else {
                    "no result or constraint uses it".into()
                },
            }
        })
        .collect();
    Ok(Value::Explained {
        map: out,
        steps,
        limit_hit: None,
    })
}

fn ranges(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    let rs = map::ranges(&m, &Limits::default()).map_err(|e| map_err(e, a))?;
    let show = |iv: crate::interval::Interval| {
        if iv.is_empty() {
            "empty".to_string()
        } else if iv.is_full() {
            "unknown".to_string()
        } else {
            iv.to_string()
        }
    };
    let mut notes = Vec::new();
    // Saturated bounds (issue 32, item 8): kept as XLA keeps them, and said so; where
    // ixmap's exact intermediates keep a bound XLA's 64-bit evaluator saturates, both.
    let mut saturation = Vec::new();
    for r in &rs {
        let side = |iv: crate::interval::Interval| match (iv.lo_saturated(), iv.hi_saturated()) {
            (true, true) => None,
            (true, false) => Some("lower"),
            (false, true) => Some("upper"),
            (false, false) => Some(""),
        };
        if r.xla != r.from_bounds {
            saturation.push(format!(
                concat!(
                    "{}: XLA's range evaluator saturates to {} (an intermediate passes 64 bits); ",
                    "ixmap's, with exact intermediates, is {}"
                ),
                r.label,
                show(r.xla),
                show(r.from_bounds)
            ));
        } else if let Some(s) = side(r.from_bounds).filter(|s| !s.is_empty()) {
            saturation.push(format!(
                concat!(
                    "{}: the {} bound passes 64 bits and is kept saturated (no bound that side), ",
                    "as XLA keeps it"
                ),
                r.label, s
            ));
        }
    }
    let rows = rs
        .iter()
        .map(|r| {
            let label = match r.required {
                Some(iv) => format!("{} (in {iv})", r.label),
                None => r.label.clone(),
            };
            let exact = match &r.exact {
                Ok(iv) => show(*iv),
                Err(e) => {
                    if notes.is_empty() {
                        notes.push(format!("exact: not enumerated, {e}"));
                    }
                    "-".to_string()
                }
            };
            vec![
                label,
                m.show_expr(r.expr),
                show(r.from_bounds),
                show(r.with_constraints),
                exact,
            ]
        })
        .collect();
    notes.extend(saturation);
    Ok(Value::Table(crate::value::Table {
        title: None,
        headers: ["", "expression", "from bounds", "with constraints", "exact"]
            .map(String::from)
            .to_vec(),
        rows,
        notes,
    }))
}

/// The words after the map (in any group): variable names.
fn names_after_map(a: &Args) -> Vec<(String, crate::syntax::Span)> {
    a.groups()
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.items.iter().skip(usize::from(i == 0)))
        .filter_map(|it| match it {
            Arg::Word(w, sp) => Some((w.clone(), *sp)),
            _ => None,
        })
        .collect()
}

fn convert_symbols(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    let names = names_after_map(a);
    let nd = m.dims.len();
    let mut which = Vec::new();
    for (name, span) in &names {
        match m.vars().position(|v| &v.name == name) {
            Some(v) if v >= nd => which.push(v),
            Some(_) => {
                return Err(Diagnostic::at(
                    format!("`{name}` is already a dimension"),
                    *span,
                ))
            }
            None => {
                let symbols: Vec<&str> = m.vars().skip(nd).map(|v| v.name.as_str()).collect();
                return Err(Diagnostic::at(
                    format!("the map has no range or runtime variable `{name}`"),
                    *span,
                )
                .with_help(if symbols.is_empty() {
                    "the map has no symbols".to_string()
                } else {
                    format!("its symbols are {}", symbols.join(", "))
                }));
            }
        }
    }
    let which = (!names.is_empty()).then_some(which.as_slice());
    map::convert_symbols(&m, which)
        .map(Value::Map)
        .map_err(|e| map_err(e, a))
}

/// `fold M r0=INSTR, r1="INSTR[d0, 7]"`: each named runtime variable replaced by the value
/// of the instruction at the index it reads (the map's dimensions when the ranks agree, a
/// scalar's only element, or the index written in brackets), when the HLO analysis's
/// runtime-variable folding finds it to be an expression of the map's variables.
fn fold(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let mut m = a.map(s, 0)?;
    if m.is_undefined() {
        return Err(Diagnostic::at("the map is UNDEFINED", a.span()));
    }
    let kvs: Vec<(&String, &Arg, crate::syntax::Span)> = a
        .items()
        .filter_map(|it| match it {
            Arg::Kv(k, v, sp) => Some((k, v.as_ref(), *sp)),
            _ => None,
        })
        .collect();
    if kvs.is_empty() {
        return Err(
            Diagnostic::at("`fold` needs at least one `r0=INSTR`", a.span())
                .with_help("usage: fold MAP r0=INSTR, ..."),
        );
    }
    for (key, value, span) in kvs {
        let first_rt = m.dims.len() + m.ranges.len();
        let Some(j) = m.runtimes.iter().position(|v| &v.name == key) else {
            let rts: Vec<&str> = m.runtimes.iter().map(|v| v.name.as_str()).collect();
            return Err(
                Diagnostic::at(format!("the map has no runtime variable `{key}`"), span).with_help(
                    if rts.is_empty() {
                        "the map has no runtime variables (`{r0, ...}` after the range variables)"
                            .to_string()
                    } else {
                        format!("its runtime variables are {}", rts.join(", "))
                    },
                ),
            );
        };
        let (text, vspan) = match value {
            Arg::Word(w, sp) | Arg::Str(w, sp) => (w.clone(), *sp),
            other => {
                return Err(Diagnostic::at(
                    "the value of a runtime variable is an HLO instruction: r0=NAME or r0=\"NAME[i, j]\"",
                    other.span(),
                ))
            }
        };
        let (name, index_text) = match text.split_once('[') {
            Some((n, rest)) => match rest.trim_end().strip_suffix(']') {
                Some(ix) => (n.trim().to_string(), Some(ix.to_string())),
                None => return Err(Diagnostic::at("an index is written NAME[i, j, ...]", vspan)),
            },
            None => (text.trim().to_string(), None),
        };
        let Some(crate::hlo::workspace::Target::Instr(comp, id)) = s.hlo.resolve(&name) else {
            return Err(Diagnostic::at(
                format!("no HLO instruction `{name}` in this session"),
                vspan,
            )
            .with_help("define it first, e.g. `c = s32[] constant(2)`"));
        };
        let rank = comp.instrs[id].dims().len();
        let index: Vec<crate::expr::Expr> = match index_text {
            Some(ix) => index_exprs(&m, &ix, vspan)?,
            None if rank == 0 => vec![],
            None if rank == m.dims.len() => (0..rank as u32).map(crate::expr::Expr::var).collect(),
            None => {
                return Err(Diagnostic::at(
                    format!(
                        "`{name}` has rank {rank} but the map has {} dimensions: say which element `{key}` reads",
                        m.dims.len()
                    ),
                    vspan,
                )
                .with_help(format!("e.g. {key}=\"{name}[{}]\"", vec!["0"; rank].join(", "))))
            }
        };
        if index.len() != rank {
            return Err(Diagnostic::at(
                format!(
                    "`{name}` has rank {rank}, but the index has {} coordinates",
                    index.len()
                ),
                vspan,
            ));
        }
        let v = (first_rt + j) as u32;
        let bounds = m.runtimes[j].bounds;
        // XLA's rule for a constant outside the bounds: the variable stays, unless the op
        // reading it clamps it (`clamp`), where the clamped constant is exact.
        let rule = if a.flag("clamp") {
            crate::hlo::rtvar::OutOfRange::Clamp("the op reading it clamps it")
        } else {
            crate::hlo::rtvar::OutOfRange::Keep
        };
        let folded = crate::hlo::rtvar::fold(comp, id, &index, &m.bounds(), bounds, rule)
            .filter(|e| !e.uses_var(v));
        if folded.is_none() && rule == crate::hlo::rtvar::OutOfRange::Keep {
            let outside = crate::hlo::rtvar::fold_rule(
                comp,
                id,
                &index,
                &m.bounds(),
                bounds,
                crate::hlo::rtvar::OutOfRange::Clamp(""),
            );
            if let Some(crate::hlo::rtvar::Folded {
                rule: crate::hlo::rtvar::Rule::Clamped(c, _),
                expr,
            }) = outside
            {
                return Err(Diagnostic::at(
                    format!(
                        "`{name}` there is the constant {c}, outside {key}'s bounds {bounds}, so `{key}` stays a runtime variable (XLA's rule)"
                    ),
                    vspan,
                )
                .with_help(format!(
                    "where the op reading it clamps it (dynamic-slice, dynamic-update-slice and gather clamp their start indices), `clamp` folds it to {}",
                    expr.as_const().unwrap_or(c)
                )));
            }
        }
        let Some(e) = folded else {
            return Err(Diagnostic::at(
                format!(
                    "`{name}` at that index is not an expression of the map's variables within {key}'s bounds {bounds}, so `{key}` stays a runtime variable"
                ),
                vspan,
            )
            .with_help("folding follows constants, iota, broadcast, reshape, transpose, slice, reverse, convert, add, subtract, multiply and negate"));
        };
        // A divisor that the value makes zero (`d0 floordiv r0` with r0 = 0) has no value
        // at any point, and the map would print as one that does not read back.
        let by = |w: u32| if w == v { e } else { crate::expr::Expr::var(w) };
        if let Some(term) = map::zeroed_division(&m, &by) {
            return Err(Diagnostic::at(
                format!(
                    "`{key}` is {} there (`{name}`), which makes the divisor of `{}` zero: the map would have no value at any point",
                    m.show_expr(e),
                    m.show_expr(term)
                ),
                vspan,
            )
            .with_label("division by zero"));
        }
        // Substitute, then drop the variable and renumber those after it.
        let sub = |x: crate::expr::Expr| {
            x.substitute(&mut |w| if w == v { e } else { crate::expr::Expr::var(w) })
                .rename(&|w| if w > v { w - 1 } else { w })
        };
        let mut runtimes = m.runtimes.clone();
        runtimes.remove(j);
        let mut out = IndexingMap::new(
            m.dims.clone(),
            m.ranges.clone(),
            runtimes,
            m.results.iter().map(|&r| sub(r)).collect(),
            m.constraints.iter().map(|&(c, iv)| (sub(c), iv)).collect(),
        );
        if m.is_known_empty() {
            out.status = crate::map::Status::KnownEmpty;
        }
        m = out;
    }
    Ok(Value::Map(finish(m, a)))
}

/// Index expressions written in the map's variable names, parsed as the results of a map
/// with the same variables.
fn index_exprs(
    m: &IndexingMap,
    text: &str,
    span: crate::syntax::Span,
) -> Result<Vec<crate::expr::Expr>, Diagnostic> {
    let join = |vs: &[crate::map::Variable]| {
        vs.iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut src = format!("({})", join(&m.dims));
    if !m.ranges.is_empty() {
        src += &format!("[{}]", join(&m.ranges));
    }
    if !m.runtimes.is_empty() {
        src += &format!("{{{}}}", join(&m.runtimes));
    }
    src += &format!(" -> ({text})");
    let lit = crate::syntax::parse_map_lit(&src).map_err(|d| {
        Diagnostic::at(
            format!("cannot read the index `{text}`: {}", d.message),
            span,
        )
    })?;
    let built = super::build::build_map(&lit).map_err(|d| {
        Diagnostic::at(
            format!("cannot read the index `{text}`: {}", d.message),
            span,
        )
    })?;
    Ok(built.results)
}

/// `simplify_file FILE`: every map of a file simplified in turn (one process, one rule set,
/// warm caches), each result printed with the time its simplification took.
fn simplify_file(_s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(1, "simplify_file FILE [times]")?;
    let show_times = a.flag("times");
    let path = match a.items().next() {
        Some(Arg::Word(w, _) | Arg::Str(w, _)) => w.clone(),
        _ => {
            return Err(Diagnostic::at(
                "usage: simplify_file FILE [times]",
                a.span(),
            ))
        }
    };
    let text = crate::syntax::read_source(&path).map_err(|e| Diagnostic::at(e, a.span()))?;
    let limits = SimplifyLimits::default();
    let mut rows = Vec::new();
    let mut times = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let src = line.split_once('\t').map_or(line, |(_, m)| m).trim();
        if src.is_empty() || src.starts_with('#') {
            continue;
        }
        let parsed = crate::syntax::parse_map_lit(src)
            .map_err(|e| format!("{e:?}"))
            .and_then(|lit| super::build::build_map(&lit).map_err(|e| format!("{e:?}")));
        let mut row = vec![(n + 1).to_string()];
        match parsed {
            Ok(m) => {
                let t = std::time::Instant::now();
                let r = run_simplify(&m, &limits);
                let dt = t.elapsed();
                times.push(dt);
                row.push(r.map.to_string());
                if show_times {
                    row.push(format!("{:.1} µs", dt.as_secs_f64() * 1e6));
                }
            }
            Err(e) => {
                row.push(format!("not a map: {e}"));
                if show_times {
                    row.push(String::new());
                }
            }
        }
        rows.push(row);
    }
    let mut headers = vec!["line".to_string(), "simplified".to_string()];
    let maps = if times.len() == 1 { "map" } else { "maps" };
    let summary = if show_times {
        headers.push("time".into());
        let total: std::time::Duration = times.iter().sum();
        let mut sorted = times.clone();
        sorted.sort();
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
        format!(
            "{} {maps} simplified: median {:.1} µs, max {:.1} µs, total {:.1} ms",
            times.len(),
            median.as_secs_f64() * 1e6,
            sorted.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
            total.as_secs_f64() * 1e3
        )
    } else {
        format!("{} {maps} simplified", times.len())
    };
    Ok(Value::Table(crate::value::Table {
        title: None,
        headers,
        rows,
        notes: vec![summary],
    }))
}
