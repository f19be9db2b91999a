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
//! XLA clamps dynamic offsets into their in-bounds range; a folded expression is used only
//! when its whole range lies inside the runtime variable's bounds (a constant outside is
//! clamped), so the fold never changes which elements are read.

use super::ops;
use super::{Computation, InstrId};
use crate::expr::{Expr, ExprKind};
use crate::interval::{range_of, Interval};

/// The value of `instr[index]` as an expression of the dims (bounded by `dim_bounds`), if
/// it is known and lies within `bounds` (the runtime variable's range).
pub fn fold(
    comp: &Computation,
    id: InstrId,
    index: &[Expr],
    dim_bounds: &[Interval],
    bounds: Interval,
) -> Option<Expr> {
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
    let e = crate::expr::canonical(value_of(comp, id, &index, 0)?);
    if let ExprKind::Const(v) = e.kind() {
        return Some(Expr::constant(v.clamp(bounds.lo, bounds.hi)));
    }
    let r = range_of(e, dim_bounds);
    bounds.contains_interval(&r).then_some(e)
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
