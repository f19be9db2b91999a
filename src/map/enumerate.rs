//! Points of a domain: the brute-force oracle behind `equal`, `eval`, `inverse` checks and
//! the soundness tests. Enumeration is bounded by [`Limits`] and stops when interrupted.

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

/// The number of points in the box of `bounds`, or the reason it cannot be enumerated.
pub fn box_size(names: &[String], bounds: &[Interval], limits: &Limits) -> Result<u64, MapError> {
    let mut total: u64 = 1;
    for (name, b) in names.iter().zip(bounds) {
        if b.is_full() {
            return Err(MapError::Unbounded(name.clone()));
        }
        let n = b.size().unwrap_or(u64::MAX);
        total = total.saturating_mul(n);
    }
    if total > limits.max_points {
        return Err(MapError::TooLarge {
            points: total,
            limit: limits.max_points,
        });
    }
    Ok(total)
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
        let bounds = map.bounds();
        box_size(&map.names(), &bounds, limits)?;
        let mut results = vec![0i64; map.results.len()];
        for_each_in_box(&bounds, &mut |p| {
            if !map.contains_point(p).map_err(MapError::Eval)? {
                return Ok(true);
            }
            for (slot, &r) in results.iter_mut().zip(&map.results) {
                *slot = crate::expr::eval(r, p).map_err(MapError::Eval)?;
            }
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
