//! The interval of every result and constraint expression of a map (XLA's
//! `RangeEvaluator` and `ComputeResultRanges`), three ways:
//!
//! - from the variables' bounds alone (interval arithmetic, what `use_constraints = false`
//!   gives);
//! - using the constraints as well: the bounds narrowed by the linear constraints, and
//!   every subexpression that is itself a constrained expression cut to its interval;
//! - exactly, by enumerating the domain, when it is small enough.
//!
//! ```text
//! (d0, d1) -> (d0 + d1, d0 * 4), domain: d0 in [0, 9], d1 in [0, 9], d0 + d1 in [0, 5]
//!   result 0  d0 + d1   bounds [0, 18]   with constraints [0, 5]    exact [0, 5]
//!   result 1  d0 * 4    bounds [0, 36]   with constraints [0, 20]   exact [0, 20]
//! ```
//!
//! The first two are sound (every value lies inside); the exact one is the hull of the
//! values actually taken.
//!
//! A bound that passes 64 bits is kept saturated at `i64::MIN` / `i64::MAX` (no bound on
//! that side), the other bound kept, as XLA's range evaluator keeps them (issue 32, item
//! 8). ixmap's own estimate carries intermediates exactly ([`range_wide`]), so where only
//! an intermediate overflows it stays exact; XLA's 64-bit saturating estimate is reported
//! beside it ([`ExprRange::xla`]) for the rows where the two differ.

use super::enumerate::narrowed_bounds;
use super::{DomainPoints, IndexingMap, Limits, Status};
use crate::expr::{Expr, ExprKind};
use crate::interval::{range_saturated, range_wide, Interval};
use crate::MapError;

/// What `ranges` reports for one expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprRange {
    /// `result 0`, `constraint 1`.
    pub label: String,
    pub expr: Expr,
    /// The interval a constraint asks for (`None` for results).
    pub required: Option<Interval>,
    /// ixmap's estimate from the bounds: exact intermediates, saturated result bounds.
    pub from_bounds: Interval,
    /// XLA's: 64-bit, every operation saturating a bound that overflows.
    pub xla: Interval,
    pub with_constraints: Interval,
    /// The hull of the values taken on the domain (empty when the domain is); `Err` says
    /// why it was not enumerated.
    pub exact: Result<Interval, MapError>,
}

/// The interval of `e` over `bounds`, cut at every subexpression that a constraint bounds.
/// Saturated bounds as XLA's evaluator keeps them (a saturated bound means none).
pub fn range_with_constraints(e: Expr, bounds: &[Interval], m: &IndexingMap) -> Interval {
    #[allow(unreachable_patterns)]
    let r = match e.kind() {
        ExprKind::Const(c) => Interval::point(c),
        ExprKind::Var(v) => bounds.get(v as usize).copied().unwrap_or(Interval::FULL),
        ExprKind::Bin(op, a, b) => Interval::saturating(
            op,
            &range_with_constraints(a, bounds, m),
            &range_with_constraints(b, bounds, m),
        ),
        _ => range_saturated(e, bounds),
    };
    m.constraints
        .iter()
        .filter(|(c, _)| *c == e)
        .fold(r, |r, (_, iv)| r.intersect(iv))
}

/// The ranges of every result, then of every constraint expression.
pub fn ranges(m: &IndexingMap, limits: &Limits) -> Result<Vec<ExprRange>, MapError> {
    if m.is_undefined() {
        return Err(MapError::Undefined);
    }
    let declared = m.bounds();
    let empty = Interval::new(1, 0);
    let narrowed = if m.status == Status::Defined {
        narrowed_bounds(m)
    } else {
        vec![empty; m.num_vars()]
    };
    let mut exprs: Vec<(String, Expr, Option<Interval>)> = Vec::new();
    for (i, &r) in m.results.iter().enumerate() {
        exprs.push((format!("result {i}"), r, None));
    }
    for (i, &(c, iv)) in m.constraints.iter().enumerate() {
        exprs.push((format!("constraint {i}"), c, Some(iv)));
    }
    // Exact hulls: one walk over the domain of a map whose results are all the expressions.
    let all = IndexingMap {
        results: exprs.iter().map(|x| x.1).collect(),
        ..m.clone()
    };
    let mut hull = vec![empty; exprs.len()];
    let exact = DomainPoints::for_each(&all, limits, &mut |_, vals| {
        for (h, &v) in hull.iter_mut().zip(vals) {
            *h = if h.is_empty() {
                Interval::point(v)
            } else {
                h.union_hull(&Interval::point(v))
            };
        }
        Ok(true)
    });
    Ok(exprs
        .into_iter()
        .enumerate()
        .map(|(i, (label, e, required))| {
            let with = if narrowed.iter().any(|b| b.is_empty()) {
                empty
            } else {
                // both sound: XLA's cut by the constraints, ixmap's wide one on the narrowed
                // bounds
                range_with_constraints(e, &narrowed, m).intersect(&range_wide(e, &narrowed))
            };
            ExprRange {
                label,
                expr: e,
                required,
                from_bounds: range_wide(e, &declared),
                xla: range_saturated(e, &declared),
                with_constraints: with,
                exact: exact.clone().map(|()| hull[i]),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::Variable;

    /// Both estimates contain the exact hull, on maps with and without constraints.
    #[test]
    fn estimates_contain_the_values_taken() {
        let (d0, d1) = (Expr::var(0), Expr::var(1));
        let mut checked = 0;
        for c in [None, Some(Interval::new(0, 5)), Some(Interval::new(3, 4))] {
            for k in [1, 3, -2] {
                let m = IndexingMap::new(
                    vec![Variable::new("d0", 0, 9), Variable::new("d1", -2, 9)],
                    vec![],
                    vec![],
                    vec![
                        d0.add(d1),
                        d0.mul(Expr::constant(k)).floordiv(Expr::constant(3)),
                        d0.add(d1).modulo(Expr::constant(4)),
                    ],
                    c.map(|iv| (d0.add(d1), iv)).into_iter().collect(),
                );
                for r in ranges(&m, &Limits::default()).expect("defined") {
                    let exact = r.exact.clone().expect("small");
                    assert!(r.from_bounds.contains_interval(&exact), "{r:?}");
                    assert!(r.with_constraints.contains_interval(&exact), "{r:?}");
                    assert!(r.from_bounds.contains_interval(&r.with_constraints) || c.is_some());
                    checked += 1;
                }
            }
        }
        assert!(checked >= 27);
    }

    #[test]
    fn a_constrained_sum_is_cut_to_its_interval() {
        let (d0, d1) = (Expr::var(0), Expr::var(1));
        let m = IndexingMap::new(
            vec![Variable::new("d0", 0, 9), Variable::new("d1", 0, 9)],
            vec![],
            vec![],
            vec![d0.add(d1), d0.mul(Expr::constant(4))],
            vec![(d0.add(d1), Interval::new(0, 5))],
        );
        let r = ranges(&m, &Limits::default()).expect("defined");
        assert_eq!(r[0].from_bounds, Interval::new(0, 18));
        assert_eq!(r[0].with_constraints, Interval::new(0, 5));
        assert_eq!(r[1].with_constraints, Interval::new(0, 20));
        assert_eq!(r[1].exact, Ok(Interval::new(0, 20)));
    }
}
