//! The space of valid tilings: which tuples of tile sizes a block-level emitter may use for
//! a fusion, as conditions and as an enumeration.
//!
//! A tuple `(ts_0, .., ts_{n-1})` over the iteration space (the output's dimensions, then a
//! dot's contraction) is valid when
//!
//! - each `ts_i` is in `[1, extent_i]`;
//! - every tensor the fusion reads or computes has a tile for it ([`super::derive`]
//!   succeeds: a strided box, perhaps masked where it is partial). With symbolic sizes these
//!   are the conditions of [`super::symbolic`]'s cases (divisibility through reshapes);
//! - the emitter's limits hold: sizes that are powers of two or the whole extent (Triton's
//!   `tl.arange` takes powers of two; a partial last tile is masked), and no tile larger than
//!   a maximum volume (Triton refuses tensors of more than 2^20 elements);
//! - for emitters without masks, each size divides its extent.
//!
//! [`enumerate`] walks the power-of-two (and full-extent) sizes and keeps the valid tuples;
//! `tune` draws its candidates from it.

use super::derive;
use super::symbolic::{self, Size};
use crate::map::IndexingMap;

/// The largest tensor a Triton program may hold (`TRITON_MAX_TENSOR_NUMEL`).
pub const MAX_VOLUME: i64 = 1 << 20;

/// An emitter's rules for tile sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Sizes are powers of two or the whole extent.
    pub power_of_two: bool,
    /// Sizes divide their extents (no partial tiles, no masks).
    pub divide: bool,
    /// No tile of any tensor holds more elements.
    pub max_volume: Option<i64>,
    /// No size larger (the whole extent is still allowed).
    pub max_size: Option<i64>,
    /// Only these sizes (still filtered by the rules above and the extents).
    pub only: Option<Vec<i64>>,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            power_of_two: true,
            divide: false,
            max_volume: Some(MAX_VOLUME),
            max_size: None,
            only: None,
        }
    }
}

/// The tensors whose tiles decide: a label and the maps from the iteration space to it.
pub type Targets = [(String, Vec<IndexingMap>)];

/// The sizes to try along one dimension of `extent` under `rules`.
pub fn options(extent: i64, rules: &Rules) -> Vec<i64> {
    let mut v: Vec<i64> = match &rules.only {
        Some(u) => u
            .iter()
            .copied()
            .filter(|&z| z >= 1 && z <= extent)
            .collect(),
        None => {
            let cap = rules.max_size.map_or(extent, |m| m.min(extent));
            let mut v = vec![];
            let mut z = 1i64;
            while z <= cap {
                v.push(z);
                match z.checked_mul(2) {
                    Some(x) => z = x,
                    None => break,
                }
            }
            v
        }
    };
    v.push(extent);
    if rules.divide {
        // checked: an extent of 0 has no size dividing it (and `0 % 0` has no value)
        v.retain(|&z| extent.checked_rem(z) == Some(0));
    }
    if rules.power_of_two && rules.only.is_none() {
        v.retain(|&z| z.count_ones() == 1 || z == extent);
    }
    v.sort();
    v.dedup();
    v
}

/// Why `size`, one of `rules.only`, is not among [`options`] along a dimension of `extent`,
/// if it is not: the words after "not tried along ts0 (...)". Every other size of the list
/// is tried there, so a caller can say which sizes a dimension leaves out, and why.
pub fn why_not_tried(size: i64, extent: i64, rules: &Rules) -> Option<String> {
    if size < 1 {
        Some(format!("{size} is not a size"))
    } else if size > extent {
        Some(format!("larger than its extent {extent}"))
    } else if rules.divide && extent.checked_rem(size) != Some(0) {
        Some(format!("does not divide its extent {extent}"))
    } else {
        None
    }
}

/// The result of walking the space.
#[derive(Clone, Debug, Default)]
pub struct Enumerated {
    /// The valid tuples, in lexicographic order.
    pub valid: Vec<Vec<i64>>,
    /// The tuples tried and left out, with the reason.
    pub rejected: Vec<(Vec<i64>, String)>,
    /// The sizes tried per dimension.
    pub options: Vec<Vec<i64>>,
}

/// Why `sizes` is not a valid tiling of `targets`, if it is not.
pub fn why_invalid(targets: &Targets, sizes: &[i64], rules: &Rules) -> Option<String> {
    for (label, maps) in targets {
        for m in maps {
            match derive(m, sizes) {
                Err(e) => return Some(format!("{label}: {e}")),
                Ok(t) => {
                    if let Some(max) = rules.max_volume {
                        let vol = t
                            .sizes
                            .iter()
                            .try_fold(1i64, |a, &z| a.checked_mul(z))
                            .unwrap_or(i64::MAX);
                        if vol > max {
                            return Some(format!(
                                "{label}: a tile of {vol} elements, over the limit of {max}"
                            ));
                        }
                    }
                }
            }
        }
    }
    None
}

