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
    let e = crate::expr::canonical(value_of(comp, id, index, 0)?);
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

/// A scalar literal, or an element of a 1-D literal `{a, b, ...}` at a constant index.
fn constant_at(lit: &str, index: &[Expr]) -> Option<Expr> {
    let t = lit.trim();
    if let Ok(v) = t.parse::<i64>() {
        return Some(Expr::constant(v));
    }
    let inner = t.strip_prefix('{')?.strip_suffix('}')?;
    if inner.contains('{') {
        return None;
    }
    let [i] = index else { return None };
    let i = usize::try_from(i.as_const()?).ok()?;
    inner
        .split(',')
        .nth(i)?
        .trim()
        .parse::<i64>()
        .ok()
        .map(Expr::constant)
}
