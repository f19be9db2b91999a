//! A division whose dividend takes its values through one atom that takes two values is
//! affine in that atom. Wildcards: ?a any expression; ?c a constant (the condition checks
//! it is positive).
//!
//! ```text
//! d0 in [-7, -6]:        d0 mod 2                       =>  -d0 - 6
//! d0 in [-3, 0]:         ((d0 mod 2) * 3 + 6) floordiv 8  =>  d0 mod 2
//! ```
//!
//! A Presburger tool finds these by the integer points of the domain (isl printed the
//! cheaper form on 7 of the 15 benchmark maps where its output was cheaper than ixmap's);
//! the other rules see only one window or a split of the dividend, never two values.
//! (`ceildiv` reaches them through `ceildiv-to-floordiv`.)

use super::{build_view, positive, range, view, Compute, Rule};
use crate::expr::arith::{floor_div, modulo};
use crate::simplify::analysis::{EGraph, View};
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // (k·t + k0) floordiv c = N(v) + (N(v + 1) - N(v))·(t - v),  N(x) = (k·x + k0) floordiv c,
    //   when c > 0 and every value of t lies in [v, v + 1]
    rw!("floordiv-two-values";  "(floordiv ?a ?c)"  => { Compute::new(&["?a", "?c"], floordiv) }),
    // (k·t + k0) mod c = N(v) + (N(v + 1) - N(v))·(t - v),  N(x) = (k·x + k0) mod c,
    //   when c > 0 and every value of t lies in [v, v + 1]
    rw!("mod-two-values";       "(mod ?a ?c)"       => { Compute::new(&["?a", "?c"], modulo_) }),
]}

fn floordiv(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    two_values(egraph, ac, floor_div)
}

fn modulo_(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    two_values(egraph, ac, modulo)
}

/// The affine form of `a op c` (`op` floordiv or mod) when `a`'s view is `k·t + k0` and
/// `t`'s interval is `[v, v + 1]`; `None` otherwise or on overflow.
fn two_values(egraph: &mut EGraph, ac: &[Id], op: fn(i64, i64) -> i64) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let a = view(egraph, ac[0])?;
    let [(t, k)] = a.terms[..] else {
        return None;
    };
    let r = range(egraph, t);
    if r.is_empty() || r.hi != r.lo.checked_add(1)? {
        return None;
    }
    let at = |x: i64| Some(op(k.checked_mul(x)?.checked_add(a.constant)?, c));
    let (n0, n1) = (at(r.lo)?, at(r.hi)?);
    let slope = n1.checked_sub(n0)?;
    let out = View {
        terms: if slope == 0 { vec![] } else { vec![(t, slope)] },
        constant: n0.checked_sub(slope.checked_mul(r.lo)?)?,
    };
    Some(build_view(egraph, &out))
}
