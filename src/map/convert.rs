//! Range and runtime variables turned into trailing dimensions (XLA's
//! `ConvertSymbolsToDimensions`), all of them or the named ones. The relation gains those
//! variables as coordinates: what was a set of results per point becomes one result per
//! (point, symbol values).
//!
//! ```text
//! (d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 3], s0 in [0, 3]
//!   = (d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 3], d1 in [0, 3]
//! ```
//!
//! A converted variable is named `d<its new position>`, the default name of a dimension
//! there; where that name is taken, every variable gets its kind's default name.

use super::{IndexingMap, Variable};
use crate::MapError;

/// `m` with the symbols at the given variable indices (all symbols for `None`) appended to
/// the dimensions, in the map's order.
pub fn convert_symbols(m: &IndexingMap, which: Option<&[usize]>) -> Result<IndexingMap, MapError> {
    if m.is_undefined() {
        return Err(MapError::Undefined);
    }
    let nd = m.dims.len();
    let n = m.num_vars();
    let convert: Vec<bool> = (0..n)
        .map(|v| v >= nd && which.is_none_or(|w| w.contains(&v)))
        .collect();
    // New order: dims, converted symbols, then the remaining ranges and runtimes.
    let mut order: Vec<usize> = (0..nd).collect();
    order.extend((nd..n).filter(|&v| convert[v]));
    let first_range = order.len();
    let nr = m.ranges.len();
    order.extend((nd..nd + nr).filter(|&v| !convert[v]));
    let first_runtime = order.len();
    order.extend((nd + nr..n).filter(|&v| !convert[v]));
    let mut new_index = vec![0u32; n];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let var = |old: usize| m.var(old).clone();
    let mut dims: Vec<Variable> = order[..first_range].iter().map(|&v| var(v)).collect();
    for (i, d) in dims.iter_mut().enumerate().skip(nd) {
        d.name = format!("d{i}");
    }
    let ranges = order[first_range..first_runtime]
        .iter()
        .map(|&v| var(v))
        .collect();
    let runtimes = order[first_runtime..].iter().map(|&v| var(v)).collect();
    let rename = |v: u32| new_index[v as usize];
    let mut out = IndexingMap::new(
        dims,
        ranges,
        runtimes,
        m.results.iter().map(|r| r.rename(&rename)).collect(),
        m.constraints
            .iter()
            .map(|&(e, iv)| (e.rename(&rename), iv))
            .collect(),
    );
    out.status = m.status;
    out.is_simplified = m.is_simplified;
    out.fix_names();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::interval::Interval;
    use crate::map::{DomainPoints, Limits};
    use std::collections::BTreeSet;

    /// Converting keeps the points: (x, s) ↦ y before is (x ++ s) ↦ y after.
    #[test]
    fn the_relation_gains_the_symbols_as_coordinates() {
        let (d0, s0, s1, r0) = (Expr::var(0), Expr::var(1), Expr::var(2), Expr::var(3));
        let m = IndexingMap::new(
            vec![Variable::new("d0", 0, 3)],
            vec![Variable::new("s0", 0, 2), Variable::new("s1", 0, 1)],
            vec![Variable::new("r0", 0, 4)],
            vec![d0.mul(Expr::constant(4)).add(s0), s1.add(r0)],
            vec![(d0.add(s0).add(r0), Interval::new(0, 6))],
        );
        let points = |m: &IndexingMap| {
            let mut set = BTreeSet::new();
            DomainPoints::for_each(m, &Limits::default(), &mut |p, r| {
                set.insert((p.to_vec(), r.to_vec()));
                Ok(true)
            })
            .expect("small");
            set
        };
        let all = convert_symbols(&m, None).expect("defined");
        assert_eq!(all.dims.len(), 4);
        assert!(!all.has_symbols());
        assert_eq!(points(&all), points(&m));
        // Only s1 and r0: the variable order becomes d0, s1, r0, s0.
        let some = convert_symbols(&m, Some(&[2, 3])).expect("defined");
        assert_eq!(
            (some.dims.len(), some.ranges.len(), some.runtimes.len()),
            (3, 1, 0)
        );
        let reorder = |(p, r): (Vec<i64>, Vec<i64>)| (vec![p[0], p[3], p[1], p[2]], r);
        let want: BTreeSet<_> = points(&some).into_iter().map(reorder).collect();
        assert_eq!(want, points(&m));
    }
}
