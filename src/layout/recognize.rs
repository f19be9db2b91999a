//! An indexing map back to a CuTe layout, or the reason it is not one.
//!
//! A map is a CuTe layout when it has one result, its dimensions range over `[0, n_i - 1]`
//! with no symbols and no constraints, it maps 0 to 0, and its offset is the sum of what
//! each dimension contributes alone (`f(x) = Σ f(x_i e_i)`), each of those being a layout
//! of that dimension's index ([`super::cute::recognize_1d`]). Every condition is checked
//! on every point, so the answer is exact; the first failing point is the reason.
//!
//! ```text
//! (d0, d1) -> (d0 * 2 + d1 * 8), d0 in [0, 3], d1 in [0, 2]     is  (4,3):(2,8)
//! (d0) -> (d0 mod 4 + (d0 floordiv 4) * 8), d0 in [0, 15]        is  (4,4):(1,8)
//! (d0) -> (d0 * d0), d0 in [0, 3]                                 is not: 0, 1, 4, 9
//! ```

use super::cute::{recognize_1d, Layout, Tuple};
use super::MAX_POINTS;
use crate::map::{DomainPoints, IndexingMap, Limits};

/// The CuTe layout of a map (one mode per dimension, each coalesced), or why not.
pub fn to_cute(m: &IndexingMap) -> Result<Layout, String> {
    if m.is_undefined() || m.is_known_empty() {
        return Err("the map is UNDEFINED or KNOWN EMPTY".into());
    }
    if m.results.len() != 1 {
        return Err(format!(
            "a CuTe layout has one result (an offset); this map has {}",
            m.results.len()
        ));
    }
    if m.has_symbols() {
        return Err(
            "the map has range or runtime variables; a CuTe layout has only its coordinate".into(),
        );
    }
    if !m.constraints.is_empty() {
        return Err("the map's domain has constraints; a CuTe layout's domain is a box".into());
    }
    if m.dims.is_empty() {
        return Err("the map has no dimensions".into());
    }
    let mut sizes = Vec::new();
    let mut total: i64 = 1;
    for v in &m.dims {
        if v.bounds.lo != 0 || v.bounds.hi < 0 || v.bounds.hi >= MAX_POINTS {
            return Err(format!(
                "{} ranges over [{}, {}]; a layout's coordinate starts at 0 (and has at most {MAX_POINTS} values)",
                v.name, v.bounds.lo, v.bounds.hi
            ));
        }
        sizes.push(v.bounds.hi + 1);
        total = total.saturating_mul(v.bounds.hi + 1);
    }
    if total > MAX_POINTS {
        return Err(format!(
            "the domain has {total} points, more than the limit of {MAX_POINTS} for an exact check"
        ));
    }
    let nd = m.dims.len();
    let at = |p: &[i64]| -> Result<i64, String> {
        match m.eval_point(p).map_err(|e| e.to_string())? {
            Some(v) => Ok(v[0]),
            None => Err("a point of the box is outside the domain".into()),
        }
    };
    let zero = at(&vec![0; nd])?;
    if zero != 0 {
        return Err(format!(
            "at 0 the offset is {zero}; a CuTe layout maps 0 to 0"
        ));
    }
    let mut modes = Vec::new();
    let mut along: Vec<Vec<i64>> = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let mut vals = Vec::with_capacity(n as usize);
        for k in 0..n {
            let mut p = vec![0; nd];
            p[i] = k;
            vals.push(at(&p)?);
        }
        match recognize_1d(&vals) {
            Some(ms) => modes.push(Layout::from_modes(&ms)),
            None => {
                let shown: Vec<String> = vals.iter().take(12).map(|v| v.to_string()).collect();
                return Err(format!(
                    "along {} the offsets are {}{}, which no shape:stride gives",
                    m.dims[i].name,
                    shown.join(", "),
                    if vals.len() > 12 { ", ..." } else { "" }
                ));
            }
        }
        along.push(vals);
    }
    let mut bad = None;
    let names: Vec<String> = m.dims.iter().map(|v| v.name.clone()).collect();
    DomainPoints::for_each(m, &Limits::default(), &mut |p, r| {
        let sum: i64 = p.iter().zip(&along).map(|(x, v)| v[*x as usize]).sum();
        if sum != r[0] {
            let point: Vec<String> = names.iter().zip(p).map(|(n, x)| format!("{n} = {x}")).collect();
            bad = Some(format!(
                "the dimensions do not add up: at {} the offset is {}, but each dimension alone gives {} in all",
                point.join(", "),
                r[0],
                sum
            ));
            return Ok(false);
        }
        Ok(true)
    })
    .map_err(|e| e.to_string())?;
    if let Some(b) = bad {
        return Err(b);
    }
    Ok(if modes.len() == 1 {
        modes.remove(0)
    } else {
        Layout {
            shape: Tuple::Tup(modes.iter().map(|l| l.shape.clone()).collect()),
            stride: Tuple::Tup(modes.into_iter().map(|l| l.stride).collect()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::cute;

    fn show(src: &str) -> Result<String, String> {
        let lit = crate::syntax::parse_map_lit(src).map_err(|d| d.message)?;
        let m = crate::session::build::build_map(&lit).map_err(|d| d.message)?;
        to_cute(&m).map(|l| l.to_string())
    }

    #[test]
    fn maps_to_layouts() {
        assert_eq!(
            show("(d0, d1) -> (d0 * 2 + d1 * 8), domain: d0 in [0, 3], d1 in [0, 2]"),
            Ok("(4,3):(2,8)".into())
        );
        assert_eq!(
            show("(d0) -> (d0 mod 4 + (d0 floordiv 4) * 8), domain: d0 in [0, 15]"),
            Ok("(4,4):(1,8)".into())
        );
        assert!(show("(d0) -> (d0 * d0), domain: d0 in [0, 3]").is_err());
        assert!(
            show("(d0, d1) -> (d0 * d1), domain: d0 in [0, 3], d1 in [0, 3]")
                .unwrap_err()
                .contains("do not add up")
        );
        let l = cute::parse("((2,2),4):((1,4),2)").unwrap();
        assert_eq!(
            to_cute(&l.flat_map()).map(|l| l.to_string()),
            Ok("(2,2,4):(1,4,2)".into())
        );
    }
}
