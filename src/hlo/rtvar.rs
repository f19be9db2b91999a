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
//!
//! A start that is a known part plus (or minus) an element the folding cannot follow (a
//! parameter, say) keeps a runtime variable, re-pointed at that element, and the known part
//! moves into the map (item 5; XLA re-points its runtime variable's instruction and map the
//! same way). The op clamps the whole start, so the variable's bounds shift with it and the
//! map stays exact ([`start`]):
//!
//! ```text
//! src = f32[16]; o = s32[] add(p, 3); ds = f32[4] dynamic-slice(src, o)
//!   (d0){r0} -> (d0 + r0 + 3), r0 in [-3, 9]        r0 is `p`, clamped as the start is
//! ix = s64[12, 1] add(q, iota over the batch); gather of one row
//!   (d0, d1){r0} -> (d0 + r0, d1), r0 in [-11, 11], d0 + r0 in [0, 11]    r0 is q[d0, 0]
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

/// The index with every dimension that has one value replaced by that value (so a constant
/// array is read at a fixed index, as an output dimension of size 1 fixes it), canonical.
fn fixed_index(index: &[Expr], dim_bounds: &[Interval]) -> Vec<Expr> {
    index
        .iter()
        .map(|e| {
            e.substitute(&mut |v| match dim_bounds.get(v as usize) {
                Some(b) if b.is_point() => Expr::constant(b.lo),
                _ => Expr::var(v),
            })
        })
        .map(crate::expr::canonical)
        .collect()
}

/// `instr[index]` as a canonical expression of the dims, whatever its range.
fn value(comp: &Computation, id: InstrId, index: &[Expr], dim_bounds: &[Interval]) -> Option<Expr> {
    value_of(comp, id, &fixed_index(index, dim_bounds), 0)
}

fn is_int(elem: &str) -> bool {
    elem.starts_with('s') || elem.starts_with('u')
}

/// The value of element `index` of instruction `id`, when it is an expression of the index.
pub fn value_of(comp: &Computation, id: InstrId, index: &[Expr], depth: usize) -> Option<Expr> {
    let p = partial_of(comp, id, index, depth);
    p.leaf.is_none().then(|| crate::expr::canonical(p.known))
}

/// What the folding knows of an element: `known + coeff * leaf`, where `leaf` (when there
/// is one) is an element the folding cannot follow (a parameter, a load, a division, a sum
/// of two such elements), `(instruction, index)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Partial {
    known: Expr,
    coeff: i64,
    leaf: Option<(InstrId, Vec<Expr>)>,
}

impl Partial {
    fn known(e: Expr) -> Partial {
        Partial {
            known: e,
            coeff: 0,
            leaf: None,
        }
    }
    /// The element itself, unfollowed.
    fn whole(id: InstrId, index: &[Expr]) -> Partial {
        Partial {
            known: Expr::constant(0),
            coeff: 1,
            leaf: Some((id, index.to_vec())),
        }
    }
    fn scale(self, k: i64) -> Option<Partial> {
        Some(Partial {
            known: self.known.mul(Expr::constant(k)),
            coeff: self.coeff.checked_mul(k)?,
            leaf: self.leaf,
        })
    }
    /// `self + sign * other`, when at most one distinct leaf is left (the same element on
    /// both sides adds its coefficients: `p - p` is 0).
    fn combine(self, other: Partial, sign: i64) -> Option<Partial> {
        let other = other.scale(sign)?;
        let known = self.known.add(other.known);
        let (coeff, leaf) = match (self.leaf, other.leaf) {
            (None, None) => (0, None),
            (Some(l), None) => (self.coeff, Some(l)),
            (None, Some(l)) => (other.coeff, Some(l)),
            (Some(a), Some(b)) if a == b => {
                let c = self.coeff.checked_add(other.coeff)?;
                (c, (c != 0).then_some(a))
            }
            _ => return None,
        };
        Some(Partial { known, coeff, leaf })
    }
}

