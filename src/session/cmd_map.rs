//! Commands on indexing maps: simplify, compose, equal, inverse, eval, show, predicates.

use super::commands::Command;
use super::{Args, Session, Value};
use crate::map::{self, IndexingMap, Limits};
use crate::simplify::{simplify as run_simplify, SimplifyLimits};
use crate::syntax::{Arg, Diagnostic};
use crate::MapError;

pub static COMMANDS: [Command; 10] = [
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
        usage: "show MAP as mlir|xla",
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
        summary: "true when MAP maps its domain one-to-one onto its image and ixmap can invert it",
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
        usage: "unused MAP",
        summary: "the map without the range and runtime variables that no result uses",
        example: "unused (d0)[s0, s1] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 1], s1 in [0, 7]",
        run: unused,
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

fn inverse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(1, "inverse MAP")?;
    let m = a.map(s, 0)?;
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
    if m.is_undefined() {
        return Err(Diagnostic::at("the map is UNDEFINED", a.span()));
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
    .map_err(|e| map_err(e, a))?;
    if tuples.is_empty() {
        return Err(Diagnostic::at(
            "the point violates the map's constraints: no result there",
            *tspan,
        ));
    }
    Ok(Value::Points(tuples.into_iter().collect()))
}

fn show(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    match a.after("as") {
        Some(Arg::Word(w, _)) if w == "mlir" => Ok(Value::Text(map::mlir::to_mlir(&m))),
        Some(Arg::Word(w, _)) if w == "xla" => Ok(Value::Text(m.to_multiline())),
        Some(other) => Err(Diagnostic::at(
            "`show` prints `as mlir` or `as xla`",
            other.span(),
        )),
        None => Ok(Value::Map(m)),
    }
}

fn is_permutation(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    Ok(Value::Bool(map::is_permutation(&a.map(s, 0)?)))
}

fn is_bijection(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
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
    let simplified = run_simplify(&m, &SimplifyLimits::default()).map;
    if simplified.is_known_empty() {
        return Ok(Value::Bool(true));
    }
    let mut any = false;
    map::DomainPoints::for_each(&simplified, &Limits::default(), &mut |_, _| {
        any = true;
        Ok(false)
    })
    .map_err(|e| map_err(e, a))?;
    Ok(Value::Bool(!any))
}

fn unused(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let m = a.map(s, 0)?;
    Ok(Value::Map(map::remove_unused_symbols(&m).0))
}