/// Every tuple of [`options`] over `extents`, valid or rejected with the reason; an error
/// when there are more than `limit` tuples to try.
pub fn enumerate(
    targets: &Targets,
    extents: &[i64],
    rules: &Rules,
    limit: usize,
) -> Result<Enumerated, String> {
    let options: Vec<Vec<i64>> = extents.iter().map(|&n| self::options(n, rules)).collect();
    let count = options
        .iter()
        .try_fold(1usize, |a, o| a.checked_mul(o.len()))
        .unwrap_or(usize::MAX);
    if count > limit {
        return Err(format!(
            "{count} tilings to try, more than {limit}; give the sizes to try"
        ));
    }
    let mut out = Enumerated {
        options: options.clone(),
        ..Default::default()
    };
    let mut idx = vec![0usize; options.len()];
    if options.iter().any(|o| o.is_empty()) {
        return Ok(out);
    }
    loop {
        let sizes: Vec<i64> = idx.iter().zip(&options).map(|(&i, o)| o[i]).collect();
        match why_invalid(targets, &sizes, rules) {
            None => out.valid.push(sizes),
            Some(mut why) => {
                // The first one left out also names a tile that is not a box, if one is.
                if out.rejected.is_empty() {
                    let limits = crate::map::Limits {
                        max_points: 1 << 16,
                    };
                    let which = targets.iter().flat_map(|t| &t.1).find_map(|m| {
                        derive(m, &sizes)
                            .is_err()
                            .then(|| super::check::first_non_box(m, &sizes, &limits))
                            .flatten()
                    });
                    if let Some(w) = which {
                        why.push_str(&format!("; e.g. {w}"));
                    }
                }
                out.rejected.push((sizes, why))
            }
        }
        // next tuple, the last dimension fastest
        let mut d = idx.len();
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < options[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The conditions every tuple must satisfy, as text: the rules, then per target the
/// symbolic tile's cases (`a or b`, each a conjunction), over the size names `names`.
pub fn conditions(
    targets: &Targets,
    extents: &[i64],
    names: &[String],
    rules: &Rules,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, (&n, name)) in extents.iter().zip(names).enumerate() {
        let _ = i;
        let mut c = format!("{name} in [1, {n}]");
        if rules.power_of_two {
            c.push_str(&format!(", a power of two or {n}"));
        }
        if rules.divide {
            c.push_str(&format!(", divides {n}"));
        }
        out.push(("sizes".to_string(), c));
    }
    if let Some(v) = rules.max_volume {
        out.push((
            "sizes".to_string(),
            format!("every tile holds at most {v} elements"),
        ));
    }
    let given: Vec<Size> = names.iter().map(|w| Size::Symbol(w.clone())).collect();
    let before = out.len();
    for (label, maps) in targets {
        let mut alts: Vec<String> = Vec::new();
        for m in maps {
            match symbolic::derive_symbolic(m, extents, &given) {
                Ok(st) => {
                    let cases: Vec<String> = st
                        .cases
                        .iter()
                        .map(|c| {
                            c.conds
                                .iter()
                                .map(|k| k.show(names))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        })
                        .collect();
                    if cases.iter().any(|c| c.is_empty()) {
                        continue;
                    }
                    let text = if cases.len() == 1 {
                        cases[0].clone()
                    } else {
                        cases
                            .iter()
                            .map(|c| format!("({c})"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    };
                    if !alts.contains(&text) {
                        alts.push(text);
                    }
                }
                Err(e) => alts.push(format!("no symbolic tile ({e}); checked size by size")),
            }
        }
        if !alts.is_empty() {
            out.push((label.clone(), alts.join("; and ")));
        }
    }
    if out.len() == before {
        out.push((
            "every tensor".to_string(),
            "a tile at any sizes (no divisibility needed; a partial last tile is clipped)"
                .to_string(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A size of `only` is among a dimension's options exactly when `why_not_tried` has no
    /// reason for it, so what a caller reports as left out is what the walk leaves out; an
    /// extent of 0 has no options (and no panic on `0 % 0`).
    #[test]
    fn sizes_left_out_are_the_ones_with_a_reason() {
        let sizes = vec![1, 3, 4, 12, 16, 24, 64];
        for divide in [false, true] {
            let rules = Rules {
                power_of_two: false,
                divide,
                only: Some(sizes.clone()),
                ..Rules::default()
            };
            for extent in [1, 12, 16, 48] {
                let opts = options(extent, &rules);
                for &z in &sizes {
                    assert_eq!(
                        opts.contains(&z),
                        why_not_tried(z, extent, &rules).is_none(),
                        "size {z}, extent {extent}, divide {divide}: {opts:?}"
                    );
                }
            }
        }
        let rules = Rules {
            divide: true,
            ..Rules::default()
        };
        assert_eq!(options(0, &rules), Vec::<i64>::new());
        assert_eq!(
            why_not_tried(64, 16, &rules).as_deref(),
            Some("larger than its extent 16")
        );
        assert_eq!(
            why_not_tried(32, 48, &rules).as_deref(),
            Some("does not divide its extent 48")
        );
    }
}
