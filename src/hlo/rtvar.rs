//! Folding of runtime variables (seed 001, "Folding of RTVars"): when a runtime offset is
//! an element of a tensor computed from constants, iota, broadcasts, index-moving ops and
//! integer `add`/`subtract`/`multiply`/`negate`/`convert`, its value is an expression of
//! the index that reads it, and the runtime variable is replaced by that expression.
//!
//! ```text
//! c42 = s64[] constant(42)
//! bc  = s64[12,13,24] broadcast(c42), dimensions={}
//! io  = s64[12,13,24] iota(), iota_dimension=2
//! add = s64[12,13,24] add(bc, io)
//! a runtime variable read as add[d0, 7, d0 * 2]  folds to  d0 * 2 + 42
//! ```
//!
//! A folded expression is used when its whole range lies inside the runtime variable's
//! bounds, so the fold never changes which elements are read. A constant outside them
//! (issue 32, item 9) follows XLA's rule and stays the runtime variable, unless the op that
//! reads it clamps it into those bounds — dynamic-slice and dynamic-update-slice clamp
//! their start indices, gather its start indices, each to `[0, operand - size]` — where
//! the clamped constant is exactly what runs, and is folded: [`Rule`] says which applied.
//!
//! ```text
//! src = f32[16]; ds = f32[4] dynamic-slice(src, s32[] constant(50))
//!   the start 50 is outside [0, 12]: dynamic-slice clamps it, so the offset is 12
//! fold (d0){r0} -> (d0 + r0), r0 in [0, 9] with r0 = 50: no op clamps it, r0 stays
//! ```

use super::ops;
use super::{Computation, InstrId};
use crate::expr::{Expr, ExprKind};
use crate::interval::{range_of, Interval};

/// How the op that reads a runtime variable treats a value outside its bounds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OutOfRange {
    /// Nothing clamps it (XLA's rule: the runtime variable stays).
    Keep,
    /// The op clamps it into the bounds; the text says which op and why, for the user.
    Clamp(&'static str),
}

/// Which rule gave a fold.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every value the expression takes lies in the bounds.
    InRange,
    /// A constant outside the bounds, clamped as the op clamps it: (the constant, the op's
    /// clamping rule).
    Clamped(i64, &'static str),
}

/// A folded runtime variable: its expression and the rule that allowed it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    pub expr: Expr,
    pub rule: Rule,
}

/// The clamping rule of dynamic-slice's and dynamic-update-slice's start indices.
pub const DYNAMIC_SLICE_CLAMPS: &str = "dynamic-slice clamps its start indices";
pub const DYNAMIC_UPDATE_SLICE_CLAMPS: &str = "dynamic-update-slice clamps its start indices";
pub const GATHER_CLAMPS: &str = "gather clamps its start indices";

/// The value of `instr[index]` as an expression of the dims (bounded by `dim_bounds`), if
/// it is known and lies within `bounds` (the runtime variable's range), or is a constant
/// the reading op clamps into them (`out_of_range`).
pub fn fold_rule(
    comp: &Computation,
    id: InstrId,
    index: &[Expr],
    dim_bounds: &[Interval],
    bounds: Interval,
    out_of_range: OutOfRange,
) -> Option<Folded> {
    let e = value(comp, id, index, dim_bounds)?;
    if let ExprKind::Const(v) = e.kind() {
        if bounds.contains(v) {
            return Some(Folded {
                expr: e,
                rule: Rule::InRange,
            });
        }
        return match out_of_range {
            OutOfRange::Keep => None,
            OutOfRange::Clamp(why) => Some(Folded {
                expr: Expr::constant(v.clamp(bounds.lo, bounds.hi)),
                rule: Rule::Clamped(v, why),
            }),
        };
    }
    let r = range_of(e, dim_bounds);
    bounds.contains_interval(&r).then_some(Folded {
        expr: e,
        rule: Rule::InRange,
    })
}

/// The line that says a start index was folded by the op's clamp: `start index 0 (`five`)
/// is 50, outside [0, 12]: dynamic-slice clamps ..., so it reads 12 (XLA's rule alone would
/// keep the runtime variable)`.
pub fn clamp_note(what: &str, v: i64, bounds: Interval, why: &str) -> String {
    format!(
        "{what} = {v} is outside [{}, {}]: {why}, so {} is exact (XLA's rule alone keeps the runtime variable)",
        bounds.lo,
        bounds.hi,
        v.clamp(bounds.lo, bounds.hi)
    )
}

/// [`fold_rule`]'s expression.
pub fn fold(
    comp: &Computation,
    id: InstrId,
    index: &[Expr],
    dim_bounds: &[Interval],
    bounds: Interval,
    out_of_range: OutOfRange,
) -> Option<Expr> {
    fold_rule(comp, id, index, dim_bounds, bounds, out_of_range).map(|f| f.expr)
}

