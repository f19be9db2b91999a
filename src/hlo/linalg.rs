//! Linalg-style producer/consumer fusion (seed 004): the producer's operand map in the
//! consumer's loop coordinates is
//!
//! ```text
//! fused = producerArg ∘ inverse(producerResult) ∘ consumerArg
//!       = compose(consumerArg, compose(inverse(producerResult), producerArg))   (A then B)
//! ```
//!
//! MLIR requires `producerResult` to be a permutation (`inversePermutation`). ixmap says
//! why a map is not one (a dimension dropped, used twice, or not a plain dimension) and
//! goes further: when the map is still a bijection on its domain, e.g.
//! `(d0, d1) -> (d0 + d1, d0)`, it fuses with the general inverse of `crate::map::inverse`.

use crate::map::{compose, inverse, is_permutation, IndexingMap, Limits};

#[derive(Clone, Debug)]
pub struct Fused {
    pub map: IndexingMap,
    /// How the producer's result map was inverted, in words.
    pub how: String,
}

/// Why `m` is not a permutation of its dimensions (None when it is one).
pub fn why_not_permutation(m: &IndexingMap) -> Option<String> {
    if is_permutation(m) {
        return None;
    }
    if m.has_symbols() {
        return Some("it has range or runtime variables".into());
    }
    let names = m.names();
    let mut seen = vec![0usize; m.dims.len()];
    for (i, r) in m.results.iter().enumerate() {
        match r.as_var() {
            Some(v) if (v as usize) < seen.len() => seen[v as usize] += 1,
            _ => {
                return Some(format!(
                    "result {i} ({}) is not a plain dimension",
                    m.show_expr(*r)
                ))
            }
        }
    }
    if let Some(v) = seen.iter().position(|&c| c > 1) {
        return Some(format!("dimension {} is used twice", names[v]));
    }
    if let Some(v) = seen.iter().position(|&c| c == 0) {
        return Some(format!("dimension {} is dropped", names[v]));
    }
    Some("the number of results differs from the number of dimensions".into())
}

pub fn fuse(
    producer_arg: &IndexingMap,
    producer_result: &IndexingMap,
    consumer_arg: &IndexingMap,
) -> Result<Fused, String> {
    if consumer_arg.results.len() != producer_result.results.len() {
        return Err(format!(
            "the consumer reads the producer's result with {} indices, but the result has rank {}",
            consumer_arg.results.len(),
            producer_result.results.len()
        ));
    }
    if producer_arg.dims.len() != producer_result.dims.len() {
        return Err(format!(
            "the producer's maps disagree on its loops: the argument map has {} dimensions, the result map {}",
            producer_arg.dims.len(),
            producer_result.dims.len()
        ));
    }
    let inv = inverse(producer_result, &Limits::default());
    let how = match (why_not_permutation(producer_result), &inv) {
        (None, _) => "the producer's result map is a permutation: fused as MLIR does".to_string(),
        (Some(why), Ok(_)) => format!(
            "the producer's result map is not a permutation ({why}), so MLIR refuses; it is a bijection on its domain, so ixmap fuses with its inverse"
        ),
        (Some(why), Err(e)) => {
            return Err(format!("cannot fuse: the producer's result map is not a permutation ({why}) and not invertible: {e}"))
        }
    };
    let inv = inv.map_err(|e| format!("cannot invert the producer's result map: {e}"))?;
    let t1 = compose(&inv, producer_arg).map_err(|e| e.to_string())?;
    let fused = compose(consumer_arg, &t1).map_err(|e| e.to_string())?;
    let map = super::ops::finish(fused);
    Ok(Fused { map, how })
}
