//! Removal of range and runtime variables that no result uses.
//!
//! A symbol may go when no result mentions it and every constraint that mentions it
//! mentions only symbols that also go, and those constraints can be met (checked by
//! enumerating the removed symbols, when few): then dropping them leaves every point of the
//! domain and every result as it was.

use super::{IndexingMap, Limits, Status};
use crate::map::enumerate::{box_size, for_each_in_box};

/// The map without unused symbols, and how many were removed.
pub fn remove_unused_symbols(m: &IndexingMap) -> (IndexingMap, usize) {
    let (out, removed) = remove_unused(m, false, false);
    (out, removed.len())
}

/// The map without unused variables of every kind, dimensions included when `dims`, and
/// the indices (in `m`) of the variables that went: XLA's `RemoveUnusedVars`, whose bit
/// vector these indices are. A dimension goes on the same terms as a symbol: no result
/// uses it, and the constraints that do mention only variables that go and can be met.
pub fn remove_unused_vars(m: &IndexingMap, dims: bool) -> (IndexingMap, Vec<usize>) {
    remove_unused(m, false, dims)
}

/// The map without unused *range* variables; runtime variables all stay. A runtime
/// variable stands for an operand of an HLO instruction (a dynamic-slice offset) by its
/// position, so dropping one would shift the others onto the wrong operands. This is what
/// `simplify` uses; the `unused` command drops both kinds.
pub fn remove_unused_range_symbols(m: &IndexingMap) -> (IndexingMap, usize) {
    let (out, removed) = remove_unused(m, true, false);
    (out, removed.len())
}

fn remove_unused(m: &IndexingMap, keep_runtimes: bool, dims: bool) -> (IndexingMap, Vec<usize>) {
    if m.status != Status::Defined {
        return (m.clone(), vec![]);
    }
    let nd = m.dims.len();
    let n = m.num_vars();
    let mut used = vec![false; n];
    if !dims {
        for d in used.iter_mut().take(nd) {
            *d = true;
        }
    }
    if keep_runtimes {
        for r in used.iter_mut().skip(nd + m.ranges.len()) {
            *r = true;
        }
    }
    for r in &m.results {
        r.each_var(&mut |v| used[v as usize] = true);
    }
    // A constraint that ties a kept variable to a symbol keeps the symbol.
    loop {
        let mut changed = false;
        for &(e, _) in &m.constraints {
            let mut vs = Vec::new();
            e.each_var(&mut |v| vs.push(v as usize));
            if vs.iter().any(|&v| used[v]) && vs.iter().any(|&v| !used[v]) {
                for v in vs {
                    changed |= !used[v];
                    used[v] = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let removed: Vec<usize> = (0..n).filter(|&v| !used[v]).collect();
    if removed.is_empty() {
        return (m.clone(), removed);
    }
    // The constraints among removed symbols must be satisfiable, or the map is empty.
    let only_removed: Vec<_> = m
        .constraints
        .iter()
        .filter(|(e, _)| {
            let mut all = true;
            e.each_var(&mut |v| all &= !used[v as usize]);
            all
        })
        .copied()
        .collect();
    if !only_removed.is_empty() {
        let bounds = m.bounds();
        let names = m.names();
        let sub_bounds: Vec<_> = removed.iter().map(|&v| bounds[v]).collect();
        let sub_names: Vec<_> = removed.iter().map(|&v| names[v].clone()).collect();
        if box_size(
            &sub_names,
            &sub_bounds,
            &Limits {
                max_points: 1 << 20,
            },
        )
        .is_err()
        {
            return (m.clone(), vec![]);
        }
        let mut feasible = false;
        let mut point = vec![0i64; n];
        let _ = for_each_in_box(&sub_bounds, &mut |p| {
            for (k, &v) in removed.iter().enumerate() {
                point[v] = p[k];
            }
            let ok = only_removed.iter().all(|&(e, iv)| {
                crate::expr::eval(e, &point)
                    .map(|x| iv.contains(x))
                    .unwrap_or(false)
            });
            feasible |= ok;
            Ok(!ok)
        });
        if !feasible {
            let mut empty = m.clone();
            empty.status = Status::KnownEmpty;
            return (empty, vec![]);
        }
    }
    let mut new_index = vec![u32::MAX; n];
    let mut next = 0u32;
    for v in 0..n {
        if used[v] {
            new_index[v] = next;
            next += 1;
        }
    }
    let keep = |vs: &Vec<super::Variable>, offset: usize| -> Vec<super::Variable> {
        vs.iter()
            .enumerate()
            .filter(|(i, _)| used[offset + i])
            .map(|(_, v)| v.clone())
            .collect()
    };
    let new_dims = keep(&m.dims, 0);
    let ranges = keep(&m.ranges, nd);
    let runtimes = keep(&m.runtimes, nd + m.ranges.len());
    let rename = |v: u32| new_index[v as usize];
    let results = m.results.iter().map(|r| r.rename(&rename)).collect();
    let constraints = m
        .constraints
        .iter()
        .filter(|(e, _)| {
            let mut any_used = false;
            e.each_var(&mut |v| any_used |= used[v as usize]);
            any_used
        })
        .map(|&(e, iv)| (e.rename(&rename), iv))
        .collect();
    let mut out = IndexingMap::new(new_dims, ranges, runtimes, results, constraints);
    out.is_simplified = m.is_simplified;
    (out, removed)
}
