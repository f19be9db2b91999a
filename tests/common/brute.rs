//! Brute-force images of indexing maps, for the tests that compare maps with the reference
//! interpreter (tests/hlo_soundness.rs, tests/xla_dumps.rs).

use ixmap::hlo::interp::{all_indices, Tensor};
use ixmap::map::{IndexingMap, Variable};
use std::collections::BTreeSet;

/// Every point of the box the bounds of `vars` span.
pub fn var_points(vars: &[Variable]) -> Vec<Vec<i64>> {
    let ext: Vec<i64> = vars.iter().map(|v| v.bounds.hi - v.bounds.lo + 1).collect();
    all_indices(&ext)
        .into_iter()
        .map(|p| p.iter().zip(vars).map(|(x, v)| x + v.bounds.lo).collect())
        .collect()
}

/// The points a map sends `dims` to, with range variables over their bounds and runtime
/// variables fixed to `rt` (or over their bounds when `rt` is None).
pub fn image(m: &IndexingMap, dims: &[i64], rt: Option<&[i64]>) -> BTreeSet<Vec<i64>> {
    assert!(!m.is_undefined());
    let mut out = BTreeSet::new();
    if m.is_known_empty() {
        return out;
    }
    let rt_choices: Vec<Vec<i64>> = match rt {
        Some(r) => vec![r.to_vec()],
        None => var_points(&m.runtimes),
    };
    for s in var_points(&m.ranges) {
        for r in &rt_choices {
            let point: Vec<i64> = dims.iter().chain(&s).chain(r).copied().collect();
            if let Some(v) = m.eval_point(&point).expect("evaluates") {
                out.insert(v);
            }
        }
    }
    out
}

pub fn image_all(ms: &[IndexingMap], dims: &[i64], rt: Option<&[i64]>) -> BTreeSet<Vec<i64>> {
    ms.iter().flat_map(|m| image(m, dims, rt)).collect()
}

/// The elements of parameter `p` that element `o` of `out` reads, as the interpreter saw.
pub fn reads(out: &Tensor, o: &[i64], p: usize) -> BTreeSet<Vec<i64>> {
    out.at(o)
        .deps
        .iter()
        .filter(|(q, _)| *q == p)
        .map(|(_, i)| i.clone())
        .collect()
}
