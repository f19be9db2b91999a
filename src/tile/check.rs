//! The brute-force oracle for tiles: for every tile index (and runtime value), the set of
//! operand elements the map names equals the set the tile formula names.

use super::OperandTile;
use crate::interval::Interval;
pub use crate::map::enumerate::for_each_in_box;
use crate::map::{DomainPoints, IndexingMap, Limits};
use crate::MapError;
use std::collections::BTreeSet;

/// The number of points of a box (saturating; `u64::MAX` when unbounded).
pub fn box_points(bounds: &[Interval]) -> u64 {
    bounds.iter().fold(1u64, |acc, b| {
        if b.is_full() {
            u64::MAX
        } else {
            acc.saturating_mul(b.size().unwrap_or(u64::MAX))
        }
    })
}

/// What `check_exact` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Both sides agree on every tile: the number of tile indices (times runtime values).
    Exact { tiles: u64 },
    /// The first tile where they differ, with an element on one side only.
    Differs {
        tile: Vec<i64>,
        element: Vec<i64>,
        only_in_map: bool,
    },
}

/// Enumerates every tile of `sizes` and compares the elements `map` names for it with the
/// elements of `tile`.
pub fn check_exact(
    map: &IndexingMap,
    sizes: &[i64],
    tile: &OperandTile,
    limits: &Limits,
) -> Result<Verdict, MapError> {
    let n = map.dims.len();
    let nr = map.runtimes.len();
    let domain = map.num_vars();
    // Total work: every domain point once, plus every tile element once.
    let work = box_points(&map.bounds());
    if work > limits.max_points {
        return Err(MapError::TooLarge {
            points: work,
            limit: limits.max_points,
        });
    }
    let mut outer: Vec<Interval> = tile.map.dims.iter().map(|d| d.bounds).collect();
    outer.extend(map.runtimes.iter().map(|r| r.bounds));
    let mut tiles = 0u64;
    let mut verdict = None;
    for_each_in_box(&outer, &mut |tr| {
        tiles += 1;
        let (t, r) = tr.split_at(n);
        // What the map names.
        let m = map_in_tile(map, sizes, t, r);
        let want = if m.dims.iter().any(|d| d.bounds.is_empty()) {
            BTreeSet::new()
        } else {
            results(&m, limits)?
        };
        // What the tile names.
        let mut k = tile.map.clone();
        // Intersect: the tile map may narrow its own variables (no tile there).
        for (i, d) in k.dims.iter_mut().enumerate() {
            d.bounds = d.bounds.intersect(&Interval::point(t[i]));
        }
        fix_runtimes(&mut k, r);
        let got = if k.vars().any(|v| v.bounds.is_empty()) {
            BTreeSet::new()
        } else {
            results(&k, limits)?
        };
        if want != got {
            let (element, only_in_map) = match want.difference(&got).next() {
                Some(e) => (e.clone(), true),
                None => (
                    got.difference(&want).next().cloned().unwrap_or_default(),
                    false,
                ),
            };
            verdict = Some(Verdict::Differs {
                tile: tr.to_vec(),
                element,
                only_in_map,
            });
            return Ok(false);
        }
        Ok(true)
    })?;
    let _ = (domain, nr);
    Ok(verdict.unwrap_or(Verdict::Exact { tiles }))
}

/// The first tile of `sizes` whose elements (read through `map`) are not a strided box, with
/// what it reads; `None` when every tile is a box (or the domain is too large to look).
/// Used to say *which* tile makes a map not tileable.
pub fn first_non_box(map: &IndexingMap, sizes: &[i64], limits: &Limits) -> Option<String> {
    let n = map.dims.len();
    if sizes.len() != n || sizes.iter().any(|&z| z < 1) {
        return None;
    }
    if box_points(&map.bounds()) > limits.max_points {
        return None;
    }
    let mut outer: Vec<Interval> = map
        .dims
        .iter()
        .zip(sizes)
        .map(|(d, &z)| {
            Interval::new(
                crate::expr::arith::floor_div(d.bounds.lo, z),
                crate::expr::arith::floor_div(d.bounds.hi, z),
            )
        })
        .collect();
    outer.extend(map.runtimes.iter().map(|r| r.bounds));
    let mut found = None;
    let _ = for_each_in_box(&outer, &mut |tr| {
        let (t, r) = tr.split_at(n);
        let m = map_in_tile(map, sizes, t, r);
        if m.dims.iter().any(|d| d.bounds.is_empty()) {
            return Ok(true);
        }
        let got = results(&m, limits)?;
        if let Some(why) = not_a_box(&got) {
            let idx: Vec<String> = tr.iter().map(|x| x.to_string()).collect();
            found = Some(format!("tile ({}) {why}", idx.join(", ")));
            return Ok(false);
        }
        Ok(true)
    });
    found
}

/// `map` with its dimensions narrowed to tile `t` of `sizes` (tile `t[i]` covers
/// `[t[i] * sizes[i], t[i] * sizes[i] + sizes[i] - 1]`) and its runtime variables to `r`.
fn map_in_tile(map: &IndexingMap, sizes: &[i64], t: &[i64], r: &[i64]) -> IndexingMap {
    let mut m = map.clone();
    for (i, d) in m.dims.iter_mut().enumerate() {
        let lo = t[i].saturating_mul(sizes[i]);
        d.bounds = d
            .bounds
            .intersect(&Interval::new(lo, lo.saturating_add(sizes[i] - 1)));
    }
    fix_runtimes(&mut m, r);
    m
}

/// Narrows the runtime variables of `m` to the values `r`.
fn fix_runtimes(m: &mut IndexingMap, r: &[i64]) {
    for (j, v) in m.runtimes.iter_mut().enumerate() {
        v.bounds = v.bounds.intersect(&Interval::point(r[j]));
    }
}

/// The set of results `m` names over its domain.
fn results(m: &IndexingMap, limits: &Limits) -> Result<BTreeSet<Vec<i64>>, MapError> {
    let mut out = BTreeSet::new();
    DomainPoints::for_each(m, limits, &mut |_, res| {
        out.insert(res.to_vec());
        Ok(true)
    })?;
    Ok(out)
}

/// Why a set of points is not `{offset + stride * k}` over a box of `k`, if it is not.
fn not_a_box(points: &BTreeSet<Vec<i64>>) -> Option<String> {
    let first = points.iter().next()?;
    let m = first.len();
    let mut count: u64 = 1;
    let mut hull = Vec::new();
    for j in 0..m {
        let vals: BTreeSet<i64> = points.iter().map(|p| p[j]).collect();
        let v: Vec<i64> = vals.into_iter().collect();
        let step = if v.len() > 1 { v[1] - v[0] } else { 1 };
        if v.windows(2).any(|w| w[1] - w[0] != step) {
            return Some(format!(
                "reads coordinate {j} at {:?}, not evenly spaced",
                v.iter().take(8).collect::<Vec<_>>()
            ));
        }
        count = count.saturating_mul(v.len() as u64);
        hull.push(format!("[{}, {}]", v[0], v[v.len() - 1]));
    }
    if count != points.len() as u64 {
        return Some(format!(
            "reads {} elements within {}, whose box holds {count}: not a box",
            points.len(),
            hull.join(" x ")
        ));
    }
    None
}