/// [`Partial`] of element `index` of instruction `id`: followed through constants, iota,
/// integer `add`/`subtract`/`negate`, `multiply` by a known constant (or of two known
/// values), `convert`/`copy` and the index-moving ops; anything else is the leaf.
fn partial_of(comp: &Computation, id: InstrId, index: &[Expr], depth: usize) -> Partial {
    let whole = || Partial::whole(id, index);
    let ins = &comp.instrs[id];
    if depth > 64 || !is_int(ins.shape.elem()) || ins.shape.is_tuple() {
        return whole();
    }
    let arg = |k: usize, ix: &[Expr]| -> Option<Partial> {
        let o = *ins.operands.get(k)?;
        let opd = &comp.instrs[o];
        // A convert of a float, or an operand that is a tuple: the element itself is the
        // leaf, not something below it that is no integer.
        if !is_int(opd.shape.elem()) || opd.shape.is_tuple() {
            return None;
        }
        Some(partial_of(comp, o, ix, depth + 1))
    };
    let followed = match ins.opcode.as_str() {
        "constant" => ins
            .attrs
            .literal
            .as_deref()
            .and_then(|lit| constant_at(lit, index))
            .map(Partial::known),
        "iota" => ins
            .attrs
            .iota_dimension
            .or_else(|| ins.attrs.dimensions.as_ref()?.first().copied())
            .and_then(|k| index.get(usize::try_from(k).ok()?).copied())
            .map(Partial::known),
        "add" | "subtract" => {
            let sign = if ins.opcode == "add" { 1 } else { -1 };
            arg(0, index)
                .zip(arg(1, index))
                .and_then(|(a, b)| a.combine(b, sign))
        }
        "multiply" => {
            arg(0, index)
                .zip(arg(1, index))
                .and_then(|(a, b)| match (&a.leaf, &b.leaf) {
                    (None, None) => Some(Partial::known(a.known.mul(b.known))),
                    (None, Some(_)) => b.scale(crate::expr::canonical(a.known).as_const()?),
                    (Some(_), None) => a.scale(crate::expr::canonical(b.known).as_const()?),
                    _ => None,
                })
        }
        "negate" => arg(0, index).and_then(|a| a.scale(-1)),
        "convert" | "copy" => arg(0, index),
        "broadcast" | "reshape" | "transpose" | "slice" | "reverse" | "bitcast" => {
            moved_index(comp, id, index).and_then(|moved| arg(0, &moved))
        }
        _ => None,
    };
    followed.unwrap_or_else(whole)
}

/// The operand index that element `index` of an index-moving op reads.
fn moved_index(comp: &Computation, id: InstrId, index: &[Expr]) -> Option<Vec<Expr>> {
    if ops::check(comp, id).is_err() {
        return None;
    }
    let maps = ops::output_to_input(comp, id);
    let m = maps.first()?.first()?;
    if m.is_undefined() || m.has_symbols() || !m.constraints.is_empty() {
        return None;
    }
    Some(
        m.results
            .iter()
            .map(|r| {
                crate::expr::canonical(r.substitute(&mut |v| {
                    index.get(v as usize).copied().unwrap_or(Expr::constant(0))
                }))
            })
            .collect(),
    )
}

/// A start index whose value is `known + sign * leaf`, `sign` ±1, with `leaf` an element
/// the folding cannot follow (issue 32, item 5: XLA re-points the runtime variable at the
/// part of the expression that remains, and moves the rest into the map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repointed {
    /// The known part, an expression of the dims.
    pub known: Expr,
    /// +1 or -1.
    pub sign: i64,
    /// The element the runtime variable now stands for: the instruction, and the index
    /// (of the dims) it is read at: the runtime variable's map, updated.
    pub leaf: InstrId,
    pub index: Vec<Expr>,
    /// The runtime variable's bounds: where the op's clamp of the start puts the leaf.
    pub bounds: Interval,
}

/// What becomes of a start index that reads `instr[index]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// Folded into an expression of the dims (no runtime variable).
    Folded(Folded),
    /// A runtime variable, re-pointed at the part that remains.
    Repointed(Repointed),
    /// The runtime variable stays as it is.
    Stays,
}

/// How a start index in `bounds` (the op clamps it there) that reads `instr[index]` enters
/// a map: folded ([`fold_rule`]), re-pointed, or left a runtime variable.
///
/// Re-pointing is exact because the op clamps the whole start: the start is
/// `clamp(known + sign * leaf, lo, hi)`, which is `known + sign * r` for `r` the leaf
/// clamped to where `known + sign * r` lies in `[lo, hi]` (for a constant `known`, the
/// interval `[lo - known, hi - known]` when `sign` is 1). A leaf multiplied by a factor
/// other than ±1 is not re-pointed: the clamped start takes values (`hi` itself) that are
/// no multiple of the factor, which the map could not name. Integer arithmetic is taken as
/// exact (no wrap-around at the type's width), as the folding of constants takes it.
pub fn start(
    comp: &Computation,
    id: InstrId,
    index: &[Expr],
    dim_bounds: &[Interval],
    bounds: Interval,
    out_of_range: OutOfRange,
) -> Start {
    if let Some(f) = fold_rule(comp, id, index, dim_bounds, bounds, out_of_range) {
        return Start::Folded(f);
    }
    let ix = fixed_index(index, dim_bounds);
    let p = partial_of(comp, id, &ix, 0);
    let Some((leaf, leaf_index)) = p.leaf else {
        return Start::Stays;
    };
    let known = crate::expr::canonical(p.known);
    // Nothing moved (followed through index-moving ops or converts only): the map is the
    // same; a factor other than ±1 cannot be re-pointed exactly.
    if !(p.coeff == 1 || p.coeff == -1) || (p.coeff == 1 && known.as_const() == Some(0)) {
        return Start::Stays;
    }
    if bounds.is_empty() {
        return Start::Stays;
    }
    let k = range_of(known, dim_bounds);
    if k.is_empty() || k.is_full() {
        return Start::Stays;
    }
    // sign 1: r in [lo - k.hi, hi - k.lo]; sign -1: r in [k.lo - hi, k.hi - lo].
    let r = if p.coeff == 1 {
        bounds.lo.checked_sub(k.hi).zip(bounds.hi.checked_sub(k.lo))
    } else {
        k.lo.checked_sub(bounds.hi).zip(k.hi.checked_sub(bounds.lo))
    };
    let Some((lo, hi)) = r else {
        return Start::Stays;
    };
    Start::Repointed(Repointed {
        known,
        sign: p.coeff,
        leaf,
        index: leaf_index,
        bounds: Interval::new(lo, hi),
    })
}