/// `instr[index]` as a canonical expression of the dims, whatever its range.
fn value(comp: &Computation, id: InstrId, index: &[Expr], dim_bounds: &[Interval]) -> Option<Expr> {
    // A dimension with one value is that value (so a constant array is read at a fixed
    // index, as an output dimension of size 1 fixes it).
    let index: Vec<Expr> = index
        .iter()
        .map(|e| {
            e.substitute(&mut |v| match dim_bounds.get(v as usize) {
                Some(b) if b.is_point() => Expr::constant(b.lo),
                _ => Expr::var(v),
            })
        })
        .map(crate::expr::canonical)
        .collect();
    Some(crate::expr::canonical(value_of(comp, id, &index, 0)?))
}

fn is_int(elem: &str) -> bool {
    elem.starts_with('s') || elem.starts_with('u')
}

/// The value of element `index` of instruction `id`, when it is an expression of the index.
pub fn value_of(comp: &Computation, id: InstrId, index: &[Expr], depth: usize) -> Option<Expr> {
    if depth > 64 {
        return None;
    }
    let ins = &comp.instrs[id];
    if !is_int(ins.shape.elem()) || ins.shape.is_tuple() {
        return None;
    }
    let arg = |k: usize, ix: &[Expr]| value_of(comp, *ins.operands.get(k)?, ix, depth + 1);
    match ins.opcode.as_str() {
        "constant" => constant_at(ins.attrs.literal.as_deref()?, index),
        "iota" => {
            let k = ins
                .attrs
                .iota_dimension
                .or_else(|| ins.attrs.dimensions.as_ref()?.first().copied())?;
            index.get(usize::try_from(k).ok()?).copied()
        }
        "add" => Some(arg(0, index)?.add(arg(1, index)?)),
        "subtract" => Some(arg(0, index)?.sub(arg(1, index)?)),
        "multiply" => Some(arg(0, index)?.mul(arg(1, index)?)),
        "negate" => Some(arg(0, index)?.neg()),
        "convert" | "copy" => arg(0, index),
        "broadcast" | "reshape" | "transpose" | "slice" | "reverse" | "bitcast" => {
            if ops::check(comp, id).is_err() {
                return None;
            }
            let maps = ops::output_to_input(comp, id);
            let m = maps.first()?.first()?;
            if m.is_undefined() || m.has_symbols() || !m.constraints.is_empty() {
                return None;
            }
            let moved: Vec<Expr> = m
                .results
                .iter()
                .map(|r| {
                    r.substitute(&mut |v| {
                        index.get(v as usize).copied().unwrap_or(Expr::constant(0))
                    })
                })
                .collect();
            arg(0, &moved)
        }
        _ => None,
    }
}

/// A scalar literal, or an element of an N-D literal (`{a, b}`, `{{a, b}, {c, d}}`) at an
/// index the map fixes (every index expression a constant). Booleans read as 0 and 1.
fn constant_at(lit: &str, index: &[Expr]) -> Option<Expr> {
    let t = lit.trim();
    if let Some(v) = scalar(t) {
        return Some(Expr::constant(v));
    }
    let mut node = t;
    for i in index {
        let i = usize::try_from(i.as_const()?).ok()?;
        let inner = node.trim().strip_prefix('{')?.strip_suffix('}')?;
        node = split_top(inner).into_iter().nth(i)?;
    }
    scalar(node.trim()).map(Expr::constant)
}

/// Element `index` of a literal (a scalar literal is every element), for the interpreter.
pub fn literal_at(lit: &str, index: &[i64]) -> Option<i64> {
    let ix: Vec<Expr> = index.iter().map(|&i| Expr::constant(i)).collect();
    constant_at(lit, &ix)?.as_const()
}

fn scalar(t: &str) -> Option<i64> {
    match t {
        "true" => Some(1),
        "false" => Some(0),
        _ => t.parse::<i64>().ok(),
    }
}

/// The top-level comma-separated items of a literal's inside (`{1, 2}, {3, 4}` gives
/// `{1, 2}` and `{3, 4}`).
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, ch) in s.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::constant_at;
    use crate::expr::Expr;

    #[test]
    fn literals_at_constant_indices() {
        let c = |v: &[i64]| v.iter().map(|&x| Expr::constant(x)).collect::<Vec<_>>();
        assert_eq!(constant_at("7", &[]), Some(Expr::constant(7)));
        assert_eq!(constant_at("{3, 5, 9}", &c(&[2])), Some(Expr::constant(9)));
        assert_eq!(
            constant_at("{ {1, 2}, {3, 4} }", &c(&[1, 0])),
            Some(Expr::constant(3))
        );
        let three = "{ { {0, 1}, {2, 3} }, { {4, 5}, {6, 7} } }";
        assert_eq!(constant_at(three, &c(&[1, 1, 0])), Some(Expr::constant(6)));
        assert_eq!(constant_at("{1, 2}", &c(&[2])), None);
        assert_eq!(constant_at("{1, 2}", &[Expr::var(0)]), None);
        assert_eq!(
            constant_at("{true, false}", &c(&[0])),
            Some(Expr::constant(1))
        );
    }
}
