//! Symbol rescaling (seed 001, "Simplification"): a range variable constrained by
//! `s mod c in [r, r]` takes only the values `c·s' + r`, so it is replaced by a variable
//! `s'` over exactly those steps and the constraint goes.
//!
//! ```text
//! (d0)[s0] -> (d0 + s0), domain: d0 in [0, 9], s0 in [0, 69], s0 mod 3 in [1, 1]
//!   =>  (d0)[s0] -> (d0 + s0 * 3 + 1), domain: d0 in [0, 9], s0 in [0, 22]
//! ```

use super::{Step, StepLog};
use crate::expr::arith::{ceil_div, floor_div};
use crate::expr::{Expr, ExprKind, Op};
use crate::interval::Interval;
use crate::map::{IndexingMap, Status};

/// Rescales every range variable with a `s mod c in [r, r]` constraint; returns whether
/// any was.
pub fn rescale_symbols(m: &mut IndexingMap, steps: &mut StepLog) -> bool {
    if m.status != Status::Defined {
        return false;
    }
    let nd = m.dims.len() as u32;
    let nr = m.ranges.len() as u32;
    let mut changed = false;
    let mut i = 0;
    while i < m.constraints.len() {
        let (e, iv) = m.constraints[i];
        let Some((s, c, r)) = rescalable(e, iv, nd, nr) else {
            i += 1;
            continue;
        };
        let b = m.var(s as usize).bounds;
        let (Some(lo), Some(hi)) = (
            b.lo.checked_sub(r).and_then(|x| ceil_div(x, c)),
            b.hi.checked_sub(r).map(|x| floor_div(x, c)),
        ) else {
            i += 1;
            continue;
        };
        let name = if steps.on() {
            m.var(s as usize).name.clone()
        } else {
            String::new()
        };
        let replacement = Expr::var(s).mul(Expr::constant(c)).add(Expr::constant(r));
        let mut sub = |v: u32| if v == s { replacement } else { Expr::var(v) };
        m.constraints.remove(i);
        for res in &mut m.results {
            *res = res.substitute(&mut sub);
        }
        for (ce, _) in &mut m.constraints {
            *ce = ce.substitute(&mut sub);
        }
        if let Some(var) = m.vars_mut().nth(s as usize) {
            var.bounds = Interval::new(lo, hi);
        }
        steps.push(|| Step {
            rule: "rescale-symbol".into(),
            before: format!("{name} in {b}, {name} mod {c} in [{r}, {r}]"),
            after: format!("{name} in [{lo}, {hi}], the old {name} = {name} * {c} + {r}"),
            why: format!("{name} takes only the values {name}' * {c} + {r}"),
        });
        changed = true;
        i = 0;
    }
    if changed {
        m.canonicalize();
    }
    changed
}

/// `(s, c, r)` when the constraint is `s mod c in [r, r]` on a range variable `s`.
fn rescalable(e: Expr, iv: Interval, nd: u32, nr: u32) -> Option<(u32, i64, i64)> {
    let ExprKind::Bin(Op::Mod, x, c) = e.kind() else {
        return None;
    };
    let s = x.as_var().filter(|&s| s >= nd && s < nd + nr)?;
    let c = c.as_const().filter(|&c| c > 1)?;
    (iv.is_point() && (0..c).contains(&iv.lo)).then_some((s, c, iv.lo))
}