/// A start index as it enters a map: its expression (of the dims and, when one is left,
/// the runtime variable `var`), the runtime variable's bounds, a constraint, and the line
/// `indexing` prints about it.
#[derive(Clone, Debug)]
pub struct StartIndex {
    pub expr: Expr,
    pub runtime: Option<Interval>,
    pub constraints: Vec<(Expr, Interval)>,
    pub note: Option<String>,
}

/// [`start`] as map parts: `var` is the number the new runtime variable would get, `what`
/// names the start index in notes (`start index 0 (`o`)`), `n_dims` the map's dimensions
/// (named `d0`, ...).
#[allow(clippy::too_many_arguments)]
pub fn start_index(
    comp: &Computation,
    id: InstrId,
    index: &[Expr],
    dim_bounds: &[Interval],
    bounds: Interval,
    out_of_range: OutOfRange,
    var: u32,
    what: &str,
) -> StartIndex {
    match start(comp, id, index, dim_bounds, bounds, out_of_range) {
        Start::Folded(f) => StartIndex {
            expr: f.expr,
            runtime: None,
            constraints: vec![],
            note: match f.rule {
                Rule::Clamped(v, why) => Some(clamp_note(what, v, bounds, why)),
                Rule::InRange => None,
            },
        },
        Start::Stays => StartIndex {
            expr: Expr::var(var),
            runtime: Some(bounds),
            constraints: vec![],
            note: None,
        },
        Start::Repointed(rp) => {
            let r = Expr::var(var);
            let expr = crate::expr::canonical(rp.known.add(r.mul(Expr::constant(rp.sign))));
            // A constant known part is all in the bounds; one of the dims needs the
            // constraint that keeps the start where the op clamps it.
            let constraints = if rp.known.as_const().is_some() {
                vec![]
            } else {
                vec![(expr, bounds)]
            };
            StartIndex {
                expr,
                runtime: Some(rp.bounds),
                constraints,
                note: Some(repoint_note(comp, what, &rp, dim_bounds.len(), bounds)),
            }
        }
    }
}

/// `start index 0 (`o`) = p + 3: the runtime variable is re-pointed at `p`, and 3 moves
/// into the map (...)`.
fn repoint_note(
    comp: &Computation,
    what: &str,
    rp: &Repointed,
    n_dims: usize,
    bounds: Interval,
) -> String {
    let dims: Vec<String> = (0..n_dims).map(|i| format!("d{i}")).collect();
    let show = |e: Expr| crate::expr::print::display(e, &dims).to_string();
    let leaf = if rp.index.is_empty() {
        format!("`{}`", comp.instrs[rp.leaf].name)
    } else {
        let ix: Vec<String> = rp.index.iter().map(|&e| show(e)).collect();
        format!("`{}`[{}]", comp.instrs[rp.leaf].name, ix.join(", "))
    };
    let mut names = dims.clone();
    names.push(leaf.clone());
    let value = crate::expr::canonical(
        rp.known
            .add(Expr::var(n_dims as u32).mul(Expr::constant(rp.sign))),
    );
    let value = crate::expr::print::display(value, &names).to_string();
    let moved = if rp.sign < 0 {
        format!("{} and the negation move", show(rp.known))
    } else {
        format!("{} moves", show(rp.known))
    };
    let held = if rp.known.as_const().is_some() {
        format!("{leaf} clamped to [{}, {}]", rp.bounds.lo, rp.bounds.hi)
    } else {
        format!(
            "{leaf} kept where {value} is in [{}, {}]",
            bounds.lo, bounds.hi
        )
    };
    format!(
        "{what} = {value}: the runtime variable is re-pointed at {leaf}, and {moved} into the map (the op clamps the start to [{}, {}], which is {held})",
        bounds.lo, bounds.hi
    )
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
