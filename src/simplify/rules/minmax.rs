//! `min` and `max` (XLA's symbolic expressions have them). Wildcards: ?a ?b any expression.
//!
//! Constants fold through the analysis (`min(3, 5)` is the constant 3), and so does a
//! `min` whose operands' intervals decide it. The rules here decide the rest by the
//! difference of the operands: `max(d1 - 2, d1)` is `d1` because `d1 - (d1 - 2) = 2 >= 0`
//! everywhere, whatever d1's bounds.

use super::{range, view, view_range, Compute, Rule};
use crate::interval::Interval;
use crate::simplify::analysis::EGraph;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // min(a, b) = a     when a <= b at every point of the domain (else b when b <= a)
    rw!("min-decided"; "(min ?a ?b)" => { Compute::new(&["?a", "?b"], min_decided) }),
    // max(a, b) = a     when a >= b at every point of the domain (else b when b >= a)
    rw!("max-decided"; "(max ?a ?b)" => { Compute::new(&["?a", "?b"], max_decided) }),
]}

/// The interval of `b - a` over the domain: from the linear views when both have one (so
/// shared terms cancel: `d1 - (d1 - 2)` is exactly 2), else from the two intervals.
fn difference(egraph: &EGraph, a: Id, b: Id) -> Interval {
    let by_views = (|| {
        let va = view(egraph, a)?;
        let vb = view(egraph, b)?;
        let d = vb.add(&va.scale(-1)?)?;
        Some(view_range(egraph, &d))
    })();
    let by_ranges = range(egraph, b).add(&range(egraph, a).neg());
    match by_views {
        Some(v) => v.intersect(&by_ranges),
        None => by_ranges,
    }
}

fn min_decided(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    let d = difference(egraph, ab[0], ab[1]);
    if d.is_empty() {
        return None;
    }
    if d.lo >= 0 {
        Some(ab[0])
    } else if d.hi <= 0 {
        Some(ab[1])
    } else {
        None
    }
}

fn max_decided(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    let d = difference(egraph, ab[0], ab[1]);
    if d.is_empty() {
        return None;
    }
    if d.hi <= 0 {
        Some(ab[0])
    } else if d.lo >= 0 {
        Some(ab[1])
    } else {
        None
    }
}
