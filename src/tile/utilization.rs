//! Operand utilization: when the whole output is computed, how many elements of an operand
//! are read at least once, and how often each is read.
//!
//! ```text
//! bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}      output -> p0: (d0, d1, d2) -> (d1)
//! p0: 20 of 20 elements read (100%), every one 10 * 30 = 300 times
//! slice = f32[5, 3, 25] slice(p0), slice={[5:10:1], [3:20:7], [0:50:2]}   (p0 is [10, 20, 50])
//! p0: 375 of 10000 elements read (3.75%), each once
//! ```
//!
//! Exact, symbolically when every coordinate is `stride * v + offset` with distinct
//! variables and no constraint (then the read elements form a strided box and each is read
//! once per point of the unused variables), by counting every access otherwise.

use crate::interval::Interval;
use crate::map::{DomainPoints, IndexingMap, Limits};
use crate::MapError;
use std::collections::HashMap;

/// The utilization of one operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Utilization {
    /// Elements of the operand (the product of its extents).
    pub elements: u64,
    /// Elements read at least once.
    pub read: u64,
    /// Reads in all (one per domain point of every map).
    pub reads: u64,
    /// Most reads of one element.
    pub max_reads: u64,
    /// Fewest reads of an element that is read.
    pub min_reads: u64,
    /// `symbolic` or `counted`.
    pub method: &'static str,
}

/// Utilization of an operand of `shape` read through `maps` (output -> operand). An access
/// outside the shape is an error (the map and the shape disagree).
pub fn utilization(
    maps: &[IndexingMap],
    shape: &[i64],
    limits: &Limits,
) -> Result<Utilization, MapError> {
    let elements = shape.iter().try_fold(1u64, |acc, &x| {
        u64::try_from(x)
            .ok()
            .and_then(|x| acc.checked_mul(x))
            .ok_or(MapError::Overflow("operand size".into()))
    })?;
    if maps.len() == 1 {
        if let Some(u) = symbolic(&maps[0], shape, elements) {
            return Ok(u);
        }
    }
    counted(maps, shape, elements, limits)
}

/// The closed form for maps whose coordinates are `a * v + b` with distinct variables.
fn symbolic(m: &IndexingMap, shape: &[i64], elements: u64) -> Option<Utilization> {
    if m.is_undefined()
        || m.is_known_empty()
        || !m.constraints.is_empty()
        || m.results.len() != shape.len()
    {
        return None;
    }
    let bounds = m.bounds();
    let mut used = vec![false; m.num_vars()];
    for (j, &r) in m.results.iter().enumerate() {
        let l = crate::expr::Linear::of(r)?;
        if l.terms.len() > 1 {
            return None;
        }
        if let Some(&(atom, a)) = l.terms.first() {
            let v = atom.as_var()? as usize;
            if used[v] || a == 0 {
                return None;
            }
            used[v] = true;
        }
        // Every access inside the operand: otherwise count (and report the stray access).
        let range = crate::interval::range_of(r, &bounds);
        if range.is_full() || range.lo < 0 || range.hi >= shape[j] {
            return None;
        }
    }
    let mut read = 1u64;
    let mut repeat = 1u64;
    for (v, b) in bounds.iter().enumerate() {
        let n = b.size()?;
        if used[v] {
            read = read.checked_mul(n)?;
        } else {
            repeat = repeat.checked_mul(n)?;
        }
    }
    Some(Utilization {
        elements,
        read,
        reads: read.checked_mul(repeat)?,
        max_reads: repeat,
        min_reads: repeat,
        method: "symbolic",
    })
}

fn counted(
    maps: &[IndexingMap],
    shape: &[i64],
    elements: u64,
    limits: &Limits,
) -> Result<Utilization, MapError> {
    let mut dense: Option<Vec<u32>> =
        (elements <= limits.max_points).then(|| vec![0u32; elements as usize]);
    let mut sparse: HashMap<Vec<i64>, u64> = HashMap::new();
    let mut reads = 0u64;
    for m in maps {
        if m.results.len() != shape.len() {
            return Err(MapError::Other(format!(
                "the map has {} results but the operand has {} dimensions",
                m.results.len(),
                shape.len()
            )));
        }
        DomainPoints::for_each(m, limits, &mut |_, res| {
            let mut lin = 0u64;
            for (j, &x) in res.iter().enumerate() {
                if x < 0 || x >= shape[j] {
                    return Err(MapError::Other(format!(
                        "the map reads ({}) outside the operand's shape [{}]",
                        res.iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        shape
                            .iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                lin = lin * shape[j] as u64 + x as u64;
            }
            reads += 1;
            match &mut dense {
                Some(d) => d[lin as usize] = d[lin as usize].saturating_add(1),
                None => *sparse.entry(res.to_vec()).or_insert(0) += 1,
            }
            Ok(true)
        })?;
    }
    let counts: Vec<u64> = match dense {
        Some(d) => d.into_iter().filter(|&c| c > 0).map(u64::from).collect(),
        None => sparse.into_values().collect(),
    };
    Ok(Utilization {
        elements,
        read: counts.len() as u64,
        reads,
        max_reads: counts.iter().copied().max().unwrap_or(0),
        min_reads: counts.iter().copied().min().unwrap_or(0),
        method: "counted",
    })
}

/// The shape a bare map implies for its operand: each coordinate from 0 to its largest
/// value over the domain.
pub fn implied_shape(m: &IndexingMap) -> Option<Vec<i64>> {
    let bounds = m.bounds();
    m.results
        .iter()
        .map(|&r| {
            let iv: Interval = crate::interval::range_of(r, &bounds);
            (!iv.is_full() && iv.hi >= 0)
                .then(|| iv.hi.checked_add(1))
                .flatten()
        })
        .collect()
}
