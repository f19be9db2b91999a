//! Points of a domain: the brute-force oracle behind `equal`, `eval`, `inverse` checks and
//! the soundness tests. Enumeration is bounded by [`Limits`] and stops when interrupted.

use super::compiled::Compiled;
use super::{IndexingMap, Status};
use crate::interval::Interval;
use crate::MapError;

/// How much brute force an operation may use.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// Most points of a variable box that may be enumerated.
    pub max_points: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_points: 4_000_000,
        }
    }
}

/// The number of points in the box of `bounds`, or the reason it cannot be enumerated. A
/// count that does not fit in 64 bits is reported as `u64::MAX`, which
/// [`MapError::TooLarge`] prints as "at least" that many: never a wrapped or silently
/// saturated figure.
pub fn box_size(names: &[String], bounds: &[Interval], limits: &Limits) -> Result<u64, MapError> {
    if bounds.iter().any(|b| b.is_empty()) {
        return Ok(0);
    }
    let mut total: Option<u64> = Some(1);
    for (name, b) in names.iter().zip(bounds) {
        if b.is_full() {
            return Err(MapError::Unbounded(name.clone()));
        }
        total = total.and_then(|t| b.size().and_then(|n| t.checked_mul(n)));
    }
    let total = total.unwrap_or(u64::MAX);
    if total > limits.max_points {
        return Err(MapError::TooLarge {
            points: total,
            limit: limits.max_points,
        });
    }
    Ok(total)
}

/// Operations per point, on average, that an enumeration at the point limit may evaluate:
/// the work budget is `max_points × WORK_PER_POINT` (256,000,000 by default, a few
/// seconds), so a large expression over a box under the point limit is refused too (a
/// 1,000-term map over 2000 × 2000 points took 36 s).
pub const WORK_PER_POINT: u64 = 64;

/// Refuses an enumeration of `points` points at `per_point` operations each past the work
/// budget, with the figures.
pub fn check_work(points: u64, per_point: u64, limits: &Limits) -> Result<(), MapError> {
    let budget = limits.max_points.saturating_mul(WORK_PER_POINT);
    let work = points.saturating_mul(per_point);
    if work > budget {
        return Err(MapError::Other(format!(
            "enumerating the domain would evaluate {per_point} operations at each of {points} \
             points ({}{work} in all), more than the budget of {budget} ({} points × \
             {WORK_PER_POINT})",
            if work == u64::MAX { "at least " } else { "" },
            limits.max_points
        )));
    }
    Ok(())
}

/// The variables' bounds narrowed by the map's linear constraints (each variable bounded
/// by what the other terms leave, a few rounds), so that enumeration visits the box the
/// constraints leave rather than the box of the declared bounds:
///
/// ```text
/// d0 in [0, 3], d1 in [0, 19327352832], d0 + d1 in [0, 3]   =>   d1 in [0, 3]
/// ```
///
/// Every point of the domain lies in the narrowed box (the constraints are still checked
/// point by point). An empty bound means the domain is empty.
pub fn narrowed_bounds(map: &IndexingMap) -> Vec<Interval> {
    let mut bounds = map.bounds();
    let linear: Vec<(Vec<(usize, i64)>, i64, Interval)> = map
        .constraints
        .iter()
        .filter_map(|&(e, iv)| {
            let l = crate::expr::Linear::of(e)?;
            let terms = l
                .terms
                .iter()
                .map(|&(a, k)| a.as_var().map(|v| (v as usize, k)))
                .collect::<Option<Vec<_>>>()?;
            Some((terms, l.constant, iv))
        })
        .collect();
    for _round in 0..8 {
        let mut changed = false;
        for (terms, c, iv) in &linear {
            for (i, &(v, k)) in terms.iter().enumerate() {
                // k·v in [iv.lo - rest.hi, iv.hi - rest.lo], computed in i128.
                let (mut lo, mut hi) = (*c as i128, *c as i128);
                for (j, &(w, kw)) in terms.iter().enumerate() {
                    if j == i {
                        continue;
                    }
                    let b = bounds[w];
                    if b.is_empty() {
                        return bounds;
                    }
                    let (x, y) = (kw as i128 * b.lo as i128, kw as i128 * b.hi as i128);
                    lo = lo.saturating_add(x.min(y));
                    hi = hi.saturating_add(x.max(y));
                }
                let (klo, khi) = (
                    (iv.lo as i128).saturating_sub(hi),
                    (iv.hi as i128).saturating_sub(lo),
                );
                let k = k as i128;
                let (vlo, vhi) = if k > 0 {
                    (div_ceil(klo, k), div_floor(khi, k))
                } else {
                    (div_ceil(khi, k), div_floor(klo, k))
                };
                let old = bounds[v];
                let new = Interval::new(
                    vlo.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                    vhi.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                );
                let narrowed = old.intersect(&new);
                if narrowed != old {
                    bounds[v] = narrowed;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    bounds
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) == (b < 0)) {
        q + 1
    } else {
        q
    }
}

/// Calls `f` on every point of the box `bounds` (odometer order, last variable fastest)
/// until `f` returns false. Checks the interrupt flag as it goes. An unbounded variable is
/// an error, never an endless loop.
pub fn for_each_in_box(
    bounds: &[Interval],
    f: &mut dyn FnMut(&[i64]) -> Result<bool, MapError>,
) -> Result<(), MapError> {
    if bounds.iter().any(|b| b.is_empty()) {
        return Ok(());
    }
    if bounds.iter().any(|b| b.is_full()) {
        return Err(MapError::Unbounded("a variable of the box".into()));
    }
    let mut p: Vec<i64> = bounds.iter().map(|b| b.lo).collect();
    let mut count: u64 = 0;
    loop {
        count += 1;
        if count % 65536 == 0 && crate::interrupted() {
            return Err(MapError::Interrupted);
        }
        if !f(&p)? {
            return Ok(());
        }
        let mut i = p.len();
        loop {
            if i == 0 {
                return Ok(());
            }
            i -= 1;
            if p[i] < bounds[i].hi {
                p[i] += 1;
                break;
            }
            p[i] = bounds[i].lo;
        }
    }
}

/// All points of a map's domain (bounds and constraints), as full variable assignments.
pub struct DomainPoints;

impl DomainPoints {
    /// Calls `f(point, results)` for every point of the domain of `map`.
    pub fn for_each(
        map: &IndexingMap,
        limits: &Limits,
        f: &mut dyn FnMut(&[i64], &[i64]) -> Result<bool, MapError>,
    ) -> Result<(), MapError> {
        if map.status == Status::Undefined {
            return Err(MapError::Undefined);
        }
        if map.status == Status::KnownEmpty {
            return Ok(());
        }
        let bounds = narrowed_bounds(map);
        let points = box_size(&map.names(), &bounds, limits)?;
        let program = Compiled::new(map);
        check_work(points, program.work_per_point(), limits)?;
        let mut regs = program.registers();
        let mut results = vec![0i64; map.results.len()];
        for_each_in_box(&bounds, &mut |p| {
            if !program.in_domain(p, &mut regs).map_err(MapError::Eval)? {
                return Ok(true);
            }
            program
                .results(&mut regs, &mut results)
                .map_err(MapError::Eval)?;
            f(p, &results)
        })
    }

    /// The number of points of the domain.
    pub fn count(map: &IndexingMap, limits: &Limits) -> Result<u64, MapError> {
        let mut n = 0u64;
        DomainPoints::for_each(map, limits, &mut |_, _| {
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }
}
