//! Composition with XLA's semantics: `compose(a, b)` is "a then b" (XLA's
//! `ComposeIndexingMaps(a, b)`): if `a` maps X to Y and `b` maps Y to Z, the result maps X
//! to Z.
//!
//! ```text
//! a = (d0, d1) -> (d1, d0)              b = (d0, d1)[s0] -> (d0 + s0, d1)
//! compose a, b = (d0, d1)[s0] -> (d1 + s0, d0)
//! ```
//!
//! The result keeps the symbols of both maps, `b`'s first (range variables of `b`, then of
//! `a`; runtime variables likewise), keeps `a`'s constraints, carries `b`'s constraints
//! through `a`'s results, and constrains each result of `a` to the bounds of the matching
//! dimension of `b` (dropped where the interval of the result already lies inside).

use super::{IndexingMap, Status};
use crate::expr::{Expr, ExprKind};
use crate::MapError;

/// Most operations (expression nodes, shared subterms counted at each use) of the results
/// of b once a's results are substituted into them.
pub const MAX_COMPOSED_SIZE: u64 = 4096;

pub fn compose(a: &IndexingMap, b: &IndexingMap) -> Result<IndexingMap, MapError> {
    if a.is_undefined() || b.is_undefined() {
        return Ok(IndexingMap::undefined());
    }
    if a.results.len() != b.dims.len() {
        return Err(MapError::ComposeArity {
            results: a.results.len(),
            dims: b.dims.len(),
        });
    }
    let (na, ra, _ta) = (
        a.dims.len() as u32,
        a.ranges.len() as u32,
        a.runtimes.len() as u32,
    );
    let (nb, rb, tb) = (
        b.dims.len() as u32,
        b.ranges.len() as u32,
        b.runtimes.len() as u32,
    );
    // Result variable order: a's dims | b's ranges | a's ranges | b's runtimes | a's runtimes.
    let a_var = move |v: u32| -> u32 {
        if v < na {
            v
        } else if v < na + ra {
            na + rb + (v - na)
        } else {
            na + rb + ra + tb + (v - na - ra)
        }
    };
    let a_results: Vec<Expr> = a.results.iter().map(|r| r.rename(&a_var)).collect();
    let mut b_sub = |v: u32| -> Expr {
        if v < nb {
            a_results[v as usize]
        } else if v < nb + rb {
            Expr::var(na + (v - nb))
        } else {
            Expr::var(na + rb + ra + (v - nb - rb))
        }
    };
    // A divisor of b that a's results make the constant 0 (`(d0) -> (d0, 0)` then
    // `(d0, d1) -> (d0 floordiv d1)`): the composition has no value at any point, and
    // a map holding `floordiv 0` would not read back.
    if let Some(term) = super::zeroed_division(b, &|v| b_sub(v)) {
        return Err(MapError::Other(format!(
            "cannot compose: the first map's results make the divisor of the second's `{}` \
             zero, so the composition has no value at any point",
            b.show_expr(term)
        )));
    }
    let results: Vec<Expr> = b.results.iter().map(|r| r.substitute(&mut b_sub)).collect();
    let mut constraints: Vec<_> = a
        .constraints
        .iter()
        .map(|&(e, iv)| (e.rename(&a_var), iv))
        .collect();
    constraints.extend(
        b.constraints
            .iter()
            .map(|&(e, iv)| (e.substitute(&mut b_sub), iv)),
    );
    // Each use of one of b's dimensions copies a result of a: repeated composition can
    // double the size each time (`(d0) -> (d0 floordiv 2 + d0 mod 3)`), and simplifying
    // the result costs more than linear time in it. Refuse past a stated size.
    let size = results
        .iter()
        .chain(constraints.iter().map(|(e, _)| e))
        .fold(0u64, |n, &e| n.saturating_add(e.rank().2));
    if size > MAX_COMPOSED_SIZE {
        return Err(MapError::Other(format!(
            "the composed map would have {size} operations, more than the limit of \
             {MAX_COMPOSED_SIZE} for a composition"
        )));
    }

    let mut dims = a.dims.clone();
    let mut ranges = b.ranges.clone();
    ranges.extend(a.ranges.iter().cloned());
    let mut runtimes = b.runtimes.clone();
    runtimes.extend(a.runtimes.iter().cloned());

    // b's dimension bounds constrain a's results.
    let mut out = IndexingMap::new(
        dims.clone(),
        ranges.clone(),
        runtimes.clone(),
        results,
        vec![],
    );
    let bounds = out.bounds();
    for (i, bv) in b.dims.iter().enumerate() {
        let r = crate::expr::canonical(a_results[i]);
        if bv.bounds.is_full() {
            continue;
        }
        let iv = crate::interval::range_of(r, &bounds);
        if bv.bounds.contains_interval(&iv) {
            continue;
        }
        if let ExprKind::Var(v) = r.kind() {
            if (v as usize) < dims.len() {
                let d = &mut dims[v as usize];
                d.bounds = d.bounds.intersect(&bv.bounds);
                continue;
            }
        }
        constraints.push((r, bv.bounds));
    }
    out = IndexingMap::new(dims, ranges, runtimes, out.results, constraints);
    if a.is_known_empty() || b.is_known_empty() {
        out.status = Status::KnownEmpty;
    }
    out.fix_names();
    Ok(out)
}
